//! The client core's protocol behaviour, driven by hand: bytes from a
//! "server" written with the message encoders, time from one base instant
//! plus offsets. No socket, no sleep.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use iiop_cdr::{ByteOrder, Options};

use super::*;
use crate::codec::fragment_message;
use crate::conn::epoch;
use crate::context::CodeSetComponentInfo;
use crate::header::{Header, MsgType, Version};
use crate::message::{
    encode_empty, encode_locate_reply, encode_location_forward, encode_reply, LocateReply,
    LocateStatus, Message, ReplyStatus, ResponseMode, TargetAddress,
};

const ADDR: &str = "peer:2809";

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn cfg() -> ConnConfig {
    ConnConfig {
        order: ByteOrder::Big,
        ..ConnConfig::default()
    }
}

fn conn_with(version: Version, cfg: &ConnConfig, code_sets: bool) -> ClientConn {
    let cs = CodeSetComponentInfo::ours();
    let setup = ClientSetup::negotiate(ADDR.into(), version, cfg, code_sets.then_some(&cs));
    ClientConn::new(setup, cfg)
}

fn conn(version: Version) -> ClientConn {
    conn_with(version, &cfg(), false)
}

fn key() -> TargetAddress {
    TargetAddress::Key(Bytes::from_static(b"Bench"))
}

/// Queue an `op` request to `Bench`; its id.
fn send_req<F>(
    c: &mut ClientConn,
    response: ResponseMode,
    contexts: &[ServiceContext],
    timeout: Option<Duration>,
    now: Option<Instant>,
    body: F,
) -> Result<u32, ClientError>
where
    F: FnOnce(&mut Writer<'_>) -> Result<(), iiop_cdr::CdrError>,
{
    let target = key();
    let out = Outgoing::Request {
        target: &target,
        operation: "op",
        response,
        contexts,
        body,
    };
    c.send(out, timeout, now)
}

/// Queue a twoway `op` with a u32 body; its id.
fn twoway(c: &mut ClientConn, timeout: Option<Duration>, now: Option<Instant>) -> u32 {
    send_req(c, ResponseMode::Twoway, &[], timeout, now, |w| {
        w.write_u32(7);
        Ok(())
    })
    .unwrap()
}

/// Everything queued, as bytes, and the queue emptied (as if written).
fn written(c: &mut ClientConn) -> Vec<u8> {
    let o = c.outbox();
    let v = o.to_vec();
    o.consume(v.len());
    v
}

/// The messages in a byte stream, decoded as a server would.
fn messages(mut bytes: &[u8]) -> Vec<Message> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let h = Header::parse(bytes).unwrap();
        let n = h.total_len();
        let payload = Bytes::copy_from_slice(&bytes[12..n]);
        out.push(Message::decode(&h, payload, Options::default()).unwrap());
        bytes = &bytes[n..];
    }
    out
}

fn reply(version: Version, id: u32, value: u32) -> BytesMut {
    let mut b = BytesMut::new();
    encode_reply(
        &mut b,
        version,
        ByteOrder::Little,
        Options::default(),
        id,
        ReplyStatus::NoException,
        &[],
        |w| {
            w.write_u32(value);
            Ok(())
        },
    )
    .unwrap();
    b
}

fn receive(c: &mut ClientConn, bytes: &[u8]) {
    c.read_buf().extend_from_slice(bytes);
}

fn value(inc: Incoming) -> u32 {
    let r = inc.into_reply(ADDR).unwrap();
    r.body.reader(Options::default()).read_u32().unwrap()
}

#[test]
fn request_ids_count_up_and_replies_match_in_any_order() {
    let mut c = conn(Version::V1_2);
    let a = twoway(&mut c, None, None);
    let b = twoway(&mut c, None, None);
    assert_eq!((a, b), (1, 2));
    let sent = messages(&written(&mut c));
    let ids: Vec<u32> = sent
        .iter()
        .map(|m| match m {
            Message::Request(r) => r.header.request_id,
            m => panic!("{m:?}"),
        })
        .collect();
    assert_eq!(ids, [1, 2]);
    receive(&mut c, &reply(Version::V1_2, b, 20));
    receive(&mut c, &reply(Version::V1_2, 99, 0)); // nobody waits: dropped
    receive(&mut c, &reply(Version::V1_2, a, 10));
    let (id, inc) = c.poll().unwrap().unwrap();
    assert_eq!((id, value(inc)), (2, 20));
    let (id, inc) = c.poll().unwrap().unwrap();
    assert_eq!((id, value(inc)), (1, 10));
    assert!(c.poll().unwrap().is_none());
    assert!(!c.is_waiting(1) && !c.is_waiting(2));
}

/// The parts in the order a driver that keeps them under separate locks
/// calls them: one id sequence, the waiter registered before the bytes
/// are queued, an abandoned request waited for no more, answers handed
/// to their waiters.
#[test]
fn requests_begin_queue_or_abandon_and_answers_reach_their_waiters() {
    let s = ClientSetup::negotiate(ADDR.into(), Version::V1_2, &cfg(), None);
    let mut q = SendQueue::new(&cfg());
    let mut p: Requests<&'static str> = Requests::default();
    let mut inbound = Inbound::new(CodecConfig::default(), s.wire.opts);
    let target = key();
    let twoway = Sending::Request(ResponseMode::Twoway);
    let a = p.begin(twoway, || "a", None).unwrap();
    assert_eq!((a.id, p.len()), (1, 1), "waiting before anything is queued");
    q.queue(&s, &a, Outgoing::locate(&target)).unwrap();
    let oneway = p
        .begin(Sending::Request(ResponseMode::Oneway), || "never", None)
        .unwrap();
    assert_eq!((oneway.id, p.len()), (2, 1), "a oneway waits for nothing");
    let _ = p.abandon(oneway);
    let b = p.begin(twoway, || "b", None).unwrap();
    assert_eq!(p.abandon(b), Some("b"));
    assert_eq!(p.len(), 1);
    let c = p.begin(Sending::Locate, || "c", None).unwrap();
    assert_eq!(c.id, 4, "one sequence, abandoned ids included");
    q.queue(&s, &c, Outgoing::locate(&target)).unwrap();
    let here = |id| {
        let mut b = BytesMut::new();
        let status = LocateStatus::ObjectHere;
        encode_locate_reply(
            &mut b,
            Version::V1_2,
            ByteOrder::Big,
            &LocateReply {
                request_id: id,
                status,
            },
        )
        .unwrap();
        b
    };
    for id in [3, 4, 1] {
        inbound.read_buf().extend_from_slice(&here(id));
    }
    let mut got = Vec::new();
    while let Some((id, w, _)) = inbound.next_waited(&s, |id| p.complete(id)).unwrap() {
        got.push((id, w));
    }
    assert_eq!(
        got,
        [(4, "c"), (1, "a")],
        "the abandoned id's answer is dropped"
    );
    p.fail(ClientError::LocallyClosed);
    assert_eq!(
        p.begin(twoway, || "d", None).unwrap_err(),
        ClientError::LocallyClosed
    );
}

#[test]
fn a_oneway_waits_for_nothing_and_a_reply_arrives_byte_by_byte() {
    let mut c = conn(Version::V1_0);
    let id = send_req(&mut c, ResponseMode::Oneway, &[], None, None, |_| Ok(())).unwrap();
    assert!(!c.is_waiting(id));
    let id = twoway(&mut c, None, None);
    for b in reply(Version::V1_0, id, 5).iter() {
        assert!(c.poll().unwrap().is_none());
        receive(&mut c, &[*b]);
    }
    let (got, inc) = c.poll().unwrap().unwrap();
    assert_eq!((got, value(inc)), (id, 5));
}

#[test]
fn code_sets_go_once_on_the_first_request_even_after_a_locate() {
    let mut c = conn_with(Version::V1_2, &cfg(), true);
    c.send(Outgoing::locate(&key()), None, None).unwrap();
    twoway(&mut c, None, None);
    twoway(&mut c, None, None);
    let sent = messages(&written(&mut c));
    assert!(matches!(sent[0], Message::LocateRequest(_)));
    let carried: Vec<bool> = sent[1..]
        .iter()
        .map(|m| match m {
            Message::Request(r) => r.header.contexts.code_sets().unwrap().is_some(),
            m => panic!("{m:?}"),
        })
        .collect();
    assert_eq!(carried, [true, false]);
    // GIOP 1.0 negotiates nothing: no context ever.
    let mut c = conn_with(Version::V1_0, &cfg(), true);
    twoway(&mut c, None, None);
    let Message::Request(r) = &messages(&written(&mut c))[0] else {
        panic!()
    };
    assert!(r.header.contexts.code_sets().unwrap().is_none());
}

#[test]
fn a_failed_encoding_queues_nothing_and_waits_for_nothing() {
    let mut c = conn_with(Version::V1_2, &cfg(), true);
    let e = send_req(&mut c, ResponseMode::Twoway, &[], None, None, |w| {
        w.write_u32(1);
        Err(iiop_cdr::CdrError::Message("no".into()))
    })
    .unwrap_err();
    assert!(matches!(e, ClientError::Encode(_)), "{e}");
    assert!(c.outbox().is_empty());
    assert!(!c.is_waiting(1));
    // The CodeSets context is still due.
    twoway(&mut c, None, None);
    let Message::Request(r) = &messages(&written(&mut c))[0] else {
        panic!()
    };
    assert_eq!(r.header.request_id, 2);
    assert!(r.header.contexts.code_sets().unwrap().is_some());
}

#[test]
fn timeouts_expire_exactly_cancel_on_the_wire_and_drop_the_late_reply() {
    let t0 = epoch();
    let mut c = conn(Version::V1_2);
    let a = twoway(&mut c, Some(ms(50)), Some(t0));
    let b = twoway(&mut c, Some(ms(80)), Some(t0 + ms(10)));
    let free = twoway(&mut c, None, Some(t0));
    written(&mut c);
    assert_eq!(c.next_deadline(), Some(t0 + ms(50)));
    assert!(c.on_timeout(t0 + ms(49)).unwrap().is_empty());
    let expired = c.on_timeout(t0 + ms(50)).unwrap();
    assert_eq!(
        expired,
        [(
            a,
            ClientError::Timeout {
                addr: ADDR.into(),
                request_id: a,
                after: ms(50)
            }
        )]
    );
    let mut cancel = b"GIOP\x01\x02\x00\x02\0\0\0\x04".to_vec();
    cancel.extend_from_slice(&a.to_be_bytes());
    assert_eq!(written(&mut c), cancel);
    assert_eq!(c.next_deadline(), Some(t0 + ms(90)));
    // The late reply is dropped; the others still complete.
    receive(&mut c, &reply(Version::V1_2, a, 1));
    receive(&mut c, &reply(Version::V1_2, b, 2));
    let (id, _) = c.poll().unwrap().unwrap();
    assert_eq!(id, b);
    assert_eq!(c.next_deadline(), None, "{free} has no timer");
    assert!(c.dead().is_none());
}

/// The write-deadline rule: a request written whole when its time runs
/// out is cancelled and the connection goes on; one written in part (or
/// not at all) loses the stream, whoever holds the bytes (the queue, or a
/// writer that took them).
#[test]
fn a_request_not_written_whole_in_its_time_loses_the_stream() {
    let t0 = epoch();
    let lost = ClientError::Io {
        addr: ADDR.into(),
        message: "the server stopped reading before the request was written".into(),
    };
    // Written whole: cancelled.
    let mut c = conn(Version::V1_2);
    let a = twoway(&mut c, Some(ms(50)), Some(t0));
    written(&mut c);
    assert_eq!(c.on_timeout(t0 + ms(50)).unwrap()[0].0, a);
    assert!(c.dead().is_none());
    // Written in part: lost, and nothing more goes out (no CancelRequest
    // inside the message, no goodbye after an I/O failure).
    let mut c = conn(Version::V1_2);
    twoway(&mut c, Some(ms(50)), Some(t0));
    c.outbox().consume(5);
    assert_eq!(c.next_deadline(), Some(t0 + ms(50)));
    assert!(c.on_timeout(t0 + ms(49)).unwrap().is_empty());
    assert_eq!(c.on_timeout(t0 + ms(50)).unwrap_err(), lost);
    assert_eq!(c.dead(), Some(&lost));
    assert!(c.outbox().is_empty());
    // A oneway too: its caller waits for its write.
    let mut c = conn(Version::V1_2);
    send_req(
        &mut c,
        ResponseMode::Oneway,
        &[],
        Some(ms(50)),
        Some(t0),
        |_| Ok(()),
    )
    .unwrap();
    assert_eq!(c.next_deadline(), Some(t0 + ms(50)));
    assert_eq!(c.on_timeout(t0 + ms(60)).unwrap_err(), lost);
    // Without a clock: armed when a write has waited, never early.
    let mut c = conn(Version::V1_2);
    twoway(&mut c, Some(ms(50)), None);
    assert!(c.on_timeout(t0 + ms(500)).unwrap().is_empty());
    c.arm(t0 + ms(400));
    assert_eq!(c.on_timeout(t0 + ms(450)).unwrap_err(), lost);
    // A writer that took the bytes says how far it got: the first
    // request written whole is cancelled; the second, half out, is lost.
    let s = ClientSetup::negotiate(ADDR.into(), Version::V1_2, &cfg(), None);
    let mut q = SendQueue::new(&cfg());
    let mut p: Requests<()> = Requests::default();
    let target = key();
    for timeout in [ms(50), ms(80)] {
        let t = p
            .begin(Sending::Locate, || (), Some(Timer::started(timeout, t0)))
            .unwrap();
        q.queue(&s, &t, Outgoing::locate(&target)).unwrap();
    }
    let batch = q.take();
    let first = batch.len() / 2;
    assert!(q.pending().is_empty());
    q.wrote(first + 4);
    assert_eq!(q.next_deadline(), Some(t0 + ms(80)), "the first is out");
    q.check_writes(&s, t0 + ms(60)).unwrap();
    let expired = p.expire(t0 + ms(60));
    q.expired(&s, &expired);
    assert_eq!(q.pending().len(), 16, "a CancelRequest for the first");
    assert_eq!(q.check_writes(&s, t0 + ms(80)).unwrap_err(), lost);
    // … unless the rest of it went out in time.
    q.wrote(batch.len() - first - 4);
    q.outbox().consume(16);
    q.check_writes(&s, t0 + ms(80)).unwrap();
    assert_eq!(q.next_deadline(), None);
}

/// A driver's bound on flushing before it closes: everything queued by
/// then must be out within it.
#[test]
fn everything_queued_can_be_bounded_to_go_out_within_a_time() {
    let t0 = epoch();
    let mut c = conn(Version::V1_2);
    oneway_of(&mut c, 100);
    c.write_within(ms(10));
    c.arm(t0);
    assert_eq!(c.next_deadline(), Some(t0 + ms(10)));
    c.outbox().consume(50);
    assert!(c.on_timeout(t0 + ms(10)).is_err());
    let mut c = conn(Version::V1_2);
    oneway_of(&mut c, 100);
    c.write_within(ms(10));
    c.arm(t0);
    written(&mut c);
    assert!(c.on_timeout(t0 + ms(10)).unwrap().is_empty());
}

#[test]
fn timers_started_without_a_clock_count_from_when_they_are_armed() {
    let t0 = epoch();
    let mut c = conn(Version::V1_2);
    let id = twoway(&mut c, Some(ms(50)), None);
    written(&mut c);
    assert_eq!(c.next_deadline(), None);
    assert!(
        c.on_timeout(t0 + ms(1000)).unwrap().is_empty(),
        "never early"
    );
    c.arm(t0 + ms(1000));
    assert_eq!(c.next_deadline(), Some(t0 + ms(1050)));
    c.arm(t0 + ms(2000));
    assert_eq!(c.next_deadline(), Some(t0 + ms(1050)), "armed once");
    assert_eq!(c.on_timeout(t0 + ms(1050)).unwrap()[0].0, id);
}

#[test]
fn close_connection_fails_everything_as_retryable_and_says_nothing() {
    let mut c = conn(Version::V1_2);
    twoway(&mut c, None, None);
    written(&mut c);
    let mut b = BytesMut::new();
    encode_empty(
        &mut b,
        Version::V1_2,
        ByteOrder::Little,
        MsgType::CloseConnection,
    );
    receive(&mut c, &b);
    let closed = ClientError::Closed {
        addr: ADDR.into(),
        retryable: true,
    };
    assert_eq!(c.poll().unwrap_err(), closed);
    assert!(closed.is_retryable());
    assert!(c.outbox().is_empty(), "no answer to CloseConnection");
    assert!(!c.is_waiting(1));
    let again = c.send(Outgoing::locate(&key()), None, None).unwrap_err();
    assert_eq!(again, closed, "the first error sticks");
    assert!(c.outbox().is_empty());
}

#[test]
fn the_peers_message_error_ends_the_connection_without_an_answer() {
    let mut c = conn(Version::V1_1);
    twoway(&mut c, None, None);
    written(&mut c);
    let mut b = BytesMut::new();
    encode_empty(&mut b, Version::V1_0, ByteOrder::Big, MsgType::MessageError);
    receive(&mut c, &b);
    assert_eq!(
        c.poll().unwrap_err(),
        ClientError::PeerMessageError { addr: ADDR.into() }
    );
    assert!(c.outbox().is_empty());
    assert!(c.dead().is_some());
}

#[test]
fn malformed_input_is_answered_with_message_error_and_ends_the_connection() {
    let mut c = conn(Version::V1_2);
    twoway(&mut c, None, None);
    twoway(&mut c, None, None);
    receive(&mut c, b"GIOX\x01\x02\x00\x01\0\0\0\0");
    let e = c.poll().unwrap_err();
    assert!(
        matches!(&e, ClientError::Protocol { addr, error: GiopError::BadMagic { .. } } if addr == ADDR),
        "{e}"
    );
    // What was queued is dropped; MessageError in our version and order.
    assert_eq!(written(&mut c), b"GIOP\x01\x02\x00\x06\0\0\0\0");
    assert_eq!(c.dead(), Some(&e));
    // A server may not send a Request.
    let mut c = conn(Version::V1_2);
    let mut b = BytesMut::new();
    crate::message::encode_cancel_request(&mut b, Version::V1_2, ByteOrder::Big, 3).unwrap();
    receive(&mut c, &b);
    assert!(matches!(
        c.poll().unwrap_err(),
        ClientError::Protocol {
            error: GiopError::BadValue { offset: 7, .. },
            ..
        }
    ));
}

/// Hex with spaces and `|` ignored, as bytes.
fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(char::is_ascii_hexdigit).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Bytes seen in the field: a GIOP 1.0 little-endian `ping` (request id
/// 7, key `Bench`) answered with a GIOP 1.2 Reply. A 1.0 client cannot
/// read a 1.2 reply header: the peer's error, named with both versions,
/// and the connection ends with MessageError in the request's version.
#[test]
fn a_reply_in_another_version_than_its_request_is_the_peers_error() {
    const REQUEST: &str = "47494f50 01 00 01 00 28000000 | 00000000 07000000 01000000 \
        05000000 42656e6368000000 05000000 70696e6700000000 00000000";
    const REPLY: &str = "47494f50 01 02 01 01 0c000000 | 07000000 00000000 00000000";
    let cfg = ConnConfig {
        order: ByteOrder::Little,
        ..ConnConfig::default()
    };
    let mut c = conn_with(Version::V1_0, &cfg, false);
    let target = key();
    let mut sent = Vec::new();
    for _ in 0..7 {
        let out = Outgoing::Request {
            target: &target,
            operation: "ping",
            response: ResponseMode::Twoway,
            contexts: &[],
            body: |_: &mut Writer<'_>| Ok(()),
        };
        c.send(out, None, None).unwrap();
        sent = written(&mut c);
    }
    assert_eq!(sent, unhex(REQUEST), "request 7 as seen in the field");
    receive(&mut c, &unhex(REPLY));
    let e = c.poll().unwrap_err();
    assert_eq!(
        e,
        ClientError::ReplyVersion {
            addr: ADDR.into(),
            answer: MsgType::Reply,
            reply: Version::V1_2,
            request: Version::V1_0,
        }
    );
    assert_eq!(
        e.to_string(),
        "Reply in GIOP 1.2 to a GIOP 1.0 Request from peer:2809 \
         (the peer's error: an answer must be in its request's GIOP version)"
    );
    assert!(!c.is_waiting(7));
    assert_eq!(c.dead(), Some(&e));
    assert_eq!(written(&mut c), b"GIOP\x01\x00\x01\x06\0\0\0\0");
}

/// Every answer follows its request's version, up or down: a LocateReply
/// (1.2 to a 1.1 LocateRequest), a Reply of a lower version (1.0 to a 1.2
/// Request); a Fragment continuing a reply follows that reply (the
/// codec's rule). MessageError and CloseConnection come in any version.
#[test]
fn every_answer_follows_its_requests_version() {
    let mut c = conn(Version::V1_1);
    let id = c.send(Outgoing::locate(&key()), None, None).unwrap();
    let mut b = BytesMut::new();
    let l = LocateReply {
        request_id: id,
        status: LocateStatus::ObjectHere,
    };
    encode_locate_reply(&mut b, Version::V1_2, ByteOrder::Big, &l).unwrap();
    receive(&mut c, &b);
    let e = c.poll().unwrap_err();
    assert_eq!(
        e.to_string(),
        "LocateReply in GIOP 1.2 to a GIOP 1.1 LocateRequest from peer:2809 \
         (the peer's error: an answer must be in its request's GIOP version)"
    );

    let mut c = conn(Version::V1_2);
    let id = twoway(&mut c, None, None);
    receive(&mut c, &reply(Version::V1_0, id, 5));
    assert!(matches!(
        c.poll().unwrap_err(),
        ClientError::ReplyVersion {
            reply: Version::V1_0,
            request: Version::V1_2,
            ..
        }
    ));

    // A 1.1 Reply whose Fragment claims 1.2.
    let mut c = conn(Version::V1_1);
    let id = twoway(&mut c, None, None);
    let whole = reply(Version::V1_1, id, 9);
    let mut first = whole[..whole.len() - 4].to_vec();
    first[6] |= 0x02;
    let size = (first.len() - HEADER_LEN) as u32;
    first[8..12].copy_from_slice(&size.to_le_bytes());
    let mut frag = Header::new(Version::V1_2, ByteOrder::Little, MsgType::Fragment, 8)
        .to_bytes()
        .to_vec();
    frag.extend_from_slice(&id.to_le_bytes());
    frag.extend_from_slice(&whole[whole.len() - 4..]);
    receive(&mut c, &first);
    receive(&mut c, &frag);
    assert!(matches!(
        c.poll().unwrap_err(),
        ClientError::Protocol {
            error: GiopError::FragmentMismatch { what: "version" },
            ..
        }
    ));

    // MessageError and CloseConnection in another version are still read.
    for (t, want) in [
        (
            MsgType::MessageError,
            ClientError::PeerMessageError { addr: ADDR.into() },
        ),
        (
            MsgType::CloseConnection,
            ClientError::Closed {
                addr: ADDR.into(),
                retryable: true,
            },
        ),
    ] {
        let mut c = conn(Version::V1_2);
        twoway(&mut c, None, None);
        let mut b = BytesMut::new();
        encode_empty(&mut b, Version::V1_0, ByteOrder::Big, t);
        receive(&mut c, &b);
        assert_eq!(c.poll().unwrap_err(), want);
    }
}

#[test]
fn closing_says_close_connection_in_giop_12_only_and_eof_is_not_retryable() {
    let mut c = conn(Version::V1_2);
    twoway(&mut c, None, None);
    assert_eq!(
        c.fail(ClientError::LocallyClosed),
        ClientError::LocallyClosed
    );
    assert_eq!(written(&mut c), b"GIOP\x01\x02\x00\x05\0\0\0\0");
    let mut c = conn(Version::V1_1);
    c.fail(ClientError::LocallyClosed);
    assert!(c.outbox().is_empty());
    let mut c = conn(Version::V1_2);
    let e = c.on_eof();
    assert!(!e.is_retryable());
    assert_eq!(c.dead(), Some(&e));
    assert!(c.outbox().is_empty());
}

#[test]
fn fragmented_replies_are_reassembled() {
    let mut c = conn(Version::V1_2);
    let id = send_req(&mut c, ResponseMode::Twoway, &[], None, None, |_| Ok(())).unwrap();
    let mut whole = BytesMut::new();
    let payload: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
    encode_reply(
        &mut whole,
        Version::V1_2,
        ByteOrder::Big,
        Options::default(),
        id,
        ReplyStatus::NoException,
        &[],
        |w| w.write_octet_seq(&payload),
    )
    .unwrap();
    let mut pieces = BytesMut::new();
    fragment_message(&whole, 64, &mut pieces).unwrap();
    assert!(pieces.len() > whole.len(), "fragmented");
    for chunk in pieces.chunks(50) {
        assert!(c.poll().unwrap().is_none());
        receive(&mut c, chunk);
    }
    let (got, inc) = c.poll().unwrap().unwrap();
    assert_eq!(got, id);
    let r = inc.into_reply(ADDR).unwrap();
    let seq = r
        .body
        .reader(Options::default())
        .read_octet_bytes()
        .unwrap();
    assert_eq!(&seq[..], &payload[..]);
}

#[test]
fn large_requests_are_fragmented_and_spliced_runs_survive_it() {
    let cfg = ConnConfig {
        fragment_size: Some(128),
        splice_cutoff: Some(64),
        ..cfg()
    };
    let mut c = conn_with(Version::V1_2, &cfg, false);
    let run = Bytes::from(vec![0xAB; 1000]);
    send_req(&mut c, ResponseMode::Twoway, &[], None, None, |w| {
        w.write_shared_octet_seq(&run)
    })
    .unwrap();
    let stream = written(&mut c);
    let mut at = 0;
    let mut pieces = 0;
    while at < stream.len() {
        let h = Header::parse(&stream[at..]).unwrap();
        assert!(h.total_len() <= 128);
        at += h.total_len();
        pieces += 1;
    }
    assert!(pieces > 8, "{pieces}");
    let mut d = crate::codec::Decoder::default();
    let f = d.decode(&mut BytesMut::from(&stream[..])).unwrap().unwrap();
    let Message::Request(r) = Message::decode_frame(f, Options::default()).unwrap() else {
        panic!()
    };
    let got = r
        .body
        .reader(Options::default())
        .read_octet_bytes()
        .unwrap();
    assert_eq!(got, run);
}

#[test]
fn large_twoways_go_headers_first_oneways_only_when_larger() {
    let mut c = conn(Version::V1_2);
    let big = vec![1u8; 20 * 1024];
    send_req(&mut c, ResponseMode::Twoway, &[], None, None, |w| {
        w.write_octet_seq(&big)
    })
    .unwrap();
    assert_eq!(
        c.first_write(Sending::Request(ResponseMode::Twoway)),
        crate::conn::out::HEAD_BYTES
    );
    assert_eq!(
        c.first_write(Sending::Request(ResponseMode::Oneway)),
        usize::MAX
    );
}

#[test]
fn prepared_requests_patch_the_id_and_belong_to_their_wire() {
    let mut c = conn_with(Version::V1_1, &cfg(), true);
    let p = Prepared::build(c.setup(), &key(), "op", ResponseMode::Twoway, |w| {
        w.write_u32(9);
        Ok(())
    })
    .unwrap();
    let a = c.send(Outgoing::prepared(&p), None, None).unwrap();
    let b = c.send(Outgoing::prepared(&p), None, None).unwrap();
    let sent = messages(&written(&mut c));
    for (m, id) in sent.iter().zip([a, b]) {
        let Message::Request(r) = m else { panic!() };
        assert_eq!(r.header.request_id, id);
        assert_eq!(r.body.reader(Options::default()).read_u32().unwrap(), 9);
    }
    let mut other = conn(Version::V1_2);
    assert!(matches!(
        other.send(Outgoing::prepared(&p), None, None).unwrap_err(),
        ClientError::Encode(GiopError::NotInVersion { .. })
    ));
    assert!(other.outbox().is_empty());
}

fn ior(port: u16) -> Ior {
    Ior::iiop("IDL:Bench:1.0", "127.0.0.1", port, &b"Bench"[..])
}

fn decoded_reply(bytes: &BytesMut) -> Reply {
    let h = Header::parse(bytes).unwrap();
    match Message::decode(&h, bytes.clone().freeze().slice(12..), Options::default()) {
        Ok(Message::Reply(r)) => r,
        m => panic!("{m:?}"),
    }
}

fn forward_reply(port: u16) -> Reply {
    let mut b = BytesMut::new();
    encode_location_forward(&mut b, Version::V1_2, ByteOrder::Big, 1, &ior(port), false).unwrap();
    decoded_reply(&b)
}

#[test]
fn forwards_are_followed_to_their_reference_and_bounded() {
    let start = ior(1);
    let mut f = Follow::new(&start, 2);
    assert!(matches!(
        f.on_reply(Ok(Some(forward_reply(2))), "a:1"),
        Ok(Step::Again(Again::Forward("LOCATION_FORWARD")))
    ));
    assert_eq!(f.target(), &ior(2));
    assert!(matches!(
        f.on_reply(Ok(Some(forward_reply(3))), "a:2"),
        Ok(Step::Again(Again::Forward("LOCATION_FORWARD")))
    ));
    assert_eq!(
        f.on_reply(Ok(Some(forward_reply(4))), "a:3").unwrap_err(),
        ClientError::TooManyForwards {
            addr: "a:3".into(),
            limit: 2
        }
    );
    let done = decoded_reply(&reply(Version::V1_2, 1, 5));
    let start = ior(1);
    let mut f = Follow::new(&start, 2);
    assert!(matches!(
        f.on_reply(Ok(Some(done)), "a:1"),
        Ok(Step::Done(Some(_)))
    ));
}

#[test]
fn a_permanent_forward_is_named_so() {
    let mut b = BytesMut::new();
    encode_location_forward(&mut b, Version::V1_2, ByteOrder::Big, 1, &ior(2), true).unwrap();
    let start = ior(1);
    let mut f = Follow::new(&start, 8);
    assert!(matches!(
        f.on_reply(Ok(Some(decoded_reply(&b))), "a:1"),
        Ok(Step::Again(Again::Forward("LOCATION_FORWARD_PERM")))
    ));
    assert_eq!(f.target(), &ior(2));
}

#[test]
fn close_connection_is_retried_once() {
    let closed = || {
        Err(ClientError::Closed {
            addr: "a:1".into(),
            retryable: true,
        })
    };
    let start = ior(1);
    let mut f = Follow::new(&start, 8);
    assert!(matches!(
        f.on_reply(closed(), "a:1"),
        Ok(Step::Again(Again::Retry))
    ));
    assert!(f.on_reply(closed(), "a:1").unwrap_err().is_retryable());
    let start = ior(1);
    let mut f = Follow::new(&start, 8);
    let not = Err(ClientError::Closed {
        addr: "a:1".into(),
        retryable: false,
    });
    assert!(f.on_reply(not, "a:1").is_err());
}

#[test]
fn needs_addressing_mode_is_answered_once_in_the_disposition_asked() {
    let mut b = BytesMut::new();
    encode_reply(
        &mut b,
        Version::V1_2,
        ByteOrder::Big,
        Options::default(),
        1,
        ReplyStatus::NeedsAddressingMode,
        &[],
        |w| {
            w.write_i16(1);
            Ok(())
        },
    )
    .unwrap();
    let needs = decoded_reply(&b);
    let start = ior(1);
    let mut f = Follow::new(&start, 8);
    assert!(matches!(
        f.address(&key()).map(Cow::into_owned),
        Ok(TargetAddress::Key(_))
    ));
    assert!(matches!(
        f.on_reply(Ok(Some(needs.clone())), "a:1"),
        Ok(Step::Again(Again::Readdress))
    ));
    assert!(matches!(
        f.address(&key()).map(Cow::into_owned),
        Ok(TargetAddress::Profile(_))
    ));
    assert_eq!(
        f.on_reply(Ok(Some(needs)), "a:1").unwrap_err(),
        ClientError::NeedsAddressingMode(1)
    );
}

#[test]
fn locate_follows_object_forward_and_answers_with_the_final_reference() {
    let start = ior(1);
    let mut f = Follow::new(&start, 1);
    let fwd = |p| LocateReply {
        request_id: 1,
        status: LocateStatus::ObjectForward(ior(p)),
    };
    assert!(matches!(
        f.on_locate(fwd(2), "a:1"),
        Ok(Step::Again(Again::Forward("OBJECT_FORWARD")))
    ));
    let here = LocateReply {
        request_id: 2,
        status: LocateStatus::ObjectHere,
    };
    match f.on_locate(here, "a:2") {
        Ok(Step::Done(LocateStatus::ObjectHere)) => assert_eq!(f.target(), &ior(2)),
        r => panic!("{r:?}"),
    }
    let start = ior(1);
    let mut f = Follow::new(&start, 0);
    assert_eq!(
        f.on_locate(fwd(2), "a:1").unwrap_err(),
        ClientError::TooManyForwards {
            addr: "a:1".into(),
            limit: 0
        }
    );
    // The locate reply of a LocateRequest, decoded from the wire.
    let mut c = conn(Version::V1_2);
    let id = c.send(Outgoing::locate(&key()), None, None).unwrap();
    let mut b = BytesMut::new();
    encode_locate_reply(
        &mut b,
        Version::V1_2,
        ByteOrder::Big,
        &LocateReply {
            request_id: id,
            status: LocateStatus::ObjectHere,
        },
    )
    .unwrap();
    receive(&mut c, &b);
    let (_, inc) = c.poll().unwrap().unwrap();
    assert_eq!(
        inc.into_locate(ADDR).unwrap().status,
        LocateStatus::ObjectHere
    );
}

/// A oneway of `n` body bytes.
fn oneway_of(c: &mut ClientConn, n: usize) {
    send_req(c, ResponseMode::Oneway, &[], None, None, |w| {
        w.write_bytes(&vec![0u8; n]);
        Ok(())
    })
    .unwrap();
}

#[test]
fn buffered_oneways_are_held_until_the_buffer_fills_or_something_else_is_queued() {
    let cfg = ConnConfig {
        oneway_buffer: Some(1000),
        ..cfg()
    };
    let mut c = conn_with(Version::V1_2, &cfg, false);
    assert!(!c.holds(), "nothing queued, nothing held");
    oneway_of(&mut c, 100);
    assert!(c.holds());
    oneway_of(&mut c, 100);
    assert!(c.holds() && c.queued() < 1000);
    // The one that takes the queue to 1000 bytes makes it all due.
    oneway_of(&mut c, 900);
    assert!(!c.holds() && c.queued() >= 1000);
    c.outbox().take();
    // A twoway behind held oneways makes them due with it.
    oneway_of(&mut c, 100);
    assert!(c.holds());
    twoway(&mut c, None, None);
    assert!(!c.holds());
    c.outbox().take();
    // So does a LocateRequest; and a oneway after it does not hold the
    // queue back again.
    oneway_of(&mut c, 100);
    c.send(
        Outgoing::<fn(&mut Writer<'_>) -> _>::Locate(&key()),
        None,
        None,
    )
    .unwrap();
    oneway_of(&mut c, 100);
    assert!(!c.holds());
    c.outbox().take();
    // And the goodbye, when the connection is closed.
    oneway_of(&mut c, 100);
    c.fail(ClientError::LocallyClosed);
    assert!(!c.holds());
    // Without a buffer, nothing is ever held.
    let mut plain = conn(Version::V1_2);
    oneway_of(&mut plain, 10);
    assert!(!plain.holds());
}

/// Coalescing asks for the segment size only when the setup coalesces,
/// and changes TCP_NODELAY only on a switch: on for a queue with anything
/// answered in it, or oneways of a segment or more; a failed change
/// leaves the state as it was.
#[test]
fn coalescing_switches_nodelay_only_when_it_must() {
    let setup = |coalesce: bool| {
        let cfg = ConnConfig {
            coalesce_oneways: coalesce,
            ..ConnConfig::default()
        };
        ClientSetup::negotiate(ADDR.into(), Version::V1_2, &cfg, None)
    };
    // Oneways only, or something answered (a twoway, a LocateRequest, the
    // goodbye) among what is queued.
    let (oneway, twoway) = (true, false);
    let mut c = Coalescing::new(&setup(false), || panic!("not asked"));
    for what in [oneway, twoway] {
        c.before_write(what, 100, |_| panic!("no switch: {what:?}"));
    }
    let mut c = Coalescing::new(&setup(true), || Some(1000));
    let mut set = Vec::new();
    let steps = [
        (oneway, 100),
        (oneway, 999),
        (oneway, 1000),
        (oneway, 10),
        (twoway, 10),
        (twoway, 10),
        (oneway, 10),
        (twoway, 10),
    ];
    for (what, len) in steps {
        c.before_write(what, len, |d| {
            set.push(d);
            Ok(())
        });
    }
    assert_eq!(set, [false, true, false, true, false, true]);
    // A failed switch is tried again at the next write.
    let mut c = Coalescing::new(&setup(true), || None);
    c.before_write(oneway, 10, |_| Err(std::io::ErrorKind::Other.into()));
    let mut again = None;
    c.before_write(oneway, 10, |d| {
        again = Some(d);
        Ok(())
    });
    assert_eq!(again, Some(false));
}

/// The writer task's view of a batch: oneways only, from however many
/// calls, may be joined; anything answered, cancelled or ending in it,
/// however early, makes the whole batch go at once, until the queue has
/// been written empty.
#[test]
fn a_batch_is_a_oneway_only_while_nothing_in_it_must_go_at_once() {
    let mut c = conn(Version::V1_2);
    assert!(!c.queue.only_oneways(), "nothing queued");
    oneway_of(&mut c, 10);
    oneway_of(&mut c, 10);
    assert!(c.queue.only_oneways());
    twoway(&mut c, None, None);
    assert!(!c.queue.only_oneways(), "a twoway behind oneways");
    oneway_of(&mut c, 10);
    assert!(!c.queue.only_oneways(), "a oneway behind a twoway");
    written(&mut c);
    oneway_of(&mut c, 10);
    assert!(c.queue.only_oneways(), "written empty: oneways again");
    c.send(
        Outgoing::<fn(&mut Writer<'_>) -> _>::Locate(&key()),
        None,
        None,
    )
    .unwrap();
    assert!(!c.queue.only_oneways(), "a LocateRequest");
    written(&mut c);
    // A CancelRequest for a call that timed out.
    let t0 = Instant::now();
    twoway(&mut c, Some(Duration::from_millis(1)), Some(t0));
    written(&mut c);
    oneway_of(&mut c, 10);
    assert!(c.queue.only_oneways());
    assert_eq!(c.on_timeout(t0 + Duration::from_secs(1)).unwrap().len(), 1);
    assert!(!c.queue.only_oneways(), "a CancelRequest");
    written(&mut c);
    // And the goodbye.
    oneway_of(&mut c, 10);
    c.fail(ClientError::LocallyClosed);
    assert!(!c.queue.only_oneways(), "the goodbye");
}

/// Bidirectional GIOP, both cores wired together by hand: `call_back`
/// makes the server call `notify(n)` on the client's object over the
/// client's own connection, and answers with what `notify` returned.
mod bidir {
    use std::sync::Arc;

    use iiop_cdr::{Reader, Writer};

    use super::*;
    use crate::conn::server::{
        AsyncReply, CallBack, Dispatch, Handler, NoCallBack, Outcome, RequestContext, ServerConn,
        ServerConnConfig,
    };
    use crate::context::BiDirIiop;
    use crate::exception::{SystemException, MINOR_NO_PERMISSION_NOT_BIDIR};

    const LISTEN: (&str, u16) = ("127.0.0.1", 4711);

    /// The server side: `call_back(in Callback cb, in long n)` calls
    /// `cb.notify(n)` and returns its result, or NO_PERMISSION when it
    /// may not call back.
    struct Server;

    impl Handler for Server {
        fn handle(
            &self,
            req: &RequestContext<'_>,
            body: &mut Reader<'_>,
            _reply: &mut Writer<'_>,
        ) -> Dispatch {
            assert_eq!(req.operation, "call_back");
            let target = Ior::decode(body).unwrap();
            let n = body.read_i32().unwrap();
            let mut args = BytesMut::new();
            Writer::new(&mut args, req.reply_order).write_i32(n);
            let order = req.reply_order;
            Dispatch::CallBack(CallBack {
                target,
                operation: "notify".into(),
                args: args.freeze(),
                order,
                then: Box::new(move |r| match r {
                    Ok(reply) => {
                        let v = reply.body.reader(Options::default()).read_i32().unwrap();
                        let mut b = BytesMut::new();
                        Writer::new(&mut b, order).write_i32(v);
                        AsyncReply {
                            outcome: Outcome::Reply,
                            body: b.freeze(),
                        }
                    }
                    Err(why) => {
                        assert_eq!(why, NoCallBack::NotOffered);
                        AsyncReply {
                            outcome: Outcome::System(SystemException::no_permission(
                                MINOR_NO_PERMISSION_NOT_BIDIR,
                                crate::exception::Completion::No,
                            )),
                            body: Bytes::new(),
                        }
                    }
                }),
            })
        }
    }

    /// The client's callback object: `notify(n)` returns `n + 1`.
    struct Notify;

    impl Handler for Notify {
        fn handle(
            &self,
            req: &RequestContext<'_>,
            body: &mut Reader<'_>,
            reply: &mut Writer<'_>,
        ) -> Dispatch {
            assert_eq!(
                (req.operation, req.object_key),
                ("notify", &b"Callback"[..])
            );
            reply.write_i32(body.read_i32().unwrap() + 1);
            Dispatch::Done(Outcome::Reply)
        }
    }

    fn call_back(c: &mut ClientConn, contexts: &[ServiceContext], n: i32) -> u32 {
        let cb = Ior::iiop(
            "IDL:Bench/Callback:1.0",
            LISTEN.0,
            LISTEN.1,
            &b"Callback"[..],
        );
        let target = key();
        c.send(
            Outgoing::Request {
                target: &target,
                operation: "call_back",
                response: ResponseMode::Twoway,
                contexts,
                body: |w: &mut Writer<'_>| {
                    cb.encode(w).unwrap();
                    w.write_i32(n);
                    Ok(())
                },
            },
            None,
            None,
        )
        .unwrap()
    }

    fn to_server(s: &mut ServerConn, bytes: &[u8]) {
        s.read_buf().extend_from_slice(bytes);
        s.received(bytes.len());
        s.process(&Server, &mut |_| panic!("nothing goes asynchronous"));
    }

    fn from_server(s: &mut ServerConn) -> Vec<u8> {
        let v = s.output().to_vec();
        s.sent();
        v
    }

    #[test]
    fn the_callback_comes_over_the_clients_connection_when_offered() {
        let cfg = ConnConfig {
            version: Some(Version::V1_2),
            ..cfg()
        };
        let mut c = conn_with(Version::V1_2, &cfg, false);
        c.offer_bidir();
        let offer = BiDirIiop {
            listen_points: vec![(LISTEN.0.into(), LISTEN.1)],
        };
        let id = call_back(&mut c, &[offer.context(ByteOrder::Big).unwrap()], 41);
        let mut s = ServerConn::new(Arc::new(ServerConnConfig::default()), 1, None, None);
        to_server(&mut s, &written(&mut c));
        assert_eq!(s.bidir(), Some(&offer));
        assert_eq!(s.calling(), 1);
        // The server's Request: GIOP 1.2, to the callback's key.
        let out = from_server(&mut s);
        let sent = messages(&out);
        let [Message::Request(r)] = &sent[..] else {
            panic!("one Request, got {sent:?}")
        };
        assert_eq!((r.version, r.header.operation()), (Version::V1_2, "notify"));
        receive(&mut c, &out);
        let Some(Arrival::Request(req)) = c.poll_arrival().unwrap() else {
            panic!("the server's Request arrives")
        };
        c.answer(&req, &Notify).unwrap();
        to_server(&mut s, &written(&mut c));
        assert_eq!(s.calling(), 0);
        receive(&mut c, &from_server(&mut s));
        let Some(Arrival::Answer(got, inc)) = c.poll_arrival().unwrap() else {
            panic!("the answer to call_back")
        };
        assert_eq!(got, id);
        let r = inc.into_reply(ADDR).unwrap();
        assert_eq!(r.header.status, ReplyStatus::NoException);
        assert_eq!(r.body.reader(Options::default()).read_i32().unwrap(), 42);
    }

    #[test]
    fn without_the_offer_the_server_refuses_and_the_client_rejects_requests() {
        let cfg = ConnConfig {
            version: Some(Version::V1_2),
            ..cfg()
        };
        let mut c = conn_with(Version::V1_2, &cfg, false);
        let id = call_back(&mut c, &[], 1);
        let mut s = ServerConn::new(Arc::new(ServerConnConfig::default()), 1, None, None);
        to_server(&mut s, &written(&mut c));
        assert_eq!(s.calling(), 0);
        receive(&mut c, &from_server(&mut s));
        let Some(Arrival::Answer(got, inc)) = c.poll_arrival().unwrap() else {
            panic!("an answer")
        };
        assert_eq!(got, id);
        let r = inc.into_reply(ADDR).unwrap();
        assert_eq!(r.header.status, ReplyStatus::SystemException);
        let e = r.system_exception().unwrap();
        assert_eq!(
            (e.name(), e.minor),
            ("NO_PERMISSION", MINOR_NO_PERMISSION_NOT_BIDIR)
        );
        // A Request from the server on a connection not offered is the
        // server's protocol error (MessageError goes back).
        let mut b = BytesMut::new();
        let target = TargetAddress::Key(Bytes::from_static(b"Callback"));
        crate::message::encode_request(
            &mut b,
            Version::V1_2,
            ByteOrder::Big,
            Options::default(),
            &crate::message::RequestHead {
                request_id: 0,
                response: ResponseMode::Twoway,
                target: &target,
                operation: "notify",
                contexts: &[],
            },
            |w| {
                w.write_i32(1);
                Ok(())
            },
        )
        .unwrap();
        receive(&mut c, &b);
        assert!(matches!(
            c.poll_arrival(),
            Err(ClientError::Protocol { .. })
        ));
        assert!(messages(&written(&mut c))
            .iter()
            .any(|m| matches!(m, Message::MessageError)));
    }

    #[test]
    fn offered_by_the_core_every_request_carries_the_offer_and_callbacks_come_back() {
        let cfg = ConnConfig {
            version: Some(Version::V1_2),
            ..cfg()
        };
        let mut c = conn_with(Version::V1_2, &cfg, true);
        c.setup.offer_callbacks(LISTEN.0, LISTEN.1).unwrap();
        let cb = c
            .setup()
            .callback_reference("IDL:Bench/Callback:1.0", b"Callback")
            .unwrap();
        let p = cb.profiles[0].iiop().unwrap().unwrap();
        assert_eq!((p.host.as_str(), p.port), LISTEN);
        assert_eq!(&p.object_key[..], b"Callback");
        let offer = BiDirIiop {
            listen_points: vec![(LISTEN.0.into(), LISTEN.1)],
        };
        // The first request: CodeSets and the offer; the second: the
        // offer alone; a prepared one: both (it may be a connection's
        // first).
        let first = call_back(&mut c, &[], 41);
        let bytes = written(&mut c);
        let sent = messages(&bytes);
        let [Message::Request(r)] = &sent[..] else {
            panic!("one Request, got {sent:?}")
        };
        assert!(r.header.contexts.code_sets().unwrap().is_some());
        assert_eq!(r.header.contexts.bi_dir().unwrap(), Some(offer.clone()));
        let mut s = ServerConn::new(Arc::new(ServerConnConfig::default()), 1, None, None);
        to_server(&mut s, &bytes);
        assert_eq!(s.bidir(), Some(&offer));
        receive(&mut c, &from_server(&mut s));
        let Some(Arrival::Request(req)) = c.poll_arrival().unwrap() else {
            panic!("the server's Request arrives")
        };
        c.answer(&req, &Notify).unwrap();
        to_server(&mut s, &written(&mut c));
        receive(&mut c, &from_server(&mut s));
        let Some(Arrival::Answer(got, inc)) = c.poll_arrival().unwrap() else {
            panic!("the answer to call_back")
        };
        assert_eq!(got, first);
        let r = inc.into_reply(ADDR).unwrap();
        assert_eq!(r.body.reader(Options::default()).read_i32().unwrap(), 42);
        call_back(&mut c, &[], 1);
        let sent = messages(&written(&mut c));
        let [Message::Request(r)] = &sent[..] else {
            panic!("one Request, got {sent:?}")
        };
        assert!(r.header.contexts.code_sets().unwrap().is_none());
        assert_eq!(r.header.contexts.bi_dir().unwrap(), Some(offer.clone()));
        let prepared =
            Prepared::build(c.setup(), &key(), "ping", ResponseMode::Twoway, |_| Ok(())).unwrap();
        let h = crate::Header::parse(prepared.message()).unwrap();
        let Ok(Message::Request(r)) =
            Message::decode(&h, prepared.message().slice(12..), Options::default())
        else {
            panic!("a prepared Request")
        };
        assert_eq!(r.header.contexts.bi_dir().unwrap(), Some(offer));
    }

    #[test]
    fn callbacks_are_offered_in_giop_1_2_only() {
        let mut c = conn(Version::V1_1);
        assert!(matches!(
            c.setup.offer_callbacks(LISTEN.0, LISTEN.1),
            Err(ClientError::Encode(GiopError::NotInVersion {
                minor: 1,
                ..
            }))
        ));
        assert!(!c.setup().bidir);
        assert!(c.setup().callback_reference("IDL:x:1.0", b"k").is_none());
    }
}
