//! Encode + decode of a GIOP 1.2 Request header and Reply header: the
//! per-call protocol overhead our client and server pay, without I/O.

use bytes::{Bytes, BytesMut};
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use iiop_cdr::{ByteOrder, Options};
use iiop_giop::codec::Decoder;
use iiop_giop::memo::{RequestHeadCache, RequestHeadMemo};
use iiop_giop::message::{
    begin_reply, begin_request, Message, ReplyStatus, RequestHead, ResponseMode, TargetAddress,
};
use iiop_giop::Version;

/// Encode + decode of a Request header with its request id, the
/// operations named in turn: through [`begin_request`] and
/// [`Message::decode`] (every call's whole header), or through a
/// connection's [`RequestHeadCache`] and [`RequestHeadMemo`] (a call like
/// the one before skips both). Version, byte order and options are opaque
/// to the compiler, as on a connection.
fn request_round(c: &mut Criterion, name: &str, remembered: bool, ops: &[&str]) {
    let target = TargetAddress::Key(Bytes::from_static(b"Bench"));
    let mut buf = BytesMut::with_capacity(256);
    let mut dec = Decoder::default();
    let (mut cache, mut memo) = (RequestHeadCache::default(), RequestHeadMemo::default());
    let (version, order, opts) = black_box((Version::V1_2, ByteOrder::NATIVE, Options::default()));
    let mut id = 0u32;
    c.bench_function(name, |b| {
        b.iter(|| {
            buf.clear();
            id = id.wrapping_add(1);
            let head = RequestHead {
                request_id: id,
                response: ResponseMode::Twoway,
                target: &target,
                operation: ops[id as usize % ops.len()],
                contexts: &[],
            };
            let p = match remembered {
                true => cache.begin_request(&mut buf, version, order, opts, &head),
                false => begin_request(&mut buf, version, order, opts, &head),
            };
            let p = p.unwrap();
            p.writer(&mut buf).write_u32(42);
            p.finish(&mut buf).unwrap();
            let f = dec.decode(&mut buf).unwrap().unwrap();
            let m = match remembered {
                true => memo.decode(&f.header, f.payload, f.segments, opts),
                false => Message::decode(&f.header, f.payload, opts),
            };
            black_box(m.unwrap());
        })
    });
}

fn request(c: &mut Criterion) {
    let same = ["echo_long"];
    let varying = ["echo_long", "echo_double"];
    request_round(c, "request_header_encode_decode", false, &same);
    request_round(c, "request_header_encode_decode_remembered", true, &same);
    request_round(c, "request_header_varying_ops", false, &varying);
    request_round(c, "request_header_varying_ops_remembered", true, &varying);
    // More operations in turn than a connection keeps: every call misses
    // (the price of keeping).
    let five = [
        "echo_long",
        "echo_double",
        "echo_octet",
        "echo_char",
        "ping",
    ];
    request_round(c, "request_header_five_ops", false, &five);
    request_round(c, "request_header_five_ops_remembered", true, &five);
}

fn reply(c: &mut Criterion) {
    let mut buf = BytesMut::with_capacity(256);
    let mut dec = Decoder::default();
    c.bench_function("reply_header_encode_decode", |b| {
        b.iter(|| {
            buf.clear();
            let p = begin_reply(
                &mut buf,
                Version::V1_2,
                ByteOrder::NATIVE,
                Options::default(),
                black_box(7),
                ReplyStatus::NoException,
                &[],
            )
            .unwrap();
            p.writer(&mut buf).write_u32(42);
            p.finish(&mut buf).unwrap();
            let f = dec.decode(&mut buf).unwrap().unwrap();
            let m = Message::decode(&f.header, f.payload, Options::default()).unwrap();
            black_box(m);
        })
    });
}

criterion_group!(benches, request, reply);
criterion_main!(benches);
