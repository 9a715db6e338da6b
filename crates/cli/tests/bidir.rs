//! Black-box: bidirectional GIOP from the command line. `--bidir` offers
//! every connection for callbacks and serves bench.idl's Callback on it
//! (`notify(n)` answers `n + 1`); `call_back` then makes the server call
//! back over our own connection before it answers. Against our server
//! (both client drivers), JacORB's and omniORB's bench servers, and
//! omniORB's one-thread-per-connection server, which cannot read the
//! callback's reply (a known defect): a clear error within --timeout.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

fn tmp(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-{}-bidir-{name}", std::process::id()))
}

/// `iiopbench ARGS` as a process: exit code, stdout, stderr, and how long
/// it took. Killed (and the test failed) after `limit`.
fn iiopbench(args: &[&str], limit: Duration) -> (i32, String, String, Duration) {
    let r = common::iiopbench_bounded(args, limit);
    (r.code.unwrap_or(-1), r.stdout, r.stderr, r.took)
}

/// `bench latency --op call_back --bidir` against `target` with `extra`
/// flags: its one case, after asserting a clean run.
fn call_back_latency(name: &str, target: &str, extra: &[&str]) -> Value {
    let json = tmp(name);
    let j = json.to_str().unwrap();
    let mut args = vec![
        "bench",
        "latency",
        "--op",
        "call_back",
        "--bidir",
        "--count",
        "200",
        "--warmup",
        "20",
        "--runs",
        "1",
        "--timeout",
        "10s",
        "--quiet",
        "--json",
        j,
        "--target",
        target,
    ];
    args.extend_from_slice(extra);
    let (code, _, err, _) = iiopbench(&args, Duration::from_secs(120));
    assert_eq!(code, 0, "{name}: {err}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).unwrap();
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 1, "{name}: {v}");
    let c = cases[0].clone();
    assert_eq!(c["name"], "call_back", "{name}: {c}");
    assert_eq!(c["params"]["mode"], "call_back", "{name}: {c}");
    // Every call checked notify's n + 1 coming back through call_back:
    // the callback reached our servant over our connection each time.
    assert_eq!(c["calls"], 200, "{name}: {c}");
    assert_eq!(c["errors"], serde_json::json!({}), "{name}: {c}");
    assert!(
        c["latency_us"]["p50"].as_f64().unwrap() > 0.0,
        "{name}: {c}"
    );
    c
}

/// `call` of bench.idl's call_back(cb, 41) with `--bidir` (cb: ours).
fn call_back_once(target: &str) -> (i32, String, String) {
    let idl = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/idl/bench.idl");
    let (code, out, err, _) = iiopbench(
        &[
            "call",
            "--idl",
            idl,
            "--op",
            "Bench::Perf::call_back",
            "--args",
            r#"{"n": 41}"#,
            "--bidir",
            "--compact",
            "--timeout",
            "10s",
            "--target",
            target,
        ],
        Duration::from_secs(60),
    );
    (code, out, err)
}

#[test]
fn call_back_without_bidir_is_refused_before_anything_starts() {
    let (code, out, err, took) = iiopbench(
        &["bench", "latency", "--op", "call_back", "--count", "10"],
        Duration::from_secs(30),
    );
    assert_ne!(code, 0, "{out}{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("--op call_back needs --bidir") && err.contains("NO_PERMISSION"),
        "{err}"
    );
    // Refused at validation: no embedded server, no run.
    assert!(out.is_empty(), "{out}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    // A sweep likewise.
    let (code, _, err, _) = iiopbench(
        &["bench", "sweep", "--op", "call_back", "--quick"],
        Duration::from_secs(30),
    );
    assert_ne!(code, 0);
    assert!(err.contains("--op call_back needs --bidir"), "{err}");
    // --bidir speaks GIOP 1.2 only.
    let (code, _, err, _) = iiopbench(
        &[
            "bench",
            "latency",
            "--op",
            "call_back",
            "--bidir",
            "--giop",
            "1.1",
        ],
        Duration::from_secs(30),
    );
    assert_ne!(code, 0);
    assert!(err.contains("--bidir") && err.contains("GIOP 1.2"), "{err}");
}

/// Our server, in process: both client drivers (waiting on read and on
/// the runtime) serve the callback; `call --bidir` returns notify's 42.
#[test]
fn call_back_against_our_server_with_both_drivers() {
    let srv = common::serve_in_process(&[]);
    let ior = srv.refs().ior.to_string();
    for wait in ["read", "reactor"] {
        let c = call_back_latency(wait, &ior, &["--wait-strategy", wait]);
        assert!(c["latency_us"]["p50"].as_f64().unwrap() < 1e6, "{c}");
    }
    // Two connections, several calls in flight each: callbacks of
    // concurrent calls all come back over the connection that asked.
    call_back_latency(
        "in-flight",
        &ior,
        &["--connections", "2", "--in-flight", "4"],
    );
    // An open-loop sweep: calls overlap on the runtime's connection.
    let json = tmp("sweep");
    let j = json.to_str().unwrap();
    let (code, _, err, _) = iiopbench(
        &[
            "bench",
            "sweep",
            "--op",
            "call_back",
            "--bidir",
            "--open",
            "500,1000",
            "--step-duration",
            "1s",
            "--quick",
            "--quiet",
            "--json",
            j,
            "--target",
            &ior,
        ],
        Duration::from_secs(120),
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).unwrap();
    let steps: Vec<&Value> = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"].as_str().unwrap().starts_with("call_back"))
        .collect();
    assert_eq!(steps.len(), 2, "{v}");
    for c in steps {
        assert!(c["calls"].as_u64().unwrap() > 0, "{c}");
        assert_eq!(c["errors"], serde_json::json!({}), "{c}");
    }
    let (code, out, err) = call_back_once(&ior);
    assert_eq!((code, out.trim()), (0, r#"{"return":42}"#), "{err}");
    // Without --bidir, our server refuses to call back: NO_PERMISSION.
    let idl = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/idl/bench.idl");
    let cb = srv.refs().ior.to_string();
    let args = format!(r#"{{"cb": "{cb}", "n": 41}}"#);
    let (code, out, _, _) = iiopbench(
        &[
            "call",
            "--idl",
            idl,
            "--op",
            "Bench::Perf::call_back",
            "--args",
            &args,
            "--compact",
            "--target",
            &ior,
        ],
        Duration::from_secs(60),
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("NO_PERMISSION"), "{out}");
}

/// JacORB's bench server and omniORB's with two threads per connection
/// call back over our connection (omniORB after a LocateRequest for the
/// Callback and a forward of call_back to its BiDir POA, both followed on
/// the same connection).
#[test]
fn call_back_against_jacorb_and_omniorb_servers() {
    for (orb, extra) in [
        ("jacorb", &[][..]),
        ("omniorb", &["-ORBmaxServerThreadPerConnection", "2"][..]),
    ] {
        if !common::vendor_built("bidir call_back vendor servers", orb, true) {
            continue;
        }
        let ior = tmp(&format!("{orb}.ior"));
        let _srv = common::vendor_server_with(orb, &ior, extra);
        let target = ior.to_str().unwrap();
        for wait in ["read", "reactor"] {
            call_back_latency(&format!("{orb}-{wait}"), target, &["--wait-strategy", wait]);
        }
        let (code, out, err) = call_back_once(target);
        assert_eq!((code, out.trim()), (0, r#"{"return":42}"#), "{orb}: {err}");
        let _ = std::fs::remove_file(&ior);
    }
}

/// omniORB's default server reads a connection with one thread, which
/// waits in call_back and never reads notify's reply (a known defect):
/// the run fails within --timeout with one line naming the cause, for
/// both drivers, instead of hanging.
#[test]
fn call_back_against_omniorb_with_one_thread_fails_within_the_timeout() {
    if !common::vendor_built("bidir call_back omniORB one thread", "omniorb", true) {
        return;
    }
    let ior = tmp("omniorb-1.ior");
    let _srv = common::vendor_server("omniorb", &ior);
    let target = ior.to_str().unwrap();
    for wait in ["read", "reactor"] {
        let (code, out, err, took) = iiopbench(
            &[
                "bench",
                "latency",
                "--op",
                "call_back",
                "--bidir",
                "--count",
                "10",
                "--warmup",
                "1",
                "--runs",
                "1",
                "--timeout",
                "2s",
                "--wait-strategy",
                wait,
                "--target",
                target,
            ],
            Duration::from_secs(60),
        );
        assert_ne!(code, 0, "{wait}: {out}{err}");
        let line = err.trim();
        assert_eq!(line.lines().count(), 1, "{wait}: {err}");
        assert!(
            line.contains("timed out after 2s")
                && line.contains("-ORBmaxServerThreadPerConnection 2"),
            "{wait}: {line}"
        );
        // The timeout, plus start-up and the close: well under the limit
        // a hang would reach.
        assert!(took < Duration::from_secs(20), "{wait}: {took:?}");
    }
    let _ = std::fs::remove_file(&ior);
}

/// `--breakdown` on a connection offered for callbacks: every twoway's
/// phases are timed as on any other connection (the reader that also
/// answers the server's callbacks stamps each answer it hands over; it
/// used to hand them over unstamped, and every phase read 0).
#[test]
fn phases_are_timed_on_a_connection_offered_for_callbacks() {
    let json = tmp("breakdown.json");
    let j = json.to_str().unwrap();
    let args = [
        "bench",
        "throughput",
        "--type",
        "long",
        "--size",
        "1KiB",
        "--total",
        "128KiB",
        "--mode",
        "twoway",
        "--breakdown",
        "--bidir",
        "--quiet",
        "--json",
        j,
    ];
    let (code, _, err, _) = iiopbench(&args, Duration::from_secs(120));
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).unwrap();
    let c = &v["cases"][0];
    assert_eq!(c["errors"], serde_json::json!({}), "{c}");
    let b = &c["breakdown"];
    let ph = |k: &str| b[k].as_f64().unwrap_or_else(|| panic!("{k} in {b}"));
    for k in ["marshal", "write", "wait", "read", "demarshal"] {
        assert!(ph(k) > 0.0, "{k}: {b}");
    }
    // The client's phases fit in the time measured.
    let client: f64 = ["marshal", "write", "wait", "read", "demarshal"]
        .iter()
        .map(|k| ph(k))
        .sum();
    assert!(client <= c["seconds"].as_f64().unwrap() * 1.01, "{b}");
}
