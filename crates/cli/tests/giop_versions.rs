//! GIOP versions between our client and a peer, with the binary run as a
//! user runs it.
//!
//! A peer that answers in another GIOP version than it was asked: a tiny
//! raw-TCP server written here answers every GIOP 1.0 Request with the
//! GIOP 1.2 Reply bytes seen in the field (NO_EXCEPTION, no contexts, empty
//! body; only the request id is its request's) and every LocateRequest
//! with a 1.2 LocateReply OBJECT_HERE. `bench latency` must exit 1 naming
//! both versions and the peer as the one at fault, and `interop` must fail
//! a named check saying the same.
//!
//! A peer that speaks GIOP 1.0 only (our server behind a relay that
//! answers any other version with MessageError and hangs up): `interop`
//! against its `corbaloc:iiop:1.0@…` sends GIOP 1.0 only and passes.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::BytesMut;
use iiop_giop::codec::Decoder;
use iiop_giop::context::default_options;
use iiop_giop::message::Message;
use serde_json::Value;

/// The field's reply to request id 7, as bytes (little-endian 1.2).
const REPLY_12: [u8; 24] = [
    0x47, 0x49, 0x4f, 0x50, 1, 2, 1, 1, 0x0c, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
];

/// A raw-TCP peer listening on 127.0.0.1: `serve` runs on a thread per
/// connection and must return within 100 ms of the stop flag; stopped,
/// and its threads joined, on drop.
struct Peer {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Peer {
    fn start(serve: impl Fn(TcpStream, &AtomicBool) + Send + Sync + 'static) -> Peer {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let port = l.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let serve = Arc::new(serve);
        let thread = std::thread::spawn(move || {
            let mut conns = Vec::new();
            while !s.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok((c, _)) => {
                        let (s, serve) = (s.clone(), serve.clone());
                        conns.push(std::thread::spawn(move || serve(c, &s)));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
            for c in conns {
                let _ = c.join();
            }
        });
        Peer {
            port,
            stop,
            thread: Some(thread),
        }
    }

    /// `corbaloc:iiop:1.0@…/Bench` of this peer.
    fn corbaloc(&self) -> String {
        format!("corbaloc:iiop:1.0@127.0.0.1:{}/Bench", self.port)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One connection: every twoway Request gets [`REPLY_12`] with its id,
/// every LocateRequest a 1.2 OBJECT_HERE.
fn answer(mut c: TcpStream, stop: &AtomicBool) {
    c.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut dec = Decoder::default();
    let mut buf = BytesMut::new();
    let mut chunk = [0u8; 64 * 1024];
    while !stop.load(Ordering::Relaxed) {
        let n = match c.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => continue,
            Err(_) => return,
        };
        buf.extend_from_slice(&chunk[..n]);
        loop {
            let f = match dec.decode(&mut buf) {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(_) => return,
            };
            let opts = default_options(f.header.version);
            let out = match Message::decode(&f.header, f.payload, opts) {
                Ok(Message::Request(r)) if r.header.response.expects_reply() => {
                    let mut b = REPLY_12.to_vec();
                    b[12..16].copy_from_slice(&r.header.request_id.to_le_bytes());
                    b
                }
                Ok(Message::LocateRequest(l)) => {
                    let mut b = vec![0x47, 0x49, 0x4f, 0x50, 1, 2, 1, 4, 8, 0, 0, 0];
                    b.extend_from_slice(&l.request_id.to_le_bytes());
                    b.extend_from_slice(&1u32.to_le_bytes());
                    b
                }
                _ => continue,
            };
            if c.write_all(&out).is_err() {
                return;
            }
        }
    }
}

/// The built binary with `args`, bounded by a 60 s watchdog: exit
/// status, stdout, stderr.
fn iiopbench(args: &[&str]) -> (i32, String, String) {
    let r = common::iiopbench_bounded(args, Duration::from_secs(60));
    (r.code.unwrap_or(-1), r.stdout, r.stderr)
}

/// What the quick `interop` against `target` ended with: exit status,
/// stdout, stderr, and the results it wrote (parsed, and as text).
struct Interop {
    code: i32,
    out: String,
    err: String,
    json: Value,
    text: String,
}

fn interop_quick(target: &str, name: &str) -> Interop {
    let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-{name}-{}.json", std::process::id()));
    let (code, out, err) = iiopbench(&[
        "interop",
        "--target",
        target,
        "--quick",
        "--quiet",
        "--json",
        path.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let _ = std::fs::remove_file(&path);
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    Interop {
        code,
        out,
        err,
        json,
        text,
    }
}

/// The peer's error in the words our client uses.
const NAMED: &str = "Reply in GIOP 1.2 to a GIOP 1.0 Request from 127.0.0.1:";
const BLAME: &str = "(the peer's error: an answer must be in its request's GIOP version)";

#[test]
fn bench_latency_exits_1_naming_both_versions() {
    let peer = Peer::start(answer);
    let target = peer.corbaloc();
    let (code, out, err) = iiopbench(&[
        "bench", "latency", "--target", &target, "--count", "20", "--warmup", "2", "--quiet",
    ]);
    drop(peer);
    assert_eq!(code, 1, "stdout {out}\nstderr {err}");
    assert!(
        err.contains(NAMED) && err.contains(BLAME),
        "stderr does not name both versions and the peer: {err}"
    );
}

#[test]
fn interop_fails_a_named_check() {
    let peer = Peer::start(answer);
    let r = interop_quick(&peer.corbaloc(), "reply-version");
    let (j, text) = (&r.json, &r.text);
    drop(peer);
    assert_eq!(r.code, 1, "stdout {}\nstderr {}", r.out, r.err);
    let check = |name: &str| -> Value {
        j["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no check {name:?} in {text}"))
            .clone()
    };
    // The named check, and every other check that got such a reply
    // (`ping` on the main connection here) says the same.
    for name in ["reply GIOP version GIOP 1.0 LE", "ping"] {
        let c = check(name);
        assert_eq!(c["extra"]["result"], "fail", "{c}");
        let d = c["extra"]["detail"].as_str().unwrap();
        assert!(d.contains(NAMED) && d.contains(BLAME), "{name}: {d}");
    }
    // The table a person reads names it too.
    assert!(
        r.out.contains("reply GIOP version GIOP 1.0 LE"),
        "{}",
        r.out
    );
}

/// Our server behind a relay that lets GIOP 1.0 through and answers any
/// other version with a GIOP 1.0 MessageError, then closes (a 1.0-only
/// peer); it counts the client's messages by version (`1.0`, `1.2` …).
struct OnlyGiop10 {
    peer: Peer,
    seen: Arc<Mutex<BTreeMap<String, u64>>>,
    _server: iiop_bench_idl::run::RunningServer,
}

impl OnlyGiop10 {
    fn start() -> OnlyGiop10 {
        let server =
            iiop_bench_idl::run::RunningServer::start(iiop_bench_idl::run::ServerOptions {
                listen: "127.0.0.1:0".into(),
                threads: 2,
                ..Default::default()
            })
            .unwrap();
        let upstream = server.addr();
        let seen = Arc::new(Mutex::new(BTreeMap::new()));
        let counts = seen.clone();
        let peer = Peer::start(move |c, stop| {
            let up = TcpStream::connect(upstream).unwrap();
            relay(c, up, stop, &counts)
        });
        OnlyGiop10 {
            peer,
            seen,
            _server: server,
        }
    }
}

/// One connection: the server's bytes back verbatim (a thread of their
/// own); the client's message by message, refused unless GIOP 1.0.
fn relay(
    mut client: TcpStream,
    up: TcpStream,
    stop: &AtomicBool,
    seen: &Mutex<BTreeMap<String, u64>>,
) {
    let mut up_reader = up.try_clone().unwrap();
    let mut back = client.try_clone().unwrap();
    up_reader
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let downstream = std::thread::spawn(move || {
        let mut chunk = vec![0u8; 64 * 1024];
        while !d.load(Ordering::Relaxed) {
            match up_reader.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    if back.write_all(&chunk[..n]).is_err() {
                        break;
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => break,
            }
        }
        let _ = back.shutdown(std::net::Shutdown::Both);
    });
    client
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut up = up;
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    'conn: while !stop.load(Ordering::Relaxed) && !done.load(Ordering::Relaxed) {
        match client.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(_) => break,
        }
        // Whole messages only: the header's size in its byte order.
        while buf.len() >= 12 {
            let little = buf[6] & 1 == 1;
            let b = [buf[8], buf[9], buf[10], buf[11]];
            let size = if little {
                u32::from_le_bytes(b)
            } else {
                u32::from_be_bytes(b)
            } as usize;
            if buf.len() < 12 + size {
                break;
            }
            let version = format!("{}.{}", buf[4], buf[5]);
            *seen.lock().unwrap().entry(version).or_default() += 1;
            if &buf[..4] != b"GIOP" || buf[4..6] != [1, 0] {
                let _ = client.write_all(b"GIOP\x01\x00\x00\x06\0\0\0\0");
                break 'conn;
            }
            if up.write_all(&buf[..12 + size]).is_err() {
                break 'conn;
            }
            buf.drain(..12 + size);
        }
    }
    done.store(true, Ordering::Relaxed);
    let _ = client.shutdown(std::net::Shutdown::Both);
    let _ = up.shutdown(std::net::Shutdown::Both);
    let _ = downstream.join();
}

/// `interop` against `corbaloc:iiop:1.0@…` of a GIOP 1.0-only peer sends
/// GIOP 1.0 and nothing else: nothing fails, the echo sets of higher
/// versions are skipped with the reason, and the relay saw 1.0 only.
#[test]
fn interop_by_corbaloc_10_sends_giop_10_only() {
    let peer = OnlyGiop10::start();
    let r = interop_quick(&peer.peer.corbaloc(), "giop10-only");
    let (j, text) = (&r.json, &r.text);
    let seen = peer.seen.lock().unwrap().clone();
    drop(peer);
    assert_eq!(r.code, 0, "stdout {}\nstderr {}", r.out, r.err);
    assert_eq!(seen.keys().collect::<Vec<_>>(), ["1.0"], "{seen:?}");
    assert!(seen["1.0"] > 100, "{seen:?}");
    assert_eq!(j["params"]["failed"], 0, "{text}");
    let skips: Vec<&Value> = j["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["extra"]["result"] == "skip")
        .collect();
    let skipped: Vec<&str> = skips.iter().map(|c| c["name"].as_str().unwrap()).collect();
    // The field checks that speak GIOP 1.2 are skipped too, saying why
    // (all but the one about our own maximum message size and the non-ASCII strings of GIOP 1.0), and the four
    // bidirectional ones (bidirectional GIOP is GIOP 1.2 only, through
    // raw probes or through our client driver); so are
    // the 14 checks of the server's maximum message size: those of GIOP
    // 1.2 and 1.1 for the version, those of 1.0 for want of the limit.
    for c in &skips[7..] {
        let name = c["name"].as_str().unwrap();
        let why = c["extra"]["detail"].as_str().unwrap();
        if name.contains("the server's maximum message size") && name.contains("GIOP 1.0") {
            assert!(why.ends_with("as --peer-max-message-size"), "{c}");
        } else {
            assert!(why.contains("the reference publishes GIOP 1.0"), "{c}");
        }
    }
    assert_eq!(skips.len(), 7 + 31 + 4 + 14, "{skipped:?}");
    assert_eq!(
        skipped[..7],
        [
            "echo GIOP 1.2 LE",
            "echo GIOP 1.2 BE",
            "echo GIOP 1.1 LE",
            "echo wchar GIOP 1.0 LE",
            "echo wstring GIOP 1.0 LE",
            "echo GIOP 1.2 LE frag1024",
            "any: wstring",
        ]
    );
    let reason = j["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "echo GIOP 1.1 LE")
        .unwrap()["extra"]["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reason.starts_with("not sent: the reference asks for GIOP 1.0"),
        "{reason}"
    );
}
