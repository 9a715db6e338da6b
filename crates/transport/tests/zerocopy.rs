//! Zero-copy output (spliced runs sent with vectored writes): what leaves
//! the client is byte-for-byte what the copying path sends, in every GIOP
//! version and byte order, through the direct-write fast path and the
//! writer task, across partial writes on a tiny send buffer, for prepared
//! requests, and when the message must be fragmented.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use iiop_cdr::{ByteOrder, CharSeq, Octets};
use iiop_giop::codec::{CodecConfig, Decoder};
use iiop_giop::header::MsgType;
use iiop_giop::message::{ResponseMode, TargetAddress};
use iiop_giop::Version;
use iiop_transport::{ClientConfig, Connection};
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

/// Everything one client connection sends, captured by a server that
/// reads nothing for `stall` (so that the client's writes go partial),
/// then reads to EOF.
async fn capture(
    cfg: ClientConfig,
    version: Version,
    stall: Duration,
    send: impl AsyncFnOnce(&Connection),
) -> Vec<u8> {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        tokio::time::sleep(stall).await;
        let mut all = Vec::new();
        sock.read_to_end(&mut all).await.unwrap();
        all
    });
    let c = Connection::connect("127.0.0.1", port, version, &cfg, None)
        .await
        .unwrap();
    send(&c).await;
    drop(c);
    tokio::time::timeout(Duration::from_secs(20), server)
        .await
        .expect("capture finished in time")
        .unwrap()
}

fn payload(n: usize, seed: u8) -> Bytes {
    Bytes::from(
        (0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect::<Vec<u8>>(),
    )
}

fn key() -> TargetAddress {
    TargetAddress::Key(Bytes::from_static(b"sink"))
}

/// A mixed batch of oneways: spliced octets followed by a double (the
/// alignment after a run), a char sequence, one below the cutoff, and
/// prepared requests with a spliced tail.
async fn batch(c: &Connection) {
    let big = Octets(payload(64 * 1024 + 3, 1));
    let chars = CharSeq(Bytes::from(vec![b'q'; 20_000]));
    let small = Octets(payload(100, 2));
    c.request(&key(), "big", ResponseMode::Oneway, |w| {
        iiop_cdr::to_writer(w, &(7u8, &big, 1.5f64, &chars))
    })
    .await
    .unwrap();
    c.request(&key(), "small", ResponseMode::Oneway, |w| {
        iiop_cdr::to_writer(w, &(&small, 2.5f64))
    })
    .await
    .unwrap();
    let prep = c
        .prepare(&key(), "prep", ResponseMode::Oneway, |w| {
            iiop_cdr::to_writer(w, &(3u16, Octets(payload(40_000, 3))))
        })
        .unwrap();
    for _ in 0..3 {
        c.send_prepared(&prep).await.unwrap();
    }
}

/// The GIOP messages in a captured stream (reassembled), checking that
/// the stream is whole: (type, total length incl. header).
fn messages(stream: &[u8]) -> Vec<(MsgType, usize)> {
    let mut buf = BytesMut::from(stream);
    let mut d = Decoder::new(CodecConfig::default());
    let mut out = Vec::new();
    while let Some(f) = d.decode(&mut buf).unwrap() {
        out.push((f.header.msg_type, 12 + f.payload.len()));
    }
    assert!(buf.is_empty(), "{} bytes left over", buf.len());
    out
}

fn cfg(splice: Option<usize>, order: ByteOrder) -> ClientConfig {
    ClientConfig {
        order,
        splice_cutoff: splice,
        ..ClientConfig::default()
    }
}

#[tokio::test]
async fn spliced_requests_are_byte_identical_to_copied_ones() {
    for version in [Version::V1_0, Version::V1_1, Version::V1_2] {
        for order in [ByteOrder::Big, ByteOrder::Little] {
            let copied = capture(cfg(None, order), version, Duration::ZERO, batch).await;
            let spliced = capture(cfg(Some(1024), order), version, Duration::ZERO, batch).await;
            assert!(copied == spliced, "{version:?} {order:?} differ");
            // Again with the requests queueing behind a stalled socket, so
            // that a message is appended right after a spliced run (the
            // writer task path rather than the direct write).
            let mut tiny = cfg(Some(1024), order);
            tiny.send_buffer = Some(4096);
            let queued = capture(tiny, version, Duration::from_millis(50), batch).await;
            assert!(copied == queued, "{version:?} {order:?} differ when queued");
            let msgs = messages(&spliced);
            let requests = msgs.iter().filter(|m| m.0 == MsgType::Request).count();
            assert_eq!(requests, 5, "{version:?} {order:?}");
            // 1.2 clients say goodbye.
            assert_eq!(
                msgs.last().unwrap().0 == MsgType::CloseConnection,
                version.is_12()
            );
        }
    }
}

#[tokio::test]
async fn partial_writes_across_runs_on_a_tiny_send_buffer() {
    // 4 KiB SO_SNDBUF and a server that reads nothing for a while: the
    // 128 KiB messages queue up behind the first and every write is
    // partial, ending inside buffer pieces and spliced runs alike.
    let send = async |c: &Connection| {
        for i in 0..12u8 {
            let data = Octets(payload(128 * 1024 + i as usize, i));
            c.request(&key(), "big", ResponseMode::Oneway, |w| {
                iiop_cdr::to_writer(w, &(i, &data, f64::from(i)))
            })
            .await
            .unwrap();
        }
    };
    let mut tiny = cfg(Some(16 * 1024), ByteOrder::Little);
    tiny.send_buffer = Some(4096);
    let spliced = capture(tiny, Version::V1_2, Duration::from_millis(200), send).await;
    let copied = capture(
        cfg(None, ByteOrder::Little),
        Version::V1_2,
        Duration::ZERO,
        send,
    )
    .await;
    assert!(copied == spliced, "streams differ");
    let msgs = messages(&spliced);
    assert_eq!(msgs.len(), 13);
    // 12 header + 16 request header ("big", key "sink", no contexts) ... the
    // exact size of the first request: header 12, id 4, flags+pad 4,
    // disposition 2 + pad 2, key 4+4, op 4+4, contexts 4 = 44; body at 48:
    // u8, pad 3, length 4, 131072 octets, pad to 8, double 8.
    assert_eq!(msgs[0], (MsgType::Request, 48 + 8 + 131072 + 8));
}

#[tokio::test]
async fn fragmented_messages_with_runs_match_the_copying_path() {
    let mut a = cfg(Some(1024), ByteOrder::Big);
    let mut b = cfg(None, ByteOrder::Big);
    a.fragment_size = Some(8192);
    b.fragment_size = Some(8192);
    let copied = capture(b, Version::V1_2, Duration::ZERO, batch).await;
    let spliced = capture(a, Version::V1_2, Duration::ZERO, batch).await;
    assert!(copied == spliced, "streams differ");
    // Reassembled: the same five requests and the goodbye.
    assert_eq!(messages(&spliced).len(), 6);
    // The first message really was fragmented: 8192-byte first piece.
    let first_size = u32::from_be_bytes(spliced[8..12].try_into().unwrap());
    assert_eq!(first_size, 8192 - 12);
    assert_eq!(spliced[6] & 0x02, 0x02, "more-fragments flag");
}
