//! The server core's protocol behaviour, driven by hand: requests written
//! with the message encoders, replies decoded as a client would, time from
//! one base instant plus offsets. No socket, no runtime, no sleep.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use iiop_cdr::{ByteOrder, Options, Reader, Writer};

use super::*;
use crate::codec::fragment_message;
use crate::conn::epoch;
use crate::header::{Header, MsgType, Version};
use crate::message::{
    encode_empty, encode_locate_request, encode_request, LocateStatus, Message, ReplyStatus,
    RequestHead, ResponseMode, TargetAddress,
};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Answers `echo_long` with its argument, `async` asynchronously, and
/// anything else with BAD_OPERATION; locates only the key `Bench`.
struct Echo;

impl Handler for Echo {
    fn handle(
        &self,
        req: &RequestContext<'_>,
        body: &mut Reader<'_>,
        reply: &mut Writer<'_>,
    ) -> Dispatch {
        match req.operation {
            "echo_long" => {
                reply.write_u32(body.read_u32().unwrap());
                Dispatch::Done(Outcome::Reply)
            }
            "async" => Dispatch::Async(Box::pin(async {
                AsyncReply {
                    outcome: Outcome::Reply,
                    body: Bytes::new(),
                }
            })),
            _ => Dispatch::Done(Outcome::System(SystemException::unknown_operation())),
        }
    }

    fn locate(&self, object_key: &[u8]) -> LocateOutcome {
        match object_key {
            b"Bench" => LocateOutcome::Here,
            _ => LocateOutcome::Unknown,
        }
    }
}

fn server(cfg: ServerConnConfig) -> ServerConn {
    ServerConn::new(Arc::new(cfg), 1, None, None)
}

fn request(version: Version, id: u32, op: &str, response: ResponseMode, v: u32) -> BytesMut {
    crate::conn::request_to_bench(version, ByteOrder::Little, id, op, response, &[], v)
}

fn receive(s: &mut ServerConn, bytes: &[u8]) {
    s.read_buf().extend_from_slice(bytes);
    s.received(bytes.len());
}

/// Process what was received; the calls that went asynchronous.
fn turn(s: &mut ServerConn) -> Vec<AsyncCall> {
    let mut calls = Vec::new();
    s.process(&Echo, &mut |c| calls.push(c));
    calls
}

/// The messages written, decoded as a client would; the output emptied.
fn written(s: &mut ServerConn) -> Vec<Message> {
    let mut out = Vec::new();
    let mut bytes = s.output();
    while !bytes.is_empty() {
        let h = Header::parse(bytes).unwrap();
        let n = h.total_len();
        let payload = Bytes::copy_from_slice(&bytes[12..n]);
        out.push(Message::decode(&h, payload, Options::default()).unwrap());
        bytes = &bytes[n..];
    }
    s.sent();
    out
}

fn echoed(m: &Message) -> (u32, u32) {
    match m {
        Message::Reply(r) => {
            assert_eq!(r.header.status, ReplyStatus::NoException);
            let v = r.body.reader(Options::default()).read_u32().unwrap();
            (r.header.request_id, v)
        }
        m => panic!("{m:?}"),
    }
}

#[test]
fn requests_are_answered_in_order_oneways_are_not_and_counted() {
    let mut s = server(ServerConnConfig::default());
    let mut input = request(Version::V1_2, 1, "echo_long", ResponseMode::Twoway, 10);
    input.extend_from_slice(&request(
        Version::V1_2,
        2,
        "echo_long",
        ResponseMode::Oneway,
        20,
    ));
    input.extend_from_slice(&request(
        Version::V1_0,
        3,
        "echo_long",
        ResponseMode::Twoway,
        30,
    ));
    receive(&mut s, &input);
    assert!(turn(&mut s).is_empty());
    let out_len = s.output().len() as u64;
    let replies: Vec<(u32, u32)> = written(&mut s).iter().map(echoed).collect();
    assert_eq!(replies, [(1, 10), (3, 30)]);
    let sum = s.summary();
    assert_eq!((sum.requests, sum.oneways), (3, 1));
    assert_eq!((sum.bytes_in, sum.bytes_out), (input.len() as u64, out_len));
    assert!(!s.is_done());
}

#[test]
fn a_oneway_that_fails_leaves_nothing_in_the_output() {
    // No reply header is begun for a oneway: an exception raised by its
    // handler must not reach the wire, and the twoway after it is
    // answered whole.
    let mut s = server(ServerConnConfig::default());
    let input = [Version::V1_2, Version::V1_1]
        .into_iter()
        .zip(1..)
        .flat_map(|(v, id)| request(v, id, "no_such_op", ResponseMode::Oneway, 0))
        .collect::<Vec<u8>>();
    receive(&mut s, &input);
    assert!(turn(&mut s).is_empty());
    assert!(s.output().is_empty(), "{:?}", s.output());
    receive(
        &mut s,
        &request(Version::V1_2, 3, "echo_long", ResponseMode::Twoway, 33),
    );
    turn(&mut s);
    let replies: Vec<(u32, u32)> = written(&mut s).iter().map(echoed).collect();
    assert_eq!(replies, [(3, 33)]);
    assert_eq!((s.summary().requests, s.summary().oneways), (3, 2));
}

#[test]
fn a_fragmented_request_is_reassembled_byte_by_byte() {
    let mut s = server(ServerConnConfig::default());
    let whole = request(Version::V1_2, 7, "echo_long", ResponseMode::Twoway, 77);
    let mut pieces = BytesMut::new();
    fragment_message(&whole, 32, &mut pieces).unwrap();
    assert!(pieces.len() > whole.len());
    for b in pieces.iter() {
        assert!(turn(&mut s).is_empty());
        assert!(s.output().is_empty());
        receive(&mut s, &[*b]);
    }
    turn(&mut s);
    assert_eq!(echoed(&written(&mut s)[0]), (7, 77));
}

#[test]
fn a_request_in_pieces_with_another_between_them_is_answered_in_order() {
    // Request 7 in pieces; request 8 whole after its first piece, so the
    // pieces cannot be joined in the buffer: the usual reassembly.
    let mut s = server(ServerConnConfig::default());
    let whole = request(Version::V1_2, 7, "echo_long", ResponseMode::Twoway, 77);
    let mut pieces = BytesMut::new();
    fragment_message(&whole, 32, &mut pieces).unwrap();
    let first_len = Header::parse(&pieces).unwrap().total_len();
    let mut input = pieces[..first_len].to_vec();
    input.extend_from_slice(&request(
        Version::V1_2,
        8,
        "echo_long",
        ResponseMode::Twoway,
        88,
    ));
    input.extend_from_slice(&pieces[first_len..]);
    for chunk in input.chunks(5) {
        receive(&mut s, chunk);
        turn(&mut s);
    }
    let replies: Vec<(u32, u32)> = written(&mut s).iter().map(echoed).collect();
    assert_eq!(replies, [(8, 88), (7, 77)]);
}

#[test]
fn malformed_input_gets_message_error_in_the_last_version_and_the_connection_ends() {
    let mut s = server(ServerConnConfig::default());
    let mut input = request(Version::V1_1, 1, "echo_long", ResponseMode::Twoway, 1);
    input.extend_from_slice(b"GIOP\x01\x01\x00\x09\0\0\0\0"); // type 9
    input.extend_from_slice(&request(
        Version::V1_1,
        2,
        "echo_long",
        ResponseMode::Twoway,
        2,
    ));
    receive(&mut s, &input);
    turn(&mut s);
    let mut want = BytesMut::new();
    encode_empty(
        &mut want,
        Version::V1_1,
        ByteOrder::NATIVE,
        MsgType::MessageError,
    );
    assert!(s.output().ends_with(&want), "MessageError last");
    let msgs = written(&mut s);
    assert_eq!(msgs.len(), 2, "the request after the error is not served");
    assert!(s.is_done());
    assert_eq!(s.ending(), Ending::Abort);
    assert!(!s.can_read());
}

#[test]
fn a_reply_from_a_client_and_an_oversized_header_are_malformed() {
    let mut s = server(ServerConnConfig::default());
    let mut b = BytesMut::new();
    crate::message::encode_reply(
        &mut b,
        Version::V1_2,
        ByteOrder::Big,
        Options::default(),
        1,
        ReplyStatus::NoException,
        &[],
        |_| Ok(()),
    )
    .unwrap();
    receive(&mut s, &b);
    turn(&mut s);
    assert!(matches!(written(&mut s)[..], [Message::MessageError]));
    let mut s = server(ServerConnConfig {
        codec: CodecConfig {
            max_message_size: 100,
            max_reassembled_size: 100,
        },
        ..ServerConnConfig::default()
    });
    // Declares 1 MiB; nothing after the header has arrived.
    receive(&mut s, b"GIOP\x01\x02\x00\x00\x00\x10\x00\x00");
    turn(&mut s);
    assert!(matches!(written(&mut s)[..], [Message::MessageError]));
    assert_eq!(s.ending(), Ending::Abort);
}

#[test]
fn the_peers_close_connection_stops_processing_and_ends_quietly() {
    let mut s = server(ServerConnConfig::default());
    let mut input = BytesMut::new();
    encode_empty(
        &mut input,
        Version::V1_2,
        ByteOrder::Big,
        MsgType::CloseConnection,
    );
    input.extend_from_slice(&request(
        Version::V1_2,
        1,
        "echo_long",
        ResponseMode::Twoway,
        1,
    ));
    receive(&mut s, &input);
    turn(&mut s);
    assert!(s.output().is_empty());
    assert!(s.is_done());
    assert_eq!(s.ending(), Ending::Quiet);
}

#[test]
fn locate_requests_are_answered_by_the_handler() {
    let mut s = server(ServerConnConfig::default());
    let mut input = BytesMut::new();
    for (id, key) in [(1, &b"Bench"[..]), (2, b"Nope")] {
        let t = TargetAddress::Key(Bytes::copy_from_slice(key));
        encode_locate_request(&mut input, Version::V1_2, ByteOrder::Big, id, &t).unwrap();
    }
    receive(&mut s, &input);
    turn(&mut s);
    let got: Vec<(u32, LocateStatus)> = written(&mut s)
        .into_iter()
        .map(|m| match m {
            Message::LocateReply(l) => (l.request_id, l.status),
            m => panic!("{m:?}"),
        })
        .collect();
    assert_eq!(
        got,
        [
            (1, LocateStatus::ObjectHere),
            (2, LocateStatus::UnknownObject)
        ]
    );
}

#[test]
fn asynchronous_calls_pause_reading_at_the_limit_and_finish_before_shutdown_ends() {
    let mut s = server(ServerConnConfig {
        max_in_flight: 2,
        ..ServerConnConfig::default()
    });
    let mut input = BytesMut::new();
    for id in 1..=3 {
        input.extend_from_slice(&request(
            Version::V1_2,
            id,
            "async",
            ResponseMode::Twoway,
            0,
        ));
    }
    receive(&mut s, &input);
    let calls = turn(&mut s);
    assert_eq!(calls.len(), 2, "the third waits for room");
    assert!(s.output().is_empty());
    assert!(!s.can_read());
    s.shutdown();
    assert!(!s.is_done(), "two in flight");
    let mut ids = Vec::new();
    for c in calls {
        s.finish_async(
            c.ticket,
            AsyncReply {
                outcome: Outcome::Reply,
                body: Bytes::from_static(&[5, 0, 0, 0]),
            },
        );
        ids.extend(written(&mut s).iter().map(|m| echoed(m).0));
    }
    assert_eq!(ids, [1, 2]);
    // Closing: what is buffered is still served, reading is over.
    let calls = turn(&mut s);
    assert_eq!(calls.len(), 1);
    assert!(!s.is_done());
    s.finish_async(calls[0].ticket, AsyncReply::handler_failed());
    match &written(&mut s)[..] {
        [Message::Reply(r)] => assert_eq!(r.header.status, ReplyStatus::SystemException),
        m => panic!("{m:?}"),
    }
    assert!(s.is_done());
    let mut want = BytesMut::new();
    encode_empty(
        &mut want,
        Version::V1_2,
        ByteOrder::NATIVE,
        MsgType::CloseConnection,
    );
    assert_eq!(s.ending(), Ending::Close(want.freeze()));
}

#[test]
fn the_idle_timeout_counts_from_the_last_event_and_closes_with_close_connection() {
    let t0 = epoch();
    let mut s = server(ServerConnConfig {
        idle_timeout: Some(ms(100)),
        ..ServerConnConfig::default()
    });
    assert_eq!(s.next_deadline(|| t0), Some(t0 + ms(100)));
    // A request at +60 restarts it.
    receive(
        &mut s,
        &request(Version::V1_1, 1, "echo_long", ResponseMode::Twoway, 1),
    );
    turn(&mut s);
    written(&mut s);
    assert_eq!(s.next_deadline(|| t0 + ms(60)), Some(t0 + ms(160)));
    s.on_timeout(t0 + ms(159));
    assert!(!s.is_done());
    s.on_timeout(t0 + ms(160));
    assert!(s.is_done() && s.is_closing());
    let mut want = BytesMut::new();
    encode_empty(
        &mut want,
        Version::V1_1,
        ByteOrder::NATIVE,
        MsgType::CloseConnection,
    );
    assert_eq!(s.ending(), Ending::Close(want.freeze()));
}

#[test]
fn the_idle_timeout_waits_while_calls_are_in_flight() {
    let t0 = epoch();
    let mut s = server(ServerConnConfig {
        idle_timeout: Some(ms(100)),
        read_timeout: None,
        ..ServerConnConfig::default()
    });
    receive(
        &mut s,
        &request(Version::V1_2, 1, "async", ResponseMode::Twoway, 0),
    );
    let calls = turn(&mut s);
    assert_eq!(s.next_deadline(|| t0), None);
    s.finish_async(calls[0].ticket, AsyncReply::handler_failed());
    assert_eq!(s.next_deadline(|| t0 + ms(500)), Some(t0 + ms(600)));
}

#[test]
fn a_started_message_must_be_complete_within_the_read_timeout() {
    let t0 = epoch();
    let mut s = server(ServerConnConfig {
        read_timeout: Some(ms(100)),
        ..ServerConnConfig::default()
    });
    assert_eq!(s.next_deadline(|| panic!("no timer runs")), None);
    let m = request(Version::V1_2, 1, "echo_long", ResponseMode::Twoway, 1);
    receive(&mut s, &m[..10]);
    turn(&mut s);
    assert_eq!(s.next_deadline(|| t0), Some(t0 + ms(100)));
    // More bytes of the same message do not restart it.
    receive(&mut s, &m[10..20]);
    turn(&mut s);
    assert_eq!(s.next_deadline(|| t0 + ms(50)), Some(t0 + ms(100)));
    s.on_timeout(t0 + ms(100));
    assert!(s.is_done());
    assert_eq!(s.ending(), Ending::Abort, "no word: nothing was malformed");
    assert!(s.output().is_empty());
}

#[test]
fn each_message_of_a_stream_gets_its_own_read_timeout() {
    let t0 = epoch();
    let mut s = server(ServerConnConfig {
        read_timeout: Some(ms(100)),
        ..ServerConnConfig::default()
    });
    let m = request(Version::V1_2, 1, "echo_long", ResponseMode::Oneway, 1);
    // Every read ends inside a message, for longer than the timeout.
    let mut stream = BytesMut::new();
    for _ in 0..40 {
        stream.extend_from_slice(&m);
    }
    let mut at = 0;
    for step in 0..20u64 {
        let end = (at + m.len() + 7).min(stream.len());
        receive(&mut s, &stream[at..end]);
        at = end;
        turn(&mut s);
        let now = t0 + ms(30 * step);
        let d = s.next_deadline(|| now).expect("a message has started");
        s.on_timeout(now);
        assert!(!s.is_done(), "step {step}");
        assert!(d > now);
    }
    assert_eq!(s.summary().requests, (at / m.len()) as u64);
    assert!(at % m.len() != 0, "a message is still incomplete");
}

#[test]
fn code_sets_sent_by_the_client_apply_to_its_later_requests() {
    use crate::context::{default_options, CodeSetContext, ServiceContext, SC_CODE_SETS};
    let mut s = server(ServerConnConfig::default());
    let cs = CodeSetContext {
        char_data: 0x0501_0001,
        wchar_data: 0x0001_0109,
    };
    let ctx = ServiceContext {
        id: SC_CODE_SETS,
        data: cs.encode(ByteOrder::Big),
    };
    let target = TargetAddress::Key(Bytes::from_static(b"Bench"));
    let head = RequestHead {
        request_id: 1,
        response: ResponseMode::Twoway,
        target: &target,
        operation: "echo_long",
        contexts: std::slice::from_ref(&ctx),
    };
    let mut b = BytesMut::new();
    encode_request(
        &mut b,
        Version::V1_2,
        ByteOrder::Big,
        Options::default(),
        &head,
        |w| {
            w.write_u32(3);
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(s.options(Version::V1_2).wchar_set, None);
    receive(&mut s, &b);
    turn(&mut s);
    assert_eq!(s.options(Version::V1_2), cs.options(Version::V1_2));
    assert_eq!(s.options(Version::V1_0), default_options(Version::V1_0));
}

/// CORBA 3.0 §13.10.2.6: code sets are negotiated once per connection. A
/// client that sends a second, different CodeSets context does not
/// change them: its later requests (the one with the new context among
/// them) are read with the first context's sets, as an observer of the
/// connection reads them (`ConnectionCodeSets::offer`, shared).
#[test]
fn a_later_code_sets_context_does_not_change_the_connections_code_sets() {
    use crate::context::{CodeSetContext, ServiceContext, SC_CODE_SETS};
    use iiop_cdr::CharCodeSet;
    use std::sync::Mutex;
    /// Records the char code set each request was read with.
    struct Sets(Mutex<Vec<CharCodeSet>>);
    impl Handler for Sets {
        fn handle(
            &self,
            req: &RequestContext<'_>,
            _: &mut Reader<'_>,
            _: &mut Writer<'_>,
        ) -> Dispatch {
            self.0.lock().unwrap().push(req.options.char_set);
            Dispatch::Done(Outcome::Reply)
        }
    }
    let call = |id: u32, char_data: Option<u32>| {
        let ctx: Vec<ServiceContext> = char_data
            .map(|c| ServiceContext {
                id: SC_CODE_SETS,
                data: CodeSetContext {
                    char_data: c,
                    wchar_data: 0x0001_0109,
                }
                .encode(ByteOrder::Little),
            })
            .into_iter()
            .collect();
        let (v, o) = (Version::V1_2, ByteOrder::Little);
        crate::conn::request_to_bench(v, o, id, "op", ResponseMode::Twoway, &ctx, 0)
    };
    let h = Sets(Mutex::new(Vec::new()));
    let mut s = server(ServerConnConfig::default());
    for b in [
        call(1, None),
        call(2, Some(CharCodeSet::Utf8.id())),
        call(3, Some(CharCodeSet::Latin1.id())),
        call(4, None),
    ] {
        receive(&mut s, &b);
        s.process(&h, &mut |_| {});
    }
    assert_eq!(
        *h.0.lock().unwrap(),
        [
            CharCodeSet::Latin1,
            CharCodeSet::Utf8,
            CharCodeSet::Utf8,
            CharCodeSet::Utf8
        ]
    );
}

#[test]
fn phase_timing_reads_only_the_drivers_clock() {
    use std::sync::atomic::AtomicU32;
    use std::sync::OnceLock;
    static BASE: OnceLock<Instant> = OnceLock::new();
    static TICKS: AtomicU32 = AtomicU32::new(0);
    /// A clock that moves 1 ms per reading.
    fn clock() -> Instant {
        let base = *BASE.get_or_init(epoch);
        base + ms(u64::from(TICKS.fetch_add(1, Ordering::Relaxed)))
    }
    let phases = Arc::new(ServerPhases::default());
    let cfg = Arc::new(ServerConnConfig {
        phases: Some(phases.clone()),
        ..ServerConnConfig::default()
    });
    let req = request(Version::V1_2, 1, "echo_long", ResponseMode::Twoway, 1);
    // No clock handed in: nothing is timed, the request still counted.
    let mut s = ServerConn::new(cfg.clone(), 1, None, None);
    receive(&mut s, &req);
    turn(&mut s);
    let (n, times) = phases.snapshot();
    assert_eq!(n, 1);
    assert!(times.iter().all(|(_, t)| *t == 0.0), "{times:?}");
    let mut s = ServerConn::new(cfg, 2, None, Some(clock));
    receive(&mut s, &req);
    turn(&mut s);
    let (n, times) = phases.snapshot();
    assert_eq!(n, 2);
    // decode, marshal (twice: head and finish), upcall: 1 ms each.
    let ms_of = |name| times.iter().find(|(n, _)| *n == name).unwrap().1 * 1e3;
    assert_eq!(
        [ms_of("decode"), ms_of("upcall"), ms_of("marshal")].map(f64::round),
        [1.0, 1.0, 2.0]
    );
    assert_eq!(TICKS.load(Ordering::Relaxed), 8, "two readings per phase");
}

#[test]
fn reads_take_what_the_head_lacks_or_two_messages_the_size_of_the_last() {
    let mut s = server(ServerConnConfig::default());
    assert_eq!(
        s.read_limit(),
        usize::MAX,
        "no limit before the first message"
    );
    let small = request(Version::V1_2, 1, "ping", ResponseMode::Oneway, 0);
    receive(&mut s, &small);
    turn(&mut s);
    assert_eq!(s.last_len, small.len());
    assert_eq!(s.read_limit(), READ_MIN);
    let op = "x".repeat(3000);
    let big = request(Version::V1_2, 2, &op, ResponseMode::Oneway, 0);
    receive(&mut s, &big);
    turn(&mut s);
    assert_eq!(s.last_len, big.len());
    assert_eq!(s.read_limit(), 2 * big.len());
    // The head of a 40 000-byte message: the rest of it, whatever the last.
    let head = Header::new(Version::V1_2, ByteOrder::Little, MsgType::Request, 40_000);
    receive(&mut s, &head.to_bytes());
    receive(&mut s, &[0; 100]);
    turn(&mut s);
    assert_eq!(s.read_limit(), 12 + 40_000 - 112);
}

/// Room for the rest of a large message that has begun, made before it
/// arrives: up to as much as has arrived, and to READ_AHEAD_MAX; none for
/// a declared size alone, nor for one over the largest message accepted.
#[test]
fn the_read_buffer_makes_room_ahead_for_the_rest_of_a_large_message() {
    let room = |s: &mut ServerConn| {
        let b = s.read_buf();
        b.capacity() - b.len()
    };
    let head = |size| Header::new(Version::V1_2, ByteOrder::Little, MsgType::Request, size);
    let mut s = server(ServerConnConfig::default());
    assert!(room(&mut s) >= 16 * 1024);
    receive(&mut s, &head(200_000).to_bytes());
    receive(&mut s, &[0; 100_000]);
    assert!(room(&mut s) >= 100_012, "the rest of it: {}", room(&mut s));
    // Declared, nothing sent: no more than without it.
    let mut s = server(ServerConnConfig::default());
    receive(&mut s, &head(100 << 20).to_bytes());
    let r = room(&mut s);
    assert!((16 * 1024..=64 * 1024).contains(&r), "{r}");
    // Much sent of a very large message: at most READ_AHEAD_MAX ahead.
    receive(&mut s, &vec![0; 600_000]);
    let r = room(&mut s);
    assert!(
        (READ_AHEAD_MAX..2 * READ_AHEAD_MAX + 700_000).contains(&r),
        "{r}"
    );
    // What a message lacks counts only under the limit, on a whole header.
    for (limit, lacks) in [(2 << 20, (1 << 20) + 12 - 200_012), (64 << 10, 0)] {
        let mut cfg = ServerConnConfig::default();
        cfg.codec.max_message_size = limit;
        let mut s = server(cfg);
        receive(&mut s, &head(1 << 20).to_bytes()[..11]);
        assert_eq!(s.lacking(), 0, "part of a header");
        receive(&mut s, &head(1 << 20).to_bytes()[11..]);
        receive(&mut s, &vec![0; 200_000]);
        assert_eq!(s.lacking(), lacks, "limit {limit}");
    }
}

#[test]
fn reads_that_keep_taking_all_they_may_drain_the_input_until_it_runs_low() {
    let mut s = server(ServerConnConfig::default());
    let one = request(Version::V1_2, 1, "ping", ResponseMode::Oneway, 0);
    receive(&mut s, &one);
    turn(&mut s);
    // Reads of exactly what was allowed: a client far ahead.
    let mut id = 2;
    let mut full_read = |s: &mut ServerConn| {
        let limit = s.read_limit();
        assert_eq!(limit, READ_MIN, "paced");
        let mut bytes = Vec::new();
        while bytes.len() < limit {
            bytes.extend(request(Version::V1_2, id, "ping", ResponseMode::Oneway, 0));
            id += 1;
        }
        bytes.truncate(limit);
        receive(s, &bytes);
    };
    for _ in 0..DRAIN_AFTER {
        full_read(&mut s);
    }
    assert_eq!(s.read_limit(), usize::MAX, "draining");
    // Long reads keep it draining; a short one goes back to pacing.
    receive(&mut s, &vec![0; DRAIN_MIN]);
    assert_eq!(s.read_limit(), usize::MAX);
    receive(&mut s, &[0; 100]);
    assert!(s.read_limit() < DRAIN_MIN);
    // And one short read among full ones starts the count again.
    let mut s = server(ServerConnConfig::default());
    receive(&mut s, &one);
    turn(&mut s);
    for _ in 0..DRAIN_AFTER - 1 {
        let limit = s.read_limit();
        receive(&mut s, &vec![0; limit]);
    }
    let _ = s.read_limit();
    receive(&mut s, &[0; 10]);
    for _ in 0..DRAIN_AFTER - 1 {
        let limit = s.read_limit();
        receive(&mut s, &vec![0; limit]);
    }
    assert_eq!(s.read_limit(), READ_MIN, "still paced");
}
