//! The measuring loops the bench.idl benchmarks and the IDL-driven ones
//! (`dynamic::bench`) share: the latency loops (closed, with callers in
//! flight, or open at a fixed rate, corrected for coordinated omission)
//! over anything that makes one call ([`Invoke`]), and the throughput
//! loop that sends back to back until a byte and time budget is spent
//! ([`send_loop`]). Each takes the few numbers it needs ([`Loop`],
//! [`Budget`]), small `Copy` values, never a whole job.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use iiop_bench_idl::client::BenchError;

use super::{count_error, error_kind};
use crate::error::{bail, Error, Result};
use crate::gate::Gate;
use crate::hist::Latency;
use crate::metrics::Live;
use crate::options::OnError;
use crate::progress::CaseProgress;
use crate::results::{param, Case, CaseParams, CpuFigures};
use crate::sysinfo::CpuTime;

/// How a latency point is measured: how many calls, for how long, by how
/// many callers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Loop {
    /// Measured calls per point (ignored with `duration`).
    pub count: u64,
    /// Measure for this long per point instead of `count` calls.
    pub duration: Option<Duration>,
    /// The point's time cap: a point that has not made its `count` calls
    /// by then ends with what it measured, marked `stopped_by: time-cap`.
    pub max_duration: Option<Duration>,
    /// Unmeasured calls first (per point).
    pub warmup: u64,
    /// Connections (closed loop: each with `in_flight` callers).
    pub connections: usize,
    /// Calls in flight per connection (closed loop).
    pub in_flight: usize,
    /// Open loop at this many calls per second.
    pub rate: Option<f64>,
    /// Open loop: at most this many calls outstanding; a call due beyond
    /// them is counted as an `overload` error instead of sent.
    pub max_outstanding: usize,
    /// Stop at the first failed call, or count failures and go on.
    pub on_error: OnError,
}

impl Loop {
    /// One connection making one call at a time in a closed loop (what
    /// waiting on read needs).
    pub fn single_caller(&self) -> bool {
        self.connections == 1 && self.in_flight == 1 && self.rate.is_none()
    }

    /// The run parameters every latency run records (bench.idl and IDL).
    pub fn record(&self, p: &mut BTreeMap<String, serde_json::Value>, nodelay: bool) {
        param(p, "count", self.count);
        param(p, "duration_s", self.duration.map(|d| d.as_secs_f64()));
        if let Some(cap) = self.max_duration {
            param(p, "max_duration_s", cap.as_secs_f64());
        }
        param(p, "warmup", self.warmup);
        param(p, "connections", self.connections);
        param(p, "in_flight", self.in_flight);
        param(p, "rate", self.rate);
        if self.rate.is_some() {
            param(p, "max_outstanding", self.max_outstanding);
        }
        param(p, "nodelay", nodelay);
        param(
            p,
            "loop",
            if self.rate.is_some() {
                "open"
            } else {
                "closed"
            },
        );
    }
}

/// What the callers of one point measured together.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub(crate) lat: Latency,
    pub(crate) calls: u64,
    pub(crate) errors: BTreeMap<String, u64>,
    pub(crate) first_error: Option<String>,
    /// The time cap ended the point before its count.
    pub(crate) capped: bool,
    /// The most calls outstanding at once.
    pub(crate) peak_in_flight: usize,
}

impl Tally {
    pub(crate) fn merge(&mut self, o: Tally) {
        self.capped |= o.capped;
        self.peak_in_flight = self.peak_in_flight.max(o.peak_in_flight);
        self.lat.merge(&o.lat);
        self.calls += o.calls;
        for (k, v) in o.errors {
            *self.errors.entry(k).or_insert(0) += v;
        }
        if self.first_error.is_none() {
            self.first_error = o.first_error;
        }
    }

    pub(crate) fn fail(&mut self, e: &BenchError) {
        count_error(&mut self.errors, error_kind(e));
        if self.first_error.is_none() {
            self.first_error = Some(e.to_string());
        }
    }
}

/// The default of [`Loop::max_outstanding`]. The open loop holds per
/// outstanding call its task (the call's future) and the connection's
/// waiter for the reply, within the bound per call that docs/methodology.md
/// states; so the cap bounds the loop's memory, at a size a small machine
/// holds, while 100 000 outstanding calls are more than a server answers
/// in time at any rate this generator offers.
pub const DEFAULT_MAX_OUTSTANDING: usize = 100_000;

/// Calls outstanding now and the most at once, shared by a closed loop's
/// callers (all on one runtime thread: the atomics are uncontended).
#[derive(Debug, Default)]
struct InFlight {
    now: AtomicUsize,
    peak: AtomicUsize,
}

impl InFlight {
    /// One more call outstanding until the guard drops.
    fn enter(&self) -> InFlightGuard<'_> {
        let n = self.now.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak.fetch_max(n, Ordering::Relaxed);
        InFlightGuard(self)
    }
}

struct InFlightGuard<'a>(&'a InFlight);

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One caller of a latency run: something that makes one call. The loops
/// below drive any of them (bench.idl calls in `latency`, IDL-driven ones
/// in `dynamic::bench`).
/// Callers run as runtime tasks (not `LocalSet` ones): a reply wakes the
/// caller straight from the connection's reader task, without the extra
/// driver poll a `block_on` future or a `LocalSet` costs per wake-up.
pub(crate) trait Invoke: Clone + Send + Sync + 'static {
    fn invoke(&self) -> impl std::future::Future<Output = Result<(), BenchError>> + Send;
    /// Close the caller's connection (Ctrl-C: calls in flight end now).
    fn close(&self);
}

/// `warmup` calls spread over the callers, not recorded; a failed one
/// ends the point's progress line `pb` and the point, else `pb` goes on.
pub(crate) async fn warm_up<I: Invoke>(
    lo: &Loop,
    callers: &[I],
    label: &str,
    pb: CaseProgress,
) -> Result<CaseProgress> {
    for i in 0..lo.warmup {
        if let Err(e) = callers[i as usize % callers.len()].invoke().await {
            pb.done();
            bail!(Target, "{label}: warm-up call failed: {e}");
        }
    }
    Ok(pb)
}

/// One point of a latency run (bench.idl calls and IDL-driven ones):
/// warm-up spread over the callers (not recorded), the closed or open
/// loop (started at `gate`'s slot in an agent run), and the case with its
/// histogram, CPU and loop parameters. Also the first failure, for
/// `on_error` stop. The measured calls are recorded into `live` too, as
/// they complete.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn point<I: Invoke>(
    lo: &Loop,
    gate: Option<&Gate>,
    callers: &[I],
    label: &str,
    pb: CaseProgress,
    params: CaseParams,
    per_call: u64,
    live: &Live,
) -> Result<(Case, Option<String>)> {
    let _ctrl_c = close_on_interrupt(callers);
    live.bytes_per_call(per_call);
    let pb = warm_up(lo, callers, label, pb).await?;
    // In an agent run, every agent starts this case at the same instant.
    crate::gate::case_start(gate).await;
    let cpu0 = CpuTime::thread_now();
    let start = Instant::now();
    let tally = match lo.rate {
        None => closed_loop(lo, callers, live).await,
        Some(rate) => open_loop(lo, callers, rate, live).await,
    };
    let secs = start.elapsed().as_secs_f64();
    let cpu = CpuTime::thread_now().since(cpu0);
    pb.done();
    Ok(tally_case(lo, label, params, per_call, tally, secs, cpu))
}

/// A point's case from what its callers measured over `secs` seconds of
/// the client thread's `cpu`, and its first error.
pub(crate) fn tally_case(
    lo: &Loop,
    label: &str,
    params: CaseParams,
    per_call: u64,
    tally: Tally,
    secs: f64,
    cpu: CpuTime,
) -> (Case, Option<String>) {
    let bytes = tally.calls * per_call;
    let mut case = Case {
        name: label.to_string(),
        params,
        calls: tally.calls,
        bytes,
        seconds: secs,
        calls_per_sec: tally.calls as f64 / secs.max(1e-9),
        throughput_mbps: bytes as f64 * 8.0 / secs.max(1e-9) / 1e6,
        latency_us: (!tally.lat.is_empty()).then(|| tally.lat.summary()),
        histogram: (!tally.lat.is_empty()).then(|| tally.lat.to_base64()),
        errors: tally.errors,
        cpu: Some(CpuFigures {
            client_user_s: cpu.user,
            client_sys_s: cpu.sys,
            client_s_per_mib: if bytes > 0 {
                cpu.total() / (bytes as f64 / 1048576.0)
            } else {
                0.0
            },
            server_s: None,
        }),
        ..Default::default()
    };
    param(&mut case.params.extra, "connections", lo.connections);
    param(&mut case.params.extra, "in_flight", lo.in_flight);
    param(&mut case.extra, "max_in_flight", tally.peak_in_flight);
    if let Some(rate) = lo.rate {
        param(&mut case.params.extra, "rate", rate);
    }
    if tally.capped {
        param(&mut case.extra, "stopped_by", "time-cap");
        if lo.duration.is_none() {
            param(&mut case.extra, "planned_calls", lo.count);
        }
    }
    (case, tally.first_error)
}

/// Every caller issues its next call when the previous one returns,
/// `in_flight` times over, until `count` calls or `duration`. The callers
/// record into one tally (a histogram each would cost every caller its
/// own, hundreds of KiB, where 100 000 callers may be in flight).
pub(crate) async fn closed_loop<I: Invoke>(lo: &Loop, callers: &[I], live: &Live) -> Tally {
    let issued = Arc::new(AtomicU64::new(0));
    let now = Instant::now();
    let deadline = lo.duration.map(|d| now + d);
    let cap = lo.max_duration.map(|d| now + d);
    let count = if lo.duration.is_some() {
        u64::MAX
    } else {
        lo.count
    };
    let stop_on_error = lo.on_error == OnError::Stop;
    let total = Arc::new(Mutex::new(Tally::default()));
    let in_flight = Arc::new(InFlight::default());
    let mut tasks = Vec::with_capacity(callers.len() * lo.in_flight);
    for c in callers {
        for _ in 0..lo.in_flight {
            let (c, issued, live) = (c.clone(), issued.clone(), live.clone());
            let (total, in_flight) = (total.clone(), in_flight.clone());
            tasks.push(tokio::spawn(async move {
                loop {
                    if issued.fetch_add(1, Ordering::Relaxed) >= count
                        || deadline.is_some_and(|d| Instant::now() >= d)
                        || crate::interrupt::requested()
                    {
                        break;
                    }
                    if cap.is_some_and(|d| Instant::now() >= d) {
                        tally(&total).capped = true;
                        break;
                    }
                    let t0 = Instant::now();
                    let r = {
                        let _out = in_flight.enter();
                        c.invoke().await
                    };
                    match r {
                        Ok(()) => {
                            let ns = t0.elapsed().as_nanos() as u64;
                            live.call(ns);
                            let mut t = tally(&total);
                            t.lat.record_ns(ns);
                            t.calls += 1;
                        }
                        // Cut short by Ctrl-C: not the server's failure.
                        Err(_) if crate::interrupt::requested() => break,
                        Err(e) => {
                            live.error(&error_kind(&e));
                            tally(&total).fail(&e);
                            if stop_on_error {
                                issued.store(u64::MAX / 2, Ordering::Relaxed);
                                break;
                            }
                        }
                    }
                }
            }));
        }
    }
    for t in tasks {
        let _ = t.await;
    }
    let mut total = std::mem::take(&mut *tally(&total));
    total.peak_in_flight = in_flight.peak.load(Ordering::Relaxed);
    total
}

/// The generator's own resident memory over one point, read where the
/// server is another process (else its memory would count too): the
/// peak while the point ran, and what the calls in flight added over what
/// was resident before them, per call at the most in flight.
pub(crate) struct OwnMemory {
    before: u64,
}

impl OwnMemory {
    /// Before the point's calls (connections open): `None` where the
    /// peak cannot be started afresh.
    pub(crate) fn start() -> Option<OwnMemory> {
        if !crate::sysinfo::reset_own_peak_rss() {
            return None;
        }
        let before = crate::sysinfo::proc_rss(std::process::id())?;
        Some(OwnMemory { before })
    }

    /// `client_rss_bytes` (the peak) and `client_rss_per_call_bytes` into
    /// the point's case, whose `max_in_flight` is set.
    pub(crate) fn finish(self, case: &mut Case) {
        let Some(peak) = crate::sysinfo::own_peak_rss() else {
            return;
        };
        param(&mut case.extra, "client_rss_bytes", peak);
        let most = case.extra.get("max_in_flight").and_then(|v| v.as_u64());
        if let Some(most) = most.filter(|&n| n > 0) {
            let per = peak.saturating_sub(self.before) as f64 / most as f64;
            param(&mut case.extra, "client_rss_per_call_bytes", per);
        }
    }
}

/// The shared tally of a closed loop's callers.
fn tally(t: &Mutex<Tally>) -> std::sync::MutexGuard<'_, Tally> {
    t.lock().unwrap_or_else(|e| e.into_inner())
}

/// Close every caller's connection on Ctrl-C, while the guard lives.
pub(crate) fn close_on_interrupt<I: Invoke>(callers: &[I]) -> super::CloseOnInterrupt {
    let callers = callers.to_vec();
    super::CloseOnInterrupt::new(move || callers.iter().for_each(Invoke::close))
}

/// Wait until `at`, to within microseconds: tokio's timer fires on the
/// millisecond after its deadline, which would send an open loop's calls
/// in bursts once a millisecond, each up to a millisecond late, and that
/// lateness would count in every latency (measured from the intended
/// time). So the timer takes the wait to within two milliseconds of `at`
/// and the rest yields to the runtime's other tasks (the replies) until
/// the clock reaches it, as precise load generators do.
async fn wait_until(at: tokio::time::Instant) {
    const TIMER_SLACK: Duration = Duration::from_millis(2);
    if let Some(early) = at.checked_sub(TIMER_SLACK) {
        if tokio::time::Instant::now() < early {
            tokio::time::sleep_until(early).await;
        }
    }
    while tokio::time::Instant::now() < at {
        tokio::task::yield_now().await;
    }
}

/// Calls at fixed intended times; each latency counts from its intended
/// time. At most `lo.max_outstanding` calls are outstanding; beyond them,
/// calls are counted as `overload` errors rather than queued without
/// bound.
pub(crate) async fn open_loop<I: Invoke>(
    lo: &Loop,
    callers: &[I],
    rate: f64,
    live: &Live,
) -> Tally {
    open_loop_waiting(lo, callers, rate, live, wait_until).await
}

/// [`open_loop`] with the wait for each intended time given (a test's
/// paused clock needs `sleep_until`: the precise wait spins on the clock).
///
/// The loop holds what is outstanding only: each call is a task in one
/// set, and the calls that have completed are taken out of it (and their
/// latencies recorded into the one histogram) before every send, so
/// memory follows the calls outstanding, not the calls sent.
async fn open_loop_waiting<I: Invoke, W: std::future::Future<Output = ()>>(
    lo: &Loop,
    callers: &[I],
    rate: f64,
    live: &Live,
    wait: impl Fn(tokio::time::Instant) -> W,
) -> Tally {
    let n = match lo.duration {
        Some(d) => (d.as_secs_f64() * rate).ceil() as u64,
        None => lo.count,
    };
    let interval = Duration::from_secs_f64(1.0 / rate);
    let start = tokio::time::Instant::now();
    let mut calls = tokio::task::JoinSet::new();
    let mut total = Tally::default();
    let record =
        |total: &mut Tally, done: Result<(u64, Result<(), BenchError>), tokio::task::JoinError>| {
            match done {
                Ok((ns, Ok(()))) => {
                    total.lat.record_ns(ns);
                    total.calls += 1;
                }
                Ok((_, Err(_))) if crate::interrupt::requested() => {}
                Ok((_, Err(e))) => total.fail(&e),
                Err(_) => {}
            }
        };
    for i in 0..n {
        if crate::interrupt::requested() {
            break;
        }
        let intended = start + interval.mul_f64(i as f64);
        if lo.max_duration.is_some_and(|d| intended > start + d) {
            total.capped = true;
            break;
        }
        wait(intended).await;
        while let Some(done) = calls.try_join_next() {
            record(&mut total, done);
        }
        if calls.len() >= lo.max_outstanding {
            count_error(&mut total.errors, "overload".into());
            live.error("overload");
            continue;
        }
        let (c, live) = (callers[i as usize % callers.len()].clone(), live.clone());
        let intended = intended.into_std();
        calls.spawn(async move {
            let r = c.invoke().await;
            let ns = intended.elapsed().as_nanos() as u64;
            match &r {
                Ok(()) => live.call(ns),
                Err(_) if crate::interrupt::requested() => {}
                Err(e) => live.error(&error_kind(e)),
            }
            (ns, r)
        });
        total.peak_in_flight = total.peak_in_flight.max(calls.len());
    }
    while let Some(done) = calls.join_next().await {
        record(&mut total, done);
    }
    total
}

/// How much a throughput point (or one slice of it) sends: at least
/// `total` payload bytes and for at least `min_duration`, at most for
/// `max_duration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub total: u64,
    pub min_duration: Duration,
    pub max_duration: Duration,
}

impl Budget {
    /// The budget's figures in a run's params.
    pub fn record(&self, p: &mut BTreeMap<String, serde_json::Value>) {
        param(p, "total", self.total);
        param(p, "min_duration_s", self.min_duration.as_secs_f64());
        param(p, "max_duration_s", self.max_duration.as_secs_f64());
    }
}

/// What a throughput loop counted.
pub(crate) struct Sent {
    pub(crate) calls: u64,
    pub(crate) bytes: u64,
    pub(crate) errors: BTreeMap<String, u64>,
    /// Round trips (twoway calls only).
    pub(crate) lat: Latency,
    /// The failure that stopped the loop under `on_error` stop.
    pub(crate) failure: Option<Error>,
}

/// Make `once` calls back to back, each carrying `per_call` payload bytes,
/// until `b.total` bytes are sent (at once if calls carry none) and
/// `b.min_duration` has passed, or `b.max_duration`, or Ctrl-C; the
/// bench.idl and the IDL-driven runs share it. The calls go to `live`
/// too: twoways as they complete, oneways at each reading of the clock.
pub(crate) async fn send_loop(
    b: Budget,
    on_error: OnError,
    label: &str,
    per_call: u64,
    twoway: bool,
    live: &Live,
    mut once: impl AsyncFnMut() -> Result<(), BenchError>,
) -> Sent {
    let mut sent = Sent {
        calls: 0,
        bytes: 0,
        errors: BTreeMap::new(),
        lat: Latency::new(),
        failure: None,
    };
    // Small calls read the clock every 16th call only (as the omniORB
    // bench client does), and when the total is first reached.
    let every = if per_call < 4096 { 16 } else { 1 };
    let start = Instant::now();
    let mut n = 0u64;
    live.bytes_per_call(per_call);
    // Oneways completed and not yet added to `live`.
    let mut untimed = 0u64;
    loop {
        n += 1;
        let t0 = twoway.then(Instant::now);
        let before = sent.bytes;
        match once().await {
            Ok(()) => {
                sent.calls += 1;
                sent.bytes += per_call;
                match t0 {
                    Some(t0) => {
                        let ns = t0.elapsed().as_nanos() as u64;
                        sent.lat.record_ns(ns);
                        live.call(ns);
                    }
                    None => untimed += 1,
                }
            }
            // Cut short by Ctrl-C: not the server's failure.
            Err(_) if crate::interrupt::requested() => break,
            Err(e) => {
                let kind = error_kind(&e);
                live.error(&kind);
                count_error(&mut sent.errors, kind);
                if on_error == OnError::Stop {
                    sent.failure = Some(Error::target(format!(
                        "{label}: call {} failed: {e}",
                        sent.calls + 1
                    )));
                    break;
                }
            }
        }
        let reached = sent.bytes >= b.total && before < b.total;
        // (Counting attempts, not successes: failing calls still end it.)
        if !reached && !n.is_multiple_of(every) {
            continue;
        }
        live.untimed_calls(std::mem::take(&mut untimed));
        let el = start.elapsed();
        if ((sent.bytes >= b.total || per_call == 0) && el >= b.min_duration)
            || el >= b.max_duration
            || crate::interrupt::requested()
        {
            break;
        }
    }
    live.untimed_calls(untimed);
    sent
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call the test's clock holds: it returns once the clock has moved
    /// `hold` ticks past the tick it was sent at, or at the `last` tick
    /// (after which the clock stands still).
    #[derive(Clone)]
    struct Held {
        clock: tokio::sync::watch::Receiver<u64>,
        hold: u64,
        last: u64,
    }

    impl Invoke for Held {
        async fn invoke(&self) -> Result<(), BenchError> {
            let mut clock = self.clock.clone();
            let due = (*clock.borrow() + self.hold).min(self.last);
            let _ = clock.wait_for(|&t| t >= due).await;
            Ok(())
        }

        fn close(&self) {}
    }

    /// An open loop of `n` calls, each held for `hold` intended times (the
    /// clock ticks once per intended time, and the calls it frees finish
    /// before the next send), at most `cap` outstanding.
    fn held_open_loop(n: u64, hold: u64, cap: usize) -> Tally {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            let (tick, clock) = tokio::sync::watch::channel(0u64);
            let lo = Loop {
                count: n,
                duration: None,
                max_duration: None,
                warmup: 0,
                connections: 1,
                in_flight: 1,
                rate: Some(1e6),
                max_outstanding: cap,
                on_error: OnError::Continue,
            };
            let wait = |_at| {
                tick.send_modify(|t| *t += 1);
                async {
                    for _ in 0..4 {
                        tokio::task::yield_now().await;
                    }
                }
            };
            let callers = [Held {
                clock,
                hold,
                last: n,
            }];
            let live = Live::off();
            let run = open_loop_waiting(&lo, &callers, 1e6, &live, wait);
            tokio::time::timeout(Duration::from_secs(30), run)
                .await
                .expect("the open loop ends within 30 s")
        })
    }

    /// The open loop holds what is outstanding, not what it sent: 2000
    /// calls each outstanding for 10 sends keep at most about 10 tasks
    /// held at once, and every call is recorded once.
    #[test]
    fn the_open_loop_holds_the_calls_outstanding_not_the_calls_sent() {
        let t = held_open_loop(2000, 10, DEFAULT_MAX_OUTSTANDING);
        assert_eq!(t.calls, 2000);
        assert_eq!(t.lat.len(), 2000);
        assert!(t.errors.is_empty(), "{:?}", t.errors);
        assert!(
            (10..=12).contains(&t.peak_in_flight),
            "{}",
            t.peak_in_flight
        );
    }

    /// At the cap, a call due is counted as overload instead of sent, and
    /// the outstanding ones never exceed the cap.
    #[test]
    fn beyond_max_outstanding_calls_are_overload_errors() {
        let t = held_open_loop(2000, 10, 4);
        assert_eq!(t.peak_in_flight, 4);
        let overload = t.errors.get("overload").copied().unwrap_or(0);
        assert!(overload > 1000, "{overload}");
        assert_eq!(t.calls + overload, 2000);
    }

    /// An open loop's call leaves at its intended time to within
    /// microseconds, not on the timer's next millisecond: the median
    /// lateness of 25 waits of 300 µs is well under the millisecond a
    /// plain `sleep_until` rounds up to (the median is robust to the few
    /// waits a busy machine delays).
    #[test]
    fn an_intended_time_is_kept_to_well_under_a_millisecond() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let mut late: Vec<Duration> = rt.block_on(async {
            let mut v = Vec::new();
            for _ in 0..25 {
                let at = tokio::time::Instant::now() + Duration::from_micros(300);
                wait_until(at).await;
                v.push(tokio::time::Instant::now() - at);
            }
            v
        });
        late.sort();
        assert!(late[12] < Duration::from_micros(400), "{late:?}");
    }
}
