//! `iiopbench lab agents` end to end (issue 22): 4 agents in 4 lab hosts
//! (network namespaces) against our server in a fifth, the coordinator in
//! the server host. The whole path — start barrier, clock offsets, run,
//! collect, merge — over real kernel TCP. Needs root; otherwise the test
//! prints `SKIP …` and passes, except under `CI=true`, where it fails.

mod common;

use iiopbench_engine::hist::Latency;
use serde_json::Value;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn four_lab_host_agents_against_one_server_host() {
    if !is_root() {
        common::skip_or_fail(
            "four_lab_host_agents_against_one_server_host",
            "not root (the lab needs CAP_NET_ADMIN; run the tests as root, as scripts/test does)",
        );
        return;
    }
    std::env::set_var("IIOPBENCH_EXE", env!("CARGO_BIN_EXE_iiopbench"));
    let json =
        std::env::temp_dir().join(format!("iiopbench-lab-agents-{}.json", std::process::id()));
    let code = iiopbench::main_with_args([
        "iiopbench",
        "lab",
        "agents",
        "--agents",
        "4",
        "--duration",
        "1s",
        "--register-timeout",
        "60s",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
        "--",
        "bench",
        "latency",
        "--warmup",
        "20",
    ]);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    assert_eq!(code, 0, "{}", v["outcome"]);
    let info = &v["agents"];
    assert_eq!(
        (info["ran"].as_u64(), info["partial"].as_bool()),
        (Some(4), Some(false))
    );
    let names: Vec<&str> = info["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(sorted, ["agent0", "agent1", "agent2", "agent3"]);
    let c = &v["cases"][0];
    let mut sum = Latency::new();
    for s in c["agents"].as_array().unwrap() {
        assert!(s["calls"].as_u64().unwrap() > 0);
        sum.merge(&Latency::from_base64(s["histogram"].as_str().unwrap()).unwrap());
    }
    let merged = Latency::from_base64(c["histogram"].as_str().unwrap()).unwrap();
    assert_eq!(merged.len(), sum.len());
    assert_eq!(merged.summary(), sum.summary());
    assert_eq!(c["calls"].as_u64().unwrap(), sum.len());
    // The agents were in other hosts than the server: the lab says which.
    assert_eq!(
        v["params"]["lab"]["agent_hosts"].as_array().unwrap().len(),
        4
    );
    assert!(
        v["target"]["host"].as_str().unwrap().starts_with("10."),
        "{}",
        v["target"]
    );
}
