//! The proxy over real sockets in front of our own server, one test per
//! fault, each reading the proxy's recording back with the capture crate
//! to show the fault on the wire: the pieces and writes on each leg, the
//! messages each side sent and received, what was injected.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use iiop_bench_idl::client::BenchClient;
use iiop_bench_idl::reference::Forwarding;
use iiop_bench_idl::run::{RunningServer, ServerOptions};
use iiop_capture::net;
use iiop_capture::source::for_each_packet;
use iiop_cdr::{ByteOrder, Options};
use iiop_giop::codec::{CodecConfig, Decoder};
use iiop_giop::context::{default_options, ServiceContext, SC_CODE_SETS};
use iiop_giop::header::{Header, MsgType, Version};
use iiop_giop::message::{encode_request, RequestHead};
use iiop_giop::{Ior, Message, ReplyStatus, ResponseMode, TargetAddress};
use iiop_transport::ClientConfig;
use iiopbench_engine::proxy::{Proxy, ProxyConfig, RelayStats};

fn tmp(name: &str) -> PathBuf {
    std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "iiopbench-proxy-test-{}-{name}",
        std::process::id()
    ))
}

fn server() -> RunningServer {
    RunningServer::start(ServerOptions {
        threads: 1,
        ..ServerOptions::default()
    })
    .unwrap()
}

/// A proxy with `spec` in front of `target`, recording to `file`.
fn proxy(target: &Ior, spec: &str, file: &Path) -> Proxy {
    let mut cfg = ProxyConfig::new(target.clone(), spec.parse().unwrap());
    cfg.record = Some(file.to_path_buf());
    Proxy::start(cfg).unwrap()
}

/// One recorded TCP connection: its ends and each direction's segment
/// payloads (0: from `client`, 1: from `server`).
#[derive(Debug)]
struct Conn {
    client: SocketAddr,
    server: SocketAddr,
    segs: [Vec<Vec<u8>>; 2],
    fins: usize,
}

impl Conn {
    fn stream(&self, d: usize) -> Vec<u8> {
        self.segs[d].concat()
    }

    /// GIOP pieces in direction `d`: (header, total length).
    fn pieces(&self, d: usize) -> Vec<(Header, usize)> {
        let s = self.stream(d);
        let mut v = Vec::new();
        let mut at = 0;
        while at + 12 <= s.len() {
            let Ok(h) = Header::parse(&s[at..]) else {
                break;
            };
            v.push((h, h.total_len()));
            at += h.total_len();
        }
        v
    }

    /// Whole messages in direction `d`, reassembled and decoded.
    fn messages(&self, d: usize) -> Vec<Message> {
        let mut buf = BytesMut::from(&self.stream(d)[..]);
        let mut dec = Decoder::new(CodecConfig::default());
        let mut v = Vec::new();
        while let Ok(Some(f)) = dec.decode(&mut buf) {
            let version = f.header.version;
            v.push(Message::decode_frame(f, default_options(version)).unwrap());
        }
        v
    }

    fn types(&self, d: usize) -> Vec<MsgType> {
        self.messages(d).iter().map(Message::msg_type).collect()
    }
}

/// Every TCP connection in the recording, in the order they started.
fn wire(file: &Path) -> Vec<Conn> {
    let mut conns: Vec<Conn> = Vec::new();
    let f = std::fs::File::open(file).unwrap();
    for_each_packet(f, |p| {
        let s = net::parse(p.linktype, p.data).unwrap();
        if s.syn && !conns.iter().any(|c| c.client == s.dst && c.server == s.src) {
            if !conns.iter().any(|c| c.client == s.src && c.server == s.dst) {
                conns.push(Conn {
                    client: s.src,
                    server: s.dst,
                    segs: [Vec::new(), Vec::new()],
                    fins: 0,
                });
            }
            return true;
        }
        let c = conns
            .iter_mut()
            .find(|c| {
                (c.client, c.server) == (s.src, s.dst) || (c.client, c.server) == (s.dst, s.src)
            })
            .expect("a segment of a known connection");
        let d = usize::from(c.client != s.src);
        if s.fin {
            c.fins += 1;
        }
        if !s.payload.is_empty() {
            c.segs[d].push(s.payload.to_vec());
        }
        true
    })
    .unwrap();
    let _ = std::fs::remove_file(file);
    conns
}

/// The two legs of the one relayed connection: (client ↔ proxy,
/// proxy ↔ server).
fn legs(conns: &[Conn], proxy: SocketAddr, server: SocketAddr) -> (&Conn, &Conn) {
    let a = conns
        .iter()
        .find(|c| c.server == proxy)
        .expect("client leg");
    let b = conns
        .iter()
        .find(|c| c.server == server)
        .expect("server leg");
    (a, b)
}

fn request(v: Version, id: u32, op: &str, body: &[u8], ctx: &[ServiceContext]) -> Vec<u8> {
    let target = TargetAddress::Key(Bytes::from_static(b"Bench"));
    let head = RequestHead {
        request_id: id,
        response: ResponseMode::Twoway,
        target: &target,
        operation: op,
        contexts: ctx,
    };
    let mut buf = BytesMut::new();
    encode_request(
        &mut buf,
        v,
        ByteOrder::Little,
        Options::default(),
        &head,
        |w| w.write_octet_seq(body),
    )
    .unwrap();
    buf.to_vec()
}

/// A raw GIOP client on one socket.
struct Raw {
    s: TcpStream,
    buf: BytesMut,
    dec: Decoder,
}

impl Raw {
    fn connect(addr: SocketAddr) -> Raw {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Raw {
            s,
            buf: BytesMut::new(),
            dec: Decoder::new(CodecConfig::default()),
        }
    }

    fn send(&mut self, b: &[u8]) {
        self.s.write_all(b).unwrap();
    }

    /// The next whole message, or `None` when the connection ends.
    fn recv(&mut self) -> Option<Message> {
        loop {
            if let Some(f) = self.dec.decode(&mut self.buf).unwrap() {
                let v = f.header.version;
                return Some(Message::decode_frame(f, default_options(v)).unwrap());
            }
            let mut chunk = [0u8; 65536];
            match self.s.read(&mut chunk) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }
}

fn reply_id(m: &Message) -> u32 {
    match m {
        Message::Reply(r) => r.header.request_id,
        other => panic!("not a reply: {other:?}"),
    }
}

fn octets(m: &Message) -> Vec<u8> {
    let Message::Reply(r) = m else {
        panic!("{m:?}")
    };
    assert_eq!(r.header.status, ReplyStatus::NoException);
    r.body
        .reader(Options::default())
        .read_octet_seq()
        .unwrap()
        .to_vec()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn stop(p: Proxy) -> RelayStats {
    p.stop().unwrap()
}

/// No faults: every byte passes unchanged both ways, and the references
/// the server hands out (a forward to another server, `get_single`'s
/// result) lead back through the proxy, which fronts the other server on
/// a listener of its own.
#[test]
fn references_lead_back_through_the_proxy() {
    let b = server();
    let a = RunningServer::start(ServerOptions {
        threads: 1,
        forwarding: Some(Forwarding {
            permanent: false,
            to: Some(("127.0.0.1".into(), b.addr().port())),
        }),
        ..ServerOptions::default()
    })
    .unwrap();
    // A short key, which `a` forwards to `b`.
    let target: Ior = format!("corbaloc:iiop:1.2@127.0.0.1:{}/Bench", a.addr().port())
        .parse::<iiop_giop::Corbaloc>()
        .unwrap()
        .to_ior("IDL:Bench/Perf:1.0")
        .unwrap();
    let file = tmp("refs.pcapng");
    let p = proxy(&target, "none", &file);
    let via = p.ior().iiop_profile().unwrap();
    assert_eq!(
        (via.host.as_str(), via.port),
        ("127.0.0.1", p.addr().port())
    );
    let (forward, single) = rt().block_on(async {
        let c = BenchClient::connect(p.ior(), &ClientConfig::default())
            .await
            .unwrap();
        c.ping().await.unwrap();
        let fwd = c.forwarded_to().expect("the short key was forwarded");
        let single = c.get_single(7).await.unwrap();
        let s = BenchClient::connect(&single, &ClientConfig::default())
            .await
            .unwrap();
        s.request("op", ResponseMode::Twoway, |_| Ok(()))
            .await
            .unwrap();
        (fwd, single)
    });
    let st = stop(p);
    // Both point at the one listener fronting `b`, not at `b`.
    let f = forward.iiop_profile().unwrap();
    let s = single.iiop_profile().unwrap();
    assert_eq!(f.host, "127.0.0.1");
    assert_ne!(f.port, b.addr().port());
    assert_ne!(f.port, via.port);
    assert_eq!(s.port, f.port);
    assert!(f.alternate_addresses().is_empty());
    assert_eq!(st.references_rewritten, 2);
    let conns = wire(&file);
    // Client connections to the two listeners, and the proxy's to a and b.
    assert!(conns.iter().any(|c| c.server.port() == via.port));
    assert!(conns.iter().any(|c| c.server.port() == f.port));
    assert!(conns.iter().any(|c| c.server == a.addr()));
    assert!(conns.iter().any(|c| c.server == b.addr()));
    // Untouched bytes: what a client leg carried to the proxy is what the
    // server leg carried to `a` (the first connection: ping on `Bench`).
    let (cl, sl) = legs(&conns, p_addr(&conns, via.port), a.addr());
    assert_eq!(cl.stream(0), sl.stream(0));
    assert!(cl.fins == 2 && sl.fins == 2);
}

fn p_addr(conns: &[Conn], port: u16) -> SocketAddr {
    conns
        .iter()
        .find(|c| c.server.port() == port)
        .unwrap()
        .server
}

/// `fragment=64,dribble=7`: the request reaches the server in pieces of
/// at most 64 bytes, the reply reaches the client likewise, every write
/// the proxy made is at most 7 bytes; the echo is exact.
#[test]
fn fragment_and_dribble_show_on_the_wire() {
    let srv = server();
    let file = tmp("frag.pcapng");
    let p = proxy(&srv.refs().ior, "fragment=64,dribble=7", &file);
    let mut c = Raw::connect(p.addr());
    let body: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
    c.send(&request(Version::V1_2, 1, "echo_octet", &body, &[]));
    let r = c.recv().unwrap();
    assert_eq!(octets(&r), body);
    drop(c);
    let paddr = p.addr();
    let st = stop(p);
    assert_eq!(st.fragmented, 2);
    let conns = wire(&file);
    let (cl, sl) = legs(&conns, paddr, srv.addr());
    for (leg, d) in [(sl, 0), (cl, 1)] {
        let pieces = leg.pieces(d);
        assert!(pieces.len() >= 16, "{}", pieces.len());
        assert!(pieces[0].0.more_fragments);
        assert!(pieces.iter().all(|(_, n)| *n <= 64));
        assert!(pieces[1..]
            .iter()
            .all(|(h, _)| h.msg_type == MsgType::Fragment));
        // The proxy's writes.
        assert!(leg.segs[d].iter().all(|s| s.len() <= 7));
    }
    // The client's own write came whole to the proxy.
    assert_eq!(cl.segs[0].len(), 1);
}

/// `delay=200ms`: the reply reaches the client no sooner than 200 ms
/// after the proxy had it (a lower bound: the machine may add, never
/// take away).
#[test]
fn delay_holds_replies() {
    let srv = server();
    let file = tmp("delay.pcapng");
    let p = proxy(&srv.refs().ior, "delay=200ms", &file);
    let mut c = Raw::connect(p.addr());
    let t = Instant::now();
    c.send(&request(Version::V1_2, 1, "echo_octet", b"abc", &[]));
    assert_eq!(octets(&c.recv().unwrap()), b"abc");
    assert!(
        t.elapsed() >= Duration::from_millis(200),
        "{:?}",
        t.elapsed()
    );
    let st = stop(p);
    assert_eq!(st.delayed, 1);
    let _ = std::fs::remove_file(&file);
}

/// `reorder`: two requests in flight on one connection; the server
/// answers them in order, the client gets the second answer first.
#[test]
fn reorder_swaps_independent_replies() {
    let srv = server();
    let file = tmp("reorder.pcapng");
    let p = proxy(&srv.refs().ior, "reorder=2s", &file);
    let mut c = Raw::connect(p.addr());
    let mut both = request(Version::V1_1, 1, "echo_octet", b"one", &[]);
    both.extend(request(Version::V1_1, 2, "echo_octet", b"two", &[]));
    c.send(&both);
    let first = c.recv().unwrap();
    let second = c.recv().unwrap();
    assert_eq!((reply_id(&first), octets(&first)), (2, b"two".to_vec()));
    assert_eq!((reply_id(&second), octets(&second)), (1, b"one".to_vec()));
    drop(c);
    let paddr = p.addr();
    assert_eq!(stop(p).reordered, 1);
    let conns = wire(&file);
    let (cl, sl) = legs(&conns, paddr, srv.addr());
    let ids = |c: &Conn| c.messages(1).iter().map(reply_id).collect::<Vec<_>>();
    assert_eq!(ids(sl), [1, 2]);
    assert_eq!(ids(cl), [2, 1]);
}

/// `strip-codesets`: our client sends a CodeSets context on its first
/// request (the IOR has TAG_CODE_SETS); the server never sees it.
#[test]
fn strip_codesets_removes_the_context_on_the_wire() {
    let srv = server();
    let file = tmp("strip.pcapng");
    let p = proxy(&srv.refs().ior, "strip-codesets", &file);
    let paddr = p.addr();
    rt().block_on(async {
        for v in [Version::V1_1, Version::V1_2] {
            let cfg = ClientConfig {
                version: Some(v),
                ..ClientConfig::default()
            };
            let c = BenchClient::connect(p.ior(), &cfg).await.unwrap();
            let e = c
                .request("echo_double", ResponseMode::Twoway, |w| {
                    w.write_seq(&[1.5f64, 2.5])
                })
                .await
                .unwrap()
                .unwrap();
            let back: Vec<f64> = e.body.reader(c.options()).read_seq().unwrap();
            assert_eq!(back, [1.5, 2.5], "{v}");
            c.close();
        }
    });
    let st = stop(p);
    assert_eq!(st.stripped, 2);
    assert_eq!(
        st.fillers, 1,
        "GIOP 1.1 kept its body aligned with a filler"
    );
    let conns = wire(&file);
    let has_cs = |c: &Conn| {
        c.messages(0).iter().any(
            |m| matches!(m, Message::Request(r) if r.header.contexts.get(SC_CODE_SETS).is_some()),
        )
    };
    let client_legs: Vec<&Conn> = conns.iter().filter(|c| c.server == paddr).collect();
    let server_legs: Vec<&Conn> = conns.iter().filter(|c| c.server == srv.addr()).collect();
    assert_eq!((client_legs.len(), server_legs.len()), (2, 2));
    assert!(client_legs.iter().all(|c| has_cs(c)));
    assert!(server_legs.iter().all(|c| !has_cs(c)));
}

/// `close-after=2`: after a request and its reply the client's next
/// request is not passed on; the client gets CloseConnection and the
/// connection ends.
#[test]
fn close_after_injects_close_connection() {
    let srv = server();
    let file = tmp("close.pcapng");
    let p = proxy(&srv.refs().ior, "close-after=2", &file);
    let mut c = Raw::connect(p.addr());
    c.send(&request(Version::V1_0, 1, "echo_octet", b"a", &[]));
    assert_eq!(reply_id(&c.recv().unwrap()), 1);
    c.send(&request(Version::V1_0, 2, "echo_octet", b"b", &[]));
    assert_eq!(c.recv().unwrap(), Message::CloseConnection);
    assert_eq!(c.recv(), None);
    let paddr = p.addr();
    let st = stop(p);
    assert_eq!(st.close_connections, 1);
    let conns = wire(&file);
    let (cl, sl) = legs(&conns, paddr, srv.addr());
    assert_eq!(sl.types(0), [MsgType::Request]);
    assert_eq!(cl.types(1), [MsgType::Reply, MsgType::CloseConnection]);
    // In the client's GIOP version.
    assert_eq!(cl.pieces(1)[1].0.version, Version::V1_0);
}

/// `message-error-after=1`: the second message (the reply) is answered
/// with a MessageError to the server; the client's connection ends.
#[test]
fn message_error_after_injects_message_error() {
    let srv = server();
    let file = tmp("merr.pcapng");
    let p = proxy(&srv.refs().ior, "message-error-after=1", &file);
    let mut c = Raw::connect(p.addr());
    c.send(&request(Version::V1_2, 1, "echo_octet", b"a", &[]));
    assert_eq!(c.recv(), None);
    let paddr = p.addr();
    assert_eq!(stop(p).message_errors, 1);
    let conns = wire(&file);
    let (cl, sl) = legs(&conns, paddr, srv.addr());
    assert_eq!(sl.types(0), [MsgType::Request, MsgType::MessageError]);
    assert_eq!(sl.types(1), [MsgType::Reply]);
    assert!(cl.types(1).is_empty());
}

/// `duplicate=1`: the server gets the request twice and answers twice;
/// the client gets two replies to one request.
#[test]
fn duplicate_sends_a_message_twice() {
    let srv = server();
    let file = tmp("dup.pcapng");
    let p = proxy(&srv.refs().ior, "duplicate=1", &file);
    let mut c = Raw::connect(p.addr());
    c.send(&request(Version::V1_2, 7, "echo_octet", b"x", &[]));
    assert_eq!(reply_id(&c.recv().unwrap()), 7);
    assert_eq!(reply_id(&c.recv().unwrap()), 7);
    drop(c);
    let paddr = p.addr();
    assert_eq!(stop(p).duplicated, 1);
    let conns = wire(&file);
    let (cl, sl) = legs(&conns, paddr, srv.addr());
    let reqs = sl.pieces(0);
    assert_eq!(reqs.len(), 2);
    let s = sl.stream(0);
    assert_eq!(s[..reqs[0].1], s[reqs[0].1..]);
    assert_eq!(cl.types(1), [MsgType::Reply, MsgType::Reply]);
}

/// `corrupt=1@0`: the request reaches the server with its first byte's
/// bits flipped (no longer `GIOP`); our server answers MessageError,
/// which the client gets.
#[test]
fn corrupt_flips_one_byte() {
    let srv = server();
    let file = tmp("corrupt.pcapng");
    let p = proxy(&srv.refs().ior, "corrupt=1@0", &file);
    let mut c = Raw::connect(p.addr());
    let req = request(Version::V1_2, 1, "echo_octet", b"x", &[]);
    c.send(&req);
    assert_eq!(c.recv(), Some(Message::MessageError));
    let paddr = p.addr();
    assert_eq!(stop(p).corrupted, 1);
    let conns = wire(&file);
    let (cl, sl) = legs(&conns, paddr, srv.addr());
    let got = sl.stream(0);
    assert_eq!(got.len(), req.len());
    assert_eq!(got[0], b'G' ^ 0xff);
    assert_eq!(got[1..], req[1..]);
    assert_eq!(cl.stream(0), req);
}

/// `fragment=64,fragment11`: a GIOP 1.1 echo of doubles reaches our
/// server in 1.1 Fragments (no request id, each Fragment's data aligned
/// from its own header) and the doubles come back exact, the reply
/// fragmented likewise.
#[test]
fn giop_11_fragments_reach_the_server_intact() {
    let srv = server();
    let file = tmp("frag11.pcapng");
    let p = proxy(&srv.refs().ior, "fragment=64,fragment11", &file);
    let mut c = Raw::connect(p.addr());
    let target = TargetAddress::Key(Bytes::from_static(b"Bench"));
    let head = RequestHead {
        request_id: 3,
        response: ResponseMode::Twoway,
        target: &target,
        operation: "echo_double",
        contexts: &[],
    };
    let values: Vec<f64> = (0..50).map(|i| i as f64 * 1.25 - 7.0).collect();
    let mut buf = BytesMut::new();
    encode_request(
        &mut buf,
        Version::V1_1,
        ByteOrder::Big,
        Options::default(),
        &head,
        |w| w.write_seq(&values),
    )
    .unwrap();
    c.send(&buf);
    let Message::Reply(r) = c.recv().unwrap() else {
        panic!()
    };
    assert_eq!(r.header.status, ReplyStatus::NoException);
    let back: Vec<f64> = r.body.reader(Options::default()).read_seq().unwrap();
    assert_eq!(back, values);
    drop(c);
    let paddr = p.addr();
    assert_eq!(stop(p).fragmented, 2);
    let conns = wire(&file);
    let (cl, sl) = legs(&conns, paddr, srv.addr());
    for (leg, d) in [(sl, 0), (cl, 1)] {
        let pieces = leg.pieces(d);
        assert!(pieces.len() > 5);
        assert!(pieces
            .iter()
            .all(|(h, n)| *n <= 64 && h.version == Version::V1_1));
        assert!(pieces[1..]
            .iter()
            .all(|(h, _)| h.msg_type == MsgType::Fragment));
    }
}

/// `--record x.json`: what passed is kept as the `pcap` command's
/// results (both legs, the call paired with its reply), and the pcapng
/// it was analysed from is gone.
#[test]
fn a_json_recording_is_the_pcap_commands_results() {
    let srv = server();
    let file = tmp("rec.json");
    let p = proxy(&srv.refs().ior, "none", &file);
    let mut c = Raw::connect(p.addr());
    c.send(&request(Version::V1_2, 1, "echo_octet", b"x", &[]));
    assert!(matches!(c.recv(), Some(Message::Reply(_))));
    drop(c);
    stop(p);
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(j["kind"], "pcap");
    let text = j.to_string();
    assert!(text.contains("echo_octet"), "{text}");
    assert!(!file.with_extension("json.pcapng.part").exists());
    let _ = std::fs::remove_file(&file);
}
