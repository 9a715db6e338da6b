//! The observer, driven by hand: real ORBs' bytes (fixtures/giop) and
//! messages written with the encoders, fed whole, split at every
//! boundary and interleaved with another connection's; the events
//! expected exactly. Time is a number: message `i` of an exchange is seen
//! at `i` µs, in frame `i`.

use std::path::PathBuf;

use bytes::{Bytes, BytesMut};
use iiop_cdr::{ByteOrder, CharCodeSet, Options, WCharCodeSet};

use super::*;
use crate::codec::fragment_message;
use crate::context::ServiceContext;
use crate::message::{
    encode_cancel_request, encode_empty, encode_locate_reply, encode_locate_request, encode_reply,
    LocateStatus, ReplyStatus, ResponseMode, TargetAddress,
};

use Side::{A, B};

/// What a sink was told, the tags being the order in which requests
/// were seen (0, 1, …, over every connection the sink hears).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ev {
    Msg {
        conn: u64,
        side: Side,
        ty: MsgType,
        version: Version,
        pieces: u32,
        wire: u64,
        frames: (u64, u64),
    },
    Request {
        conn: u64,
        side: Side,
        id: u32,
        op: String,
        key: Vec<u8>,
        twoway: bool,
        in_flight: usize,
        code_sets: Option<CodeSetContext>,
        tag: usize,
    },
    LocateRequest {
        conn: u64,
        side: Side,
        id: u32,
        key: Vec<u8>,
        in_flight: usize,
        tag: usize,
    },
    Reply {
        conn: u64,
        side: Side,
        id: u32,
        status: ReplyStatus,
        answers: Answers<usize>,
    },
    LocateReply {
        conn: u64,
        side: Side,
        id: u32,
        status: &'static str,
        answers: Answers<usize>,
    },
    Cancel {
        side: Side,
        id: u32,
    },
    Close {
        side: Side,
    },
    MessageError {
        side: Side,
    },
    Unanswered {
        tag: usize,
        why: Unanswered,
    },
    Finding {
        conn: u64,
        side: Side,
        client: Option<Side>,
        frame: u64,
        rule: Rule,
        detail: String,
    },
}

/// Records events; `messages` also every complete message.
#[derive(Default)]
struct Recorder {
    events: Vec<Ev>,
    requests: usize,
    messages: bool,
}

impl Recorder {
    fn with_messages() -> Recorder {
        Recorder {
            messages: true,
            ..Recorder::default()
        }
    }

    fn tag(&mut self) -> usize {
        self.requests += 1;
        self.requests - 1
    }
}

impl Sink for Recorder {
    type Tag = usize;

    fn request(&mut self, ev: RequestSeen<'_>) -> usize {
        let tag = self.tag();
        let h = &ev.request.header;
        self.events.push(Ev::Request {
            conn: ev.seen.connection,
            side: ev.seen.side,
            id: h.request_id,
            op: h.operation().to_string(),
            key: h.target.object_key().unwrap_or_default().to_vec(),
            twoway: h.response.expects_reply(),
            in_flight: ev.in_flight,
            code_sets: ev.code_sets,
            tag,
        });
        tag
    }

    fn locate_request(&mut self, ev: LocateRequestSeen<'_>) -> usize {
        let tag = self.tag();
        self.events.push(Ev::LocateRequest {
            conn: ev.seen.connection,
            side: ev.seen.side,
            id: ev.request.request_id,
            key: ev.request.target.object_key().unwrap_or_default().to_vec(),
            in_flight: ev.in_flight,
            tag,
        });
        tag
    }

    fn message(&mut self, s: &Seen) {
        if self.messages {
            self.events.push(Ev::Msg {
                conn: s.connection,
                side: s.side,
                ty: s.header.msg_type,
                version: s.header.version,
                pieces: s.pieces,
                wire: s.wire_len,
                frames: (s.first.frame, s.last.frame),
            });
        }
    }

    fn reply(&mut self, ev: ReplySeen<'_, usize>) {
        self.events.push(Ev::Reply {
            conn: ev.seen.connection,
            side: ev.seen.side,
            id: ev.reply.header.request_id,
            status: ev.reply.header.status,
            answers: ev.answers,
        });
    }

    fn locate_reply(&mut self, ev: LocateReplySeen<'_, usize>) {
        self.events.push(Ev::LocateReply {
            conn: ev.seen.connection,
            side: ev.seen.side,
            id: ev.reply.request_id,
            status: ev.reply.status.name(),
            answers: ev.answers,
        });
    }

    fn cancel(&mut self, seen: &Seen, id: u32) {
        self.events.push(Ev::Cancel {
            side: seen.side,
            id,
        });
    }

    fn close_connection(&mut self, seen: &Seen) {
        self.events.push(Ev::Close { side: seen.side });
    }

    fn message_error(&mut self, seen: &Seen) {
        self.events.push(Ev::MessageError { side: seen.side });
    }

    fn unanswered(&mut self, tag: usize, why: Unanswered) {
        self.events.push(Ev::Unanswered { tag, why });
    }

    fn finding(&mut self, f: Finding<'_>) {
        self.events.push(Ev::Finding {
            conn: f.connection,
            side: f.side,
            client: f.client,
            frame: f.at.frame,
            rule: f.rule,
            detail: f.detail,
        });
    }
}

/// Message `i` of an exchange is seen at `i` µs in frame `i`.
fn at(i: usize) -> At {
    At {
        ns: i as u64 * 1000,
        frame: i as u64,
    }
}

fn fixture(path: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/giop")
        .join(path);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// An exchange: who sent each message, in the order seen.
type Exchange = Vec<(Side, Vec<u8>)>;

/// The fixture files `prefix-NN-…` of a JacORB or TAO scenario (client
/// requests from A, server replies from B).
fn vendor(dir: &str, scenario: &str, n: usize) -> Exchange {
    let manifest = String::from_utf8(fixture(&format!("{dir}/manifest.txt"))).unwrap();
    let files: Vec<&str> = manifest
        .lines()
        .filter_map(|l| l.split('\t').next())
        .filter(|f| f.starts_with(&format!("{scenario}-")))
        .take(n)
        .collect();
    assert_eq!(files.len(), n, "{scenario}");
    files
        .iter()
        .map(|f| {
            let side = if f.contains("-client-") { A } else { B };
            (side, fixture(&format!("{dir}/{f}")))
        })
        .collect()
}

/// An omniORB scenario (fixtures/giop/omniorb/manifest.tsv), c2s from A.
fn omniorb(scenario: &str) -> Exchange {
    let manifest = String::from_utf8(fixture("omniorb/manifest.tsv")).unwrap();
    manifest
        .lines()
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .filter(|f| f[1] == scenario)
        .map(|f| {
            let side = if f[2] == "c2s" { A } else { B };
            (side, fixture(&format!("omniorb/{}", f[0])))
        })
        .collect()
}

/// Feed each message whole (message `i` at [`at`]`(i)`), both sides seen
/// from their start, then end.
fn run(ex: &Exchange, rec: Recorder) -> Vec<Ev> {
    run_conn(1, ex, rec, true)
}

fn run_conn(conn: u64, ex: &Exchange, mut rec: Recorder, from_start: bool) -> Vec<Ev> {
    let mut o = Observer::new(conn, ObserverConfig::default());
    if from_start {
        o.from_start(A);
        o.from_start(B);
    }
    for (i, (side, m)) in ex.iter().enumerate() {
        o.data(*side, m, at(i), &mut rec);
    }
    o.end(&mut rec);
    rec.events
}

/// Feed the exchange in chunks: each message cut at the offsets `cuts`
/// gives, every chunk seen at its message's time; then end.
fn run_cut(ex: &Exchange, cuts: impl Fn(usize, usize) -> Vec<usize>) -> Vec<Ev> {
    let mut rec = Recorder::with_messages();
    let mut o = Observer::new(1, ObserverConfig::default());
    o.from_start(A);
    o.from_start(B);
    for (i, (side, m)) in ex.iter().enumerate() {
        let mut from = 0;
        for c in cuts(i, m.len()).into_iter().chain([m.len()]) {
            if c > from && c <= m.len() {
                o.data(*side, &m[from..c], at(i), &mut rec);
                from = c;
            }
        }
    }
    o.end(&mut rec);
    rec.events
}

fn answered(tag: usize, sent: usize, answered: usize) -> Answers<usize> {
    Answers::Request {
        tag,
        sent: at(sent),
        latency_ns: (answered - sent) as u64 * 1000,
    }
}

fn request(
    version: Version,
    order: ByteOrder,
    id: u32,
    op: &str,
    response: ResponseMode,
    contexts: &[ServiceContext],
) -> Vec<u8> {
    crate::conn::request_to_bench(version, order, id, op, response, contexts, 7).to_vec()
}

fn call(id: u32) -> Vec<u8> {
    request(
        Version::V1_2,
        ByteOrder::Little,
        id,
        "echo_long",
        ResponseMode::Twoway,
        &[],
    )
}

fn oneway(id: u32) -> Vec<u8> {
    request(
        Version::V1_2,
        ByteOrder::Little,
        id,
        "send",
        ResponseMode::Oneway,
        &[],
    )
}

fn reply(version: Version, id: u32) -> Vec<u8> {
    let mut b = BytesMut::new();
    encode_reply(
        &mut b,
        version,
        ByteOrder::Big,
        Options::default(),
        id,
        ReplyStatus::NoException,
        &[],
        |w| {
            w.write_u32(7);
            Ok(())
        },
    )
    .unwrap();
    b.to_vec()
}

fn locate(version: Version, id: u32) -> Vec<u8> {
    let mut b = BytesMut::new();
    let t = TargetAddress::Key(Bytes::from_static(b"Bench"));
    encode_locate_request(&mut b, version, ByteOrder::Big, id, &t).unwrap();
    b.to_vec()
}

fn located(version: Version, id: u32) -> Vec<u8> {
    let mut b = BytesMut::new();
    let r = LocateReply {
        request_id: id,
        status: LocateStatus::ObjectHere,
    };
    encode_locate_reply(&mut b, version, ByteOrder::Big, &r).unwrap();
    b.to_vec()
}

fn empty(version: Version, ty: MsgType) -> Vec<u8> {
    let mut b = BytesMut::new();
    encode_empty(&mut b, version, ByteOrder::Little, ty);
    b.to_vec()
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn req_ev(id: u32, op: &str, key: &[u8], in_flight: usize, tag: usize) -> Ev {
    Ev::Request {
        conn: 1,
        side: A,
        id,
        op: op.into(),
        key: key.to_vec(),
        twoway: true,
        in_flight,
        code_sets: None,
        tag,
    }
}

fn locate_ev(id: u32, in_flight: usize, tag: usize) -> Ev {
    Ev::LocateRequest {
        conn: 1,
        side: A,
        id,
        key: b"Bench".to_vec(),
        in_flight,
        tag,
    }
}

fn reply_ev(id: u32, status: ReplyStatus, answers: Answers<usize>) -> Ev {
    Ev::Reply {
        conn: 1,
        side: B,
        id,
        status,
        answers,
    }
}

fn finding(side: Side, frame: u64, rule: Rule, detail: &str) -> Ev {
    Ev::Finding {
        conn: 1,
        side,
        client: Some(A),
        frame,
        rule,
        detail: detail.into(),
    }
}

/// A reply in another GIOP version than its request is the server's
/// error, whoever pairs them: a GIOP 1.0 little-endian `ping` (id 7, key
/// `Bench`) answered by a GIOP 1.2 Reply. The reply still answers it.
#[test]
fn a_reply_in_a_higher_version_than_its_request_is_a_finding() {
    let req = hex(
        "47494f50 01 00 01 00 28000000 00000000 07000000 01000000 05000000 \
         42656e6368000000 05000000 70696e6700000000 00000000",
    );
    let rep = hex("47494f50 01 02 01 01 0c000000 07000000 00000000 00000000");
    assert_eq!(
        run(&vec![(A, req.clone()), (B, rep)], Recorder::default()),
        [
            req_ev(7, "ping", b"Bench", 0, 0),
            finding(
                B,
                1,
                Rule::ReplyVersion,
                "Reply in GIOP 1.2 to request id 7, a GIOP 1.0 Request: the peer's error \
                 (an answer must be in its request's GIOP version)"
            ),
            reply_ev(7, ReplyStatus::NoException, answered(0, 0, 1)),
        ]
    );
    // The same version is no finding; a lower one is one too (a 1.2
    // client cannot read a 1.0 reply header either).
    let events = run(
        &vec![(A, call(1)), (B, reply(Version::V1_2, 1))],
        Recorder::default(),
    );
    assert!(!events.iter().any(|e| matches!(e, Ev::Finding { .. })));
    let events = run(
        &vec![(A, call(1)), (B, reply(Version::V1_1, 1))],
        Recorder::default(),
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(
                e,
                Ev::Finding {
                    rule: Rule::ReplyVersion,
                    ..
                }
            ))
            .count(),
        1
    );
    let events = run(
        &vec![(A, req), (B, reply(Version::V1_0, 7))],
        Recorder::default(),
    );
    assert!(!events.iter().any(|e| matches!(e, Ev::Finding { .. })));
    // A LocateReply likewise.
    assert_eq!(
        run(
            &vec![
                (A, locate(Version::V1_0, 3)),
                (B, located(Version::V1_2, 3))
            ],
            Recorder::default()
        ),
        [
            locate_ev(3, 0, 0),
            finding(
                B,
                1,
                Rule::ReplyVersion,
                "LocateReply in GIOP 1.2 to request id 3, a GIOP 1.0 LocateRequest: the peer's \
                 error (an answer must be in its request's GIOP version)"
            ),
            Ev::LocateReply {
                conn: 1,
                side: B,
                id: 3,
                status: "OBJECT_HERE",
                answers: answered(0, 0, 1)
            },
        ]
    );
}

/// Wireshark pairs a reply with the latest request of its id on any
/// connection; an observer is one connection: two connections that both
/// use id 1, their requests and replies interleaved, pair each reply
/// with its own connection's request.
#[test]
fn two_connections_reusing_an_id_pair_their_own_requests() {
    let mut rec = Recorder::default();
    let mut one = Observer::new(1, ObserverConfig::default());
    let mut two = Observer::new(2, ObserverConfig::default());
    for o in [&mut one, &mut two] {
        o.from_start(A);
        o.from_start(B);
    }
    one.data(A, &call(1), at(0), &mut rec);
    two.data(A, &call(1), at(1), &mut rec);
    two.data(B, &reply(Version::V1_2, 1), at(5), &mut rec);
    one.data(B, &reply(Version::V1_2, 1), at(9), &mut rec);
    let replies: Vec<_> = rec
        .events
        .iter()
        .filter_map(|e| match e {
            Ev::Reply { conn, answers, .. } => Some((*conn, *answers)),
            _ => None,
        })
        .collect();
    assert_eq!(replies, [(2, answered(1, 1, 5)), (1, answered(0, 0, 9))]);
}

/// TAO forwards `Bench` to its POA key (LOCATION_FORWARD), and the
/// client calls the POA key next: each reply paired with its request.
#[test]
fn taos_forward_and_the_call_after_it() {
    let ex = vendor("tao", "forward", 4);
    let poa = match &run(&ex, Recorder::default())[2] {
        Ev::Request { key, .. } => key.clone(),
        e => panic!("{e:?}"),
    };
    assert_eq!(poa.len(), 27, "TAO's POA key");
    assert_eq!(
        run(&ex, Recorder::default()),
        [
            req_ev(1, "echo_long", b"Bench", 0, 0),
            reply_ev(1, ReplyStatus::LocationForward, answered(0, 0, 1)),
            req_ev(2, "echo_long", &poa, 0, 1),
            reply_ev(2, ReplyStatus::NoException, answered(1, 2, 3)),
        ]
    );
}

/// JacORB answers LocateRequests (GIOP 1.2 and 1.0) for its short key
/// with OBJECT_FORWARD, for an unknown key with UNKNOWN_OBJECT.
#[test]
fn jacorbs_locate_replies_pair_with_their_locate_requests() {
    let ex = vendor("jacorb", "raw", 12);
    let events = run(&ex, Recorder::default());
    let summary: Vec<String> = events
        .iter()
        .map(|e| match e {
            Ev::Request { id, op, tag, .. } => format!("req {id} {op} #{tag}"),
            Ev::LocateRequest { id, key, tag, .. } => {
                format!("locate {id} {} #{tag}", String::from_utf8_lossy(key))
            }
            Ev::Reply {
                id,
                status,
                answers,
                ..
            } => format!("reply {id} {status:?} {answers:?}"),
            Ev::LocateReply {
                id,
                status,
                answers,
                ..
            } => format!("located {id} {status} {answers:?}"),
            e => format!("{e:?}"),
        })
        .collect();
    let a = |tag, sent, ans| format!("{:?}", answered(tag, sent, ans));
    assert_eq!(
        summary,
        [
            "req 1 no_such_op #0".to_string(),
            format!("reply 1 SystemException {}", a(0, 0, 1)),
            "locate 2 Bench #1".into(),
            format!("located 2 OBJECT_FORWARD {}", a(1, 2, 3)),
            "locate 3 Bench #2".into(),
            format!("located 3 OBJECT_FORWARD {}", a(2, 4, 5)),
            "locate 4 NoSuchKey #3".into(),
            format!("located 4 UNKNOWN_OBJECT {}", a(3, 6, 7)),
            "req 5 ping #4".into(),
            format!("reply 5 SystemException {}", a(4, 8, 9)),
            "locate 6 iiopbench/bench/Bench #5".into(),
            format!("located 6 OBJECT_HERE {}", a(5, 10, 11)),
        ]
    );
}

/// JacORB sends a CodeSets context in GIOP 1.0, where code sets are not
/// negotiated: a finding on its first request; the context is still the
/// connection's (the server reads on with it from 1.1 on).
#[test]
fn a_code_sets_context_in_giop_10_is_a_finding() {
    let ex = vendor("jacorb", "naming10", 2);
    let events = run(&ex, Recorder::default());
    assert_eq!(
        events[0],
        finding(
            A,
            0,
            Rule::CodesetIn10,
            "CodeSets service context in a GIOP 1.0 request: code sets are not negotiated in 1.0"
        )
    );
    match &events[1] {
        Ev::Request { code_sets, .. } => assert!(code_sets.is_some()),
        e => panic!("{e:?}"),
    }
    assert_eq!(events.len(), 3);
}

/// The code sets of a connection are its first context's (the server
/// side's rule, shared): a second context naming others is a finding
/// and changes nothing.
#[test]
fn the_first_code_sets_context_stays_in_force() {
    let ctx = |c: CharCodeSet| ServiceContext {
        id: SC_CODE_SETS,
        data: CodeSetContext {
            char_data: c.id(),
            wchar_data: WCharCodeSet::Utf16.id(),
        }
        .encode(ByteOrder::Little),
    };
    let utf8 = CodeSetContext {
        char_data: CharCodeSet::Utf8.id(),
        wchar_data: WCharCodeSet::Utf16.id(),
    };
    let r = |id, c| {
        request(
            Version::V1_2,
            ByteOrder::Little,
            id,
            "op",
            ResponseMode::Oneway,
            &[ctx(c)],
        )
    };
    let ex = vec![(A, r(1, CharCodeSet::Utf8)), (A, r(2, CharCodeSet::Latin1))];
    let sets: Vec<_> = run(&ex, Recorder::default())
        .into_iter()
        .map(|e| match e {
            Ev::Request { code_sets, .. } => format!("{code_sets:?}"),
            Ev::Finding { rule, detail, .. } => format!("{rule:?}: {detail}"),
            e => format!("{e:?}"),
        })
        .collect();
    assert_eq!(
        sets,
        [
            format!("{:?}", Some(utf8)),
            "CodesetChanged: CodeSets context changes the connection's code sets from char \
             0x05010001 wchar 0x00010109 to char 0x00010001 wchar 0x00010109"
                .into(),
            format!("{:?}", Some(utf8)),
        ]
    );
}

/// omniORB's fragmented GIOP 1.2 request (20 KiB to the naming service,
/// then a Fragment; it carries the CodeSets context), its LocateRequest
/// first and CloseConnection last: what each message is, in how many
/// pieces, and how many bytes.
#[test]
fn omniorbs_fragmented_request_is_one_request_in_two_pieces() {
    let ex = omniorb("frag-request12");
    let events = run(&ex, Recorder::with_messages());
    let msg = |side, ty, pieces, wire: usize, frames| Ev::Msg {
        conn: 1,
        side,
        ty,
        version: Version::V1_2,
        pieces,
        wire: wire as u64,
        frames,
    };
    let (lr, req, frag, rep) = (ex[0].1.len(), ex[2].1.len(), ex[3].1.len(), ex[4].1.len());
    assert_eq!(
        events,
        [
            msg(A, MsgType::LocateRequest, 1, lr, (0, 0)),
            Ev::LocateRequest {
                conn: 1,
                side: A,
                id: 2,
                key: b"NameService".to_vec(),
                in_flight: 0,
                tag: 0,
            },
            msg(B, MsgType::LocateReply, 1, ex[1].1.len(), (1, 1)),
            Ev::LocateReply {
                conn: 1,
                side: B,
                id: 2,
                status: "OBJECT_HERE",
                answers: answered(0, 0, 1),
            },
            msg(A, MsgType::Request, 2, req + frag, (2, 3)),
            Ev::Request {
                conn: 1,
                side: A,
                id: 4,
                op: "no_such_op".into(),
                key: b"NameService".to_vec(),
                twoway: true,
                in_flight: 0,
                code_sets: Some(CodeSetContext {
                    char_data: CharCodeSet::Latin1.id(),
                    wchar_data: WCharCodeSet::Utf16.id(),
                }),
                tag: 1,
            },
            msg(B, MsgType::Reply, 1, rep, (4, 4)),
            reply_ev(4, ReplyStatus::SystemException, answered(1, 2, 4)),
            msg(A, MsgType::CloseConnection, 1, 12, (5, 5)),
            Ev::Close { side: A },
        ]
    );
}

/// Every piece boundary and the bytes around it, and the first bytes
/// of every piece, one at a time: however the bytes arrive, the same
/// events (a piece is seen when its last byte is).
#[test]
fn fragments_split_at_every_boundary_give_the_same_events() {
    for scenario in ["frag-request12", "frag-reply11", "frag-doubles11"] {
        let ex = omniorb(scenario);
        let whole = run_cut(&ex, |_, _| Vec::new());
        let in_two = whole
            .iter()
            .filter(|e| matches!(e, Ev::Msg { pieces: 2, .. }))
            .count();
        assert_eq!(in_two, 1, "{scenario}: one message in two pieces");
        let answered = whole
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    Ev::Reply {
                        answers: Answers::Request { .. },
                        ..
                    } | Ev::LocateReply {
                        answers: Answers::Request { .. },
                        ..
                    }
                )
            })
            .count();
        // Every server message but a Fragment answers a request.
        let asked = ex
            .iter()
            .filter(|(s, m)| *s == B && m[7] != MsgType::Fragment as u8)
            .count();
        assert_eq!(answered, asked, "{scenario}: every answer paired");
        // Each message cut once at every offset of its first 40 bytes
        // and its last 20.
        for (i, (_, m)) in ex.iter().enumerate() {
            let n = m.len();
            let offsets = (1..n.min(40)).chain(n.saturating_sub(20).max(1)..n);
            for c in offsets {
                let got = run_cut(&ex, |j, _| if j == i { vec![c] } else { Vec::new() });
                assert_eq!(got, whole, "{scenario}: message {i} cut at {c}");
            }
        }
        // Every message byte by byte (the large ones in 97-byte steps
        // after their header).
        let got = run_cut(&ex, |_, n| {
            if n < 400 {
                (1..n).collect()
            } else {
                (1..16).chain((16..n).step_by(97)).collect()
            }
        });
        assert_eq!(got, whole, "{scenario}: in small pieces");
    }
}

/// A GIOP 1.2 message cut into Fragments of 16 bytes, in both byte
/// orders, fed split at every byte offset: one request, as many pieces as
/// were sent.
#[test]
fn a_12_message_in_small_fragments_at_every_split() {
    for order in [ByteOrder::Big, ByteOrder::Little] {
        let whole = request(
            Version::V1_2,
            order,
            9,
            "a_long_operation_name",
            ResponseMode::Twoway,
            &[],
        );
        let mut pieces = BytesMut::new();
        fragment_message(&whole, 32, &mut pieces).unwrap();
        let n = pieces.len();
        assert!(n > whole.len() + 16, "fragmented: {n}");
        let ex = vec![(A, pieces.to_vec()), (B, reply(Version::V1_2, 9))];
        let expect = run_cut(&ex, |_, _| Vec::new());
        let wire = n as u64;
        match &expect[0] {
            Ev::Msg {
                pieces, wire: w, ..
            } => {
                assert!(*pieces >= 3, "{pieces}");
                assert_eq!(*w, wire);
            }
            e => panic!("{e:?}"),
        }
        assert_eq!(
            expect[1],
            req_ev(9, "a_long_operation_name", b"Bench", 0, 0)
        );
        for c in 1..n {
            assert_eq!(
                run_cut(&ex, |i, _| if i == 0 { vec![c] } else { Vec::new() }),
                expect,
                "{order:?} split at {c}"
            );
        }
    }
}

/// Two connections fed one byte at a time, alternately: each sees its
/// own events, as it does fed alone.
#[test]
fn interleaved_connections_keep_their_own_state() {
    let ex1 = omniorb("frag-reply11");
    let ex2 = vendor("tao", "forward", 4);
    let alone1 = run_conn(1, &ex1, Recorder::with_messages(), true);
    let alone2 = run_conn(2, &ex2, Recorder::with_messages(), true);
    let mut rec = [Recorder::with_messages(), Recorder::with_messages()];
    let mut obs = [
        Observer::new(1, ObserverConfig::default()),
        Observer::new(2, ObserverConfig::default()),
    ];
    for o in &mut obs {
        o.from_start(A);
        o.from_start(B);
    }
    let exs = [&ex1, &ex2];
    let mut pos = [(0usize, 0usize); 2];
    loop {
        let mut fed = false;
        for k in 0..2 {
            let (i, j) = pos[k];
            let Some((side, m)) = exs[k].get(i) else {
                continue;
            };
            obs[k].data(*side, &m[j..j + 1], at(i), &mut rec[k]);
            pos[k] = if j + 1 == m.len() {
                (i + 1, 0)
            } else {
                (i, j + 1)
            };
            fed = true;
        }
        if !fed {
            break;
        }
    }
    for k in 0..2 {
        obs[k].end(&mut rec[k]);
    }
    assert_eq!(rec[0].events, alone1);
    assert_eq!(rec[1].events, alone2);
}

/// A connection picked up mid-way: bytes before the first sane header are
/// skipped (no finding: they may be the tail of a message), and a reply
/// whose request was not seen answers nothing, nobody's fault. Seen from
/// its start, the same reply to an id never sent is a finding.
#[test]
fn mid_stream_replies_are_unseen_and_from_the_start_unknown() {
    let rep = reply(Version::V1_2, 5);
    let mut tail = call(4)[20..].to_vec();
    tail.extend_from_slice(&call(5));
    let ex = [(A, tail), (B, rep.clone())];
    let mut rec = Recorder::default();
    let mut o = Observer::new(1, ObserverConfig::default());
    o.data(A, &ex[0].1, at(0), &mut rec);
    o.data(B, &ex[1].1, at(1), &mut rec);
    assert_eq!(o.client(), Some(A));
    assert_eq!(o.framing(A).resyncs, 0);
    assert_eq!(o.framing(A).skipped_bytes, call(4).len() as u64 - 20);
    assert_eq!(
        rec.events,
        [
            req_ev(5, "echo_long", b"Bench", 0, 0),
            reply_ev(5, ReplyStatus::NoException, answered(0, 0, 1)),
        ]
    );
    // Only the reply, mid-stream: unseen.
    let events = run_conn(1, &vec![(B, rep.clone())], Recorder::default(), false);
    assert_eq!(
        events,
        [reply_ev(5, ReplyStatus::NoException, Answers::Unseen)]
    );
    // From the start: the client never sent id 5.
    let events = run(&vec![(B, rep)], Recorder::default());
    assert_eq!(
        events,
        [
            Ev::Finding {
                conn: 1,
                side: B,
                client: None,
                frame: 0,
                rule: Rule::ReplyUnknownId,
                detail: "Reply to request id 5, which was never sent on this connection".into(),
            },
            reply_ev(5, ReplyStatus::NoException, Answers::Unknown),
        ]
    );
}

/// Bytes lost in the middle of a side: what was buffered is dropped,
/// framing resumes at the next message, and an answer to an id the lossy
/// side never showed is no longer the peer's fault. Bytes held back
/// before a hole make it so too, until they come.
#[test]
fn gaps_resynchronise_and_excuse_unknown_answers() {
    let mut rec = Recorder::default();
    let mut o = Observer::new(1, ObserverConfig::default());
    o.from_start(A);
    o.from_start(B);
    let lost = call(1);
    o.data(A, &lost[..10], at(0), &mut rec);
    o.gap(A, 30);
    o.data(A, &lost[40..], at(1), &mut rec);
    o.data(A, &call(2), at(2), &mut rec);
    o.data(B, &reply(Version::V1_2, 1), at(3), &mut rec);
    assert_eq!(
        rec.events,
        [
            req_ev(2, "echo_long", b"Bench", 0, 0),
            reply_ev(1, ReplyStatus::NoException, Answers::Unseen),
        ]
    );
    assert_eq!(o.framing(A).resyncs, 1);
    assert_eq!(o.framing(A).skipped_bytes, lost.len() as u64);
    // Held back before a hole: unseen while held, unknown after.
    let mut rec = Recorder::default();
    let mut o = Observer::new(1, ObserverConfig::default());
    o.from_start(A);
    o.from_start(B);
    o.holding(A, true);
    o.data(B, &reply(Version::V1_2, 1), at(0), &mut rec);
    o.holding(A, false);
    o.data(B, &reply(Version::V1_2, 2), at(1), &mut rec);
    let answers: Vec<_> = rec
        .events
        .iter()
        .filter_map(|e| match e {
            Ev::Reply { answers, .. } => Some(*answers),
            _ => None,
        })
        .collect();
    assert_eq!(answers, [Answers::Unseen, Answers::Unknown]);
}

/// Where a header must start and none does, a finding (with the frame),
/// then framing looks for the next one.
#[test]
fn a_bad_header_where_one_must_start_is_a_finding() {
    let mut junk = b"XXXXXXXXXXXXXXXXXXXX".to_vec();
    junk.extend_from_slice(&call(3));
    let events = run(&vec![(A, call(1)), (A, junk)], Recorder::default());
    assert_eq!(
        events[..3],
        [
            req_ev(1, "echo_long", b"Bench", 0, 0),
            Ev::Finding {
                conn: 1,
                side: A,
                client: Some(A),
                frame: 1,
                rule: Rule::BadHeader,
                detail: "not a GIOP header where one must start: bad magic [58, 58, 58, 58] at \
                         offset 0 (expected \"GIOP\")"
                    .into(),
            },
            req_ev(3, "echo_long", b"Bench", 1, 1),
        ]
    );
    // Both calls are still unanswered when the observation ends.
    let mut ended: Vec<_> = events[3..].to_vec();
    ended.sort_by_key(|e| format!("{e:?}"));
    assert_eq!(
        ended,
        [
            Ev::Unanswered {
                tag: 0,
                why: Unanswered::Ended
            },
            Ev::Unanswered {
                tag: 1,
                why: Unanswered::Ended
            },
        ]
    );
}

/// The pairing rules' findings: an id reused while its request awaits an
/// answer (the later request gets the answer), a reply to a oneway, a
/// Reply to a LocateRequest (which ends it), a LocateReply to a Request
/// (which still awaits its Reply); no room past the limit.
#[test]
fn pairing_findings() {
    let v = Version::V1_2;
    let ex = vec![
        (A, call(1)),
        (A, call(1)),
        (B, reply(v, 1)),
        (A, oneway(2)),
        (B, reply(v, 2)),
        (A, locate(v, 3)),
        (B, reply(v, 3)),
        (A, call(4)),
        (B, located(v, 4)),
        (B, reply(v, 4)),
    ];
    let events = run(&ex, Recorder::default());
    let expected = [
        req_ev(1, "echo_long", b"Bench", 0, 0),
        req_ev(1, "echo_long", b"Bench", 1, 1),
        finding(
            A,
            1,
            Rule::DuplicateRequestId,
            "request id 1 reused while a request with it awaits its reply",
        ),
        Ev::Unanswered {
            tag: 0,
            why: Unanswered::Replaced,
        },
        reply_ev(1, ReplyStatus::NoException, answered(1, 1, 2)),
        Ev::Request {
            conn: 1,
            side: A,
            id: 2,
            op: "send".into(),
            key: b"Bench".to_vec(),
            twoway: false,
            in_flight: 0,
            code_sets: None,
            tag: 2,
        },
        finding(
            B,
            4,
            Rule::ReplyToOneway,
            "Reply to request id 2, which was sent oneway (no response expected)",
        ),
        reply_ev(2, ReplyStatus::NoException, Answers::Unknown),
        locate_ev(3, 0, 3),
        finding(
            B,
            6,
            Rule::ReplyToLocate,
            "Reply to request id 3, which was a LocateRequest",
        ),
        reply_ev(3, ReplyStatus::NoException, Answers::OtherKind(Some(3))),
        req_ev(4, "echo_long", b"Bench", 0, 4),
        finding(
            B,
            8,
            Rule::LocateReplyToRequest,
            "LocateReply to request id 4, which was a Request",
        ),
        Ev::LocateReply {
            conn: 1,
            side: B,
            id: 4,
            status: "OBJECT_HERE",
            answers: Answers::OtherKind(None),
        },
        reply_ev(4, ReplyStatus::NoException, answered(4, 7, 9)),
    ];
    assert_eq!(events, expected);
    // No room: handed back at once; its reply is to an unknown id.
    let mut rec = Recorder::default();
    let mut o = Observer::new(1, ObserverConfig::default());
    o.from_start(A);
    o.from_start(B);
    o.data(A, &call(1), at(0), &mut rec);
    o.limit_pending(1);
    o.data(A, &call(2), at(1), &mut rec);
    assert_eq!(o.pending(), 1);
    o.end(&mut rec);
    assert_eq!(
        rec.events,
        [
            req_ev(1, "echo_long", b"Bench", 0, 0),
            req_ev(2, "echo_long", b"Bench", 1, 1),
            Ev::Unanswered {
                tag: 1,
                why: Unanswered::NoRoom
            },
            Ev::Unanswered {
                tag: 0,
                why: Unanswered::Ended
            },
        ]
    );
}

/// CancelRequest, CloseConnection (from the client before GIOP 1.2: a
/// finding), MessageError (a finding), and a message that frames but does
/// not decode.
#[test]
fn the_other_messages() {
    let mut cancel = BytesMut::new();
    encode_cancel_request(&mut cancel, Version::V1_1, ByteOrder::Big, 1).unwrap();
    // A Request whose header says 8 bytes, not enough for its fields.
    let mut short = Header::new(Version::V1_2, ByteOrder::Big, MsgType::Request, 8)
        .to_bytes()
        .to_vec();
    short.extend_from_slice(&[0, 0, 0, 9, 3, 0, 0, 0]);
    let ex = vec![
        (A, call(1)),
        (A, cancel.to_vec()),
        (B, empty(Version::V1_1, MsgType::MessageError)),
        (A, short),
        (A, empty(Version::V1_1, MsgType::CloseConnection)),
    ];
    let events = run(&ex, Recorder::default());
    let kinds: Vec<String> = events
        .iter()
        .map(|e| match e {
            Ev::Finding {
                rule, side, frame, ..
            } => format!("finding {rule:?} {side:?} {frame}"),
            Ev::Request { .. } => "request".into(),
            e => format!("{e:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "request",
            "Cancel { side: A, id: 1 }",
            "MessageError { side: B }",
            "finding MessageError B 2",
            "finding Decode A 3",
            "Close { side: A }",
            "finding CloseFromClient A 4",
            "Unanswered { tag: 0, why: Ended }",
        ]
    );
}
