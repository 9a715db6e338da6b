//! `bench latency --idl` and `bench throughput --idl` against the embedded
//! reference server, with exact call counts and request sizes.

use std::path::PathBuf;

fn bench_idl() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/idl/bench.idl")
        .display()
        .to_string()
}

fn run(args: &[&str]) -> (i32, serde_json::Value) {
    let out = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "iiopbench-idl-bench-{}-{}.json",
        std::process::id(),
        args.join("_").len()
    ));
    let o = out.display().to_string();
    let mut argv = vec!["iiopbench", "bench"];
    argv.extend_from_slice(args);
    // One run: the counts below are per run.
    argv.extend(["--json", &o, "-q", "--runs", "1"]);
    let code = iiopbench::main_with_args(argv);
    let text = std::fs::read_to_string(&out).unwrap_or_else(|_| "null".into());
    let _ = std::fs::remove_file(&out);
    (code, serde_json::from_str(&text).unwrap())
}

#[test]
fn latency_closed_and_open_loop() {
    let idl = bench_idl();
    let (code, r) = run(&[
        "latency",
        "--idl",
        &idl,
        "--op",
        "Bench::Perf::echo_long",
        "--gen",
        "len=256",
        "--count",
        "300",
        "--warmup",
        "20",
        "--connections",
        "2",
        "--in-flight",
        "2",
        "--check-reply",
    ]);
    assert_eq!(code, 0, "{r}");
    let c = &r["cases"][0];
    assert_eq!(c["calls"], 300);
    // sequence<long> of 256: 4-byte count + 1024 bytes.
    assert_eq!(c["params"]["size"], 1028);
    assert_eq!(c["params"]["type"], "Bench::Perf::echo_long");
    assert_eq!(c["errors"], serde_json::json!({}));
    let h = iiopbench_engine::hist::Latency::from_base64(c["histogram"].as_str().unwrap()).unwrap();
    assert_eq!(h.len(), 300);
    let (code, r) = run(&[
        "latency",
        "--idl",
        &idl,
        "--op",
        "Bench::Perf::echo_variant",
        "--args",
        r#"{"s":[{"_d":2,"d":0.5},{"_d":3,"s":"abc"}]}"#,
        "--rate",
        "2000",
        "--count",
        "100",
        "--warmup",
        "5",
    ]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["cases"][0]["calls"], 100);
    assert_eq!(r["params"]["loop"], "open");
}

#[test]
fn throughput_oneway_and_twoway_as_declared() {
    let idl = bench_idl();
    let (code, r) = run(&[
        "throughput",
        "--idl",
        &idl,
        "--op",
        "Bench::Perf::send_oneway_octet",
        "--gen",
        "len=1000",
        "--total",
        "100000",
        "--min-duration",
        "0s",
    ]);
    assert_eq!(code, 0, "{r}");
    let c = &r["cases"][0];
    assert_eq!(c["params"]["mode"], "oneway");
    // 1004-byte bodies until at least 100000 bytes: 100 calls.
    assert_eq!(
        (c["calls"].as_u64(), c["bytes"].as_u64()),
        (Some(100), Some(100_400))
    );
    assert!(
        c["receiver_throughput_mbps"]
            .as_f64()
            .is_some_and(|x| x > 0.0),
        "{c}"
    );
    let (code, r) = run(&[
        "throughput",
        "--idl",
        &idl,
        "--op",
        "Bench::Perf::send_double",
        "--gen",
        "len=100",
        "--total",
        "8040",
        "--min-duration",
        "0s",
    ]);
    assert_eq!(code, 0, "{r}");
    let c = &r["cases"][0];
    assert_eq!(c["params"]["mode"], "twoway");
    // 4 + 4 padding + 800 = 808 bytes per call; 10 calls reach 8040.
    assert_eq!(
        (c["calls"].as_u64(), c["bytes"].as_u64()),
        (Some(10), Some(8080))
    );
    let h = iiopbench_engine::hist::Latency::from_base64(c["histogram"].as_str().unwrap()).unwrap();
    assert_eq!(h.len(), 10);
}

#[test]
fn usage_errors_name_the_problem() {
    let idl = bench_idl();
    assert_eq!(
        iiopbench::main_with_args([
            "iiopbench",
            "bench",
            "latency",
            "--runs",
            "1",
            "--op",
            "Bench::Perf::ping",
            "-q"
        ]),
        1
    );
    assert_eq!(
        iiopbench::main_with_args([
            "iiopbench",
            "bench",
            "latency",
            "--runs",
            "1",
            "--op",
            "pong",
            "-q"
        ]),
        2
    );
    let (code, _) = run(&[
        "latency",
        "--idl",
        &idl,
        "--op",
        "Bench::Perf::nope",
        "--count",
        "1",
    ]);
    assert_eq!(code, 1);
    let (code, _) = run(&[
        "latency",
        "--idl",
        &idl,
        "--op",
        "Bench::Perf::echo_long",
        "--gen",
        "size=3",
        "--count",
        "1",
    ]);
    assert_eq!(code, 1);
}
