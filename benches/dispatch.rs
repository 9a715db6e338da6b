//! What our server does per request, without I/O: a GIOP 1.2 request
//! taken from the connection's input, dispatched to the reference
//! `BenchHandler`, and its reply encoded to the output
//! (`ServerConn::process`), for `ping` (no arguments: the protocol's own
//! cost), `echo_long` of 1 KiB, and `send_oneway_long` of 1 KiB (no
//! reply). Beside them, the request's bytes
//! copied into the input and the reply's out: the least any server does.
//!
//! Run: `cargo bench -p iiop-benches --bench dispatch`. Compare a change
//! against the previous commit with criterion's `--save-baseline` and
//! `--baseline`.

use std::hint::black_box;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, Criterion};
use iiop_bench_idl::bench::types::Payload;
use iiop_bench_idl::bench::{CallMode, Elem};
use iiop_bench_idl::reference::{BenchHandler, Skeleton};
use iiop_cdr::{ByteOrder, Options};
use iiop_giop::codec::Decoder;
use iiop_giop::conn::server::{ServerConn, ServerConnConfig};
use iiop_giop::message::{
    encode_request, Message, ReplyStatus, RequestHead, ResponseMode, TargetAddress,
};
use iiop_giop::Version;

/// The bytes of one request to the `Bench` object: `op` with `payload`
/// (if any) as its argument, as our client encodes it.
fn request(op: &str, response: ResponseMode, payload: Option<&Payload>) -> Vec<u8> {
    let target = TargetAddress::Key(Bytes::from_static(b"Bench"));
    let head = RequestHead {
        request_id: 7,
        response,
        target: &target,
        operation: op,
        contexts: &[],
    };
    let mut buf = BytesMut::with_capacity(8192);
    encode_request(
        &mut buf,
        Version::V1_2,
        ByteOrder::NATIVE,
        Options::default(),
        &head,
        |w| payload.map_or(Ok(()), |p| p.encode(w)),
    )
    .expect("a request");
    buf.to_vec()
}

fn dispatch(c: &mut Criterion) {
    let handler = BenchHandler::new(Skeleton::Typed);
    let mut g = c.benchmark_group("dispatch");
    let longs = Payload::for_size(Elem::Long, 1024);
    let echo_long = Elem::Long.op_name(CallMode::Echo);
    let oneway_long = Elem::Long.op_name(CallMode::Oneway);
    for (name, op, response, payload) in [
        ("ping", "ping", ResponseMode::Twoway, None),
        (
            "echo_long_1KiB",
            echo_long,
            ResponseMode::Twoway,
            Some(&longs),
        ),
        (
            "oneway_long_1KiB",
            oneway_long,
            ResponseMode::Oneway,
            Some(&longs),
        ),
    ] {
        let req = request(op, response, payload);
        let mut conn = ServerConn::new(Arc::new(ServerConnConfig::default()), 1, None, None);
        g.bench_function(name, |b| {
            b.iter(|| {
                conn.read_buf().extend_from_slice(black_box(&req));
                conn.received(req.len());
                conn.process(&handler, &mut |_| unreachable!("no asynchronous operation"));
                black_box(conn.output());
                conn.sent();
            })
        });
        // The floor: the same bytes in and a reply's worth out, copied.
        let mut input = BytesMut::with_capacity(64 * 1024);
        let mut output = BytesMut::with_capacity(64 * 1024);
        let reply_len = conn_reply_len(&req, response);
        g.bench_function(format!("{name}_copy_only"), |b| {
            b.iter(|| {
                input.extend_from_slice(black_box(&req));
                output.extend_from_slice(&input[..reply_len.min(input.len())]);
                black_box(&output);
                input.clear();
                output.clear();
            })
        });
    }
    g.finish();
}

/// How long `req`'s reply is (one pass through a fresh connection),
/// having checked that it is a normal reply to it (none to a oneway, which
/// the handler counted): what is timed above is a successful call, not an
/// exception.
fn conn_reply_len(req: &[u8], response: ResponseMode) -> usize {
    let handler = &BenchHandler::new(Skeleton::Typed);
    let mut conn = ServerConn::new(Arc::new(ServerConnConfig::default()), 1, None, None);
    conn.read_buf().extend_from_slice(req);
    conn.received(req.len());
    conn.process(handler, &mut |_| unreachable!("no asynchronous operation"));
    if response == ResponseMode::Oneway {
        assert!(conn.output().is_empty(), "no reply to a oneway");
        let seen = handler.counters().snapshot();
        assert!(
            seen.oneways == 1 && seen.bytes > 0,
            "the handler took the oneway and its payload"
        );
        return 0;
    }
    let mut out = BytesMut::from(conn.output());
    let n = out.len();
    let f = Decoder::default()
        .decode(&mut out)
        .expect("a well-formed reply")
        .expect("a whole reply");
    match Message::decode(&f.header, f.payload, Options::default()).expect("a reply") {
        Message::Reply(r) => assert_eq!(r.header.status, ReplyStatus::NoException),
        other => panic!("not a reply: {other:?}"),
    }
    assert!(out.is_empty(), "one reply, nothing else");
    n
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
