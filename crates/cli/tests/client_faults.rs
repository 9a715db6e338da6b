//! The bench commands against hostile servers written here on raw tokio
//! TCP: a server that answers the first calls well, then crashes (closes
//! the socket), resets (SO_LINGER 0), stalls, answers garbage, answers with
//! the wrong request id, forwards to itself, or raises a system exception
//! (every standard one). Each run must name the failure (the call, the
//! exception, the minor code) in `outcome.failure` and `errors`, stop or go
//! on per `--on-error`, write what it measured, exit 1 when it stopped,
//! and never hang (every run is bounded by a watchdog).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use iiop_giop::codec::Decoder;
use iiop_giop::context::default_options;
use iiop_giop::exception::Completion;
use iiop_giop::ior::Ior;
use iiop_giop::message::{
    encode_location_forward, encode_reply, encode_system_exception, Message, ReplyStatus,
};
use iiop_giop::SystemException;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Every standard system exception of CORBA 3 (the names after
/// `IDL:omg.org/CORBA/`).
const STANDARD: [&str; 39] = [
    "UNKNOWN",
    "BAD_PARAM",
    "NO_MEMORY",
    "IMP_LIMIT",
    "COMM_FAILURE",
    "INV_OBJREF",
    "NO_PERMISSION",
    "INTERNAL",
    "MARSHAL",
    "INITIALIZE",
    "NO_IMPLEMENT",
    "BAD_TYPECODE",
    "BAD_OPERATION",
    "NO_RESOURCES",
    "NO_RESPONSE",
    "PERSIST_STORE",
    "BAD_INV_ORDER",
    "TRANSIENT",
    "FREE_MEM",
    "INV_IDENT",
    "INV_FLAG",
    "INTF_REPOS",
    "BAD_CONTEXT",
    "OBJ_ADAPTER",
    "DATA_CONVERSION",
    "OBJECT_NOT_EXIST",
    "TRANSACTION_REQUIRED",
    "TRANSACTION_ROLLEDBACK",
    "INVALID_TRANSACTION",
    "INV_POLICY",
    "CODESET_INCOMPATIBLE",
    "REBIND",
    "TIMEOUT",
    "TRANSACTION_UNAVAILABLE",
    "TRANSACTION_MODE",
    "BAD_QOS",
    "INVALID_ACTIVITY",
    "ACTIVITY_COMPLETED",
    "ACTIVITY_REQUIRED",
];

/// What the server does to the call after the first `ok` payload calls.
#[derive(Debug, Clone)]
enum Fault {
    /// Close the socket (FIN) without answering.
    Crash,
    /// Close with SO_LINGER 0 (RST).
    Reset,
    /// Read on, never answer.
    Stall,
    /// Answer bytes that are not GIOP.
    Garbage,
    /// Answer NO_EXCEPTION with another request id.
    WrongId,
    /// Answer LOCATION_FORWARD to this very server, every time.
    ForwardLoop,
    /// Raise this system exception with this minor code, COMPLETED_MAYBE.
    System(String, u32),
}

struct Hostile {
    ior: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Hostile {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Start a hostile server: bench.idl-like answers to `reset`, `get_stats`
/// and payload calls, the fault from payload call `ok + 1` on.
fn hostile(fault: Fault, ok: u64) -> Hostile {
    let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (atx, arx) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = l.local_addr().unwrap().port();
            let ior = Ior::builder("IDL:Bench/Perf:1.0")
                .iiop("127.0.0.1", port, &b"Bench"[..], &[])
                .build();
            atx.send(ior.clone()).unwrap();
            let seen = Arc::new(AtomicU64::new(0));
            let mut conns = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    _ = &mut stop_rx => break,
                    r = l.accept() => {
                        let (s, _) = r.unwrap();
                        conns.spawn(conn(s, fault.clone(), ok, seen.clone(), ior.clone()));
                    }
                }
            }
            conns.abort_all();
        });
    });
    let ior = arx.recv().unwrap();
    Hostile {
        ior: ior.to_string(),
        stop: Some(stop_tx),
        thread: Some(thread),
    }
}

async fn conn(mut s: tokio::net::TcpStream, fault: Fault, ok: u64, seen: Arc<AtomicU64>, me: Ior) {
    let mut dec = Decoder::default();
    let mut buf = BytesMut::with_capacity(64 * 1024);
    loop {
        match s.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        while let Ok(Some(f)) = dec.decode(&mut buf) {
            let v = f.header.version;
            let order = f.header.order;
            let Ok(Message::Request(req)) =
                Message::decode(&f.header, f.payload, default_options(v))
            else {
                continue;
            };
            let h = &req.header;
            if !h.response.expects_reply() {
                continue;
            }
            let id = h.request_id;
            let op = h.operation().to_string();
            let mut out = BytesMut::new();
            let good = |out: &mut BytesMut, id: u32| {
                encode_reply(
                    out,
                    v,
                    order,
                    default_options(v),
                    id,
                    ReplyStatus::NoException,
                    &[],
                    |w| {
                        if op == "get_stats" {
                            for _ in 0..3 {
                                w.write_u64(0);
                            }
                            w.write_f64(0.0);
                            w.write_u64(0);
                            w.write_u64(0);
                        }
                        Ok(())
                    },
                )
                .unwrap();
            };
            // What an ORB answers itself (a client resolves the object
            // with `_non_existent` before measuring) and the control calls.
            let control = matches!(
                op.as_str(),
                "reset" | "get_stats" | "ping" | "_non_existent" | "_is_a"
            );
            if control || seen.fetch_add(1, Ordering::SeqCst) < ok {
                good(&mut out, id);
            } else {
                match &fault {
                    Fault::Crash => return,
                    Fault::Reset => {
                        // Linger 0 makes close() send RST at once; it does
                        // not block (the deprecation is about lingering).
                        #[allow(deprecated)]
                        let _ = s.set_linger(Some(Duration::ZERO));
                        return;
                    }
                    Fault::Stall => continue,
                    Fault::Garbage => out.extend_from_slice(b"HTTP/1.1 500 Oops\r\n\r\n"),
                    Fault::WrongId => good(&mut out, id ^ 0x8000_0000),
                    Fault::ForwardLoop => {
                        encode_location_forward(&mut out, v, order, id, &me, false).unwrap();
                    }
                    Fault::System(name, minor) => {
                        let e = SystemException::new(
                            format!("IDL:omg.org/CORBA/{name}:1.0"),
                            *minor,
                            Completion::Maybe,
                        );
                        encode_system_exception(&mut out, v, order, id, &e).unwrap();
                    }
                }
            }
            if s.write_all(&out).await.is_err() {
                return;
            }
        }
    }
}

fn tmp(name: &str) -> PathBuf {
    std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-faults-{}-{name}", std::process::id()))
}

/// Run the CLI in-process with `--json`, on a thread, bounded by a
/// watchdog: (exit status, results).
fn run_json(name: &str, args: &[&str]) -> (i32, Value) {
    let json = tmp(name);
    let mut a: Vec<String> = std::iter::once("iiopbench")
        .chain(args.iter().copied())
        .map(String::from)
        .collect();
    a.extend([
        "--quiet".into(),
        "--json".into(),
        json.display().to_string(),
    ]);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(iiopbench::main_with_args(a));
    });
    let code = rx
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("{name}: the run hung (no exit within 30 s)"));
    let text = std::fs::read_to_string(&json).expect("results written");
    std::fs::remove_file(&json).unwrap();
    (code, serde_json::from_str(&text).unwrap())
}

/// `bench throughput` twoway `send_long` of 1 KiB calls, stopping at the
/// first error: the server answers the overhead probe and 10 measured
/// calls, then misbehaves on call 11.
fn throughput_stop(name: &str, fault: Fault) -> (i32, Value) {
    let h = hostile(fault, 11);
    let r = run_json(
        name,
        &[
            "bench",
            "throughput",
            "--runs",
            "1",
            "--target",
            &h.ior,
            "--type",
            "long",
            "--size",
            "1KiB",
            "--mode",
            "twoway",
            "--total",
            "1MiB",
            "--min-duration",
            "0s",
            "--timeout",
            "1s",
        ],
    );
    drop(h);
    r
}

/// Assert the common shape of a stopped run: exit 1, incomplete, the
/// failure names call 11 and contains `what`, 10 calls measured, one
/// error of `kind`.
fn assert_stopped(name: &str, (code, v): (i32, Value), kind: &str, what: &str) {
    assert_eq!(code, 1, "{name}: exit status");
    assert_eq!(v["outcome"]["complete"], false, "{name}");
    let f = v["outcome"]["failure"].as_str().unwrap();
    assert!(
        f.contains("twoway long 1KiB: call 11 failed") && f.contains(what),
        "{name}: failure {f:?} lacks {what:?}"
    );
    let c = &v["cases"][0];
    assert_eq!(c["calls"], 10, "{name}: measured calls");
    assert_eq!(c["bytes"], 10 * 1024, "{name}: measured bytes");
    let errors = c["errors"].as_object().unwrap();
    assert_eq!(errors.len(), 1, "{name}: {errors:?}");
    assert_eq!(errors[kind], 1, "{name}: {errors:?}");
}

#[test]
fn crash_mid_run_is_connection_closed() {
    assert_stopped(
        "crash",
        throughput_stop("crash.json", Fault::Crash),
        "connection-closed",
        "closed by the peer",
    );
}

#[test]
fn reset_mid_run_is_an_io_error() {
    assert_stopped(
        "reset",
        throughput_stop("reset.json", Fault::Reset),
        "io-error",
        "Connection reset by peer",
    );
}

#[test]
fn a_stalled_server_hits_the_timeout() {
    let t0 = std::time::Instant::now();
    assert_stopped(
        "stall",
        throughput_stop("stall.json", Fault::Stall),
        "timeout",
        "timed out after 1s",
    );
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
}

#[test]
fn garbage_is_a_malformed_reply() {
    assert_stopped(
        "garbage",
        throughput_stop("garbage.json", Fault::Garbage),
        "malformed-reply",
        "bad magic",
    );
}

#[test]
fn a_reply_with_the_wrong_request_id_is_dropped_and_the_call_times_out() {
    assert_stopped(
        "wrong id",
        throughput_stop("wrongid.json", Fault::WrongId),
        "timeout",
        "timed out after 1s",
    );
}

#[test]
fn a_forward_loop_is_refused_not_followed_forever() {
    assert_stopped(
        "forward loop",
        throughput_stop("forward.json", Fault::ForwardLoop),
        "too-many-forwards",
        "more than 8 LOCATION_FORWARD/OBJECT_FORWARD hops (the last from 127.0.0.1:",
    );
}

#[test]
fn every_standard_system_exception_is_reported_with_its_minor_code() {
    for (i, name) in STANDARD.iter().enumerate() {
        let minor = 0x4F4D_0000 | (i as u32 + 1);
        let repo = format!("IDL:omg.org/CORBA/{name}:1.0");
        let want = format!("system exception: {repo} minor {minor:#010x} COMPLETED_MAYBE");
        assert_stopped(
            name,
            throughput_stop(
                &format!("sys-{name}.json"),
                Fault::System(name.to_string(), minor),
            ),
            &repo,
            &want,
        );
    }
}

#[test]
fn on_error_continue_counts_every_failure_and_completes() {
    // 30 twoway sends: 10 answered, then 20 exceptions, all counted.
    let h = hostile(Fault::System("TRANSIENT".into(), 0x4F4D_0002), 10);
    let (code, v) = run_json(
        "cont.json",
        &[
            "bench",
            "latency",
            "--runs",
            "1",
            "--target",
            &h.ior,
            "--op",
            "send",
            "--type",
            "long",
            "--size",
            "64",
            "--count",
            "30",
            "--warmup",
            "0",
            "--on-error",
            "continue",
            "--timeout",
            "1s",
        ],
    );
    drop(h);
    assert_eq!(code, 0);
    assert_eq!(v["outcome"]["complete"], true);
    let c = &v["cases"][0];
    assert_eq!(c["calls"], 10);
    assert_eq!(c["errors"]["IDL:omg.org/CORBA/TRANSIENT:1.0"], 20);
}

#[test]
fn on_error_continue_after_a_crash_ends_without_hanging() {
    // After the crash every call fails at once on the dead connection:
    // counted, and the run ends (complete: the planned count was issued).
    let h = hostile(Fault::Crash, 5);
    let (code, v) = run_json(
        "cont-crash.json",
        &[
            "bench",
            "latency",
            "--runs",
            "1",
            "--target",
            &h.ior,
            "--op",
            "send",
            "--type",
            "long",
            "--size",
            "64",
            "--count",
            "20",
            "--warmup",
            "0",
            "--on-error",
            "continue",
            "--timeout",
            "1s",
        ],
    );
    drop(h);
    assert_eq!(code, 0);
    let c = &v["cases"][0];
    assert_eq!(c["calls"], 5);
    assert_eq!(c["errors"]["connection-closed"], 15, "{}", c["errors"]);
}

#[test]
fn latency_stop_names_the_operation_and_exception() {
    let h = hostile(Fault::System("NO_RESOURCES".into(), 0x4F4D_0001), 3);
    let (code, v) = run_json(
        "lat-stop.json",
        &[
            "bench",
            "latency",
            "--runs",
            "1",
            "--target",
            &h.ior,
            "--op",
            "send",
            "--type",
            "long",
            "--size",
            "64",
            "--count",
            "50",
            "--warmup",
            "0",
            "--timeout",
            "1s",
        ],
    );
    drop(h);
    assert_eq!(code, 1);
    let f = v["outcome"]["failure"].as_str().unwrap();
    assert!(
        f.starts_with("send long 64")
            && f.contains("IDL:omg.org/CORBA/NO_RESOURCES:1.0 minor 0x4f4d0001"),
        "{f}"
    );
    let c = &v["cases"][0];
    assert_eq!(c["calls"], 3);
    assert_eq!(c["errors"]["IDL:omg.org/CORBA/NO_RESOURCES:1.0"], 1);
}

#[test]
fn latency_against_a_server_that_never_answers_stops_at_the_timeout() {
    // Every payload call stalls: the first one times out and, with the
    // default --on-error stop, ends the run.
    let h = hostile(Fault::Stall, 0);
    let (code, v) = run_json(
        "connect-stall.json",
        &[
            "bench",
            "latency",
            "--runs",
            "1",
            "--target",
            &h.ior,
            "--op",
            "send",
            "--type",
            "long",
            "--size",
            "64",
            "--count",
            "5",
            "--warmup",
            "0",
            "--timeout",
            "500ms",
        ],
    );
    drop(h);
    assert_eq!(code, 1);
    let f = v["outcome"]["failure"].as_str().unwrap();
    assert!(f.contains("timed out after 500ms"), "{f}");
    assert_eq!(v["cases"][0]["errors"]["timeout"], 1);
}
