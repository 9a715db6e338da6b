//! Checks of what breaks ORBs in the field, beyond the echo sets: the
//! three GIOP 1.2 TargetAddress forms and NEEDS_ADDRESSING_MODE, a
//! LocateRequest answered with a forward (followed), a CancelRequest for
//! a slow call, malformed messages (the peer answers MessageError or
//! closes), a MessageError from the client (the peer closes or ignores
//! it), an exception reply and a user exception reply read as the peer
//! may fragment them, Requests
//! split into Fragments at every 8-byte boundary from 32 to 64 bytes,
//! wstrings of characters beyond U+FFFF (UTF-16 surrogate pairs), a
//! reply above our maximum message size, and a wstring on a connection
//! whose CodeSets context is missing or late (what a client hit by the
//! code-set negotiation race sends), and strings beyond ASCII in the char
//! code set in force.
//!
//! A failure that is a known defect of the server's ORB
//! ([`KNOWN_DEFECTS`], matched by TAG_ORB_TYPE, check and symptom) is
//! reported as a skip naming the defect, never as a pass.
//!
//! The protocol probes speak raw GIOP on a plain TCP connection of their
//! own (what they send our client would never send), built and read with
//! the codec; each says what it sent and what came back.

use std::time::{Duration, Instant};

use bytes::BytesMut;
use iiop_bench_idl::bench::anys::{BenchErrorData, BENCH_ERROR_ID};
use iiop_bench_idl::bench::types::Payload;
use iiop_cdr::{ByteOrder, CharCodeSet, Options, WString, Writer};
use iiop_giop::codec::{CodecConfig, Decoder};
use iiop_giop::context::{negotiate, ServiceContext, SC_CODE_SETS};
use iiop_giop::header::HEADER_LEN;
use iiop_giop::message::{
    encode_cancel_request, encode_locate_request, encode_request, LocateStatus, Reply, ReplyStatus,
    RequestHead,
};
use iiop_giop::{Header, Ior, Message, MsgType, ResponseMode, TargetAddress, Version};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{describe, echo_check, hex, Check, InteropSuite, Verdict, V10, V11, V12};

/// The longest a probe waits for an answer of a few bytes (a peer
/// that neither answers nor closes by then hangs the connection).
pub(super) const PROBE_WAIT: Duration = Duration::from_secs(5);

/// The fragment sizes our requests are split at: every multiple of 8
/// from the smallest fragment we send up to 64 bytes, so the boundaries
/// fall at every alignment of the strings' lengths, contents and padding.
const REQUEST_FRAGMENTS: [usize; 5] = [32, 40, 48, 56, 64];

/// Detail octets of the field check's `raise_user`: a reply of several
/// Fragments at 64 bytes, one message at 1024.
const USER_EXCEPTION_DETAIL: u32 = 300;

/// A defect of a vendor server our checks find, known and explained:
/// its failure is reported as a skip naming the defect, never a pass.
struct KnownDefect {
    /// TAG_ORB_TYPE of the server's profile.
    orb_type: u32,
    /// The checks it fails start so.
    check: &'static str,
    /// How its failure reads (a part of the detail): a different
    /// failure of the same check stays a failure.
    symptom: &'static str,
    /// What is wrong and where it is recorded.
    defect: &'static str,
}

const OMNIORB: u32 = 0x4154_5400;
const JACORB: u32 = 0x4A41_4300;

const OMNIORB_TARGET: &str = "omniORB serves only the KeyAddr TargetAddress: its \
    GIOP_S::unmarshalIORAddressingInfo (src/lib/omniORB/orbcore/GIOP_S.cc) leaves \
    ProfileAddr and ReferenceAddr unimplemented (\"XXX Not finalise yet\", OMNIORB_ASSERT(0)), \
    so a Request gets UNKNOWN and a LocateRequest no answer (omniORB 4.2.5 logs \
    \"Assertion failed ... file: GIOP_S.cc line: 808\"); tracker: no entry known, \
    the gap is in omniORB's source";

/// The bidirectional check of `call_back` through our client driver
/// (`--bidir`; run in the bidirectional group).
pub(crate) const DRIVER_CHECK: &str = "bidirectional GIOP callback, client driver (--bidir)";

pub(crate) const OMNIORB_BIDIR: &str = "omniORB hands the reply to a callback made over a \
    client's bidirectional connection to a server thread of that connection, and its \
    bench server allows one per connection (maxServerThreadPerConnection=1, so that \
    oneways keep their order); that one waits in call_back, so the reply is never read \
    and the call hangs (omniORB 4.2.5; with -ORBmaxServerThreadPerConnection 2 the \
    check passes); tracker: no entry known, the limit is omniORB's thread-per-connection \
    dispatch (giopServer)";

const TAO: u32 = 0x5441_4F00;

const TAO_TARGET: &str = "TAO (2.2.2) cannot read a ProfileAddr or ReferenceAddr \
    TargetAddress naming its own profile: TAO_IIOP_Acceptor::object_key \
    (tao/IIOP_Acceptor.cpp) decodes the received profile_data from a stream that does not \
    start at the profile's encapsulation (with -ORBDebugLevel 10 it logs \
    \"TAO_IIOP_Acceptor::object_key, v65.0\" or \"v0.0\", the IIOP version it read), so a \
    Request gets OBJECT_NOT_EXIST and a LocateRequest UNKNOWN_OBJECT; tracker: no entry known, \
    the gap is in TAO's source";

const KNOWN_DEFECTS: [KnownDefect; 13] = [
    KnownDefect {
        orb_type: OMNIORB,
        check: DRIVER_CHECK,
        symptom: "timed out after",
        defect: OMNIORB_BIDIR,
    },
    KnownDefect {
        orb_type: OMNIORB,
        check: "bidirectional GIOP callback, GIOP 1.2 LE",
        symptom: "no reply to call_back within",
        defect: OMNIORB_BIDIR,
    },
    KnownDefect {
        orb_type: OMNIORB,
        check: "bidirectional GIOP callback, GIOP 1.2 BE",
        symptom: "no reply to call_back within",
        defect: OMNIORB_BIDIR,
    },
    KnownDefect {
        orb_type: OMNIORB,
        check: "TargetAddress ProfileAddr, ping",
        symptom: "UNKNOWN",
        defect: OMNIORB_TARGET,
    },
    KnownDefect {
        orb_type: OMNIORB,
        check: "TargetAddress ReferenceAddr, ping",
        symptom: "UNKNOWN",
        defect: OMNIORB_TARGET,
    },
    KnownDefect {
        orb_type: OMNIORB,
        check: "TargetAddress ProfileAddr, LocateRequest",
        symptom: "no LocateReply",
        defect: OMNIORB_TARGET,
    },
    KnownDefect {
        orb_type: OMNIORB,
        check: "TargetAddress ReferenceAddr, LocateRequest",
        symptom: "no LocateReply",
        defect: OMNIORB_TARGET,
    },
    KnownDefect {
        orb_type: TAO,
        check: "TargetAddress ProfileAddr, ping",
        symptom: "OBJECT_NOT_EXIST",
        defect: TAO_TARGET,
    },
    KnownDefect {
        orb_type: TAO,
        check: "TargetAddress ReferenceAddr, ping",
        symptom: "OBJECT_NOT_EXIST",
        defect: TAO_TARGET,
    },
    KnownDefect {
        orb_type: TAO,
        check: "TargetAddress ProfileAddr, LocateRequest",
        symptom: "UNKNOWN_OBJECT",
        defect: TAO_TARGET,
    },
    KnownDefect {
        orb_type: TAO,
        check: "TargetAddress ReferenceAddr, LocateRequest",
        symptom: "UNKNOWN_OBJECT",
        defect: TAO_TARGET,
    },
    KnownDefect {
        orb_type: JACORB,
        check: "malformed message (message type 42)",
        symptom: "neither MessageError nor a close",
        defect: "JacORB drops a message of unknown type: GIOPConnection.receiveMessages \
            logs \"received message with unknown message type\" and neither answers \
            MessageError (CORBA 3.x, 15.4.8) nor closes; tracker: no entry known, \
            the gap is in JacORB's source",
    },
    KnownDefect {
        orb_type: JACORB,
        check: "non-ASCII strings GIOP 1.0",
        // U+FFFD in UTF-8: our ISO-8859-1 bytes read as UTF-8.
        symptom: "efbfbd",
        defect: "JacORB reads and writes GIOP 1.0 strings, which negotiate no code set \
            and so are ISO-8859-1 (CORBA 3.x, 13.10.2.6), in its native char code set \
            (UTF-8, the JVM's file.encoding): a Latin-1 letter arrives as U+FFFD and \
            comes back as its UTF-8 bytes; tracker: no entry known (OpenLiberty #33474 \
            is the same class in Yoko)",
    },
];

/// The known defect `k`'s failure against a server of `orb_type` is.
fn known_defect(orb_type: Option<u32>, k: &Check) -> Option<&'static KnownDefect> {
    let t = orb_type?;
    if k.verdict != Verdict::Fail {
        return None;
    }
    KNOWN_DEFECTS
        .iter()
        .find(|d| d.orb_type == t && k.name.starts_with(d.check) && k.detail.contains(d.symptom))
}

/// The three TargetAddress dispositions, by number.
const FORMS: [(i16, &str); 3] = [(0, "KeyAddr"), (1, "ProfileAddr"), (2, "ReferenceAddr")];

/// The TargetAddress of disposition `d` for the first IIOP profile of `ior`.
pub(super) fn address(ior: &Ior, d: i16) -> Option<TargetAddress> {
    let index = ior
        .profiles
        .iter()
        .position(|p| matches!(p.iiop(), Some(Ok(_))))?;
    let p = &ior.profiles[index];
    Some(match d {
        0 => TargetAddress::Key(p.object_key()?),
        1 => TargetAddress::Profile(p.clone()),
        _ => TargetAddress::Reference {
            index: index as u32,
            ior: ior.clone(),
        },
    })
}

fn form_name(d: i16) -> &'static str {
    FORMS
        .iter()
        .find(|f| f.0 == d)
        .map_or("an unknown disposition", |f| f.1)
}

/// A request's bytes: `op` on `target` with the body `body` writes.
fn request(
    order: ByteOrder,
    id: u32,
    target: &TargetAddress,
    op: &str,
    body: impl FnOnce(&mut Writer<'_>) -> Result<(), iiop_cdr::CdrError>,
) -> BytesMut {
    request_with(order, id, target, op, &[], Options::default(), body)
}

/// [`request`] carrying `contexts`, its body written with `opts` (the
/// code sets a client believes in force).
fn request_with(
    order: ByteOrder,
    id: u32,
    target: &TargetAddress,
    op: &str,
    contexts: &[ServiceContext],
    opts: Options,
    body: impl FnOnce(&mut Writer<'_>) -> Result<(), iiop_cdr::CdrError>,
) -> BytesMut {
    let mut b = BytesMut::new();
    let head = RequestHead {
        request_id: id,
        response: ResponseMode::Twoway,
        target,
        operation: op,
        contexts,
    };
    // Only fails for a key a 1.0/1.1 header cannot carry: these are 1.2.
    let _ = encode_request(&mut b, V12, order, opts, &head, body);
    b
}

/// What the peer did next on a raw connection (one at a time, matched at
/// once: boxing the message would buy nothing).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
enum Next {
    /// A whole message and how many GIOP messages (first piece and
    /// Fragments) it came in.
    Message(Message, usize),
    /// The peer closed the connection (or reset it).
    Closed,
    /// Nothing within the time limit.
    Silent,
    /// Bytes that are not a GIOP message.
    Garbage(String),
}

/// A plain TCP connection speaking raw GIOP.
struct Raw {
    stream: TcpStream,
    decoder: Decoder,
    buf: BytesMut,
    /// Pieces of the message being reassembled.
    pieces: usize,
    timeout: Duration,
}

impl Raw {
    async fn connect(host: &str, port: u16, timeout: Duration) -> Result<Raw, String> {
        let stream = tokio::time::timeout(timeout, TcpStream::connect((host, port)))
            .await
            .map_err(|_| format!("connect {host}:{port}: no answer within {timeout:?}"))?
            .map_err(|e| format!("connect {host}:{port}: {e}"))?;
        let _ = stream.set_nodelay(true);
        Ok(Raw {
            stream,
            decoder: Decoder::new(CodecConfig::default()),
            buf: BytesMut::new(),
            pieces: 0,
            timeout,
        })
    }

    async fn send(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.stream
            .write_all(bytes)
            .await
            .map_err(|e| format!("send: {e}"))
    }

    /// Read until `self.buf` holds `n` bytes: false when the peer closed.
    async fn fill(&mut self, n: usize, end: Instant) -> Result<bool, ()> {
        while self.buf.len() < n {
            let left = end.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.stream.read_buf(&mut self.buf)).await {
                Err(_) => return Err(()),
                Ok(Ok(0)) | Ok(Err(_)) => return Ok(false),
                Ok(Ok(_)) => {}
            }
        }
        Ok(true)
    }

    /// The next whole message (reassembled from its Fragments).
    async fn next(&mut self) -> Next {
        let end = Instant::now() + self.timeout;
        loop {
            match self.fill(HEADER_LEN, end).await {
                Err(()) => return Next::Silent,
                Ok(false) => return Next::Closed,
                Ok(true) => {}
            }
            let h = match Header::parse(&self.buf) {
                Ok(h) => h,
                Err(e) => return Next::Garbage(format!("{e}: {}", hex(&self.buf, 24))),
            };
            match self.fill(h.total_len(), end).await {
                Err(()) => return Next::Silent,
                Ok(false) => return Next::Closed,
                Ok(true) => {}
            }
            let mut one = self.buf.split_to(h.total_len());
            self.pieces += 1;
            match self.decoder.decode_separately(&mut one) {
                Err(e) => return Next::Garbage(e.to_string()),
                Ok(None) => continue,
                Ok(Some(frame)) => {
                    let pieces = std::mem::take(&mut self.pieces);
                    return match Message::decode_frame(frame, Options::default()) {
                        Ok(m) => Next::Message(m, pieces),
                        Err(e) => Next::Garbage(e.to_string()),
                    };
                }
            }
        }
    }

    /// The reply to request `id`, skipping other replies; `Err` says what
    /// came instead.
    async fn reply(&mut self, id: u32) -> Result<(Reply, usize), String> {
        loop {
            match self.next().await {
                Next::Message(Message::Reply(r), n) if r.header.request_id == id => {
                    return Ok((r, n))
                }
                Next::Message(Message::Reply(_), _) => {}
                Next::Message(m, _) => {
                    return Err(format!("{:?} instead of the reply", m.msg_type()))
                }
                Next::Closed => return Err("the peer closed the connection".into()),
                Next::Silent => return Err(format!("no reply within {:?}", self.timeout)),
                Next::Garbage(e) => return Err(format!("not GIOP: {e}")),
            }
        }
    }
}

/// Requests below and above the server's own maximum message size.
mod peer_limit;

/// Send a LocateRequest for `target` and read its LocateReply's status.
async fn locate(
    c: &mut Raw,
    id: u32,
    target: &TargetAddress,
    order: ByteOrder,
) -> Result<LocateStatus, String> {
    let mut b = BytesMut::new();
    encode_locate_request(&mut b, V12, order, id, target).map_err(|e| e.to_string())?;
    c.send(&b).await?;
    match c.next().await {
        Next::Message(Message::LocateReply(l), _) if l.request_id == id => Ok(l.status),
        Next::Message(m, _) => Err(format!("{:?} instead of a LocateReply", m.msg_type())),
        Next::Closed => Err("the peer closed the connection".into()),
        Next::Silent => Err(format!("no LocateReply within {:?}", c.timeout)),
        Next::Garbage(e) => Err(format!("not GIOP: {e}")),
    }
}

/// `pass`/`FAIL` text of a reply to `ping`.
fn ping_outcome(r: &Reply) -> Result<(), String> {
    match r.header.status {
        ReplyStatus::NoException => Ok(()),
        ReplyStatus::SystemException => Err(match r.system_exception() {
            Ok(x) => format!("answered {}", super::system_text(&x)),
            Err(e) => format!("SYSTEM_EXCEPTION that does not decode: {e}"),
        }),
        s => Err(format!("answered {s:?}")),
    }
}

impl InteropSuite {
    /// Where the raw probes connect, or why they cannot run.
    pub(super) fn raw_endpoint(&self) -> Result<(String, u16), String> {
        if self.ceiling < V12 {
            return Err(format!(
                "GIOP 1.2 probes; the reference publishes GIOP {}",
                self.ceiling
            ));
        }
        self.plain_endpoint()
    }

    /// The server's plain TCP endpoint, or why it has none to probe.
    fn plain_endpoint(&self) -> Result<(String, u16), String> {
        let p = &self.profile;
        if p.port == 0 || iiop_giop::ior::tls_offer(p).is_some_and(|t| t.required()) {
            return Err("raw GIOP probes speak plain TCP; the server requires TLS".into());
        }
        Ok((p.host.clone(), p.port))
    }

    /// A raw connection; it waits for each answer at most the request
    /// timeout, and never over [`PROBE_WAIT`].
    async fn raw(&self) -> Result<Raw, String> {
        let (h, p) = self.raw_endpoint()?;
        Raw::connect(&h, p, self.opts.request_timeout.min(PROBE_WAIT)).await
    }

    /// Every field check, each on a connection of its own.
    pub(super) async fn field(&mut self) {
        for (d, _) in FORMS {
            if self.expired() {
                return;
            }
            self.addressing(d).await;
            self.locate_addressing(d).await;
        }
        if !self.expired() {
            self.locate_forward().await;
        }
        if !self.expired() {
            self.cancel().await;
        }
        for kind in [MalformedKind::Type, MalformedKind::Version] {
            if !self.expired() {
                self.malformed(kind).await;
            }
        }
        if !self.expired() {
            self.message_error_to_server().await;
        }
        for order in [ByteOrder::Little, ByteOrder::Big] {
            if !self.expired() {
                self.exception_reply(order).await;
            }
        }
        for order in [ByteOrder::Little, ByteOrder::Big] {
            if !self.expired() {
                self.user_exception_reply(order).await;
            }
        }
        for order in [ByteOrder::Little, ByteOrder::Big] {
            for size in REQUEST_FRAGMENTS {
                if self.expired() {
                    return;
                }
                self.fragmented_request(order, size).await;
            }
        }
        for order in [ByteOrder::Little, ByteOrder::Big] {
            if self.expired() {
                return;
            }
            self.surrogates(order).await;
        }
        if !self.expired() {
            self.over_our_limit().await;
        }
        for late in [false, true] {
            if !self.expired() {
                self.code_sets_missed(late).await;
            }
        }
        for v in [V12, V11, V10] {
            if !self.expired() {
                self.non_ascii_strings(v).await;
            }
        }
        self.peer_limit().await;
    }

    /// Record `k`; a failure that is a [`KnownDefect`] of the server's
    /// ORB becomes a skip that names it (and says what was seen).
    pub(super) fn push_field(&mut self, k: Check) {
        let known = known_defect(self.profile.orb_type(), &k);
        self.push(match known {
            Some(d) => {
                let seen = format!("known defect: {}; seen: {}", d.defect, k.detail);
                k.set(Verdict::Skip, seen)
            }
            None => k,
        });
    }

    pub(super) fn field_check(&self, name: String, mode: &str, order: ByteOrder) -> Check {
        let mut k = Check::new(name, mode);
        k.giop = "1.2".into();
        k.order = super::order_name(order).into();
        k.calls = 1;
        k
    }

    /// A raw-probe check addressed by disposition `d`, with its target;
    /// or `None` when it is already recorded: a skip when the raw probes
    /// cannot connect (no plain-TCP endpoint), a failure when the
    /// reference has no IIOP profile to address.
    fn raw_check(
        &mut self,
        name: String,
        mode: &str,
        order: ByteOrder,
        calls: u64,
        d: i16,
    ) -> Option<(Check, TargetAddress)> {
        let mut k = self.field_check(name, mode, order);
        k.calls = calls;
        if let Err(e) = self.raw_endpoint() {
            self.push_field(k.set(Verdict::Skip, e));
            return None;
        }
        let Some(target) = address(&self.ior, d) else {
            self.push_field(k.set(Verdict::Fail, "no IIOP profile"));
            return None;
        };
        Some((k, target))
    }

    /// `ping` addressed by disposition `d`; a NEEDS_ADDRESSING_MODE is
    /// answered by resending in the form asked for.
    async fn addressing(&mut self, d: i16) {
        let order = ByteOrder::NATIVE;
        let name = format!("TargetAddress {}, ping", form_name(d));
        let mut k = self.field_check(name, "twoway", order);
        let t = Instant::now();
        let v = self.addressed_ping(d, order).await;
        k.seconds = t.elapsed().as_secs_f64();
        self.push_field(match v {
            Ok(None) => k,
            Ok(Some(note)) => k.set(Verdict::Note, note),
            Err(Skip(why)) if why.starts_with("skip: ") => k.set(Verdict::Skip, &why[6..]),
            Err(Skip(why)) => k.set(Verdict::Fail, why),
        });
    }

    async fn addressed_ping(&self, d: i16, order: ByteOrder) -> Result<Option<String>, Skip> {
        self.raw_endpoint()
            .map_err(|e| Skip(format!("skip: {e}")))?;
        let target = address(&self.ior, d).ok_or_else(|| Skip("no IIOP profile".into()))?;
        let mut c = self.raw().await.map_err(Skip)?;
        c.send(&request(order, 1, &target, "ping", |_| Ok(())))
            .await
            .map_err(Skip)?;
        let (r, _) = c.reply(1).await.map_err(Skip)?;
        if r.header.status != ReplyStatus::NeedsAddressingMode {
            return ping_outcome(&r).map(|()| None).map_err(Skip);
        }
        let want = r.body.reader(Options::default()).read_i16().unwrap_or(-1);
        let again = address(&self.ior, want).filter(|_| (0..=2).contains(&want));
        let Some(again) = again else {
            return Err(Skip(format!(
                "NEEDS_ADDRESSING_MODE asks for disposition {want}, which does not exist"
            )));
        };
        c.send(&request(order, 2, &again, "ping", |_| Ok(())))
            .await
            .map_err(Skip)?;
        let (r, _) = c.reply(2).await.map_err(Skip)?;
        ping_outcome(&r).map_err(|e| {
            Skip(format!(
                "NEEDS_ADDRESSING_MODE asked for {}; resent so: {e}",
                form_name(want)
            ))
        })?;
        Ok(Some(format!(
            "NEEDS_ADDRESSING_MODE: the server asks for {} (allowed); resent so, answered",
            form_name(want)
        )))
    }

    /// A LocateRequest addressed by disposition `d`.
    async fn locate_addressing(&mut self, d: i16) {
        let order = ByteOrder::NATIVE;
        let name = format!("TargetAddress {}, LocateRequest", form_name(d));
        let Some((mut k, target)) = self.raw_check(name, "locate", order, 1, d) else {
            return;
        };
        let t = Instant::now();
        let r = async {
            let mut c = self.raw().await?;
            locate(&mut c, 3, &target, order).await
        }
        .await;
        k.seconds = t.elapsed().as_secs_f64();
        self.push_field(match r {
            Ok(LocateStatus::ObjectHere) => k.set(Verdict::Pass, "OBJECT_HERE"),
            Ok(LocateStatus::NeedsAddressingMode(w)) => k.set(
                Verdict::Note,
                format!(
                    "LOC_NEEDS_ADDRESSING_MODE: the server asks for {} (allowed)",
                    form_name(w)
                ),
            ),
            Ok(s) if s.is_forward() => k.set(
                Verdict::Note,
                format!("{}: the object is elsewhere (allowed)", s.name()),
            ),
            Ok(s) => k.set(Verdict::Fail, format!("{} (want OBJECT_HERE)", s.name())),
            Err(e) => k.set(Verdict::Fail, e),
        });
    }

    /// A LocateRequest for the short key `Bench` (what a corbaloc names):
    /// when the server answers OBJECT_FORWARD(_PERM), a LocateRequest for
    /// the forwarded reference's key, at its endpoint, must be answered
    /// OBJECT_HERE. A server that serves the short key itself does not
    /// forward: a skip saying so.
    async fn locate_forward(&mut self) {
        let order = ByteOrder::NATIVE;
        let name = "LocateRequest answered with a forward -> the forwarded key is OBJECT_HERE";
        let Some((mut k, _)) = self.raw_check(name.into(), "locate", order, 2, 0) else {
            return;
        };
        let t = Instant::now();
        let r: Result<Result<String, String>, String> = async {
            let mut c = self.raw().await?;
            let short = TargetAddress::Key(bytes::Bytes::from_static(b"Bench"));
            let status = locate(&mut c, 20, &short, order).await?;
            let Some(fwd) = status.forward() else {
                return Ok(Err(format!(
                    "the server answers {} for the short key `Bench`: it does not forward it \
                     (`serve --forward-keys` does)",
                    status.name()
                )));
            };
            let how = status.name();
            let p = fwd
                .profiles
                .iter()
                .find_map(|p| p.iiop().and_then(Result::ok))
                .ok_or_else(|| format!("{how} to a reference with no IIOP profile"))?;
            let target = TargetAddress::Key(p.object_key.clone());
            let key = iiop_giop::key::key_text(&p.object_key);
            let (h, port) = self.raw_endpoint()?;
            let mut there = if (p.host.as_str(), p.port) == (h.as_str(), port) {
                c
            } else {
                Raw::connect(&p.host, p.port, c.timeout).await?
            };
            match locate(&mut there, 21, &target, order).await? {
                LocateStatus::ObjectHere => Ok(Ok(format!(
                    "{how} to {}:{} key {key}; there OBJECT_HERE",
                    p.host, p.port
                ))),
                s => Err(format!(
                    "{how} to {}:{} key {key}; there {} (want OBJECT_HERE)",
                    p.host,
                    p.port,
                    s.name()
                )),
            }
        }
        .await;
        k.seconds = t.elapsed().as_secs_f64();
        self.push_field(match r {
            Ok(Ok(d)) => k.set(Verdict::Pass, d),
            Ok(Err(why)) => k.set(Verdict::Skip, why),
            Err(e) => k.set(Verdict::Fail, e),
        });
    }

    /// `work(300 ms)`, then a CancelRequest for it, then `ping` on the same
    /// connection: the server must answer the ping; the cancelled call's
    /// reply may come (it is discarded) or not.
    async fn cancel(&mut self) {
        let order = ByteOrder::NATIVE;
        let name = "CancelRequest for a slow call; the server keeps serving";
        let Some((mut k, target)) = self.raw_check(name.into(), "twoway", order, 2, 0) else {
            return;
        };
        let t = Instant::now();
        let r = async {
            let mut c = self.raw().await?;
            let work = request(order, 10, &target, "work", |w| {
                w.write_f64(300_000.0); // µs
                w.write_u32(0); // DIST_FIXED
                w.write_u32(0); // KIND_SLEEP
                Ok(())
            });
            c.send(&work).await?;
            let mut b = BytesMut::new();
            encode_cancel_request(&mut b, V12, order, 10).map_err(|e| e.to_string())?;
            c.send(&b).await?;
            c.send(&request(order, 11, &target, "ping", |_| Ok(())))
                .await?;
            let mut cancelled = false;
            loop {
                match c.next().await {
                    Next::Message(Message::Reply(r), _) if r.header.request_id == 10 => {
                        cancelled = true;
                    }
                    Next::Message(Message::Reply(r), _) if r.header.request_id == 11 => {
                        ping_outcome(&r).map_err(|e| format!("ping after the cancel: {e}"))?;
                        return Ok(cancelled);
                    }
                    Next::Message(m, _) => {
                        return Err(format!("{:?} instead of the ping's reply", m.msg_type()))
                    }
                    Next::Closed => {
                        return Err(
                            "the server closed the connection after the CancelRequest".into()
                        )
                    }
                    Next::Silent => {
                        return Err(format!(
                            "no reply to the ping after the CancelRequest within {:?}",
                            c.timeout
                        ))
                    }
                    Next::Garbage(e) => return Err(format!("not GIOP: {e}")),
                }
            }
        }
        .await;
        k.seconds = t.elapsed().as_secs_f64();
        self.push_field(match r {
            Ok(before) => k.set(
                Verdict::Pass,
                if before {
                    "the ping was answered; the cancelled call's reply came first (discarded)"
                } else {
                    "the ping was answered; no reply to the cancelled call before it"
                },
            ),
            Err(e) => k.set(Verdict::Fail, e),
        });
    }

    /// A malformed message: the server must answer MessageError or close
    /// the connection, and go on serving other connections.
    async fn malformed(&mut self, kind: MalformedKind) {
        let order = ByteOrder::NATIVE;
        let (name, bytes) = match kind {
            MalformedKind::Type => {
                let mut h = Header::new(V12, order, MsgType::CloseConnection, 0).to_bytes();
                h[7] = 42; // no such message type
                (
                    "malformed message (message type 42) -> MessageError or close",
                    h.to_vec(),
                )
            }
            MalformedKind::Version => {
                let mut h = Header::new(V12, order, MsgType::Request, 0).to_bytes();
                h[5] = 9; // GIOP 1.9
                (
                    "malformed message (GIOP 1.9 Request) -> MessageError or close",
                    h.to_vec(),
                )
            }
        };
        let Some((mut k, target)) = self.raw_check(name.into(), "twoway", order, 2, 0) else {
            return;
        };
        let t = Instant::now();
        let r = async {
            let mut c = self.raw().await?;
            c.send(&bytes).await?;
            let what = match c.next().await {
                Next::Message(Message::MessageError, _) => "MessageError",
                Next::Closed => "closed the connection",
                Next::Message(m, _) => {
                    return Err(format!("answered {:?} (want MessageError)", m.msg_type()))
                }
                Next::Silent => {
                    return Err(format!(
                        "neither MessageError nor a close within {:?} (a hang)",
                        c.timeout
                    ))
                }
                Next::Garbage(e) => return Err(format!("answered bytes that are not GIOP: {e}")),
            };
            // Still serving: a new connection's ping.
            let mut c = self.raw().await.map_err(|e| format!("{what}; then {e}"))?;
            c.send(&request(order, 1, &target, "ping", |_| Ok(())))
                .await?;
            let (r, _) = c
                .reply(1)
                .await
                .map_err(|e| format!("{what}; then a new connection's ping: {e}"))?;
            ping_outcome(&r).map_err(|e| format!("{what}; then a new connection's ping: {e}"))?;
            Ok(what)
        }
        .await;
        k.seconds = t.elapsed().as_secs_f64();
        self.push_field(match r {
            Ok(what) => k.set(
                Verdict::Pass,
                format!(
                    "{what}; a new connection is served (sent {})",
                    hex(&bytes, 12)
                ),
            ),
            Err(e) => k.set(Verdict::Fail, format!("{e} (sent {})", hex(&bytes, 12))),
        });
    }

    /// A MessageError from the client (what a client sends when a reply
    /// was malformed), then `ping` on the same connection: the server may
    /// close the connection or ignore the MessageError and answer, and
    /// must go on serving new connections.
    async fn message_error_to_server(&mut self) {
        let order = ByteOrder::NATIVE;
        let name = "MessageError from the client -> close or ignore, keep serving";
        let Some((mut k, target)) = self.raw_check(name.into(), "twoway", order, 2, 0) else {
            return;
        };
        let bytes = Header::new(V12, order, MsgType::MessageError, 0).to_bytes();
        let ping = request(order, 1, &target, "ping", |_| Ok(()));
        let t = Instant::now();
        let r = async {
            let mut c = self.raw().await?;
            c.send(&bytes).await?;
            // A server that closes at once may reset the ping's write.
            let sent = c.send(&ping).await;
            let what = match (sent, c.next().await) {
                (_, Next::Closed) | (Err(_), _) => "closed the connection",
                (Ok(()), Next::Message(Message::Reply(r), _)) if r.header.request_id == 1 => {
                    ping_outcome(&r).map_err(|e| format!("the ping after it: {e}"))?;
                    "ignored it and answered the ping on the same connection"
                }
                (Ok(()), Next::Message(m, _)) => {
                    return Err(format!(
                        "answered {:?} (want the ping's reply or a close)",
                        m.msg_type()
                    ))
                }
                (Ok(()), Next::Silent) => {
                    return Err(format!(
                        "neither answered the ping nor closed within {:?} (a hang)",
                        c.timeout
                    ))
                }
                (Ok(()), Next::Garbage(e)) => return Err(format!("not GIOP: {e}")),
            };
            let mut c = self.raw().await.map_err(|e| format!("{what}; then {e}"))?;
            c.send(&ping).await?;
            let (r, _) = c
                .reply(1)
                .await
                .map_err(|e| format!("{what}; then a new connection's ping: {e}"))?;
            ping_outcome(&r).map_err(|e| format!("{what}; then a new connection's ping: {e}"))?;
            Ok(what)
        }
        .await;
        k.seconds = t.elapsed().as_secs_f64();
        self.push_field(match r {
            Ok(what) => k.set(
                Verdict::Pass,
                format!(
                    "{what}; a new connection is served (sent {})",
                    hex(&bytes, 12)
                ),
            ),
            Err(e) => k.set(Verdict::Fail, format!("{e} (sent {})", hex(&bytes, 12))),
        });
    }

    /// An unknown operation, read as the server sends it (in Fragments
    /// where it fragments replies): BAD_OPERATION, decoded exactly.
    async fn exception_reply(&mut self, order: ByteOrder) {
        let name = format!(
            "exception reply, fragmented or whole, GIOP 1.2 {}",
            short(order)
        );
        let Some((mut k, target)) = self.raw_check(name, "twoway", order, 1, 0) else {
            return;
        };
        let t = Instant::now();
        let r = async {
            let mut c = self.raw().await?;
            c.send(&request(order, 5, &target, "no_such_operation", |_| Ok(())))
                .await?;
            let (r, pieces) = c.reply(5).await?;
            if r.header.status != ReplyStatus::SystemException {
                return Err(format!(
                    "answered {:?} (want SYSTEM_EXCEPTION)",
                    r.header.status
                ));
            }
            let x = r
                .system_exception()
                .map_err(|e| format!("SYSTEM_EXCEPTION that does not decode: {e}"))?;
            let mut rd = r.body.reader(Options::default());
            let _ = iiop_giop::SystemException::decode(&mut rd);
            if !rd.only_padding_left() {
                return Err(format!(
                    "{} bytes after the exception: {}",
                    rd.remaining(),
                    hex(rd.rest(), 32)
                ));
            }
            if !x.name().ends_with("BAD_OPERATION") {
                return Err(format!("{} (want BAD_OPERATION)", super::system_text(&x)));
            }
            Ok(pieces)
        }
        .await;
        k.seconds = t.elapsed().as_secs_f64();
        self.push_field(match r {
            Ok(1) => k.set(Verdict::Pass, "BAD_OPERATION in one message"),
            Ok(n) => k.set(
                Verdict::Pass,
                format!("BAD_OPERATION in {n} messages (Request reply and Fragments), reassembled"),
            ),
            Err(e) => k.set(Verdict::Fail, e),
        });
    }

    /// `raise_user` read as the server sends it (in Fragments where it
    /// fragments replies; the exception's detail ends in the last one):
    /// USER_EXCEPTION BenchError, decoded exactly, nothing but padding
    /// after it.
    async fn user_exception_reply(&mut self, order: ByteOrder) {
        let name = format!(
            "user exception reply, fragmented or whole, GIOP 1.2 {}",
            short(order)
        );
        let Some((mut k, target)) = self.raw_check(name, "twoway", order, 1, 0) else {
            return;
        };
        k.ty = "exception".into();
        let want = BenchErrorData::raised(11, "field", USER_EXCEPTION_DETAIL);
        let t = Instant::now();
        let r = async {
            let mut c = self.raw().await?;
            c.send(&request(order, 6, &target, "raise_user", |w| {
                w.write_i32(want.code);
                w.write_string(&want.reason)?;
                w.write_u32(USER_EXCEPTION_DETAIL);
                Ok(())
            }))
            .await?;
            let (r, pieces) = c.reply(6).await?;
            match r.header.status {
                ReplyStatus::UserException => {}
                ReplyStatus::SystemException => {
                    let x = r.system_exception().map_err(|e| e.to_string())?;
                    let text = super::system_text(&x);
                    return Err(if x.name().ends_with("BAD_OPERATION") {
                        format!("skip: the server does not implement raise_user ({text})")
                    } else {
                        format!("{text} (want USER_EXCEPTION {BENCH_ERROR_ID})")
                    });
                }
                other => return Err(format!("answered {other:?} (want USER_EXCEPTION)")),
            }
            let mut rd = r.body.reader(Options::default());
            let id = rd
                .read_string()
                .map_err(|e| format!("the repository id does not decode: {e}"))?;
            if id != BENCH_ERROR_ID {
                return Err(format!("USER_EXCEPTION {id} (want {BENCH_ERROR_ID})"));
            }
            let got = BenchErrorData::read_members(&mut rd).map_err(|e| {
                format!(
                    "BenchError does not decode: {e}; body {}",
                    hex(&r.body.bytes, 96)
                )
            })?;
            if !rd.only_padding_left() {
                return Err(format!(
                    "{} bytes after the exception: {}",
                    rd.remaining(),
                    hex(rd.rest(), 32)
                ));
            }
            if got != want {
                return Err(format!(
                    "BenchError {{ code {}, reason {:?}, {} octets }} (want code {}, reason {:?}, \
                     {} octets i mod 256); body {}",
                    got.code,
                    got.reason,
                    got.detail.len(),
                    want.code,
                    want.reason,
                    want.detail.len(),
                    hex(&r.body.bytes, 96)
                ));
            }
            Ok(pieces)
        }
        .await;
        k.seconds = t.elapsed().as_secs_f64();
        self.push_field(match r {
            Ok(1) => k.set(Verdict::Pass, "BenchError in one message"),
            Ok(n) => k.set(
                Verdict::Pass,
                format!("BenchError in {n} messages (Reply and Fragments), reassembled"),
            ),
            Err(e) => match e.strip_prefix("skip: ") {
                Some(why) => k.set(Verdict::Skip, why),
                None => k.set(Verdict::Fail, e),
            },
        });
    }

    /// `echo_string` of strings of every length from 0 to 47 in a
    /// Request split into Fragments of `size` bytes (GIOP 1.2): the
    /// server must reassemble it wherever the boundaries fall.
    async fn fragmented_request(&mut self, order: ByteOrder, size: usize) {
        let mut k = self.field_check(
            format!("request in {size}-byte Fragments GIOP 1.2 {}", short(order)),
            "echo",
            order,
        );
        k.ty = "string".into();
        if self.ceiling < V12 {
            let why = format!(
                "Fragments of a Request are GIOP 1.2; the reference publishes GIOP {}",
                self.ceiling
            );
            self.push_field(k.set(Verdict::Skip, why));
            return;
        }
        let strings: Vec<String> = (0..48usize)
            .map(|n| (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect())
            .collect();
        k.size = strings.len() as u64;
        let p = Payload::String(strings);
        let t = Instant::now();
        let cfg = self.cfg(V12, order, Some(size));
        let r = match iiop_bench_idl::client::BenchClient::connect(&self.ior, &cfg).await {
            Ok(c) => {
                let r = echo_check(&c, &p).await;
                c.close();
                r.map_err(|e| e.detail)
            }
            Err(e) => Err(format!("connect: {}", describe(&e))),
        };
        k.seconds = t.elapsed().as_secs_f64();
        self.push_field(match r {
            Ok(()) => k.set(
                Verdict::Pass,
                format!(
                    "48 strings of 0 to 47 characters in Fragments of {size} bytes, echoed exactly"
                ),
            ),
            Err(e) => k.set(Verdict::Fail, e),
        });
    }

    /// `echo_wstring` of characters beyond U+FFFF: under UTF-16 (GIOP 1.2)
    /// each is a surrogate pair, and must come back exactly.
    async fn surrogates(&mut self, order: ByteOrder) {
        let mut k = self.field_check(
            format!("wstring surrogate pairs GIOP 1.2 {}", short(order)),
            "echo",
            order,
        );
        k.ty = "wstring".into();
        if self.ceiling < V12 {
            let why = format!(
                "UTF-16 wstrings are GIOP 1.2; the reference publishes GIOP {}",
                self.ceiling
            );
            self.push_field(k.set(Verdict::Skip, why));
            return;
        }
        if self.ior.code_sets().is_none() {
            let why = "the server's IOR advertises no wchar code set";
            self.push_field(k.set(Verdict::Skip, why));
            return;
        }
        let p = Payload::WString(
            [
                "\u{1F600}",
                "a\u{10348}b",
                "\u{10FFFF}\u{10000}z",
                "é\u{1D11E}",
            ]
            .map(|s| WString(s.into()))
            .to_vec(),
        );
        k.size = 64;
        let t = Instant::now();
        let r = self.echo_on_new_connection(V12, order, &p).await;
        k.seconds = t.elapsed().as_secs_f64();
        self.push_field(match r {
            Ok(()) => k.set(
                Verdict::Pass,
                "U+1F600, U+10348, U+10FFFF, U+10000, U+1D11E echoed exactly",
            ),
            Err(e) => k.set(Verdict::Fail, e),
        });
    }

    /// `p` echoed on a connection of its own in GIOP `v` and `order`,
    /// closed after it: the failure's detail.
    async fn echo_on_new_connection(
        &self,
        v: Version,
        order: ByteOrder,
        p: &Payload,
    ) -> Result<(), String> {
        let c = self.connect(v, order).await?;
        let r = echo_check(&c, p).await;
        c.close();
        r.map_err(|e| e.detail)
    }

    /// Strings beyond ASCII, echoed in GIOP `v` (OpenLiberty #33474: a
    /// peer that takes another char code set than the one in force
    /// garbles them): in GIOP 1.1 and 1.2 in the char code set negotiated
    /// from the reference's TAG_CODE_SETS, in GIOP 1.0 (and without code
    /// sets) in ISO-8859-1, the default. Letters of ISO-8859-1 always;
    /// where UTF-8 is in force, also characters beyond it.
    async fn non_ascii_strings(&mut self, v: Version) {
        let order = ByteOrder::NATIVE;
        let mut k = self.field_check(format!("non-ASCII strings GIOP {v}"), "echo", order);
        k.giop = v.to_string();
        k.ty = "string".into();
        if self.ceiling < v {
            let why = format!("the reference publishes GIOP {}", self.ceiling);
            self.push_field(k.set(Verdict::Skip, why));
            return;
        }
        let char_set = match self.ior.code_sets() {
            Some((cs, _)) if v >= V11 => negotiate(&cs, v).options.char_set,
            _ => CharCodeSet::Latin1,
        };
        let mut strings: Vec<String> = ["é", "Grüße, Ærøskøbing", "¿Señor? ¡Sí! ÿ ß ½ °"]
            .map(String::from)
            .to_vec();
        if char_set == CharCodeSet::Utf8 {
            strings.extend(["€ 100", "漢字 かな", "emoji \u{1F600}"].map(String::from));
        }
        let set = match char_set {
            CharCodeSet::Latin1 => "ISO-8859-1",
            CharCodeSet::Utf8 => "UTF-8",
        };
        let sent = strings.len();
        let p = Payload::String(strings);
        k.size = p.counted_bytes(char_set);
        let t = Instant::now();
        let r = self.echo_on_new_connection(v, order, &p).await;
        k.seconds = t.elapsed().as_secs_f64();
        self.push_field(match r {
            Ok(()) => k.set(
                Verdict::Pass,
                format!("{sent} strings beyond ASCII in {set} echoed exactly"),
            ),
            Err(e) => k.set(Verdict::Fail, format!("in {set}: {e}")),
        });
    }

    /// What a client hit by the code-set negotiation race sends (a client
    /// whose threads share a new connection, one of them marking the code
    /// sets negotiated before any request carried the CodeSets context:
    /// JacORB #211, #329): `echo_wstring` in UTF-16 on a connection whose
    /// first request carried no CodeSets context, then `ping` on the same
    /// connection. With `late`, a `ping` without the context goes first
    /// and the `echo_wstring` carries it (the context arrives late).
    ///
    /// The code sets are fixed by the connection's first request (CORBA 3
    /// §13.10.2.6), so the server may refuse the wide string with a
    /// system exception (omniORB: BAD_PARAM) or read it in the UTF-16 its
    /// reference offers: both pass, and the detail says which. A garbled
    /// echo, a hang, a closed connection or a ping unanswered after it
    /// fail: the race's other requests share that connection.
    async fn code_sets_missed(&mut self, late: bool) {
        let order = ByteOrder::NATIVE;
        let name = if late {
            "CodeSets context on a later request, wstring echo, then ping"
        } else {
            "wstring on a connection without a CodeSets context, then ping"
        };
        let Some((mut k, target)) = self.raw_check(name.into(), "echo", order, 3, 0) else {
            return;
        };
        k.ty = "wstring".into();
        let Some((cs, _)) = self.ior.code_sets() else {
            let why = "the server's IOR advertises no code sets";
            self.push_field(k.set(Verdict::Skip, why));
            return;
        };
        let n = negotiate(&cs, V12);
        if n.context.wchar_data == 0 {
            let why = "the server's IOR advertises no wchar code set";
            self.push_field(k.set(Verdict::Skip, why));
            return;
        }
        let context = [ServiceContext {
            id: SC_CODE_SETS,
            data: n.context.encode(order),
        }];
        let sent = Payload::WString(vec![WString("race é \u{1F600}".into())]);
        let t = Instant::now();
        let r = async {
            let mut c = self.raw().await?;
            let mut id = 30;
            if late {
                c.send(&request(order, id, &target, "ping", |_| Ok(())))
                    .await?;
                let (r, _) = c.reply(id).await?;
                ping_outcome(&r).map_err(|e| format!("the first ping: {e}"))?;
                id += 1;
            }
            let contexts: &[ServiceContext] = if late { &context } else { &[] };
            c.send(&request_with(
                order,
                id,
                &target,
                "echo_wstring",
                contexts,
                n.options,
                |w| sent.encode(w),
            ))
            .await?;
            let (r, _) = c.reply(id).await.map_err(|e| format!("the wstring: {e}"))?;
            let what = match r.header.status {
                ReplyStatus::NoException => {
                    let mut rd = r.body.reader(n.options);
                    match Payload::decode(sent.elem(), &mut rd) {
                        Ok(got) if got == sent => {
                            "read the wstring in the UTF-16 its reference offers".to_string()
                        }
                        Ok(got) => {
                            return Err(format!("echoed {got:?} (sent {sent:?}): garbled"));
                        }
                        Err(e) => {
                            return Err(format!(
                                "an echo that does not decode ({e}); body {}",
                                hex(&r.body.bytes, 48)
                            ))
                        }
                    }
                }
                ReplyStatus::SystemException => {
                    let x = r
                        .system_exception()
                        .map_err(|e| format!("SYSTEM_EXCEPTION that does not decode: {e}"))?;
                    format!("refused the wstring: {}", super::system_text(&x))
                }
                other => return Err(format!("answered the wstring {other:?}")),
            };
            id += 1;
            c.send(&request(order, id, &target, "ping", |_| Ok(())))
                .await
                .map_err(|e| format!("{what}; then {e}"))?;
            let (r, _) = c
                .reply(id)
                .await
                .map_err(|e| format!("{what}; then the ping on that connection: {e}"))?;
            ping_outcome(&r).map_err(|e| format!("{what}; then the ping: {e}"))?;
            Ok(what)
        }
        .await;
        k.seconds = t.elapsed().as_secs_f64();
        self.push_field(match r {
            Ok(what) => k.set(Verdict::Pass, format!("{what}; the ping after it answered")),
            Err(e) => k.set(Verdict::Fail, e),
        });
    }

    /// Our client with a maximum message size below the reply: it must
    /// fail that call at once with an error that says so (not wait for
    /// the timeout), and the next connection works.
    async fn over_our_limit(&mut self) {
        const LIMIT: usize = 16 << 10;
        const N: usize = 64 << 10;
        let order = ByteOrder::NATIVE;
        let mut k = self.field_check(
            "reply above our maximum message size -> a clear error, no hang".into(),
            "echo",
            order,
        );
        k.giop = self.ceiling.to_string();
        k.ty = "octet".into();
        k.size = N as u64;
        let mut cfg = self.cfg(self.ceiling, order, None);
        cfg.codec = CodecConfig {
            max_message_size: LIMIT,
            max_reassembled_size: LIMIT,
        };
        let t = Instant::now();
        let r = async {
            let c = iiop_bench_idl::client::BenchClient::connect(&self.ior, &cfg)
                .await
                .map_err(|e| format!("connect: {}", describe(&e)))?;
            let p = Payload::Octet(vec![7u8; N].into());
            let r = c
                .request("echo_octet", ResponseMode::Twoway, |w| p.encode(w))
                .await;
            c.close();
            match r {
                Ok(_) => Err(format!(
                    "the {N}-byte reply was accepted with a limit of {LIMIT} bytes"
                )),
                Err(e) => Ok(describe(&e)),
            }
        }
        .await;
        let took = t.elapsed();
        k.seconds = took.as_secs_f64();
        let timeout = self.opts.request_timeout;
        self.push_field(match r {
            Ok(e) if took >= timeout => k.set(
                Verdict::Fail,
                format!("waited for the timeout ({took:?}): {e}"),
            ),
            Ok(e) => k.set(
                Verdict::Pass,
                format!(
                    "limit {LIMIT} bytes, reply of {N}: {e} ({} ms)",
                    took.as_millis()
                ),
            ),
            Err(e) => k.set(Verdict::Fail, e),
        });
    }
}

/// Which malformed message [`InteropSuite::malformed`] sends.
#[derive(Clone, Copy)]
enum MalformedKind {
    /// An unknown message type.
    Type,
    /// A GIOP version that does not exist.
    Version,
}

/// `LE` / `BE`.
pub(super) fn short(o: ByteOrder) -> &'static str {
    match o {
        ByteOrder::Little => "LE",
        ByteOrder::Big => "BE",
    }
}

/// A probe's failure or skip (`skip: reason`).
struct Skip(String);

impl From<String> for Skip {
    fn from(s: String) -> Skip {
        Skip(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(name: &str, detail: &str) -> Check {
        Check::new(name, "twoway").set(Verdict::Fail, detail)
    }

    #[test]
    fn a_known_defect_is_matched_by_orb_check_and_symptom_only() {
        let k = failed(
            "TargetAddress ProfileAddr, ping",
            "answered UNKNOWN minor 0x4f4d0001 (Omg) completed COMPLETED_NO",
        );
        let d = known_defect(Some(OMNIORB), &k).expect("omniORB's ProfileAddr gap");
        assert!(d.defect.contains("tracker: "), "{}", d.defect);
        // Another ORB, another symptom, or no failure: not this defect.
        assert!(known_defect(Some(JACORB), &k).is_none());
        assert!(known_defect(None, &k).is_none());
        let other = failed(
            "TargetAddress ProfileAddr, ping",
            "answered OBJECT_NOT_EXIST",
        );
        assert!(known_defect(Some(OMNIORB), &other).is_none());
        let passed = Check::new("TargetAddress ProfileAddr, ping", "twoway");
        assert!(known_defect(Some(OMNIORB), &passed).is_none());
        let hang = failed(
            "malformed message (message type 42) -> MessageError or close",
            "neither MessageError nor a close within 5s (a hang)",
        );
        assert!(known_defect(Some(JACORB), &hang).is_some());
        assert!(known_defect(Some(OMNIORB), &hang).is_none());
    }
}
