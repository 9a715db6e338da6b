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
    let json = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-lab-agents-{}.json", std::process::id()));
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

/// The ATON host-pair matrix (E2.1) from one command: 2 client hosts x 2
/// server hosts, one agent per cell; one link slowed by 10 ms each way, so
/// the cells must differ where the lab says they do.
#[test]
fn every_client_host_against_every_server_host() {
    if !is_root() {
        common::skip_or_fail(
            "every_client_host_against_every_server_host",
            "not root (the lab needs CAP_NET_ADMIN; run the tests as root, as scripts/test does)",
        );
        return;
    }
    std::env::set_var("IIOPBENCH_EXE", env!("CARGO_BIN_EXE_iiopbench"));
    // Not quiet and `--json -`: the JSON alone goes to stdout (the
    // tables people read would make it unparseable), progress to stderr.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_iiopbench"))
        .args([
            "lab",
            "matrix",
            "--client-hosts",
            "2",
            "--server-hosts",
            "2",
            "--agents",
            "1",
            "--duration",
            "1s",
            "--register-timeout",
            "60s",
            "--link",
            "client1-server0:delay=10ms",
            "--json",
            "-",
            "--",
            "bench",
            "latency",
            "--warmup",
            "5",
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not the results JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let code = out.status.code().unwrap_or(-1);
    assert_eq!(code, 0, "{}", v["outcome"]);
    let cells = v["params"]["matrix"].as_array().unwrap();
    assert_eq!(cells.len(), 4);
    for c in cells {
        assert_eq!(c["agents"], 1, "{c}");
        assert!(c["failure"].is_null(), "{c}");
    }
    let p50 = |client: &str, server: &str| {
        let c = v["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["params"]["client_host"] == client && c["params"]["server_host"] == server)
            .unwrap_or_else(|| panic!("no cell {client}->{server}"));
        assert!(c["calls"].as_u64().unwrap() > 0);
        assert!(c["name"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{client}->{server} ")));
        c["latency_us"]["p50"].as_f64().unwrap()
    };
    // 10 ms each way on client1-server0 only: 20 ms more round trip.
    let slow = p50("client1", "server0");
    for (c, s) in [
        ("client0", "server0"),
        ("client0", "server1"),
        ("client1", "server1"),
    ] {
        let fast = p50(c, s);
        assert!(fast < 10_000.0, "{c}->{s} p50 {fast} µs");
        assert!(
            slow - fast > 15_000.0,
            "client1->server0 {slow} µs vs {c}->{s} {fast} µs"
        );
    }
}
