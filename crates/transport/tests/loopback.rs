//! Our client against our server over loopback: every message type, both
//! byte orders, all three GIOP versions, oneway ordering, fragmentation in
//! both directions, timeouts, closing servers, forwarding, many requests
//! in flight, request reuse, pooling, graceful shutdown and idle close.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use iiop_cdr::{ByteOrder, Options, Reader, Writer};
use iiop_giop::codec::CodecConfig;
use iiop_giop::context::CodeSetContext;
use iiop_giop::exception::{Completion, SystemException, MINOR_BAD_OPERATION_UNKNOWN};
use iiop_giop::ior::Ior;
use iiop_giop::message::{LocateStatus, ReplyStatus, ResponseMode, TargetAddress};
use iiop_giop::Version;
use iiop_transport::client::reply_result;
use iiop_transport::server::handle_builtin;
use iiop_transport::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

const TYPE_ID: &str = "IDL:Test/Echo:1.0";

#[derive(Default)]
struct TestHandler {
    marks: Mutex<Vec<u32>>,
    code_sets: Mutex<Vec<Option<CodeSetContext>>>,
    port: Mutex<u16>,
}

impl TestHandler {
    fn echo_ior(&self) -> Ior {
        Ior::iiop(
            TYPE_ID,
            "127.0.0.1",
            *self.port.lock().unwrap(),
            &b"echo"[..],
        )
    }
}

impl Handler for TestHandler {
    fn handle(
        &self,
        req: &RequestContext<'_>,
        body: &mut Reader<'_>,
        reply: &mut Writer<'_>,
    ) -> Dispatch {
        let bad = || Dispatch::Done(Outcome::System(SystemException::marshal(1, Completion::No)));
        match req.object_key {
            b"echo" => {}
            b"fwd" => return Dispatch::Done(Outcome::Forward(self.echo_ior())),
            b"fwdperm" => return Dispatch::Done(Outcome::ForwardPerm(self.echo_ior())),
            b"loop" => {
                let me = Ior::iiop(
                    TYPE_ID,
                    "127.0.0.1",
                    *self.port.lock().unwrap(),
                    &b"loop"[..],
                );
                return Dispatch::Done(Outcome::Forward(me));
            }
            _ => return Dispatch::Done(Outcome::System(SystemException::unknown_object())),
        }
        self.code_sets
            .lock()
            .unwrap()
            .push(req.contexts.code_sets().unwrap());
        if let Some(d) = handle_builtin(req, body, reply, &[TYPE_ID]) {
            return d;
        }
        match req.operation {
            "echo_long" => match body.read_u32() {
                Ok(v) => reply.write_u32(v),
                Err(_) => return bad(),
            },
            "echo_octets" => match body.read_octet_seq() {
                Ok(s) => reply.write_octet_seq(s).unwrap(),
                Err(_) => return bad(),
            },
            "echo_wstring" => match body.read_wstring() {
                Ok(s) => reply.write_wstring(&s).unwrap(),
                Err(_) => return bad(),
            },
            "mark" => match body.read_u32() {
                Ok(v) => self.marks.lock().unwrap().push(v),
                Err(_) => return bad(),
            },
            "marks" => {
                let m = self.marks.lock().unwrap();
                reply.write_seq(&m[..]).unwrap();
            }
            "sleep" => {
                let Ok(ms) = body.read_u32() else {
                    return bad();
                };
                let order = req.reply_order;
                return Dispatch::Async(Box::pin(async move {
                    tokio::time::sleep(Duration::from_millis(ms as u64)).await;
                    let mut b = BytesMut::new();
                    Writer::new(&mut b, order).write_u32(ms);
                    AsyncReply {
                        outcome: Outcome::Reply,
                        body: b.freeze(),
                    }
                }));
            }
            "oops" => {
                reply.write_string("IDL:Test/Oops:1.0").unwrap();
                reply.write_u32(77);
                return Dispatch::Done(Outcome::UserException);
            }
            _ => return Dispatch::Done(Outcome::System(SystemException::unknown_operation())),
        }
        Dispatch::Done(Outcome::Reply)
    }

    fn locate(&self, key: &[u8]) -> LocateOutcome {
        match key {
            b"echo" => LocateOutcome::Here,
            b"fwd" => LocateOutcome::Forward(self.echo_ior()),
            _ => LocateOutcome::Unknown,
        }
    }
}

struct Server {
    port: u16,
    handler: Arc<TestHandler>,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Server {
    async fn start(cfg: ServerConfig) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let handler = Arc::new(TestHandler::default());
        *handler.port.lock().unwrap() = port;
        let (stop, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(serve(listener, handler.clone(), cfg, async {
            let _ = rx.await;
        }));
        Server {
            port,
            handler,
            stop: Some(stop),
            task,
        }
    }

    fn ior(&self, key: &str) -> Ior {
        Ior::iiop(TYPE_ID, "127.0.0.1", self.port, key.as_bytes().to_vec())
    }

    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(5), self.task)
            .await
            .expect("server stops")
            .unwrap()
            .unwrap();
    }
}

fn key(k: &str) -> TargetAddress {
    TargetAddress::Key(Bytes::copy_from_slice(k.as_bytes()))
}

async fn connect(port: u16, version: Version, order: ByteOrder) -> Connection {
    let cfg = ClientConfig {
        order,
        ..ClientConfig::default()
    };
    Connection::connect("127.0.0.1", port, version, &cfg, None)
        .await
        .unwrap()
}

async fn echo_long(c: &Connection, v: u32) -> u32 {
    let r = c
        .request(&key("echo"), "echo_long", ResponseMode::Twoway, |w| {
            w.write_u32(v);
            Ok(())
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.header.status, ReplyStatus::NoException);
    r.body.reader(c.options()).read_u32().unwrap()
}

/// 200 `mark` oneways, then `marks`: the server saw them all, in order.
async fn marks_in_order(c: &Connection, handler: &TestHandler, what: &str) {
    send_marks(c, handler).await;
    marks_arrived(c, what).await;
}

/// 200 `mark` oneways, numbered from 1 (the handler's marks cleared first).
async fn send_marks(c: &Connection, handler: &TestHandler) {
    handler.marks.lock().unwrap().clear();
    for i in 1..=200u32 {
        let r = c
            .request(&key("echo"), "mark", ResponseMode::Oneway, |w| {
                w.write_u32(i);
                Ok(())
            })
            .await
            .unwrap();
        assert!(r.is_none());
    }
}

/// `marks`: the server saw the 200 marks, in order.
async fn marks_arrived(c: &Connection, what: &str) {
    let r = c
        .request(&key("echo"), "marks", ResponseMode::Twoway, |_| Ok(()))
        .await
        .unwrap()
        .unwrap();
    let marks = r.body.reader(Options::default()).read_seq::<u32>().unwrap();
    assert_eq!(marks, (1..=200).collect::<Vec<_>>(), "{what}");
}

const VERSIONS: [Version; 3] = [Version::V1_0, Version::V1_1, Version::V1_2];
const ORDERS: [ByteOrder; 2] = [ByteOrder::Big, ByteOrder::Little];

#[tokio::test]
async fn twoway_oneway_locate_in_every_version_and_order() {
    let s = Server::start(ServerConfig::default()).await;
    for v in VERSIONS {
        for o in ORDERS {
            let c = connect(s.port, v, o).await;
            assert_eq!(echo_long(&c, 0xDEAD_BEEF).await, 0xDEAD_BEEF);
            // Oneways keep their order, and a twoway after them sees all.
            marks_in_order(&c, &s.handler, &format!("{v} {o:?}")).await;
            // LocateRequest.
            assert_eq!(
                c.locate(&key("echo")).await.unwrap().status,
                LocateStatus::ObjectHere
            );
            assert_eq!(
                c.locate(&key("nope")).await.unwrap().status,
                LocateStatus::UnknownObject
            );
            match c.locate(&key("fwd")).await.unwrap().status {
                LocateStatus::ObjectForward(i) => {
                    assert_eq!(&i.iiop_profile().unwrap().object_key[..], b"echo")
                }
                st => panic!("{st:?}"),
            }
            // Builtins.
            let r = c
                .request(&key("echo"), "_is_a", ResponseMode::Twoway, |w| {
                    w.write_string(TYPE_ID)
                })
                .await
                .unwrap()
                .unwrap();
            assert!(r.body.reader(Options::default()).read_bool().unwrap());
        }
    }
    s.stop().await;
}

#[tokio::test]
async fn exceptions_unknown_key_and_operation_user_exception() {
    let s = Server::start(ServerConfig::default()).await;
    for v in VERSIONS {
        let c = connect(s.port, v, ByteOrder::Little).await;
        let r = c
            .request(&key("nope"), "echo_long", ResponseMode::Twoway, |w| {
                w.write_u32(1);
                Ok(())
            })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            reply_result(r).unwrap_err(),
            ClientError::System(SystemException::object_not_exist(
                0x4F4D_0001,
                Completion::No
            ))
        );
        let r = c
            .request(&key("echo"), "frobnicate", ResponseMode::Twoway, |_| Ok(()))
            .await
            .unwrap()
            .unwrap();
        match reply_result(r).unwrap_err() {
            ClientError::System(e) => {
                assert_eq!(e.name(), "BAD_OPERATION");
                assert_eq!(e.minor, MINOR_BAD_OPERATION_UNKNOWN);
            }
            e => panic!("{e}"),
        }
        let r = c
            .request(&key("echo"), "oops", ResponseMode::Twoway, |_| Ok(()))
            .await
            .unwrap()
            .unwrap();
        match reply_result(r).unwrap_err() {
            ClientError::User { repo_id, body } => {
                assert_eq!(repo_id, "IDL:Test/Oops:1.0");
                let mut rd = body.reader(Options::default());
                rd.read_string().unwrap();
                assert_eq!(rd.read_u32().unwrap(), 77);
            }
            e => panic!("{e}"),
        }
        // A body that does not decode: the handler's MARSHAL.
        let r = c
            .request(&key("echo"), "echo_long", ResponseMode::Twoway, |_| Ok(()))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(r.header.status, ReplyStatus::SystemException);
        assert_eq!(r.system_exception().unwrap().name(), "MARSHAL");
    }
    s.stop().await;
}

#[tokio::test]
async fn many_requests_in_flight_on_one_connection() {
    let s = Server::start(ServerConfig::default()).await;
    let c = connect(s.port, Version::V1_2, ByteOrder::NATIVE).await;
    let mut set = tokio::task::JoinSet::new();
    for i in 0..500u32 {
        let c = c.clone();
        set.spawn(async move { (i, echo_long(&c, i * 3).await) });
    }
    let mut n = 0;
    while let Some(r) = set.join_next().await {
        let (i, v) = r.unwrap();
        assert_eq!(v, i * 3);
        n += 1;
    }
    assert_eq!(n, 500);
    // Async handlers interleave: a slow one does not hold up a fast one.
    let slow = {
        let c = c.clone();
        tokio::spawn(async move {
            c.request(&key("echo"), "sleep", ResponseMode::Twoway, |w| {
                w.write_u32(1000);
                Ok(())
            })
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(echo_long(&c, 5).await, 5);
    assert!(!slow.is_finished(), "the fast call overtook the slow one");
    let r = slow.await.unwrap().unwrap().unwrap();
    assert_eq!(r.body.reader(Options::default()).read_u32().unwrap(), 1000);
    s.stop().await;
}

/// A server that fragments its replies at 1000 bytes.
async fn fragmenting_server() -> Server {
    Server::start(ServerConfig {
        fragment_size: Some(1000),
        ..ServerConfig::default()
    })
    .await
}

/// 100 000 bytes of a pattern: spliced by the client, fragmented both ways.
fn big_payload() -> Vec<u8> {
    (0..100_000u32).map(|i| (i * 7) as u8).collect()
}

#[tokio::test]
async fn fragmentation_both_ways_and_size_limit() {
    let s = fragmenting_server().await;
    let cfg = ClientConfig {
        fragment_size: Some(4096),
        ..ClientConfig::default()
    };
    let c = Connection::connect("127.0.0.1", s.port, Version::V1_2, &cfg, None)
        .await
        .unwrap();
    let payload = big_payload();
    let r = c
        .request(&key("echo"), "echo_octets", ResponseMode::Twoway, |w| {
            w.write_octet_seq(&payload)
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        r.body.reader(Options::default()).read_octet_seq().unwrap(),
        &payload[..]
    );
    s.stop().await;

    // A server with a small maximum answers a bigger message with
    // MessageError and closes.
    let s = Server::start(ServerConfig {
        codec: CodecConfig {
            max_message_size: 1000,
            max_reassembled_size: 1000,
        },
        ..ServerConfig::default()
    })
    .await;
    let c = connect(s.port, Version::V1_2, ByteOrder::Big).await;
    let e = c
        .request(&key("echo"), "echo_octets", ResponseMode::Twoway, |w| {
            w.write_octet_seq(&payload[..5000])
        })
        .await
        .unwrap_err();
    assert_eq!(
        e,
        ClientError::PeerMessageError {
            addr: format!("127.0.0.1:{}", s.port)
        }
    );
    assert!(c.is_closed());
    s.stop().await;
}

#[tokio::test]
async fn timeouts_then_the_connection_still_works() {
    let s = Server::start(ServerConfig::default()).await;
    let cfg = ClientConfig {
        request_timeout: Some(Duration::from_millis(50)),
        ..ClientConfig::default()
    };
    let c = Connection::connect("127.0.0.1", s.port, Version::V1_2, &cfg, None)
        .await
        .unwrap();
    let t0 = std::time::Instant::now();
    let e = c
        .request(&key("echo"), "sleep", ResponseMode::Twoway, |w| {
            w.write_u32(400);
            Ok(())
        })
        .await
        .unwrap_err();
    // The reaper sleeps until the deadline: late by the timer's
    // resolution plus scheduling.
    assert_timed_out_after_50ms(&e, t0.elapsed());
    assert_eq!(echo_long(&c, 11).await, 11);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sooner_deadline_wakes_the_reaper_sleeping_on_a_later_one() {
    let s = Server::start(ServerConfig::default()).await;
    let c = Connection::connect(
        "127.0.0.1",
        s.port,
        Version::V1_2,
        &ClientConfig::default(),
        None,
    )
    .await
    .unwrap();
    let sleep = |c: Connection, ms: u32, timeout: Duration| async move {
        let t0 = std::time::Instant::now();
        let r = c
            .request_with(
                &key("echo"),
                "sleep",
                ResponseMode::Twoway,
                &[],
                Some(timeout),
                |w| {
                    w.write_u32(ms);
                    Ok(())
                },
            )
            .await;
        (r, t0.elapsed())
    };
    // In flight with a deadline 10 s away: the reaper sleeps on it.
    let long = tokio::spawn(sleep(c.clone(), 600, Duration::from_secs(10)));
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (r, took) = sleep(c.clone(), 400, Duration::from_millis(50)).await;
    assert_timed_out_after_50ms(&r.unwrap_err(), took);
    // The long one is not disturbed and answers.
    let (r, _) = tokio::time::timeout(Duration::from_secs(5), long)
        .await
        .unwrap()
        .unwrap();
    r.unwrap();
    s.stop().await;
}

#[tokio::test]
async fn a_timed_out_request_is_cancelled_on_the_wire() {
    let (port, srv) = silent_server().await;
    let cfg = ClientConfig {
        order: ByteOrder::Big,
        request_timeout: Some(Duration::from_millis(30)),
        ..ClientConfig::default()
    };
    let c = Connection::connect("127.0.0.1", port, Version::V1_2, &cfg, None)
        .await
        .unwrap();
    let e = c
        .request(&key("echo"), "echo_long", ResponseMode::Twoway, |w| {
            w.write_u32(1);
            Ok(())
        })
        .await
        .unwrap_err();
    let ClientError::Timeout { request_id, .. } = e else {
        panic!("{e}")
    };
    drop(c);
    let (sent_id, cancel, _) = tokio::time::timeout(Duration::from_secs(5), srv)
        .await
        .expect("the CancelRequest arrives")
        .unwrap();
    assert_eq!(request_id, sent_id);
    assert_eq!(cancel.to_vec(), cancel_request(sent_id));
}

/// A server that reads one request and never answers: the request's id,
/// the 16 bytes after it (a CancelRequest, in these tests), and whatever
/// else arrives until the client hangs up.
async fn silent_server() -> (u16, tokio::task::JoinHandle<(u32, [u8; 16], Vec<u8>)>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let srv = tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut head = [0u8; 12];
        s.read_exact(&mut head).await.unwrap();
        assert_eq!((&head[..4], head[7]), (&b"GIOP"[..], 0), "a Request");
        let size = u32::from_be_bytes(head[8..12].try_into().unwrap()) as usize;
        let mut body = vec![0u8; size];
        s.read_exact(&mut body).await.unwrap();
        let request_id = u32::from_be_bytes(body[..4].try_into().unwrap());
        let mut cancel = [0u8; 16];
        s.read_exact(&mut cancel).await.unwrap();
        let mut rest = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest))
            .await
            .unwrap()
            .unwrap();
        (request_id, cancel, rest)
    });
    (port, srv)
}

/// A GIOP 1.2 big-endian CancelRequest for `id`.
fn cancel_request(id: u32) -> Vec<u8> {
    let mut want = b"GIOP\x01\x02\x00\x02\0\0\0\x04".to_vec();
    want.extend_from_slice(&id.to_be_bytes());
    want
}

/// A timeout of 50 ms: never early, and not much late.
fn assert_timed_out_after_50ms(e: &ClientError, took: Duration) {
    assert!(
        took >= Duration::from_millis(50) && took < Duration::from_millis(250),
        "timed out after {took:?}"
    );
    assert!(
        matches!(e, ClientError::Timeout { after, .. } if *after == Duration::from_millis(50)),
        "{e}"
    );
}

#[tokio::test]
async fn server_that_closes_mid_request() {
    // Reads the request, then hangs up without a word.
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let srv = tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut b = [0u8; 64];
        let _ = s.read(&mut b).await.unwrap();
        drop(s);
        // Second connection: answer with CloseConnection.
        let (mut s, _) = l.accept().await.unwrap();
        let _ = s.read(&mut b).await.unwrap();
        s.write_all(b"GIOP\x01\x02\x01\x05\0\0\0\0").await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    });
    let c = connect(port, Version::V1_2, ByteOrder::Little).await;
    let e = c
        .request(&key("echo"), "echo_long", ResponseMode::Twoway, |w| {
            w.write_u32(1);
            Ok(())
        })
        .await
        .unwrap_err();
    assert_eq!(
        e,
        ClientError::Closed {
            addr: format!("127.0.0.1:{port}"),
            retryable: false
        }
    );
    // New requests on the dead connection fail at once.
    assert!(c.is_closed());
    let c = connect(port, Version::V1_2, ByteOrder::Little).await;
    let e = c
        .request(&key("echo"), "echo_long", ResponseMode::Twoway, |w| {
            w.write_u32(1);
            Ok(())
        })
        .await
        .unwrap_err();
    assert!(e.is_retryable(), "{e}");
    srv.await.unwrap();
}

#[tokio::test]
async fn location_forward_is_followed_and_bounded() {
    let s = Server::start(ServerConfig::default()).await;
    for v in [Version::V1_1, Version::V1_2] {
        let client = Client::new(ClientConfig {
            version: Some(v),
            ..ClientConfig::default()
        });
        for k in ["fwd", "fwdperm"] {
            let body = client
                .call(&s.ior(k), "echo_long", |w| {
                    w.write_u32(99);
                    Ok(())
                })
                .await
                .unwrap();
            assert_eq!(body.reader(Options::default()).read_u32().unwrap(), 99);
        }
        match client
            .invoke(
                &s.ior("loop"),
                "echo_long",
                ResponseMode::Twoway,
                |_| Ok(()),
            )
            .await
            .unwrap_err()
        {
            ClientError::TooManyForwards { addr, limit } => {
                assert_eq!(limit, 8);
                assert!(addr.starts_with("127.0.0.1:"), "{addr}");
            }
            other => panic!("expected TooManyForwards, got {other}"),
        }
        let (st, ior) = client.locate(&s.ior("fwd")).await.unwrap();
        assert_eq!(st, LocateStatus::ObjectHere);
        assert_eq!(&ior.iiop_profile().unwrap().object_key[..], b"echo");
    }
    s.stop().await;
}

#[tokio::test]
async fn code_sets_sent_once_and_wstrings_work() {
    let s = Server::start(ServerConfig::default()).await;
    let client = Client::new(ClientConfig::default());
    let ior = s.ior("echo");
    for _ in 0..2 {
        let body = client
            .call(&ior, "echo_wstring", |w| w.write_wstring("héllo wörld ✓"))
            .await
            .unwrap();
        let route = client.route(&ior).await.unwrap();
        let opts = route.connection.options();
        assert_eq!(body.reader(opts).read_wstring().unwrap(), "héllo wörld ✓");
    }
    let seen = s.handler.code_sets.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            Some(CodeSetContext {
                char_data: 0x0001_0001,
                wchar_data: 0x0001_0109
            }),
            None
        ]
    );
    s.stop().await;
}

#[tokio::test]
async fn a_locate_first_leaves_code_sets_to_the_first_request() {
    // A LocateRequest has no service contexts: the CodeSets context is
    // still due on the request after it, on either client.
    let s = Server::start(ServerConfig::default()).await;
    let cs = iiop_giop::context::CodeSetComponentInfo::default();
    let cfg = ClientConfig::default();
    let c = Connection::connect("127.0.0.1", s.port, Version::V1_2, &cfg, Some(&cs))
        .await
        .unwrap();
    assert_eq!(
        c.locate(&key("echo")).await.unwrap().status,
        LocateStatus::ObjectHere
    );
    assert_eq!(echo_long(&c, 1).await, 1);
    assert_eq!(echo_long(&c, 2).await, 2);
    let (port, handler) = (s.port, s.handler.clone());
    tokio::task::spawn_blocking(move || {
        let mut c =
            BlockingConnection::connect("127.0.0.1", port, Version::V1_2, &cfg, Some(&cs)).unwrap();
        assert_eq!(
            c.locate(&key("echo")).unwrap().status,
            LocateStatus::ObjectHere
        );
        assert_eq!(b_echo_long(&mut c, 3), 3);
        assert_eq!(b_echo_long(&mut c, 4), 4);
    })
    .await
    .unwrap();
    let seen = handler.code_sets.lock().unwrap().clone();
    assert_eq!(seen.len(), 4);
    for (i, c) in seen.iter().enumerate() {
        assert_eq!(c.is_some(), i % 2 == 0, "request {i}: {seen:?}");
    }
    s.stop().await;
}

#[tokio::test]
async fn prepared_requests_and_pool() {
    let s = Server::start(ServerConfig::default()).await;
    for v in VERSIONS {
        let c = connect(s.port, v, ByteOrder::Big).await;
        let p = c
            .prepare(&key("echo"), "echo_long", ResponseMode::Twoway, |w| {
                w.write_u32(42);
                Ok(())
            })
            .unwrap();
        let mut ids = Vec::new();
        for _ in 0..10 {
            let r = c.send_prepared(&p).await.unwrap().unwrap();
            assert_eq!(r.body.reader(Options::default()).read_u32().unwrap(), 42);
            ids.push(r.header.request_id);
        }
        ids.dedup();
        assert_eq!(ids.len(), 10, "fresh request id per send");
    }
    let client = Client::new(ClientConfig {
        pool_size: 3,
        ..ClientConfig::default()
    });
    let ior = s.ior("echo");
    let mut locals = Vec::new();
    for _ in 0..6 {
        locals.push(client.route(&ior).await.unwrap().connection.local_addr());
    }
    assert_eq!(
        locals[0..3]
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len(),
        3
    );
    assert_eq!(
        locals[3..6]
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len(),
        3
    );
    assert!(locals[3..6].iter().all(|a| locals[0..3].contains(a)));
    s.stop().await;
}

#[tokio::test]
async fn graceful_shutdown_finishes_in_flight_requests() {
    let s = Server::start(ServerConfig::default()).await;
    let c = connect(s.port, Version::V1_2, ByteOrder::Little).await;
    let slow = {
        let c = c.clone();
        tokio::spawn(async move {
            c.request(&key("echo"), "sleep", ResponseMode::Twoway, |w| {
                w.write_u32(200);
                Ok(())
            })
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    s.stop().await;
    let r = slow.await.unwrap().unwrap().unwrap();
    assert_eq!(r.body.reader(Options::default()).read_u32().unwrap(), 200);
    // After the CloseConnection the handle reports a retryable close.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let e = c
        .request(&key("echo"), "echo_long", ResponseMode::Twoway, |w| {
            w.write_u32(1);
            Ok(())
        })
        .await
        .unwrap_err();
    assert!(e.is_retryable(), "{e}");
}

#[tokio::test]
async fn idle_connections_are_closed_and_the_client_reconnects() {
    let s = Server::start(ServerConfig {
        idle_timeout: Some(Duration::from_millis(100)),
        ..ServerConfig::default()
    })
    .await;
    let client = Client::new(ClientConfig::default());
    let ior = s.ior("echo");
    let first = client.route(&ior).await.unwrap().connection;
    let b = client
        .call(&ior, "echo_long", |w| {
            w.write_u32(1);
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(b.reader(Options::default()).read_u32().unwrap(), 1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(first.is_closed());
    let b = client
        .call(&ior, "echo_long", |w| {
            w.write_u32(2);
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(b.reader(Options::default()).read_u32().unwrap(), 2);
    let second = client.route(&ior).await.unwrap().connection;
    assert_ne!(first.local_addr(), second.local_addr());
    s.stop().await;
}

#[tokio::test]
async fn malformed_input_gets_message_error() {
    let s = Server::start(ServerConfig::default()).await;
    let mut sock = tokio::net::TcpStream::connect(("127.0.0.1", s.port))
        .await
        .unwrap();
    sock.write_all(b"GIOP\x01\x02\x00\x09\0\0\0\0")
        .await
        .unwrap();
    let mut b = Vec::new();
    tokio::time::timeout(Duration::from_secs(2), sock.read_to_end(&mut b))
        .await
        .unwrap()
        .unwrap();
    // Magic and version are valid (only the type is not): the answer is
    // in that version, 1.2; our byte order.
    let flags = ByteOrder::NATIVE.flag();
    assert_eq!(
        &b[..],
        &[b'G', b'I', b'O', b'P', 1, 2, flags, 6, 0, 0, 0, 0]
    );
    assert_eq!(b.len(), 12);
    s.stop().await;
}

#[tokio::test]
async fn pre_marshalled_bodies() {
    let s = Server::start(ServerConfig::default()).await;
    let mut buf = BytesMut::new();
    Writer::new(&mut buf, ByteOrder::Big).write_u32(1234);
    let body = buf.freeze();
    let c = connect(s.port, Version::V1_2, ByteOrder::Big).await;
    for _ in 0..3 {
        let r = c
            .request_bytes(&key("echo"), "echo_long", ResponseMode::Twoway, &body)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(r.body.reader(Options::default()).read_u32().unwrap(), 1234);
    }
    // GIOP 1.0 with key "echo" and operation "echo_long": the header ends
    // at offset 52, 4 mod 8, so the body would be misaligned: refused.
    let c = connect(s.port, Version::V1_0, ByteOrder::Big).await;
    match c
        .request_bytes(&key("echo"), "echo_long", ResponseMode::Twoway, &body)
        .await
    {
        Err(ClientError::Encode(e)) => assert!(e.to_string().contains("offset 52"), "{e}"),
        r => panic!("{r:?}"),
    }
    assert_eq!(echo_long(&c, 3).await, 3, "the connection is unharmed");
    s.stop().await;
}

#[tokio::test]
async fn max_connections_holds_back_the_next_connection() {
    let s = Server::start(ServerConfig {
        max_connections: 1,
        ..ServerConfig::default()
    })
    .await;
    let a = connect(s.port, Version::V1_2, ByteOrder::Big).await;
    assert_eq!(echo_long(&a, 1).await, 1);
    let cfg = ClientConfig {
        request_timeout: Some(Duration::from_millis(200)),
        ..ClientConfig::default()
    };
    let b = Connection::connect("127.0.0.1", s.port, Version::V1_2, &cfg, None)
        .await
        .unwrap();
    let e = b
        .request(&key("echo"), "echo_long", ResponseMode::Twoway, |w| {
            w.write_u32(2);
            Ok(())
        })
        .await
        .unwrap_err();
    assert!(matches!(e, ClientError::Timeout { .. }), "{e}");
    a.close();
    drop(a);
    // Once the first connection is gone the second one is served.
    let mut served = false;
    for _ in 0..20 {
        match b
            .request(&key("echo"), "echo_long", ResponseMode::Twoway, |w| {
                w.write_u32(3);
                Ok(())
            })
            .await
        {
            Ok(Some(r)) => {
                assert_eq!(r.body.reader(Options::default()).read_u32().unwrap(), 3);
                served = true;
                break;
            }
            Err(ClientError::Timeout { .. }) => continue,
            r => panic!("{r:?}"),
        }
    }
    assert!(served);
    s.stop().await;
}

#[tokio::test]
async fn needs_addressing_mode_is_answered_with_the_asked_disposition() {
    use iiop_giop::codec::Decoder;
    use iiop_giop::message::{encode_reply, Message};
    // A hand-made server: KeyAddr gets NEEDS_ADDRESSING_MODE(ProfileAddr),
    // ProfileAddr gets a reply saying which disposition it saw.
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let srv = tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut d = Decoder::default();
        let mut inb = BytesMut::new();
        let mut seen = Vec::new();
        while seen.len() < 2 {
            let Some(f) = d.decode(&mut inb).unwrap() else {
                if s.read_buf(&mut inb).await.unwrap() == 0 {
                    break;
                }
                continue;
            };
            let Message::Request(r) =
                Message::decode(&f.header, f.payload, Options::default()).unwrap()
            else {
                continue;
            };
            let disp: i16 = match r.header.target {
                TargetAddress::Key(_) => 0,
                TargetAddress::Profile(_) => 1,
                TargetAddress::Reference { .. } => 2,
            };
            seen.push(disp);
            let mut out = BytesMut::new();
            let status = if disp == 0 {
                ReplyStatus::NeedsAddressingMode
            } else {
                ReplyStatus::NoException
            };
            encode_reply(
                &mut out,
                r.version,
                f.header.order,
                Options::default(),
                r.header.request_id,
                status,
                &[],
                |w| {
                    w.write_i16(if disp == 0 { 1 } else { disp });
                    Ok(())
                },
            )
            .unwrap();
            s.write_all(&out).await.unwrap();
        }
        seen
    });
    let client = Client::new(ClientConfig {
        version: Some(Version::V1_2),
        ..ClientConfig::default()
    });
    let ior = Ior::iiop(TYPE_ID, "127.0.0.1", port, &b"echo"[..]);
    let b = client.call(&ior, "op", |_| Ok(())).await.unwrap();
    assert_eq!(b.reader(Options::default()).read_i16().unwrap(), 1);
    assert_eq!(srv.await.unwrap(), vec![0, 1]);
}

/// A server that answers the first request with a 1.2 Reply for request 1
/// with status 9, then returns everything else the client sends.
async fn bad_reply_server() -> (u16, tokio::task::JoinHandle<Vec<u8>>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let srv = tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut b = [0u8; 256];
        let _ = s.read(&mut b).await.unwrap();
        s.write_all(
            b"GIOP\x01\x02\x00\x01\x00\x00\x00\x0c\x00\x00\x00\x01\x00\x00\x00\x09\x00\x00\x00\x00",
        )
        .await
        .unwrap();
        let mut rest = Vec::new();
        tokio::time::timeout(Duration::from_secs(2), s.read_to_end(&mut rest))
            .await
            .unwrap()
            .unwrap();
        rest
    });
    (port, srv)
}

#[tokio::test]
async fn malformed_reply_is_a_protocol_error_and_we_send_message_error() {
    let (port, srv) = bad_reply_server().await;
    let c = connect(port, Version::V1_2, ByteOrder::Big).await;
    let e = c
        .request(&key("echo"), "op", ResponseMode::Twoway, |_| Ok(()))
        .await
        .unwrap_err();
    assert_eq!(
        e,
        ClientError::Protocol {
            addr: format!("127.0.0.1:{port}"),
            error: iiop_giop::GiopError::BadValue {
                what: "reply status",
                value: 9,
                offset: 16
            }
        }
    );
    drop(c);
    let rest = srv.await.unwrap();
    assert_eq!(
        &rest[..12],
        b"GIOP\x01\x02\x00\x06\x00\x00\x00\x00",
        "MessageError first"
    );
}

// ---- BlockingConnection: the same server, waiting on read ------------------
// The blocking client runs on a blocking thread; the server on the runtime.

fn blocking(port: u16, version: Version, cfg: ClientConfig) -> BlockingConnection {
    BlockingConnection::connect("127.0.0.1", port, version, &cfg, None).unwrap()
}

fn b_echo_long(c: &mut BlockingConnection, v: u32) -> u32 {
    let r = c
        .request(&key("echo"), "echo_long", ResponseMode::Twoway, |w| {
            w.write_u32(v);
            Ok(())
        })
        .unwrap()
        .unwrap();
    assert_eq!(r.header.status, ReplyStatus::NoException);
    r.body.reader(c.options()).read_u32().unwrap()
}

/// [`marks_in_order`] on a blocking connection.
fn b_marks_in_order(c: &mut BlockingConnection, handler: &TestHandler, what: &str) {
    b_send_marks(c, handler);
    b_marks_arrived(c, what);
}

/// [`send_marks`] on a blocking connection.
fn b_send_marks(c: &mut BlockingConnection, handler: &TestHandler) {
    handler.marks.lock().unwrap().clear();
    for i in 1..=200u32 {
        let r = c
            .request(&key("echo"), "mark", ResponseMode::Oneway, |w| {
                w.write_u32(i);
                Ok(())
            })
            .unwrap();
        assert!(r.is_none());
    }
}

/// [`marks_arrived`] on a blocking connection.
fn b_marks_arrived(c: &mut BlockingConnection, what: &str) {
    let r = c
        .request(&key("echo"), "marks", ResponseMode::Twoway, |_| Ok(()))
        .unwrap()
        .unwrap();
    let marks = r.body.reader(Options::default()).read_seq::<u32>().unwrap();
    assert_eq!(marks, (1..=200).collect::<Vec<_>>(), "{what}");
}

/// A 150 ms sleep on a blocking connection whose timeout is 50 ms: it times
/// out late by at most a poll interval (1/16 of the timeout, at least 1 ms)
/// plus scheduling.
fn b_times_out_after_50ms(c: &mut BlockingConnection) {
    let t0 = std::time::Instant::now();
    let e = c
        .request(&key("echo"), "sleep", ResponseMode::Twoway, |w| {
            w.write_u32(150);
            Ok(())
        })
        .unwrap_err();
    assert_timed_out_after_50ms(&e, t0.elapsed());
}

/// echo_octets of `payload` on a blocking connection: the same bytes back.
fn b_echo_octets(c: &mut BlockingConnection, payload: &[u8]) {
    let r = c
        .request(&key("echo"), "echo_octets", ResponseMode::Twoway, |w| {
            w.write_octet_seq(payload)
        })
        .unwrap()
        .unwrap();
    assert_eq!(
        r.body.reader(c.options()).read_octet_seq().unwrap(),
        payload
    );
}

#[tokio::test]
async fn blocking_twoway_oneway_locate_prepared_in_every_version_and_order() {
    let s = Server::start(ServerConfig::default()).await;
    let (port, handler) = (s.port, s.handler.clone());
    tokio::task::spawn_blocking(move || {
        for v in VERSIONS {
            for o in ORDERS {
                let cfg = ClientConfig {
                    order: o,
                    ..ClientConfig::default()
                };
                let mut c = blocking(port, v, cfg);
                assert_eq!(b_echo_long(&mut c, 0xDEAD_BEEF), 0xDEAD_BEEF);
                b_marks_in_order(&mut c, &handler, &format!("{v} {o:?}"));
                assert_eq!(
                    c.locate(&key("echo")).unwrap().status,
                    LocateStatus::ObjectHere
                );
                assert_eq!(
                    c.locate(&key("nope")).unwrap().status,
                    LocateStatus::UnknownObject
                );
                // A user exception is a reply like any other.
                let r = c
                    .request(&key("echo"), "oops", ResponseMode::Twoway, |_| Ok(()))
                    .unwrap()
                    .unwrap();
                assert_eq!(r.header.status, ReplyStatus::UserException, "{v}");
                // Prepared once, sent three times with fresh ids.
                let p = c
                    .prepare(&key("echo"), "echo_long", ResponseMode::Twoway, |w| {
                        w.write_u32(42);
                        Ok(())
                    })
                    .unwrap();
                let mut ids = Vec::new();
                for _ in 0..3 {
                    let r = c.send_prepared(&p).unwrap().unwrap();
                    ids.push(r.header.request_id);
                    assert_eq!(r.body.reader(c.options()).read_u32().unwrap(), 42);
                }
                ids.dedup();
                assert_eq!(ids.len(), 3, "{ids:?}");
            }
        }
    })
    .await
    .unwrap();
    s.stop().await;
}

#[tokio::test]
async fn blocking_fragments_large_bodies_and_code_sets_go_once() {
    let s = fragmenting_server().await;
    let (port, handler) = (s.port, s.handler.clone());
    tokio::task::spawn_blocking(move || {
        // Spliced 100 KB bodies, fragmented by us (4 KiB) and by the
        // server (1000 bytes): the reply reassembles.
        let cfg = ClientConfig {
            fragment_size: Some(4096),
            ..ClientConfig::default()
        };
        let cs = iiop_giop::context::CodeSetComponentInfo::default();
        let mut c =
            BlockingConnection::connect("127.0.0.1", port, Version::V1_2, &cfg, Some(&cs)).unwrap();
        for _ in 0..2 {
            b_echo_octets(&mut c, &big_payload());
        }
        let seen = handler.code_sets.lock().unwrap().clone();
        assert_eq!(seen.len(), 2);
        assert!(seen[0].is_some(), "the first request carries CodeSets");
        assert_eq!(seen[1], None, "and only the first");
    })
    .await
    .unwrap();
    s.stop().await;
}

#[tokio::test]
async fn blocking_timeout_cancels_drops_the_late_reply_and_goes_on() {
    let s = Server::start(ServerConfig::default()).await;
    let port = s.port;
    tokio::task::spawn_blocking(move || {
        let cfg = ClientConfig {
            request_timeout: Some(Duration::from_millis(50)),
            ..ClientConfig::default()
        };
        let mut c = blocking(port, Version::V1_2, cfg);
        b_times_out_after_50ms(&mut c);
        assert!(!c.is_closed());
        // The late reply arrives first and is dropped.
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(b_echo_long(&mut c, 11), 11);
    })
    .await
    .unwrap();
    s.stop().await;
}

/// CPU time this thread has used.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a pointer to a timespec we own.
    assert_eq!(
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) },
        0
    );
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Time this thread wanted a CPU: on one, or runnable and waiting in a run
/// queue (`/proc/thread-self/schedstat`). A thread that polls wants a CPU
/// all along however busy the machine is, where its CPU time shrinks with
/// the share it gets; a blocked thread wants none. Lower bounds on
/// spinning use this, upper bounds use [`thread_cpu`].
fn thread_wanted() -> Duration {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
    let mut f = s.split_whitespace().map(|x| x.parse::<u64>().unwrap());
    let (on_cpu, waiting) = (f.next().unwrap(), f.next().unwrap());
    Duration::from_nanos(on_cpu + waiting)
}

#[tokio::test]
async fn blocking_spin_polls_first_then_blocks_and_keeps_every_rule() {
    let s = fragmenting_server().await;
    let port = s.port;
    tokio::task::spawn_blocking(move || {
        let spinning = |spin: Duration, timeout: Duration| {
            let cfg = ClientConfig {
                spin: Some(spin),
                request_timeout: Some(timeout),
                ..ClientConfig::default()
            };
            blocking(port, Version::V1_2, cfg)
        };
        // Replies that land while it polls, whole or in fragments.
        let mut c = spinning(Duration::from_millis(1), Duration::from_secs(5));
        for i in 0..300u32 {
            assert_eq!(b_echo_long(&mut c, i), i);
        }
        b_echo_octets(&mut c, &big_payload());

        // A reply later than the spin: it polls (the CPU works) for the
        // spin, then blocks (it does not) until the reply comes.
        let sleep_call = |c: &mut BlockingConnection, ms: u32| {
            let (t0, cpu0, wanted0) = (std::time::Instant::now(), thread_cpu(), thread_wanted());
            let r = c.request(&key("echo"), "sleep", ResponseMode::Twoway, |w| {
                w.write_u32(ms);
                Ok(())
            });
            let wanted = thread_wanted() - wanted0;
            (r, t0.elapsed(), thread_cpu() - cpu0, wanted)
        };
        let mut c = spinning(Duration::from_millis(20), Duration::from_secs(2));
        let (r, took, cpu, wanted) = sleep_call(&mut c, 60);
        assert_eq!(r.unwrap().unwrap().header.status, ReplyStatus::NoException);
        assert!(took >= Duration::from_millis(60), "{took:?}");
        assert!(
            wanted >= Duration::from_millis(10),
            "spun: wanted a CPU for {wanted:?}"
        );
        assert!(
            cpu < took / 2,
            "it blocked after the spin: {cpu:?} of {took:?}"
        );
        let mut plain = blocking(port, Version::V1_2, ClientConfig::default());
        let (r, _, cpu, _) = sleep_call(&mut plain, 60);
        assert_eq!(r.unwrap().unwrap().header.status, ReplyStatus::NoException);
        assert!(cpu < Duration::from_millis(2), "no spin: {cpu:?} of CPU");

        // Timeouts are as without it: the spin ends within a poll interval
        // (1/16 of 50 ms here, however long it was asked to be).
        let mut c = spinning(Duration::from_secs(10), Duration::from_millis(50));
        b_times_out_after_50ms(&mut c);
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(b_echo_long(&mut c, 5), 5);
    })
    .await
    .unwrap();
    s.stop().await;
}

#[test]
fn blocking_spin_also_waits_for_room_to_send() {
    // A peer that accepts and never reads: a 4 MB oneway fills the send
    // buffer and the write waits for room until the abort check says stop.
    static STOP: [std::sync::atomic::AtomicBool; 2] = [
        std::sync::atomic::AtomicBool::new(false),
        std::sync::atomic::AtomicBool::new(false),
    ];
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let held = std::thread::spawn(move || {
        let conns: Vec<_> = l.incoming().take(2).map(Result::unwrap).collect();
        std::thread::sleep(Duration::from_secs(1));
        drop(conns);
    });
    let payload = bytes::Bytes::from(vec![7u8; 4 << 20]);
    let mut cpus = Vec::new();
    let mut wanted = Vec::new();
    for (i, spin) in [Some(Duration::from_millis(50)), None]
        .into_iter()
        .enumerate()
    {
        let cfg = ClientConfig {
            spin,
            send_buffer: Some(8192),
            request_timeout: Some(Duration::from_secs(2)),
            ..ClientConfig::default()
        };
        let mut c = blocking(port, Version::V1_2, cfg);
        c.set_abort(if i == 0 {
            || STOP[0].load(std::sync::atomic::Ordering::Relaxed)
        } else {
            || STOP[1].load(std::sync::atomic::Ordering::Relaxed)
        });
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            STOP[i].store(true, std::sync::atomic::Ordering::Relaxed);
        });
        let (t0, cpu0, wanted0) = (std::time::Instant::now(), thread_cpu(), thread_wanted());
        let e = c
            .request(&key("echo"), "sink", ResponseMode::Oneway, |w| {
                w.write_octet_seq(&payload)
            })
            .unwrap_err();
        let (took, cpu) = (t0.elapsed(), thread_cpu() - cpu0);
        wanted.push(thread_wanted() - wanted0);
        stopper.join().unwrap();
        assert_eq!(e, ClientError::LocallyClosed, "{spin:?}");
        assert!(took >= Duration::from_millis(300), "{took:?}");
        assert!(took < Duration::from_secs(1), "{took:?}");
        cpus.push(cpu);
    }
    // Spinning 50 ms, then blocked for the rest of the 300; without it,
    // only the copying into the socket's buffers.
    assert!(
        wanted[0] >= Duration::from_millis(25),
        "spun: wanted a CPU for {:?}",
        wanted[0]
    );
    assert!(
        cpus[0] < Duration::from_millis(150),
        "then blocked: {:?}",
        cpus[0]
    );
    assert!(
        cpus[1] < Duration::from_millis(10),
        "no spin: {:?}",
        cpus[1]
    );
    held.join().unwrap();
}

#[tokio::test]
async fn blocking_cancel_request_on_the_wire_and_abort_while_waiting() {
    let (port, srv) = silent_server().await;
    static ABORT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let (request_id, e2) = tokio::task::spawn_blocking(move || {
        let cfg = ClientConfig {
            order: ByteOrder::Big,
            request_timeout: Some(Duration::from_millis(30)),
            ..ClientConfig::default()
        };
        let mut c = blocking(port, Version::V1_2, cfg);
        let e = c
            .request(&key("echo"), "echo_long", ResponseMode::Twoway, |w| {
                w.write_u32(1);
                Ok(())
            })
            .unwrap_err();
        let ClientError::Timeout { request_id, .. } = e else {
            panic!("{e}")
        };
        // No timeout this time: only the abort check ends the wait.
        c.set_abort(|| ABORT.load(std::sync::atomic::Ordering::Relaxed));
        let t = std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(100));
            ABORT.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        let t0 = std::time::Instant::now();
        let e2 = c
            .request_with(
                &key("echo"),
                "echo_long",
                ResponseMode::Twoway,
                &[],
                None,
                |w| {
                    w.write_u32(2);
                    Ok(())
                },
            )
            .unwrap_err();
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
        assert!(c.is_closed());
        t.join().unwrap();
        (request_id, e2)
    })
    .await
    .unwrap();
    assert_eq!(e2, ClientError::LocallyClosed);
    let (sent_id, cancel, rest) = tokio::time::timeout(Duration::from_secs(5), srv)
        .await
        .expect("the CancelRequest arrives")
        .unwrap();
    assert_eq!(request_id, sent_id);
    assert_eq!(cancel.to_vec(), cancel_request(sent_id));
    // The aborted request, then CloseConnection (GIOP 1.2) as we hang up.
    assert_eq!(&rest[..8], b"GIOP\x01\x02\x00\x00");
    assert_eq!(&rest[rest.len() - 12..], b"GIOP\x01\x02\x00\x05\0\0\0\0");
}

#[tokio::test]
async fn blocking_malformed_reply_sends_message_error_and_ends_the_connection() {
    let (port, srv) = bad_reply_server().await;
    let e = tokio::task::spawn_blocking(move || {
        let cfg = ClientConfig {
            order: ByteOrder::Big,
            ..ClientConfig::default()
        };
        let mut c = blocking(port, Version::V1_2, cfg);
        let e = c
            .request(&key("echo"), "op", ResponseMode::Twoway, |_| Ok(()))
            .unwrap_err();
        // Dead from then on, with the same error.
        assert!(c.is_closed());
        let again = c
            .request(&key("echo"), "op", ResponseMode::Twoway, |_| Ok(()))
            .unwrap_err();
        assert_eq!(again, e);
        e
    })
    .await
    .unwrap();
    assert_eq!(
        e,
        ClientError::Protocol {
            addr: format!("127.0.0.1:{port}"),
            error: iiop_giop::GiopError::BadValue {
                what: "reply status",
                value: 9,
                offset: 16
            }
        }
    );
    let rest = srv.await.unwrap();
    assert_eq!(
        rest, b"GIOP\x01\x02\x00\x06\x00\x00\x00\x00",
        "MessageError only"
    );
}

#[tokio::test]
async fn blocking_server_closing_is_a_clear_error() {
    let s = Server::start(ServerConfig::default()).await;
    let port = s.port;
    let mut c = tokio::task::spawn_blocking(move || {
        let mut c = blocking(port, Version::V1_2, ClientConfig::default());
        assert_eq!(b_echo_long(&mut c, 5), 5);
        c
    })
    .await
    .unwrap();
    s.stop().await;
    let e = tokio::task::spawn_blocking(move || b_try(&mut c))
        .await
        .unwrap();
    assert!(
        matches!(e, ClientError::Closed { .. } | ClientError::Io { .. }),
        "{e}"
    );
}

fn b_try(c: &mut BlockingConnection) -> ClientError {
    c.request(&key("echo"), "echo_long", ResponseMode::Twoway, |w| {
        w.write_u32(1);
        Ok(())
    })
    .unwrap_err()
}

/// A peer that only listens: every byte of one connection, as it arrives,
/// until the client hangs up (at most 10 s).
fn recording_peer() -> (u16, Arc<Mutex<Vec<u8>>>, std::thread::JoinHandle<()>) {
    use std::io::Read;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    let t = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = s.read(&mut buf) {
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    (port, got, t)
}

/// The big-endian GIOP messages in `bytes` as (type, body); every one of
/// them whole.
fn frames(bytes: &[u8]) -> Vec<(u8, &[u8])> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        assert!(rest.len() >= 12 && &rest[..4] == b"GIOP", "a GIOP header");
        let size = u32::from_be_bytes(rest[8..12].try_into().unwrap()) as usize;
        assert!(rest.len() >= 12 + size, "whole messages only");
        out.push((rest[7], &rest[12..12 + size]));
        rest = &rest[12 + size..];
    }
    out
}

/// Waits (at most 5 s) until `got` holds more than `n` bytes; its length.
fn more_than(got: &Mutex<Vec<u8>>, n: usize) -> usize {
    let t0 = std::time::Instant::now();
    loop {
        let len = got.lock().unwrap().len();
        if len > n || t0.elapsed() > Duration::from_secs(5) {
            return len;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What both drivers must do with a 1 000-byte oneway buffer and oneways
/// of ~170 bytes: `send(i)` sends oneway number `i`, `close` closes.
/// Three oneways leave nothing on the wire; thirteen have let out whole
/// messages, at least a buffer's worth, and held the rest; closing writes
/// the rest, in order, then CloseConnection.
fn buffered_oneways_follow_the_buffer(
    got: &Mutex<Vec<u8>>,
    mut send: impl FnMut(u32),
    close: impl FnOnce(),
) {
    for i in 0..3 {
        send(i);
    }
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(got.lock().unwrap().len(), 0, "three oneways are held");
    for i in 3..13 {
        send(i);
    }
    let len = more_than(got, 0);
    let early = frames(&got.lock().unwrap()[..len]).len();
    assert!(
        len >= 1000 && (6..13).contains(&early),
        "{len} bytes, {early} messages"
    );
    close();
    let all = got.lock().unwrap().clone();
    let msgs = frames(&all);
    assert_eq!(msgs.len(), 14, "13 oneways and CloseConnection");
    assert_eq!(msgs[13], (5, &[][..]));
    for (i, (ty, body)) in msgs[..13].iter().enumerate() {
        assert_eq!(*ty, 0, "a Request");
        let mut r = Reader::new(body, ByteOrder::Big);
        let _id = r.read_u32().unwrap();
        assert_eq!(r.read_u8().unwrap(), 0, "oneway: no response expected");
        // The mark is the body's last four bytes.
        let mark = u32::from_be_bytes(body[body.len() - 4..].try_into().unwrap());
        assert_eq!(mark, i as u32, "in order");
    }
}

fn buffered(limit: usize) -> ClientConfig {
    ClientConfig {
        order: ByteOrder::Big,
        oneway_buffer: Some(limit),
        ..ClientConfig::default()
    }
}

/// A oneway carrying 100 padding octets and then its number.
fn padded_mark(w: &mut Writer<'_>, i: u32) -> Result<(), iiop_cdr::CdrError> {
    w.write_bytes(&[0u8; 100]);
    w.write_u32(i);
    Ok(())
}

#[test]
fn blocking_buffered_oneways_wait_for_the_buffer_or_the_close() {
    let (port, got, peer) = recording_peer();
    let c = std::cell::RefCell::new(blocking(port, Version::V1_2, buffered(1000)));
    buffered_oneways_follow_the_buffer(
        &got,
        |i| {
            let r = c
                .borrow_mut()
                .request(&key("echo"), "mark", ResponseMode::Oneway, |w| {
                    padded_mark(w, i)
                });
            assert!(r.unwrap().is_none());
        },
        || {
            c.borrow_mut().close();
            peer.join().unwrap();
        },
    );
}

#[test]
fn buffered_oneways_wait_for_the_buffer_or_the_close() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (port, got, peer) = recording_peer();
    let cfg = buffered(1000);
    let c = rt
        .block_on(Connection::connect(
            "127.0.0.1",
            port,
            Version::V1_2,
            &cfg,
            None,
        ))
        .unwrap();
    let c = std::cell::RefCell::new(Some(c));
    buffered_oneways_follow_the_buffer(
        &got,
        |i| {
            let c = c.borrow();
            let target = key("echo");
            let req = c
                .as_ref()
                .unwrap()
                .request(&target, "mark", ResponseMode::Oneway, |w| padded_mark(w, i));
            assert!(rt.block_on(req).unwrap().is_none());
        },
        || {
            // Closed, and its last handle gone: the socket closes.
            let c = c.borrow_mut().take().unwrap();
            c.close();
            drop(c);
            peer.join().unwrap();
        },
    );
}

#[tokio::test]
async fn buffered_oneways_go_out_with_the_next_twoway_in_order() {
    let s = Server::start(ServerConfig::default()).await;
    let (port, handler) = (s.port, s.handler.clone());
    // 200 marks fit a 64 KiB buffer: only `marks` (a twoway) lets them out.
    for v in VERSIONS {
        let c = Connection::connect("127.0.0.1", port, v, &buffered(64 << 10), None)
            .await
            .unwrap();
        assert_eq!(echo_long(&c, 7).await, 7);
        marks_in_order(&c, &handler, &v.to_string()).await;
    }
    tokio::task::spawn_blocking(move || {
        for v in VERSIONS {
            let mut c = blocking(port, v, buffered(64 << 10));
            assert_eq!(b_echo_long(&mut c, 7), 7);
            b_marks_in_order(&mut c, &handler, &v.to_string());
        }
    })
    .await
    .unwrap();
    s.stop().await;
}

fn coalescing(on: bool) -> ClientConfig {
    ClientConfig {
        coalesce_oneways: on,
        ..ClientConfig::default()
    }
}

/// The runtime's writer task joins oneways too. Callers that find it
/// busy (here because the peer stopped reading and the socket filled)
/// queue their oneways behind it; it writes that batch, smaller than a
/// segment, with Nagle still on rather than pushing it, and pushes the
/// large one before it (as a caller's own oneway of a segment or more is
/// pushed). When the peer reads again every oneway arrives, in order.
#[tokio::test]
async fn the_writer_task_keeps_nagle_on_for_a_batch_of_small_oneways() {
    const FILL: u32 = 1000;
    const MORE: u32 = 3;
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    // Small socket buffers, so that 1 MB fills them (the segment size the
    // kernel reports is bounded by half the peer's window: ~32 KiB here).
    socket2::SockRef::from(&l)
        .set_recv_buffer_size(64 << 10)
        .unwrap();
    let port = l.local_addr().unwrap().port();
    let cfg = ClientConfig {
        send_buffer: Some(32 << 10),
        ..coalescing(true)
    };
    let c = Connection::connect("127.0.0.1", port, Version::V1_2, &cfg, None)
        .await
        .unwrap();
    let (mut peer, _) = l.accept().await.unwrap();
    let (body, echo) = (vec![7u8; 1000], key("echo"));
    let send = |i: u32| {
        let body = &body;
        c.request(&echo, "mark", ResponseMode::Oneway, move |w| {
            w.write_u32(i);
            w.write_octet_seq(body)
        })
    };
    for i in 0..FILL {
        assert!(send(i).await.unwrap().is_none());
    }
    // The writer task takes what the full socket left (far more than a
    // segment) and waits for room; the next oneways queue behind it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(c.nodelay().unwrap().unwrap(), "a large batch is pushed");
    for i in FILL..FILL + MORE {
        assert!(send(i).await.unwrap().is_none());
    }
    // The peer reads again: every oneway arrives, in order.
    let (mut buf, mut got) = (Vec::new(), 0u32);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while got < FILL + MORE {
        let mut chunk = vec![0u8; 256 << 10];
        let n = tokio::time::timeout_at(deadline, peer.read(&mut chunk))
            .await
            .expect("every oneway within 30 s")
            .unwrap();
        assert!(n > 0, "closed after {got} oneways");
        buf.extend_from_slice(&chunk[..n]);
        let mut at = 0;
        while buf.len() - at >= 12 {
            let u32_at = |b: &[u8], i: usize| {
                let w: [u8; 4] = b[i..i + 4].try_into().unwrap();
                match b[6] & 1 {
                    1 => u32::from_le_bytes(w),
                    _ => u32::from_be_bytes(w),
                }
            };
            let size = u32_at(&buf[at..], 8) as usize;
            if buf.len() - at < 12 + size {
                break;
            }
            // A Request whose body ends with the mark, the octets' count
            // and the 1000 octets.
            let msg = &buf[at..at + 12 + size];
            assert_eq!(msg[7], 0, "a Request");
            assert_eq!(u32_at(msg, msg.len() - 1008), got, "oneways in order");
            got += 1;
            at += 12 + size;
        }
        buf.drain(..at);
    }
    assert!(
        !c.nodelay().unwrap().unwrap(),
        "the writer task pushed its batch of {MORE} small oneways"
    );
    c.close();
}

/// Coalesced oneways: Nagle is on while oneways go out and off again
/// before a call that waits for its answer (which pushes what it held),
/// in both drivers; the server still gets every oneway, in order. Off
/// (the default), or with `nodelay: false`, the socket stays as set.
#[tokio::test]
async fn coalesced_oneways_turn_nagle_on_only_between_oneways() {
    let s = Server::start(ServerConfig::default()).await;
    let (port, handler) = (s.port, s.handler.clone());
    let h = handler.clone();
    tokio::task::spawn_blocking(move || {
        for (coalesce, nodelay, while_oneways) in [
            (true, true, false),
            (false, true, true),
            (true, false, false),
        ] {
            let cfg = ClientConfig {
                nodelay,
                ..coalescing(coalesce)
            };
            let what = format!("blocking, coalesce {coalesce}, nodelay {nodelay}");
            let mut c = blocking(port, Version::V1_2, cfg);
            assert!(c.nodelay().unwrap() == nodelay, "{what}: as opened");
            b_send_marks(&mut c, &h);
            assert_eq!(
                c.nodelay().unwrap(),
                while_oneways,
                "{what}: between oneways"
            );
            // A oneway of a segment or more (loopback's is ~64 KiB) goes
            // at once: joining gains it nothing.
            let big = vec![7u8; 100 << 10];
            let r = c.request(&key("echo"), "echo_octets", ResponseMode::Oneway, |w| {
                w.write_octet_seq(&big)
            });
            assert!(r.unwrap().is_none());
            assert_eq!(
                c.nodelay().unwrap(),
                nodelay,
                "{what}: after a large oneway"
            );
            b_marks_arrived(&mut c, &what);
            assert_eq!(c.nodelay().unwrap(), nodelay, "{what}: after a twoway");
            assert_eq!(b_echo_long(&mut c, 7), 7, "{what}");
        }
    })
    .await
    .unwrap();
    // The runtime's connection: a caller that writes its oneway itself
    // turns Nagle on; the twoway after them turns it off.
    for (coalesce, while_oneways) in [(true, false), (false, true)] {
        let c = Connection::connect(
            "127.0.0.1",
            port,
            Version::V1_2,
            &coalescing(coalesce),
            None,
        )
        .await
        .unwrap();
        send_marks(&c, &handler).await;
        assert_eq!(
            c.nodelay().unwrap().unwrap(),
            while_oneways,
            "runtime, coalesce {coalesce}"
        );
        marks_arrived(&c, &format!("runtime, coalesce {coalesce}")).await;
        assert!(
            c.nodelay().unwrap().unwrap(),
            "runtime, coalesce {coalesce}: after a twoway"
        );
    }
    s.stop().await;
}

/// The write-deadline rule, carried out by both drivers alike: a request
/// the peer stops reading in the middle of cannot be cancelled (no
/// CancelRequest inside a message), so when its time runs out the
/// connection is lost and says why (a request written whole whose answer
/// is late is cancelled and the connection goes on: the timeout tests
/// above).
#[tokio::test]
async fn a_request_the_peer_stops_reading_loses_the_connection_in_both_drivers() {
    let lost = |addr: &str| ClientError::Io {
        addr: addr.to_string(),
        message: "the server stopped reading before the request was written".into(),
    };
    let cfg = ClientConfig {
        request_timeout: Some(Duration::from_millis(300)),
        send_buffer: Some(32 << 10),
        ..ClientConfig::default()
    };
    // 4 MB: far more than the socket buffers on either side hold.
    let big = vec![7u8; 4 << 20];
    // The runtime's driver: a peer that accepts and never reads.
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let c = Connection::connect("127.0.0.1", port, Version::V1_2, &cfg, None)
        .await
        .unwrap();
    let (_peer, _) = l.accept().await.unwrap();
    let r = tokio::time::timeout(
        Duration::from_secs(20),
        c.request(&key("echo"), "echo_octets", ResponseMode::Twoway, |w| {
            w.write_octet_seq(&big)
        }),
    )
    .await
    .expect("the call ends at its timeout");
    assert_eq!(r.unwrap_err(), lost(c.addr()));
    assert!(c.is_closed());
    // The blocking driver, the same peer.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let big = big.clone();
    tokio::task::spawn_blocking(move || {
        let mut c = blocking(port, Version::V1_2, cfg);
        let (_peer, _) = l.accept().unwrap();
        let r = c.request(&key("echo"), "echo_octets", ResponseMode::Twoway, |w| {
            w.write_octet_seq(&big)
        });
        assert_eq!(r.unwrap_err(), lost(c.addr()));
        assert!(c.is_closed());
    })
    .await
    .unwrap();
}
