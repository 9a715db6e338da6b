//! IIOP over TLS, our client against our server over loopback: both
//! clients (tokio and wait-on-read) in every GIOP version, references
//! that offer TLS (TAG_SSL_SEC_TRANS on a zero plain port, as omniORB's
//! and ours are), client certificates, every handshake failure as one
//! line naming who refused, and a client that stalls mid-handshake.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use iiop_cdr::{Reader, Writer};
use iiop_giop::conn::endpoint::Endpoint;
use iiop_giop::exception::{Completion, SystemException};
use iiop_giop::ior::{tls_only_profile, IiopProfile, Ior};
use iiop_giop::message::{ReplyStatus, ResponseMode, TargetAddress};
use iiop_giop::Version;
use iiop_transport::tls::test_pki::TestPki;
use iiop_transport::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

const TYPE_ID: &str = "IDL:Test/Echo:1.0";

struct Echo;

impl Handler for Echo {
    fn handle(
        &self,
        req: &RequestContext<'_>,
        body: &mut Reader<'_>,
        reply: &mut Writer<'_>,
    ) -> Dispatch {
        let bad = || Dispatch::Done(Outcome::System(SystemException::marshal(1, Completion::No)));
        if let Some(d) = server::handle_builtin(req, body, reply, &[TYPE_ID]) {
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
            _ => return Dispatch::Done(Outcome::System(SystemException::unknown_operation())),
        }
        Dispatch::Done(Outcome::Reply)
    }
}

struct Server {
    port: u16,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Server {
    async fn start(tls: Option<Arc<rustls::ServerConfig>>, cfg: ServerConfig) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (stop, rx) = oneshot::channel::<()>();
        let stopped = async {
            let _ = rx.await;
        };
        let h = Arc::new(Echo);
        let task = match tls {
            Some(t) => tokio::spawn(serve_tls(listener, h, cfg, t, stopped)),
            None => tokio::spawn(serve(listener, h, cfg, stopped)),
        };
        Server {
            port,
            stop: Some(stop),
            task,
        }
    }

    /// [`start`](Self::start) on the thread-per-connection server.
    fn start_threads(tls: Option<Arc<rustls::ServerConfig>>, cfg: ServerConfig) -> Server {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (stop, rx) = oneshot::channel::<()>();
        let flag = Arc::new(threads::StopFlag::new().unwrap());
        let set = flag.clone();
        tokio::spawn(async move {
            let _ = rx.await;
            set.stop();
        });
        let threads = threads::ThreadsConfig {
            thread_name: "tls-test-conn".into(),
            on_thread_start: Arc::new(|| {}),
            runtime: tokio::runtime::Handle::current(),
            polling: Default::default(),
            tls,
        };
        let task = tokio::task::spawn_blocking(move || {
            threads::serve_threads(listener, Arc::new(Echo), cfg, threads, flag)
        });
        Server {
            port,
            stop: Some(stop),
            task,
        }
    }

    /// The reference a TLS server of ours publishes: plain port 0, the
    /// TLS port in TAG_SSL_SEC_TRANS.
    fn tls_ior(&self) -> Ior {
        let p = tls_only_profile(
            IiopProfile::new("127.0.0.1", self.port, &b"echo"[..]),
            false,
        );
        Ior::new(TYPE_ID, vec![p.to_tagged()])
    }

    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(15), self.task)
            .await
            .expect("server stops")
            .unwrap()
            .unwrap();
    }
}

fn key() -> TargetAddress {
    TargetAddress::Key(Bytes::from_static(b"echo"))
}

/// `_non_existent` on the echo object.
async fn ne(c: &Connection) -> Result<bool, ClientError> {
    let r = c
        .request(&key(), "_non_existent", ResponseMode::Twoway, |_| Ok(()))
        .await?
        .expect("a reply");
    let body = iiop_transport::client::reply_result(r)?;
    Ok(body.reader(c.options()).read_bool().unwrap())
}

fn ne_blocking(c: &mut BlockingConnection) -> Result<bool, ClientError> {
    let r = c
        .request(&key(), "_non_existent", ResponseMode::Twoway, |_| Ok(()))?
        .expect("a reply");
    let body = iiop_transport::client::reply_result(r)?;
    Ok(body.reader(c.options()).read_bool().unwrap())
}

fn tls_endpoint(port: u16) -> Endpoint {
    Endpoint {
        host: "127.0.0.1".into(),
        port,
        tls: true,
    }
}

fn client_cfg(tls: Option<Arc<rustls::ClientConfig>>) -> ClientConfig {
    ClientConfig {
        tls: tls.map_or(TlsMode::Off, TlsMode::Offered),
        connect_timeout: Duration::from_secs(5),
        request_timeout: Some(Duration::from_secs(10)),
        ..ClientConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_client_follows_the_ssl_component_and_moves_large_messages() {
    let pki = TestPki::new("tokio");
    let s = Server::start(Some(pki.server(false)), ServerConfig::default()).await;
    let client = Client::new(client_cfg(Some(pki.client(false))));
    let ior = s.tls_ior();
    let body = client
        .call(&ior, "echo_long", |w| {
            w.write_u32(0xC0FFEE);
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(
        body.reader(Default::default()).read_u32().unwrap(),
        0xC0FFEE
    );
    // 1 MiB each way: many TLS records, partial writes.
    let big: Vec<u8> = (0..1 << 20).map(|i| (i * 7 + 3) as u8).collect();
    let body = client
        .call(&ior, "echo_octets", |w| w.write_octet_seq(&big))
        .await
        .unwrap();
    assert_eq!(
        body.reader(Default::default()).read_octet_seq().unwrap(),
        &big[..]
    );
    // 200 calls in flight on one connection, each reply checked.
    let route = client.route(&ior).await.unwrap();
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..200u32 {
        let c = route.connection.clone();
        calls.spawn(async move {
            let r = c
                .request(&key(), "echo_long", ResponseMode::Twoway, |w| {
                    w.write_u32(i);
                    Ok(())
                })
                .await
                .unwrap()
                .unwrap();
            (i, r.body.reader(c.options()).read_u32().unwrap())
        });
    }
    // Each reply is the echo of its own call; all 200 came back.
    let mut got = calls.join_all().await;
    got.sort_unstable();
    assert_eq!(got, (0..200).map(|i| (i, i)).collect::<Vec<_>>());
    // Without TLS settings the same reference is refused up front.
    let plain = Client::new(client_cfg(None));
    let e = plain.call(&ior, "echo_long", |w| {
        w.write_u32(1);
        Ok(())
    });
    assert_eq!(
        e.await.unwrap_err(),
        ClientError::TlsNotConfigured {
            addr: format!("127.0.0.1:{}", s.port),
            via: "TAG_SSL_SEC_TRANS"
        }
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_client_in_every_version_with_a_client_certificate() {
    let pki = TestPki::new("blocking");
    let s = Server::start(Some(pki.server(true)), ServerConfig::default()).await;
    let port = s.port;
    let cfg = client_cfg(Some(pki.client(true)));
    tokio::task::spawn_blocking(move || {
        for v in [Version::V1_0, Version::V1_1, Version::V1_2] {
            let mut c = BlockingConnection::connect_to(&tls_endpoint(port), v, &cfg, None).unwrap();
            for i in 0..50u32 {
                let r = c
                    .request(&key(), "echo_long", ResponseMode::Twoway, |w| {
                        w.write_u32(i);
                        Ok(())
                    })
                    .unwrap()
                    .unwrap();
                assert_eq!(r.header.status, ReplyStatus::NoException);
                assert_eq!(r.body.reader(c.options()).read_u32().unwrap(), i);
            }
            let big: Vec<u8> = (0..3 << 19).map(|i| (i * 7 + 3) as u8).collect();
            let r = c
                .request(&key(), "echo_octets", ResponseMode::Twoway, |w| {
                    w.write_octet_seq(&big)
                })
                .unwrap()
                .unwrap();
            assert_eq!(
                r.body.reader(c.options()).read_octet_seq().unwrap(),
                &big[..]
            );
            // A oneway, then a twoway behind it.
            c.request(&key(), "echo_long", ResponseMode::Oneway, |w| {
                w.write_u32(5);
                Ok(())
            })
            .unwrap();
            assert!(!ne_blocking(&mut c).unwrap());
        }
    })
    .await
    .unwrap();
    s.stop().await;
}

/// Connect with `cfg` to a TLS endpoint and make one call: the error.
async fn failure(port: u16, cfg: ClientConfig) -> String {
    let tokio_err =
        match Connection::connect_to(&tls_endpoint(port), Version::V1_2, &cfg, None).await {
            Err(e) => e,
            Ok(c) => ne(&c).await.expect_err("the call fails"),
        };
    let blocking_err = tokio::task::spawn_blocking(move || {
        match BlockingConnection::connect_to(&tls_endpoint(port), Version::V1_2, &cfg, None) {
            Err(e) => e,
            Ok(mut c) => ne_blocking(&mut c).expect_err("the call fails"),
        }
    })
    .await
    .unwrap();
    assert_eq!(tokio_err, blocking_err, "both clients say the same");
    tokio_err.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_handshake_failure_says_who_refused_and_why() {
    let pki = TestPki::new("refusals");
    let s = Server::start(Some(pki.server(true)), ServerConfig::default()).await;
    let addr = format!("127.0.0.1:{}", s.port);
    // We do not trust the server's CA.
    let wrong_ca = iiop_transport::tls::client_config(&pki.other_ca, None).unwrap();
    assert_eq!(
        failure(s.port, client_cfg(Some(wrong_ca))).await,
        format!(
            "TLS handshake with {addr} failed: we refused the server's certificate: \
             not signed by a CA we trust"
        )
    );
    // The server wants a client certificate and gets none (TLS 1.3: its
    // refusal arrives with the first read).
    assert_eq!(
        failure(s.port, client_cfg(Some(pki.client(false)))).await,
        format!(
            "TLS handshake with {addr} failed: the server refused it: it requires a client \
             certificate (TLS alert CertificateRequired)"
        )
    );
    // The server does not trust our certificate.
    let stranger =
        iiop_transport::tls::client_config(&pki.ca, Some((&pki.stranger_cert, &pki.stranger_key)))
            .unwrap();
    let e = failure(s.port, client_cfg(Some(stranger))).await;
    assert!(
        e.starts_with(&format!(
            "TLS handshake with {addr} failed: the server refused it: it does not trust our certificate"
        )),
        "{e}"
    );
    s.stop().await;
    // TLS to a plain IIOP server: it answers the ClientHello with a
    // MessageError, which is not TLS.
    let plain = Server::start(None, ServerConfig::default()).await;
    let e = failure(plain.port, client_cfg(Some(pki.client(false)))).await;
    assert!(
        e.starts_with(&format!(
            "TLS handshake with 127.0.0.1:{} failed: the server does not speak TLS on this port",
            plain.port
        )),
        "{e}"
    );
    plain.stop().await;
}

/// One handshake between `client` and `server` settings in memory, the
/// tickets a TLS 1.3 server sends after it delivered too: how the
/// client's went.
fn handshake_in_memory(
    client: &Arc<rustls::ClientConfig>,
    server: &Arc<rustls::ServerConfig>,
) -> rustls::HandshakeKind {
    let name = iiop_transport::tls::server_name("localhost").unwrap();
    let mut c = rustls::ClientConnection::new(client.clone(), name).unwrap();
    let mut s = rustls::ServerConnection::new(server.clone()).unwrap();
    let mut wire = Vec::new();
    for _ in 0..10 {
        while c.wants_write() {
            c.write_tls(&mut wire).unwrap();
        }
        s.read_tls(&mut &wire[..]).unwrap();
        s.process_new_packets().unwrap();
        wire.clear();
        while s.wants_write() {
            s.write_tls(&mut wire).unwrap();
        }
        c.read_tls(&mut &wire[..]).unwrap();
        c.process_new_packets().unwrap();
        wire.clear();
        if !c.is_handshaking() && !s.is_handshaking() && !c.wants_write() && !s.wants_write() {
            return c.handshake_kind().unwrap();
        }
    }
    panic!("the handshake did not finish in 10 flights")
}

#[test]
fn every_connection_does_a_full_handshake() {
    let pki = TestPki::new("full-handshakes");
    let server = pki.server(false);
    let ours = pki.client(false);
    let kinds: Vec<_> = (0..3)
        .map(|_| handshake_in_memory(&ours, &server))
        .collect();
    assert_eq!(kinds, vec![rustls::HandshakeKind::Full; 3]);
    // What the test would see with rustls' default (resumption from a
    // cache the settings share).
    let mut resuming = (*ours).clone();
    resuming.resumption = rustls::client::Resumption::default();
    let resuming = Arc::new(resuming);
    let kinds: Vec<_> = (0..2)
        .map(|_| handshake_in_memory(&resuming, &server))
        .collect();
    assert_eq!(
        kinds,
        vec![rustls::HandshakeKind::Full, rustls::HandshakeKind::Resumed]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_stalled_mid_handshake_loses_its_slot() {
    stalled_client_loses_its_slot(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_stalled_mid_handshake_loses_its_thread_too() {
    stalled_client_loses_its_slot(true).await;
}

/// One slot, taken by a client that stops mid-handshake: the next client
/// gets it after the handshake timeout (`threads`: on the
/// thread-per-connection server).
async fn stalled_client_loses_its_slot(threads: bool) {
    let pki = TestPki::new(if threads { "stall-threads" } else { "stall" });
    let cfg = ServerConfig {
        max_connections: 1,
        handshake_timeout: Duration::from_millis(300),
        ..ServerConfig::default()
    };
    let s = match threads {
        true => Server::start_threads(Some(pki.server(false)), cfg),
        false => Server::start(Some(pki.server(false)), cfg).await,
    };
    // Half a TLS record header, then nothing.
    let mut stalled = tokio::net::TcpStream::connect(("127.0.0.1", s.port))
        .await
        .unwrap();
    stalled.write_all(&[0x16, 0x03, 0x01]).await.unwrap();
    let t0 = Instant::now();
    let c = Connection::connect_to(
        &tls_endpoint(s.port),
        Version::V1_2,
        &client_cfg(Some(pki.client(false))),
        None,
    )
    .await
    .unwrap();
    assert!(!ne(&c).await.unwrap());
    let waited = t0.elapsed();
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_secs(5),
        "the only slot came free after the handshake timeout, not before or much later: {waited:?}"
    );
    // And the stalled client was hung up on.
    let mut b = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(2), stalled.read(&mut b))
        .await
        .expect("the server closed the stalled connection")
        .unwrap_or(0);
    assert_eq!(n, 0);
    drop(c);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_giop_to_a_tls_port_is_refused_cleanly() {
    let pki = TestPki::new("plain-to-tls");
    let s = Server::start(Some(pki.server(false)), ServerConfig::default()).await;
    let c = Connection::connect("127.0.0.1", s.port, Version::V1_2, &client_cfg(None), None)
        .await
        .unwrap();
    let e = ne(&c).await.unwrap_err();
    assert!(
        matches!(
            e,
            ClientError::Closed { .. } | ClientError::Protocol { .. } | ClientError::Io { .. }
        ),
        "{e}"
    );
    // The server is still fine for TLS clients.
    let client = Client::new(client_cfg(Some(pki.client(false))));
    client
        .call(&s.tls_ior(), "_non_existent", |_| Ok(()))
        .await
        .unwrap();
    s.stop().await;
}

/// Counts the connections its server says are over.
#[derive(Default)]
struct Closed(std::sync::atomic::AtomicUsize);

impl Handler for Closed {
    fn handle(
        &self,
        _req: &RequestContext<'_>,
        _body: &mut Reader<'_>,
        _reply: &mut Writer<'_>,
    ) -> Dispatch {
        Dispatch::Done(Outcome::System(SystemException::unknown_operation()))
    }

    fn connection_closed(&self, _summary: &server::ConnectionSummary) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_handshake_is_a_closed_connection_to_the_handler() {
    use std::sync::atomic::Ordering;
    let pki = TestPki::new("closed");
    for threads in [false, true] {
        let h = Arc::new(Closed::default());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(threads::StopFlag::new().unwrap());
        let (tls, cfg) = (pki.server(false), ServerConfig::default());
        let (h2, stop2) = (h.clone(), stop.clone());
        let (tx, rx) = oneshot::channel::<()>();
        let task = match threads {
            true => {
                let t = threads::ThreadsConfig {
                    thread_name: "tls-test-conn".into(),
                    on_thread_start: Arc::new(|| {}),
                    runtime: tokio::runtime::Handle::current(),
                    polling: Default::default(),
                    tls: Some(tls),
                };
                tokio::task::spawn_blocking(move || {
                    threads::serve_threads(listener, h2, cfg, t, stop2)
                })
            }
            false => {
                listener.set_nonblocking(true).unwrap();
                let l = TcpListener::from_std(listener).unwrap();
                tokio::spawn(serve_tls(l, h2, cfg, tls, async {
                    let _ = rx.await;
                }))
            }
        };
        // Plain GIOP bytes where a ClientHello belongs.
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        s.write_all(b"GIOP\x01\x02\x01\x00\x00\x00\x00\x00")
            .await
            .unwrap();
        let mut b = [0u8; 64];
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read(&mut b)).await;
        let t0 = Instant::now();
        while h.0.load(Ordering::SeqCst) == 0 && t0.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(h.0.load(Ordering::SeqCst), 1, "threads: {threads}");
        stop.stop();
        let _ = tx.send(());
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("server stops")
            .unwrap()
            .unwrap();
    }
}

#[test]
fn a_server_that_trickles_its_handshake_meets_the_blocking_clients_deadline() {
    let pki = TestPki::new("trickle");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        use std::io::Write;
        let (mut s, _) = listener.accept().unwrap();
        // A handshake record of 16 KiB announced, then a byte every
        // 50 ms: each read gets something well within the timeout.
        let _ = s.write_all(&[0x16, 0x03, 0x03, 0x40, 0x00]);
        for _ in 0..100 {
            std::thread::sleep(Duration::from_millis(50));
            if s.write_all(&[0]).is_err() {
                break;
            }
        }
    });
    let cfg = ClientConfig {
        connect_timeout: Duration::from_millis(400),
        ..client_cfg(Some(pki.client(false)))
    };
    let t0 = Instant::now();
    let e =
        BlockingConnection::connect_to(&tls_endpoint(port), Version::V1_2, &cfg, None).unwrap_err();
    let took = t0.elapsed();
    assert_eq!(
        e.to_string(),
        format!(
            "TLS handshake with 127.0.0.1:{port} failed: the server did not finish the handshake in 400ms"
        )
    );
    assert!(took < Duration::from_secs(2), "{took:?}");
    drop(server);
}
