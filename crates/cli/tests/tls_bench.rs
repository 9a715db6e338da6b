//! Black-box: benchmarks over TLS against the embedded server, which
//! serves TLS with a certificate made for the run (`--tls` and no
//! `--target`); counts and bytes checked in the JSON.

use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-tls-{}-{name}", std::process::id()))
}

fn run_json(name: &str, args: &[&str]) -> (i32, serde_json::Value) {
    let json = tmp(name);
    let mut all = vec!["iiopbench"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--quiet", "--json", json.to_str().unwrap()]);
    let code = iiopbench::main_with_args(all.iter().copied());
    let v = std::fs::read_to_string(&json)
        .map(|s| serde_json::from_str(&s).unwrap())
        .unwrap_or(serde_json::Value::Null);
    let _ = std::fs::remove_file(&json);
    (code, v)
}

#[test]
fn embedded_server_serves_tls_with_a_certificate_of_its_own() {
    let started = std::time::Instant::now();
    let (code, v) = run_json(
        "lat.json",
        &[
            "bench", "latency", "--tls", "--runs", "1", "--pin", "none", "--op", "echo", "--type",
            "octet", "--size", "1KiB", "--count", "200", "--warmup", "10",
        ],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["outcome"]["complete"], true);
    assert_eq!(v["params"]["tls"], true);
    let iso = v["target"]["isolation"].as_str().unwrap();
    assert!(iso.contains("TLS only"), "{iso}");
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 1);
    assert_eq!(cases[0]["calls"], 200);
    assert_eq!(cases[0]["bytes"], 200 * 1024);
    assert!(cases[0]["latency_us"]["p50"].as_f64().unwrap() > 0.0);
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

#[test]
fn tls_with_a_target_still_needs_a_ca() {
    let (code, v) = run_json(
        "noca.json",
        &[
            "bench",
            "latency",
            "--tls",
            "--target",
            "corbaloc:iiop:1.2@127.0.0.1:1/Bench",
            "--runs",
            "1",
            "--count",
            "1",
        ],
    );
    assert_ne!(code, 0);
    let failure = v["outcome"]["failure"].as_str().unwrap_or_default();
    assert!(
        failure.contains("--tls with a --target needs --tls-ca"),
        "{v}"
    );
}

/// The cases of `v` whose mode is `mode`.
/// The cases of `mode`, but the raw limits of a throughput baseline
/// (`params.limit`), which the raw TCP cases of a mode have beside them.
fn by_mode<'a>(v: &'a serde_json::Value, mode: &str) -> Vec<&'a serde_json::Value> {
    v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["params"]["mode"] == mode && c["params"]["limit"].is_null())
        .collect()
}

#[test]
fn throughput_baseline_over_tls_measures_raw_tcp_and_raw_tls() {
    let started = std::time::Instant::now();
    let (code, v) = run_json(
        "tp.json",
        &[
            "bench",
            "throughput",
            "--tls",
            "--baseline",
            "--runs",
            "1",
            "--pin",
            "none",
            "--type",
            "octet",
            "--size",
            "1KiB",
            "--total",
            "64KiB",
            "--min-duration",
            "50ms",
            "--mode",
            "oneway,twoway",
        ],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["params"]["tls"], true);
    for mode in ["oneway", "twoway"] {
        let giop = by_mode(&v, mode);
        assert_eq!(giop.len(), 1, "{mode}");
        let c = giop[0];
        let calls = c["calls"].as_u64().unwrap();
        assert!(calls >= 64, "{mode}: {calls} calls");
        assert_eq!(c["bytes"].as_u64().unwrap(), calls * 1024);
        for b in ["baseline", "limit", "tls_baseline"] {
            assert_eq!(c[b]["metric"], "throughput", "{mode} {b}");
            assert!(c[b]["baseline_value"].as_f64().unwrap() > 0.0, "{mode} {b}");
            assert!(c[b]["ratio"].as_f64().unwrap() > 0.0, "{mode} {b}");
        }
    }
    for (mode, name) in [
        ("tcp-stream", "tcp stream 1KiB"),
        ("tls-tcp-stream", "tls-tcp stream 1KiB"),
    ] {
        let raw = by_mode(&v, mode);
        assert_eq!(raw.len(), 1, "{mode}");
        assert_eq!(raw[0]["name"], name);
        let calls = raw[0]["calls"].as_u64().unwrap();
        assert!(calls >= 64, "{mode}");
        assert_eq!(raw[0]["bytes"].as_u64().unwrap(), calls * 1024, "{mode}");
        // The server counted every byte that was sent.
        let sent = raw[0]["throughput_mbps"].as_f64().unwrap();
        assert!(raw[0]["receiver_throughput_mbps"].as_f64().unwrap() > 0.0);
        assert!(sent > 0.0);
    }
    for mode in ["tcp-pingpong-ack", "tls-tcp-pingpong-ack"] {
        let raw = by_mode(&v, mode);
        assert_eq!(raw.len(), 1, "{mode}");
        assert!(raw[0]["calls"].as_u64().unwrap() > 0, "{mode}");
        assert!(
            raw[0]["latency_us"]["p50"].as_f64().unwrap() > 0.0,
            "{mode}"
        );
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

#[test]
fn latency_baseline_over_tls_folds_runs_into_both_ratios() {
    let (code, v) = run_json(
        "lat-base.json",
        &[
            "bench",
            "latency",
            "--tls",
            "--baseline",
            "--runs",
            "2",
            "--pin",
            "none",
            "--op",
            "echo",
            "--type",
            "octet",
            "--size",
            "1KiB",
            "--count",
            "100",
            "--warmup",
            "5",
            "--duration",
            "200ms",
        ],
    );
    assert_eq!(code, 0, "{v}");
    let giop = by_mode(&v, "echo");
    assert_eq!(giop.len(), 1);
    let c = giop[0];
    assert_eq!(c["runs"].as_array().unwrap().len(), 2);
    assert_eq!(c["intervals"]["vs_tls_tcp"]["n"], 2);
    assert_eq!(c["intervals"]["vs_tcp"]["n"], 2);
    for b in ["baseline", "tls_baseline"] {
        assert_eq!(c[b]["metric"], "p50", "{b}");
        assert!(c[b]["ratio"].as_f64().unwrap() > 0.0, "{b}");
    }
    for r in c["runs"].as_array().unwrap() {
        assert!(r["tls_baseline_ratio"].as_f64().unwrap() > 0.0);
    }
    let raw = by_mode(&v, "tls-tcp-pingpong-echo");
    assert_eq!(raw.len(), 1);
    assert_eq!(raw[0]["name"], "tls-tcp echo 1KiB");
    assert!(raw[0]["calls"].as_u64().unwrap() > 0);
}

#[test]
fn a_plain_run_has_no_tls_baseline() {
    let (code, v) = run_json(
        "plain.json",
        &[
            "bench",
            "latency",
            "--baseline",
            "--runs",
            "1",
            "--pin",
            "none",
            "--op",
            "echo",
            "--type",
            "octet",
            "--size",
            "64B",
            "--count",
            "50",
            "--duration",
            "100ms",
        ],
    );
    assert_eq!(code, 0, "{v}");
    assert!(v["params"].get("tls").is_none());
    assert!(by_mode(&v, "tls-tcp-pingpong-echo").is_empty());
    let c = by_mode(&v, "echo")[0];
    assert!(c.get("tls_baseline").is_none());
    assert!(c["baseline"]["ratio"].as_f64().unwrap() > 0.0);
}

#[test]
fn tls_vs_plain_runs_every_case_both_ways_with_their_ratio() {
    let started = std::time::Instant::now();
    let (code, v) = run_json(
        "vs.json",
        &[
            "bench",
            "throughput",
            "--tls-vs-plain",
            "--runs",
            "2",
            "--pin",
            "none",
            "--type",
            "octet",
            "--size",
            "1KiB",
            "--total",
            "64KiB",
            "--min-duration",
            "0s",
            "--mode",
            "oneway,echo",
        ],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["params"]["tls_vs_plain"], true);
    let cases = v["cases"].as_array().unwrap();
    let names: Vec<&str> = cases.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "oneway octet 1KiB",
            "oneway octet 1KiB tls",
            "echo octet 1KiB",
            "echo octet 1KiB tls"
        ]
    );
    for (i, c) in cases.iter().enumerate() {
        let tls = i % 2 == 1;
        assert_eq!(c["extra"]["transport"], if tls { "tls" } else { "plain" });
        // Two runs, each exactly --total: 64 calls of 1 KiB per run.
        assert_eq!(c["calls"], 128, "{}", c["name"]);
        assert_eq!(c["bytes"], 128 * 1024, "{}", c["name"]);
        assert_eq!(c["runs"].as_array().unwrap().len(), 2);
        assert!(c["errors"].as_object().unwrap().is_empty(), "{c}");
        if tls {
            assert_eq!(c["vs_plain"]["metric"], "throughput");
            assert_eq!(c["intervals"]["tls_vs_plain"]["n"], 2);
            let ratio = c["vs_plain"]["ratio"].as_f64().unwrap();
            assert!(ratio > 0.0 && ratio.is_finite(), "{ratio}");
            assert_eq!(
                c["vs_plain"]["baseline_value"],
                cases[i - 1]["throughput_mbps"]
            );
        } else {
            assert!(c.get("vs_plain").is_none());
        }
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

#[test]
fn tls_vs_plain_latency_compares_p50s_and_keeps_both_baselines() {
    let (code, v) = run_json(
        "vs-lat.json",
        &[
            "bench",
            "latency",
            "--tls-vs-plain",
            "--baseline",
            "--runs",
            "1",
            "--pin",
            "none",
            "--op",
            "echo",
            "--type",
            "octet",
            "--size",
            "64B",
            "--count",
            "100",
        ],
    );
    assert_eq!(code, 0, "{v}");
    let names: Vec<&str> = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "echo octet 64B",
            "echo octet 64B tls",
            "tcp echo 64B",
            "tls-tcp echo 64B"
        ]
    );
    let tls = &v["cases"][1];
    assert_eq!(tls["calls"], 100);
    assert_eq!(tls["vs_plain"]["metric"], "p50");
    assert!(tls["vs_plain"]["ratio"].as_f64().unwrap() > 0.0);
    assert!(tls["tls_baseline"]["ratio"].as_f64().unwrap() > 0.0);
    assert!(tls["baseline"]["ratio"].as_f64().unwrap() > 0.0);
    assert!(v["cases"][0].get("tls_baseline").is_none());
}

#[test]
fn tls_vs_plain_against_a_target_says_how_instead() {
    let (code, v) = run_json(
        "vs-target.json",
        &[
            "bench",
            "latency",
            "--tls-vs-plain",
            "--target",
            "corbaloc:iiop:1.2@127.0.0.1:1/Bench",
            "--runs",
            "1",
            "--count",
            "1",
        ],
    );
    assert_ne!(code, 0);
    let failure = v["outcome"]["failure"].as_str().unwrap_or_default();
    assert!(failure.contains("two runs"), "{v}");
}

#[test]
fn the_thread_per_connection_server_serves_tls_too() {
    let (code, v) = run_json(
        "threads.json",
        &[
            "bench",
            "latency",
            "--tls",
            "--server-model",
            "threads",
            "--runs",
            "1",
            "--pin",
            "none",
            "--op",
            "echo",
            "--type",
            "octet",
            "--size",
            "64KiB",
            "--count",
            "50",
            "--warmup",
            "5",
        ],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["params"]["tls"], true);
    assert_eq!(v["target"]["server_model"], "threads");
    assert_eq!(v["cases"][0]["calls"], 50);
    assert_eq!(v["cases"][0]["bytes"], 50 * 65536);
}
