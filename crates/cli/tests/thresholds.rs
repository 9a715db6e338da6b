//! `--threshold`, black-box: gates checked on the result of a bench (and
//! on the merged result of an agent run), listed pass/fail, written to
//! the JSON, and a failed one gives exit status 3; a gate that does not
//! parse is refused in one line before anything runs (status 2).

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use iiop_bench_idl::run::{RunningServer, ServerOptions};
use serde_json::Value;

/// The exit status of a failed gate (docs/cli.md).
const GATE_FAILED: i32 = 3;

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_iiopbench")
}

fn tmp(name: &str) -> PathBuf {
    std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "iiopbench-thresholds-{}-{name}",
        std::process::id()
    ))
}

/// Run the binary with `args` (bounded by the run's own count).
fn iiopbench(args: &[&str]) -> Output {
    Command::new(exe())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("iiopbench runs")
}

/// The results file `f`, removed after reading.
fn results(f: &PathBuf) -> Value {
    let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    let _ = std::fs::remove_file(f);
    serde_json::from_str(&text).unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// An impossible gate fails the run with status 3 and names itself; the
/// results are still written, the outcome recorded beside the figures.
#[test]
fn an_impossible_gate_fails_with_its_own_status_and_is_listed() {
    let json = tmp("fail.json");
    let out = iiopbench(&[
        "bench",
        "latency",
        "--count",
        "300",
        "--warmup",
        "10",
        "--runs",
        "1",
        "--json",
        json.to_str().unwrap(),
        "--threshold",
        "p99<1ns",
        "--threshold",
        "errors=0",
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(GATE_FAILED), "{stdout}\n{stderr}");
    // The list after the table: each gate with what was measured.
    assert!(stdout.contains("thresholds:"), "{stdout}");
    assert!(stdout.contains("  FAIL p99<1ns  (p99 = "), "{stdout}");
    assert!(stdout.contains("  PASS errors=0  (errors = 0)"), "{stdout}");
    // One line on stderr names the failed gate, and only it.
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("iiopbench: 1 of 2 thresholds failed: p99<1ns  (p99 = "),
        "{stderr}"
    );
    assert!(last.ends_with(", case ping)"), "{stderr}");
    let v = results(&json);
    assert_eq!(v["outcome"]["complete"], true);
    let t = v["thresholds"].as_array().unwrap();
    assert_eq!(t.len(), 2);
    assert_eq!(t[0]["threshold"], "p99<1ns");
    assert_eq!(t[0]["metric"], "p99");
    assert_eq!(t[0]["op"], "<");
    assert_eq!(t[0]["bound"], 0.001);
    assert_eq!(t[0]["case"], "ping");
    assert_eq!(t[0]["pass"], false);
    // The value recorded is the case's own p99.
    assert_eq!(t[0]["value"], v["cases"][0]["latency_us"]["p99"]);
    assert_eq!(t[1]["pass"], true);
    assert_eq!(t[1]["value"], 0.0);
}

/// A clean run passes `errors=0` and a throughput it reached: status 0,
/// every gate PASS; `--quiet` lists nothing but still records them.
#[test]
fn gates_a_clean_run_meets_pass() {
    let json = tmp("pass.json");
    let out = iiopbench(&[
        "bench",
        "throughput",
        "--mode",
        "twoway",
        "--type",
        "octet",
        "--size",
        "64",
        "--total",
        "64KiB",
        "--min-duration",
        "0s",
        "--runs",
        "1",
        "--json",
        json.to_str().unwrap(),
        "--threshold",
        "errors=0",
        "--threshold",
        "throughput>1/s",
        "--threshold",
        "max<60s",
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("  PASS errors=0"), "{stdout}");
    assert!(
        stdout.contains("  PASS throughput>1/s  (throughput = "),
        "{stdout}"
    );
    assert!(!stdout.contains("FAIL"), "{stdout}");
    let v = results(&json);
    let t = v["thresholds"].as_array().unwrap();
    assert!(t.iter().all(|g| g["pass"] == true), "{t:?}");

    let json = tmp("quiet.json");
    let out = iiopbench(&[
        "bench",
        "latency",
        "--count",
        "50",
        "--runs",
        "1",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
        "--threshold",
        "errors=0",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    assert_eq!(results(&json)["thresholds"][0]["pass"], true);
}

/// A gate that does not parse is refused before anything runs: clap's
/// status 2, one error line that says why, no results file.
#[test]
fn a_bad_gate_is_refused_before_the_run() {
    for (gate, why) in [
        ("p99<2", "give the time's unit"),
        ("p98<2ms", "unknown metric"),
        ("errors", "expected METRIC OP VALUE"),
        ("throughput>fast", "calls per second"),
    ] {
        let json = tmp("bad.json");
        let out = iiopbench(&[
            "bench",
            "latency",
            "--count",
            "10",
            "--json",
            json.to_str().unwrap(),
            "--threshold",
            gate,
        ]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{gate}: {stderr}");
        let first = stderr.lines().next().unwrap_or_default();
        assert!(first.starts_with("iiopbench: invalid value"), "{stderr}");
        assert!(first.contains(why), "{gate}: {stderr}");
        assert!(!json.exists(), "{gate}: the run ran");
    }
}

/// Agents: the gates of the bench command are checked by the coordinator
/// on the merged result (every agent's calls), not by each agent.
#[test]
fn agents_gate_the_merged_result() {
    let srv = RunningServer::start(ServerOptions {
        threads: 2,
        ..Default::default()
    })
    .unwrap();
    let target = format!("corbaloc:iiop:1.2@127.0.0.1:{}/Bench", srv.addr().port());
    std::env::set_var("IIOPBENCH_EXE", exe());
    let json = tmp("agents.json");
    // The coordinator in-process (its agents are processes of the binary).
    let code = iiopbench::main_with_args([
        "iiopbench",
        "agents",
        "run",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
        "--agents",
        "2",
        "--local",
        "--duration",
        "1s",
        "--register-timeout",
        "60s",
        "--threshold",
        "errors=0",
        "--",
        "bench",
        "latency",
        "--target",
        &target,
        "--warmup",
        "10",
        "--threshold",
        "p99<1ns",
    ]);
    let v = results(&json);
    assert_eq!(code, GATE_FAILED, "{}", v["outcome"]);
    let t = v["thresholds"].as_array().unwrap();
    // The bench command's gates, then the coordinator's own.
    assert_eq!(t[0]["threshold"], "p99<1ns");
    assert_eq!(t[0]["pass"], false);
    assert_eq!(t[0]["value"], v["cases"][0]["latency_us"]["p99"]);
    assert_eq!(t[1]["threshold"], "errors=0");
    assert_eq!(t[1]["pass"], true);
    // The merged case is the sum of the agents' calls.
    let c = &v["cases"][0];
    let sum: u64 = c["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["calls"].as_u64().unwrap())
        .sum();
    assert_eq!(c["calls"].as_u64().unwrap(), sum);
    assert_eq!(c["agents"].as_array().unwrap().len(), 2);
}
