//! `iiopbench proxy` between real ORBs, black-box (the built binary, the
//! vendor programs as they run):
//! - in front of the omniORB and the JacORB server, `iiopbench interop`
//!   through the proxy's IOR passes every check that passes direct (in
//!   the same run), as a pure relay and with every GIOP 1.2 request and
//!   reply cut into 64-byte Fragments written 7 bytes at a time;
//! - `interop --via-proxy` with a MessageError injected, or a request's
//!   magic corrupted, fails checks that name the fault and what it did,
//!   classified `proxy-fault` in the JUnit file, and the server still
//!   serves the connections that follow;
//! - the omniORB client through the proxy in front of `iiopbench serve`
//!   passes its whole conformance run, relayed and fragmented.
//!
//! The vendor programs are built by `scripts/orbs/<orb>/build`; when they
//! are missing the tests SKIP with a printed reason, unless `CI` is set.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use common::{start, vendor_server};
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn dir(test: &str) -> PathBuf {
    let d = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "iiopbench-proxy-vendor-{}-{test}",
        std::process::id()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn available(test: &str, orb: &str) -> bool {
    common::vendor_built(test, orb, true)
}

/// `iiopbench proxy` running; [`ProxyRun::stop`] ends it with SIGTERM
/// and returns its closing line of counts.
struct ProxyRun {
    child: Option<Child>,
    lines: Arc<Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl ProxyRun {
    fn start(target: &Path, fault: &str, via: &Path) -> ProxyRun {
        let mut child = Command::new(env!("CARGO_BIN_EXE_iiopbench"))
            .args(["proxy", "--target"])
            .arg(target)
            .args(["--fault", fault, "--ior-file"])
            .arg(via)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("iiopbench proxy starts");
        let out = child.stdout.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let seen = lines.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if line.trim() == "ready" {
                    let _ = tx.send(());
                }
                seen.lock().unwrap().push(line);
            }
        });
        let run = ProxyRun {
            child: Some(child),
            lines,
            reader: Some(reader),
        };
        rx.recv_timeout(Duration::from_secs(60))
            .expect("the proxy printed ready within 60 s");
        run
    }

    /// SIGTERM; the proxy exits 0 and its last line is its counts.
    fn stop(mut self) -> String {
        let mut child = self.child.take().unwrap();
        // SAFETY: kill(2) on our own child's pid; no memory involved.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let status = child.wait().unwrap();
        self.reader.take().unwrap().join().unwrap();
        let lines = self.lines.lock().unwrap().clone();
        assert!(status.success(), "proxy: {status:?}: {lines:?}");
        lines.last().cloned().unwrap_or_default()
    }
}

impl Drop for ProxyRun {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// One `iiopbench interop` run: its exit code and results document.
struct Interop {
    code: i32,
    json: Value,
}

impl Interop {
    fn run(target: &Path, extra: &[&str], json: &Path) -> Interop {
        let out = Command::new(env!("CARGO_BIN_EXE_iiopbench"))
            .args(["interop", "--quiet", "--target"])
            .arg(target)
            .args(extra)
            .arg("--json")
            .arg(json)
            .output()
            .expect("iiopbench interop runs");
        let text = std::fs::read_to_string(json).unwrap_or_else(|e| {
            panic!("no results ({e}): {}", String::from_utf8_lossy(&out.stderr))
        });
        Interop {
            code: out.status.code().unwrap_or(-1),
            json: serde_json::from_str(&text).unwrap(),
        }
    }

    fn count(&self, what: &str) -> u64 {
        self.json["params"][what].as_u64().unwrap()
    }

    /// `(name, detail)` of every check with this result.
    fn cases(&self, result: &str) -> Vec<(String, String)> {
        self.json["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["extra"]["result"] == result)
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_string(),
                    c["extra"]["detail"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    fn names(&self, result: &str) -> Vec<String> {
        self.cases(result).into_iter().map(|(n, _)| n).collect()
    }
}

/// The number before `what` in the proxy's line of counts.
fn counted(summary: &str, what: &str) -> u64 {
    summary
        .split(", ")
        .find_map(|p| {
            let n = p.strip_suffix(what)?.split_whitespace().last()?;
            n.parse().ok()
        })
        .unwrap_or(0)
}

/// Direct, relayed and fragmented: the same checks pass.
fn survives_relay_and_fragments(orb: &str) {
    let test = format!("proxy_vendor {orb}");
    if !available(&test, orb) {
        return;
    }
    let d = dir(&format!("{orb}-frag"));
    let ior = d.join("server.ior");
    let _srv = vendor_server(orb, &ior);
    let direct = Interop::run(&ior, &[], &d.join("direct.json"));
    assert!(direct.count("passed") > 200, "{}", direct.json["params"]);
    for fault in ["none", "fragment=64,dribble=7"] {
        let via = d.join("via.ior");
        let p = ProxyRun::start(&ior, fault, &via);
        let run = Interop::run(&via, &[], &d.join("via.json"));
        let summary = p.stop();
        eprintln!(
            "{orb} direct: {} passed, {} failed; through the proxy ({fault}): {} passed, {} failed; {summary}",
            direct.count("passed"),
            direct.count("failed"),
            run.count("passed"),
            run.count("failed"),
        );
        assert_eq!(run.code, 0, "{fault}: {:?}", run.cases("fail"));
        assert_eq!(run.names("pass"), direct.names("pass"), "{fault}");
        assert!(counted(&summary, "connections") >= 1, "{summary}");
        assert!(counted(&summary, "messages") > 1000, "{summary}");
        if fault != "none" {
            // Both ways: requests are larger than 64 bytes, and so are
            // the replies of the large echoes.
            assert!(counted(&summary, "messages fragmented") > 100, "{summary}");
            assert!(
                counted(&summary, "writes") > counted(&summary, "fragments"),
                "{summary}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn omniorb_survives_relay_and_fragments_through_the_proxy() {
    survives_relay_and_fragments("omniorb");
}

#[test]
fn jacorb_survives_relay_and_fragments_through_the_proxy() {
    survives_relay_and_fragments("jacorb");
}

/// A MessageError injected, a request's magic corrupted: failed checks
/// that name the fault; the server serves the next connections.
fn faults_are_named_and_the_server_survives(orb: &str) {
    let test = format!("proxy_vendor {orb}");
    if !available(&test, orb) {
        return;
    }
    let d = dir(&format!("{orb}-faults"));
    let ior = d.join("server.ior");
    let _srv = vendor_server(orb, &ior);
    let quick = |name: &str| Interop::run(&ior, &["--quick"], &d.join(name));
    let before = quick("before.json");
    assert_eq!(before.code, 0, "{:?}", before.cases("fail"));
    for (fault, acted) in [
        ("message-error-after=3", "MessageError injected"),
        ("corrupt=3@0", "messages corrupted"),
    ] {
        let junit = d.join("junit.xml");
        let run = Interop::run(
            &ior,
            &["--via-proxy", fault, "--junit", junit.to_str().unwrap()],
            &d.join("faulty.json"),
        );
        assert_eq!(run.code, 1, "{fault}");
        let failed = run.cases("fail");
        assert!(!failed.is_empty(), "{fault}");
        let mark = format!("[through a proxy injecting {fault}: ");
        for (name, detail) in &failed {
            assert!(
                detail.contains(&mark) && detail.contains(acted),
                "{fault}: {name}: {detail}"
            );
        }
        assert_eq!(run.json["params"]["via_proxy"], fault);
        let xml = std::fs::read_to_string(&junit).unwrap();
        let doc = roxmltree::Document::parse(&xml).expect("JUnit XML parses");
        let failures: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("failure"))
            .collect();
        assert_eq!(failures.len(), failed.len(), "{fault}");
        for f in failures {
            let m = f.attribute("message").unwrap();
            assert!(
                m.starts_with("[failed: proxy-fault] ") && m.contains(&mark),
                "{m}"
            );
        }
        // The server serves the connections that follow, in full.
        let after = quick("after.json");
        assert_eq!(after.code, 0, "after {fault}: {:?}", after.cases("fail"));
        assert_eq!(after.names("pass"), before.names("pass"), "after {fault}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn omniorb_failures_under_injected_faults_name_them() {
    faults_are_named_and_the_server_survives("omniorb");
}

#[test]
fn jacorb_failures_under_injected_faults_name_them() {
    faults_are_named_and_the_server_survives("jacorb");
}

/// The omniORB client's conformance run: `(passed, failed, check names)`.
fn omniorb_conformance(target: &Path) -> (u64, u64, Vec<String>) {
    let out = Command::new(root().join("scripts/orbs/omniorb/client"))
        .arg("--target")
        .arg(target)
        .args(["--mode", "conformance"])
        .output()
        .expect("omniORB client runs");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let last = text.lines().last().unwrap_or("").to_string();
    let v: Value =
        serde_json::from_str(&last).unwrap_or_else(|e| panic!("client output {text:?}: {e}"));
    let names = v["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["pass"] == true)
        .map(|c| c["name"].as_str().unwrap_or("").to_string())
        .collect();
    (
        v["passed"].as_u64().unwrap(),
        v["failed"].as_u64().unwrap(),
        names,
    )
}

#[test]
fn omniorb_client_reaches_our_server_through_the_proxy() {
    let test = "proxy_vendor omniorb client";
    if !available(test, "omniorb") {
        return;
    }
    let d = dir("omniorb-client");
    let ior = d.join("ours.ior");
    let mut c = Command::new(env!("CARGO_BIN_EXE_iiopbench"));
    c.args(["serve", "--listen", "127.0.0.1:0", "--ior-file"])
        .arg(&ior);
    let _srv = start(c);
    let (passed, failed, names) = omniorb_conformance(&ior);
    assert!(
        passed > 150 && failed == 0,
        "direct: {passed} passed, {failed} failed"
    );
    for fault in ["none", "fragment=64,dribble=7"] {
        let via = d.join("via.ior");
        let p = ProxyRun::start(&ior, fault, &via);
        let (vp, vf, vnames) = omniorb_conformance(&via);
        let summary = p.stop();
        eprintln!(
            "omniORB client x our server direct: {passed} passed, {failed} failed; \
             through the proxy ({fault}): {vp} passed, {vf} failed; {summary}"
        );
        assert_eq!((vp, vf), (passed, failed), "{fault}");
        assert_eq!(vnames, names, "{fault}");
        assert!(counted(&summary, "messages") > 100, "{summary}");
        if fault != "none" {
            assert!(counted(&summary, "messages fragmented") > 10, "{summary}");
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}
