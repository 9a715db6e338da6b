//! Lab tests against the real kernel: they need root (CI runs as root) and
//! `ip`, `tc`, `nft` (scripts/lab/install). Without root each test prints
//! why it is skipped and returns. Tests that time things run one at a time.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use iiop_lab::{
    cleanup_leftovers, netns, DelayMechanism, Impairment, Lab, LabError, LabSpec, Mechanism,
    MeasureOptions,
};

/// Serialises the tests: timing on a 2-core machine is only fair alone.
static SERIAL: Mutex<()> = Mutex::new(());

fn root_or_skip(test: &str) -> bool {
    if let Err(e) = netns::require_root() {
        eprintln!("SKIP {test}: {e}");
        return false;
    }
    true
}

fn assert_gone(lab_id: &str) {
    let left = netns::list(&format!("{lab_id}-"));
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
}

const MSG: usize = 64;

/// Echo server for fixed 64-byte messages on one accepted connection.
fn echo_once(listener: TcpListener) {
    let (mut s, _) = listener.accept().expect("accept");
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = [0u8; MSG];
    while s.read_exact(&mut buf).is_ok() {
        if s.write_all(&buf).is_err() {
            break;
        }
    }
}

/// `n` request/response round trips of 64 bytes; response times.
fn ping_pong(s: &mut TcpStream, n: u32) -> Vec<Duration> {
    let mut out = Vec::new();
    let mut buf = [0u8; MSG];
    for i in 0..n {
        buf[..4].copy_from_slice(&i.to_be_bytes());
        let t0 = Instant::now();
        s.write_all(&buf).expect("send request");
        let mut back = [0u8; MSG];
        s.read_exact(&mut back).expect("read response");
        assert_eq!(back, buf, "echo of request {i}");
        out.push(t0.elapsed());
    }
    out
}

fn mean_ms(v: &[Duration]) -> f64 {
    v.iter().map(Duration::as_secs_f64).sum::<f64>() * 1000.0 / v.len() as f64
}

fn median_ms(v: &[Duration]) -> f64 {
    iiop_lab::measure::median(v).as_secs_f64() * 1000.0
}

#[test]
fn ci_lab_20ms_2pct_10mbit_measures_itself_and_moves_ping_pong() {
    if !root_or_skip("ci_lab") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let started = Instant::now();
    let full = Impairment {
        delay: Duration::from_millis(20),
        jitter: Duration::ZERO,
        loss: 0.02,
        rate_bps: Some(10_000_000),
    };
    let mut lab = Lab::create(LabSpec::pair("client", "server", full)).expect("create lab");
    let id = lab.id().to_string();
    assert_eq!(lab.namespaces().len(), 3);
    for ns in lab.namespaces() {
        assert!(netns::ns_path(ns).exists(), "{ns} exists");
    }
    let server = lab.host("server").unwrap().addr();
    assert_eq!(server.to_string(), "10.201.0.2");

    // Self-measurement.
    let reports = lab.measure(&MeasureOptions::default()).expect("measure");
    assert_eq!(reports.len(), 1);
    let r = &reports[0];
    eprintln!("{}", serde_json::to_string_pretty(r).unwrap());
    assert_eq!(r.violations(), Vec::<String>::new());
    assert_eq!(r.rtt_configured_ms, 40.0);
    for d in [&r.a_to_b, &r.b_to_a] {
        assert_ne!(d.mechanisms.delay, Mechanism::None);
        assert_ne!(d.mechanisms.loss, Mechanism::None);
        assert_eq!(d.mechanisms.rate, Mechanism::Tbf);
        assert_eq!(d.loss_sent, 2000);
    }

    // TCP ping-pong: the echo server listens in "server", the client
    // connects from "client"; one connection for all phases.
    let listener = lab
        .run_in("server", move || TcpListener::bind((server, 0)))
        .unwrap()
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let echo = std::thread::spawn(move || echo_once(listener));
    lab.set_link("client", "server", Impairment::NONE).unwrap();
    let mut conn = lab
        .run_in("client", move || {
            TcpStream::connect_timeout(&(server, port).into(), Duration::from_secs(5))
        })
        .unwrap()
        .unwrap();
    conn.set_nodelay(true).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = ping_pong(&mut conn, 5); // warm-up
    let base = ping_pong(&mut conn, 30);
    let delay_only = Impairment { loss: 0.0, ..full };
    lab.set_link("client", "server", delay_only).unwrap();
    let delayed = ping_pong(&mut conn, 30);
    lab.set_link("client", "server", full).unwrap();
    let lossy = ping_pong(&mut conn, 30);
    drop(conn);
    echo.join().unwrap();
    let (b, d, l) = (mean_ms(&base), mean_ms(&delayed), mean_ms(&lossy));
    eprintln!(
        "ping-pong mean: bare {b:.3} ms, 20ms+20ms {d:.3} ms, with 2% loss {l:.3} ms (median {:.3} ms)",
        median_ms(&lossy)
    );
    assert!((d - b - 40.0).abs() <= 4.0, "delay moved mean by {:.3} ms", d - b);
    assert!(
        (median_ms(&lossy) - median_ms(&base) - 40.0).abs() <= 4.0,
        "median with loss moved by {:.3} ms",
        median_ms(&lossy) - median_ms(&base)
    );
    assert!(l - b >= 36.0, "mean with loss moved by only {:.3} ms", l - b);

    lab.destroy().expect("destroy");
    assert_gone(&id);
    eprintln!("ci_lab took {:?}", started.elapsed());
}

#[test]
fn spawned_processes_run_inside_hosts_and_die_with_the_lab() {
    if !root_or_skip("spawn") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::create(LabSpec::pair("a", "b", Impairment::NONE)).expect("create lab");
    let id = lab.id().to_string();
    let b_addr = lab.host("b").unwrap().addr();

    let mut cmd = Command::new("ip");
    cmd.args(["-o", "-4", "addr", "show", "dev", "lo"]).stdout(Stdio::piped());
    let out = lab.spawn("a", cmd).unwrap().wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("inet 10.201.0.1/32"), "{text}");

    let mut cmd = Command::new("ping");
    cmd.args(["-c", "3", "-i", "0.2", "-W", "2", &b_addr.to_string()])
        .stdout(Stdio::piped());
    let out = lab.spawn("a", cmd).unwrap().wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "ping failed: {text}");
    assert!(text.contains("3 received"), "{text}");

    // A process still running when the lab goes is killed.
    let mut cmd = Command::new("sleep");
    cmd.arg("30");
    let mut child = lab.spawn("b", cmd).unwrap();
    let t0 = Instant::now();
    drop(lab);
    let status = child.wait().unwrap();
    assert!(!status.success());
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert_gone(&id);
}

#[test]
fn failed_create_removes_what_it_made() {
    if !root_or_skip("failed_create") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let netem = Lab::create(LabSpec {
        delay_mechanism: DelayMechanism::Netem,
        ..LabSpec::pair("a", "b", Impairment::delay(Duration::from_millis(5)))
    });
    let mine = format!("{}{}-", iiop_lab::NAME_PREFIX, std::process::id());
    match netem {
        // Kernel without sch_netem: the error names tc, and nothing is left.
        Err(LabError::Command { command, .. }) => {
            assert!(command.starts_with("tc qdisc add dev sb root handle 1: netem"), "{command}");
        }
        Err(e) => panic!("unexpected error: {e}"),
        Ok(lab) => {
            assert_eq!(
                lab.mechanisms("a", "b").unwrap().delay,
                Mechanism::Netem,
                "kernel has netem"
            );
        }
    }
    // Drop of the Ok lab or the error path has removed everything of ours
    // except labs of concurrently running tests (serialised here).
    assert_eq!(netns::list(&mine), Vec::<String>::new());
}

#[test]
fn clean_removes_leftovers_of_dead_owners_only() {
    if !root_or_skip("clean") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // pid 999999999 is above any pid_max, so its owner is certainly dead.
    let dead = "iiopb-999999999-0-h-x";
    netns::create(dead).unwrap();
    let alive = format!("iiopb-{}-999-h-y", std::process::id());
    netns::create(&alive).unwrap();
    let removed = cleanup_leftovers("iiopb-999999999-", false).unwrap();
    assert_eq!(removed, vec![dead.to_string()]);
    assert!(!netns::ns_path(dead).exists());
    assert_eq!(cleanup_leftovers(&alive, false).unwrap(), Vec::<String>::new());
    assert!(netns::ns_path(&alive).exists());
    assert_eq!(cleanup_leftovers(&alive, true).unwrap(), vec![alive.clone()]);
    assert!(!netns::ns_path(&alive).exists());
}

#[test]
fn not_root_or_bad_spec_is_a_clear_error() {
    let bad = LabSpec::pair("a", "a", Impairment::NONE);
    assert_eq!(
        Lab::create(bad).unwrap_err().to_string(),
        "invalid lab spec: host `a` listed twice"
    );
}
