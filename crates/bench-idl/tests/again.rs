//! The bench client does what the connection core's `Follow` decides
//! after an answer that is not the call's result: a CloseConnection before
//! the reply means "send it again on a new connection", and a GIOP 1.2
//! NEEDS_ADDRESSING_MODE means "send it again, addressed as asked". A test
//! double plays the peer's first answer; everything after it reaches a
//! real bench server, so the call's result is real.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use iiop_bench_idl::client::{BenchClient, Wait};
use iiop_cdr::{ByteOrder, Options};
use iiop_giop::ior::Ior;
use iiop_giop::message::{encode_reply, ReplyStatus};
use iiop_giop::Version;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

mod common;
use common::{cfg, server};

/// What the double answers to the first request of its first connection.
#[derive(Debug, Clone, Copy)]
enum First {
    /// CloseConnection, then the connection is closed.
    Close,
    /// A Reply with NEEDS_ADDRESSING_MODE asking for ProfileAddr (1);
    /// the rest of the connection goes to the real server.
    Readdress,
}

/// One GIOP message off `s`: header and body, the body's size checked.
async fn read_message(s: &mut TcpStream) -> Vec<u8> {
    let mut m = vec![0u8; 12];
    s.read_exact(&mut m).await.unwrap();
    assert_eq!(&m[..4], b"GIOP");
    let size = if m[6] & 1 == 1 {
        u32::from_le_bytes(m[8..12].try_into().unwrap())
    } else {
        u32::from_be_bytes(m[8..12].try_into().unwrap())
    } as usize;
    assert!(size < 1 << 20, "a test request of {size} bytes");
    m.resize(12 + size, 0);
    s.read_exact(&mut m[12..]).await.unwrap();
    m
}

/// A double in front of `real`: the first connection's first Request gets
/// `first`, everything else is relayed. Returns the double's port and its
/// connection count.
async fn double(real: std::net::SocketAddr, first: First) -> (u16, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let conns = Arc::new(AtomicUsize::new(0));
    let seen = conns.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            let n = seen.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                if n == 0 {
                    let m = read_message(&mut s).await;
                    // GIOP 1.2 Request (type 0): the request id is the
                    // first field of the header.
                    assert_eq!((m[4], m[5], m[7]), (1, 2, 0), "{m:?}");
                    let little = m[6] & 1 == 1;
                    let id = m[12..16].try_into().unwrap();
                    let id = if little {
                        u32::from_le_bytes(id)
                    } else {
                        u32::from_be_bytes(id)
                    };
                    let order = if little {
                        ByteOrder::Little
                    } else {
                        ByteOrder::Big
                    };
                    match first {
                        First::Close => {
                            let mut c = *b"GIOP\x01\x02\x00\x05\x00\x00\x00\x00";
                            c[6] = u8::from(little);
                            s.write_all(&c).await.unwrap();
                            return;
                        }
                        First::Readdress => {
                            let mut b = BytesMut::new();
                            encode_reply(
                                &mut b,
                                Version::V1_2,
                                order,
                                Options::default(),
                                id,
                                ReplyStatus::NeedsAddressingMode,
                                &[],
                                |w| {
                                    w.write_i16(1);
                                    Ok(())
                                },
                            )
                            .unwrap();
                            s.write_all(&b).await.unwrap();
                        }
                    }
                }
                let mut r = TcpStream::connect(real).await.unwrap();
                let _ = tokio::io::copy_bidirectional(&mut s, &mut r).await;
            });
        }
    });
    (port, conns)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_the_server_closed_before_answering_goes_again_on_a_new_connection() {
    let srv = server();
    let key = srv.refs().ior.iiop_profile().unwrap().object_key;
    for wait in [Wait::Reactor, Wait::Read] {
        let (port, conns) = double(srv.addr(), First::Close).await;
        let ior = Ior::builder("IDL:Bench/Perf:1.0")
            .iiop("127.0.0.1", port, key.clone(), &[])
            .build();
        let c = BenchClient::connect_with(&ior, &cfg(), wait).await.unwrap();
        tokio::time::timeout(Duration::from_secs(20), c.ping())
            .await
            .expect("ping within 20 s")
            .unwrap_or_else(|e| panic!("{wait:?}: {e}"));
        assert_eq!(conns.load(Ordering::SeqCst), 2, "{wait:?}");
        assert!(c.forwards().is_empty(), "a retry is not a forward");
        // Later calls use the new connection.
        c.ping().await.unwrap();
        assert_eq!(conns.load(Ordering::SeqCst), 2, "{wait:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_is_sent_again_in_the_addressing_disposition_asked_for() {
    let srv = server();
    let key = srv.refs().ior.iiop_profile().unwrap().object_key;
    for wait in [Wait::Reactor, Wait::Read] {
        let (port, conns) = double(srv.addr(), First::Readdress).await;
        let ior = Ior::builder("IDL:Bench/Perf:1.0")
            .iiop("127.0.0.1", port, key.clone(), &[])
            .build();
        let c = BenchClient::connect_with(&ior, &cfg(), wait).await.unwrap();
        // The double answers the first request; the call goes again, in
        // ProfileAddr, on the same connection and gets the real answer.
        let alive = tokio::time::timeout(Duration::from_secs(20), c.non_existent())
            .await
            .expect("_non_existent within 20 s")
            .unwrap_or_else(|e| panic!("{wait:?}: {e}"));
        assert!(!alive, "{wait:?}");
        c.mark(7).await.unwrap();
        let st = c.stats().await.unwrap();
        assert_eq!((st.oneways, st.last_mark), (1, 7), "{wait:?}");
        assert_eq!(conns.load(Ordering::SeqCst), 1, "{wait:?}");
        c.reset().await.unwrap();
    }
}
