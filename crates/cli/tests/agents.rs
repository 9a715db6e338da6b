//! `iiopbench agents run --local`, black-box (issue 22): 4 agent processes
//! (the built binary, `agents join`) register with the coordinator (this
//! process, the CLI in-process), start together, measure our server on
//! 127.0.0.1:0 (and omniORB's, a real vendor server), and their results
//! merge into one file whose histogram is exactly the sum of the agents'.
//! A run where an agent never comes ends with the others, names it, and
//! is marked partial. A latency bench keeps its `extra` figures, each
//! merged by its rule.

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use iiop_bench_idl::run::{RunningServer, ServerOptions};
use iiopbench_engine::hist::Latency;
use serde_json::Value;

fn tmp(name: &str) -> PathBuf {
    std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-agents-{}-{name}", std::process::id()))
}

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_iiopbench")
}

/// The coordinator, in-process: exit status and the merged file.
fn coordinator(name: &str, args: &[&str]) -> (i32, Value) {
    std::env::set_var("IIOPBENCH_EXE", exe());
    let json = tmp(name);
    let mut a = vec!["iiopbench", "agents", "run", "--quiet", "--json"];
    a.push(json.to_str().unwrap());
    a.extend_from_slice(args);
    let code = iiopbench::main_with_args(a);
    let text = std::fs::read_to_string(&json).unwrap_or_else(|_| "null".into());
    let _ = std::fs::remove_file(&json);
    (code, serde_json::from_str(&text).unwrap())
}

/// 4 local agents, 1 s of `bench latency` each against `target`.
fn four_local_agents(name: &str, target: &str) -> (i32, Value) {
    local_agents(
        name,
        "4",
        &["latency", "--target", target, "--warmup", "20"],
    )
}

/// `n` local agents, 1 s each of `bench BENCH…`.
fn local_agents(name: &str, n: &str, bench: &[&str]) -> (i32, Value) {
    let mut a = vec!["--agents", n, "--local", "--duration", "1s"];
    a.extend(["--register-timeout", "60s", "--", "bench"]);
    a.extend_from_slice(bench);
    coordinator(name, &a)
}

/// Our server on 127.0.0.1:0 in this process (2 threads), and a
/// corbaloc of its object.
fn our_server() -> (RunningServer, String) {
    let srv = RunningServer::start(ServerOptions {
        threads: 2,
        ..Default::default()
    })
    .unwrap();
    let target = format!("corbaloc:iiop:1.2@127.0.0.1:{}/Bench", srv.addr().port());
    (srv, target)
}

fn hist(b64: &Value) -> Latency {
    Latency::from_base64(b64.as_str().unwrap()).unwrap()
}

fn counts(h: &Latency) -> Vec<(u64, u64)> {
    h.inner()
        .iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

/// Everything a complete N-agent merged file must hold.
fn check_merged(v: &Value, n: usize) {
    let info = &v["agents"];
    assert_eq!(
        v["schema_version"],
        iiopbench_engine::results::SCHEMA_VERSION
    );
    assert_eq!(info["requested"], n as u64);
    assert_eq!(info["ran"], n as u64, "{:#}", info["agents"]);
    assert_eq!(info["partial"], false);
    assert_eq!(v["outcome"]["complete"], true, "{}", v["outcome"]);
    for a in info["agents"].as_array().unwrap() {
        assert_eq!(a["status"], "ran");
        // One host: offsets are tiny and measured precisely.
        assert!(a["clock_offset_ms"].as_f64().unwrap().abs() < 50.0, "{a}");
        assert_eq!(a["clock_samples"], 8);
        // Every agent started its case within 0.5 s of the common instant.
        let late = a["start_late_ms"].as_array().unwrap();
        assert_eq!(late.len(), 1);
        assert!(late[0].as_f64().unwrap() < 500.0, "{a}");
    }
    let c = &v["cases"][0];
    let shares = c["agents"].as_array().unwrap();
    assert_eq!(shares.len(), n);
    let mut sum = Latency::new();
    let (mut calls, mut rate) = (0, 0.0);
    for s in shares {
        assert!(s["calls"].as_u64().unwrap() > 0, "{s}");
        sum.merge(&hist(&s["histogram"]));
        calls += s["calls"].as_u64().unwrap();
        rate += s["calls_per_sec"].as_f64().unwrap();
    }
    let merged = hist(&c["histogram"]);
    assert_eq!(counts(&merged), counts(&sum));
    assert_eq!(merged.len(), calls);
    assert_eq!(c["calls"], calls);
    assert!((c["calls_per_sec"].as_f64().unwrap() - rate).abs() < 1e-6 * rate);
    assert_eq!(c["latency_us"]["p99"].as_f64().unwrap(), sum.summary().p99);
}

#[test]
fn four_local_agents_load_our_server_and_merge_losslessly() {
    let (srv, target) = our_server();
    let t0 = Instant::now();
    let (code, v) = four_local_agents("ours.json", &target);
    assert_eq!(code, 0, "{}", v["outcome"]);
    assert!(t0.elapsed() < Duration::from_secs(60));
    check_merged(&v, 4);
    // The server saw every measured call (and the warm-ups).
    let served = srv.stats().calls;
    let measured = v["cases"][0]["calls"].as_u64().unwrap();
    assert!(served >= measured, "server {served} < measured {measured}");
    assert_eq!(v["kind"], "latency");
    // `report` draws each agent and the combined result.
    let file = tmp("ours-report.json");
    std::fs::write(&file, v.to_string()).unwrap();
    let dir = tmp("ours-report");
    let code = iiopbench::main_with_args([
        "iiopbench",
        "report",
        file.to_str().unwrap(),
        "--report",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let rates = svg_named(&dir, "-agents-rates-");
    let pct = svg_named(&dir, "-agents-latency-percentiles-");
    for i in 0..4 {
        assert!(
            rates.contains(&format!("agent {i} (local-")),
            "agent {i} missing from the rates figure"
        );
        assert!(pct.contains(&format!("agent {i} (local-")));
    }
    assert!(rates.contains("total of 4") && pct.contains("all agents"));
    assert!(md.contains("Agents' rates"));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&file);
}

/// The text of the one SVG figure in `dir` whose file name holds `slug`.
fn svg_named(dir: &std::path::Path, slug: &str) -> String {
    let found: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "svg"))
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains(slug))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert_eq!(found.len(), 1, "figures named *{slug}*");
    roxmltree::Document::parse(&found[0]).expect("well-formed SVG");
    found[0].clone()
}

#[test]
fn a_missing_agent_leaves_a_partial_file_that_names_it() {
    let srv = RunningServer::start(ServerOptions {
        threads: 1,
        ..Default::default()
    })
    .unwrap();
    let target = format!("corbaloc:iiop:1.2@127.0.0.1:{}/Bench", srv.addr().port());
    // A free port for the coordinator, so two agents can be pointed at it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let agents: Vec<Child> = (0..2)
        .map(|i| {
            Command::new(exe())
                .args(["agents", "join", "--coordinator", &listen, "--name"])
                .arg(format!("present-{i}"))
                .args(["--connect-timeout", "20s"])
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let (code, v) = coordinator(
        "partial.json",
        &[
            "--agents",
            "3",
            "--listen",
            &listen,
            "--duration",
            "500ms",
            "--register-timeout",
            "4s",
            "--",
            "bench",
            "latency",
            "--target",
            &target,
            "--warmup",
            "5",
        ],
    );
    for mut a in agents {
        assert!(a.wait().unwrap().success());
    }
    assert_eq!(code, 1);
    let info = &v["agents"];
    assert_eq!(
        (info["ran"].as_u64(), info["partial"].as_bool()),
        (Some(2), Some(true))
    );
    let missing: Vec<&Value> = info["agents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["status"] == "missing")
        .collect();
    assert_eq!(missing.len(), 1);
    assert_eq!(
        v["outcome"]["failure"].as_str().unwrap(),
        format!(
            "2 of 3 agents ran (partial: figures are those agents' only); agent {} missing: did not register before the start barrier's deadline",
            missing[0]["id"]
        )
    );
    assert_eq!(v["cases"][0]["agents"].as_array().unwrap().len(), 2);
}

/// `iiopbench orbs start omniorb` on a free port, stopped on drop.
struct Vendor(Child);

impl Drop for Vendor {
    fn drop(&mut self) {
        // SAFETY: kill with a pid we own.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

fn start_vendor(orb: &str, ior: &PathBuf) -> Vendor {
    let mut child = Command::new(exe())
        .args(["orbs", "start", orb, "--ior-file"])
        .arg(ior)
        .env(
            "IIOPBENCH_ROOT",
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."),
        )
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let v = Vendor(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        let l = rx
            .recv_timeout(until.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|e| panic!("{orb}: no `ready` line: {e}"));
        if l.trim() == "ready" {
            return v;
        }
    }
}

#[test]
fn four_local_agents_load_omniorb() {
    if !common::vendor_built("four_local_agents_load_omniorb", "omniorb", true) {
        return;
    }
    let ior = tmp("omni.ior");
    let _srv = start_vendor("omniorb", &ior);
    let (code, v) = four_local_agents("omni.json", ior.to_str().unwrap());
    let _ = std::fs::remove_file(&ior);
    assert_eq!(code, 0, "{}", v["outcome"]);
    check_merged(&v, 4);
    assert_eq!(
        v["target"]["orb_type"]
            .as_str()
            .map(|s| s.contains("omniORB")),
        Some(true),
        "{}",
        v["target"]
    );
}

/// `agents run --local --agents 3` of a load sweep: every agent runs
/// every step at the same instants, and each merged step's counts and
/// histogram are exactly the sum of the agents'.
#[test]
fn three_local_agents_sweep_in_step_and_merge_exactly() {
    let (srv, target) = our_server();
    let t0 = Instant::now();
    let (code, v) = local_agents(
        "sweep.json",
        "3",
        &[
            "sweep",
            "--target",
            &target,
            "--open",
            "200,400",
            "--warmup",
            "20",
            "--threshold",
            "knee>100/s",
        ],
    );
    assert_eq!(code, 0, "{} {}", v["outcome"], v["thresholds"]);
    assert!(t0.elapsed() < Duration::from_secs(60));
    common::agents::check_merged_sweep(&v, 3, &[200.0, 400.0]);
    // The knee gate is judged on the merged steps: 3 agents' 200/s at
    // the least.
    let gate = &v["thresholds"][0];
    assert_eq!(gate["pass"], true, "{gate}");
    assert!(gate["value"].as_f64().unwrap() > 400.0, "{gate}");
    // The server saw every measured call of every step.
    let measured: u64 = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["calls"].as_u64().unwrap())
        .sum();
    assert!(srv.stats().calls >= measured);
}

/// A plain latency bench through 3 local agents keeps the figures of its
/// `extra`, as a sweep does: the calls in flight and the generators'
/// resident memory of all the agents together, the memory per call the
/// most any agent paid, and each agent's own in its share.
#[test]
fn three_local_agents_of_a_latency_bench_keep_its_extra_figures() {
    let (_srv, target) = our_server();
    let (code, v) = local_agents(
        "latency-extra.json",
        "3",
        &[
            "latency",
            "--target",
            &target,
            "--connections",
            "2",
            "--in-flight",
            "4",
            "--warmup",
            "20",
        ],
    );
    assert_eq!(code, 0, "{}", v["outcome"]);
    check_merged(&v, 3);
    assert_eq!(v["kind"], "latency");
    let c = &v["cases"][0];
    let e = &c["extra"];
    assert_eq!(e["agents_merged"], 3, "{e}");
    let shares = c["agents"].as_array().unwrap();
    let each = |k: &str| -> Vec<f64> {
        shares
            .iter()
            .map(|s| {
                s["extra"][k]
                    .as_f64()
                    .unwrap_or_else(|| panic!("agent {} without {k}: {s}", s["agent"]))
            })
            .collect()
    };
    let merged = |k: &str| {
        e[k].as_f64()
            .unwrap_or_else(|| panic!("merged case without {k}: {e}"))
    };
    // Every agent's 8 callers had calls out at once at some point.
    let in_flight = each("max_in_flight");
    assert!(
        in_flight.iter().all(|&n| (1.0..=8.0).contains(&n)),
        "{in_flight:?}"
    );
    for k in ["max_in_flight", "client_rss_bytes"] {
        assert_eq!(merged(k), each(k).iter().sum::<f64>(), "{k}: {e}");
    }
    let per_call = each("client_rss_per_call_bytes");
    assert_eq!(
        merged("client_rss_per_call_bytes"),
        per_call.iter().copied().fold(f64::MIN, f64::max),
        "{e}"
    );
}
