//! A correct but slow peer and the interop suite's calibration: the suite
//! measures the peer's echo rate first and sizes its timeouts and large
//! payloads from it. The slow peer is our server behind a loopback proxy
//! that forwards at about 3 MB/s each way; the user's per-request timeout
//! (1 s) is shorter than the large echo takes through it. Given as it is,
//! that timeout bounds every request (the large echo times out, and the
//! calibration note says what the rate would have wanted); with
//! `--raise-limits` calibration raises it (to at most 3x) and the suite
//! passes.

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

/// The quick suite against `target` with `--timeout 1s` and `extra`:
/// exit status, the checks, and the calibration note.
fn quick_suite(target: &str, extra: &[&str]) -> (i32, Vec<serde_json::Value>, String) {
    let json = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-slow-{}.json", std::process::id()));
    let j = json.display().to_string();
    let mut args = vec![
        "iiopbench",
        "interop",
        "--target",
        target,
        "--quick",
        "--timeout",
        "1s",
        "--quiet",
        "--json",
        &j,
    ];
    args.extend_from_slice(extra);
    let code = iiopbench::main_with_args(args);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    let checks = v["cases"].as_array().unwrap().clone();
    let cal = checks
        .iter()
        .find(|c| c["name"] == "calibration: echo rate")
        .expect("calibration note");
    let detail = cal["extra"]["detail"].as_str().unwrap().to_string();
    (code, checks, detail)
}

/// The number after `prefix` in `detail`.
fn figure(detail: &str, prefix: &str) -> f64 {
    detail
        .split(prefix)
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no {prefix:?} in {detail}"))
}

#[test]
fn a_slow_peer_and_a_timeout_the_user_gave() {
    let srv = RunningServer::start(ServerOptions {
        threads: 1,
        ..Default::default()
    })
    .unwrap();
    let port = slow_proxy(srv.addr());
    let target = format!("corbaloc:iiop:1.2@127.0.0.1:{port}/Bench");
    let t = Instant::now();
    let failed = |checks: &[serde_json::Value]| -> Vec<String> {
        checks
            .iter()
            .filter(|c| c["extra"]["result"] == "fail")
            .map(|c| format!("{}: {}", c["name"], c["extra"]["detail"]))
            .collect()
    };

    // `--timeout 1s` as given bounds every request: the large echo, which
    // the rate says takes longer (it shrank to just above 2 MiB), times
    // out after 1 s, and the note says what the rate asked for.
    let (code, checks, detail) = quick_suite(&target, &[]);
    // The rate measured is the proxy's (below 3 MB/s).
    let rate = figure(&detail, "peer echoes ");
    assert!(rate > 0.1 && rate < 3.0, "{detail}");
    assert!(
        detail.contains("request timeout 1 s as given (this rate asks for"),
        "{detail}"
    );
    let f = failed(&checks);
    assert_eq!(code, 1, "{f:#?}");
    assert_eq!(f.len(), 1, "{f:#?}");
    assert!(
        f[0].starts_with("\"echo octet 2112KiB (above 2 MiB)\": ")
            && f[0].contains("timed out after 1s"),
        "{f:#?}"
    );

    // `--raise-limits`: calibration raises it, no further than 3x.
    let (code, checks, detail) = quick_suite(&target, &["--raise-limits"]);
    assert_eq!(code, 0, "{:#?}", failed(&checks));
    assert_eq!(figure(&detail, "request timeout "), 3.0, "{detail}");
    assert!(detail.contains("capped at 3x"), "{detail}");
    let large = checks
        .iter()
        .find(|c| c["name"] == "echo octet 2112KiB (above 2 MiB)")
        .expect("large echo ran");
    assert_eq!(large["extra"]["result"], "pass");
    // It took longer than the 1 s the user gave per request.
    assert!(large["seconds"].as_f64().unwrap() > 1.0, "{large}");
    assert!(t.elapsed() < Duration::from_secs(240), "{:?}", t.elapsed());
}
