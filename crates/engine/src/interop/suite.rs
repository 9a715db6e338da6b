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
use iiop_giop::conn::route::version_for;
use iiop_giop::exception::MinorVendor;
use iiop_giop::ior::{orb_type_name, IiopProfile, Ior};
use iiop_giop::message::{Body, LocateStatus, ReplyStatus};
use iiop_giop::{ResponseMode, Target, Version};
use iiop_transport::client::{ClientConfig, ClientError, TlsMode};
use serde::Serialize;

use super::check::system_text;
pub use super::check::{describe, hex, Check, Verdict, PADDING_RULE};
use super::{anys, values};
use crate::target::TlsOpts;
pub(crate) use field::{DRIVER_CHECK, OMNIORB_BIDIR};

mod bidir;
mod field;

/// What to run.
#[derive(Debug, Clone)]
pub struct InteropSuiteOptions {
    /// A reduced set: fewer sizes, fewer versions.
    pub quick: bool,
    /// Per request.
    pub request_timeout: Duration,
    /// The whole suite: checks not started by then are not run, and one
    /// failed check says so.
    pub time_limit: Duration,
    /// The user gave `request_timeout` (`--timeout`): calibration keeps it
    /// unless `raise_limits`.
    pub timeout_given: bool,
    /// The user gave `time_limit` (`--max-duration`): likewise.
    pub time_limit_given: bool,
    /// Let calibration raise limits the user gave (still at most
    /// [`RAISE_CAP`] times them).
    pub raise_limits: bool,
    /// The client's TLS settings, for a server that offers or demands TLS.
    pub tls: TlsOpts,
    /// The server's own maximum message size as it is configured (bytes
    /// after the 12-byte header, as omniORB's `giopMaxMsgSize` and our
    /// `serve --max-message-size` count): requests just below and above
    /// it are field checks; `None` skips them.
    pub peer_max_message_size: Option<u64>,
}

impl Default for InteropSuiteOptions {
    fn default() -> Self {
        InteropSuiteOptions {
            quick: false,
            request_timeout: Duration::from_secs(20),
            time_limit: Duration::from_secs(300),
            timeout_given: false,
            time_limit_given: false,
            raise_limits: false,
            tls: TlsOpts::default(),
            peer_max_message_size: None,
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

fn order_name(o: ByteOrder) -> &'static str {
    if o == ByteOrder::Big {
        "big"
    } else {
        "little"
    }
}

/// Resolve a command-line reference (`IOR:`, `corbaloc:`, a file, `-`).
pub fn load_target(arg: &str) -> crate::error::Result<Ior> {
    let t = Target::load(arg).map_err(|e| crate::error::fail!(Job, "target {arg:?}: {e}"))?;
    t.direct_ior().ok_or_else(|| {
        crate::error::fail!(
            Job,
            "target {arg:?}: corbaname needs a naming lookup; give an IOR or corbaloc"
        )
    })
}

/// The main IIOP profile of a reference, or why there is none.
pub fn profile(ior: &Ior) -> crate::error::Result<IiopProfile> {
    ior.iiop_profile()
        .ok_or_else(|| crate::error::fail!(Job, "the reference has no IIOP profile"))
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

/// Room for a request's header and key beside a large payload: a payload
/// closer than this to the server's maximum message size is taken to
/// exceed it.
const LARGE_HEADROOM: u64 = 512;

/// Runs the suite against `ior`.
#[derive(Debug)]
pub struct InteropSuite {
    ior: Ior,
    profile: IiopProfile,
    /// The GIOP version the reference asks for (its IIOP profile's: 1.0
    /// for `corbaloc:iiop:1.0@…` or no version), at most 1.2: every
    /// connection but the echo sets' speaks it, and it is the highest the
    /// suite sends, forwards or not. A client must not send a higher version
    /// than the profile publishes (CORBA 3.0 §15.4.1); no check here is
    /// about version negotiation, so the echo sets above it are skipped.
    ceiling: Version,
    opts: InteropSuiteOptions,
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

impl InteropSuite {
    /// A suite for the server behind `ior`.
    pub fn new(ior: Ior, opts: InteropSuiteOptions) -> crate::error::Result<InteropSuite> {
        let profile = profile(&ior)?;
        let tls = opts.tls.mode()?;
        let large = if opts.quick {
            vec![(Elem::Octet, 3 << 20)]
        } else {
            vec![(Elem::Octet, 4 << 20), (Elem::Double, 3 << 20)]
        };
        Ok(InteropSuite {
            ceiling: version_for(&profile, None),
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

    /// `corbaloc:iiop:V@HOST:PORT` of the server's main profile, or
    /// `corbaloc:ssliop:V@HOST:TLSPORT` where the profile's TLS offer is
    /// required or its plain port is 0 (a TLS-only server), so the
    /// corbaloc checks reach the server the way the reference does; V is
    /// the version the suite speaks ([`ceiling`](Self::ceiling)).
    fn corbaloc_base(&self) -> String {
        let p = &self.profile;
        let v = self.ceiling;
        match iiop_giop::ior::tls_offer(p) {
            Some(t) if t.required() || p.port == 0 => {
                format!("corbaloc:ssliop:{v}@{}:{}", t.host, t.port)
            }
            _ => format!("corbaloc:iiop:{v}@{}:{}", p.host, p.port),
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

    /// The main connection (the [`ceiling`](Self::ceiling) version, native
    /// order), reconnected when the server closed it.
    async fn live(&self, slot: &mut Option<BenchClient>) -> Result<BenchClient, String> {
        if let Some(c) = slot.as_ref().filter(|c| !c.is_closed()) {
            return Ok(c.clone());
        }
        let c = self.connect(self.ceiling, ByteOrder::NATIVE).await?;
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
                    let name = format!("connect GIOP {}", self.ceiling);
                    self.push(Check::new(name, "connect").set(Verdict::Fail, e));
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
        self.anys(&mut main).await;
        self.values(&mut main).await;
        self.field().await;
        self.bidir().await;
        SuiteReport {
            checks: self.checks,
            seconds: t0.elapsed().as_secs_f64(),
        }
    }

    /// The `any` and user-exception checks (interop/anys.rs), each on the
    /// main connection, reconnected if the server closed it.
    async fn anys(&mut self, main: &mut Option<BenchClient>) {
        let mut missing = None;
        let orb = self.profile.orb_type().and_then(orb_type_name);
        for i in 0..anys::count() {
            if self.expired() {
                break;
            }
            let k = match self.live(main).await {
                Ok(c) => {
                    if i == 0 {
                        missing = anys::probe(&c).await;
                    }
                    anys::check(&c, self.ceiling, i, missing.as_deref(), orb).await
                }
                Err(e) => anys::not_run(i, e),
            };
            self.checks.push(k);
        }
    }

    /// The valuetype checks (interop/values.rs), last: a server that
    /// dies on a value costs only the value checks after it. Each runs on
    /// the main connection, reconnected if the server closed it.
    async fn values(&mut self, main: &mut Option<BenchClient>) {
        let mut missing = None;
        let orb = self.profile.orb_type().and_then(orb_type_name);
        for i in 0..values::count() {
            if self.expired() {
                break;
            }
            let k = match self.live(main).await {
                Ok(c) => {
                    if i == 0 {
                        missing = values::probe(&c).await;
                    }
                    values::check(&c, self.ceiling, i, missing.as_deref(), orb).await
                }
                Err(e) => values::not_run(i, e),
            };
            self.checks.push(k);
        }
    }

    /// Follow the reference to where the object is (a server may answer
    /// a short key with LOCATION_FORWARD, as TAO's IORTable does): the
    /// suite then runs against the forwarded reference — its code sets
    /// among the rest — and says which forwards it followed.
    async fn resolve_reference(&mut self) {
        let c = match self.connect(self.ceiling, ByteOrder::NATIVE).await {
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
    /// suite from it ([`SuitePlan::from_rate`]): per-request timeout and
    /// suite time limit are raised, within bounds, so that a correct but
    /// slow server can finish, and the large-payload checks shrink to just
    /// above 2 MiB when their full size would take long. The peer is
    /// warmed up first and its fastest call counts ([`echo_rate`]): a
    /// JIT-compiled peer is slow for its first calls only. Says what it
    /// chose in a note.
    async fn calibrate(&mut self) {
        if self.unreachable {
            return;
        }
        let mut k = Check::new("calibration: echo rate", "echo");
        k.ty = Elem::Double.token().into();
        k.size = PROBE;
        let c = match self.connect(self.ceiling, ByteOrder::NATIVE).await {
            Ok(c) => c,
            Err(_) => return,
        };
        let t = Instant::now();
        let m = echo_rate(&c, CALIBRATION).await;
        c.close();
        let m = match m {
            Ok(m) => m,
            Err(x) => {
                self.push(k.set(
                    Verdict::Note,
                    format!(
                        "could not measure the peer's rate ({}); default timeouts kept",
                        x.detail
                    ),
                ));
                return;
            }
        };
        k.calls = (m.warmup + m.timed) as u64;
        k.seconds = t.elapsed().as_secs_f64();
        let plan = SuitePlan::from_rate(m.rate, &self.opts, &self.large, self.total_echo_bytes());
        self.large = plan.large.clone();
        self.opts.request_timeout = plan.request_timeout.value;
        self.opts.time_limit = plan.time_limit.value;
        self.push(k.set(Verdict::Note, plan.describe(&m)));
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
    /// explain: [`PADDING_RULE`]), on a connection of its own: MARSHAL, a
    /// MessageError or a closed connection (omniORB's strictIIOP) reject
    /// it (pass); a normal answer ignores them (a note: lenient, not
    /// forbidden). The detail says the rule.
    async fn trailing_bytes(&mut self) {
        let mut k = Check::new(
            "echo_long with 8 bytes after the arguments -> MARSHAL",
            "twoway",
        );
        k.ty = "long".into();
        k.giop = self.ceiling.to_string();
        k.calls = 1;
        let c = match self.connect(self.ceiling, ByteOrder::NATIVE).await {
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
        let k = trailing_verdict(k, r);
        let detail = format!("{}; {PADDING_RULE}", k.detail);
        self.push(Check { detail, ..k });
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
            let s = BenchClient::connect(&ior, &self.cfg(self.ceiling, ByteOrder::NATIVE, None))
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
            let d = BenchClient::connect(&ior, &self.cfg(self.ceiling, ByteOrder::NATIVE, None))
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
                let d =
                    BenchClient::connect(&ior, &self.cfg(self.ceiling, ByteOrder::NATIVE, None))
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
            k.giop = self.ceiling.to_string();
            k.calls = 1;
            if let Some(limit) = self
                .opts
                .peer_max_message_size
                .filter(|&l| k.size + LARGE_HEADROOM > l)
            {
                let why = format!(
                    "above the server's maximum message size (`peer_max_message_size` {limit} \
                     bytes); its own checks probe that limit"
                );
                self.push(k.set(Verdict::Skip, why));
                continue;
            }
            let t = Instant::now();
            let r = echo_check(c, &p).await;
            k.seconds = t.elapsed().as_secs_f64();
            self.push(match r {
                Ok(()) => k.set(Verdict::Pass, format!("{} elements", p.len())),
                Err(x) => k.set(Verdict::Fail, x.detail),
            });
        }
    }

    /// A `ping` on the set's connection: its reply must be in the
    /// request's GIOP version (our client refuses any other and names both:
    /// the peer's error), and its byte order is the server's choice (a
    /// note when it is not the request's).
    async fn reply_checks(&mut self, set: &EchoSet, c: &BenchClient) {
        let r = c.request("ping", ResponseMode::Twoway, |_| Ok(())).await;
        let named = |name: String| {
            let mut k = Check::new(name, "twoway");
            k.giop = set.version.to_string();
            k.order = order_name(set.order).into();
            k.calls = 1;
            k
        };
        let k = named(format!("reply GIOP version {}", set.label()));
        self.push(match &r {
            Ok(Some(reply)) if reply.version == set.version => k.set(
                Verdict::Pass,
                format!("GIOP {}, the request's", reply.version),
            ),
            Ok(Some(reply)) => k.set(
                Verdict::Fail,
                format!(
                    "reply in GIOP {} to a GIOP {} request (the peer's error)",
                    reply.version, set.version
                ),
            ),
            Ok(None) => k.set(Verdict::Fail, "no reply to ping"),
            Err(BenchError::Call(e @ ClientError::ReplyVersion { .. })) => {
                k.set(Verdict::Fail, e.to_string())
            }
            Err(e) => k.set(Verdict::Fail, format!("ping: {e}")),
        });
        let k = named(format!("reply byte order {}", set.label()));
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
        if set.version > self.ceiling {
            let mut k = Check::new(format!("echo {label}"), "echo");
            k.giop = set.version.to_string();
            k.order = order_name(set.order).into();
            self.push(k.set(
                Verdict::Skip,
                format!(
                    "not sent: the reference asks for GIOP {}, and a client sends no higher version \
                     than the server's profile publishes (CORBA 3.0 §15.4.1); no check is about \
                     version negotiation",
                    self.ceiling
                ),
            ));
            return;
        }
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
        // The wide checks that ran in this set: each one's index, and
        // whether the server refused it cleanly (GIOP 1.1).
        let mut wide: Vec<(usize, Elem, bool)> = Vec::new();
        for e in Elem::ALL {
            if self.expired() {
                break;
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
            if e.is_wide() {
                let refused = fail.as_ref().is_some_and(|x| refuses_wide(set, x));
                wide.push((self.checks.len(), e, refused));
            }
            self.push(match fail {
                None => k.set(Verdict::Pass, format!("{list} elements exact")),
                // GIOP 1.1's wchar encoding was ill-defined (fixed by 1.2);
                // an ORB that cleanly refuses wide types there is limited,
                // not wrong on the wire.
                // Which wide type was refused is said once the set is
                // done (wide_refusals).
                Some(x) if e.is_wide() && refuses_wide(set, &x) => k.set(Verdict::Note, x.detail),
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
        self.wide_refusals(&wide);
        if set.fragment.is_none() && !self.expired() {
            self.reply_checks(set, &client).await;
        }
    }

    /// Say what the server refused among one set's wide checks (`wide`:
    /// each one's index, type and whether it was refused cleanly):
    /// "supports no wchar/wstring" only when it refused every one that
    /// ran; otherwise the type and operation refused, next to those that
    /// passed (an ORB whose `sequence<wchar>` decoder is broken may carry
    /// `wstring` fine).
    fn wide_refusals(&mut self, wide: &[(usize, Elem, bool)]) {
        let passed: Vec<String> = wide
            .iter()
            .filter(|&&(i, _, _)| self.checks[i].verdict == Verdict::Pass)
            .map(|&(_, e, _)| e.op_name(CallMode::Echo).to_string())
            .collect();
        let all_refused = wide.iter().all(|w| w.2);
        for &(i, e, refused) in wide {
            if !refused {
                continue;
            }
            let k = &mut self.checks[i];
            k.detail = if all_refused {
                format!(
                    "server supports no wchar/wstring in GIOP 1.1 (it refused every wide check): {}",
                    k.detail
                )
            } else if passed.is_empty() {
                format!(
                    "server refused sequence<{}> ({}) in GIOP 1.1: {}",
                    e.token(),
                    e.op_name(CallMode::Echo),
                    k.detail
                )
            } else {
                format!(
                    "server refused sequence<{}> ({}) in GIOP 1.1 while {} passed: not a lack of \
                     wide character support, {} alone: {}",
                    e.token(),
                    e.op_name(CallMode::Echo),
                    passed.join(", "),
                    e.op_name(CallMode::Echo),
                    k.detail
                )
            };
        }
    }
}

/// Whether an echo failure is a clean refusal of wide data in GIOP 1.1
/// (its wchar encoding was ill-defined, fixed by 1.2: an ORB that refuses
/// wide types there with an exception is limited, not wrong on the wire).
fn refuses_wide(set: &EchoSet, x: &EchoFail) -> bool {
    set.version == V11
        && matches!(
            x.exception.as_deref(),
            Some("BAD_PARAM" | "NO_IMPLEMENT" | "CODESET_INCOMPATIBLE" | "MARSHAL")
        )
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

/// Payload bytes of the calibration echo (doubles).
const PROBE: u64 = 8 << 10;

/// How calibration measures a peer: calls before any is timed, timed
/// calls (the fastest counts), and a time budget after which it stops
/// with what it has (at least one timed call).
#[derive(Debug, Clone, Copy)]
pub struct Calibration {
    pub warmup: usize,
    pub rounds: usize,
    pub budget: Duration,
}

/// Five calls to warm up (JacORB's JIT needs a few before the echo path
/// runs compiled), seven timed, ten seconds at most (half for warming up).
pub const CALIBRATION: Calibration = Calibration {
    warmup: 5,
    rounds: 7,
    budget: Duration::from_secs(10),
};

/// What calibration measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// Payload bytes per second of the fastest timed call.
    pub rate: f64,
    /// Its time.
    pub best: Duration,
    /// Untimed and timed calls made.
    pub warmup: usize,
    pub timed: usize,
}

/// Echo [`PROBE`] bytes of doubles as `cal` says and take the fastest
/// timed call: the peer's pace once warm, not its first calls' (a JIT
/// compiles after them; connection set-up, forwards and code sets fall
/// on the first). The first failed call ends it.
pub async fn echo_rate(c: &BenchClient, cal: Calibration) -> Result<Measured, EchoFail> {
    let p = Payload::generate(
        Elem::Double,
        Elem::Double.count_for_size(PROBE) as usize,
        false,
    );
    let start = Instant::now();
    let mut warmup = 0;
    while warmup < cal.warmup.max(1) && (warmup == 0 || start.elapsed() < cal.budget / 2) {
        echo_check(c, &p).await?;
        warmup += 1;
    }
    let mut best = Duration::MAX;
    let mut timed = 0;
    while timed < cal.rounds.max(1) && (timed == 0 || start.elapsed() < cal.budget) {
        let t = Instant::now();
        echo_check(c, &p).await?;
        best = best.min(t.elapsed());
        timed += 1;
    }
    Ok(Measured {
        rate: PROBE as f64 / best.as_secs_f64().max(1e-6),
        best,
        warmup,
        timed,
    })
}

/// How far calibration may raise a limit: at most this many times what it
/// starts from (the user's value, or the default).
pub const RAISE_CAP: u32 = 3;

/// A limit as calibration decided it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    /// What the run uses.
    pub value: Duration,
    /// What the peer's rate asks for.
    pub wanted: Duration,
    /// What it started from.
    pub base: Duration,
    /// The user gave `base` and did not let calibration raise it.
    pub fixed: bool,
}

impl Limit {
    /// `wanted` within bounds: `base` as it is when the user gave it
    /// (`given`) without `raise`; otherwise at least `base` and at most
    /// [`RAISE_CAP`] times it.
    pub fn decide(wanted: Duration, base: Duration, given: bool, raise: bool) -> Limit {
        let fixed = given && !raise;
        let value = if fixed {
            base
        } else {
            wanted.clamp(base, base * RAISE_CAP)
        };
        Limit {
            value,
            wanted,
            base,
            fixed,
        }
    }

    /// `2 s as given (this rate asks for 35 s: `raise_limits` lets
    /// calibration raise it)` …; `field` names the option that sets it.
    fn describe(&self, field: &str) -> String {
        let s = |d: Duration| format!("{:.0} s", d.as_secs_f64().ceil());
        let (v, w, b) = (s(self.value), s(self.wanted), s(self.base));
        if self.fixed {
            if self.wanted > self.base {
                format!("{v} as given (this rate asks for {w}: `raise_limits` lets calibration raise it)")
            } else {
                format!("{v} as given")
            }
        } else if self.value == self.base {
            format!("{v} (not raised)")
        } else if self.value < self.wanted {
            format!("{v} (raised from {b} and capped at {RAISE_CAP}x; this rate asks for {w}: give a larger {field})")
        } else {
            format!("{v} (raised from {b} for this rate)")
        }
    }
}

/// Timeouts and sizes chosen from a peer's measured echo rate.
#[derive(Debug, Clone, PartialEq)]
pub struct SuitePlan {
    pub request_timeout: Limit,
    pub time_limit: Limit,
    pub large: Vec<(Elem, u64)>,
    /// The large payloads were scaled down.
    pub scaled: bool,
}

/// Just above omniORB's default 2 MiB giopMaxMsgSize: the smallest payload
/// that still tests a server's handling of messages beyond it.
pub const ABOVE_2MIB: u64 = (2 << 20) + (64 << 10);

impl SuitePlan {
    /// The plan for a peer that echoes `rate` payload bytes per second:
    /// each request may take 4x its expected time (plus 2 s), the suite 3x
    /// the expected time of everything (plus 60 s), each within
    /// [`Limit::decide`] (a limit the user gave stays as given unless
    /// `opts.raise_limits`; no limit is raised beyond [`RAISE_CAP`] times
    /// its start, nor lowered). A large payload shrinks to [`ABOVE_2MIB`]
    /// when it would take over 30 s, or over half the request timeout.
    pub fn from_rate(
        rate: f64,
        opts: &InteropSuiteOptions,
        large: &[(Elem, u64)],
        echo_bytes: u64,
    ) -> SuitePlan {
        let rate = rate.max(1.0);
        let secs = |b: u64| b as f64 / rate;
        let per = |b: u64| Duration::from_secs_f64(4.0 * secs(b) + 2.0);
        let shrink = |large: &[(Elem, u64)], too_long: &dyn Fn(u64) -> bool| -> Vec<(Elem, u64)> {
            large
                .iter()
                .map(|&(e, b)| (e, if too_long(b) { b.min(ABOVE_2MIB) } else { b }))
                .collect()
        };
        let large = shrink(large, &|b| secs(b) > 30.0);
        let biggest = large.iter().map(|&(_, b)| b).max().unwrap_or(0);
        let request_timeout = Limit::decide(
            per(biggest),
            opts.request_timeout,
            opts.timeout_given,
            opts.raise_limits,
        );
        let large = shrink(&large, &|b| {
            2.0 * secs(b) > request_timeout.value.as_secs_f64()
        });
        let scaled = large.iter().any(|&(_, b)| b == ABOVE_2MIB);
        let all: u64 = echo_bytes + large.iter().map(|&(_, b)| b).sum::<u64>();
        let time_limit = Limit::decide(
            Duration::from_secs_f64(3.0 * secs(all) + 60.0),
            opts.time_limit,
            opts.time_limit_given,
            opts.raise_limits,
        );
        SuitePlan {
            request_timeout,
            time_limit,
            large,
            scaled,
        }
    }

    /// One line for the report: the rate and how it was measured, and
    /// what was decided from it.
    pub fn describe(&self, m: &Measured) -> String {
        let sizes = self
            .large
            .iter()
            .map(|&(e, b)| format!("{} {}", e.token(), crate::units::format_size(b)))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "peer echoes {:.2} MB/s on 8 KiB of doubles (fastest of {} timed calls after {} to warm up); \
             request timeout {}; suite limit {}; large payloads {sizes}{}",
            m.rate / 1e6,
            m.timed,
            m.warmup,
            self.request_timeout.describe("`request_timeout`"),
            self.time_limit.describe("`time_limit`"),
            if self.scaled {
                " (scaled down: the full size would take too long at this rate)"
            } else {
                ""
            }
        )
    }
}

/// A twoway call whose reply must decode with `f` and hold nothing more
/// but padding ([`PADDING_RULE`]); otherwise the reply body's bytes are
/// in the error.
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
    if !r.only_padding_left() {
        return Err(format!(
            "{op}: {} bytes after the result ({PADDING_RULE}); reply body {}",
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
    if !r.only_padding_left() {
        return Err(Err(format!(
            "{op} {n} elements: {} bytes after the result ({PADDING_RULE}): {}",
            r.remaining(),
            hex(r.rest(), 32)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use iiop_giop::exception::SystemException;

    #[test]
    fn hex_groups_and_bounds() {
        assert_eq!(hex(&[0, 1, 2, 3, 0xff], 8), "00010203 ff");
        assert_eq!(hex(&[0xab; 10], 4), "abababab … (10 bytes)");
        assert_eq!(hex(&[], 4), "");
    }

    fn opts(timeout: u64, limit: u64) -> InteropSuiteOptions {
        InteropSuiteOptions {
            quick: false,
            request_timeout: Duration::from_secs(timeout),
            time_limit: Duration::from_secs(limit),
            ..InteropSuiteOptions::default()
        }
    }

    fn measured(rate: f64) -> Measured {
        Measured {
            rate,
            best: Duration::from_secs_f64(PROBE as f64 / rate),
            warmup: 5,
            timed: 7,
        }
    }

    #[test]
    fn a_slow_peer_gets_longer_timeouts_and_smaller_large_payloads() {
        let opts = opts(20, 120);
        let large = [(Elem::Octet, 4 << 20), (Elem::Double, 3 << 20)];
        let secs = |d: Duration| d.as_secs_f64();
        // A fast peer: nothing changes.
        let p = SuitePlan::from_rate(40e6, &opts, &large, 1 << 20);
        assert_eq!(p.large, large);
        assert!(!p.scaled);
        assert_eq!(p.request_timeout.value, Duration::from_secs(20));
        assert_eq!(p.time_limit.value, Duration::from_secs(120));
        assert!(
            p.describe(&measured(40e6)).contains(
                "(fastest of 7 timed calls after 5 to warm up); request timeout 20 s (not raised); \
                 suite limit 120 s (not raised)"
            ),
            "{}",
            p.describe(&measured(40e6))
        );
        // 300 kB/s: 4 MiB would take 14 s, so 4x + 2 s = 58 s per request,
        // within 3x the default; the suite 3x everything + 60 s.
        let p = SuitePlan::from_rate(300e3, &opts, &large, 1 << 20);
        assert!(!p.scaled);
        let per = 4.0 * (4u64 << 20) as f64 / 300e3 + 2.0;
        assert!((secs(p.request_timeout.value) - per).abs() < 1e-6);
        let all = 3.0 * ((1u64 << 20) + (7 << 20)) as f64 / 300e3 + 60.0;
        assert!((secs(p.time_limit.value) - all).abs() < 1e-6);
        let d = p.describe(&measured(300e3));
        assert!(
            d.contains("request timeout 58 s (raised from 20 s for this rate)"),
            "{d}"
        );
        // 100 kB/s: 4 MiB would take 42 s, 3 MiB 31 s: both shrink to just
        // above 2 MiB (22 s, 90 s per request wanted), and the limits grow,
        // but no further than 3x where they started.
        let p = SuitePlan::from_rate(100e3, &opts, &large, 1 << 20);
        assert!(p.scaled);
        assert_eq!(
            p.large,
            [(Elem::Octet, ABOVE_2MIB), (Elem::Double, ABOVE_2MIB)]
        );
        assert_eq!(p.request_timeout.value, Duration::from_secs(60));
        let wanted = 4.0 * ABOVE_2MIB as f64 / 100e3 + 2.0;
        assert!((secs(p.request_timeout.wanted) - wanted).abs() < 1e-6);
        let all = 3.0 * ((1u64 << 20) + 2 * ABOVE_2MIB) as f64 / 100e3 + 60.0;
        assert!((secs(p.time_limit.value) - all).abs() < 1e-6);
        let d = p.describe(&measured(100e3));
        assert!(d.contains("scaled down"), "{d}");
        assert!(
            d.contains("request timeout 60 s (raised from 20 s and capped at 3x; this rate asks for 89 s: give a larger `request_timeout`)"),
            "{d}"
        );
        // 120 kB/s: only the 4 MiB one is over 30 s (35 s; 3 MiB takes
        // 26 s, within half the 107 s a request may take, 3x of 40 s).
        let p = SuitePlan::from_rate(120e3, &super::tests::opts(40, 120), &large, 0);
        assert_eq!(
            p.large,
            [(Elem::Octet, ABOVE_2MIB), (Elem::Double, 3 << 20)]
        );
    }

    /// `request_timeout` of 2 s given: every request is bounded by 2 s whatever the
    /// rate, and a large payload that could not make it in 2 s shrinks;
    /// `raise_limits` lets calibration raise it, to at most 3x.
    #[test]
    fn a_timeout_the_user_gave_bounds_every_request() {
        let large = [(Elem::Octet, 4 << 20)];
        let given = InteropSuiteOptions {
            timeout_given: true,
            time_limit_given: true,
            ..opts(2, 60)
        };
        let p = SuitePlan::from_rate(1e6, &given, &large, 1 << 20);
        assert_eq!(p.request_timeout.value, Duration::from_secs(2));
        assert_eq!(p.time_limit.value, Duration::from_secs(60));
        assert_eq!(p.large, [(Elem::Octet, ABOVE_2MIB)]);
        let d = p.describe(&measured(1e6));
        assert!(
            d.contains("request timeout 2 s as given (this rate asks for 19 s: `raise_limits` lets calibration raise it); suite limit 60 s as given"),
            "{d}"
        );
        let raise = InteropSuiteOptions {
            raise_limits: true,
            ..given.clone()
        };
        let p = SuitePlan::from_rate(1e6, &raise, &large, 1 << 20);
        assert_eq!(p.request_timeout.value, Duration::from_secs(6));
        assert_eq!(p.large, [(Elem::Octet, ABOVE_2MIB)]);
        let all = 3.0 * ((1u64 << 20) + ABOVE_2MIB) as f64 / 1e6 + 60.0;
        assert!((p.time_limit.value.as_secs_f64() - all).abs() < 1e-6);
        // A fast peer keeps its large payloads within a given 2 s.
        let p = SuitePlan::from_rate(40e6, &given, &large, 1 << 20);
        assert_eq!(p.request_timeout.value, Duration::from_secs(2));
        assert_eq!(p.large, large);
    }

    use iiop_bench_idl::reference::BenchHandler;
    use iiop_transport::server::{Dispatch, Handler, Outcome, RequestContext};

    /// What a test server does with a request: it sees the request first
    /// and calls our handler (the first argument) itself, or not.
    trait Around:
        Fn(&BenchHandler, &RequestContext<'_>, &mut Reader<'_>, &mut Writer<'_>) -> Dispatch
        + Send
        + Sync
        + 'static
    {
    }

    impl<F> Around for F where
        F: Fn(&BenchHandler, &RequestContext<'_>, &mut Reader<'_>, &mut Writer<'_>) -> Dispatch
            + Send
            + Sync
            + 'static
    {
    }

    /// Our handler behind an [`Around`].
    struct Wrapped<F> {
        inner: BenchHandler,
        around: F,
    }

    impl<F: Around> Handler for Wrapped<F> {
        fn handle(
            &self,
            req: &RequestContext<'_>,
            body: &mut Reader<'_>,
            reply: &mut Writer<'_>,
        ) -> Dispatch {
            (self.around)(&self.inner, req, body, reply)
        }
    }

    /// Our handler behind `around`, served on 127.0.0.1 by a runtime of
    /// its own (two threads, which the test's client shares); stopped and
    /// joined on drop.
    struct TestServer {
        ior: Ior,
        rt: tokio::runtime::Runtime,
        stop: Option<tokio::sync::oneshot::Sender<()>>,
        task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    }

    impl TestServer {
        fn start(around: impl Around) -> TestServer {
            use iiop_bench_idl::reference::{References, Skeleton};
            let inner = std::sync::Arc::new(BenchHandler::new(Skeleton::Typed));
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.set_nonblocking(true).unwrap();
            let ior = References::new(&inner, l.local_addr().unwrap()).ior.clone();
            let inner = std::sync::Arc::into_inner(inner).expect("the references keep no handler");
            let h = std::sync::Arc::new(Wrapped { inner, around });
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let task = rt.spawn(async move {
                let l = tokio::net::TcpListener::from_std(l)?;
                let cfg = iiop_transport::server::ServerConfig::default();
                iiop_transport::server::serve(l, h, cfg, async {
                    let _ = stopped.await;
                })
                .await
            });
            TestServer {
                ior,
                rt,
                stop: Some(stop),
                task: Some(task),
            }
        }
    }

    impl Drop for TestServer {
        fn drop(&mut self) {
            if let Some(s) = self.stop.take() {
                let _ = s.send(());
            }
            if let Some(t) = self.task.take() {
                let _ = self.rt.block_on(t);
            }
        }
    }

    /// A peer slow for its first 4 calls and fast after: calibration
    /// measures it warm (300 ms calls would read as 27 kB/s and raise the
    /// limits), and keeps the 2 s timeout the user gave.
    #[test]
    fn calibration_measures_a_peer_once_it_is_warm() {
        // The first 4 echo_double calls take 300 ms each (a JIT-compiled
        // peer before it is warm).
        let slow = std::sync::atomic::AtomicUsize::new(4);
        let server = TestServer::start(
            move |inner: &BenchHandler,
                  req: &RequestContext<'_>,
                  body: &mut Reader<'_>,
                  reply: &mut Writer<'_>| {
                use std::sync::atomic::Ordering::SeqCst;
                let first = req.operation == "echo_double"
                    && slow
                        .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
                        .is_ok();
                if first {
                    std::thread::sleep(Duration::from_millis(300));
                }
                inner.handle(req, body, reply)
            },
        );
        let opts = InteropSuiteOptions {
            timeout_given: true,
            ..opts(2, 120)
        };
        let mut suite = InteropSuite::new(server.ior.clone(), opts).unwrap();
        let t = Instant::now();
        server.rt.block_on(suite.calibrate());
        let took = t.elapsed();
        drop(server);
        let k = suite.checks.last().expect("a calibration note");
        assert_eq!(k.name, "calibration: echo rate");
        assert_eq!(k.verdict, Verdict::Note);
        assert_eq!(k.calls, 12, "{}", k.detail);
        // The 4 slow calls are all warm-up: the fastest timed call is a
        // fast one (a loopback echo of 8 KiB takes a few ms even here; a
        // slow one 300 ms).
        let mb_s: f64 = k.detail["peer echoes ".len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(mb_s > 0.5, "{}", k.detail);
        assert!(took >= Duration::from_millis(1200), "{took:?}");
        assert_eq!(suite.opts.request_timeout, Duration::from_secs(2));
        assert!(
            k.detail.contains("request timeout 2 s as given"),
            "{}",
            k.detail
        );
    }

    /// Our handler, with bytes after every NO_EXCEPTION result: zeros up
    /// to the next 8-aligned offset (padding: `to_eight`), or two bytes
    /// whatever the offset. Counts the replies that got any in `padded`.
    fn padded(
        to_eight: bool,
        padded: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    ) -> impl Around {
        move |inner: &BenchHandler,
              req: &RequestContext<'_>,
              body: &mut Reader<'_>,
              reply: &mut Writer<'_>| {
            let d = inner.handle(req, body, reply);
            if matches!(d, Dispatch::Done(Outcome::Reply)) {
                let n = if to_eight {
                    reply.position().wrapping_neg() & 7
                } else {
                    2
                };
                reply.write_bytes(&[0u8; 8][..n]);
                if n > 0 {
                    padded.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
            d
        }
    }

    /// Our client holds reply bodies to the rule our server holds request
    /// bodies to: padding to an 8-aligned end after the result is accepted
    /// (in every version), anything else after it is reported with the
    /// rule.
    #[test]
    fn padding_after_a_result_is_accepted_and_nothing_else() {
        let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let server = TestServer::start(padded(true, count.clone()));
        let cfg = |v| ClientConfig {
            version: Some(v),
            order: ByteOrder::Little,
            request_timeout: Some(Duration::from_secs(10)),
            ..ClientConfig::default()
        };
        for v in [V10, V11, V12] {
            let c = server
                .rt
                .block_on(BenchClient::connect(&server.ior, &cfg(v)))
                .unwrap();
            for (e, count) in [
                (Elem::Long, 0),
                (Elem::Long, 1),
                (Elem::Octet, 3),
                (Elem::Char, 5),
            ] {
                let p = Payload::generate(e, count, false);
                let r = server.rt.block_on(echo_check(&c, &p));
                assert_eq!(r, Ok(()), "GIOP {v} echo {} of {count}", e.token());
            }
            assert_eq!(server.rt.block_on(is_a(&c, PERF_ID)), Ok(true), "GIOP {v}");
            c.close();
        }
        assert!(count.load(std::sync::atomic::Ordering::Relaxed) >= 6);
        drop(server);

        let server = TestServer::start(padded(false, Default::default()));
        let c = server
            .rt
            .block_on(BenchClient::connect(&server.ior, &cfg(V12)))
            .unwrap();
        let p = Payload::generate(Elem::Long, 1, false);
        let e = server.rt.block_on(echo_check(&c, &p)).unwrap_err();
        assert_eq!(
            e.detail,
            format!("echo_long 1 elements: 2 bytes after the result ({PADDING_RULE}): 0000")
        );
        let e = server.rt.block_on(is_a(&c, PERF_ID)).unwrap_err();
        assert!(
            e.starts_with("_is_a: 2 bytes after the result (after the last argument"),
            "{e}"
        );
    }

    /// The wide checks of one GIOP 1.1 set against a server that refuses
    /// `ops` there: their verdicts and details.
    fn wide_checks_11(ops: &'static [&'static str]) -> Vec<(String, Verdict, String)> {
        // In GIOP 1.1 `ops` are refused with MARSHAL (as Combat's
        // `sequence<wchar>` decoder does echo_wchar, or omniORB every wide
        // type with BAD_PARAM).
        let server = TestServer::start(
            move |inner: &BenchHandler,
                  req: &RequestContext<'_>,
                  body: &mut Reader<'_>,
                  reply: &mut Writer<'_>| {
                if req.version == V11 && ops.contains(&req.operation) {
                    return Dispatch::Done(Outcome::System(SystemException::marshal(
                        0,
                        iiop_giop::Completion::No,
                    )));
                }
                inner.handle(req, body, reply)
            },
        );
        let mut suite = InteropSuite::new(server.ior.clone(), opts(10, 120)).unwrap();
        let set = EchoSet {
            version: V11,
            order: ByteOrder::Little,
            fragment: None,
            counts: plain_counts,
        };
        server.rt.block_on(suite.echo_set(&set));
        drop(server);
        suite
            .checks
            .into_iter()
            .filter(|k| k.ty == "wchar" || k.ty == "wstring")
            .map(|k| (k.name, k.verdict, k.detail))
            .collect()
    }

    /// A server whose `sequence<wchar>` decoding alone is broken in GIOP
    /// 1.1 is not said to lack wide character support: the note names
    /// what it refused and what passed. Only a server that refuses every
    /// wide check is.
    #[test]
    fn the_wide_note_says_what_was_refused() {
        let got = wide_checks_11(&["echo_wchar"]);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].0, "echo wchar GIOP 1.1 LE");
        assert_eq!(got[0].1, Verdict::Note);
        assert!(
            got[0].2.starts_with(
                "server refused sequence<wchar> (echo_wchar) in GIOP 1.1 while echo_wstring passed: \
                 not a lack of wide character support, echo_wchar alone: echo_wchar 0 elements: MARSHAL"
            ),
            "{}",
            got[0].2
        );
        assert!(!got[0].2.contains("supports no"), "{}", got[0].2);
        assert_eq!(got[1].0, "echo wstring GIOP 1.1 LE");
        assert_eq!(got[1].1, Verdict::Pass);

        let got = wide_checks_11(&["echo_wchar", "echo_wstring"]);
        assert_eq!(got.len(), 2, "{got:?}");
        for (name, verdict, detail) in &got {
            assert_eq!(*verdict, Verdict::Note, "{name}");
            assert!(
                detail.starts_with(
                    "server supports no wchar/wstring in GIOP 1.1 (it refused every wide check): echo_w"
                ),
                "{name}: {detail}"
            );
        }
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
