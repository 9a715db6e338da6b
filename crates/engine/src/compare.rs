//! `iiopbench compare A.json B.json`: B against A, case by case (matched by
//! [`crate::merge::case_key`]: command, mode, type, size and parameters),
//! with ratios for throughput and p50/p99 latency and a verdict only where
//! the difference is larger than the noise:
//!
//! - latency: each quantile gets a distribution-free 95 % confidence
//!   interval from its own histogram (the order statistics at ranks
//!   n·q ± 1.96·√(n·q·(1−q))); B is `faster`/`slower` only when the two
//!   intervals do not overlap *and* the medians differ by at least
//!   `--min-effect` (default 5 %): consecutive round trips are not
//!   independent (caches, scheduler), so the intervals alone are too
//!   optimistic on a busy loopback host;
//! - throughput is the receiving server's figure
//!   (`receiver_throughput_mbps`) when both cases have one, else the
//!   client's: a oneway client can run ahead of its server, and then its
//!   send rate says nothing about the server; one sample per case, the
//!   difference must exceed a
//!   threshold: 3 × the case's relative standard deviation over repeated
//!   runs given with `--noise-from` (at least 1 %), else `--noise` (default
//!   10 %, the spread of repeated loopback runs on a shared 2-core host);
//! - a case measured as several runs (`bench … --runs N`, schema 2) has a
//!   95 % interval across runs for throughput and each percentile: then
//!   B is `faster`/`slower` only when the two intervals do not overlap
//!   (and, for latency, the means differ by at least `--min-effect`).
//!
//! Results whose placements differ (client and server CPUs) are not
//! compared unless `--mixed-placement` is given: placement moves a
//! loopback round trip by 4x, more than any ORB does.

use std::collections::BTreeMap;

use serde::{Serialize, Serializer};

use crate::hist::Latency;
use crate::merge::{case_key, tag};
use crate::results::{Case, Results};
use crate::runs::Headline;

/// How B compares with A on one figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Faster,
    Slower,
    Same,
    /// Not enough data to judge (no histogram, no calls).
    Unknown,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::Same => "same",
            Verdict::Unknown => "-",
        }
    }
}

/// A verdict is written as its name (`faster`, `slower`, `same`, `-`).
impl Serialize for Verdict {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Which throughput figure a comparison used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Basis {
    /// `receiver_throughput_mbps`: what the server counted.
    Receiver,
    /// `throughput_mbps`: what the client sent.
    Sender,
}

impl Basis {
    /// The throughput figure of `c` on this basis, and the key of its
    /// interval across runs.
    pub fn figure(self, c: &Case) -> (f64, &'static str) {
        match self {
            Basis::Receiver => (
                c.receiver_throughput_mbps.unwrap_or(0.0),
                "receiver_throughput_mbps",
            ),
            Basis::Sender => (c.throughput_mbps, "throughput_mbps"),
        }
    }

    /// The receiver's figure when both cases have one (a oneway client
    /// can run ahead of its server), else the sender's.
    pub fn of(a: &Case, b: &Case) -> Basis {
        let has = |c: &Case| c.receiver_throughput_mbps.is_some_and(|v| v > 0.0);
        if has(a) && has(b) {
            Basis::Receiver
        } else {
            Basis::Sender
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Basis::Receiver => "receiver",
            Basis::Sender => "sender",
        }
    }
}

/// A basis is written as its name (`receiver`, `sender`).
impl Serialize for Basis {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// One row of the comparison; its JSON form is [`to_json`]'s row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub case: String,
    /// B / A throughput (None when either is zero).
    pub throughput_ratio: Option<f64>,
    pub throughput: Verdict,
    /// Whose figure the throughput ratio is: the receiving server's when
    /// both cases have one, else the client's.
    #[serde(rename = "throughput_counted_by")]
    pub throughput_basis: Basis,
    /// B / A median latency.
    pub p50_ratio: Option<f64>,
    pub p50: Verdict,
    /// B / A 99th percentile latency.
    pub p99_ratio: Option<f64>,
    pub p99: Verdict,
    /// A's and B's placement when they differ.
    #[serde(serialize_with = "placements_json")]
    pub placements: Option<(String, String)>,
    /// Sides whose runs fall in two groups ([`crate::runs::two_groups`]),
    /// each said as `A: p50 7.850 µs in 5 runs, 8.790 µs in 4`: a verdict
    /// there compares mixtures of the two.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub split_runs: Vec<String>,
}

/// A row's placements as `{"a", "b"}`, or null when they agree.
fn placements_json<S: Serializer>(p: &Option<(String, String)>, s: S) -> Result<S::Ok, S::Error> {
    p.as_ref()
        .map(|(a, b)| serde_json::json!({"a": a, "b": b}))
        .serialize(s)
}

/// The schema name and version of [`to_json`]'s document.
pub const SCHEMA: &str = "iiopbench-comparison/1";

/// The comparison as a JSON document (docs/results-schema.md, "compare"):
/// the two files, then one object per row with B/A ratios (null when not
/// computable) and verdicts (`faster`, `slower`, `same`, `-`).
pub fn to_json(a: &str, b: &str, rows: &[Row]) -> serde_json::Value {
    serde_json::json!({"schema": SCHEMA, "a": a, "b": b, "rows": rows})
}

/// The rows where B is slower on any figure, each with what was slower
/// (`"throughput 0.812x"`, `"p50 1.300x"` …).
pub fn slower(rows: &[Row]) -> Vec<(String, Vec<String>)> {
    rows.iter()
        .filter_map(|r| {
            let figs: Vec<String> = [
                ("throughput", r.throughput, r.throughput_ratio),
                ("p50", r.p50, r.p50_ratio),
                ("p99", r.p99, r.p99_ratio),
            ]
            .into_iter()
            .filter(|(_, v, _)| *v == Verdict::Slower)
            .map(|(n, _, x)| match x {
                Some(x) => format!("{n} {x:.3}x"),
                None => n.to_string(),
            })
            .collect();
            (!figs.is_empty()).then(|| (r.case.clone(), figs))
        })
        .collect()
}

/// Verdict from two intervals across runs (higher is better when
/// `higher_better`): a change only when they do not overlap and the means
/// differ by at least `min_effect`.
pub fn interval_verdict(
    a: &crate::results::Interval,
    b: &crate::results::Interval,
    higher_better: bool,
    min_effect: f64,
) -> Verdict {
    if a.n < 2 || b.n < 2 || a.mean <= 0.0 || b.mean <= 0.0 {
        return Verdict::Unknown;
    }
    if a.overlaps(b) || (b.mean - a.mean).abs() / a.mean < min_effect {
        return Verdict::Same;
    }
    if (b.mean > a.mean) == higher_better {
        Verdict::Faster
    } else {
        Verdict::Slower
    }
}

/// 95 % confidence interval (ns) of quantile `q` of a histogram, from the
/// order statistics around rank n·q. None when empty.
pub fn quantile_ci(h: &Latency, q: f64) -> Option<(u64, u64)> {
    let n = h.len() as f64;
    if n < 1.0 {
        return None;
    }
    let half = 1.96 * (n * q * (1.0 - q)).sqrt();
    let lo = ((n * q - half).floor() / n).clamp(0.0, 1.0);
    let hi = ((n * q + half).ceil() / n).clamp(0.0, 1.0);
    let h = h.inner();
    Some((h.value_at_quantile(lo), h.value_at_quantile(hi)))
}

/// Verdict on latency quantile `q` of B against A (lower is faster).
pub fn latency_verdict(a: &Latency, b: &Latency, q: f64, min_effect: f64) -> Verdict {
    let (Some((alo, ahi)), Some((blo, bhi))) = (quantile_ci(a, q), quantile_ci(b, q)) else {
        return Verdict::Unknown;
    };
    let (va, vb) = (
        a.inner().value_at_quantile(q) as f64,
        b.inner().value_at_quantile(q) as f64,
    );
    let effect = (vb - va).abs() / va.max(1.0);
    if effect < min_effect {
        return Verdict::Same;
    }
    if bhi < alo {
        Verdict::Faster
    } else if blo > ahi {
        Verdict::Slower
    } else {
        Verdict::Same
    }
}

/// Verdict on throughput (higher is faster) with relative threshold `thr`.
pub fn throughput_verdict(a: f64, b: f64, thr: f64) -> Verdict {
    if a <= 0.0 || b <= 0.0 {
        return Verdict::Unknown;
    }
    let rel = (b - a) / a;
    if rel > thr {
        Verdict::Faster
    } else if rel < -thr {
        Verdict::Slower
    } else {
        Verdict::Same
    }
}

/// Per-case relative threshold from repeated runs, per basis: 3 ×
/// relative standard deviation (sample), at least 1 %; cases seen fewer
/// than twice absent. The receiver's spread is kept only for cases whose
/// every run has a receiver figure (the sender's, as before bases, from
/// whichever runs moved bytes).
pub fn noise_from_runs(runs: &[Results]) -> BTreeMap<(String, Basis), f64> {
    let mut vals: BTreeMap<(String, Basis), Vec<f64>> = BTreeMap::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for r in runs {
        for c in &r.cases {
            let k = case_key(r, c, false);
            *seen.entry(k.clone()).or_default() += 1;
            for basis in [Basis::Receiver, Basis::Sender] {
                let (v, _) = basis.figure(c);
                if v > 0.0 {
                    vals.entry((k.clone(), basis)).or_default().push(v);
                }
            }
        }
    }
    vals.into_iter()
        .filter(|((k, basis), v)| {
            v.len() >= 2 && (*basis == Basis::Sender || seen.get(k) == Some(&v.len()))
        })
        .map(|(k, v)| {
            let n = v.len() as f64;
            let m = v.iter().sum::<f64>() / n;
            let sd = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
            (k, (3.0 * sd / m).max(0.01))
        })
        .collect()
}

fn index<'a>(
    name: &str,
    r: &'a Results,
    target: Option<&str>,
) -> crate::error::Result<BTreeMap<String, &'a Case>> {
    let mut m: BTreeMap<String, &'a Case> = BTreeMap::new();
    for c in &r.cases {
        if let Some(t) = target {
            if tag(c, "target") != Some(t) {
                continue;
            }
        }
        let k = case_key(r, c, false);
        if let Some(prev) = m.insert(k, c) {
            crate::error::bail!(
                Local,
                "{name} has several cases measuring the same thing ({:?} on target {}, {:?} on target {}): \
                 choose one target with `a_target`/`b_target`",
                prev.name,
                tag(prev, "target").unwrap_or("?"),
                c.name,
                tag(c, "target").unwrap_or("?")
            );
        }
    }
    Ok(m)
}

fn hist(c: &Case) -> Option<Latency> {
    c.histogram
        .as_deref()
        .and_then(|h| Latency::from_base64(h).ok())
}

/// Compare B with A. `noise` maps case keys and bases to relative thresholds
/// (from [`noise_from_runs`]); `default_noise` and `min_effect` are
/// fractions (0.10 = 10 %).
pub fn compare(
    a: (&str, &Results, Option<&str>),
    b: (&str, &Results, Option<&str>),
    noise: &BTreeMap<(String, Basis), f64>,
    default_noise: f64,
    min_effect: f64,
) -> crate::error::Result<Vec<Row>> {
    let ia = index(a.0, a.1, a.2)?;
    let ib = index(b.0, b.1, b.2)?;
    let mut rows = Vec::new();
    // In A's run order.
    for ca in &a.1.cases {
        let k = case_key(a.1, ca, false);
        let (Some(_), Some(cb)) = (ia.get(&k), ib.get(&k)) else {
            continue;
        };
        if a.2.is_some_and(|t| tag(ca, "target") != Some(t)) {
            continue;
        }
        let ratio = |x: f64, y: f64| (x > 0.0 && y > 0.0).then(|| y / x);
        let basis = Basis::of(ca, cb);
        let ((ta, tkey), (tb, _)) = (basis.figure(ca), basis.figure(cb));
        let thr = noise
            .get(&(k.clone(), basis))
            .copied()
            .unwrap_or(default_noise);
        let (ha, hb) = (hist(ca), hist(cb));
        let lat = |q: f64| match (&ha, &hb) {
            (Some(x), Some(y)) => latency_verdict(x, y, q, min_effect),
            _ => Verdict::Unknown,
        };
        let (la, lb) = (ca.latency_us, cb.latency_us);
        // Runs' intervals when both sides have them, else one histogram's.
        let iv = |k: &str| ca.intervals.get(k).zip(cb.intervals.get(k));
        let lat_or_runs = |q: f64, k: &str| match iv(k) {
            Some((x, y)) if x.n >= 2 && y.n >= 2 => interval_verdict(x, y, false, min_effect),
            _ => lat(q),
        };
        let throughput = match iv(tkey) {
            Some((x, y)) if x.n >= 2 && y.n >= 2 => interval_verdict(x, y, true, 0.0),
            _ => throughput_verdict(ta, tb, thr),
        };
        let (pa, pb) = (
            crate::merge::case_placement(a.1, ca),
            crate::merge::case_placement(b.1, cb),
        );
        rows.push(Row {
            case: match tag(ca, "suite_case") {
                Some(s) => format!("{} [{s}]", ca.name),
                None => ca.name.clone(),
            },
            throughput_ratio: ratio(ta, tb),
            throughput,
            throughput_basis: basis,
            p50_ratio: la.zip(lb).and_then(|(x, y)| ratio(x.p50, y.p50)),
            p50: lat_or_runs(0.5, "p50"),
            p99_ratio: la.zip(lb).and_then(|(x, y)| ratio(x.p99, y.p99)),
            p99: lat_or_runs(0.99, "p99"),
            placements: (pa != pb).then_some((pa, pb)),
            split_runs: [("A", ca), ("B", *cb)]
                .into_iter()
                .filter_map(|(side, c)| Some(format!("{side}: {}", Headline::split(c)?)))
                .collect(),
        });
    }
    Ok(rows)
}
