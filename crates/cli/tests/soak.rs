//! `iiopbench soak` in-process against the embedded server: a short run
//! must end on time with no errors, one case per interval plus the total,
//! counts that add up, and memory figures; out-of-bounds options refused.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

fn tmp(name: &str) -> PathBuf {
    std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-soak-{}-{name}", std::process::id()))
}

fn run(args: &[&str]) -> i32 {
    iiopbench::main_with_args(std::iter::once("iiopbench").chain(args.iter().copied()))
}

#[test]
fn a_short_soak_reports_intervals_errors_and_memory() {
    let json = tmp("soak.json");
    let j = json.display().to_string();
    let t0 = Instant::now();
    let code = run(&[
        "soak",
        "--duration",
        "2s",
        "--interval",
        "1s",
        "--connections",
        "4",
        "--quiet",
        "--json",
        &j,
    ]);
    let took = t0.elapsed();
    assert_eq!(code, 0);
    assert!(took < Duration::from_secs(20), "{took:?}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).unwrap();
    assert_eq!(v["kind"], "soak");
    assert_eq!(v["outcome"]["complete"], true);
    let cases = v["cases"].as_array().unwrap();
    let names: Vec<&str> = cases.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["ping interval 1", "ping interval 2", "soak total"]);
    let total = &cases[2];
    assert_eq!(total["errors"].as_object().unwrap().len(), 0);
    let x = &total["extra"];
    let n = |k: &str| x[k].as_u64().unwrap();
    assert_eq!(
        total["calls"].as_u64().unwrap(),
        n("pings") + n("echoes") + n("oneways") + n("get_stats")
    );
    // Every interval's pings plus one final ping per connection.
    let interval_pings: u64 = cases[..2]
        .iter()
        .map(|c| c["calls"].as_u64().unwrap())
        .sum();
    assert_eq!(n("pings"), interval_pings + 4);
    assert!(n("echoes") > 0 && n("oneways") > 0 && n("get_stats") > 0);
    assert!(n("server_rss_start_kib") > 0 && n("server_rss_end_kib") > 0);
    assert!(x["p50_drift_ratio"].as_f64().unwrap() > 0.0);
}

#[test]
fn soak_is_bounded() {
    assert_eq!(run(&["soak", "--quiet", "--duration", "2h"]), 1);
    assert_eq!(run(&["soak", "--quiet", "--duration", "0s"]), 1);
    assert_eq!(
        run(&["soak", "--quiet", "--duration", "1s", "--connections", "0"]),
        1
    );
    // --duration is required.
    assert_eq!(run(&["soak", "--quiet"]), 2);
}
