//! Replaying a capture (`iiopbench replay FILE --target REF`): re-send the
//! requests of a capture to another server — same operations, same body bytes, one connection
//! per captured connection, requests sent after the replies they waited
//! for in the capture — at the captured pacing scaled by `--speed`, or as
//! fast as possible. Reports per operation the new response times beside
//! the captured ones, and every reply that differs from the captured one
//! (status, exception, and body bytes for deterministic operations).
//!
//! Bodies are copied byte for byte, so they must start at the same offset
//! modulo 8 as in the capture (CDR aligns from the message start). GIOP 1.2
//! bodies always start 8-aligned. For 1.0/1.1, where the body follows the
//! header directly, a request whose header would end at a different offset
//! is sent with one extra service context (id 0x49425000, "IBP\0", ignored
//! by servers as every unknown context must be) whose length moves the
//! body to the captured alignment. Captured requests are held in memory
//! (unlike `pcap`, which streams).
//!
//! [`run`] returns per operation what was replayed and how, the
//! differences, and the results document (kind `replay`); the table a
//! person reads is the command line's.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use iiop_capture::analysis::{new_histogram, LOCATE_OP};
use iiop_capture::{Analyzer, Config};
use iiop_cdr::{ByteOrder, CdrError, Options};
use iiop_giop::conn::endpoint::{endpoint_for, Endpoint};
use iiop_giop::conn::observer::{
    Answers, LocateReplySeen, LocateRequestSeen, ReplySeen, RequestSeen, Sink,
};
use iiop_giop::context::ServiceContext;
use iiop_giop::header::Version;
use iiop_giop::message::{LocateStatus, Reply};
use iiop_giop::{Ior, ReplyStatus, ResponseMode, Target, TargetAddress};
use iiop_transport::client::{Client, ClientConfig, ClientError, Connection};
use iiop_transport::naming::resolve_target;
use serde_json::json;

use crate::error::{bail, fail, Error, JobError, Result};
use crate::hist::Latency;
use crate::progress::Progress;
use crate::results::{Case, CaseParams, Results, TargetInfo};
use crate::target::TlsOpts;

/// What to replay, against what and how.
#[derive(Debug, Clone)]
pub struct ReplayOpts {
    /// The capture (pcap or pcapng).
    pub file: PathBuf,
    /// The server to replay against: `IOR:…`, `corbaloc:…`, or a file
    /// holding one. Requests to the capture's most used object key go to
    /// this reference's key; others keep their captured key.
    pub target: String,
    /// Pacing: the captured times scaled, or no waiting.
    pub speed: Speed,
    /// Operations whose reply bodies must equal the captured ones (besides
    /// every `echo_*` operation, which bench.idl makes deterministic).
    pub deterministic: Vec<String>,
    /// Compare reply bodies as typed values decoded with this IDL (so
    /// that replies in another byte order or alignment compare); without
    /// it bodies compare byte for byte when order and alignment agree.
    pub idl: Option<PathBuf>,
    /// The interface of the captured operations in `idl`.
    pub interface: String,
    /// Per-request timeout.
    pub timeout: Duration,
    /// The client's TLS settings, to reach a server that offers or demands
    /// TLS.
    pub tls: TlsOpts,
    /// Hears the replay as one case.
    pub progress: Progress,
}

impl ReplayOpts {
    /// Replay `file` against `target` with the command line's defaults.
    pub fn new(file: impl Into<PathBuf>, target: impl Into<String>) -> ReplayOpts {
        ReplayOpts {
            file: file.into(),
            target: target.into(),
            speed: Speed::Max,
            deterministic: Vec::new(),
            idl: None,
            interface: "Bench::Perf".into(),
            timeout: Duration::from_secs(30),
            tls: TlsOpts::default(),
            progress: Progress::none(),
        }
    }
}

/// Pacing of a replay (`--speed`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Speed {
    /// Captured inter-request times divided by this factor.
    Factor(f64),
    Max,
}

/// `1x`, `2x`, `0.5x` (the factor) or `max`.
pub fn parse_speed(s: &str) -> Result<Speed, JobError> {
    if s == "max" {
        return Ok(Speed::Max);
    }
    let f: f64 = s
        .strip_suffix('x')
        .unwrap_or(s)
        .parse()
        .map_err(|_| JobError::new(format!("`{s}`: expected 1x, 2x, 0.5x … or max")))?;
    if f > 0.0 && f.is_finite() {
        Ok(Speed::Factor(f))
    } else {
        Err(JobError::new(format!("`{s}`: the factor must be positive")))
    }
}

/// A captured reply, as far as comparing needs it.
#[derive(Debug, Clone)]
struct CapReply {
    status: ReplyStatus,
    exception: Option<String>,
    body: iiop_giop::message::Body,
    latency_ns: Option<u64>,
}

/// The captured LocateReply of a LocateRequest.
#[derive(Debug, Clone)]
struct CapLocated {
    status: LocateStatus,
    latency_ns: Option<u64>,
}

/// A captured request (or LocateRequest) to re-send.
#[derive(Debug, Clone)]
struct CapRequest {
    conn: u64,
    frame: u64,
    ts_ns: u64,
    version: Version,
    order: ByteOrder,
    operation: String,
    key: Bytes,
    /// The object `key` names: the key a captured LOCATION_FORWARD (or a
    /// LocateReply's OBJECT_FORWARD) led from, when the capture shows one
    /// forwarded to `key` (TAO forwards its short keys to its POA keys,
    /// JacORB locates them there), else `key` itself.
    object: Bytes,
    response: ResponseMode,
    body: Bytes,
    body_offset: usize,
    /// Service contexts other than CodeSets (which our connection sends).
    contexts: Vec<ServiceContext>,
    /// How the captured bodies on its connection read: the code sets its
    /// connection's CodeSets context chose (UTF-16 for wchar without one)
    /// under its GIOP version's wchar rules.
    opts: Options,
    /// No call was in flight on its connection when it was sent: wait for
    /// every earlier reply before sending it.
    after_replies: bool,
    /// Reassembled GIOP 1.1 fragments realign mid-body: not re-sendable
    /// as one message.
    segmented: bool,
    reply: Option<CapReply>,
    /// A LocateRequest's captured answer.
    located: Option<CapLocated>,
}

impl CapRequest {
    /// A LocateRequest (no body, no reply: `located`).
    fn is_locate(&self) -> bool {
        self.operation == LOCATE_OP
    }

    /// Its response time at the capture point, when its answer was seen.
    fn captured_latency_ns(&self) -> Option<u64> {
        match &self.located {
            Some(l) => l.latency_ns,
            None => self.reply.as_ref().and_then(|c| c.latency_ns),
        }
    }
}

/// What replay keeps of a capture: its requests in capture order, each
/// with its captured answer, as the capture's observers pair them.
#[derive(Debug, Default)]
struct Collect {
    reqs: Vec<CapRequest>,
    /// Object keys a captured LOCATION_FORWARD or OBJECT_FORWARD led to,
    /// and the key each was forwarded from.
    forwarded_from: HashMap<Bytes, Bytes>,
}

impl Collect {
    /// A captured forward from the object `from` to `ior`: requests to
    /// the key it forwards to are requests to `from`'s object.
    fn forwarded(&mut self, ior: &Ior, from: Bytes) {
        if let Some(p) = ior.iiop_profile() {
            self.forwarded_from
                .entry(p.object_key.clone())
                .or_insert(from);
        }
    }

    /// Every request's `object`: its key, followed back through the
    /// captured forwards (a bounded chain).
    fn resolve_forwards(&mut self) {
        for r in &mut self.reqs {
            let mut k = r.key.clone();
            for _ in 0..8 {
                match self.forwarded_from.get(&k) {
                    Some(from) if *from != k => k = from.clone(),
                    _ => break,
                }
            }
            r.object = k;
        }
    }
}

/// A request's tag is its index in `reqs`: its answer comes back with it.
impl Sink for Collect {
    type Tag = usize;

    fn request(&mut self, ev: RequestSeen<'_>) -> usize {
        let r = ev.request;
        let h = &r.header;
        // Captured bodies read with the code sets their connection's
        // first CodeSets context chose; UTF-16 for wchar without one.
        let opts = match ev.code_sets {
            Some(cs) => cs.options(r.version),
            None => Options {
                wchar_rules: r.version.wchar_rules(),
                ..Options::default()
            },
        };
        self.reqs.push(CapRequest {
            conn: ev.seen.connection,
            frame: ev.seen.first.frame,
            ts_ns: ev.seen.first.ns,
            version: r.version,
            order: r.body.order,
            operation: h.operation().to_string(),
            key: h.target.object_key().unwrap_or_default(),
            object: Bytes::new(),
            response: h.response,
            body: r.body.bytes.clone(),
            body_offset: r.body.offset,
            contexts: h.contexts.0.iter().filter(|c| c.id != 1).cloned().collect(),
            opts,
            after_replies: ev.in_flight == 0,
            segmented: r.body.segments.is_some(),
            reply: None,
            located: None,
        });
        self.reqs.len() - 1
    }

    fn locate_request(&mut self, ev: LocateRequestSeen<'_>) -> usize {
        self.reqs.push(CapRequest {
            conn: ev.seen.connection,
            frame: ev.seen.first.frame,
            ts_ns: ev.seen.first.ns,
            version: ev.seen.header.version,
            order: ev.seen.header.order,
            operation: LOCATE_OP.to_string(),
            key: ev.request.target.object_key().unwrap_or_default(),
            object: Bytes::new(),
            response: ResponseMode::Twoway,
            body: Bytes::new(),
            body_offset: 0,
            contexts: Vec::new(),
            opts: Options::default(),
            after_replies: ev.in_flight == 0,
            segmented: false,
            reply: None,
            located: None,
        });
        self.reqs.len() - 1
    }

    fn reply(&mut self, ev: ReplySeen<'_, usize>) {
        // Only a Request's Reply: one to a LocateRequest ends it but
        // answers nothing replay can compare (pcap reports it).
        let Answers::Request {
            tag: i, latency_ns, ..
        } = ev.answers
        else {
            return;
        };
        let r = ev.reply;
        if r.header.status.is_forward() {
            if let Ok(ior) = r.forward_ior() {
                let from = self.reqs[i].key.clone();
                self.forwarded(&ior, from);
            }
        }
        self.reqs[i].reply = Some(CapReply {
            status: r.header.status,
            exception: iiop_capture::analysis::exception_name(r),
            body: r.body.clone(),
            latency_ns: Some(latency_ns),
        });
    }

    fn locate_reply(&mut self, ev: LocateReplySeen<'_, usize>) {
        // Only a LocateRequest's: a Request's id still awaits its Reply.
        let Answers::Request {
            tag: i, latency_ns, ..
        } = ev.answers
        else {
            return;
        };
        if let Some(ior) = ev.reply.status.forward() {
            let from = self.reqs[i].key.clone();
            self.forwarded(ior, from);
        }
        self.reqs[i].located = Some(CapLocated {
            status: ev.reply.status.clone(),
            latency_ns: Some(latency_ns),
        });
    }
}

/// A replayed answer against the captured one, as far as forwards go:
/// the same rule for Replies and LocateReplies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Forwarding {
    /// The captured server forwarded and the target serves the object
    /// itself: no difference. The captured server redirected (TAO does
    /// for the short keys of its IORTable; JacORB answers a
    /// LocateRequest for its short key so), and what followed the
    /// forward is in the capture and replayed too.
    Answered,
    /// The target forwards where the captured server answered: a
    /// difference ([`target_forwards`]).
    ByTarget,
    /// Neither: compare the answers as they are.
    None,
}

/// [`Forwarding`] of an answer that forwards (`now`) or serves the
/// object (`served`), against a captured answer that forwarded or not.
fn forwarding(captured: bool, now: bool, served: bool) -> Forwarding {
    if captured && served {
        Forwarding::Answered
    } else if now && !captured {
        Forwarding::ByTarget
    } else {
        Forwarding::None
    }
}

/// The difference [`Forwarding::ByTarget`] reports.
fn target_forwards(now: impl std::fmt::Display, captured: impl std::fmt::Display) -> String {
    format!(
        "the target forwards ({now}) where the captured server answered ({captured}): replay \
         against the reference it forwards to"
    )
}

/// The context that moves a 1.0/1.1 body to the captured alignment.
const PAD_CONTEXT_ID: u32 = 0x4942_5000;

/// The target's answer to one replayed message.
#[derive(Debug)]
enum Answer {
    /// To a request: its reply (none for a oneway).
    Reply(Option<Reply>),
    /// To a LocateRequest.
    Located(LocateStatus),
}

/// What happened to one replayed request.
#[derive(Debug)]
struct Outcome1 {
    idx: usize,
    result: Result<Answer, ClientError>,
    ns: u64,
    /// How bodies on the replay's connection read (the code sets
    /// negotiated with the target, the GIOP version spoken).
    opts: Options,
}

async fn send_one(
    conn: &Connection,
    target: &TargetAddress,
    r: &CapRequest,
    timeout: Option<Duration>,
) -> Result<Option<Reply>, ClientError> {
    let want = r.body_offset % 8;
    let mut pad: Option<usize> = None;
    loop {
        let mut ctxs = r.contexts.clone();
        if let Some(n) = pad {
            ctxs.push(ServiceContext {
                id: PAD_CONTEXT_ID,
                data: Bytes::from(vec![0u8; n]),
            });
        }
        let body = &r.body;
        let res = conn
            .request_with(target, &r.operation, r.response, &ctxs, timeout, |w| {
                if !body.is_empty() && w.position() % 8 != want {
                    return Err(CdrError::Message("replay: body misaligned".into()));
                }
                w.write_bytes(body);
                Ok(())
            })
            .await;
        match res {
            Err(ClientError::Encode(e)) if e.to_string().contains("replay: body misaligned") => {
                let next = pad.map_or(0, |n| n + 1);
                if next > 8 {
                    return Err(ClientError::Encode(e));
                }
                pad = Some(next);
            }
            other => return other,
        }
    }
}

/// What every connection's replay task shares.
struct ReplayPlan {
    /// Where the target listens (its TLS port when TLS is used).
    ep: Endpoint,
    /// The client settings of every connection (TLS among them); each
    /// connection sets the captured byte order.
    cfg: ClientConfig,
    code_sets: Option<iiop_giop::context::CodeSetComponentInfo>,
    reqs: Arc<Vec<CapRequest>>,
    /// The object key a captured request is sent to.
    target_of: Box<dyn Fn(&CapRequest) -> TargetAddress + Send + Sync>,
    speed: Speed,
    /// When the replay started, and the capture time of its first request.
    t0: (Instant, u64),
}

/// Replay one captured connection's requests (`idxs`, in capture order)
/// over one new connection.
async fn replay_connection(plan: Arc<ReplayPlan>, idxs: Vec<usize>) -> Vec<Outcome1> {
    let p = &*plan;
    let reqs = &p.reqs;
    let mut out = Vec::new();
    let first = &reqs[idxs[0]];
    let cfg = ClientConfig {
        order: first.order,
        ..p.cfg.clone()
    };
    let conn = match Connection::connect_to(&p.ep, first.version, &cfg, p.code_sets.as_ref()).await
    {
        Ok(c) => c,
        Err(e) => {
            return idxs
                .into_iter()
                .map(|idx| Outcome1 {
                    idx,
                    result: Err(e.clone()),
                    ns: 0,
                    opts: Options::default(),
                })
                .collect()
        }
    };
    let opts = conn.options();
    let mut running: Vec<tokio::task::JoinHandle<Outcome1>> = Vec::new();
    for idx in idxs {
        let r = &reqs[idx];
        if let Speed::Factor(f) = p.speed {
            let due =
                p.t0.0 + Duration::from_nanos((r.ts_ns.saturating_sub(p.t0.1) as f64 / f) as u64);
            tokio::time::sleep_until(due.into()).await;
        }
        if r.after_replies {
            for h in running.drain(..) {
                if let Ok(o) = h.await {
                    out.push(o);
                }
            }
        }
        let conn = conn.clone();
        let reqs = reqs.clone();
        let target = (p.target_of)(r);
        // --timeout is the connection's request timeout (`cfg`).
        let timeout = p.cfg.request_timeout;
        running.push(tokio::spawn(async move {
            let r = &reqs[idx];
            let t = Instant::now();
            let result = if r.is_locate() {
                conn.locate(&target)
                    .await
                    .map(|l| Answer::Located(l.status))
            } else {
                send_one(&conn, &target, r, timeout)
                    .await
                    .map(Answer::Reply)
            };
            Outcome1 {
                idx,
                result,
                ns: t.elapsed().as_nanos() as u64,
                opts,
            }
        }));
    }
    for h in running {
        if let Ok(o) = h.await {
            out.push(o);
        }
    }
    out
}

/// Compare a replayed reply body with the captured one: typed through the
/// IDL when there is one (each read as its own connection's code sets and
/// GIOP version say), else byte for byte when byte order and alignment
/// agree; `None` when they cannot be compared.
fn compare_bodies(
    spec: Option<&iiop_idl::Spec>,
    interface: &str,
    op: &str,
    (cap, cap_opts): (&iiop_giop::message::Body, Options),
    (new, new_opts): (&iiop_giop::message::Body, Options),
) -> Option<Result<(), String>> {
    if let Some(spec) = spec {
        let found = crate::dynamic::find_op(spec, &format!("{interface}::{op}")).ok()?;
        let a = crate::dynamic::decode_reply(&found.sig, &mut cap.reader(cap_opts));
        let b = crate::dynamic::decode_reply(&found.sig, &mut new.reader(new_opts));
        return Some(match (a, b) {
            (Ok(a), Ok(b)) if a == b => Ok(()),
            (Ok(_), Ok(_)) => Err(format!(
                "reply value differs ({} body bytes, captured {})",
                new.bytes.len(),
                cap.bytes.len()
            )),
            (_, Err(e)) => Err(format!("reply does not decode: {e}")),
            (Err(e), _) => Err(format!("captured reply does not decode: {e}")),
        });
    }
    if cap.order != new.order
        || (cap.offset % 8 != new.offset % 8 && !cap.bytes.is_empty())
        || cap.segments.is_some()
        || new.segments.is_some()
    {
        return None;
    }
    if cap.bytes == new.bytes {
        return Some(Ok(()));
    }
    let at = cap
        .bytes
        .iter()
        .zip(new.bytes.iter())
        .position(|(a, b)| a != b)
        .unwrap_or(cap.bytes.len().min(new.bytes.len()));
    Some(Err(format!(
        "reply body differs at byte {at} ({} bytes, captured {})",
        new.bytes.len(),
        cap.bytes.len()
    )))
}

/// What the replay of one operation on one object key found.
#[derive(Debug, Default, Clone)]
pub struct OpReport {
    pub operation: String,
    /// The captured object key, printable (`%`-escaped bytes outside
    /// ASCII).
    pub key: String,
    /// Requests in the capture.
    pub captured: u64,
    pub replayed: u64,
    pub failed: u64,
    /// Reply bodies compared with the captured ones.
    pub compared_bodies: u64,
    /// Replies that differ from the captured ones.
    pub differing: u64,
    /// Deterministic replies whose bodies could not be compared.
    pub not_comparable: u64,
    /// Captured replies that forwarded (LOCATION_FORWARD) to a request
    /// the target answered itself: no difference.
    pub answered_forwards: u64,
    /// Response times at the capture point, ns.
    pub captured_lat: Option<hdrhistogram::Histogram<u64>>,
    /// Response times of the replay, ns.
    pub replay_lat: Option<hdrhistogram::Histogram<u64>>,
    pub request_body_bytes: u64,
    pub twoway: bool,
}

impl OpReport {
    /// The captured response time at quantile `q`, µs.
    pub fn captured_us(&self, q: f64) -> Option<f64> {
        quantile_us(&self.captured_lat, q)
    }

    /// The replayed response time at quantile `q`, µs.
    pub fn replay_us(&self, q: f64) -> Option<f64> {
        quantile_us(&self.replay_lat, q)
    }
}

fn quantile_us(h: &Option<hdrhistogram::Histogram<u64>>, q: f64) -> Option<f64> {
    h.as_ref().map(|h| h.value_at_quantile(q) as f64 / 1e3)
}

/// What a replay did.
#[derive(Debug, Clone)]
pub struct ReplayRun {
    /// Requests in the capture (LocateRequests not counted).
    pub requests: usize,
    /// LocateRequests in the capture.
    pub locate_requests: usize,
    /// Captured connections (each replayed over one new connection).
    pub connections: usize,
    /// Per operation and object key, in that order.
    pub ops: Vec<OpReport>,
    /// The first 200 differences, one line each.
    pub diffs: Vec<String>,
    /// Every difference counted.
    pub total_diffs: u64,
    /// The replay as a results document (kind `replay`).
    pub results: Results,
}

/// Replay the capture; an error only when nothing could be replayed (no
/// capture, no requests in it, no target). Differences are in the
/// returned run and its results' `outcome`.
pub fn run(o: &ReplayOpts) -> Result<ReplayRun> {
    let case = o.progress.case(&format!("replay {}", o.file.display()));
    let r = replay(o);
    case.done();
    r
}

fn replay(o: &ReplayOpts) -> Result<ReplayRun> {
    let mut a = Analyzer::with_sink(Config::default(), Collect::default());
    crate::capture::feed_files(std::slice::from_ref(&o.file), &mut a)?;
    let (_, mut collected) = a.finish();
    collected.resolve_forwards();
    let reqs = collected.reqs;
    if reqs.is_empty() {
        bail!(Job, "{}: no GIOP requests in the capture", o.file.display());
    }
    let target = Target::load(&o.target).map_err(|e| fail!(Job, "`target`: {e}"))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| fail!(Local, "starting the replay's runtime: {e}"))?;
    // The most used captured object (the earliest of equals) is the one
    // the replay targets.
    let mut key_counts: HashMap<Bytes, (usize, std::cmp::Reverse<usize>)> = HashMap::new();
    for (i, r) in reqs.iter().enumerate() {
        key_counts
            .entry(r.object.clone())
            .or_insert((0, std::cmp::Reverse(i)))
            .0 += 1;
    }
    let main_key = key_counts
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .map(|(k, _)| k)
        .unwrap_or_default();
    let reqs = Arc::new(reqs);
    let speed = o.speed;
    let cfg = ClientConfig {
        tls: o.tls.mode()?,
        request_timeout: Some(o.timeout),
        ..ClientConfig::default()
    };
    let outcomes: Vec<Outcome1> = rt.block_on(async {
        let client = Client::new(cfg.clone());
        let ior = resolve_target(&client, &target)
            .await
            .map_err(|e| fail!(Target, "`target`: {e}"))?;
        let p = ior
            .iiop_profile()
            .ok_or_else(|| fail!(Job, "`target` has no IIOP profile"))?;
        let code_sets = ior.code_sets().map(|(c, _)| c);
        let new_key = p.object_key.clone();
        let mk = main_key.clone();
        let target_of: Box<dyn Fn(&CapRequest) -> TargetAddress + Send + Sync> =
            Box::new(move |r: &CapRequest| {
                TargetAddress::Key(if r.object == mk {
                    new_key.clone()
                } else {
                    r.key.clone()
                })
            });
        let mut per_conn: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
        for (i, r) in reqs.iter().enumerate() {
            if !r.segmented {
                per_conn.entry(r.conn).or_default().push(i);
            }
        }
        let ep = endpoint_for(&p, cfg.tls.wanted()).map_err(|e| fail!(Job, "`target`: {e}"))?;
        let plan = Arc::new(ReplayPlan {
            ep,
            cfg,
            code_sets,
            reqs: reqs.clone(),
            target_of,
            speed,
            t0: (
                Instant::now(),
                reqs.iter().map(|r| r.ts_ns).min().unwrap_or(0),
            ),
        });
        let mut tasks = Vec::new();
        for (_, idxs) in per_conn {
            tasks.push(tokio::spawn(replay_connection(plan.clone(), idxs)));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.extend(
                t.await
                    .map_err(|e| fail!(Local, "a replayed connection's task: {e}"))?,
            );
        }
        Ok::<_, Error>(all)
    })?;
    // Compare.
    let spec = match &o.idl {
        Some(f) => Some(crate::dynamic::load_spec(f, &[])?),
        None => None,
    };
    let deterministic =
        |op: &str| op.starts_with("echo_") || o.deterministic.iter().any(|d| d == op);
    let mut ops: BTreeMap<(String, Bytes), OpReport> = BTreeMap::new();
    let mut diffs: Vec<String> = Vec::new();
    let mut total_diffs = 0u64;
    for r in reqs.iter() {
        let e = ops
            .entry((r.operation.clone(), r.key.clone()))
            .or_insert_with(|| OpReport {
                operation: r.operation.clone(),
                key: iiop_capture::analysis::key_text(&r.key),
                ..OpReport::default()
            });
        e.captured += 1;
        e.request_body_bytes += r.body.len() as u64;
        e.twoway |= r.response.expects_reply();
        if let Some(ns) = r.captured_latency_ns() {
            e.captured_lat
                .get_or_insert_with(new_histogram)
                .saturating_record(ns.max(1));
        }
        if r.segmented {
            e.failed += 1;
            diffs.push(format!(
                "frame {}: {} not replayed: GIOP 1.1 fragments realign mid-body",
                r.frame, r.operation
            ));
        }
    }
    for oc in &outcomes {
        let r = &reqs[oc.idx];
        let e = ops
            .get_mut(&(r.operation.clone(), r.key.clone()))
            .expect("every request has an entry");
        let mut diff = |what: String, e: &mut OpReport| {
            e.differing += 1;
            total_diffs += 1;
            if diffs.len() < 200 {
                diffs.push(format!("frame {} {}: {what}", r.frame, r.operation));
            }
        };
        match &oc.result {
            Err(err) => {
                e.failed += 1;
                diff(format!("replay failed: {err}"), e);
            }
            Ok(Answer::Reply(None)) => e.replayed += 1,
            Ok(Answer::Located(now)) => {
                e.replayed += 1;
                e.replay_lat
                    .get_or_insert_with(new_histogram)
                    .saturating_record(oc.ns.max(1));
                let Some(cap) = &r.located else { continue };
                let (now_name, cap_name) = (now.name(), cap.status.name());
                match forwarding(
                    cap.status.is_forward(),
                    now.is_forward(),
                    *now == LocateStatus::ObjectHere,
                ) {
                    Forwarding::Answered => e.answered_forwards += 1,
                    Forwarding::ByTarget => diff(target_forwards(now_name, cap_name), e),
                    Forwarding::None if now_name != cap_name => {
                        diff(format!("locate status {now_name}, captured {cap_name}"), e)
                    }
                    Forwarding::None => {}
                }
            }
            Ok(Answer::Reply(Some(rep))) => {
                e.replayed += 1;
                e.replay_lat
                    .get_or_insert_with(new_histogram)
                    .saturating_record(oc.ns.max(1));
                let Some(cap) = &r.reply else { continue };
                let now = rep.header.status;
                match forwarding(
                    cap.status.is_forward(),
                    now.is_forward(),
                    now == ReplyStatus::NoException,
                ) {
                    Forwarding::Answered => e.answered_forwards += 1,
                    Forwarding::ByTarget => diff(
                        target_forwards(format!("{now:?}"), format!("{:?}", cap.status)),
                        e,
                    ),
                    Forwarding::None if cap.status != now => {
                        diff(format!("status {now:?}, captured {:?}", cap.status), e)
                    }
                    Forwarding::None => {
                        let exception = iiop_capture::analysis::exception_name(rep);
                        if cap.exception != exception {
                            diff(
                                format!("exception {exception:?}, captured {:?}", cap.exception),
                                e,
                            );
                        } else if deterministic(&r.operation)
                            && cap.status == ReplyStatus::NoException
                        {
                            match compare_bodies(
                                spec.as_ref(),
                                &o.interface,
                                &r.operation,
                                (&cap.body, r.opts),
                                (&rep.body, oc.opts),
                            ) {
                                None => e.not_comparable += 1,
                                Some(Ok(())) => e.compared_bodies += 1,
                                Some(Err(why)) => {
                                    e.compared_bodies += 1;
                                    diff(why, e);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    let mut cases = Vec::new();
    for e in ops.values() {
        let mut lat = Latency::new();
        if let Some(h) = &e.replay_lat {
            for v in h.iter_recorded() {
                for _ in 0..v.count_at_value() {
                    lat.record_ns(v.value_iterated_to());
                }
            }
        }
        let n = e.captured.max(1);
        let mut extra = BTreeMap::new();
        extra.insert("captured".into(), json!(e.captured));
        extra.insert("failed".into(), json!(e.failed));
        extra.insert("compared_bodies".into(), json!(e.compared_bodies));
        extra.insert("not_comparable".into(), json!(e.not_comparable));
        extra.insert("answered_forwards".into(), json!(e.answered_forwards));
        extra.insert("differing".into(), json!(e.differing));
        extra.insert("captured_p50_us".into(), json!(e.captured_us(0.5)));
        extra.insert("captured_p99_us".into(), json!(e.captured_us(0.99)));
        let mut pe = BTreeMap::new();
        pe.insert("command".into(), json!("pcap"));
        pe.insert("operation".into(), json!(e.operation));
        pe.insert("object_key".into(), json!(e.key));
        cases.push(Case {
            name: format!("{} {}", e.operation, e.key),
            params: CaseParams {
                ty: String::new(),
                size: e.request_body_bytes / n,
                mode: crate::capture::mode(&e.operation, e.twoway).into(),
                extra: pe,
            },
            calls: e.replayed,
            bytes: e.request_body_bytes,
            latency_us: (!lat.is_empty()).then(|| lat.summary()),
            histogram: (!lat.is_empty()).then(|| lat.to_base64()),
            extra,
            ..Case::default()
        });
    }
    let mut params = BTreeMap::new();
    params.insert("capture".into(), json!(o.file.display().to_string()));
    params.insert("differences".into(), json!(diffs));
    params.insert("speed".into(), json!(format!("{:?}", speed)));
    let target = TargetInfo {
        kind: "replay".into(),
        reference: o.target.clone(),
        ..TargetInfo::default()
    };
    let r = crate::capture::complete_results(
        "replay",
        target,
        params,
        cases,
        (total_diffs > 0).then(|| format!("{total_diffs} replies differ from the capture")),
    );
    Ok(ReplayRun {
        requests: reqs.iter().filter(|r| !r.is_locate()).count(),
        locate_requests: reqs.iter().filter(|r| r.is_locate()).count(),
        connections: reqs
            .iter()
            .map(|r| r.conn)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        ops: ops.into_values().collect(),
        diffs,
        total_diffs,
        results: r,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use iiop_capture::synth::{Flow, PcapWriter, ETHERNET};
    use iiop_giop::message::{
        encode_locate_reply, encode_locate_request, encode_request, LocateReply, RequestHead,
    };

    /// One forwarding rule for Replies and LocateReplies: the captured
    /// server's forward answered by the target itself is no difference,
    /// the target forwarding where the capture did not is one, and the
    /// rest is left to comparing the answers.
    #[test]
    fn forwarding_rule() {
        // (captured forwarded, target forwards, target served)
        assert_eq!(forwarding(true, false, true), Forwarding::Answered);
        assert_eq!(forwarding(false, true, false), Forwarding::ByTarget);
        assert_eq!(forwarding(true, true, false), Forwarding::None);
        assert_eq!(forwarding(true, false, false), Forwarding::None);
        assert_eq!(forwarding(false, false, true), Forwarding::None);
        assert!(target_forwards("OBJECT_FORWARD", "OBJECT_HERE").contains(
            "the target forwards (OBJECT_FORWARD) where the captured server answered (OBJECT_HERE)"
        ));
    }

    /// `ping` (twoway) or `ping_oneway` on `key`.
    fn call(id: u32, key: &'static [u8], twoway: bool) -> Vec<u8> {
        let mut buf = BytesMut::new();
        let target = TargetAddress::Key(Bytes::from_static(key));
        let head = RequestHead {
            request_id: id,
            response: if twoway {
                ResponseMode::Twoway
            } else {
                ResponseMode::Oneway
            },
            target: &target,
            operation: if twoway { "ping" } else { "ping_oneway" },
            contexts: &[],
        };
        encode_request(
            &mut buf,
            Version::V1_2,
            ByteOrder::Little,
            Options::default(),
            &head,
            |_| Ok(()),
        )
        .unwrap();
        buf.to_vec()
    }

    /// What `replay` collects from a capture, and what `pcap` counts.
    fn collect_counted(msgs: &[(bool, Vec<u8>)]) -> (iiop_capture::Summary, Collect) {
        let mut flow = Flow::new(
            "127.0.0.1:40000".parse().unwrap(),
            "127.0.0.1:2809".parse().unwrap(),
            [1000, 9000],
        );
        let mut w = PcapWriter::new(Vec::new(), ETHERNET).unwrap();
        let mut ts = 1_700_000_000_000_000_000u64;
        for s in flow.handshake() {
            w.segment(ts, &s).unwrap();
        }
        for (from_client, m) in msgs {
            for s in flow.send(*from_client, m, 1460) {
                ts += 10_000;
                w.segment(ts, &s).unwrap();
            }
        }
        let pcap = w.into_inner();
        let mut a = Analyzer::with_sink(Config::default(), Collect::default());
        iiop_capture::feed(&pcap[..], &mut a).unwrap();
        let (sum, mut c) = a.finish();
        c.resolve_forwards();
        (sum, c)
    }

    /// What `replay` collects from a capture.
    fn collect(msgs: &[(bool, Vec<u8>)]) -> Collect {
        collect_counted(msgs).1
    }

    /// `pcap`'s figures of `op` on `key`.
    fn op<'a>(s: &'a iiop_capture::Summary, op: &str, key: &str) -> &'a iiop_capture::OpStats {
        s.ops
            .iter()
            .find(|o| o.operation == op && o.object_key == key)
            .unwrap_or_else(|| panic!("{op} {key}: {:?}", s.ops))
    }

    /// omniORB's client binding a corbaloc to a short key of JacORB's or
    /// TAO's: a LocateRequest for `Bench`, OBJECT_FORWARD to the POA key,
    /// then the calls go to the POA key. Those calls are calls to `Bench`,
    /// as they are when a Reply forwards.
    #[test]
    fn calls_after_a_locate_forward_are_calls_to_the_key_located() {
        let mut locate = BytesMut::new();
        let bench = TargetAddress::Key(Bytes::from_static(b"Bench"));
        encode_locate_request(&mut locate, Version::V1_2, ByteOrder::Little, 1, &bench).unwrap();
        let forward = |status| {
            let mut b = BytesMut::new();
            encode_locate_reply(
                &mut b,
                Version::V1_2,
                ByteOrder::Big,
                &LocateReply {
                    request_id: 1,
                    status,
                },
            )
            .unwrap();
            b.to_vec()
        };
        let to = Ior::iiop("IDL:Bench/Perf:1.0", "127.0.0.1", 2810, &b"POA/Bench"[..]);
        for status in [
            LocateStatus::ObjectForward(to.clone()),
            LocateStatus::ObjectForwardPerm(to.clone()),
        ] {
            let c = collect(&[
                (true, locate.to_vec()),
                (false, forward(status.clone())),
                (true, call(2, b"POA/Bench", false)),
                (true, call(3, b"Other", false)),
            ]);
            let keys: Vec<_> = c
                .reqs
                .iter()
                .map(|r| (&r.operation[..], &r.key[..], &r.object[..]))
                .collect();
            assert_eq!(
                keys,
                [
                    (LOCATE_OP, &b"Bench"[..], &b"Bench"[..]),
                    ("ping_oneway", b"POA/Bench", b"Bench"),
                    ("ping_oneway", b"Other", b"Other")
                ],
                "{status:?}"
            );
            // The LocateRequest is replayed, its captured answer beside it.
            let located = c.reqs[0].located.as_ref().expect("answered");
            assert_eq!(located.status, status);
            assert_eq!(located.latency_ns, Some(10_000));
            assert!(c.reqs[0].is_locate() && c.reqs[0].after_replies);
            assert!(c.reqs[1].after_replies, "the locate was answered first");
        }
        // JacORB's own answer to a LocateRequest for `Bench`, in GIOP 1.2
        // and 1.0 (fixtures/giop/jacorb/README.md): forwarded to its POA key.
        let raw = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/giop/jacorb/pcap/raw.pcap");
        let mut a = Analyzer::with_sink(Config::default(), Collect::default());
        crate::capture::feed_files(&[raw], &mut a).unwrap();
        let (sum, c) = a.finish();
        assert_eq!(sum.locate_replies.get("OBJECT_FORWARD"), Some(&2));
        let aliases: Vec<_> = c.forwarded_from.iter().collect();
        assert_eq!(aliases.len(), 1, "{aliases:?}");
        assert_eq!(&aliases[0].1[..], b"Bench");
        assert!(aliases[0].0.ends_with(b"Bench") && aliases[0].0 != "Bench");
        // Only a forward aliases: OBJECT_HERE names no other key.
        let c = collect(&[
            (true, locate.to_vec()),
            (false, forward(LocateStatus::ObjectHere)),
            (true, call(2, b"POA/Bench", false)),
        ]);
        assert_eq!(&c.reqs[1].object[..], b"POA/Bench");
        // A LocateReply to a Request's id leaves the call waiting for its
        // own Reply, and is no LocateRequest's answer.
        let (sum, c) = collect_counted(&[
            (true, call(1, b"Bench", true)),
            (false, forward(LocateStatus::ObjectHere)),
            (true, call(2, b"Bench", false)),
        ]);
        assert!(!c.reqs[0].is_locate() && c.reqs[0].located.is_none());
        assert!(!c.reqs[1].after_replies, "the call is still in flight");
        assert_eq!(op(&sum, "ping", "Bench").unanswered, 1);
        // A Reply to a LocateRequest ends it (the next call waited for
        // it) without being its answer.
        let mut reply = BytesMut::new();
        iiop_giop::message::encode_reply(
            &mut reply,
            Version::V1_2,
            ByteOrder::Big,
            Options::default(),
            1,
            ReplyStatus::NoException,
            &[],
            |_| Ok(()),
        )
        .unwrap();
        let (sum, c) = collect_counted(&[
            (true, locate.to_vec()),
            (false, reply.to_vec()),
            (true, call(2, b"Bench", false)),
        ]);
        assert!(c.reqs[0].is_locate() && c.reqs[0].located.is_none());
        assert!(c.reqs[1].after_replies);
        let loc = op(&sum, LOCATE_OP, "Bench");
        assert_eq!((loc.replies, loc.unanswered), (0, 0));
    }
}
