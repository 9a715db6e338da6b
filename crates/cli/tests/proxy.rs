//! `iiopbench proxy`, black-box: the real binary in front of our server
//! (started in this process), a client through the IOR it prints, the
//! counts it prints when stopped, its recording read back by the capture
//! crate; and a bad fault spec refused in one line.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use iiop_bench_idl::client::BenchClient;
use iiop_bench_idl::run::{RunningServer, ServerOptions};
use iiop_giop::{Ior, ResponseMode};
use iiop_transport::ClientConfig;

fn tmp(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-proxy-cli-{}-{name}", std::process::id()))
}

#[test]
fn proxy_command_fronts_a_server_and_records_it() {
    let srv = RunningServer::start(ServerOptions {
        threads: 1,
        ..ServerOptions::default()
    })
    .unwrap();
    let target = tmp("target.ior");
    let via = tmp("via.ior");
    let rec = tmp("rec.pcapng");
    std::fs::write(&target, format!("{}\n", srv.refs().ior)).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_iiopbench"))
        .args(["proxy", "--target"])
        .arg(&target)
        .args(["--fault", "fragment=64,reorder"])
        .arg("--record")
        .arg(&rec)
        .arg("--ior-file")
        .arg(&via)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut head = Vec::new();
    let t = Instant::now();
    loop {
        let mut l = String::new();
        assert!(out.read_line(&mut l).unwrap() > 0, "proxy ended: {head:?}");
        if l.trim() == "ready" {
            break;
        }
        head.push(l.trim().to_string());
        assert!(t.elapsed() < Duration::from_secs(30));
    }
    assert_eq!(head[1], "config faults=fragment=64,reorder=20ms");
    let ior: Ior = head[3].parse().unwrap();
    assert_eq!(std::fs::read_to_string(&via).unwrap().trim(), head[3]);
    assert!(
        head[4].starts_with("corbaloc corbaloc:iiop:1.2@127.0.0.1:"),
        "{head:?}"
    );
    let p = ior.iiop_profile().unwrap();
    assert_ne!(p.port, srv.addr().port());
    let body: Vec<u8> = (0..500u32).map(|i| (i * 7) as u8).collect();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let c = BenchClient::connect(&ior, &ClientConfig::default())
                .await
                .unwrap();
            let r = c
                .request("echo_octet", ResponseMode::Twoway, |w| {
                    w.write_octet_seq(&body)
                })
                .await
                .unwrap()
                .unwrap();
            let back = r
                .body
                .reader(c.options())
                .read_octet_seq()
                .unwrap()
                .to_vec();
            assert_eq!(back, body);
            c.close();
        });
    // SAFETY: kill(2) on our own child's pid; no memory involved.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}: {rest}");
    assert!(
        rest.starts_with("proxy: 1 connections, 2 messages,")
            && rest.contains(", 2 messages fragmented, "),
        "{rest}"
    );
    let sum = iiop_capture::analyze(
        std::fs::File::open(&rec).unwrap(),
        iiop_capture::Config::default(),
    )
    .unwrap();
    // Both legs: the client's and the proxy's connection.
    assert_eq!(sum.connections, 2);
    assert!(
        sum.fragmented_messages >= 2 && sum.fragments > 2 * 8,
        "{sum:?}"
    );
    let op = sum
        .ops
        .iter()
        .find(|o| o.operation == "echo_octet")
        .unwrap();
    assert_eq!((op.calls, op.replies), (2, 2));
    assert!(sum.findings.is_empty(), "{:?}", sum.findings);
    for f in [target, via, rec] {
        let _ = std::fs::remove_file(f);
    }
}

#[test]
fn a_bad_fault_spec_is_refused_in_one_line() {
    let out = Command::new(env!("CARGO_BIN_EXE_iiopbench"))
        .args([
            "proxy",
            "--target",
            "corbaloc:iiop:1.2@127.0.0.1:1/Bench",
            "--fault",
            "dribble=7,corrupt=5",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "bad fault spec `corrupt=5`: expected corrupt=N@OFFSET (message N, byte OFFSET)"
        ),
        "{err}"
    );
}
