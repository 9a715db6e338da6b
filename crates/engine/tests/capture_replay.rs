//! Black-box: a capture made by hand (three `echo_long` calls and their
//! replies) analysed into a `pcap` results document, then replayed through
//! the engine's public API against our reference server serving TLS only —
//! with the client TLS options it is reached and every reply compares
//! equal, without them the replay cannot start.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use bytes::BytesMut;
use iiop_bench_idl::run::{RunningServer, ServerOptions};
use iiop_capture::synth::{Flow, PcapWriter, ETHERNET};
use iiop_cdr::{ByteOrder, Options};
use iiop_giop::header::Version;
use iiop_giop::message::{encode_reply, encode_request, RequestHead};
use iiop_giop::{ReplyStatus, ResponseMode, TargetAddress};
use iiop_transport::hosted::TlsServer;
use iiop_transport::tls::test_pki::TestPki;
use iiopbench_engine::replay::{self, ReplayOpts};
use iiopbench_engine::target::TlsOpts;

const US: u64 = 1_000;
const T0: u64 = 1_700_000_000_000_000_000;

fn longs(w: &mut iiop_cdr::Writer<'_>, n: usize) -> Result<(), iiop_cdr::CdrError> {
    w.write_u32(n as u32);
    for i in 0..n {
        w.write_i32(i as i32 * 7 + 3);
    }
    Ok(())
}

/// `echo_long` with `n` elements as request `id`, and its reply.
fn call(id: u32, n: usize) -> (Vec<u8>, Vec<u8>) {
    let (v, order) = (Version::V1_2, ByteOrder::Little);
    let target = TargetAddress::Key(bytes::Bytes::from_static(b"Bench"));
    let head = RequestHead {
        request_id: id,
        response: ResponseMode::Twoway,
        target: &target,
        operation: "echo_long",
        contexts: &[],
    };
    let mut req = BytesMut::new();
    encode_request(&mut req, v, order, Options::default(), &head, |w| {
        longs(w, n)
    })
    .unwrap();
    let mut rep = BytesMut::new();
    encode_reply(
        &mut rep,
        v,
        order,
        Options::default(),
        id,
        ReplyStatus::NoException,
        &[],
        |w| longs(w, n),
    )
    .unwrap();
    (req.to_vec(), rep.to_vec())
}

/// Three calls 1 ms apart, each answered after 100 µs, on one connection.
fn write_capture(path: &Path) {
    let c: SocketAddr = "127.0.0.1:40000".parse().unwrap();
    let s: SocketAddr = "127.0.0.1:2809".parse().unwrap();
    let mut f = Flow::new(c, s, [1000, 9000]);
    let mut w = PcapWriter::new(Vec::new(), ETHERNET).unwrap();
    for seg in f.handshake() {
        w.segment(T0, &seg).unwrap();
    }
    for (i, n) in [1usize, 10, 100].into_iter().enumerate() {
        let (req, rep) = call(i as u32 + 1, n);
        let t = T0 + i as u64 * 1000 * US;
        for seg in f.send(true, &req, 1460) {
            w.segment(t, &seg).unwrap();
        }
        for seg in f.send(false, &rep, 1460) {
            w.segment(t + 100 * US, &seg).unwrap();
        }
    }
    std::fs::write(path, w.into_inner()).unwrap();
}

fn dir() -> PathBuf {
    let d = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-engine-replay-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_capture_is_analysed_and_replayed_over_tls() {
    let d = dir();
    let cap = d.join("echo.pcap");
    write_capture(&cap);

    let s = iiopbench_engine::capture::analyze(std::slice::from_ref(&cap), 10).unwrap();
    let r = iiopbench_engine::capture::to_results(&s, std::slice::from_ref(&cap)).unwrap();
    assert_eq!(r.kind, "pcap");
    assert_eq!(r.cases.len(), 1);
    assert_eq!(r.cases[0].name, "echo_long Bench");
    assert_eq!(r.cases[0].calls, 3);
    assert_eq!(r.cases[0].params.mode, "twoway");
    assert!(r.outcome.failure.is_none(), "{:?}", r.outcome);

    let pki = TestPki::new("capture-replay");
    let srv = RunningServer::start(ServerOptions {
        threads: 1,
        tls: Some(TlsServer {
            config: pki.server(true),
            client_certificates: true,
        }),
        ..ServerOptions::default()
    })
    .unwrap();
    let ior = srv.refs().ior.to_string();

    let mut o = ReplayOpts::new(&cap, ior.clone());
    o.tls = TlsOpts {
        tls: false,
        tls_ca: Some(pki.ca.clone()),
        tls_cert: Some(pki.client_cert.clone()),
        tls_key: Some(pki.client_key.clone()),
    };
    let run = replay::run(&o).unwrap();
    assert_eq!((run.requests, run.connections), (3, 1));
    assert_eq!(run.ops.len(), 1);
    let e = &run.ops[0];
    assert_eq!(
        (
            e.captured,
            e.replayed,
            e.failed,
            e.compared_bodies,
            e.differing
        ),
        (3, 3, 0, 3, 0),
        "{:?}",
        run.diffs
    );
    assert_eq!(run.total_diffs, 0);
    assert_eq!(run.results.kind, "replay");
    assert_eq!(run.results.cases[0].calls, 3);
    assert!(run.results.outcome.failure.is_none());

    // Plain IIOP to a TLS-only server: refused before anything is sent.
    let e = replay::run(&ReplayOpts::new(&cap, ior)).unwrap_err();
    assert!(format!("{e:#}").contains("TLS"), "{e:#}");
    drop(srv);
    let _ = std::fs::remove_dir_all(&d);
}
