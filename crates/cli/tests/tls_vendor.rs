//! IIOP over TLS against real vendor ORBs, both ways, with certificates
//! the test makes itself (a throw-away CA, server and client
//! certificates):
//! - our client (both wait strategies) against the omniORB and JacORB
//!   bench servers serving TLS only: it finds the TLS port in their IOR,
//!   pings, echoes 64 KiB, reads the counters; without TLS settings it
//!   refuses up front, and a server that requires client certificates
//!   refuses it (one line saying so) until it presents one;
//! - the omniORB and JacORB clients' whole conformance run against our
//!   reference server serving TLS only, client certificates required.
//!
//! The vendor programs are built by `scripts/orbs/<orb>/build`. When they
//! are missing the tests SKIP with a printed reason, unless `CI` is set.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use iiop_bench_idl::bench::elements::{CallMode, Elem};
use iiop_bench_idl::bench::types::Payload;
use iiop_bench_idl::client::{BenchClient, BenchError, Wait};
use iiop_bench_idl::run::{RunningServer, ServerOptions};
use iiop_transport::hosted::TlsServer;
use iiop_transport::tls::test_pki::TestPki;
use iiop_transport::tls::RustlsClientConfig;
use iiop_transport::{ClientConfig, ClientError, TlsMode};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

use common::{start, Proc};

/// `scripts/orbs/<orb>/start` serving TLS on a free port; waits (at most
/// 120 s) for `ready` and returns it with its IOR.
fn vendor_tls_server(orb: &str, pki: &TestPki, require_client: bool) -> (Proc, String) {
    let ior_file = pki.dir.join(format!("{orb}-{require_client}.ior"));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
        .to_string();
    let mut c = Command::new(root().join(format!("scripts/orbs/{orb}/start")));
    c.args(["--host", "127.0.0.1", "--port", &port, "--ior-file"])
        .arg(&ior_file)
        .arg("--tls-cert")
        .arg(&pki.server_cert)
        .arg("--tls-key")
        .arg(&pki.server_key)
        .arg("--tls-ca")
        .arg(&pki.ca);
    if require_client {
        c.arg("--tls-require-client");
    }
    let p = start(c);
    let ior = std::fs::read_to_string(&ior_file)
        .unwrap()
        .trim()
        .to_string();
    (p, ior)
}

fn cfg(tls: Option<std::sync::Arc<RustlsClientConfig>>) -> ClientConfig {
    ClientConfig {
        tls: tls.map_or(TlsMode::Off, TlsMode::Offered),
        request_timeout: Some(Duration::from_secs(30)),
        connect_timeout: Duration::from_secs(10),
        ..ClientConfig::default()
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Ping, a 64 KiB octet echo and the counters, over `wait`.
async fn exercise(ior: &iiop_giop::Ior, cfg: &ClientConfig, wait: Wait) -> Result<(), BenchError> {
    let c = BenchClient::connect_with(ior, cfg, wait).await?;
    c.reset().await?;
    c.ping().await?;
    let p = Payload::for_size(Elem::Octet, 64 * 1024);
    let back = c.payload(CallMode::Echo, &p).await?.expect("echo returns");
    assert_eq!(back, p, "64 KiB echoed exactly");
    let st = c.stats().await?;
    assert_eq!(st.calls, 2, "{st:?}");
    Ok(())
}

fn our_client_against(orb: &str) {
    if !common::vendor_built("tls_vendor", orb, true) {
        return;
    }
    let pki = TestPki::new(&format!("ours-to-{orb}"));
    let rt = rt();
    let (_srv, ior) = vendor_tls_server(orb, &pki, false);
    let ior: iiop_giop::Ior = ior.parse().unwrap();
    let offer = iiop_giop::ior::tls_offer(&ior.iiop_profile().unwrap())
        .unwrap_or_else(|| panic!("{orb}'s TLS IOR offers TLS"));
    for wait in [Wait::Read, Wait::Reactor] {
        rt.block_on(exercise(&ior, &cfg(Some(pki.client(false))), wait))
            .unwrap_or_else(|e| panic!("{orb} over TLS, {wait:?}: {e}"));
    }
    let e = rt
        .block_on(exercise(&ior, &cfg(None), Wait::Read))
        .unwrap_err();
    assert_eq!(
        e,
        BenchError::Call(ClientError::TlsNotConfigured {
            addr: format!("{}:{}", offer.host, offer.port),
            via: offer.via
        }),
        "{orb}"
    );
    drop(_srv);

    // Client certificates required.
    let (_srv, ior) = vendor_tls_server(orb, &pki, true);
    let ior: iiop_giop::Ior = ior.parse().unwrap();
    let e = rt
        .block_on(exercise(&ior, &cfg(Some(pki.client(false))), Wait::Read))
        .unwrap_err();
    let line = e.to_string();
    assert!(
        line.starts_with("TLS handshake with ") && line.contains("failed: the server refused it"),
        "{orb}: {line}"
    );
    rt.block_on(exercise(&ior, &cfg(Some(pki.client(true))), Wait::Read))
        .unwrap_or_else(|e| panic!("{orb} with a client certificate: {e}"));
}

#[test]
fn our_client_over_tls_against_omniorb() {
    our_client_against("omniorb");
}

/// The vendor client's conformance run against our TLS server (client
/// certificates required); every check must pass.
fn vendor_client_against_ours(orb: &str) {
    if !common::vendor_built("tls_vendor", orb, true) {
        return;
    }
    let pki = TestPki::new(&format!("{orb}-to-ours"));
    let srv = RunningServer::start(ServerOptions {
        threads: 2,
        tls: Some(TlsServer {
            config: pki.server(true),
            client_certificates: true,
        }),
        ..ServerOptions::default()
    })
    .unwrap();
    let ior_file = pki.dir.join("ours.ior");
    std::fs::write(&ior_file, srv.refs().ior.to_string()).unwrap();
    let out = run_vendor_client(orb, &ior_file, &pki, &["--mode", "conformance"]);
    let last = out.lines().last().unwrap_or_default();
    let j: serde_json::Value = serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("{orb} client's last line is JSON ({e}): {out}"));
    assert_eq!(
        j["failed"], 0,
        "{orb} client against our TLS server: {last}"
    );
    assert!(j["passed"].as_u64().unwrap_or(0) >= 100, "{last}");
    eprintln!(
        "{orb} client over TLS against ours: {} checks passed",
        j["passed"]
    );
}

/// `scripts/orbs/<orb>/client --target IORFILE ARGS --tls-…` (at most
/// 300 s); its stdout.
fn run_vendor_client(orb: &str, ior_file: &Path, pki: &TestPki, args: &[&str]) -> String {
    let mut c = Command::new(root().join(format!("scripts/orbs/{orb}/client")));
    c.arg("--target")
        .arg(ior_file)
        .args(args)
        .arg("--tls-cert")
        .arg(&pki.client_cert)
        .arg("--tls-key")
        .arg(&pki.client_key)
        .arg("--tls-ca")
        .arg(&pki.ca)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let child = Proc(c.spawn().expect("vendor client starts"));
    let (tx, rx) = mpsc::channel();
    let mut child = child;
    let mut stdout = child.0.stdout.take().unwrap();
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut s);
        let _ = tx.send(s);
    });
    rx.recv_timeout(Duration::from_secs(300))
        .unwrap_or_else(|_| panic!("{orb} client finished within 300 s"))
}

#[test]
fn omniorb_client_over_tls_against_ours() {
    vendor_client_against_ours("omniorb");
}

#[test]
fn our_client_over_tls_against_jacorb() {
    our_client_against("jacorb");
}

#[test]
fn jacorb_client_over_tls_against_ours() {
    vendor_client_against_ours("jacorb");
}
