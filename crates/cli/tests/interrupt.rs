//! Ctrl-C, black-box: the real binary in its own process (the interrupt
//! flag is process-wide), sent SIGINT mid-run. Whatever the run measured
//! is written, the outcome says "interrupted", the exit status is 1, and
//! it comes at once, also while a call waits on a server that never
//! answers, with either wait strategy and in the workload engine.

use std::io::Read;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn tmp(name: &str) -> PathBuf {
    std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-int-{}-{name}", std::process::id()))
}

fn start(args: &[&str], json: &PathBuf) -> Child {
    Command::new(env!("CARGO_BIN_EXE_iiopbench"))
        .args(args)
        .args(["--quiet", "--json"])
        .arg(json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start iiopbench")
}

/// SIGINT after `after`; then the exit status, the one-line reason, and
/// how long the process took to go.
fn interrupt(mut child: Child, after: Duration) -> (i32, String, Duration) {
    std::thread::sleep(after);
    let sent = Instant::now();
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill")
        .success();
    assert!(ok, "SIGINT delivered");
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return (st.code().unwrap_or(-1), err, sent.elapsed());
        }
        if sent.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running 10 s after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn results(json: &PathBuf) -> Value {
    let v = serde_json::from_str(&std::fs::read_to_string(json).expect("results written")).unwrap();
    std::fs::remove_file(json).unwrap();
    v
}

#[test]
fn ctrl_c_mid_run_keeps_what_was_measured_and_exits_1() {
    for wait in ["read", "spin", "reactor"] {
        // The run must have measured calls before the interrupt comes. On a
        // quiet machine the warm-up is over in a fraction of a second; on a
        // busy one (spinning client and server taking turns with other
        // work) it has taken longer than the first wait, so an interrupt
        // that found nothing measured yet is tried again with twice the
        // wait. Every attempt checks the interrupt itself.
        let mut after = Duration::from_millis(1500);
        let mut tried = Vec::new();
        loop {
            let json = tmp(&format!("mid-{wait}.json"));
            let child = start(
                &[
                    "bench",
                    "latency",
                    "--runs",
                    "1",
                    "--duration",
                    "60s",
                    "--warmup",
                    "100",
                    "--wait-strategy",
                    wait,
                ],
                &json,
            );
            let (code, err, took) = interrupt(child, after);
            assert_eq!(code, 1, "{wait}: {err}");
            assert!(err.contains("interrupted"), "{wait}: {err}");
            assert!(took < Duration::from_secs(3), "{wait}: {took:?}");
            let v = results(&json);
            assert_eq!(v["outcome"]["complete"], false);
            assert!(v["outcome"]["failure"]
                .as_str()
                .unwrap()
                .starts_with("interrupted"));
            assert_eq!(v["params"]["wait_strategy"], wait);
            let c = &v["cases"][0];
            // The call cut short is not the server's failure (a case that
            // measured nothing has no error map at all).
            assert!(
                c["errors"].is_null() || c["errors"] == serde_json::json!({}),
                "{wait}: {c}"
            );
            let calls = c["calls"].as_u64().unwrap();
            tried.push((after, calls, c["noise"].clone()));
            if calls > 0 {
                let h =
                    iiopbench_engine::hist::Latency::from_base64(c["histogram"].as_str().unwrap())
                        .unwrap();
                assert_eq!(h.len(), calls);
                break;
            }
            after *= 2;
            assert!(
                after <= Duration::from_secs(12),
                "{wait}: no call measured before any interrupt (wait, calls, noise): {tried:?}"
            );
        }
    }
}

#[test]
fn ctrl_c_ends_a_call_to_a_server_that_never_answers() {
    // Accepts, reads nothing, answers nothing, until the test ends.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in l.incoming().take(8).flatten() {
            held.push(s);
        }
    });
    let target = format!("corbaloc:iiop:1.2@127.0.0.1:{port}/Bench");
    for (cmd, wait) in [
        ("latency", "read"),
        ("latency", "spin"),
        ("latency", "reactor"),
        ("throughput", "read"),
        ("throughput", "reactor"),
        ("closed", "reactor"),
    ] {
        let json = tmp(&format!("silent-{cmd}-{wait}.json"));
        let mut args = vec![
            "bench",
            cmd,
            "--target",
            &target,
            "--timeout",
            "60s",
            "--wait-strategy",
            wait,
        ];
        if cmd == "latency" {
            args.extend(["--warmup", "0"]);
        } else if cmd == "closed" {
            // The workload engine: two clients, both stuck in a call.
            args.extend(["--clients", "2", "--duration", "30s"]);
        } else {
            args.extend(["--mode", "twoway", "--type", "long", "--size", "1KiB"]);
        }
        let child = start(&args, &json);
        let (code, err, took) = interrupt(child, Duration::from_millis(800));
        assert_eq!(code, 1, "{cmd} {wait}: {err}");
        assert!(err.contains("interrupted"), "{cmd} {wait}: {err}");
        // Not the 60 s timeout: the next 100 ms look at the flag.
        assert!(took < Duration::from_secs(3), "{cmd} {wait}: {took:?}");
        let v = results(&json);
        assert_eq!(v["outcome"]["complete"], false, "{cmd} {wait}");
        assert_eq!(v["params"]["wait_strategy"], wait);
    }
}
