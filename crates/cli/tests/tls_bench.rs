//! Black-box: benchmarks over TLS against the embedded server, which
//! serves TLS with a certificate made for the run (`--tls` and no
//! `--target`); counts and bytes checked in the JSON.

use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("iiopbench-tls-{}-{name}", std::process::id()))
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
