//! Black-box: `iiopbench bench tcp` run in-process against the embedded and
//! an external raw-TCP server; exact counts asserted from the JSON.

use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-{}-{name}", std::process::id()))
}

fn run(args: &[&str]) -> i32 {
    iiopbench::main_with_args(std::iter::once("iiopbench").chain(args.iter().copied()))
}

#[test]
fn embedded_stream_and_pingpong_counts_are_exact() {
    let json = tmp("tcp.json");
    let csv = tmp("tcp.csv");
    let hlog = tmp("tcp.hlog");
    let code = run(&[
        "bench",
        "tcp",
        "--runs",
        "1",
        "--pin",
        "none",
        "--size",
        "1KiB,4KiB",
        "--total",
        "64KiB",
        "--min-duration",
        "0s",
        "--count",
        "300",
        "--warmup",
        "10",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "--hlog",
        hlog.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        v["schema_version"],
        iiopbench_engine::results::SCHEMA_VERSION
    );
    assert_eq!(v["kind"], "tcp");
    assert_eq!(v["outcome"]["complete"], true);
    // Unpinned, the embedded server may share the client's CPUs: the
    // client blocks in recv rather than spin.
    assert_eq!(v["params"]["wait_strategy"], "read");
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 4);
    // stream 1KiB: exactly 64 frames of 1024 bytes, all confirmed by the server
    assert_eq!(cases[0]["params"]["mode"], "stream");
    assert_eq!(cases[0]["calls"], 64);
    assert_eq!(cases[0]["bytes"], 65536);
    assert_eq!(
        cases[0]["throughput_mbps"],
        cases[0]["receiver_throughput_mbps"]
    );
    // How many segments carried those frames (Nagle may join them; the
    // stats request after them is not counted).
    let segs = cases[0]["extra"]["data_segments"].as_u64().unwrap();
    assert!((1..=64).contains(&segs), "{segs} segments for 64 KiB");
    let per = cases[0]["extra"]["calls_per_segment"].as_f64().unwrap();
    assert!((per - 64.0 / segs as f64).abs() < 1e-9, "{per}");
    assert_eq!(cases[1]["params"]["mode"], "pingpong");
    assert_eq!(cases[1]["calls"], 300);
    assert_eq!(cases[1]["bytes"], 300 * 1024);
    assert!(cases[1]["latency_us"]["p50"].as_f64().unwrap() > 0.0);
    assert_eq!(cases[2]["calls"], 16);
    let h = iiopbench_engine::hist::Latency::from_base64(cases[3]["histogram"].as_str().unwrap())
        .unwrap();
    assert_eq!(h.len(), 300);
    assert_eq!(std::fs::read_to_string(&csv).unwrap().lines().count(), 5);
    let log = std::fs::read_to_string(&hlog).unwrap();
    assert_eq!(log.lines().filter(|l| l.starts_with("Tag=")).count(), 2);
    for p in [json, csv, hlog] {
        std::fs::remove_file(p).unwrap();
    }
}

/// One run of `bench tcp --runs 1 --quiet` with `args`, its JSON written
/// to `json`: the exit code and the results.
fn tcp_run(json: &std::path::Path, args: &[&str]) -> (i32, serde_json::Value) {
    let mut a = vec!["bench", "tcp", "--runs", "1", "--quiet", "--json"];
    a.push(json.to_str().unwrap());
    a.extend_from_slice(args);
    let code = run(&a);
    let v = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    (code, v)
}

#[test]
fn separate_stream_writes_send_a_segment_per_frame_and_say_so() {
    let json = tmp("separate.json");
    let go = |writes: &str| {
        let (code, v) = tcp_run(
            &json,
            &[
                "--pattern",
                "stream",
                "--stream-writes",
                writes,
                "--size",
                "1000B",
                "--total",
                "10000B",
                "--min-duration",
                "0s",
            ],
        );
        assert_eq!(code, 0);
        v
    };
    let v = go("separate");
    assert_eq!(v["params"]["stream_writes"], "separate");
    let c = &v["cases"][0];
    assert_eq!(c["calls"], 10);
    assert_eq!(c["throughput_mbps"], c["receiver_throughput_mbps"]);
    // Nagle off: a segment per frame (Nagle on joins frames written while
    // the first awaits its ACK: 2 segments here). Ten frames fit the
    // initial congestion window, however late the server reads.
    let segs = c["extra"]["data_segments"].as_u64().unwrap();
    assert_eq!(segs, 10, "{segs} segments for 10 frames");
    assert_eq!(go("joined")["params"]["stream_writes"], "joined");
    assert_eq!(
        run(&["bench", "tcp", "--runs", "1", "--stream-writes", "apart"]),
        2
    );
    std::fs::remove_file(json).unwrap();
}

#[test]
fn ack_round_trips_run_for_the_count_and_the_minimum_duration() {
    let json = tmp("ack.json");
    let go = |min: &str| {
        let (code, v) = tcp_run(
            &json,
            &[
                "--pin",
                "none",
                "--pattern",
                "ack",
                "--size",
                "1KiB,8KiB",
                "--count",
                "200",
                "--warmup",
                "10",
                "--min-duration",
                min,
            ],
        );
        assert_eq!(code, 0);
        v["cases"].as_array().unwrap().clone()
    };
    // No minimum duration: exactly the count, each a recorded round trip
    // of a request of the size and an empty reply.
    let cases = go("0s");
    assert_eq!(cases.len(), 2);
    for (c, size) in cases.iter().zip([1024u64, 8192]) {
        assert_eq!(c["params"]["mode"], "pingpong-ack");
        assert_eq!(c["name"], format!("tcp pingpong-ack {}KiB", size / 1024));
        assert_eq!(c["calls"], 200);
        assert_eq!(c["bytes"], 200 * size);
        let h =
            iiopbench_engine::hist::Latency::from_base64(c["histogram"].as_str().unwrap()).unwrap();
        assert_eq!(h.len(), 200);
    }
    // A rate, as a stream's: at least the count and at least the time,
    // every round trip recorded.
    for c in go("300ms") {
        let calls = c["calls"].as_u64().unwrap();
        assert!(calls >= 200, "{calls}");
        assert!(c["seconds"].as_f64().unwrap() >= 0.3, "{c}");
        assert_eq!(
            c["bytes"].as_u64().unwrap(),
            calls * c["params"]["size"].as_u64().unwrap()
        );
        let h =
            iiopbench_engine::hist::Latency::from_base64(c["histogram"].as_str().unwrap()).unwrap();
        assert_eq!(h.len(), calls);
    }
    std::fs::remove_file(json).unwrap();
}

#[test]
fn pingpong_spins_on_separate_cpus_and_counts_the_same() {
    let json = tmp("spin.json");
    let go = |extra: &[&str]| {
        let mut a = vec![
            "--pattern",
            "pingpong",
            "--size",
            "1B,8KiB",
            "--count",
            "500",
            "--warmup",
            "10",
        ];
        a.extend_from_slice(extra);
        tcp_run(&json, &a)
    };
    // Client and server on different CPUs (where the machine has two):
    // auto spins first, and says for how long.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (code, v) = go(if cpus >= 2 {
        &["--pin", "cross"]
    } else {
        &["--wait-strategy", "spin"]
    });
    assert_eq!(code, 0);
    assert_eq!(v["params"]["wait_strategy"], "spin");
    assert_eq!(v["params"]["spin_limit_us"], 1000.0);
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 2);
    for (c, size) in cases.iter().zip([1u64, 8192]) {
        assert_eq!(c["calls"], 500);
        assert_eq!(c["bytes"], 500 * size);
        let h =
            iiopbench_engine::hist::Latency::from_base64(c["histogram"].as_str().unwrap()).unwrap();
        assert_eq!(h.len(), 500);
    }
    let (code, v) = go(&["--pin", "same", "--wait-strategy", "auto"]);
    assert_eq!(code, 0);
    assert_eq!(v["params"]["wait_strategy"], "read");
    assert!(v["params"].get("spin_limit_us").is_none());
    // The raw client has no runtime to wait on.
    let (code, v) = go(&["--wait-strategy", "reactor"]);
    assert_eq!(code, 1);
    assert!(v["outcome"]["failure"]
        .as_str()
        .unwrap()
        .contains("bench tcp's client blocks in recv"));
    assert_eq!(v["cases"].as_array().unwrap().len(), 0);
    std::fs::remove_file(json).unwrap();
}

#[test]
fn external_target_that_is_down_fails_with_partial_results() {
    let json = tmp("down.json");
    // Bind then drop to get a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let target = format!("127.0.0.1:{port}");
    let code = run(&[
        "bench",
        "tcp",
        "--runs",
        "1",
        "--baseline-target",
        &target,
        "--size",
        "1KiB",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["outcome"]["complete"], false);
    assert!(v["outcome"]["failure"]
        .as_str()
        .unwrap()
        .contains("connect"));
    assert_eq!(v["cases"].as_array().unwrap().len(), 0);
    std::fs::remove_file(json).unwrap();
}

#[test]
fn bad_arguments_exit_2() {
    assert_eq!(run(&["bench", "tcp", "--runs", "1", "--size", "lots"]), 2);
    assert_eq!(
        run(&["bench", "tcp", "--runs", "1", "--pin", "sideways"]),
        2
    );
}
