//! The interop checks of the server's own maximum message size
//! (`interop --peer-max-message-size`), end to end: against our server
//! told the same limit (`serve --max-message-size`, both server models)
//! every check passes; against our server without it (a server that
//! ignores the limit), behind a relay that swallows what is above it (a
//! server that hangs) and behind one that then serves no one (a server
//! that crashed) the refusal checks fail, saying so; without the option
//! they are skips naming it. And, when omniORB is built (a
//! failure in CI when it is not), against its bench server run with
//! `-ORBgiopMaxMsgSize`. JacORB has no maximum message size to configure.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::serve_in_process as serve;
use serde_json::Value;

/// The limit the servers here are run with: small, so the checks are
/// quick.
const LIMIT: &str = "65536";

fn tmp(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "iiopbench-limits-test-{}-{name}",
        std::process::id()
    ))
}

/// The quick suite against the server whose reference is `target`, with
/// `extra` options: its exit status and the checks by name.
fn suite(target: &str, name: &str, extra: &[&str]) -> (i32, Vec<Value>) {
    let json = tmp(&format!("{name}.json"));
    let mut v = vec![
        "iiopbench",
        "interop",
        "--quick",
        "--quiet",
        "--target",
        target,
        "--json",
        json.to_str().unwrap(),
    ];
    v.extend_from_slice(extra);
    let code = iiopbench::main_with_args(v);
    let text = std::fs::read_to_string(&json).unwrap();
    std::fs::remove_file(&json).unwrap();
    let j: Value = serde_json::from_str(&text).unwrap();
    (code, j["cases"].as_array().unwrap().to_vec())
}

/// The names of the checks of the server's limit, in run order.
fn checks() -> Vec<String> {
    let mut v = Vec::new();
    for giop in ["1.2", "1.1", "1.0"] {
        for order in ["LE", "BE"] {
            v.push(format!(
                "request below the server's maximum message size -> echoed, GIOP {giop} {order}"
            ));
            v.push(format!(
                "request above the server's maximum message size -> refused, no hang, \
                 GIOP {giop} {order}"
            ));
            if giop == "1.2" {
                v.push(format!(
                    "request above the server's maximum message size in Fragments below it \
                     -> refused, no hang, GIOP {giop} {order}"
                ));
            }
        }
    }
    v
}

/// The checks of the server's limit in `cases`: (name, result, detail),
/// all of them, in run order.
fn limit_checks(cases: &[Value]) -> Vec<(String, String, String)> {
    let got: Vec<(String, String, String)> = cases
        .iter()
        .filter(|c| {
            c["name"]
                .as_str()
                .unwrap()
                .contains("the server's maximum message size")
        })
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["extra"]["result"].as_str().unwrap().to_string(),
                c["extra"]["detail"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let names: Vec<&String> = got.iter().map(|g| &g.0).collect();
    assert_eq!(names, checks().iter().collect::<Vec<_>>());
    got
}

fn is_below(name: &str) -> bool {
    name.starts_with("request below")
}

/// The suite against our server run with `serve --max-message-size` (and
/// `more`): every check of the limit passes, and what the server did is
/// in the detail.
fn passes_against_ours(more: &[&str]) {
    let srv = serve(&[&["--max-message-size", LIMIT], more].concat());
    let ior = srv.refs().ior.to_string();
    let (code, cases) = suite(&ior, "ours", &["--peer-max-message-size", "64KiB"]);
    assert_eq!(code, 0, "{more:?}");
    for (name, result, detail) in limit_checks(&cases) {
        assert_eq!(result, "pass", "{more:?} {name}: {detail}");
        if is_below(&name) {
            assert!(
                detail.starts_with("echo_octet of 65468 octets in a 65528-byte Request")
                    && detail.contains("echoed exactly in "),
                "{name}: {detail}"
            );
        } else {
            assert!(
                detail.starts_with(
                    "a 65612-byte Request (65600 bytes after the header, limit 65536)"
                ) && detail.contains(": answered MessageError (")
                    && detail.ends_with("; a new connection is served"),
                "{more:?} {name}: {detail}"
            );
        }
    }
    // The large echo is above the limit: a skip naming it, not a failure.
    let large = cases
        .iter()
        .find(|c| c["name"] == "echo octet 3MiB (above 2 MiB)")
        .unwrap();
    assert_eq!(large["extra"]["result"], "skip", "{large}");
    assert!(
        large["extra"]["detail"]
            .as_str()
            .unwrap()
            .contains("--peer-max-message-size 65536 bytes"),
        "{large}"
    );
}

#[test]
fn limit_checks_pass_against_our_reactor_server() {
    passes_against_ours(&[]);
}

#[test]
fn limit_checks_pass_against_our_thread_per_connection_server() {
    passes_against_ours(&["--server-model", "threads"]);
}

/// Without the option the checks are skips that name it, as the
/// command line spells it (in the JSON and the JUnit XML too).
#[test]
fn without_the_option_the_limit_checks_are_skips_naming_it() {
    let srv = serve(&[]);
    let ior = srv.refs().ior.to_string();
    let junit = tmp("none.xml");
    let (code, cases) = suite(&ior, "none", &["--junit", junit.to_str().unwrap()]);
    assert_eq!(code, 0);
    let why = "the server's maximum message size is not known: give the limit it is \
        configured with as --peer-max-message-size";
    for (name, result, detail) in limit_checks(&cases) {
        assert_eq!(result, "skip", "{name}");
        assert_eq!(detail, why, "{name}");
    }
    let xml = std::fs::read_to_string(&junit).unwrap();
    std::fs::remove_file(&junit).unwrap();
    let escaped = why.replace('\'', "&apos;");
    assert_eq!(xml.matches(&escaped).count(), 14, "{xml}");
    assert!(!xml.contains("`peer_max_message_size`"), "{xml}");
}

/// A server that takes more than it was said to: our server without a
/// limit of 64 KiB. The requests above it are echoed: each refusal check
/// fails saying the limit was not enforced.
#[test]
fn a_server_that_ignores_the_limit_fails_the_refusal_checks() {
    let srv = serve(&[]);
    let ior = srv.refs().ior.to_string();
    let (code, cases) = suite(&ior, "ignores", &["--peer-max-message-size", LIMIT]);
    assert_eq!(code, 1);
    refusals_fail(
        &cases,
        ": echoed all 65552 octets: the limit of 65536 bytes was not enforced (",
    );
}

/// Each check below the limit in `cases` passes, and each refusal check
/// fails with `why` in its detail, other connections still served.
fn refusals_fail(cases: &[Value], why: &str) {
    for (name, result, detail) in limit_checks(cases) {
        if is_below(&name) {
            assert_eq!(result, "pass", "{name}: {detail}");
            continue;
        }
        assert_eq!(result, "fail", "{name}: {detail}");
        assert!(
            detail.contains(why) && detail.ends_with("; a new connection is served"),
            "{name}: {detail}"
        );
    }
}

/// What the relay of [`relay`] does with a message above the limit.
#[derive(Clone, Copy, PartialEq)]
enum Above {
    /// Swallow it and answer nothing: a server that hangs.
    Hang,
    /// Drop the connection, and every connection after: a server that
    /// crashed.
    Crash,
}

/// A relay to `upstream` on 127.0.0.1 that passes every GIOP message
/// client to server except those above `limit` bytes after the header,
/// and the rest of a fragmented one once its pieces add up to more: those
/// it treats as `above` says. Replies pass unchanged. Stops accepting
/// when dropped.
struct Relay {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl Relay {
    /// A reference to `srv`'s object through the relay.
    fn ior_of(&self, srv: &iiop_bench_idl::run::RunningServer) -> String {
        let key = srv.refs().ior.iiop_profile().unwrap().object_key;
        iiop_giop::Ior::iiop("IDL:Bench/Perf:1.0", "127.0.0.1", self.addr.port(), key).to_string()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect(self.addr);
    }
}

fn relay(upstream: SocketAddr, limit: usize, above: Above) -> Relay {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let crashed = Arc::new(AtomicBool::new(false));
    std::thread::spawn(move || {
        for client in l.incoming() {
            if stopped.load(Ordering::SeqCst) {
                break;
            }
            let Ok(client) = client else { continue };
            if crashed.load(Ordering::SeqCst) {
                continue;
            }
            let Ok(server) = TcpStream::connect(upstream) else {
                continue;
            };
            let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            let (mut s_in, mut c_out) = (server, client);
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut s_in, &mut c_out);
                let _ = c_out.shutdown(Shutdown::Both);
            });
            let crash = (above == Above::Crash).then(|| crashed.clone());
            std::thread::spawn(move || {
                let _ = pass_below(&mut c_in, &mut s_out, limit, crash.as_deref());
                let _ = c_in.shutdown(Shutdown::Both);
                let _ = s_out.shutdown(Shutdown::Both);
            });
        }
    });
    Relay { addr, stop }
}

/// Copy GIOP messages `from` → `to`, swallowing those above `limit`; or,
/// with `crash`, setting it and returning at the first.
fn pass_below(
    from: &mut TcpStream,
    to: &mut TcpStream,
    limit: usize,
    crash: Option<&AtomicBool>,
) -> std::io::Result<()> {
    // Bytes so far of the fragmented message in progress, and whether
    // it is being swallowed.
    let (mut partial, mut swallowing) = (0usize, false);
    loop {
        let mut h = [0u8; 12];
        from.read_exact(&mut h)?;
        let size = if h[6] & 1 == 1 {
            u32::from_le_bytes(h[8..12].try_into().unwrap())
        } else {
            u32::from_be_bytes(h[8..12].try_into().unwrap())
        } as usize;
        let more = h[5] >= 1 && h[6] & 2 != 0;
        let fragment = h[7] == 7;
        if !fragment {
            partial = 0;
            swallowing = false;
        }
        partial += size;
        swallowing |= size > limit || partial > limit;
        if let (true, Some(crashed)) = (swallowing, crash) {
            crashed.store(true, Ordering::SeqCst);
            return Ok(());
        }
        let mut body = vec![0; size];
        from.read_exact(&mut body)?;
        if !swallowing {
            to.write_all(&h)?;
            to.write_all(&body)?;
        }
        if !more {
            partial = 0;
            swallowing = false;
        }
    }
}

/// A server that hangs on what is above its limit: our server (no limit)
/// behind a [`relay`] that swallows it. Each refusal check fails within the timeout
/// given, saying it hung, and that other connections are still served.
#[test]
fn a_server_that_hangs_above_the_limit_fails_the_refusal_checks() {
    let srv = serve(&[]);
    let relay = relay(srv.addr(), 65536, Above::Hang);
    let ior = relay.ior_of(&srv);
    let t = std::time::Instant::now();
    let (code, cases) = suite(
        &ior,
        "hangs",
        &["--peer-max-message-size", LIMIT, "--timeout", "1s"],
    );
    let took = t.elapsed();
    assert_eq!(code, 1);
    refusals_fail(&cases, ": neither answered nor closed within 1s (a hang) (");
    // 7 waits of 1 s, and the rest of the quick suite.
    assert!(took < Duration::from_secs(60), "took {took:?}");
    drop(relay);
}

/// A server that crashes on what is above its limit: our server behind a
/// [`relay`] that drops the connection and serves no one after. The
/// first refusal check fails, saying the server stopped serving; the
/// echo before it passed. (A limit of 128 KiB: the check of our own
/// limit before them sends 64 KiB.)
#[test]
fn a_server_that_crashes_above_the_limit_fails_the_refusal_check() {
    let srv = serve(&[]);
    let relay = relay(srv.addr(), 128 << 10, Above::Crash);
    let ior = relay.ior_of(&srv);
    let (code, cases) = suite(
        &ior,
        "crashes",
        &["--peer-max-message-size", "128KiB", "--timeout", "1s"],
    );
    assert_eq!(code, 1);
    let checks = limit_checks(&cases);
    assert_eq!(checks[0].1, "pass", "{:?}", checks[0]);
    let (name, result, detail) = &checks[1];
    assert_eq!(result, "fail", "{name}: {detail}");
    assert!(
        detail.contains(": closed the connection (")
            && detail.contains("; then a new connection's ping: ")
            && detail.ends_with(" (the server stopped serving)"),
        "{name}: {detail}"
    );
    drop(relay);
}

/// omniORB's bench server run with `-ORBgiopMaxMsgSize 65536`: every
/// check passes. A whole Request above the limit gets MessageError (any
/// GIOP version); one in Fragments below it MARSHAL with omniORB's minor
/// code 18, MARSHAL_SequenceIsTooLong (it reads the pieces and refuses
/// the sequence whose length is above what the limit leaves).
#[test]
fn limit_checks_pass_against_omniorb_with_its_giop_max_msg_size() {
    if !common::vendor_built("interop limits omniORB", "omniorb", true) {
        return;
    }
    let ior = tmp("omniorb.ior");
    let _srv = common::vendor_server_with("omniorb", &ior, &["-ORBgiopMaxMsgSize", LIMIT]);
    let (code, cases) = suite(
        ior.to_str().unwrap(),
        "omniorb",
        &["--peer-max-message-size", LIMIT],
    );
    let _ = std::fs::remove_file(&ior);
    assert_eq!(code, 0);
    for (name, result, detail) in limit_checks(&cases) {
        assert_eq!(result, "pass", "{name}: {detail}");
        let want = if is_below(&name) {
            "echoed exactly in "
        } else if name.contains("in Fragments") {
            ": answered MARSHAL minor 0x41540012 (OmniOrb) completed COMPLETED_NO ("
        } else {
            ": answered MessageError ("
        };
        assert!(detail.contains(want), "{name}: {detail}");
    }
}
