//! Many calls in flight, black-box: `bench latency --service` against our
//! server in another process, which holds each call, in the closed loop
//! (`--connections` × `--in-flight` callers) and the open loop (`--rate`
//! × the service time outstanding). The generator's own memory per call
//! in flight (`client_rss_per_call_bytes`) stays under the bound
//! docs/methodology.md states, and the calls in flight reach the target
//! (`max_in_flight`), so that the bound is not met by holding few. The
//! same for connections held open (a connections sweep): the generator's
//! memory per connection under its bound, the server's reported.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The bound docs/methodology.md states: the generator's resident memory per
/// call in flight. A call in flight holds its task (the call's future,
/// a few KiB in a debug build), the connection's waiter for its reply and
/// the reply's bytes until they are read.
const PER_CALL_BOUND: f64 = 16.0 * 1024.0;

/// The bound docs/methodology.md states: the generator's resident memory
/// per connection held open. A connection holds its socket, its reader
/// and writer tasks and their buffers.
const PER_CONNECTION_BOUND: f64 = 64.0 * 1024.0;

fn dir(test: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("in-flight-{test}"));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// One run at a time: the runs hold many calls on a machine with few CPUs.
static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Our server in its own process, holding up to `in_flight` calls per
/// connection, and its IOR.
fn server(test: &str, in_flight: usize) -> (common::Proc, String) {
    serve(test, &["--max-in-flight", &in_flight.to_string()])
}

/// `iiopbench serve --server-threads 1 ARGS` in its own process, and its
/// IOR.
fn serve(test: &str, args: &[&str]) -> (common::Proc, String) {
    let ior = dir(test).join("ior");
    let _ = std::fs::remove_file(&ior);
    let mut c = Command::new(env!("CARGO_BIN_EXE_iiopbench"));
    c.args(["serve", "--server-threads", "1"])
        .args(args)
        .arg("--ior-file")
        .arg(&ior);
    let p = common::start(c);
    let text = std::fs::read_to_string(&ior).unwrap();
    (p, text.trim().to_string())
}

/// `bench latency ARGS --json FILE` against `ior`, killed after 120 s:
/// the JSON's one case.
fn latency(test: &str, ior: &str, args: &[&str]) -> Value {
    let mut all = vec!["latency", "--target", ior, "--warmup", "0"];
    all.extend(["--runs", "1", "--service-kind", "sleep"]);
    all.extend(args);
    let v = bench(test, &all);
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 1, "{v}");
    cases[0].clone()
}

/// `bench ARGS --json FILE`, killed after 120 s: the JSON.
fn bench(test: &str, args: &[&str]) -> Value {
    let json = dir(test).join("bench.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_iiopbench"))
        .arg("bench")
        .args(args)
        .arg("--json")
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("bench {args:?} ran over 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The generator's figures of a run that held `target` calls at once.
fn check_memory(c: &Value, target: f64) {
    let e = &c["extra"];
    eprintln!(
        "{} in flight: client RSS {} bytes, {} bytes per call",
        e["max_in_flight"], e["client_rss_bytes"], e["client_rss_per_call_bytes"]
    );
    assert!(f(&e["max_in_flight"]) >= target, "{c}");
    assert!(f(&e["client_rss_bytes"]) > 1e6, "{c}");
    let per = f(&e["client_rss_per_call_bytes"]);
    assert!(
        per > 0.0 && per < PER_CALL_BOUND,
        "{per} bytes per call in flight"
    );
}

/// 20 000 callers (10 connections × 2000), each call held 2 s by the
/// server: every caller's first call is in flight at once, each once.
#[test]
fn twenty_thousand_calls_in_flight_in_the_closed_loop_stay_within_the_bound() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let (_srv, ior) = server("closed", 2000);
    let c = latency(
        "closed",
        &ior,
        &[
            "--service",
            "2s",
            "--connections",
            "10",
            "--in-flight",
            "2000",
            "--duration",
            "1s",
        ],
    );
    assert_eq!(c["name"], "work 2.000 s sleep", "{c}");
    assert_eq!(f(&c["calls"]), 20_000.0, "{c}");
    assert_eq!(c["errors"], serde_json::json!({}), "{c}");
    check_memory(&c, 20_000.0);
}

/// The open loop at 5000 calls/s for 2 s, each held 2 s: about 10 000
/// outstanding at the end of the sending, all answered, none beyond
/// `--max-outstanding`.
#[test]
fn ten_thousand_calls_outstanding_in_the_open_loop_stay_within_the_bound() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let (_srv, ior) = server("open", 10_000);
    let c = latency(
        "open",
        &ior,
        &[
            "--service",
            "2s",
            "--connections",
            "4",
            "--rate",
            "5000",
            "--duration",
            "2s",
            "--on-error",
            "continue",
        ],
    );
    assert_eq!(f(&c["calls"]), 10_000.0, "{c}");
    assert_eq!(c["errors"], serde_json::json!({}), "{c}");
    // A busy machine sends some calls late, after earlier ones returned:
    // most of the 10 000 are outstanding at once all the same.
    check_memory(&c, 8_000.0);
    // Each latency counts from its intended time: the service time at
    // least (to the histogram's 0.1 % resolution).
    assert!(f(&c["latency_us"]["min"]) >= 2e6 * 0.999, "{c}");
}

/// A cap below the calls the rate and service keep outstanding: the
/// calls beyond it are `overload` errors, and no more than the cap are
/// ever in flight.
#[test]
fn calls_beyond_max_outstanding_are_overload_errors() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let (_srv, ior) = server("overload", 1000);
    let c = latency(
        "overload",
        &ior,
        &[
            "--service",
            "1s",
            "--rate",
            "2000",
            "--duration",
            "1s",
            "--max-outstanding",
            "500",
            "--on-error",
            "continue",
        ],
    );
    assert_eq!(f(&c["extra"]["max_in_flight"]), 500.0, "{c}");
    let overload = f(&c["errors"]["overload"]);
    assert_eq!(f(&c["calls"]) + overload, 2000.0, "{c}");
    assert!(overload >= 1000.0, "{c}");
}

/// Connections held open to our server in another process, 300 then
/// 1500 then 3000 (a connections sweep, 500 calls/s spread over them):
/// what each added connection cost the generator — the slope of its
/// resident memory between steps, which leaves its fixed costs out —
/// stays under the bound, and the server's memory per connection is
/// read from its process beside it.
#[test]
fn thousands_of_connections_stay_within_the_bound_per_connection() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let (_srv, ior) = serve("connections", &["--max-connections", "4000"]);
    let steps = [300.0, 1500.0, 3000.0];
    let v = bench(
        "connections",
        &[
            "sweep",
            "--target",
            &ior,
            "--connections",
            "300,1500,3000",
            "--rate",
            "500",
            "--step-duration",
            "500ms",
            "--warmup",
            "10",
            "--min-achieved",
            "1%",
        ],
    );
    let p = &v["params"];
    // The open-file limit: raised where the hard limit allows, and said
    // where it does not (then the sweep stops short of the steps below).
    let n = &p["nofile"];
    assert!(f(&n["needed"]) >= 3000.0, "{n}");
    assert_eq!(
        n["capped"], false,
        "the hard open-file limit is too low: {n}"
    );
    assert_eq!(p["server_rss_source"], "server-process", "{p}");
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), steps.len(), "{p}");
    for (c, want) in cases.iter().zip(steps) {
        assert_eq!(f(&c["extra"]["connections"]), want, "{c}");
        assert_eq!(c["errors"], serde_json::json!({}), "{c}");
    }
    let e = |i: usize, k: &str| f(&cases[i]["extra"][k]);
    for (i, c) in cases.iter().enumerate() {
        eprintln!(
            "{} connections: generator {} bytes, {} per added connection; \
             server {} bytes, {} per added connection",
            c["extra"]["connections"],
            c["extra"]["client_rss_bytes"],
            c["extra"]["client_rss_per_connection_bytes"],
            c["extra"]["server_rss_bytes"],
            c["extra"]["rss_per_connection_bytes"],
        );
        assert!(e(i, "client_rss_bytes") > 1e6, "{c}");
        assert!(e(i, "server_rss_bytes") > 1e6, "{c}");
    }
    // The generator: per connection added by the last two steps, and over
    // the whole slope from the first step to the last.
    let slope = (e(2, "client_rss_bytes") - e(0, "client_rss_bytes")) / (steps[2] - steps[0]);
    for per in [
        e(1, "client_rss_per_connection_bytes"),
        e(2, "client_rss_per_connection_bytes"),
        slope,
    ] {
        assert!(
            per > 0.0 && per < PER_CONNECTION_BOUND,
            "{per} bytes per connection (bound {PER_CONNECTION_BOUND})"
        );
    }
    // The server's side of them is reported, and is some KiB each too.
    let srv = (e(2, "server_rss_bytes") - e(0, "server_rss_bytes")) / (steps[2] - steps[0]);
    assert!(
        srv > 0.0 && srv < 1024.0 * 1024.0,
        "server: {srv} per connection"
    );
    assert!(e(2, "rss_per_connection_bytes") >= 0.0);
}
