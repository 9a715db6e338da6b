//! Black-box: the GIOP bench commands run in-process against the embedded
//! reference server and against deliberately failing servers; exact counts
//! and bytes asserted from the JSON they write.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use iiop_cdr::{Reader, Writer};
use iiop_giop::exception::Completion;
use iiop_giop::ior::Ior;
use iiop_giop::SystemException;
use iiop_transport::server::{serve, Dispatch, Handler, Outcome, RequestContext, ServerConfig};
use serde_json::Value;

fn tmp(name: &str) -> PathBuf {
    std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-{}-{name}", std::process::id()))
}

fn run(args: &[&str]) -> i32 {
    iiopbench::main_with_args(std::iter::once("iiopbench").chain(args.iter().copied()))
}

fn run_json(name: &str, args: &[&str]) -> (i32, Value) {
    let json = tmp(name);
    let mut a: Vec<&str> = args.to_vec();
    let j = json.to_str().unwrap().to_string();
    a.extend(["--quiet", "--json", &j]);
    let code = run(&a);
    let v =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("results written")).unwrap();
    std::fs::remove_file(&json).unwrap();
    (code, v)
}

/// One run of `bench latency --baseline` on the embedded server: `count`
/// pings, no warm-up, and `extra` flags.
fn latency_with_baseline(name: &str, count: u32, extra: &[&str]) -> (i32, Value) {
    let count = count.to_string();
    let mut args = vec![
        "bench",
        "latency",
        "--runs",
        "1",
        "--count",
        &count,
        "--warmup",
        "0",
        "--baseline",
    ];
    args.extend_from_slice(extra);
    run_json(name, &args)
}

fn cases(v: &Value) -> &Vec<Value> {
    v["cases"].as_array().unwrap()
}

/// One run of `bench throughput`, long and perfstruct at 1 KiB, `total`
/// per point, no minimum duration; unpinned, as the kernel places it
/// (the tests look at the wait strategy that follows).
fn throughput_1kib<'a>(total: &'a str, modes: &'a str) -> Vec<&'a str> {
    vec![
        "bench",
        "throughput",
        "--runs",
        "1",
        "--pin",
        "none",
        "--type",
        "long,perfstruct",
        "--size",
        "1KiB",
        "--total",
        total,
        "--min-duration",
        "0s",
        "--mode",
        modes,
    ]
}

/// The four cases of a `throughput_1kib("256KiB", "oneway,twoway")` run
/// made with `flags` and `path`, checked as every way of sending oneways
/// must leave them: the run and each oneway case record `key` as `value`
/// (their own cases: merge and compare keep them apart), every call and
/// byte arrived, nothing failed; and, where TCP segments are counted
/// (not on the runtime's connection), oneways went at least
/// `oneways_per_segment` to a segment and twoways one each.
fn oneways_delivered(
    flags: &[&str],
    path: &[&str],
    key: &str,
    value: Value,
    oneways_per_segment: f64,
) {
    let mut args = throughput_1kib("256KiB", "oneway,twoway");
    args.extend(["--slices", "4"]);
    args.extend_from_slice(flags);
    args.extend_from_slice(path);
    let (code, v) = run_json(&format!("tp-{key}.json"), &args);
    assert_eq!(code, 0, "{path:?}");
    assert_eq!(v["params"][key], value, "{path:?}");
    let cs = cases(&v);
    assert_eq!(cs.len(), 4, "{path:?}");
    for c in cs {
        let (ty, mode) = (
            c["params"]["type"].as_str().unwrap(),
            c["params"]["mode"].as_str().unwrap(),
        );
        let own = c["params"].get(key);
        assert_eq!(own, (mode == "oneway").then_some(&value), "{path:?}");
        let per_call = if ty == "long" { 1024 } else { 1008 };
        let calls = (256u64 << 10).div_ceil(per_call);
        assert_eq!(c["calls"], calls, "{path:?} {ty} {mode}");
        assert_eq!(
            c["extra"]["server_bytes"],
            calls * per_call,
            "{path:?} {ty} {mode}"
        );
        assert_eq!(c["errors"], serde_json::json!({}), "{path:?} {ty} {mode}");
        let Some(per_segment) = c["extra"]["calls_per_segment"].as_f64() else {
            assert!(path.contains(&"reactor"), "{path:?}");
            continue;
        };
        if mode == "oneway" {
            assert!(
                per_segment >= oneways_per_segment,
                "{path:?} {ty}: {per_segment}"
            );
        } else {
            assert!(
                (0.9..=1.0).contains(&per_segment),
                "{path:?} {ty}: {per_segment}"
            );
        }
    }
}

/// `--coalesce-oneways`: still one write per oneway, but Nagle joins
/// them (TCP_INFO counts the segments: 1 KiB oneways ~20 to one here,
/// where each goes alone without it); twoways go one to a segment as
/// before, and the receiver counts every call and byte. With
/// `--nodelay false` Nagle is on anyway, and the results do not claim it.
#[test]
fn coalesced_oneways_share_segments_and_lose_none() {
    for path in [&[][..], &["--wait-strategy", "reactor"][..]] {
        let flags = ["--coalesce-oneways"];
        oneways_delivered(&flags, path, "coalesce_oneways", true.into(), 2.0);
    }
    let mut args = throughput_1kib("64KiB", "oneway");
    args.extend(["--coalesce-oneways", "--nodelay", "false"]);
    let (code, v) = run_json("tp-coalesced-nagle.json", &args);
    assert_eq!(code, 0);
    assert_eq!(v["params"].get("coalesce_oneways"), None);
    assert!(cases(&v)
        .iter()
        .all(|c| c["params"].get("coalesce_oneways").is_none()));
}

/// `--oneway-buffer`: oneways leave many to a write (TCP_INFO counts the
/// segments), twoways as before, and the receiver still counts every
/// call and byte (each slice's get_stats() lets the rest out).
#[test]
fn a_oneway_buffer_sends_many_oneways_per_segment_and_loses_none() {
    for path in [
        &[][..],
        &["--reuse-request"][..],
        &["--wait-strategy", "reactor"][..],
    ] {
        // ~14 oneways of ~1.1 KiB fill 16 KiB; loopback takes a 16 KiB
        // write as one segment.
        let flags = ["--oneway-buffer", "16KiB"];
        oneways_delivered(&flags, path, "oneway_buffer", 16384.into(), 8.0);
    }
    // With --baseline, the raw stream beside them writes its frames in
    // the same batches, and the ratio compares like with like.
    let mut args = throughput_1kib("256KiB", "oneway");
    args.extend(["--slices", "2", "--oneway-buffer", "16KiB", "--baseline"]);
    let (code, v) = run_json("tp-buffered-raw.json", &args);
    assert_eq!(code, 0);
    // Both raw streams, the one written as ours (TCP_NODELAY, as the
    // buffering client writes) and the limit (the kernel may join).
    for (name, writes) in [
        ("tcp stream 1KiB", "separate"),
        ("tcp stream limit 1KiB", "joined"),
    ] {
        let raw = cases(&v)
            .iter()
            .find(|c| c["name"] == name)
            .expect("a raw stream case");
        assert_eq!(raw["params"]["oneway_buffer"], 16384, "{name}");
        assert_eq!(raw["params"]["stream_writes"], writes, "{name}");
        assert_eq!(
            (&raw["calls"], &raw["bytes"]),
            (&256.into(), &262144.into()),
            "{name}"
        );
    }
    let giop = cases(&v)
        .iter()
        .find(|c| c["params"]["mode"] == "oneway")
        .unwrap();
    assert!(giop["baseline"]["ratio"].as_f64().unwrap() > 0.0);
    assert!(giop["limit"]["ratio"].as_f64().unwrap() > 0.0);
    // The baseline's raw server waits as ours (the reactor: in epoll);
    // the limit's polls before its reads when it has a CPU apart from
    // the client's; the run says so.
    assert_eq!(v["params"]["baseline_server_wait"], "epoll");
    let apart = v["placement"]["relation"] == "cross-cpu";
    let wait = if apart { "poll" } else { "recv" };
    assert_eq!(v["params"]["limit_server_wait"], wait, "{}", v["placement"]);
}

/// `head_first_calls`: where the client waits on read, every oneway of
/// 96 KiB or more goes headers-first, no message under 16 KiB does, and a
/// connection's first large twoways (before it has made enough to time
/// both ways) go headers-first too; the count adds up over slices and
/// runs, as the calls do. The runtime's connection does not say.
#[test]
fn throughput_counts_the_calls_written_headers_first() {
    for wait in ["read", "reactor"] {
        let line = "bench throughput --runs 2 --slices 2 --pin none --type octet \
                    --size 1KiB,128KiB --total 2MiB --min-duration 0s --mode oneway,twoway";
        let mut args: Vec<&str> = line.split_whitespace().collect();
        args.extend(["--wait-strategy", wait]);
        let (code, v) = run_json(&format!("tp-head-first-{wait}.json"), &args);
        assert_eq!(code, 0, "{wait}");
        let cs = cases(&v);
        assert_eq!(cs.len(), 4, "{wait}");
        for c in cs {
            let size = c["params"]["size"].as_u64().unwrap();
            let mode = &c["params"]["mode"];
            let calls = c["calls"].as_u64().unwrap();
            assert_eq!(calls, 2 * (2 << 20) / size, "{wait} {mode} {size}");
            let split = c["extra"]
                .get("head_first_calls")
                .map(|n| n.as_u64().unwrap());
            let want = match (wait, size) {
                ("reactor", _) => None,
                (_, 1024) => Some(0),
                // 32 twoways in all, fewer than a connection makes before
                // it times the two ways: all headers-first.
                _ => Some(calls),
            };
            assert_eq!(split, want, "{wait} {mode} {size}");
        }
    }
}

#[test]
fn throughput_counts_every_call_and_byte_on_every_path() {
    for path in [
        &[][..],
        &["--wait-strategy", "reactor"][..],
        &["--reuse-request"][..],
        &["--reuse-request", "--wait-strategy", "reactor"][..],
        &["--dynamic"][..],
        &["--breakdown"][..],
    ] {
        let mut args = throughput_1kib("64KiB", "oneway,twoway,echo");
        args.extend_from_slice(path);
        let (code, v) = run_json("tp.json", &args);
        assert_eq!(code, 0, "{path:?}");
        assert_eq!(v["kind"], "throughput");
        assert_eq!(v["target"]["kind"], "embedded");
        assert_eq!(v["target"]["orb_type"], "iiopbench");
        assert_eq!(v["outcome"]["complete"], true);
        // One caller: it waits on read unless told otherwise or timing
        // phases (the phase timers live in the runtime's connection).
        let wait = if path.contains(&"reactor") || path == ["--breakdown"] {
            "reactor"
        } else {
            "read"
        };
        assert_eq!(v["params"]["wait_strategy"], wait, "{path:?}");
        let cs = cases(&v);
        assert_eq!(cs.len(), 6, "{path:?}");
        for c in cs {
            let (ty, mode) = (
                c["params"]["type"].as_str().unwrap(),
                c["params"]["mode"].as_str().unwrap(),
            );
            // long: 256 elements = 1024 bytes; perfstruct: 42 × 24 = 1008 bytes
            let per_call = if ty == "long" { 1024 } else { 1008 };
            let calls = 65536u64.div_ceil(per_call);
            assert_eq!(c["calls"], calls, "{path:?} {ty} {mode}");
            assert_eq!(c["bytes"], calls * per_call);
            assert_eq!(
                c["extra"]["server_bytes"],
                calls * per_call,
                "receiver counted every byte"
            );
            assert_eq!(c["errors"], serde_json::json!({}), "{path:?} {ty} {mode}");
            assert!(c["receiver_throughput_mbps"].as_f64().unwrap() > 0.0);
            // The connection's own count of the segments it sent (TCP_INFO,
            // where the socket is ours to ask): one call in flight sends
            // each 1 KiB request in a segment of its own; oneways may share.
            let per_segment = c["extra"]["calls_per_segment"].as_f64();
            if wait == "reactor" {
                assert_eq!(per_segment, None, "{path:?} {mode}");
            } else {
                let segs = c["extra"]["data_segments"].as_u64().unwrap();
                let per_segment = per_segment.unwrap();
                assert!((per_segment - calls as f64 / segs as f64).abs() < 1e-9);
                if mode == "oneway" {
                    assert!(
                        (1..=calls).contains(&segs),
                        "{segs} segments, {calls} calls"
                    );
                } else {
                    assert!(
                        (0.9..=1.0).contains(&per_segment),
                        "{path:?} {mode}: {per_segment}"
                    );
                }
            }
            if mode == "oneway" {
                assert!(c.get("latency_us").is_none());
            } else {
                let h =
                    iiopbench_engine::hist::Latency::from_base64(c["histogram"].as_str().unwrap())
                        .unwrap();
                assert_eq!(h.len(), calls);
            }
            if path == ["--breakdown"] {
                let b = &c["breakdown"];
                let ph = |k: &str| b[k].as_f64().unwrap_or_else(|| panic!("{k} in {b}"));
                let back = ["wait", "read", "demarshal"];
                if mode == "oneway" {
                    // Nothing comes back for a oneway.
                    for k in back {
                        assert_eq!(ph(k), 0.0, "{mode} {k}");
                    }
                } else {
                    for k in back {
                        assert!(ph(k) > 0.0, "{mode} {k}");
                    }
                }
                for k in ["marshal", "write"] {
                    assert!(ph(k) > 0.0, "{mode} {k}");
                }
                // The client's phases fit in the time measured.
                let client: f64 = ["marshal", "write", "wait", "read", "demarshal"]
                    .iter()
                    .map(|k| ph(k))
                    .sum();
                assert!(client <= c["seconds"].as_f64().unwrap() * 1.01, "{b}");
                // The embedded server timed every request, and the
                // get_stats that ends each slice of the point (each slice
                // sent some of these totals: none was skipped).
                let slices = v["params"]["slices"].as_u64().unwrap();
                assert_eq!(slices, 16);
                assert_eq!(ph("server_requests") as u64, calls + slices, "{mode}");
                for k in [
                    "server_read",
                    "server_decode",
                    "server_upcall",
                    "server_marshal",
                ] {
                    assert!(ph(k) > 0.0, "{mode} {k}");
                }
            }
            // GIOP 1.2 request header for this op plus the sequence length:
            // a fixed, small overhead.
            let req = c["overhead"]["request_bytes"].as_f64().unwrap();
            assert!((40.0..=100.0).contains(&req), "request overhead {req}");
        }
    }
}

#[test]
fn latency_closed_open_and_many_connections() {
    let (code, v) = run_json(
        "lat.json",
        &[
            "bench",
            "latency",
            "--runs",
            "1",
            "--pin",
            "none",
            "--op",
            "echo",
            "--type",
            "double",
            "--size",
            "64,1KiB,4KiB",
            "--count",
            "300",
            "--warmup",
            "10",
        ],
    );
    assert_eq!(code, 0);
    let cs = cases(&v);
    assert_eq!(cs.len(), 3);
    for c in cs {
        assert_eq!(c["calls"], 300);
        assert_eq!(
            iiopbench_engine::hist::Latency::from_base64(c["histogram"].as_str().unwrap())
                .unwrap()
                .len(),
            300
        );
    }
    assert_eq!(cs[1]["bytes"], 300 * 1024);
    assert_eq!(v["fits"][0]["points"], 3);
    assert_eq!(v["params"]["wait_strategy"], "read");

    // The same 300 sends of 4 KiB, waiting three ways: on the runtime;
    // with client and server on separate CPUs, where auto spins before it
    // blocks; pinned together, where it does not (the spin would take the
    // server's CPU). The counts are the same.
    let two_cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2;
    for (extra, wait) in [
        (&["--wait-strategy", "reactor"][..], "reactor"),
        (&["--pin", "cross", "--baseline"][..], "spin"),
        (&["--pin", "same", "--baseline"][..], "read"),
    ] {
        if wait == "spin" && !two_cpus {
            continue;
        }
        let mut args = vec![
            "bench", "latency", "--runs", "1", "--op", "send", "--type", "long", "--size", "4KiB",
            "--count", "300", "--warmup", "10",
        ];
        args.extend_from_slice(extra);
        let (code, v) = run_json("lat1w.json", &args);
        assert_eq!(code, 0, "{extra:?}");
        assert_eq!(v["params"]["wait_strategy"], wait, "{extra:?}");
        assert_eq!(cases(&v)[0]["calls"], 300);
        assert_eq!(cases(&v)[0]["bytes"], 300 * 4096);
        if let ["--pin", pin, ..] = extra {
            assert_eq!(v["placement"]["relation"], format!("{pin}-cpu"));
            // The raw-TCP baseline waits the same way, so the ratio
            // compares protocols, not wait strategies.
            assert_eq!(cases(&v).len(), 2);
            assert!(cases(&v)[0]["baseline"]["ratio"].as_f64().unwrap() > 0.0);
        }
    }

    // Waiting on read (spinning or not) is one caller's strategy: asked
    // for with several, it is refused in one line before anything runs.
    for wait in ["read", "spin"] {
        let (code, v) = run_json(
            "lat1x.json",
            &[
                "bench",
                "latency",
                "--runs",
                "1",
                "--connections",
                "2",
                "--wait-strategy",
                wait,
            ],
        );
        assert_eq!(code, 1);
        assert!(
            v["outcome"]["failure"]
                .as_str()
                .unwrap()
                .contains(&format!("--wait-strategy {wait} needs one caller")),
            "{}",
            v["outcome"]["failure"]
        );
        assert!(cases(&v).is_empty());
    }

    let (code, v) = run_json(
        "lat2.json",
        &[
            "bench",
            "latency",
            "--runs",
            "1",
            "--connections",
            "2",
            "--in-flight",
            "3",
            "--count",
            "600",
            "--warmup",
            "0",
        ],
    );
    assert_eq!(code, 0);
    assert_eq!(cases(&v)[0]["calls"], 600);
    assert_eq!(cases(&v)[0]["params"]["connections"], 2);
    assert_eq!(v["params"]["wait_strategy"], "reactor");

    let (code, v) = run_json(
        "lat3.json",
        &[
            "bench", "latency", "--runs", "1", "--rate", "2000", "--count", "200", "--warmup", "0",
        ],
    );
    assert_eq!(code, 0);
    assert_eq!(v["params"]["loop"], "open");
    assert_eq!(v["params"]["wait_strategy"], "reactor");
    assert_eq!(cases(&v)[0]["calls"], 200);
    // 200 calls at 2000/s take at least 99.5 ms of schedule.
    assert!(cases(&v)[0]["seconds"].as_f64().unwrap() >= 0.0995);

    let (code, v) = latency_with_baseline("lat4.json", 200, &[]);
    assert_eq!(code, 0);
    let cs = cases(&v);
    assert_eq!(cs.len(), 2);
    assert_eq!(cs[0]["baseline"]["metric"], "p50");
    assert!(cs[0]["baseline"]["ratio"].as_f64().unwrap() > 0.0);
    // One connection, one call at a time: the point and its raw baseline
    // went in 16 slices side by side, the same number of round trips each
    // (200 split exactly), and the raw case carries the point's machine.
    assert_eq!(cs[0]["params"]["slices"], 16);
    assert_eq!(cs[0]["calls"], 200);
    assert_eq!(cs[1]["name"], "tcp ack 1B");
    assert_eq!(cs[1]["calls"], 200);
    assert_eq!(
        iiopbench_engine::hist::Latency::from_base64(cs[1]["histogram"].as_str().unwrap())
            .unwrap()
            .len(),
        200
    );
    assert_eq!(cs[1]["baseline"], serde_json::Value::Null);
    assert_eq!(cs[1]["noise"], cs[0]["noise"]);
    assert_eq!(
        cs[0]["baseline"]["baseline_value"],
        cs[1]["latency_us"]["p50"]
    );
    // The raw round trips wait on the server side as the embedded
    // server's model does: in epoll beside the default reactor.
    assert_eq!(v["params"]["baseline_server_wait"], "epoll");
    // --slices 1: the baseline after the point, as other shapes measure it.
    let (code, v) = latency_with_baseline(
        "lat5.json",
        50,
        &["--slices", "1", "--server-model", "threads"],
    );
    assert_eq!(code, 0);
    assert_eq!(v["params"]["baseline_server_wait"], "recv");
    let cs = cases(&v);
    assert_eq!(cs.len(), 2);
    assert!(cs[0]["params"].get("slices").is_none());
    assert_eq!(cs[0]["calls"], 50);
    assert!(cs[0]["baseline"]["ratio"].as_f64().unwrap() > 0.0);
}

/// `--server-spin-limit` makes the embedded thread-per-connection server
/// poll after every message; the results say so, and the latency
/// baseline's raw server polls as it does. Without the threads model, or
/// with another server than the embedded one, it is refused.
#[test]
fn the_embedded_server_polls_with_server_spin_limit() {
    let flags = ["--server-model", "threads", "--server-spin-limit", "1ms"];
    let (code, v) = latency_with_baseline("lat_spin.json", 50, &flags);
    let wait = &v["params"]["baseline_server_wait"];
    assert_eq!((code, wait.as_str()), (0, Some("poll")));
    assert_eq!(v["target"]["server_spin_limit_us"], 1000.0);
    assert!(
        v["target"]["isolation"]
            .as_str()
            .unwrap()
            .contains("polling up to 1ms"),
        "{}",
        v["target"]
    );
    assert_eq!(cases(&v)[0]["calls"], 50);
    // Refused beside the reactor, and with a server of another's making.
    for refused in [&[][..], &["--target", "corbaloc::127.0.0.1:9/x"][..]] {
        let mut args = vec!["bench", "latency", "--count", "10", "--quiet"];
        args.extend_from_slice(refused);
        args.extend(["--server-spin-limit", "1ms"]);
        assert_ne!(run(&args), 0, "{args:?}");
    }
}

#[test]
fn connect_times_each_step() {
    let (code, v) = run_json("conn.json", &["bench", "connect", "--count", "20"]);
    assert_eq!(code, 0);
    let names: Vec<&str> = cases(&v)
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "tcp-connect",
            "locate",
            "first-request",
            "warm-request",
            "reference-to-first-reply"
        ]
    );
    for c in cases(&v) {
        assert_eq!(c["calls"], 20);
        assert!(c["latency_us"]["p50"].as_f64().unwrap() > 0.0);
    }
}

/// Answers `reset`/`get_stats`/payload calls like bench.idl, but fails every
/// call after the first `ok` with TRANSIENT.
struct Flaky {
    ok: u64,
    seen: AtomicU64,
}

impl Handler for Flaky {
    fn handle(
        &self,
        ctx: &RequestContext<'_>,
        _body: &mut Reader<'_>,
        reply: &mut Writer<'_>,
    ) -> Dispatch {
        if ctx.operation == "get_stats" {
            for _ in 0..3 {
                reply.write_u64(0);
            }
            reply.write_f64(0.0);
            reply.write_u64(0);
            reply.write_u64(0);
            return Dispatch::Done(Outcome::Reply);
        }
        // reset, and what an ORB answers itself (the client resolves the
        // object with `_non_existent` before measuring), never fail.
        let control = matches!(ctx.operation, "reset" | "_non_existent" | "_is_a");
        if control || self.seen.fetch_add(1, Ordering::Relaxed) < self.ok {
            return Dispatch::Done(Outcome::Reply);
        }
        Dispatch::Done(Outcome::System(SystemException::transient(
            0x4f4d0001,
            Completion::No,
        )))
    }
}

fn flaky_server(
    ok: u64,
) -> (
    String,
    std::thread::JoinHandle<()>,
    tokio::sync::oneshot::Sender<()>,
) {
    handler_server(Arc::new(Flaky {
        ok,
        seen: AtomicU64::new(0),
    }))
}

/// `h` served on 127.0.0.1 (port 0) in a thread of its own: the reference
/// to its object `Bench`, the thread, and what stops it.
fn handler_server<H: Handler + 'static>(
    h: Arc<H>,
) -> (
    String,
    std::thread::JoinHandle<()>,
    tokio::sync::oneshot::Sender<()>,
) {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let (atx, arx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            atx.send(l.local_addr().unwrap()).unwrap();
            serve(l, h, ServerConfig::default(), async {
                let _ = rx.await;
            })
            .await
            .unwrap();
        });
    });
    let addr = arx.recv().unwrap();
    let ior = Ior::builder("IDL:Bench/Perf:1.0")
        .iiop("127.0.0.1", addr.port(), &b"Bench"[..], &[])
        .build();
    (ior.to_string(), h, tx)
}

/// Answers `_non_existent` (false) and `ping`, and keeps each
/// connection's operations in the order they came.
#[derive(Default)]
struct Recorder {
    ops: std::sync::Mutex<std::collections::BTreeMap<u64, Vec<String>>>,
}

impl Handler for Recorder {
    fn handle(
        &self,
        ctx: &RequestContext<'_>,
        _body: &mut Reader<'_>,
        reply: &mut Writer<'_>,
    ) -> Dispatch {
        self.ops
            .lock()
            .unwrap()
            .entry(ctx.connection)
            .or_default()
            .push(ctx.operation.to_string());
        if ctx.operation == "_non_existent" {
            reply.write_bool(false);
        }
        Dispatch::Done(Outcome::Reply)
    }
}

/// `first-request` times the first request of each fresh connection, not
/// a second one after the connection was resolved: every timed connection
/// carries exactly the measured `_non_existent` and then `ping`.
#[test]
fn connects_first_request_is_the_connections_first() {
    let rec = Arc::new(Recorder::default());
    let (ior, h, stop) = handler_server(rec.clone());
    let (code, v) = run_json(
        "conn-first.json",
        &["bench", "connect", "--count", "5", "--target", &ior],
    );
    stop.send(()).unwrap();
    h.join().unwrap();
    assert_eq!(code, 0, "{}", v["outcome"]);
    let ops = rec.ops.lock().unwrap();
    let timed: Vec<&Vec<String>> = ops
        .values()
        .filter(|o| o.iter().any(|op| op == "ping"))
        .collect();
    assert_eq!(timed.len(), 5, "{ops:?}");
    for o in timed {
        assert_eq!(o, &["_non_existent", "ping"], "{ops:?}");
    }
}

#[test]
fn a_failing_target_ends_the_run_with_what_was_measured() {
    // 26 good calls: one is the overhead probe made before reset().
    let (ior, h, stop) = flaky_server(26);
    let (code, v) = run_json(
        "fail.json",
        &[
            "bench",
            "throughput",
            "--runs",
            "1",
            "--target",
            &ior,
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
        ],
    );
    assert_eq!(code, 1);
    assert_eq!(v["outcome"]["complete"], false);
    let f = v["outcome"]["failure"].as_str().unwrap();
    assert!(f.contains("TRANSIENT") && f.contains("call 26"), "{f}");
    let c = &cases(&v)[0];
    assert_eq!(c["calls"], 25);
    assert_eq!(c["errors"]["IDL:omg.org/CORBA/TRANSIENT:1.0"], 1);
    let _ = stop.send(());
    h.join().unwrap();

    // --on-error continue: every failure is counted, the run completes.
    let (ior, h, stop) = flaky_server(10);
    let (code, v) = run_json(
        "cont.json",
        &[
            "bench",
            "latency",
            "--runs",
            "1",
            "--target",
            &ior,
            "--count",
            "50",
            "--warmup",
            "0",
            "--on-error",
            "continue",
        ],
    );
    assert_eq!(code, 0);
    let c = &cases(&v)[0];
    assert_eq!(c["calls"], 10);
    assert_eq!(c["errors"]["IDL:omg.org/CORBA/TRANSIENT:1.0"], 40);
    let _ = stop.send(());
    h.join().unwrap();
}

#[test]
fn unreachable_target_is_one_clear_line() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let target = format!("corbaloc:iiop:1.2@127.0.0.1:{port}/Bench");
    let (code, v) = run_json(
        "unreach.json",
        &[
            "bench",
            "latency",
            "--runs",
            "1",
            "--target",
            &target,
            "--count",
            "5",
            "--timeout",
            "2s",
        ],
    );
    assert_eq!(code, 1);
    assert!(
        v["outcome"]["failure"]
            .as_str()
            .unwrap()
            .contains("connect"),
        "{}",
        v["outcome"]["failure"]
    );
    assert_eq!(v["target"]["kind"], "corbaloc");
    assert_eq!(v["target"]["port"], port);
}

/// A point that cannot make its count within `--max-duration` ends with
/// what it measured, marked and warned about, and the next point runs:
/// the run is complete and exits 0 (a suite's case that cannot finish its
/// calls does not stop the suite). Open and closed loop alike.
#[test]
fn a_time_cap_ends_a_point_with_what_it_measured() {
    for (name, extra) in [
        ("cap-closed", &[][..]),
        ("cap-open", &["--rate", "2000"][..]),
    ] {
        let mut args = vec![
            "bench",
            "latency",
            "--op",
            "echo",
            "--size",
            "64,1KiB",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--count",
            "100000000",
            "--max-duration",
            "300ms",
        ];
        args.extend_from_slice(extra);
        let t = std::time::Instant::now();
        let (code, v) = run_json(name, &args);
        assert_eq!(code, 0, "{name}: {}", v["outcome"]);
        assert_eq!(v["outcome"]["complete"], true, "{name}");
        // Two points of 300 ms each, and set-up: far from 10^8 calls.
        assert!(t.elapsed() < std::time::Duration::from_secs(60), "{name}");
        let cs = cases(&v);
        assert_eq!(cs.len(), 2, "{name}: both points ran");
        for c in cs {
            let calls = c["calls"].as_u64().unwrap();
            assert!(calls > 0 && calls < 100_000_000, "{name}: {calls}");
            assert_eq!(c["extra"]["stopped_by"], "time-cap", "{name}: {c}");
            assert_eq!(c["extra"]["planned_calls"], 100_000_000, "{name}");
            let secs = c["seconds"].as_f64().unwrap();
            assert!((0.25..5.0).contains(&secs), "{name}: {secs} s");
        }
        let warned = v["quality"]["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("cut short echo octet 64B"));
        assert!(warned, "{name}: {}", v["quality"]["warnings"]);
    }
}

/// `--baseline` with several callers: raw TCP is driven by the very loop
/// the GIOP calls were (as many connections and calls in flight, the same
/// count or rate), against a raw server of one tokio thread, and each
/// case's `vs tcp` is its p50 over that raw case's of its size: like with
/// like, where a lone raw ping-pong would set ten callers' queueing beside
/// one caller's round trip.
#[test]
fn many_callers_are_set_beside_raw_tcp_driven_by_the_same_loop() {
    let (code, v) = latency_with_baseline(
        "lat-loop.json",
        600,
        &["--connections", "3", "--in-flight", "2"],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["params"]["baseline_server_wait"], "reactor");
    let cs = cases(&v);
    let raw = cs
        .iter()
        .find(|c| c["params"]["mode"] == "tcp-loop-ack")
        .unwrap_or_else(|| panic!("no raw loop case: {v}"));
    assert_eq!(raw["calls"], 600, "{raw}");
    assert_eq!(raw["params"]["connections"], 3, "{raw}");
    assert_eq!(raw["params"]["in_flight"], 2, "{raw}");
    let ping = cs.iter().find(|c| c["params"]["mode"] == "ping").unwrap();
    assert_eq!(ping["baseline"]["baseline_value"], raw["latency_us"]["p50"]);
    let ratio =
        ping["latency_us"]["p50"].as_f64().unwrap() / raw["latency_us"]["p50"].as_f64().unwrap();
    assert!((ping["baseline"]["ratio"].as_f64().unwrap() - ratio).abs() < 1e-9);

    // Echo at two sizes, open loop: a raw echo of each size at the rate.
    let (code, v) = latency_with_baseline(
        "lat-loop-echo.json",
        200,
        &["--op", "echo", "--size", "64,1KiB", "--rate", "2000"],
    );
    assert_eq!(code, 0, "{v}");
    let raw: Vec<&Value> = cases(&v)
        .iter()
        .filter(|c| c["params"]["mode"] == "tcp-loop-echo")
        .collect();
    assert_eq!(raw.len(), 2, "{v}");
    for (r, size) in raw.iter().zip([64, 1024]) {
        assert_eq!(r["params"]["size"], size, "{r}");
        assert_eq!(r["calls"], 200, "{r}");
    }
    for c in cases(&v).iter().filter(|c| c["params"]["mode"] == "echo") {
        assert!(c["baseline"]["ratio"].as_f64().unwrap() > 0.0, "{c}");
    }
}
