//! The code-set negotiation race cannot happen in our client: when many
//! calls start at once on a new connection, the CodeSets context goes on
//! the first Request in the byte stream, and on no other (JacORB #211,
//! #329: a client whose threads share a new connection marked the code
//! sets negotiated before any request carried the context, and the
//! server refused its wide strings). A relay in front of a real bench
//! server reads every message the client sends and records which
//! Requests carried the context; the calls' results are real.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::BytesMut;
use iiop_bench_idl::bench::elements::CallMode;
use iiop_bench_idl::bench::types::Payload;
use iiop_bench_idl::client::{BenchClient, Wait};
use iiop_cdr::{Options, WString};
use iiop_giop::codec::{CodecConfig, Decoder};
use iiop_giop::context::SC_CODE_SETS;
use iiop_giop::header::HEADER_LEN;
use iiop_giop::ior::Ior;
use iiop_giop::{Header, Message};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

mod common;
use common::{cfg, server};

/// How many calls start at once on the new connection.
const CALLS: usize = 64;

/// Per connection, in stream order: each Request's id and whether it
/// carried the CodeSets context.
type Seen = Arc<Mutex<Vec<Vec<(u32, bool)>>>>;

/// A relay in front of `real` that records what each connection's
/// Requests carried. Returns its port.
async fn relay(real: std::net::SocketAddr, seen: Seen) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((client, _)) = l.accept().await else {
                return;
            };
            let conn = {
                let mut s = seen.lock().unwrap();
                s.push(Vec::new());
                s.len() - 1
            };
            let seen = seen.clone();
            tokio::spawn(async move {
                let server = TcpStream::connect(real).await.unwrap();
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut sr, &mut cw).await;
                });
                let mut decoder = Decoder::new(CodecConfig::default());
                let mut buf = BytesMut::new();
                loop {
                    while buf.len() < HEADER_LEN
                        || buf.len() < Header::parse(&buf).unwrap().total_len()
                    {
                        if cr.read_buf(&mut buf).await.unwrap_or(0) == 0 {
                            return;
                        }
                    }
                    let n = Header::parse(&buf).unwrap().total_len();
                    let bytes = buf.split_to(n);
                    sw.write_all(&bytes).await.unwrap();
                    let mut one = bytes.clone();
                    if let Some(frame) = decoder.decode_separately(&mut one).unwrap() {
                        if let Message::Request(r) =
                            Message::decode_frame(frame, Options::default()).unwrap()
                        {
                            let carried = r.header.contexts.get(SC_CODE_SETS).is_some();
                            seen.lock().unwrap()[conn].push((r.header.request_id, carried));
                        }
                    }
                }
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_calls_carry_the_code_sets_once_on_the_first_request() {
    let srv = server();
    let real = srv.refs().ior.clone();
    assert!(
        real.code_sets().is_some(),
        "the bench server's reference names its code sets"
    );
    // The reactor wait: many callers share one connection (a `Wait::Read`
    // call holds its thread in recv, one caller per connection).
    {
        let wait = Wait::Reactor;
        let seen: Seen = Arc::default();
        let port = relay(srv.addr(), seen.clone()).await;
        let mut p = real.iiop_profile().unwrap();
        p.port = port;
        let ior = Ior::new(real.type_id.clone(), vec![p.to_tagged()]);
        let c = Arc::new(BenchClient::connect_with(&ior, &cfg(), wait).await.unwrap());
        let calls: Vec<_> = (0..CALLS)
            .map(|i| {
                let c = c.clone();
                tokio::spawn(async move {
                    let sent = Payload::WString(vec![WString(format!("race {i} é \u{1F600}"))]);
                    let got = c.payload(CallMode::Echo, &sent).await;
                    (sent, got)
                })
            })
            .collect();
        for call in calls {
            let (sent, got) = tokio::time::timeout(Duration::from_secs(20), call)
                .await
                .expect("each call within 20 s")
                .unwrap();
            let got = got.unwrap_or_else(|e| panic!("{wait:?}: {e}"));
            assert_eq!(got, Some(sent), "{wait:?}");
        }
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 1, "{wait:?}: one connection: {seen:?}");
        let requests = &seen[0];
        assert!(requests.len() >= CALLS, "{wait:?}: {requests:?}");
        assert!(
            requests[0].1,
            "{wait:?}: the first Request in the stream carries the CodeSets context: {requests:?}"
        );
        let carried = requests.iter().filter(|r| r.1).count();
        assert_eq!(
            carried, 1,
            "{wait:?}: exactly one Request carries it: {requests:?}"
        );
    }
}
