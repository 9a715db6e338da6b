//! Synthetic captures built byte by byte: request/reply pairing and
//! response times, TCP reassembly (out of order, retransmitted, starting
//! mid-connection), GIOP fragments in both byte orders, IPv6 on a
//! loopback link type, and the conformance findings with frame numbers.

use std::net::SocketAddr;

use bytes::BytesMut;
use iiop_capture::synth::{Flow, PcapWriter, SegmentSpec, ETHERNET, NULL};
use iiop_capture::{analyze, Config, Summary};
use iiop_cdr::{ByteOrder, Options};
use iiop_giop::context::ServiceContext;
use iiop_giop::header::Version;
use iiop_giop::message::{encode_reply, encode_request, RequestHead};
use iiop_giop::{codec::fragment_message, ReplyStatus, ResponseMode, TargetAddress};

const US: u64 = 1_000;
const T0: u64 = 1_700_000_000_000_000_000;

fn request(
    v: Version,
    order: ByteOrder,
    id: u32,
    op: &str,
    oneway: bool,
    n: usize,
    ctx: &[ServiceContext],
) -> Vec<u8> {
    let mut buf = BytesMut::new();
    let target = TargetAddress::Key(bytes::Bytes::from_static(b"Bench"));
    let head = RequestHead {
        request_id: id,
        response: if oneway {
            ResponseMode::Oneway
        } else {
            ResponseMode::Twoway
        },
        target: &target,
        operation: op,
        contexts: ctx,
    };
    encode_request(&mut buf, v, order, Options::default(), &head, |w| {
        w.write_u32(n as u32);
        for i in 0..n {
            w.write_i32(i as i32 * 7 + 3);
        }
        Ok(())
    })
    .unwrap();
    buf.to_vec()
}

fn reply(v: Version, order: ByteOrder, id: u32, n: usize) -> Vec<u8> {
    let mut buf = BytesMut::new();
    encode_reply(
        &mut buf,
        v,
        order,
        Options::default(),
        id,
        ReplyStatus::NoException,
        &[],
        |w| {
            w.write_u32(n as u32);
            for i in 0..n {
                w.write_i32(i as i32 * 7 + 3);
            }
            Ok(())
        },
    )
    .unwrap();
    buf.to_vec()
}

/// A GIOP 1.0 twoway `echo_long` request `id` that carries a CodeSets
/// context: the finding `codeset-in-1.0`.
fn codesets_in_10(id: u32) -> Vec<u8> {
    let cs = ServiceContext {
        id: 1,
        data: bytes::Bytes::from_static(&[0, 0, 0, 0, 0, 1, 0, 1, 0, 1, 1, 9]),
    };
    request(
        Version::V1_0,
        ByteOrder::Big,
        id,
        "echo_long",
        false,
        1,
        std::slice::from_ref(&cs),
    )
}

fn addrs(v6: bool) -> (SocketAddr, SocketAddr) {
    if v6 {
        (
            "[::1]:40000".parse().unwrap(),
            "[::1]:2809".parse().unwrap(),
        )
    } else {
        (
            "127.0.0.1:40000".parse().unwrap(),
            "127.0.0.1:2809".parse().unwrap(),
        )
    }
}

fn run(segs: &[(u64, SegmentSpec<'_>)], linktype: i32) -> Summary {
    let mut w = PcapWriter::new(Vec::new(), linktype).unwrap();
    for (ts, s) in segs {
        w.segment(*ts, s).unwrap();
    }
    let bytes = w.into_inner();
    analyze(&bytes[..], Config::default()).unwrap()
}

fn op<'a>(s: &'a Summary, name: &str) -> &'a iiop_capture::OpStats {
    s.ops
        .iter()
        .find(|o| o.operation == name)
        .unwrap_or_else(|| panic!("no op {name}: {:?}", s.ops))
}

/// Three echo calls with response times 100, 200, 300 µs, one oneway, in
/// both byte orders and every version; exact counts and times.
#[test]
fn pairs_requests_and_replies_with_exact_times() {
    for (v, order) in [
        (Version::V1_0, ByteOrder::Big),
        (Version::V1_1, ByteOrder::Little),
        (Version::V1_2, ByteOrder::Big),
        (Version::V1_2, ByteOrder::Little),
    ] {
        let (c, s) = addrs(false);
        let mut f = Flow::new(c, s, [1000, 9000]);
        let msgs: Vec<(bool, Vec<u8>, u64)> = vec![
            (true, request(v, order, 1, "echo_long", false, 10, &[]), 0),
            (false, reply(v, order, 1, 10), 100),
            (
                true,
                request(v, order, 2, "echo_long", false, 10, &[]),
                1000,
            ),
            (false, reply(v, order, 2, 10), 1200),
            (
                true,
                request(v, order, 3, "echo_long", false, 10, &[]),
                2000,
            ),
            (false, reply(v, order, 3, 10), 2300),
            (
                true,
                request(v, order, 4, "send_oneway_long", true, 3, &[]),
                3000,
            ),
        ];
        let mut segs = Vec::new();
        for s in f.handshake() {
            segs.push((T0, s));
        }
        for (cl, m, t) in &msgs {
            for s in f.send(*cl, m, 1460) {
                segs.push((T0 + 10 * US + t * US, s));
            }
        }
        let sum = run(&segs, ETHERNET);
        let e = op(&sum, "echo_long");
        assert_eq!(
            (e.calls, e.replies, e.oneways, e.unanswered),
            (3, 3, 0, 0),
            "{v} {order:?}"
        );
        assert_eq!(e.object_key, "Bench");
        assert_eq!(e.latency.len(), 3);
        assert_eq!(e.latency.min(), e.latency.lowest_equivalent(100 * US));
        assert_eq!(
            e.latency.lowest_equivalent(e.latency.max()),
            e.latency.lowest_equivalent(300 * US)
        );
        assert_eq!(
            e.latency.value_at_quantile(0.5),
            e.latency.highest_equivalent(200 * US)
        );
        assert_eq!(e.statuses.get("NO_EXCEPTION"), Some(&3));
        assert_eq!(e.request_bytes, 3 * msgs[0].1.len() as u64);
        let o = op(&sum, "send_oneway_long");
        assert_eq!((o.calls, o.oneways), (0, 1));
        assert!(sum.findings.is_empty(), "{:?}", sum.findings);
        assert_eq!(sum.connections, 1);
        assert_eq!(sum.mid_stream_connections, 0);
    }
}

/// Segments reordered and retransmitted (whole and overlapping): the same
/// messages and times as in order.
#[test]
fn reassembles_out_of_order_and_retransmitted_segments() {
    let (c, s) = addrs(false);
    let mut f = Flow::new(c, s, [u32::MAX - 50, 77]);
    let req = request(
        Version::V1_2,
        ByteOrder::Little,
        5,
        "echo_long",
        false,
        400,
        &[],
    );
    let rep = reply(Version::V1_2, ByteOrder::Little, 5, 400);
    let mut segs = Vec::new();
    for s in f.handshake() {
        segs.push((T0, s));
    }
    let rq = f.send(true, &req, 500);
    assert!(rq.len() >= 3);
    // Second piece first, then the first, then the first again (a
    // retransmission), then the rest; one overlapping resend.
    segs.push((T0 + 10 * US, rq[1]));
    segs.push((T0 + 11 * US, rq[0]));
    segs.push((T0 + 12 * US, rq[0]));
    for s in &rq[2..] {
        segs.push((T0 + 13 * US, *s));
    }
    let mut overlap = rq[1];
    overlap.payload = &req[400..900];
    overlap.seq = rq[0].seq.wrapping_add(400);
    segs.push((T0 + 14 * US, overlap));
    for s in f.send(false, &rep, 1000) {
        segs.push((T0 + 60 * US, s));
    }
    let sum = run(&segs, ETHERNET);
    let e = op(&sum, "echo_long");
    assert_eq!((e.calls, e.replies), (1, 1));
    // From the first byte's frame (11 µs, the reordered first piece) to
    // the reply's last byte (60 µs).
    assert_eq!(
        e.latency.lowest_equivalent(e.latency.max()),
        e.latency.lowest_equivalent(49 * US)
    );
    assert_eq!(sum.retransmitted_bytes, 500 + 500);
    assert_eq!(sum.out_of_order_segments, 1);
    assert!(sum.findings.is_empty(), "{:?}", sum.findings);
}

/// A capture that starts in the middle of a request: the partial message
/// is skipped, framing resumes at the next `GIOP` with a sane header, the
/// orphan reply is counted as unmatched (not a finding), and the later
/// calls are all measured.
#[test]
fn resynchronises_when_the_capture_starts_mid_connection() {
    let (c, s) = addrs(false);
    let mut f = Flow::new(c, s, [5000, 6000]);
    let first = request(
        Version::V1_2,
        ByteOrder::Big,
        1,
        "echo_long",
        false,
        50,
        &[],
    );
    let mut segs = Vec::new();
    // The first 30 bytes of the first request are before the capture.
    let all = f.send(true, &first, 1460);
    let mut tail = all[0];
    tail.payload = &first[30..];
    tail.seq = tail.seq.wrapping_add(30);
    segs.push((T0, tail));
    let r1 = reply(Version::V1_2, ByteOrder::Big, 1, 50);
    for s in f.send(false, &r1, 1460) {
        segs.push((T0 + 5 * US, s));
    }
    let reqs: Vec<Vec<u8>> = (2..6)
        .map(|id| {
            request(
                Version::V1_2,
                ByteOrder::Big,
                id,
                "echo_long",
                false,
                50,
                &[],
            )
        })
        .collect();
    let reps: Vec<Vec<u8>> = (2..6)
        .map(|id| reply(Version::V1_2, ByteOrder::Big, id, 50))
        .collect();
    for i in 0..4 {
        for s in f.send(true, &reqs[i], 1460) {
            segs.push((T0 + (100 + 100 * i as u64) * US, s));
        }
        for s in f.send(false, &reps[i], 1460) {
            segs.push((T0 + (140 + 100 * i as u64) * US, s));
        }
    }
    let sum = run(&segs, ETHERNET);
    let e = op(&sum, "echo_long");
    assert_eq!((e.calls, e.replies), (4, 4));
    assert_eq!(sum.unmatched_replies, 1);
    assert_eq!(sum.mid_stream_connections, 1);
    assert_eq!(
        e.latency.lowest_equivalent(e.latency.max()),
        e.latency.lowest_equivalent(40 * US)
    );
    assert!(sum.findings.is_empty(), "{:?}", sum.findings);
    assert_eq!(sum.unframed_bytes, (first.len() - 30) as u64);
}

/// GIOP 1.2 requests and replies fragmented (8-multiple pieces) in both
/// byte orders, with the pieces of two requests interleaved, over IPv6
/// on a loopback (DLT_NULL) link.
#[test]
fn decodes_fragments_in_both_byte_orders_over_ipv6() {
    for order in [ByteOrder::Big, ByteOrder::Little] {
        let (c, s) = addrs(true);
        let mut f = Flow::new(c, s, [1, 2]);
        let mut segs = Vec::new();
        for s in f.handshake() {
            segs.push((T0, s));
        }
        let mut fa = BytesMut::new();
        fragment_message(
            &request(Version::V1_2, order, 10, "echo_long", false, 300, &[]),
            256,
            &mut fa,
        )
        .unwrap();
        let mut fb = BytesMut::new();
        fragment_message(
            &request(Version::V1_2, order, 11, "echo_long", false, 300, &[]),
            256,
            &mut fb,
        )
        .unwrap();
        // Interleave: split each at its piece boundaries.
        let pieces = |b: &[u8]| {
            let mut v = Vec::new();
            let mut i = 0;
            while i < b.len() {
                let h = iiop_giop::Header::parse(&b[i..]).unwrap();
                v.push(b[i..i + h.total_len()].to_vec());
                i += h.total_len();
            }
            v
        };
        let (pa, pb) = (pieces(&fa), pieces(&fb));
        assert!(pa.len() >= 4);
        let mut stream = Vec::new();
        for i in 0..pa.len().max(pb.len()) {
            if let Some(p) = pa.get(i) {
                stream.extend_from_slice(p);
            }
            if let Some(p) = pb.get(i) {
                stream.extend_from_slice(p);
            }
        }
        for s in f.send(true, &stream, 100) {
            segs.push((T0 + 10 * US, s));
        }
        let mut fr = BytesMut::new();
        fragment_message(&reply(Version::V1_2, order, 11, 300), 512, &mut fr).unwrap();
        fragment_message(&reply(Version::V1_2, order, 10, 300), 512, &mut fr).unwrap();
        let fr = fr.to_vec();
        for s in f.send(false, &fr, 1000) {
            segs.push((T0 + 90 * US, s));
        }
        let sum = run(&segs, NULL);
        let e = op(&sum, "echo_long");
        assert_eq!((e.calls, e.replies), (2, 2), "{order:?}");
        assert_eq!(sum.fragmented_messages, 4);
        assert_eq!(
            sum.fragments,
            (pa.len() + pb.len() - 2) as u64 + sum.fragments - (pa.len() + pb.len() - 2) as u64
        );
        assert!(sum.fragments as usize >= pa.len() + pb.len() - 2 + 2);
        assert_eq!(e.request_bytes, (fa.len() + fb.len()) as u64);
        assert_eq!(e.request_body_bytes, 2 * (4 + 300 * 4));
        assert!(sum.findings.is_empty(), "{:?}", sum.findings);
    }
}

/// Conformance findings name the frame and carry the bytes: a reply to an
/// id never sent, a CodeSets context in GIOP 1.0, a request id reused
/// while pending, a MessageError, and a bad header where one must start.
#[test]
fn findings_carry_frame_numbers_and_bytes() {
    let (c, s) = addrs(false);
    let mut f = Flow::new(c, s, [100, 200]);
    let mut segs = Vec::new();
    for s in f.handshake() {
        segs.push((T0, s));
    }
    // frames 1, 2: handshake.
    let r1 = codesets_in_10(1);
    let r1b = request(Version::V1_0, ByteOrder::Big, 1, "echo_long", false, 1, &[]);
    let bogus = reply(Version::V1_0, ByteOrder::Big, 99, 1);
    let merr = [b'G', b'I', b'O', b'P', 1, 0, 0, 6, 0, 0, 0, 0];
    for (i, (cl, m)) in [
        (true, &r1[..]),
        (true, &r1b[..]),
        (false, &bogus[..]),
        (false, &merr[..]),
        (false, b"XXXXXXXXXXXXXXXXXXXX".as_slice()),
    ]
    .into_iter()
    .enumerate()
    {
        for s in f.send(cl, m, 1460) {
            segs.push((T0 + (i as u64 + 1) * 100 * US, s));
        }
    }
    let sum = run(&segs, ETHERNET);
    let rules: Vec<(&str, u64)> = sum.findings.iter().map(|f| (f.rule, f.frame)).collect();
    assert_eq!(
        rules,
        vec![
            ("codeset-in-1.0", 3),
            ("duplicate-request-id", 4),
            ("reply-unknown-id", 5),
            ("message-error", 6),
            ("bad-header", 7),
        ]
    );
    assert_eq!(sum.findings[2].bytes, bogus[..64.min(bogus.len())].to_vec());
    assert_eq!(
        sum.findings[0].connection,
        "127.0.0.1:40000 -> 127.0.0.1:2809"
    );
    assert_eq!(sum.message_errors, 1);
}

/// A finding names its connection client first even when the capture
/// starts with the server's bytes and the finding is in the client's
/// first request (the request makes its sender the client before the
/// finding is named).
#[test]
fn a_finding_in_the_first_request_names_the_client_first() {
    let (c, s) = addrs(false);
    let mut f = Flow::new(c, s, [300, 400]);
    let mut segs = Vec::new();
    // No handshake: the first bytes captured are a reply from the server.
    let orphan = reply(Version::V1_0, ByteOrder::Big, 7, 1);
    for s in f.send(false, &orphan, 1460) {
        segs.push((T0, s));
    }
    let r = codesets_in_10(8);
    for s in f.send(true, &r, 1460) {
        segs.push((T0 + 100 * US, s));
    }
    let sum = run(&segs, ETHERNET);
    let rules: Vec<&str> = sum.findings.iter().map(|f| f.rule).collect();
    assert_eq!(rules, ["codeset-in-1.0"]);
    assert_eq!(
        sum.findings[0].connection,
        "127.0.0.1:40000 -> 127.0.0.1:2809"
    );
    assert_eq!(sum.unmatched_replies, 1);
}

/// Memory stays bounded when a segment is lost for good: the hole is
/// skipped at the out-of-order limit and framing resumes.
#[test]
fn a_lost_segment_is_skipped_at_the_limit() {
    let (c, s) = addrs(false);
    let mut f = Flow::new(c, s, [0, 0]);
    let mut w = PcapWriter::new(Vec::new(), ETHERNET).unwrap();
    for s in f.handshake() {
        w.segment(T0, &s).unwrap();
    }
    let mut t = T0;
    let mut lost = false;
    for id in 1..=200u32 {
        let rq = request(
            Version::V1_2,
            ByteOrder::Little,
            id,
            "echo_long",
            false,
            1000,
            &[],
        );
        let rp = reply(Version::V1_2, ByteOrder::Little, id, 1000);
        for s in f.send(true, &rq, 1460) {
            if id == 3 && !lost {
                lost = true;
                continue;
            }
            t += US;
            w.segment(t, &s).unwrap();
        }
        for s in f.send(false, &rp, 1460) {
            t += US;
            w.segment(t, &s).unwrap();
        }
    }
    let bytes = w.into_inner();
    let cfg = Config {
        out_of_order_limit: 64 * 1024,
        ..Config::default()
    };
    let sum = analyze(&bytes[..], cfg).unwrap();
    let e = op(&sum, "echo_long");
    assert_eq!(sum.gaps, 1);
    // Only request 3 is lost; but the requests held behind the hole until
    // the limit was reached were decoded after their replies had passed:
    // those replies are unmatched and the requests unanswered.
    assert_eq!(e.calls, 199);
    assert_eq!(e.replies + e.unanswered, 199);
    assert_eq!(sum.unmatched_replies, 200 - e.replies);
    assert!(e.replies > 150, "{}", e.replies);
    assert_eq!(sum.missing_bytes, 1460);
}

/// A LocateReply answering a Request's id and a Reply answering a
/// LocateRequest's are findings; the Request stays pending, so its own
/// Reply still pairs and is timed.
#[test]
fn locate_replies_and_replies_to_the_wrong_kind_of_request() {
    use iiop_giop::message::LocateStatus;
    use iiop_giop::message::{encode_locate_reply, encode_locate_request, LocateReply};
    let (c, s) = addrs(false);
    let mut f = Flow::new(c, s, [100, 200]);
    let mut segs = Vec::new();
    for s in f.handshake() {
        segs.push((T0, s));
    }
    let v = Version::V1_2;
    let locate_reply = |id| {
        let mut b = BytesMut::new();
        let r = LocateReply {
            request_id: id,
            status: LocateStatus::ObjectHere,
        };
        encode_locate_reply(&mut b, v, ByteOrder::Big, &r).unwrap();
        b.to_vec()
    };
    let locate = |id| {
        let mut b = BytesMut::new();
        let key = TargetAddress::Key(bytes::Bytes::from_static(b"Bench"));
        encode_locate_request(&mut b, v, ByteOrder::Big, id, &key).unwrap();
        b.to_vec()
    };
    let msgs: [(bool, Vec<u8>); 8] = [
        (
            true,
            request(v, ByteOrder::Big, 1, "echo_long", false, 1, &[]),
        ),
        (false, locate_reply(1)),
        (false, reply(v, ByteOrder::Big, 1, 1)),
        (true, locate(2)),
        (false, reply(v, ByteOrder::Big, 2, 1)),
        (true, locate(3)),
        (false, locate_reply(3)),
        (true, locate(4)),
    ];
    for (i, (cl, m)) in msgs.iter().enumerate() {
        for s in f.send(*cl, m, 1460) {
            segs.push((T0 + (i as u64 + 1) * 100 * US, s));
        }
    }
    let sum = run(&segs, ETHERNET);
    let rules: Vec<(&str, u64)> = sum.findings.iter().map(|f| (f.rule, f.frame)).collect();
    assert_eq!(
        rules,
        vec![("locate-reply-to-request", 4), ("reply-to-locate", 7)]
    );
    let echo = op(&sum, "echo_long");
    assert_eq!((echo.calls, echo.replies, echo.unanswered), (1, 1, 0));
    assert_eq!(
        echo.latency.lowest_equivalent(echo.latency.max()),
        echo.latency.lowest_equivalent(200 * US)
    );
    assert_eq!(sum.locate_requests, 3);
    // LocateRequests are an operation of their own on the key they locate:
    // one answered (timed, by status), one answered by a Reply (a finding,
    // no figures), one never answered.
    let loc = sum
        .ops
        .iter()
        .find(|o| o.operation == iiop_capture::analysis::LOCATE_OP && o.object_key == "Bench")
        .expect("a locate op");
    assert_eq!((loc.calls, loc.replies, loc.unanswered), (3, 1, 1));
    assert_eq!(loc.statuses.get("OBJECT_HERE"), Some(&1));
    assert_eq!(loc.latency.len(), 1);
    assert_eq!(
        loc.latency.lowest_equivalent(loc.latency.max()),
        loc.latency.lowest_equivalent(100 * US)
    );
}

/// Hex with spaces and `|` ignored, as bytes.
fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(char::is_ascii_hexdigit).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// An answer in another GIOP version than its request's is a finding
/// against the peer: the bytes seen in the field (a GIOP 1.0 `ping`,
/// request id 7, answered with a GIOP 1.2 Reply), a LocateReply of a
/// lower version than its LocateRequest; a Reply in its request's
/// version is not one.
#[test]
fn an_answer_in_another_version_than_its_request_is_a_finding() {
    use iiop_giop::message::{
        encode_locate_reply, encode_locate_request, LocateReply, LocateStatus,
    };
    let (c, s) = addrs(false);
    let mut f = Flow::new(c, s, [100, 200]);
    let mut segs = Vec::new();
    for s in f.handshake() {
        segs.push((T0, s));
    }
    let ping = unhex(
        "47494f50 01 00 01 00 28000000 | 00000000 07000000 01000000 05000000 \
         42656e6368000000 05000000 70696e6700000000 00000000",
    );
    let reply12 = unhex("47494f50 01 02 01 01 0c000000 | 07000000 00000000 00000000");
    let mut locate = BytesMut::new();
    let key = TargetAddress::Key(bytes::Bytes::from_static(b"Bench"));
    encode_locate_request(&mut locate, Version::V1_2, ByteOrder::Big, 8, &key).unwrap();
    let mut located = BytesMut::new();
    let here = LocateReply {
        request_id: 8,
        status: LocateStatus::ObjectHere,
    };
    encode_locate_reply(&mut located, Version::V1_1, ByteOrder::Big, &here).unwrap();
    let good = request(Version::V1_0, ByteOrder::Big, 9, "echo_long", false, 1, &[]);
    let good_reply = reply(Version::V1_0, ByteOrder::Big, 9, 1);
    let msgs: [(bool, &[u8]); 6] = [
        (true, &ping),
        (false, &reply12),
        (true, &locate),
        (false, &located),
        (true, &good),
        (false, &good_reply),
    ];
    for (i, (cl, m)) in msgs.iter().enumerate() {
        for s in f.send(*cl, m, 1460) {
            segs.push((T0 + (i as u64 + 1) * 100 * US, s));
        }
    }
    let sum = run(&segs, ETHERNET);
    let rules: Vec<(&str, u64)> = sum.findings.iter().map(|f| (f.rule, f.frame)).collect();
    assert_eq!(rules, [("reply-version", 4), ("reply-version", 6)]);
    assert_eq!(
        sum.findings[0].detail,
        "Reply in GIOP 1.2 to request id 7, a GIOP 1.0 Request: the peer's error \
         (an answer must be in its request's GIOP version)"
    );
    assert_eq!(sum.findings[0].bytes, reply12);
    assert_eq!(
        sum.findings[1].detail,
        "LocateReply in GIOP 1.1 to request id 8, a GIOP 1.2 LocateRequest: the peer's error \
         (an answer must be in its request's GIOP version)"
    );
    // The answers are still paired and timed.
    let ping_op = op(&sum, "ping");
    assert_eq!((ping_op.calls, ping_op.replies), (1, 1));
    assert_eq!(sum.finding_counts.get("reply-version"), Some(&2));
}

/// The pcapng writer: the same conversation as legacy pcap, read back with
/// the same pairs, nanosecond times kept (a 1 µs + 7 ns response time),
/// the FIN of each side counted as an end, on both link types.
#[test]
fn pcapng_writer_reads_back_exactly() {
    use iiop_capture::synth::PcapngWriter;
    for linktype in [ETHERNET, NULL] {
        let (c, s) = addrs(false);
        let mut f = Flow::new(c, s, [7, 70_000]);
        let mut w = PcapngWriter::new(Vec::new(), linktype).unwrap();
        for seg in f.handshake() {
            w.segment(T0, &seg).unwrap();
        }
        let req = request(
            Version::V1_2,
            ByteOrder::Little,
            5,
            "echo_long",
            false,
            3,
            &[],
        );
        let rep = reply(Version::V1_2, ByteOrder::Little, 5, 3);
        for seg in f.send(true, &req, 16) {
            w.segment(T0 + US, &seg).unwrap();
        }
        for seg in f.send(false, &rep, 1460) {
            w.segment(T0 + 2 * US + 7, &seg).unwrap();
        }
        w.segment(T0 + 3 * US, &f.fin(true)).unwrap();
        w.segment(T0 + 3 * US, &f.fin(false)).unwrap();
        let packets = w.packets;
        let bytes = w.into_inner();
        let sum = analyze(&bytes[..], Config::default()).unwrap();
        assert_eq!(sum.frames, packets);
        assert_eq!(packets, 2 + req.len().div_ceil(16) as u64 + 1 + 2);
        assert_eq!(sum.connections, 1);
        assert_eq!(sum.mid_stream_connections, 0);
        assert_eq!(sum.gaps, 0);
        let o = op(&sum, "echo_long");
        assert_eq!((o.calls, o.replies, o.unanswered), (1, 1, 0));
        // First byte of the request (T0 + 1 µs) to the reply's last.
        assert_eq!(o.latency.max(), 1_007);
        assert!(sum.findings.is_empty(), "{:?}", sum.findings);
    }
}

/// Two connections whose clients both number their calls from 1, the
/// calls and replies interleaved: each reply is paired with its own
/// connection's request (Wireshark pairs it with the latest request of
/// the id on any connection). `echo_long` on one connection is answered
/// after 300 µs, `echo_short` on the other after 100 µs, though the
/// other's request of the same id came last.
#[test]
fn connections_reusing_request_ids_pair_their_own_requests() {
    let v = Version::V1_2;
    let o = ByteOrder::Little;
    let server: SocketAddr = "127.0.0.1:2809".parse().unwrap();
    let mut a = Flow::new("127.0.0.1:40001".parse().unwrap(), server, [100, 200]);
    let mut b = Flow::new("127.0.0.1:40002".parse().unwrap(), server, [300, 400]);
    let (ra, rb) = (
        request(v, o, 1, "echo_long", false, 1, &[]),
        request(v, o, 1, "echo_short", false, 1, &[]),
    );
    let (pa, pb) = (reply(v, o, 1, 1), reply(v, o, 1, 1));
    let mut segs = Vec::new();
    for s in a.handshake().into_iter().chain(b.handshake()) {
        segs.push((T0, s));
    }
    for (t, s) in [
        (0, a.send(true, &ra, 1460)),
        (100, b.send(true, &rb, 1460)),
        (200, b.send(false, &pb, 1460)),
        (300, a.send(false, &pa, 1460)),
    ] {
        segs.extend(s.into_iter().map(|s| (T0 + t * US, s)));
    }
    let sum = run(&segs, ETHERNET);
    for (name, us) in [("echo_long", 300), ("echo_short", 100)] {
        let e = op(&sum, name);
        assert_eq!((e.calls, e.replies, e.unanswered), (1, 1, 0), "{name}");
        assert_eq!(
            e.latency.max(),
            e.latency.highest_equivalent(us * US),
            "{name}"
        );
    }
    assert!(sum.findings.is_empty(), "{:?}", sum.findings);
}

/// The capture saw the client's SYN but lost its first data segment;
/// the segments after it wait out of order until the capture ends. They
/// are framed from the next message start, as after any hole: the
/// second and third calls are counted (unanswered: their replies came
/// while they were held, and pair with nothing).
#[test]
fn bytes_after_a_lost_first_segment_are_framed_at_the_end() {
    let (c, s) = addrs(false);
    let mut f = Flow::new(c, s, [100, 200]);
    let v = Version::V1_2;
    let o = ByteOrder::Big;
    let mut segs: Vec<_> = f.handshake().into_iter().map(|s| (T0, s)).collect();
    let calls: Vec<_> = (1..=3)
        .map(|id| request(v, o, id, "echo_long", false, 2, &[]))
        .collect();
    let replies: Vec<_> = (1..=3).map(|id| reply(v, o, id, 2)).collect();
    for (i, m) in calls.iter().enumerate() {
        // The first call's one segment is lost.
        let sent = f.send(true, m, 1460);
        if i > 0 {
            segs.extend(sent.into_iter().map(|s| (T0 + i as u64 * 100 * US, s)));
        }
    }
    for (i, m) in replies.iter().enumerate() {
        let t = T0 + (i as u64 * 100 + 50) * US;
        segs.extend(f.send(false, m, 1460).into_iter().map(|s| (t, s)));
    }
    let sum = run(&segs, ETHERNET);
    let e = op(&sum, "echo_long");
    // The replies came while the calls were held: not paired then.
    assert_eq!((e.calls, e.replies, e.unanswered), (2, 0, 2));
    assert_eq!(sum.unmatched_replies, 3);
    assert_eq!((sum.gaps, sum.missing_bytes), (1, calls[0].len() as u64));
    assert!(sum.findings.is_empty(), "{:?}", sum.findings);
}

/// The bound on calls awaiting replies is over every connection: with
/// room for one, the first connection's call waits for its reply and the
/// second's is counted unanswered at once (its reply then answers an id
/// the analysis does not hold: a finding).
#[test]
fn the_pending_bound_is_shared_by_every_connection() {
    let v = Version::V1_2;
    let o = ByteOrder::Little;
    let server: SocketAddr = "127.0.0.1:2809".parse().unwrap();
    let mut a = Flow::new("127.0.0.1:40001".parse().unwrap(), server, [100, 200]);
    let mut b = Flow::new("127.0.0.1:40002".parse().unwrap(), server, [300, 400]);
    let (ra, rb) = (
        request(v, o, 1, "echo_long", false, 1, &[]),
        request(v, o, 1, "echo_short", false, 1, &[]),
    );
    let (pa, pb) = (reply(v, o, 1, 1), reply(v, o, 1, 1));
    let mut segs = Vec::new();
    for s in a.handshake().into_iter().chain(b.handshake()) {
        segs.push((T0, s));
    }
    for s in [
        a.send(true, &ra, 1460),
        b.send(true, &rb, 1460),
        b.send(false, &pb, 1460),
        a.send(false, &pa, 1460),
    ] {
        segs.extend(s.into_iter().map(|s| (T0 + 10 * US, s)));
    }
    let mut w = PcapWriter::new(Vec::new(), ETHERNET).unwrap();
    for (ts, s) in &segs {
        w.segment(*ts, s).unwrap();
    }
    let cfg = Config {
        max_pending: 1,
        ..Config::default()
    };
    let sum = analyze(&w.into_inner()[..], cfg).unwrap();
    let (l, s) = (op(&sum, "echo_long"), op(&sum, "echo_short"));
    assert_eq!((l.calls, l.replies, l.unanswered), (1, 1, 0));
    assert_eq!((s.calls, s.replies, s.unanswered), (1, 0, 1));
    let rules: Vec<_> = sum.findings.iter().map(|f| f.rule).collect();
    assert_eq!(rules, ["reply-unknown-id"]);
}
