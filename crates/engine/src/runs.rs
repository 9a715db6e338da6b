//! `--runs N`: one case measured as N independent runs, interleaved with
//! the other cases (run 1 of every case, then run 2 …) so that a slow
//! minute of the machine does not land on one case only; then folded into
//! one case per name, with the figures' mean ± 95 % interval across runs
//! and each run kept. Also the verdict on how far a run can be trusted:
//! the warnings printed under the table. Pure functions over results.

use std::collections::BTreeMap;

use crate::bench::stats::median;
use crate::hist::{Latency, LatencySummary};
use crate::noise::Noise;
use crate::results::param;
use crate::results::{Baseline, Case, CpuFigures, Interval, Results, RunFigures};

/// The spread across runs (95 % interval half-width over the mean) above
/// which a case is called unstable.
pub const SPREAD_LIMIT: f64 = 0.10;

/// Two groups of runs are called apart when the gap between them is at
/// least this share of the median run …
pub const GROUP_GAP: f64 = 0.05;

/// … and at least this many times as wide as either group's own range.
pub const GROUP_TIGHTNESS: f64 = 3.0;

/// Runs of one case that fell in two groups ([`two_groups`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TwoGroups {
    /// The lower group's median figure and how many runs it holds.
    pub low: f64,
    pub low_runs: usize,
    /// The higher group's.
    pub high: f64,
    pub high_runs: usize,
}

impl TwoGroups {
    /// `7.850 µs in 5 runs, 8.790 µs in 4`, with `unit` (and its
    /// precision) after each figure.
    pub fn describe(&self, unit: &str, decimals: usize) -> String {
        format!(
            "{:.*} {unit} in {} runs, {:.*} {unit} in {}",
            decimals, self.low, self.low_runs, decimals, self.high, self.high_runs
        )
    }
}

/// Whether per-run figures fall in two groups rather than scatter around
/// one value: split at the widest gap between neighbours, each side holds
/// at least two runs and a fifth of them, and the gap is at least [`GROUP_GAP`] of the median
/// and [`GROUP_TIGHTNESS`] times either side's own range. A mean or an
/// interval over such runs describes neither group, and a ratio between
/// two such cases depends on which group each run fell in (seen here: a
/// raw-TCP round trip whose connections settled at 7.8 µs or at 8.8 µs,
/// so that the same GIOP figure was 1.09x or 0.97x of it).
pub fn two_groups(runs: &[f64]) -> Option<TwoGroups> {
    let mut v: Vec<f64> = runs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.len() < 4 {
        return None;
    }
    v.sort_by(f64::total_cmp);
    // The widest gap with at least two runs, and a fifth of them, on
    // either side (a few slow slices of many are outliers, not a group).
    let least = 2.max(v.len().div_ceil(5));
    if v.len() < 2 * least {
        return None;
    }
    let (at, gap) = (least - 1..v.len() - least)
        .map(|i| (i, v[i + 1] - v[i]))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let (low, high) = v.split_at(at + 1);
    let range = |g: &[f64]| g[g.len() - 1] - g[0];
    let widest = range(low).max(range(high));
    let apart =
        gap >= GROUP_GAP * median(&v)?.abs() && gap >= GROUP_TIGHTNESS * widest && gap > 0.0;
    apart.then_some(TwoGroups {
        low: median(low)?,
        low_runs: low.len(),
        high: median(high)?,
        high_runs: high.len(),
    })
}

/// The figure a case's runs are judged by: the median latency of
/// round-trip cases, else the throughput, the receiving server's where
/// every run has one (what `compare` judges throughput by).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Headline {
    P50,
    Received,
    Sent,
}

impl Headline {
    /// The headline of `c`: the first of p50, the server's and the
    /// client's throughput that has an interval across its runs.
    pub fn of(c: &Case) -> Option<Headline> {
        [Headline::P50, Headline::Received, Headline::Sent]
            .into_iter()
            .find(|h| c.intervals.contains_key(h.key()))
    }

    /// Its key in `intervals`.
    pub fn key(self) -> &'static str {
        match self {
            Headline::P50 => "p50",
            Headline::Received => "receiver_throughput_mbps",
            Headline::Sent => "throughput_mbps",
        }
    }

    /// How warnings name it.
    pub fn name(self) -> &'static str {
        match self {
            Headline::P50 => "p50",
            Headline::Received => "throughput counted by the server",
            Headline::Sent => "throughput",
        }
    }

    /// Its unit, and the decimals it is shown with.
    pub fn unit(self) -> (&'static str, usize) {
        match self {
            Headline::P50 => ("µs", 3),
            _ => ("Mbit/s", 0),
        }
    }

    /// This figure of each run of `c` (none where a run lacks it).
    pub fn runs(self, c: &Case) -> Option<Vec<f64>> {
        c.runs
            .iter()
            .map(|r| match self {
                Headline::P50 => r.latency_us.map(|l| l.p50),
                Headline::Received => r.receiver_throughput_mbps,
                Headline::Sent => Some(r.throughput_mbps),
            })
            .collect()
    }

    /// Whether `c`'s runs fall in two groups by its headline, said as
    /// `p50 7.850 µs in 5 runs, 8.790 µs in 4`.
    pub fn split(c: &Case) -> Option<String> {
        let h = Headline::of(c)?;
        let g = two_groups(&h.runs(c)?)?;
        let (unit, decimals) = h.unit();
        Some(format!("{} {}", h.name(), g.describe(unit, decimals)))
    }
}

/// The runs' baselines of one case as one: the mean baseline value, and
/// the median of the runs' ratios. Each run's ratio pairs a case with the
/// baseline measured next to it, so a slow moment of the machine cancels
/// out; the median, so one run that met a stall does not move it.
fn fold_baseline<'a>(
    runs: impl Iterator<Item = Option<&'a Baseline>>,
    ratios: Option<&Interval>,
) -> Option<Baseline> {
    let runs: Vec<&Baseline> = runs.flatten().collect();
    let first = runs.first()?;
    let base = runs.iter().map(|b| b.baseline_value).sum::<f64>() / runs.len() as f64;
    Some(Baseline {
        metric: first.metric.clone(),
        baseline_value: base,
        ratio: ratios.map(|i| i.median).unwrap_or(first.ratio),
    })
}

/// One run's figures of a case.
pub fn figures(c: &Case) -> RunFigures {
    RunFigures {
        calls: c.calls,
        seconds: c.seconds,
        throughput_mbps: c.throughput_mbps,
        receiver_throughput_mbps: c.receiver_throughput_mbps,
        latency_us: c.latency_us,
        baseline_ratio: c.baseline.as_ref().map(|b| b.ratio),
        tls_baseline_ratio: c.tls_baseline.as_ref().map(|b| b.ratio),
        limit_ratio: c.limit.as_ref().map(|b| b.ratio),
        noise: c.noise.clone(),
    }
}

/// The 95 % interval across `runs` of each figure that every run has
/// (none for fewer than two runs): throughput (the client's and the
/// receiving server's), calls per second, latency percentiles, and the
/// ratios to the raw baselines.
pub fn intervals(runs: &[RunFigures]) -> BTreeMap<String, Interval> {
    let mut iv = BTreeMap::new();
    let mut put = |k: &str, xs: Option<Vec<f64>>| {
        if let Some(xs) = xs.filter(|xs| xs.len() >= 2) {
            iv.insert(k.to_string(), Interval::of(&xs));
        }
    };
    put(
        "throughput_mbps",
        Some(runs.iter().map(|r| r.throughput_mbps).collect()),
    );
    put(
        "calls_per_sec",
        Some(
            runs.iter()
                .map(|r| r.calls as f64 / r.seconds.max(1e-12))
                .collect(),
        ),
    );
    put(
        "receiver_throughput_mbps",
        runs.iter().map(|r| r.receiver_throughput_mbps).collect(),
    );
    let lat = |f: fn(&LatencySummary) -> f64| -> Option<Vec<f64>> {
        runs.iter().map(|r| r.latency_us.as_ref().map(f)).collect()
    };
    put("p50", lat(|l| l.p50));
    put("p90", lat(|l| l.p90));
    put("p99", lat(|l| l.p99));
    put("p999", lat(|l| l.p999));
    put("vs_tcp", runs.iter().map(|r| r.baseline_ratio).collect());
    put("vs_limit", runs.iter().map(|r| r.limit_ratio).collect());
    put(
        "vs_tls_tcp",
        runs.iter().map(|r| r.tls_baseline_ratio).collect(),
    );
    iv
}

/// Fold the cases of several runs (each run's cases in the order they
/// ran) into one case per name, in first-seen order. A case seen once is
/// returned as measured, without `runs` or `intervals`.
pub fn aggregate(runs: Vec<Vec<Case>>) -> Vec<Case> {
    let mut order: Vec<String> = Vec::new();
    let mut by_name: BTreeMap<String, Vec<Case>> = BTreeMap::new();
    for run in runs {
        for c in run {
            if !by_name.contains_key(&c.name) {
                order.push(c.name.clone());
            }
            by_name.entry(c.name.clone()).or_default().push(c);
        }
    }
    order
        .into_iter()
        .map(|name| fold(by_name.remove(&name).unwrap_or_default()))
        .collect()
}

fn fold(mut cases: Vec<Case>) -> Case {
    if cases.len() <= 1 {
        return cases.pop().unwrap_or_default();
    }
    let runs: Vec<RunFigures> = cases.iter().map(figures).collect();
    let mut out = cases[0].clone();
    let n = cases.len() as f64;
    out.calls = cases.iter().map(|c| c.calls).sum();
    out.bytes = cases.iter().map(|c| c.bytes).sum();
    out.seconds = cases.iter().map(|c| c.seconds).sum();
    out.calls_per_sec = cases.iter().map(|c| c.calls_per_sec).sum::<f64>() / n;
    out.throughput_mbps = cases.iter().map(|c| c.throughput_mbps).sum::<f64>() / n;
    out.receiver_throughput_mbps = cases
        .iter()
        .map(|c| c.receiver_throughput_mbps)
        .collect::<Option<Vec<f64>>>()
        .map(|v| v.iter().sum::<f64>() / n);
    // One histogram of every call of every run: exact percentiles over
    // all samples (the intervals say how much the runs disagree).
    let mut merged: Option<Latency> = None;
    for h in cases.iter().filter_map(|c| c.histogram.as_deref()) {
        if let Ok(l) = Latency::from_base64(h) {
            match &mut merged {
                Some(m) => m.merge(&l),
                None => merged = Some(l),
            }
        }
    }
    if let Some(m) = merged.filter(|m| !m.is_empty()) {
        out.latency_us = Some(m.summary());
        out.histogram = Some(m.to_base64());
    }
    out.errors = BTreeMap::new();
    for c in &cases {
        for (k, v) in &c.errors {
            *out.errors.entry(k.clone()).or_insert(0) += v;
        }
    }
    out.cpu = cpu_sum(&cases, out.bytes);
    if cases.iter().all(|c| c.breakdown.is_some()) {
        let mut b: BTreeMap<String, f64> = BTreeMap::new();
        for c in &cases {
            for (k, v) in c.breakdown.iter().flatten() {
                *b.entry(k.clone()).or_insert(0.0) += v;
            }
        }
        out.breakdown = Some(b);
    }
    // Later runs' extras win (e.g. the server's counters of the last run).
    for c in &cases[1..] {
        for (k, v) in &c.extra {
            out.extra.insert(k.clone(), v.clone());
        }
    }
    // Segments add up over the runs, as the calls did; so do the calls
    // written headers-first.
    set_data_segments(&mut out, total_data_segments(&cases));
    // A run cut short by its time cap marks the case, whichever run it was.
    if cases.iter().any(capped) {
        param(&mut out.extra, "stopped_by", "time-cap");
        // Every run planned the same count: the plan of all of them.
        let planned = cases
            .iter()
            .find_map(|c| c.extra.get("planned_calls").and_then(|v| v.as_u64()));
        if let Some(n) = planned {
            param(&mut out.extra, "planned_calls", n * cases.len() as u64);
        }
    }
    if let Some(n) = total_extra(&cases, "head_first_calls") {
        param(&mut out.extra, "head_first_calls", n);
    }
    // The generator's memory and calls in flight: the most any run had
    // (the first run's calls grow the heap; later ones reuse it).
    for key in [
        "max_in_flight",
        "client_rss_bytes",
        "client_rss_per_call_bytes",
    ] {
        let most = cases
            .iter()
            .filter_map(|c| c.extra.get(key).and_then(|v| v.as_f64()))
            .reduce(f64::max);
        if let Some(most) = most {
            let v = match key {
                "client_rss_per_call_bytes" => serde_json::json!(most),
                _ => serde_json::json!(most as u64),
            };
            out.extra.insert(key.into(), v);
        }
    }
    let iv = intervals(&runs);
    out.baseline = fold_baseline(cases.iter().map(|c| c.baseline.as_ref()), iv.get("vs_tcp"));
    out.limit = fold_baseline(cases.iter().map(|c| c.limit.as_ref()), iv.get("vs_limit"));
    out.tls_baseline = fold_baseline(
        cases.iter().map(|c| c.tls_baseline.as_ref()),
        iv.get("vs_tls_tcp"),
    );
    out.intervals = iv;
    let noises: Vec<Noise> = cases.iter().filter_map(|c| c.noise.clone()).collect();
    out.noise = (!noises.is_empty()).then(|| Noise::merge(&noises));
    let mut moved: Vec<String> = cases.iter().flat_map(|c| c.moved.clone()).collect();
    moved.sort();
    moved.dedup();
    out.moved = moved;
    out.runs = runs;
    out
}

/// Record in `c.extra` the TCP segments with data its connection sent
/// while its calls went (`data_segments`) and the calls per segment
/// (`calls_per_segment`: above 1, the kernel joined calls into one
/// segment); both removed when unknown (`None`).
pub(crate) fn set_data_segments(c: &mut Case, segs: Option<u64>) {
    c.extra.remove("data_segments");
    c.extra.remove("calls_per_segment");
    if let Some(n) = segs {
        param(&mut c.extra, "data_segments", n);
        if n > 0 {
            param(&mut c.extra, "calls_per_segment", c.calls as f64 / n as f64);
        }
    }
}

/// The sum of the cases' `data_segments`, if every case has one.
pub(crate) fn total_data_segments(cases: &[Case]) -> Option<u64> {
    total_extra(cases, "data_segments")
}

/// The sum of the cases' count `key` in `extra`, if every case has one.
pub(crate) fn total_extra(cases: &[Case], key: &str) -> Option<u64> {
    cases
        .iter()
        .map(|c| c.extra.get(key).and_then(|v| v.as_u64()))
        .sum()
}

fn cpu_sum(cases: &[Case], bytes: u64) -> Option<CpuFigures> {
    let cpus: Vec<CpuFigures> = cases.iter().filter_map(|c| c.cpu).collect();
    if cpus.len() != cases.len() {
        return cases[0].cpu;
    }
    let user: f64 = cpus.iter().map(|c| c.client_user_s).sum();
    let sys: f64 = cpus.iter().map(|c| c.client_sys_s).sum();
    let mib = bytes as f64 / (1u64 << 20) as f64;
    Some(CpuFigures {
        client_user_s: user,
        client_sys_s: sys,
        client_s_per_mib: if mib > 0.0 { (user + sys) / mib } else { 0.0 },
        server_s: cpus
            .iter()
            .map(|c| c.server_s)
            .collect::<Option<Vec<f64>>>()
            .map(|v| v.iter().sum()),
    })
}

/// What a reader must know before trusting the numbers, one line each
/// (empty when the run was clean): background load or steal during a
/// run, a case whose runs disagree by more than [`SPREAD_LIMIT`], a thread
/// that moved between CPUs during a case.
pub fn warnings(r: &Results) -> Vec<String> {
    let mut out = Vec::new();
    let mut noisy: Vec<String> = Vec::new();
    for c in &r.cases {
        if let Some(n) = &c.noise {
            let p = n.problems();
            if !p.is_empty() {
                noisy.push(format!("{} ({})", c.name, p.join(", ")));
            }
        }
    }
    let run_problems: Vec<String> = r
        .quality
        .iter()
        .flat_map(|q| q.runs.iter().enumerate())
        .filter_map(|(i, n)| {
            let p = n.problems();
            (!p.is_empty()).then(|| format!("run {}: {}", i + 1, p.join(", ")))
        })
        .collect();
    if !noisy.is_empty() {
        out.push(format!(
            "Warning: the machine was busy with other work during {}: rerun on an idle machine, or with more `runs`.",
            list(&noisy)
        ));
    } else if !run_problems.is_empty() {
        out.push(format!(
            "Warning: the machine was busy with other work ({}): rerun on an idle machine, or with more `runs`.",
            run_problems.join("; ")
        ));
    }
    let unstable: Vec<String> = r
        .cases
        .iter()
        .filter_map(|c| {
            let h = Headline::of(c)?;
            let (what, i) = (h.name(), c.intervals[h.key()]);
            (i.n >= 2 && i.relative() > SPREAD_LIMIT).then(|| {
                format!(
                    "{} ({what} ±{:.0} % over {} runs)",
                    c.name,
                    100.0 * i.relative(),
                    i.n
                )
            })
        })
        .collect();
    if !unstable.is_empty() {
        out.push(format!(
            "Warning: runs disagree by more than {:.0} % on {}: more `runs`, a longer `min_duration` or a quieter machine would narrow it.",
            100.0 * SPREAD_LIMIT,
            list(&unstable)
        ));
    }
    let split: Vec<String> = r
        .cases
        .iter()
        .filter_map(|c| Some(format!("{} ({})", c.name, Headline::split(c)?)))
        .collect();
    if !split.is_empty() {
        out.push(format!(
            "Warning: runs fall in two groups on {}: a mean or a ratio over them describes neither; find what differs between the groups (a connection's or the machine's state, placement) before comparing, or compare group with group.",
            list(&split)
        ));
    }
    let cut: Vec<String> = r
        .cases
        .iter()
        .filter(|c| capped(c))
        .map(
            |c| match c.extra.get("planned_calls").and_then(|v| v.as_u64()) {
                Some(n) => format!("{} ({} of {n} calls)", c.name, c.calls),
                None => c.name.clone(),
            },
        )
        .collect();
    if !cut.is_empty() {
        out.push(format!(
            "Warning: the time cap (`max_duration`) cut short {}: figures from fewer calls than asked.",
            list(&cut)
        ));
    }
    let moved: Vec<String> = r
        .cases
        .iter()
        .filter(|c| !c.moved.is_empty())
        .map(|c| format!("{} ({})", c.name, c.moved.join(", ")))
        .collect();
    if !moved.is_empty() {
        out.push(format!(
            "Warning: threads moved between CPUs during {}: those histograms mix placements; pin with `pin` or `client_cpus`/`server_cpus`.",
            list(&moved)
        ));
    }
    out
}

/// Whether the time cap ended the case before its count.
fn capped(c: &Case) -> bool {
    c.extra.get("stopped_by").and_then(|v| v.as_str()) == Some("time-cap")
}

/// At most three items, then how many more.
fn list(items: &[String]) -> String {
    let mut s = items.iter().take(3).cloned().collect::<Vec<_>>().join("; ");
    if items.len() > 3 {
        s.push_str(&format!(" and {} more", items.len() - 3));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::CaseParams;

    fn case(name: &str, mbps: f64, lat_ns: &[u64], base: Option<f64>) -> Case {
        let mut l = Latency::new();
        for &ns in lat_ns {
            l.record_ns(ns);
        }
        Case {
            name: name.into(),
            params: CaseParams {
                ty: "octet".into(),
                size: 1024,
                mode: "twoway".into(),
                extra: Default::default(),
            },
            calls: lat_ns.len() as u64,
            bytes: 1024 * lat_ns.len() as u64,
            seconds: 1.0,
            calls_per_sec: lat_ns.len() as f64,
            throughput_mbps: mbps,
            latency_us: (!l.is_empty()).then(|| l.summary()),
            histogram: (!l.is_empty()).then(|| l.to_base64()),
            baseline: base.map(|b| Baseline {
                metric: "throughput".into(),
                baseline_value: b,
                ratio: mbps / b,
            }),
            ..Default::default()
        }
    }

    #[test]
    fn one_run_is_left_alone() {
        let c = case("a", 10.0, &[1000, 2000], None);
        let out = aggregate(vec![vec![c.clone()]]);
        assert_eq!(out, vec![c]);
    }

    #[test]
    fn runs_fold_into_means_intervals_and_one_histogram() {
        let runs = vec![
            vec![
                case("a", 100.0, &[1000; 10], Some(200.0)),
                case("b", 1.0, &[], None),
            ],
            vec![
                case("a", 120.0, &[3000; 10], Some(200.0)),
                case("b", 3.0, &[], None),
            ],
            vec![
                case("a", 110.0, &[2000; 10], Some(220.0)),
                case("b", 2.0, &[], None),
            ],
        ];
        let out = aggregate(runs);
        assert_eq!(out.len(), 2);
        let a = &out[0];
        assert_eq!(a.name, "a");
        assert_eq!(a.calls, 30);
        assert_eq!(a.runs.len(), 3);
        assert!((a.throughput_mbps - 110.0).abs() < 1e-9);
        let t = a.intervals["throughput_mbps"];
        assert_eq!(t.n, 3);
        assert_eq!((t.min, t.max), (100.0, 120.0));
        // sd 10, t(2) = 4.303: 4.303 * 10 / sqrt(3)
        assert!((t.ci95 - 4.303 * 10.0 / 3f64.sqrt()).abs() < 1e-6);
        // The merged histogram holds all 30 calls.
        let h = Latency::from_base64(a.histogram.as_ref().unwrap()).unwrap();
        assert_eq!(h.len(), 30);
        assert!((a.intervals["p50"].mean - 2.0).abs() < 0.01);
        // vs tcp: the median of each run's ratio (0.5, 0.6, 0.5).
        let b = a.baseline.as_ref().unwrap();
        assert!((b.ratio - 0.5).abs() < 1e-9);
        assert_eq!(a.intervals["vs_tcp"].n, 3);
        assert_eq!(out[1].name, "b");
        assert!(!out[1].intervals.contains_key("p50"));
    }

    #[test]
    fn spread_beyond_the_limit_is_said_and_a_tight_one_is_not() {
        let mut r = crate::results::Results::new("throughput", Vec::new());
        r.cases = aggregate(vec![
            vec![
                case("steady", 100.0, &[], None),
                case("jumpy", 50.0, &[], None),
            ],
            vec![
                case("steady", 101.0, &[], None),
                case("jumpy", 150.0, &[], None),
            ],
            vec![
                case("steady", 100.5, &[], None),
                case("jumpy", 90.0, &[], None),
            ],
        ]);
        let w = warnings(&r);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("jumpy"), "{w:?}");
        assert!(!w[0].contains("steady"), "{w:?}");
    }

    #[test]
    fn two_groups_are_told_from_scatter() {
        // The raw round trips of one A/B: two groups, 7.8 and 8.8 µs.
        let raw = [
            8.855, 8.839, 8.783, 8.295, 8.831, 8.175, 8.799, 8.775, 8.759,
        ];
        let g = two_groups(&raw).expect("two groups");
        assert_eq!((g.low_runs, g.high_runs), (2, 7));
        assert!((g.low - 8.235).abs() < 1e-9, "{g:?}");
        assert!((g.high - 8.799).abs() < 1e-9, "{g:?}");
        assert_eq!(g.describe("µs", 3), "8.235 µs in 2 runs, 8.799 µs in 7");
        // The GIOP round trips of the same runs: one group.
        let giop = [
            8.559, 8.543, 8.535, 8.559, 8.519, 8.527, 8.543, 8.535, 8.543,
        ];
        assert_eq!(two_groups(&giop), None);
        // Scatter: no gap three times as wide as the groups.
        assert_eq!(two_groups(&[10.0, 11.0, 12.5, 13.0, 14.2, 15.0]), None);
        // A lone outlier is not a group, nor two slow slices of sixteen.
        assert_eq!(two_groups(&[10.0, 10.1, 10.05, 10.02, 14.0]), None);
        let mut slices = vec![20.4; 14];
        slices.extend([22.3, 22.4]);
        assert_eq!(two_groups(&slices), None);
        slices.extend([22.3, 22.4]);
        assert!(two_groups(&slices).is_some());
        // Apart, but by less than 5 %.
        assert_eq!(two_groups(&[100.0, 100.1, 103.0, 103.1]), None);
        // Too few runs to tell.
        assert_eq!(two_groups(&[1.0, 1.0, 2.0]), None);
        assert!(two_groups(&[1.0, 1.01, 2.0, 2.01]).is_some());
    }

    #[test]
    fn runs_in_two_groups_are_said() {
        let mut r = crate::results::Results::new("latency", Vec::new());
        let run = |ns: u64| {
            vec![
                case("tcp ack 1B", 0.0, &[ns; 5], None),
                case("ping", 0.0, &[8_550; 5], None),
            ]
        };
        r.cases = aggregate([7_850, 8_790, 7_850, 8_790, 8_790].map(run).to_vec());
        let w = warnings(&r);
        let split: Vec<&String> = w.iter().filter(|l| l.contains("two groups")).collect();
        assert_eq!(split.len(), 1, "{w:?}");
        assert!(split[0].contains("tcp ack 1B (p50 7."), "{w:?}");
        assert!(split[0].contains("in 2 runs, 8."), "{w:?}");
        assert!(!split[0].contains("ping"), "{w:?}");
    }

    #[test]
    fn moved_threads_are_said() {
        let mut r = crate::results::Results::new("latency", Vec::new());
        let mut c = case("ping", 0.0, &[1000], None);
        c.moved = vec!["iiopbench (12)".into()];
        r.cases = vec![c];
        let w = warnings(&r);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("moved between CPUs during ping"), "{w:?}");
    }
}
