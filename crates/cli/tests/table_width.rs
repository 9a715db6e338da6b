//! Black-box: every bench command's default output (soak's and compare's
//! too), run briefly against our embedded server, fits 100 columns
//! (counted in characters), and `--wide` still prints the full table. Also: `bench throughput
//! --baseline` sets its oneways beside a raw stream that sends a segment
//! per frame, as they go, and keeps the fastest stream as the limit.

use std::path::PathBuf;
use std::process::Command;

/// The widest line the default output may have.
const WIDTH: usize = 100;

/// The tests measure: one at a time, so they do not load each other.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn tmp(name: &str) -> PathBuf {
    std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-tw-{}-{name}", std::process::id()))
}

/// Run the binary with `args` (stdout not a terminal: no colour, no
/// spinners); its stdout, after checking it succeeded.
fn stdout_of(args: &[&str]) -> String {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let out = Command::new(env!("CARGO_BIN_EXE_iiopbench"))
        .args(args)
        .env_remove("NO_COLOR")
        .output()
        .expect("iiopbench runs");
    let text = String::from_utf8(out.stdout).expect("utf-8 output");
    assert!(
        out.status.success(),
        "{args:?} failed: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// What does not fit in `text`: each line over [`WIDTH`] columns, and
/// escape sequences (colour off a terminal).
fn misfits(args: &[&str], text: &str) -> Vec<String> {
    let mut out = Vec::new();
    if text.trim().is_empty() {
        out.push(format!("{args:?} printed nothing"));
    }
    if text.contains('\x1b') {
        out.push(format!("{args:?}: colour off a terminal"));
    }
    for line in text.lines() {
        let n = line.chars().count();
        if n > WIDTH {
            out.push(format!("{args:?}: a line of {n} columns:\n{line}"));
        }
    }
    out
}

fn assert_fits(args: &[&str], text: &str) {
    let m = misfits(args, text);
    assert!(m.is_empty(), "{}\n--- whole output:\n{text}", m.join("\n"));
}

/// Brief runs of every bench command with its default output.
fn commands(spawn: &str) -> Vec<Vec<String>> {
    let brief: &[&[&str]] = &[
        &[
            "bench",
            "throughput",
            "--baseline",
            "--total",
            "128KiB",
            "--min-duration",
            "10ms",
            "--slices",
            "2",
            "--runs",
            "2",
        ],
        &[
            "bench",
            "latency",
            "--baseline",
            "--count",
            "200",
            "--warmup",
            "20",
            "--slices",
            "2",
            "--runs",
            "2",
        ],
        &[
            "bench",
            "latency",
            "--op",
            "echo",
            "--size",
            "1KiB,16KiB",
            "--count",
            "100",
            "--warmup",
            "10",
            "--runs",
            "1",
        ],
        &["bench", "connect", "--count", "5"],
        &[
            "bench",
            "tcp",
            "--size",
            "1KiB,64KiB",
            "--total",
            "1MiB",
            "--min-duration",
            "10ms",
            "--count",
            "100",
            "--warmup",
            "10",
            "--runs",
            "2",
        ],
        &[
            "bench",
            "closed",
            "--clients",
            "2",
            "--service",
            "1ms",
            "--think",
            "1ms",
            "--batch",
            "50ms",
            "--min-batches",
            "3",
            "--max-duration",
            "2s",
        ],
        &[
            "bench",
            "params",
            "--elements",
            "1,10",
            "--duration",
            "100ms",
        ],
        &["bench", "dispatch", "--points", "2", "--duration", "100ms"],
        &["bench", "packing", "--pairs", "1,2", "--duration", "100ms"],
        &[
            "bench",
            "balance",
            "--systems",
            "4x2",
            "--service",
            "2ms",
            "--think",
            "20ms",
            "--service-kind",
            "sleep",
            "--duration",
            "200ms",
        ],
    ];
    let mut out: Vec<Vec<String>> = brief
        .iter()
        .map(|a| a.iter().map(|s| s.to_string()).collect())
        .collect();
    out.push(
        [
            "bench",
            "setup",
            "--count",
            "2",
            "--spawn",
            spawn,
            "--spawn-count",
            "1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
    );
    out
}

#[test]
fn every_bench_commands_default_output_fits_100_columns() {
    let exe = env!("CARGO_BIN_EXE_iiopbench");
    let spawn = format!("{exe} serve --listen 127.0.0.1:{{port}}");
    let all = commands(&spawn);
    // Every bench command is among them.
    for kind in [
        "throughput",
        "latency",
        "connect",
        "tcp",
        "closed",
        "setup",
        "params",
        "dispatch",
        "packing",
        "balance",
    ] {
        assert!(all.iter().any(|a| a[1] == kind), "{kind} not run");
    }
    let mut problems = Vec::new();
    for args in &all {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let text = stdout_of(&a);
        problems.extend(misfits(&a, &text));
    }
    // soak: its drift table.
    let soak = [
        "soak",
        "--duration",
        "2s",
        "--interval",
        "1s",
        "--connections",
        "2",
    ];
    problems.extend(misfits(&soak, &stdout_of(&soak)));
    // compare: two brief runs of the same cases, then their comparison,
    // which ends with a one-line verdict.
    let (a, b) = (tmp("cmp-a.json"), tmp("cmp-b.json"));
    for p in [&a, &b] {
        stdout_of(&[
            "bench",
            "throughput",
            "--type",
            "octet,perfstruct",
            "--mode",
            "twoway",
            "--size",
            "1KiB",
            "--total",
            "64KiB",
            "--min-duration",
            "10ms",
            "--slices",
            "1",
            "--runs",
            "1",
            "--quiet",
            "--json",
            p.to_str().unwrap(),
        ]);
    }
    let cmp = ["compare", a.to_str().unwrap(), b.to_str().unwrap()];
    let text = stdout_of(&cmp);
    problems.extend(misfits(&cmp, &text));
    assert!(
        text.lines()
            .any(|l| l.contains(" times faster than ") && l.contains("on throughput")),
        "no verdict under the comparison:\n{text}"
    );
    std::fs::remove_file(&a).unwrap();
    std::fs::remove_file(&b).unwrap();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_default_throughput_table_splits_by_mode_and_ends_with_the_limit_and_a_verdict() {
    let args = [
        "bench",
        "throughput",
        "--baseline",
        "--type",
        "octet",
        "--size",
        "1KiB",
        "--total",
        "256KiB",
        "--min-duration",
        "10ms",
        "--slices",
        "2",
        "--runs",
        "2",
    ];
    let text = stdout_of(&args);
    assert_fits(&args, &text);
    let headers: Vec<&str> = text.lines().filter(|l| l.starts_with("case ")).collect();
    // oneway, twoway, the raw stream and the raw round trip: four blocks;
    // latency columns only where there are latencies.
    assert_eq!(headers.len(), 4, "{text}");
    assert!(
        !headers[0].contains("p50"),
        "oneways have no latencies: {text}"
    );
    assert!(
        headers[1].contains("p50") && headers[1].contains("p99"),
        "{text}"
    );
    assert!(!text.contains("mean ± σ"), "{text}");
    assert!(
        text.contains("± is the 95 % interval over the 2 runs; time is per run"),
        "{text}"
    );
    assert!(
        text.contains("  limit oneway 1KiB: fastest raw TCP stream "),
        "{text}"
    );
    assert!(
        text.contains("  limit twoway 1KiB: fastest raw round trip (polled) "),
        "{text}"
    );
    // The verdict, as hyperfine says it.
    let verdict = text
        .lines()
        .find(|l| l.contains(" times faster than "))
        .unwrap_or_else(|| panic!("no verdict: {text}"));
    assert!(
        verdict.contains("raw TCP written as ours") && verdict.contains(" (median of 2 cases: "),
        "{verdict}"
    );
    // --wide: today's full table, one for all cases.
    let mut wide = args.to_vec();
    wide.push("--wide");
    let text = stdout_of(&wide);
    let headers: Vec<&str> = text.lines().filter(|l| l.starts_with("case ")).collect();
    assert_eq!(headers.len(), 1, "{text}");
    for col in [
        "size",
        "calls",
        "time",
        "calls/s",
        "Mbit/s",
        "recv Mbit/s",
        "mean ± σ",
        "p50",
        "p99",
        "p99.9",
        "max",
        "vs tcp",
        "vs limit",
        "errors",
    ] {
        assert!(headers[0].contains(col), "no {col} in --wide: {text}");
    }
}

#[test]
fn the_oneways_baseline_sends_a_segment_per_frame_as_they_go() {
    let json = tmp("baseline.json");
    let j = json.to_str().unwrap();
    // Ten frames, which fit the initial congestion window however late
    // the server reads: a stream with TCP_NODELAY sends them in ten
    // segments.
    stdout_of(&[
        "bench",
        "throughput",
        "--baseline",
        "--type",
        "octet",
        "--size",
        "1KiB",
        "--mode",
        "oneway",
        "--total",
        "10KiB",
        "--min-duration",
        "0s",
        "--slices",
        "1",
        "--runs",
        "1",
        "--quiet",
        "--json",
        j,
    ]);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).unwrap();
    assert_eq!(v["params"]["baseline_stream_writes"], "separate", "{v:#}");
    let cases = v["cases"].as_array().unwrap();
    let find = |name: &str| {
        cases
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no case {name}: {v:#}"))
    };
    let like = find("tcp stream 1KiB");
    let limit = find("tcp stream limit 1KiB");
    assert_eq!(like["params"]["stream_writes"], "separate");
    assert_eq!(limit["params"]["stream_writes"], "joined");
    assert_eq!(limit["params"]["limit"], true);
    assert_eq!(like["calls"], 10);
    assert_eq!(like["extra"]["data_segments"], 10, "{like:#}");
    assert_eq!(like["extra"]["calls_per_segment"], 1.0, "{like:#}");
    let ours = find("oneway octet 1KiB");
    assert_eq!(ours["calls"], 10);
    // As the oneways went, where their connection can say (it waits on
    // read or spin).
    if let Some(n) = ours["extra"]["data_segments"].as_u64() {
        assert_eq!(n, 10, "{ours:#}");
    }
    assert!(
        ours["baseline"]["ratio"].as_f64().unwrap() > 0.0,
        "{ours:#}"
    );
    assert!(ours["limit"]["ratio"].as_f64().unwrap() > 0.0, "{ours:#}");
    assert_eq!(
        ours["baseline"]["baseline_value"], like["throughput_mbps"],
        "the baseline is the segment-per-frame stream"
    );
    assert_eq!(ours["limit"]["baseline_value"], limit["throughput_mbps"]);
}
