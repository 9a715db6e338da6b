//! A correct but slow peer finishes the interop suite: the suite measures
//! the peer's echo rate first and raises its timeouts from it. The slow
//! peer is our server behind a loopback proxy that forwards at about
//! 3 MB/s each way; the user's per-request timeout (1 s) is shorter than
//! the large echo takes through it, so only the calibration lets it pass.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use iiop_bench_idl::run::{RunningServer, ServerOptions};

const BYTES_PER_SEC: f64 = 3e6;

/// Copy `from` to `to` in pieces of at most 16 KiB, sleeping after each so
/// that the rate stays near [`BYTES_PER_SEC`].
fn pump(mut from: TcpStream, mut to: TcpStream) {
    let mut buf = vec![0u8; 16 << 10];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        std::thread::sleep(Duration::from_secs_f64(n as f64 / BYTES_PER_SEC));
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}

/// A throttling proxy in front of `upstream`; its threads end with the
/// connections (and the test process).
fn slow_proxy(upstream: std::net::SocketAddr) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(c) = c else { break };
            let Ok(u) = TcpStream::connect(upstream) else {
                continue;
            };
            let _ = c.set_nodelay(true);
            let _ = u.set_nodelay(true);
            let (c2, u2) = (c.try_clone().unwrap(), u.try_clone().unwrap());
            std::thread::spawn(move || pump(c, u));
            std::thread::spawn(move || pump(u2, c2));
        }
    });
    port
}

#[test]
fn a_slow_peer_finishes_the_suite_with_timeouts_sized_from_its_rate() {
    let srv = RunningServer::start(ServerOptions {
        threads: 1,
        ..Default::default()
    })
    .unwrap();
    let port = slow_proxy(srv.addr());
    let target = format!("corbaloc:iiop:1.2@127.0.0.1:{port}/Bench");
    let json = std::env::temp_dir().join(format!("iiopbench-slow-{}.json", std::process::id()));
    let j = json.display().to_string();
    let t = Instant::now();
    let code = iiopbench::main_with_args([
        "iiopbench",
        "interop",
        "--target",
        &target,
        "--quick",
        "--timeout",
        "1s",
        "--quiet",
        "--json",
        &j,
    ]);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    assert!(t.elapsed() < Duration::from_secs(240), "{:?}", t.elapsed());
    let checks = v["cases"].as_array().unwrap();
    let failed: Vec<String> = checks
        .iter()
        .filter(|c| c["extra"]["result"] == "fail")
        .map(|c| format!("{}: {}", c["name"], c["extra"]["detail"]))
        .collect();
    assert_eq!(code, 0, "{failed:#?}");
    let cal = checks
        .iter()
        .find(|c| c["name"] == "calibration: echo rate")
        .expect("calibration note");
    let detail = cal["extra"]["detail"].as_str().unwrap();
    // The rate measured is the proxy's (below 3 MB/s), and the request
    // timeout was raised above the 1 s asked for.
    let rate: f64 = detail
        .strip_prefix("peer echoes ")
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{detail}"));
    assert!(rate > 0.1 && rate < 3.0, "{detail}");
    let timeout: f64 = detail
        .split("request timeout ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{detail}"));
    assert!(timeout >= 3.0, "{detail}");
    let large = checks
        .iter()
        .find(|c| c["name"].as_str().unwrap().starts_with("echo octet 3MiB"))
        .expect("large echo ran");
    assert_eq!(large["extra"]["result"], "pass");
    // It took longer than the 1 s the user allowed per request.
    assert!(large["seconds"].as_f64().unwrap() > 1.0, "{large}");
}
