//! `iiopbench orbs start NAME` with no `--port`, black-box: the real binary
//! starts each vendor server on an ephemeral port (port 0), the server
//! prints that port in its IOR and in its `corbaloc KEY URL` lines
//! (docs/vendor-protocol.md), and a real call reaches it both by the IOR
//! file and by the printed corbaloc. On SIGTERM the server prints its
//! `stats` line, counting those calls, and exits 0.
//!
//! A vendor that is not built here is SKIPPED with a printed reason, unless
//! `CI` is set (scripts/test installs and builds them first, so there a
//! missing vendor is a failure). TAO, which needs an ACE+TAO build of the
//! user's own, is run only when it is built and never required.

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use iiop_giop::Ior;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tmp(name: &str) -> PathBuf {
    std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "iiopbench-orbs-start-{}-{name}",
        std::process::id()
    ))
}

/// Whether `orb`'s server is built; prints the skip reason, or panics
/// under CI when `required`.
fn available(orb: &str, required: bool) -> bool {
    common::vendor_built("orbs_start", orb, required)
}

/// `iiopbench orbs start ORB` (no --port), terminated and reaped on drop.
struct Server {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Server {
    /// Start and read the startup lines up to `ready` (at most 180 s: a
    /// stale JacORB build is rebuilt first). Returns the lines before it.
    fn start(orb: &str, ior_file: &PathBuf) -> (Server, Vec<String>) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_iiopbench"))
            .args(["orbs", "start", orb, "--ior-file"])
            .arg(ior_file)
            .env("IIOPBENCH_ROOT", root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("iiopbench orbs start runs");
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut s = Server { child, lines: rx };
        let deadline = Instant::now() + Duration::from_secs(180);
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match s.lines.recv_timeout(left) {
                Ok(l) if l.trim() == "ready" => return (s, seen),
                Ok(l) => seen.push(l),
                Err(e) => {
                    let st = s.child.try_wait().ok().flatten();
                    panic!("{orb}: no `ready` line ({e}; exit {st:?}); printed so far: {seen:#?}");
                }
            }
        }
    }

    /// SIGTERM, then the remaining stdout lines and the exit code (at most
    /// 30 s).
    fn stop(mut self) -> (Vec<String>, Option<i32>) {
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: a plain kill(2) of our own child, still unreaped.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(30);
        let code = loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                break st.code();
            }
            if Instant::now() > deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut rest = Vec::new();
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(2)) {
            rest.push(l);
        }
        (rest, code)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn run(args: &[&str]) -> i32 {
    let mut v = vec!["iiopbench"];
    v.extend_from_slice(args);
    iiopbench::main_with_args(v)
}

/// Start `orb` with no --port; check the port it chose everywhere it is
/// printed; call it by IOR file and by corbaloc; stop it.
fn start_without_port(orb: &str) {
    let ior_file = tmp(&format!("{orb}.ior"));
    let (server, lines) = Server::start(orb, &ior_file);

    let ior_line = lines
        .iter()
        .find(|l| l.starts_with("IOR:"))
        .unwrap_or_else(|| panic!("{orb}: no IOR line in {lines:#?}"));
    let ior: Ior = ior_line.parse().expect("the IOR line parses");
    let prof = ior.iiop_profile().expect("an IIOP profile");
    assert_ne!(prof.port, 0, "{orb}: IOR with port 0");
    let file = std::fs::read_to_string(&ior_file).expect("--ior-file written");
    assert_eq!(
        file.trim(),
        ior_line,
        "{orb}: --ior-file holds the printed IOR"
    );

    let corbaloc: Vec<(&str, &str)> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("corbaloc "))
        .filter_map(|l| l.split_once(' '))
        .collect();
    let keys: Vec<&str> = corbaloc.iter().map(|c| c.0).collect();
    assert_eq!(
        keys,
        ["Bench", "Dispatch50", "Dispatch500", "Single0"],
        "{orb}: {lines:#?}"
    );
    for (key, url) in &corbaloc {
        assert_eq!(
            *url,
            format!("corbaloc:iiop:127.0.0.1:{}/{key}", prof.port),
            "{orb}: corbaloc line for {key} names the IOR's port"
        );
    }

    // Real calls, by IOR file and by the printed corbaloc (GIOP 1.0 and,
    // with `1.2@`, 1.2): echo of 16 longs, 20 times each.
    let bench_url = corbaloc[0].1;
    let v12 = bench_url.replacen("corbaloc:iiop:", "corbaloc:iiop:1.2@", 1);
    let targets = [ior_file.to_str().unwrap(), bench_url, v12.as_str()];
    for target in targets {
        let json = tmp(&format!("{orb}-latency.json"));
        let code = run(&[
            "bench",
            "latency",
            "--runs",
            "1",
            "--target",
            target,
            "--op",
            "echo",
            "--type",
            "long",
            "--size",
            "64",
            "--count",
            "20",
            "--timeout",
            "20s",
            "--quiet",
            "--json",
            json.to_str().unwrap(),
        ]);
        let _ = std::fs::remove_file(&json);
        assert_eq!(code, 0, "{orb}: bench latency --target {target}");
    }

    let (rest, code) = server.stop();
    let _ = std::fs::remove_file(&ior_file);
    assert_eq!(code, Some(0), "{orb}: exit status after SIGTERM; {rest:?}");
    let stats = rest
        .iter()
        .find_map(|l| l.strip_prefix("stats "))
        .unwrap_or_else(|| panic!("{orb}: no stats line after SIGTERM: {rest:?}"));
    let calls: u64 = stats
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("calls="))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{orb}: {stats}"));
    assert!(calls >= 60, "{orb}: only {calls} calls counted ({stats})");
}

#[test]
fn omniorb_starts_on_an_ephemeral_port() {
    if available("omniorb", true) {
        start_without_port("omniorb");
    }
}

#[test]
fn jacorb_starts_on_an_ephemeral_port() {
    if available("jacorb", true) {
        start_without_port("jacorb");
    }
}

#[test]
fn omniorbpy_starts_on_an_ephemeral_port() {
    if available("omniorbpy", true) {
        start_without_port("omniorbpy");
    }
}

#[test]
fn tao_starts_on_an_ephemeral_port() {
    if available("tao", false) {
        start_without_port("tao");
    }
}
