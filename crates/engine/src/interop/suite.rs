//! The conformance suite our client runs against one bench.idl server:
//! echo of every element type in every GIOP version and byte order (and
//! fragmented), LocateRequest, unknown operation and object key, `_is_a`,
//! `_non_existent`, counters after oneways, requests in flight, object
//! references handed out, and what the server's IOR says about it.
//!
//! Every check ends as [`Verdict::Pass`], [`Verdict::Fail`] (the spec forbids
//! what we saw; the offending reply bytes are in the detail) or
//! [`Verdict::Note`] (a difference the spec allows, or a check skipped
//! for a stated reason).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use iiop_bench_idl::bench::ops::PERF_ID;
use iiop_bench_idl::bench::types::{Payload, StatsWire};
use iiop_bench_idl::bench::work::{Dist, Kind};
use iiop_bench_idl::bench::{CallMode, Elem};
use iiop_bench_idl::client::{BenchClient, BenchError};
use iiop_cdr::{ByteOrder, CdrError, CharCodeSet, Reader, Writer};
use iiop_giop::exception::{MinorVendor, SystemException};
use iiop_giop::ior::{orb_type_name, IiopProfile, Ior};
use iiop_giop::message::{Body, LocateStatus, ReplyStatus};
use iiop_giop::{ResponseMode, Target, Version};
use iiop_transport::client::{ClientConfig, ClientError, TlsMode};
use serde::Serialize;

use crate::target::TlsOpts;

/// How a check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    Note,
    /// Not run, for the reason in the detail (a capability the server does
    /// not advertise, or a combination the spec forbids): counted apart,
    /// never as a pass.
    Skip,
}

impl Verdict {
    /// `pass`, `FAIL`, `note`, `skip`.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::Note => "note",
            Verdict::Skip => "skip",
        }
    }
}

/// One reported check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    pub name: String,
    pub verdict: Verdict,
    pub detail: String,
    /// Element type token, when the check is about one.
    #[serde(rename = "type")]
    pub ty: String,
    /// Largest payload in bytes (bench.idl counting), 0 when meaningless.
    pub size: u64,
    /// `echo`, `oneway`, `twoway`, `locate`, `ior`, …
    pub mode: String,
    /// GIOP version used, e.g. `1.2`.
    pub giop: String,
    /// `big` / `little` for checks that fix the byte order.
    pub order: String,
    pub calls: u64,
    pub seconds: f64,
}

impl Check {
    fn new(name: impl Into<String>, mode: &str) -> Check {
        Check {
            name: name.into(),
            verdict: Verdict::Pass,
            detail: String::new(),
            ty: String::new(),
            size: 0,
            mode: mode.into(),
            giop: String::new(),
            order: String::new(),
            calls: 0,
            seconds: 0.0,
        }
    }

    fn set(mut self, v: Verdict, detail: impl Into<String>) -> Check {
        self.verdict = v;
        self.detail = detail.into();
        self
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct SuiteOptions {
    /// A reduced set: fewer sizes, fewer versions.
    pub quick: bool,
    /// Per request.
    pub request_timeout: Duration,
    /// The whole suite: checks not started by then are not run, and one
    /// failed check says so.
    pub time_limit: Duration,
    /// The client's TLS settings, for a server that offers or demands TLS.
    pub tls: TlsOpts,
}

impl Default for SuiteOptions {
    fn default() -> Self {
        SuiteOptions {
            quick: false,
            request_timeout: Duration::from_secs(20),
            time_limit: Duration::from_secs(300),
            tls: TlsOpts::default(),
        }
    }
}

/// The outcome of one suite run.
#[derive(Debug, Clone, Serialize)]
pub struct SuiteReport {
    pub checks: Vec<Check>,
    pub seconds: f64,
}

impl SuiteReport {
    /// Checks with this verdict.
    pub fn count(&self, v: Verdict) -> usize {
        self.checks.iter().filter(|c| c.verdict == v).count()
    }

    /// `N passed, M failed, K notes, S skipped`.
    pub fn summary(&self) -> String {
        format!(
            "{} passed, {} failed, {} notes, {} skipped",
            self.count(Verdict::Pass),
            self.count(Verdict::Fail),
            self.count(Verdict::Note),
            self.count(Verdict::Skip)
        )
    }

    /// The skipped checks grouped by reason, most frequent first:
    /// `(count, reason)`.
    pub fn skip_reasons(&self) -> Vec<(usize, String)> {
        let mut by: Vec<(usize, String)> = Vec::new();
        for c in self.checks.iter().filter(|c| c.verdict == Verdict::Skip) {
            match by.iter_mut().find(|(_, r)| *r == c.detail) {
                Some((n, _)) => *n += 1,
                None => by.push((1, c.detail.clone())),
            }
        }
        by.sort_by_key(|b| std::cmp::Reverse(b.0));
        by
    }

    /// One line per skip reason: `skipped 24: the server's IOR …`.
    pub fn skip_lines(&self) -> String {
        self.skip_reasons()
            .iter()
            .map(|(n, r)| format!("skipped {n}: {r}\n"))
            .collect()
    }
}

/// Hex of at most `max` bytes, with the total length when cut.
pub fn hex(bytes: &[u8], max: usize) -> String {
    let mut s = String::new();
    for (i, b) in bytes.iter().take(max).enumerate() {
        if i > 0 && i % 4 == 0 {
            s.push(' ');
        }
        let _ = write!(s, "{b:02x}");
    }
    if bytes.len() > max {
        let _ = write!(s, " … ({} bytes)", bytes.len());
    }
    s
}

/// A call error in one line, naming the exception, minor code and vendor.
pub fn describe(e: &BenchError) -> String {
    match e {
        BenchError::Call(ClientError::System(x)) => system_text(x),
        other => other.to_string(),
    }
}

/// A check of the server's counters: the first error of the run fails it,
/// else `judge` says whether the counters are right and what they show.
fn judge_stats(
    k: Check,
    err: Option<String>,
    got: Result<StatsWire, String>,
    judge: impl FnOnce(&StatsWire) -> (bool, String),
) -> Check {
    match (err, got) {
        (Some(e), _) | (None, Err(e)) => k.set(Verdict::Fail, e),
        (None, Ok(s)) => {
            let (right, detail) = judge(&s);
            k.set(if right { Verdict::Pass } else { Verdict::Fail }, detail)
        }
    }
}

/// A LocateRequest's final answer (the client followed any forward) for
/// a key the server should know: OBJECT_HERE passes (with the forwards
/// that led there, `hops`), anything else fails for `key`.
fn located(k: Check, status: LocateStatus, hops: &str, key: &str) -> Check {
    match status {
        LocateStatus::ObjectHere => k.set(Verdict::Pass, format!("OBJECT_HERE{hops}")),
        other => k.set(Verdict::Fail, format!("{other:?} for {key}")),
    }
}

/// A system exception in one line: name, minor code and its vendor,
/// completion status.
fn system_text(x: &SystemException) -> String {
    format!(
        "{} minor 0x{:08x} ({:?}) completed {}",
        x.name(),
        x.minor,
        x.vendor(),
        x.completed
    )
}

fn order_name(o: ByteOrder) -> &'static str {
    if o == ByteOrder::Big {
        "big"
    } else {
        "little"
    }
}

/// Resolve a command-line reference (`IOR:`, `corbaloc:`, a file, `-`).
pub fn load_target(arg: &str) -> anyhow::Result<Ior> {
    let t = Target::load(arg).map_err(|e| anyhow::anyhow!("target {arg:?}: {e}"))?;
    t.direct_ior().ok_or_else(|| {
        anyhow::anyhow!("target {arg:?}: corbaname needs a naming lookup; give an IOR or corbaloc")
    })
}

/// The main IIOP profile of a reference, or why there is none.
pub fn profile(ior: &Ior) -> anyhow::Result<IiopProfile> {
    ior.iiop_profile()
        .ok_or_else(|| anyhow::anyhow!("the reference has no IIOP profile"))
}

/// One set of echo runs: a GIOP version, byte order and fragment size.
#[derive(Debug, Clone)]
struct EchoSet {
    version: Version,
    order: ByteOrder,
    fragment: Option<usize>,
    /// Element counts per type (a function of the type for byte sizes).
    counts: fn(Elem, bool) -> Vec<usize>,
}

impl EchoSet {
    fn label(&self) -> String {
        let mut s = format!(
            "GIOP {} {}",
            self.version,
            if self.order == ByteOrder::Big {
                "BE"
            } else {
                "LE"
            }
        );
        if let Some(f) = self.fragment {
            let _ = write!(s, " frag{f}");
        }
        s
    }
}

fn plain_counts(_: Elem, quick: bool) -> Vec<usize> {
    if quick {
        vec![0, 1, 7]
    } else {
        vec![0, 1, 3, 7, 13, 100]
    }
}

/// Just under, just over and several times the 1024-byte fragment size.
fn fragment_counts(e: Elem, quick: bool) -> Vec<usize> {
    let sizes: &[u64] = if quick { &[1100] } else { &[900, 1100, 5000] };
    sizes
        .iter()
        .map(|&s| e.count_for_size(s) as usize)
        .collect()
}

const V10: Version = Version { major: 1, minor: 0 };
const V11: Version = Version { major: 1, minor: 1 };
const V12: Version = Version { major: 1, minor: 2 };

fn echo_sets(quick: bool) -> Vec<EchoSet> {
    let s = |version, order, fragment, counts| EchoSet {
        version,
        order,
        fragment,
        counts,
    };
    let (le, be) = (ByteOrder::Little, ByteOrder::Big);
    let mut v = vec![
        s(V12, le, None, plain_counts as fn(Elem, bool) -> Vec<usize>),
        s(V12, be, None, plain_counts),
        s(V11, le, None, plain_counts),
    ];
    if !quick {
        v.push(s(V11, be, None, plain_counts));
        v.push(s(V10, be, None, plain_counts));
    }
    v.push(s(V10, le, None, plain_counts));
    v.push(s(V12, le, Some(1024), fragment_counts));
    if !quick {
        v.push(s(V12, be, Some(1024), fragment_counts));
    }
    v
}

/// Runs the suite against `ior`.
#[derive(Debug)]
pub struct Suite {
    ior: Ior,
    profile: IiopProfile,
    opts: SuiteOptions,
    /// `opts.tls` as the client's TLS settings, the files read once for
    /// every connection.
    tls: TlsMode,
    /// The large-payload checks' sizes, possibly scaled down for a slow
    /// peer by [`calibrate`](Self::calibrate).
    large: Vec<(Elem, u64)>,
    /// The reference could not be resolved (no answer, or an error).
    unreachable: bool,
    checks: Vec<Check>,
    deadline: Option<Instant>,
    expired: bool,
}

impl Suite {
    /// A suite for the server behind `ior`.
    pub fn new(ior: Ior, opts: SuiteOptions) -> anyhow::Result<Suite> {
        let profile = profile(&ior)?;
        let tls = opts.tls.mode()?;
        let large = if opts.quick {
            vec![(Elem::Octet, 3 << 20)]
        } else {
            vec![(Elem::Octet, 4 << 20), (Elem::Double, 3 << 20)]
        };
        Ok(Suite {
            ior,
            profile,
            large,
            unreachable: false,
            tls,
            opts,
            checks: Vec::new(),
            deadline: None,
            expired: false,
        })
    }

    /// `corbaloc:iiop:1.2@HOST:PORT` of the server's main profile, or
    /// `corbaloc:ssliop:1.2@HOST:TLSPORT` where the profile's TLS offer is
    /// required or its plain port is 0 (a TLS-only server), so the
    /// corbaloc checks reach the server the way the reference does.
    fn corbaloc_base(&self) -> String {
        let p = &self.profile;
        match iiop_giop::ior::tls_offer(p) {
            Some(t) if t.required() || p.port == 0 => {
                format!("corbaloc:ssliop:1.2@{}:{}", t.host, t.port)
            }
            _ => format!("corbaloc:iiop:1.2@{}:{}", p.host, p.port),
        }
    }

    fn cfg(&self, version: Version, order: ByteOrder, fragment: Option<usize>) -> ClientConfig {
        ClientConfig {
            version: Some(version),
            order,
            fragment_size: fragment,
            request_timeout: Some(self.opts.request_timeout),
            connect_timeout: Duration::from_secs(5),
            tls: self.tls.clone(),
            ..ClientConfig::default()
        }
    }

    async fn connect(&self, version: Version, order: ByteOrder) -> Result<BenchClient, String> {
        BenchClient::connect(&self.ior, &self.cfg(version, order, None))
            .await
            .map_err(|e| format!("connect: {}", describe(&e)))
    }

    /// The main connection (GIOP 1.2, native order), reconnected when the
    /// server closed it.
    async fn live(&self, slot: &mut Option<BenchClient>) -> Result<BenchClient, String> {
        if let Some(c) = slot.as_ref().filter(|c| !c.is_closed()) {
            return Ok(c.clone());
        }
        let c = self.connect(V12, ByteOrder::NATIVE).await?;
        *slot = Some(c.clone());
        Ok(c)
    }

    /// Whether the time limit has passed (reported once, as a failure).
    fn expired(&mut self) -> bool {
        if self.expired {
            return true;
        }
        if self.deadline.is_none_or(|d| Instant::now() < d) {
            return false;
        }
        self.expired = true;
        let limit = self.opts.time_limit;
        self.push(Check::new("suite time limit", "connect").set(
            Verdict::Fail,
            format!("the suite ran past its limit of {limit:?}; the remaining checks were not run"),
        ));
        true
    }

    fn push(&mut self, c: Check) {
        self.checks.push(c);
    }

    /// Run every check; never fails as a whole (a check that cannot run
    /// is reported as failed).
    pub async fn run(mut self) -> SuiteReport {
        let t0 = Instant::now();
        self.resolve_reference().await;
        self.ior_notes();
        self.calibrate().await;
        // Each group runs on the main connection, reconnecting first if
        // the server closed it (so one fatal reply does not fail the rest).
        let mut main: Option<BenchClient> = None;
        self.deadline = Some(t0 + self.opts.time_limit);
        for group in 0..8 {
            if self.expired() {
                break;
            }
            let c = match self.live(&mut main).await {
                Ok(c) => c,
                Err(e) => {
                    self.push(Check::new("connect GIOP 1.2", "connect").set(Verdict::Fail, e));
                    break;
                }
            };
            match group {
                0 => self.basics(&c).await,
                1 => self.locate(&c).await,
                2 => self.errors(&c).await,
                3 => self.counters(&c).await,
                4 => self.order(&c).await,
                5 => self.in_flight(&c).await,
                6 => self.references(&c).await,
                _ => self.large(&c).await,
            }
        }
        for set in echo_sets(self.opts.quick) {
            self.echo_set(&set).await;
        }
        SuiteReport {
            checks: self.checks,
            seconds: t0.elapsed().as_secs_f64(),
        }
    }

    /// Follow the reference to where the object is (a server may answer
    /// a short key with LOCATION_FORWARD, as TAO's IORTable does): the
    /// suite then runs against the forwarded reference — its code sets
    /// among the rest — and says which forwards it followed.
    async fn resolve_reference(&mut self) {
        let c = match self.connect(V12, ByteOrder::NATIVE).await {
            Ok(c) => c,
            // The groups below report the connect failure.
            Err(_) => return,
        };
        let r = c.resolve().await;
        let chain = c.forwards();
        if let Err(e) = r {
            let mut k = Check::new("reference: resolve", "locate");
            k.calls = 1;
            self.push(k.set(Verdict::Fail, format!("_non_existent: {}", describe(&e))));
            // A peer that does not answer is not measured either.
            self.unreachable = true;
        }
        if chain.is_empty() {
            c.close();
            return;
        }
        let hops = chain_text(&chain);
        self.push(Check::new("reference: forwards", "locate").set(
            Verdict::Note,
            format!(
                "{} forward(s) followed (allowed): {hops}; the suite runs against the forwarded reference",
                chain.len()
            ),
        ));
        if let Some(next) = c.forwarded_to() {
            if let Ok(p) = profile(&next) {
                self.ior = next;
                self.profile = p;
            }
        }
        c.close();
    }

    /// Measure how fast the peer echoes a small payload, and size the
    /// suite from it: per-request timeout and suite time limit are raised
    /// (never lowered) so that a correct but slow server can finish, and
    /// the large-payload checks shrink to just above 2 MiB when their full
    /// size would take long. Says what it chose in a note.
    async fn calibrate(&mut self) {
        const PROBE: u64 = 8 << 10;
        const ROUNDS: usize = 3;
        if self.unreachable {
            return;
        }
        let mut k = Check::new("calibration: echo rate", "echo");
        k.ty = Elem::Double.token().into();
        k.size = PROBE;
        let c = match self.connect(V12, ByteOrder::NATIVE).await {
            Ok(c) => c,
            Err(_) => return,
        };
        let p = Payload::generate(
            Elem::Double,
            Elem::Double.count_for_size(PROBE) as usize,
            false,
        );
        // One untimed call opens the way (forwards, code sets, warm-up);
        // the timed ones follow.
        let mut t = Instant::now();
        for round in 0..=ROUNDS {
            if round == 1 {
                t = Instant::now();
            }
            if let Err(x) = echo_check(&c, &p).await {
                c.close();
                self.push(k.set(
                    Verdict::Note,
                    format!(
                        "could not measure the peer's rate ({}); default timeouts kept",
                        x.detail
                    ),
                ));
                return;
            }
        }
        c.close();
        let secs = t.elapsed().as_secs_f64().max(1e-6);
        k.calls = ROUNDS as u64 + 1;
        k.seconds = secs;
        let rate = (PROBE * ROUNDS as u64) as f64 / secs;
        let plan = SuitePlan::from_rate(rate, &self.opts, &self.large, self.total_echo_bytes());
        self.large = plan.large.clone();
        self.opts.request_timeout = plan.request_timeout;
        self.opts.time_limit = plan.time_limit;
        self.push(k.set(Verdict::Note, plan.describe(rate)));
    }

    /// Payload bytes the echo sets will send (each echoed back).
    fn total_echo_bytes(&self) -> u64 {
        echo_sets(self.opts.quick)
            .iter()
            .map(|set| {
                Elem::ALL
                    .iter()
                    .map(|&e| {
                        (set.counts)(e, self.opts.quick)
                            .iter()
                            .map(|&n| n as u64 * e.fixed_stride().unwrap_or(16))
                            .sum::<u64>()
                    })
                    .sum::<u64>()
            })
            .sum()
    }

    fn ior_notes(&mut self) {
        let p = self.profile.clone();
        let mut c = Check::new("ior: profile", "ior");
        c.giop = p.version.to_string();
        let key = iiop_giop::corbaloc::escape_key(&p.object_key);
        self.push(c.set(
            Verdict::Note,
            format!(
                "type id {:?}, IIOP {} at {}:{}, object key {key}, {} profile(s)",
                self.ior.type_id,
                p.version,
                p.host,
                p.port,
                self.ior.profiles.len()
            ),
        ));
        let orb = match p.orb_type() {
            Some(t) => format!(
                "TAG_ORB_TYPE 0x{t:08x} ({})",
                orb_type_name(t).unwrap_or("unknown vendor")
            ),
            None => "no TAG_ORB_TYPE component".into(),
        };
        self.push(Check::new("ior: ORB type", "ior").set(Verdict::Note, orb));
        let cs = match self.ior.code_sets() {
            Some((i, from)) => {
                let list = |v: &[u32]| {
                    v.iter()
                        .map(|x| format!("0x{x:08x}"))
                        .collect::<Vec<_>>()
                        .join(",")
                };
                format!(
                    "code sets: from {from}; char native 0x{:08x} conversion [{}]; wchar native 0x{:08x} conversion [{}]",
                    i.for_char.native,
                    list(&i.for_char.conversion),
                    i.for_wchar.native,
                    list(&i.for_wchar.conversion)
                )
            }
            None => "no TAG_CODE_SETS (in the IIOP profile or a TAG_MULTIPLE_COMPONENTS one): \
                     no wchar/wstring can be sent"
                .into(),
        };
        self.push(Check::new("ior: code sets", "ior").set(Verdict::Note, cs));
        let alt = p.alternate_addresses();
        let alt = if alt.is_empty() {
            "none".to_string()
        } else {
            alt.iter()
                .map(|(h, p)| format!("{h}:{p}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        self.push(Check::new("ior: alternate addresses", "ior").set(Verdict::Note, alt));
    }

    async fn basics(&mut self, c: &BenchClient) {
        let t = Instant::now();
        let r = c.ping().await;
        let mut k = Check::new("ping", "twoway");
        k.calls = 1;
        k.seconds = t.elapsed().as_secs_f64();
        self.push(match r {
            Ok(()) => k,
            Err(e) => k.set(Verdict::Fail, describe(&e)),
        });
        let k = Check::new("_is_a(IDL:Bench/Perf:1.0)", "twoway");
        self.push(match is_a(c, PERF_ID).await {
            Ok(true) => k.set(Verdict::Pass, "true"),
            Ok(false) => k.set(Verdict::Fail, "false for the object's own type"),
            Err(e) => k.set(Verdict::Fail, e),
        });
        let k = Check::new("_is_a(other id)", "twoway");
        self.push(match is_a(c, "IDL:Bench/NoSuchType:1.0").await {
            Ok(false) => k.set(Verdict::Pass, "false"),
            Ok(true) => k.set(Verdict::Fail, "true for IDL:Bench/NoSuchType:1.0"),
            Err(e) => k.set(Verdict::Fail, e),
        });
        let k = Check::new("_non_existent", "twoway");
        self.push(
            match call_exact(c, "_non_existent", |_| Ok(()), |r| r.read_bool()).await {
                Ok(false) => k.set(Verdict::Pass, "false"),
                Ok(true) => k.set(Verdict::Fail, "true for a live object"),
                Err(e) => k.set(Verdict::Fail, e),
            },
        );
        let k = Check::new("work(1000us, fixed, sleep)", "twoway");
        let work = call_exact(
            c,
            "work",
            |w| {
                w.write_f64(1000.0);
                w.write_u32(Dist::Fixed as u32);
                w.write_u32(Kind::Sleep as u32);
                Ok(())
            },
            |r| r.read_f64(),
        );
        self.push(match work.await {
            Ok(us) if us >= 1000.0 => k.set(Verdict::Pass, format!("{us:.0} us")),
            Ok(us) => k.set(Verdict::Fail, format!("returned {us} us, below 1000")),
            Err(e) => k.set(Verdict::Fail, e),
        });
    }

    async fn locate(&mut self, c: &BenchClient) {
        let k = Check::new("LocateRequest(own key)", "locate");
        let before = c.forwards().len();
        self.push(match c.locate().await {
            Ok(l) => {
                let hops = if c.forwards().len() > before {
                    hops_text(c)
                } else {
                    String::new()
                };
                located(k, l.status, &hops, "the object's own key")
            }
            Err(e) => k.set(Verdict::Fail, e.to_string()),
        });
        let bogus = c.with_key(b"NoSuchObjectKey");
        let k = Check::new("LocateRequest(bogus key)", "locate");
        self.push(match bogus.locate().await {
            Ok(l) => match l.status {
                LocateStatus::UnknownObject => k.set(Verdict::Pass, "UNKNOWN_OBJECT"),
                LocateStatus::SystemException(x) if x.name() == "OBJECT_NOT_EXIST" => k.set(
                    Verdict::Pass,
                    format!(
                        "LOC_SYSTEM_EXCEPTION OBJECT_NOT_EXIST minor 0x{:08x} ({:?})",
                        x.minor,
                        x.vendor()
                    ),
                ),
                other => k.set(
                    Verdict::Fail,
                    format!("{other:?} for a key that does not exist"),
                ),
            },
            Err(e) => k.set(Verdict::Fail, e.to_string()),
        });
    }

    async fn errors(&mut self, c: &BenchClient) {
        let k = Check::new("unknown operation -> BAD_OPERATION", "twoway");
        let r = c.call("no_such_operation", |_| Ok(())).await;
        self.push(expect_system(k, r, &["BAD_OPERATION"], &[]));
        let k = Check::new("unknown object key -> OBJECT_NOT_EXIST", "twoway");
        let r = c
            .with_key(b"NoSuchObjectKey")
            .call("ping", |_| Ok(()))
            .await;
        // Some ORBs forward unknown keys; report rather than fail.
        self.push(expect_system(
            k,
            r,
            &["OBJECT_NOT_EXIST"],
            &["TRANSIENT", "OBJ_ADAPTER"],
        ));
        self.trailing_bytes().await;
    }

    /// `echo_long` with 8 bytes after its sequence (more than padding can
    /// explain), on a connection of its own: MARSHAL, a MessageError or
    /// a closed connection (omniORB's strictIIOP) reject it (pass); a
    /// normal answer ignores them (a note: lenient, not forbidden).
    async fn trailing_bytes(&mut self) {
        let mut k = Check::new(
            "echo_long with 8 bytes after the arguments -> MARSHAL",
            "twoway",
        );
        k.ty = "long".into();
        k.giop = "1.2".into();
        k.calls = 1;
        let c = match self.connect(V12, ByteOrder::NATIVE).await {
            Ok(c) => c,
            Err(e) => {
                self.push(k.set(Verdict::Fail, e));
                return;
            }
        };
        let t = Instant::now();
        let r = c
            .request("echo_long", ResponseMode::Twoway, |w| {
                w.write_u32(2);
                w.write_i32(1);
                w.write_i32(2);
                w.write_bytes(&[0u8; 8]);
                Ok(())
            })
            .await;
        k.seconds = t.elapsed().as_secs_f64();
        c.close();
        self.push(trailing_verdict(k, r));
    }

    async fn counters(&mut self, c: &BenchClient) {
        let wide_ok = c.options().wchar_set.is_some();
        let t = Instant::now();
        let mut k = Check::new("counters after send/oneway of every type", "oneway");
        let mut expect = (0u64, 0u64, 0u64);
        let mut err = None;
        if let Err(e) = c.reset().await {
            err = Some(format!("reset: {}", describe(&e)));
        }
        for e in Elem::ALL {
            if err.is_some() {
                break;
            }
            if e.is_wide() && !wide_ok {
                continue;
            }
            let p = Payload::generate(e, 3, false);
            let b = p.counted_bytes(CharCodeSet::Latin1);
            if let Err(x) = c.payload(CallMode::Twoway, &p).await {
                err = Some(format!("{}: {}", e.op_name(CallMode::Twoway), describe(&x)));
                break;
            }
            if let Err(x) = c.payload(CallMode::Oneway, &p).await {
                err = Some(format!("{}: {}", e.op_name(CallMode::Oneway), describe(&x)));
                break;
            }
            expect.0 += 1;
            expect.1 += 1;
            expect.2 += 2 * b;
        }
        k.calls = expect.0 + expect.1;
        k.size = expect.2;
        let got = stats(c).await;
        k.seconds = t.elapsed().as_secs_f64();
        self.push(judge_stats(k, err, got, |s| {
            let d = format!(
                "calls {} oneways {} bytes {} (expected {} {} {})",
                s.calls, s.oneways, s.bytes, expect.0, expect.1, expect.2
            );
            ((s.calls, s.oneways, s.bytes) == expect, d)
        }));
    }

    async fn order(&mut self, c: &BenchClient) {
        let n: u64 = if self.opts.quick { 200 } else { 1000 };
        let t = Instant::now();
        let mut k = Check::new(
            format!("oneway order: mark(1..{n}) then get_stats"),
            "oneway",
        );
        k.calls = n + 1;
        let mut err = c
            .reset()
            .await
            .err()
            .map(|e| format!("reset: {}", describe(&e)));
        for i in 1..=n {
            if err.is_some() {
                break;
            }
            if let Err(e) = c.mark(i).await {
                err = Some(format!("mark({i}): {}", describe(&e)));
            }
        }
        let got = stats(c).await;
        k.seconds = t.elapsed().as_secs_f64();
        self.push(judge_stats(k, err, got, |s| {
            let d = format!(
                "oneways {} last_mark {} mark_disorder {} (expected {n} {n} 0)",
                s.oneways, s.last_mark, s.mark_disorder
            );
            (
                s.oneways == n && s.last_mark == n && s.mark_disorder == 0,
                d,
            )
        }));
    }

    async fn in_flight(&mut self, c: &BenchClient) {
        let n = if self.opts.quick { 50 } else { 200 };
        let t = Instant::now();
        let mut set = tokio::task::JoinSet::new();
        for i in 0..n {
            let c = c.clone();
            set.spawn(async move {
                let p = Payload::generate(Elem::Long, i % 64 + 1, false);
                (i, echo_check(&c, &p).await)
            });
        }
        let mut bad = Vec::new();
        let mut done = 0;
        while let Some(r) = set.join_next().await {
            done += 1;
            match r {
                Ok((_, Ok(()))) => {}
                Ok((i, Err(e))) => bad.push(format!("call {i}: {}", e.detail)),
                Err(e) => bad.push(format!("task: {e}")),
            }
        }
        let mut k = Check::new(
            format!("{n} echo_long calls in flight on one connection"),
            "echo",
        );
        k.ty = "long".into();
        k.calls = n as u64;
        k.seconds = t.elapsed().as_secs_f64();
        self.push(if bad.is_empty() && done == n {
            k.set(
                Verdict::Pass,
                format!("{n} replies, each its own request's"),
            )
        } else {
            let wrong = bad.len() + (n - done);
            bad.truncate(3);
            k.set(
                Verdict::Fail,
                format!("{wrong} of {n} wrong, first: {}", bad.join("; ")),
            )
        });
    }

    async fn references(&mut self, c: &BenchClient) {
        let k = Check::new("get_single(7) reference usable", "twoway");
        let r = async {
            let ior = c.get_single(7).await.map_err(|e| describe(&e))?;
            let p = ior
                .iiop_profile()
                .ok_or_else(|| "returned reference has no IIOP profile".to_string())?;
            let s = BenchClient::connect(&ior, &self.cfg(V12, ByteOrder::NATIVE, None))
                .await
                .map_err(|e| format!("connect to {}:{}: {}", p.host, p.port, describe(&e)))?;
            s.call("op", |_| Ok(()))
                .await
                .map_err(|e| format!("op(): {}", describe(&e)))?;
            Ok::<_, String>(format!(
                "{} at {}:{} key {}",
                ior.type_id,
                p.host,
                p.port,
                iiop_giop::corbaloc::escape_key(&p.object_key)
            ))
        }
        .await;
        self.push(match r {
            Ok(d) => k.set(Verdict::Pass, d),
            Err(e) => k.set(Verdict::Fail, e),
        });
        let base = self.corbaloc_base();
        let k = Check::new("LocateRequest(corbaloc key Bench)", "locate");
        let r = async {
            let ior = load_target(&format!("{base}/Bench")).map_err(|e| e.to_string())?;
            let d = BenchClient::connect(&ior, &self.cfg(V12, ByteOrder::NATIVE, None))
                .await
                .map_err(|e| format!("connect: {}", describe(&e)))?;
            let l = d.locate().await.map_err(|e| e.to_string())?;
            Ok::<_, String>((l, hops_text(&d)))
        }
        .await;
        self.push(match r {
            Ok((l, hops)) => located(k, l.status, &hops, "the corbaloc key"),
            Err(e) => k.set(Verdict::Fail, e),
        });
        for (key, ops) in [
            ("Dispatch50", ["m00", "m49"]),
            ("Dispatch500", ["m000", "m499"]),
            ("Single0", ["op", "op"]),
        ] {
            let url = format!("{base}/{key}");
            let k = Check::new(format!("corbaloc {key}: {}", ops.join(", ")), "twoway");
            let r = async {
                let ior = load_target(&url).map_err(|e| e.to_string())?;
                let d = BenchClient::connect(&ior, &self.cfg(V12, ByteOrder::NATIVE, None))
                    .await
                    .map_err(|e| format!("connect: {}", describe(&e)))?;
                for op in ops {
                    d.call(op, |_| Ok(()))
                        .await
                        .map_err(|e| format!("{op}(): {}", describe(&e)))?;
                }
                Ok::<_, String>(url.clone())
            }
            .await;
            let _ = c;
            self.push(match r {
                Ok(d) => k.set(Verdict::Pass, d),
                Err(e) => k.set(Verdict::Fail, e),
            });
        }
    }

    async fn large(&mut self, c: &BenchClient) {
        for (e, bytes) in self.large.clone() {
            let p = Payload::generate(e, e.count_for_size(bytes) as usize, false);
            let mut k = Check::new(
                format!(
                    "echo {} {} (above 2 MiB)",
                    e.token(),
                    crate::units::format_size(bytes)
                ),
                "echo",
            );
            k.ty = e.token().into();
            k.size = p.counted_bytes(CharCodeSet::Latin1);
            k.giop = "1.2".into();
            k.calls = 1;
            let t = Instant::now();
            let r = echo_check(c, &p).await;
            k.seconds = t.elapsed().as_secs_f64();
            self.push(match r {
                Ok(()) => k.set(Verdict::Pass, format!("{} elements", p.len())),
                Err(x) => k.set(Verdict::Fail, x.detail),
            });
        }
    }

    /// Which byte order the server answers in: its own choice (a note
    /// when it is not the request's).
    async fn reply_order(&mut self, set: &EchoSet, c: &BenchClient) {
        let mut k = Check::new(format!("reply byte order {}", set.label()), "twoway");
        k.giop = set.version.to_string();
        k.order = order_name(set.order).into();
        k.calls = 1;
        let r = c.request("ping", ResponseMode::Twoway, |_| Ok(())).await;
        self.push(match r {
            Ok(Some(reply)) if reply.body.order == set.order => {
                k.set(Verdict::Pass, "the request's byte order")
            }
            Ok(Some(reply)) => k.set(
                Verdict::Note,
                format!(
                    "replies {}-endian to {}-endian requests (allowed: the sender chooses)",
                    order_name(reply.body.order),
                    order_name(set.order)
                ),
            ),
            Ok(None) => k.set(Verdict::Fail, "no reply to ping"),
            Err(e) => k.set(Verdict::Fail, format!("ping: {e}")),
        });
    }

    async fn echo_set(&mut self, set: &EchoSet) {
        let label = set.label();
        let cfg = self.cfg(set.version, set.order, set.fragment);
        let mut client = match BenchClient::connect(&self.ior, &cfg).await {
            Ok(c) => c,
            Err(e) => {
                let mut k = Check::new(format!("echo {label}: connect"), "echo");
                k.giop = set.version.to_string();
                k.order = order_name(set.order).into();
                self.push(k.set(Verdict::Fail, describe(&e)));
                return;
            }
        };
        for e in Elem::ALL {
            if self.expired() {
                return;
            }
            let mut k = Check::new(format!("echo {} {label}", e.token()), "echo");
            k.ty = e.token().into();
            k.giop = set.version.to_string();
            k.order = order_name(set.order).into();
            if client.is_closed() {
                // The server dropped us (e.g. after a MARSHAL it treats as
                // fatal): reconnect so the remaining types still run.
                match BenchClient::connect(&self.ior, &cfg).await {
                    Ok(c) => client = c,
                    Err(x) => {
                        self.push(k.set(Verdict::Fail, format!("reconnect: {}", describe(&x))));
                        continue;
                    }
                }
            }
            let wide_ok = client.options().wchar_set.is_some();
            if e.is_wide() && set.version == V10 {
                self.push(k.set(Verdict::Skip, "wchar/wstring are illegal in GIOP 1.0"));
                continue;
            }
            if e.is_wide() && !wide_ok {
                self.push(k.set(
                    Verdict::Skip,
                    "the server's IOR advertises no wchar code set (no TAG_CODE_SETS \
                     in its IIOP profile or a TAG_MULTIPLE_COMPONENTS profile)",
                ));
                continue;
            }
            let counts = (set.counts)(e, self.opts.quick);
            let t = Instant::now();
            let mut fail = None;
            for &n in &counts {
                let p = Payload::generate(e, n, false);
                k.size = k.size.max(p.counted_bytes(CharCodeSet::Latin1));
                k.calls += 1;
                if let Err(x) = echo_check(&client, &p).await {
                    fail = Some(x);
                    break;
                }
            }
            k.seconds = t.elapsed().as_secs_f64();
            let list = counts
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(",");
            self.push(match fail {
                None => k.set(Verdict::Pass, format!("{list} elements exact")),
                // GIOP 1.1's wchar encoding was ill-defined (fixed by 1.2);
                // an ORB that cleanly refuses wide types there is limited,
                // not wrong on the wire.
                Some(x)
                    if e.is_wide()
                        && set.version == V11
                        && matches!(
                            x.exception.as_deref(),
                            Some("BAD_PARAM" | "NO_IMPLEMENT" | "CODESET_INCOMPATIBLE" | "MARSHAL")
                        ) =>
                {
                    k.set(
                        Verdict::Note,
                        format!("server supports no wchar/wstring in GIOP 1.1: {}", x.detail),
                    )
                }
                // TAO 2.2.1 and Yoko 1.4 read BOM-less UTF-16 as big-endian
                // in a little-endian GIOP 1.1 message (1.2's rule; 1.1 left
                // the order of wide data ill-defined): named, with the bytes.
                Some(x) if set.version == V11 && set.order == ByteOrder::Little && x.utf16_swapped => {
                    k.set(
                        Verdict::Note,
                        format!(
                            "server reads BOM-less UTF-16 as big-endian in a little-endian GIOP 1.1 message \
                             (GIOP 1.2's rule; seen in TAO 2.2.1 and Yoko 1.4): {}",
                            x.detail
                        ),
                    )
                }
                Some(x) => k.set(Verdict::Fail, x.detail),
            });
        }
        if set.fragment.is_none() && !self.expired() {
            self.reply_order(set, &client).await;
        }
    }
}

/// `, after OBJECT_FORWARD from … to …` for a client that followed
/// forwards (allowed: a server may forward any key), else empty.
fn hops_text(c: &BenchClient) -> String {
    let hops = c.forwards();
    if hops.is_empty() {
        return String::new();
    }
    format!(" after {} (allowed)", chain_text(&hops))
}

/// Forwards in order: `A; then B`.
fn chain_text(hops: &[iiop_bench_idl::client::Hop]) -> String {
    hops.iter()
        .map(|h| h.to_string())
        .collect::<Vec<_>>()
        .join("; then ")
}

/// Timeouts and sizes chosen from a peer's measured echo rate.
#[derive(Debug, Clone, PartialEq)]
pub struct SuitePlan {
    pub request_timeout: Duration,
    pub time_limit: Duration,
    pub large: Vec<(Elem, u64)>,
    /// The large payloads were scaled down.
    pub scaled: bool,
}

/// Just above omniORB's default 2 MiB giopMaxMsgSize: the smallest payload
/// that still tests a server's handling of messages beyond it.
pub const ABOVE_2MIB: u64 = (2 << 20) + (64 << 10);

impl SuitePlan {
    /// The plan for a peer that echoes `rate` payload bytes per second:
    /// a large payload that would take over 30 s shrinks to
    /// [`ABOVE_2MIB`]; each request may take 4x its expected time (plus
    /// 2 s); the suite 3x the expected time of everything (plus 60 s).
    /// Neither limit falls below `opts`.
    pub fn from_rate(
        rate: f64,
        opts: &SuiteOptions,
        large: &[(Elem, u64)],
        echo_bytes: u64,
    ) -> SuitePlan {
        let rate = rate.max(1.0);
        let secs = |b: u64| b as f64 / rate;
        let scaled = large.iter().any(|&(_, b)| secs(b) > 30.0);
        let large: Vec<(Elem, u64)> = large
            .iter()
            .map(|&(e, b)| (e, if secs(b) > 30.0 { b.min(ABOVE_2MIB) } else { b }))
            .collect();
        let biggest = large.iter().map(|&(_, b)| b).max().unwrap_or(0);
        let per_request = Duration::from_secs_f64(4.0 * secs(biggest) + 2.0);
        let all: u64 = echo_bytes + large.iter().map(|&(_, b)| b).sum::<u64>();
        let total = Duration::from_secs_f64(3.0 * secs(all) + 60.0);
        SuitePlan {
            request_timeout: opts.request_timeout.max(per_request),
            time_limit: opts.time_limit.max(total),
            large,
            scaled,
        }
    }

    /// One line for the report.
    pub fn describe(&self, rate: f64) -> String {
        let sizes = self
            .large
            .iter()
            .map(|&(e, b)| format!("{} {}", e.token(), crate::units::format_size(b)))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "peer echoes {:.2} MB/s on 8 KiB of doubles; request timeout {:.0} s, suite limit {:.0} s; \
             large payloads {sizes}{}",
            rate / 1e6,
            self.request_timeout.as_secs_f64(),
            self.time_limit.as_secs_f64(),
            if self.scaled {
                " (scaled down: the full size would take over 30 s at this rate)"
            } else {
                ""
            }
        )
    }
}

/// A twoway call whose reply must decode with `f` and hold nothing more;
/// otherwise the reply body's bytes are in the error.
async fn call_exact<T>(
    c: &BenchClient,
    op: &str,
    body: impl Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    f: impl FnOnce(&mut Reader<'_>) -> Result<T, CdrError>,
) -> Result<T, String> {
    let b = c
        .call(op, body)
        .await
        .map_err(|e| format!("{op}: {}", describe(&e)))?;
    let mut r = b.reader(c.options());
    let v = f(&mut r).map_err(|e| {
        format!(
            "{op}: reply does not decode: {e}; reply body {}",
            hex(&b.bytes, 64)
        )
    })?;
    if r.remaining() > 0 {
        return Err(format!(
            "{op}: {} bytes after the result; reply body {}",
            r.remaining(),
            hex(&b.bytes, 64)
        ));
    }
    Ok(v)
}

async fn is_a(c: &BenchClient, id: &str) -> Result<bool, String> {
    call_exact(c, "_is_a", |w| w.write_string(id), |r| r.read_bool()).await
}

async fn stats(c: &BenchClient) -> Result<StatsWire, String> {
    call_exact(
        c,
        "get_stats",
        |_| Ok(()),
        #[allow(clippy::redundant_closure)] // needed for the higher-ranked lifetime
        |r| iiop_cdr::from_reader::<StatsWire>(r),
    )
    .await
}

fn expect_system(k: Check, r: Result<Body, BenchError>, want: &[&str], noted: &[&str]) -> Check {
    match r {
        Err(BenchError::Call(ClientError::System(x))) => {
            let d = system_text(&x);
            if want.contains(&x.name()) && x.vendor() != MinorVendor::Omg {
                k.set(Verdict::Note, format!("{d}: a vendor minor code (allowed)"))
            } else if want.contains(&x.name()) {
                k.set(Verdict::Pass, d)
            } else if noted.contains(&x.name()) {
                k.set(Verdict::Note, format!("{d} (expected {})", want.join("/")))
            } else {
                k.set(Verdict::Fail, format!("{d} (expected {})", want.join("/")))
            }
        }
        Ok(b) => k.set(
            Verdict::Fail,
            format!("NO_EXCEPTION reply; body {}", hex(&b.bytes, 64)),
        ),
        Err(e) => k.set(Verdict::Fail, describe(&e)),
    }
}

/// The verdict on a request with bytes after its arguments.
fn trailing_verdict(k: Check, r: Result<Option<iiop_giop::message::Reply>, BenchError>) -> Check {
    let reply = match r {
        Ok(Some(reply)) => reply,
        Ok(None) => return k.set(Verdict::Fail, "no reply to a twoway request"),
        Err(BenchError::Call(ClientError::Closed { .. } | ClientError::Io { .. })) => {
            return k.set(
                Verdict::Pass,
                "rejected: the server closed the connection without a reply",
            )
        }
        Err(BenchError::Call(ClientError::PeerMessageError { .. })) => {
            return k.set(Verdict::Pass, "rejected: MessageError")
        }
        Err(e) => return k.set(Verdict::Fail, describe(&e)),
    };
    let status = reply.header.status;
    let body = hex(&reply.body.bytes, 32);
    match iiop_transport::client::reply_result(reply) {
        Err(ClientError::System(x)) => {
            let d = system_text(&x);
            if x.name() == "MARSHAL" {
                k.set(Verdict::Pass, d)
            } else {
                k.set(
                    Verdict::Note,
                    format!("rejected with {d} (expected MARSHAL)"),
                )
            }
        }
        Ok(_) => k.set(
            Verdict::Note,
            format!(
                "accepted: answered normally, the 8 bytes ignored (lenient; we answer MARSHAL); \
                 reply body {body}"
            ),
        ),
        Err(e) => k.set(Verdict::Fail, format!("unexpected answer {status:?}: {e}")),
    }
}

/// Echo `p` and compare the result exactly; on a difference, the reply
/// body's bytes from the first differing one (when the server answered in
/// the request's byte order) or from the start.
pub async fn echo_check(c: &BenchClient, p: &Payload) -> Result<(), EchoFail> {
    echo_inner(c, p).await.map_err(|(detail, utf16_swapped)| {
        let exception = SYSTEM_NAMES
            .iter()
            .find(|n| detail.contains(&format!(": {n} minor")))
            .map(|n| n.to_string());
        EchoFail {
            detail,
            exception,
            utf16_swapped,
        }
    })
}

/// `p` with the two bytes of every UTF-16 unit swapped (wide payloads of
/// BMP characters only; `None` otherwise): what comes back from a server
/// that reads BOM-less UTF-16 big-endian whatever the message's order.
fn utf16_swapped(p: &Payload) -> Option<Payload> {
    let swap = |c: char| {
        let u = u16::try_from(u32::from(c)).ok()?;
        char::from_u32(u32::from(u.swap_bytes()))
    };
    Some(match p {
        Payload::WChar(v) => Payload::WChar(
            v.iter()
                .map(|w| swap(w.0).map(iiop_cdr::WChar))
                .collect::<Option<_>>()?,
        ),
        Payload::WString(v) => Payload::WString(
            v.iter()
                .map(|w| {
                    w.0.chars()
                        .map(swap)
                        .collect::<Option<String>>()
                        .map(iiop_cdr::WString)
                })
                .collect::<Option<_>>()?,
        ),
        _ => return None,
    })
}

/// System exceptions an echo may be refused with (recognised in details).
const SYSTEM_NAMES: [&str; 6] = [
    "BAD_PARAM",
    "MARSHAL",
    "NO_IMPLEMENT",
    "CODESET_INCOMPATIBLE",
    "DATA_CONVERSION",
    "INV_OBJREF",
];

/// Why an echo check failed: the detail line, and the system exception's
/// name when the server refused the call with one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EchoFail {
    pub detail: String,
    pub exception: Option<String>,
    /// The reply is the request with every UTF-16 unit's bytes swapped.
    pub utf16_swapped: bool,
}

async fn echo_inner(c: &BenchClient, p: &Payload) -> Result<(), (String, bool)> {
    echo_body(c, p).await.map_err(|e| match e {
        Ok((detail, back)) => {
            let swapped = utf16_swapped(p).is_some_and(|s| s == back);
            (detail, swapped)
        }
        Err(detail) => (detail, false),
    })
}

/// The echo, failing with `Ok((detail, what came back))` when the reply
/// decoded but differs, `Err(detail)` otherwise.
async fn echo_body(c: &BenchClient, p: &Payload) -> Result<(), Result<(String, Payload), String>> {
    let e = p.elem();
    let op = e.op_name(CallMode::Echo);
    let n = p.len();
    let reply = c
        .request(op, ResponseMode::Twoway, |w| p.encode(w))
        .await
        .map_err(|x| Err(format!("{op} {n} elements: {x}")))?
        .ok_or_else(|| Err(format!("{op} {n} elements: no reply")))?;
    if reply.header.status != ReplyStatus::NoException {
        let r = iiop_transport::client::reply_result(reply);
        return Err(Err(match r {
            Err(x) => format!("{op} {n} elements: {}", describe(&BenchError::Call(x))),
            Ok(_) => format!("{op} {n} elements: unexpected reply status"),
        }));
    }
    let body = reply.body;
    let opts = c.options();
    let mut r = body.reader(opts);
    let back = Payload::decode(e, &mut r).map_err(|x| {
        Err(format!(
            "{op} {n} elements: reply does not decode: {x}; reply body {}",
            hex(&body.bytes, 96)
        ))
    })?;
    if back != *p {
        // Marshal what we expected exactly where the reply put it.
        let mut buf = Default::default();
        let pad = body.offset % 8;
        let mut w = Writer::new(&mut buf, body.order).options(opts);
        w.write_bytes(&[0u8; 8][..pad]);
        let _ = p.encode(&mut w);
        let want = &buf[pad..];
        let at = want
            .iter()
            .zip(body.bytes.iter())
            .position(|(a, b)| a != b)
            .unwrap_or(want.len().min(body.bytes.len()));
        let from = at.saturating_sub(at % 4);
        return Err(Ok((
            format!(
                "{op} {n} elements: reply differs from the request ({} elements back); first different byte at body offset {at}: got {} want {}",
                back.len(),
                hex(&body.bytes[from.min(body.bytes.len())..], 32),
                hex(&want[from.min(want.len())..], 32),
            ),
            back,
        )));
    }
    if r.remaining() > 0 {
        return Err(Err(format!(
            "{op} {n} elements: {} bytes after the result: {}",
            r.remaining(),
            hex(r.rest(), 32)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_groups_and_bounds() {
        assert_eq!(hex(&[0, 1, 2, 3, 0xff], 8), "00010203 ff");
        assert_eq!(hex(&[0xab; 10], 4), "abababab … (10 bytes)");
        assert_eq!(hex(&[], 4), "");
    }

    #[test]
    fn a_slow_peer_gets_longer_timeouts_and_smaller_large_payloads() {
        let opts = SuiteOptions {
            quick: false,
            request_timeout: Duration::from_secs(20),
            time_limit: Duration::from_secs(120),
            tls: TlsOpts::default(),
        };
        let large = [(Elem::Octet, 4 << 20), (Elem::Double, 3 << 20)];
        // A fast peer: nothing changes.
        let p = SuitePlan::from_rate(40e6, &opts, &large, 1 << 20);
        assert_eq!(p.large, large);
        assert!(!p.scaled);
        assert_eq!(p.request_timeout, Duration::from_secs(20));
        assert_eq!(p.time_limit, Duration::from_secs(120));
        // 100 kB/s: 4 MiB would take 42 s, 3 MiB 31 s: both shrink to
        // just above 2 MiB (22 s), and the limits grow to fit.
        let p = SuitePlan::from_rate(100e3, &opts, &large, 1 << 20);
        assert!(p.scaled);
        assert_eq!(
            p.large,
            [(Elem::Octet, ABOVE_2MIB), (Elem::Double, ABOVE_2MIB)]
        );
        let per = 4.0 * ABOVE_2MIB as f64 / 100e3 + 2.0;
        assert!((p.request_timeout.as_secs_f64() - per).abs() < 1e-6);
        let all = 3.0 * ((1u64 << 20) + 2 * ABOVE_2MIB) as f64 / 100e3 + 60.0;
        assert!((p.time_limit.as_secs_f64() - all).abs() < 1e-6);
        assert!(
            p.describe(100e3).contains("scaled down"),
            "{}",
            p.describe(100e3)
        );
        // 120 kB/s: only the 4 MiB one is over 30 s (35 s; 3 MiB takes 26 s).
        let p = SuitePlan::from_rate(120e3, &opts, &large, 0);
        assert_eq!(
            p.large,
            [(Elem::Octet, ABOVE_2MIB), (Elem::Double, 3 << 20)]
        );
    }

    #[test]
    fn echo_sets_cover_versions_orders_and_fragments() {
        let full = echo_sets(false);
        let labels: Vec<String> = full.iter().map(EchoSet::label).collect();
        assert_eq!(
            labels,
            [
                "GIOP 1.2 LE",
                "GIOP 1.2 BE",
                "GIOP 1.1 LE",
                "GIOP 1.1 BE",
                "GIOP 1.0 BE",
                "GIOP 1.0 LE",
                "GIOP 1.2 LE frag1024",
                "GIOP 1.2 BE frag1024",
            ]
        );
        assert_eq!(echo_sets(true).len(), 5);
        // Just under / over 1024 bytes and several fragments, by type.
        assert_eq!(fragment_counts(Elem::Double, false), vec![112, 137, 625]);
        assert_eq!(fragment_counts(Elem::String, false), vec![45, 55, 250]);
        assert_eq!(plain_counts(Elem::Octet, false), vec![0, 1, 3, 7, 13, 100]);
    }
}
