//! `iiopbench merge A.json B.json… --json all.json`: combine results files from
//! several runs or machines. Cases that measured the same thing (same
//! [`case_key`]) become one case whose counts, bytes, seconds and errors
//! are summed and whose latency histograms are merged losslessly (so the
//! merged percentiles are those of all calls together, not an average of
//! percentiles); every other case is carried over as it was. Also home of
//! the case identity used by `compare` and `report`.

use std::collections::BTreeMap;

use crate::hist::Latency;
use crate::results::{Case, CpuFigures, Fit, Results};

/// Parameters that label a case without changing what it measured
/// (`command` is part of the key on its own).
const LABEL_PARAMS: [&str; 3] = ["target", "command", "placement"];

/// Where a case ran, to compare runs by: its `placement` tag (suite
/// files, whose targets may be placed differently), else the file's.
pub fn case_placement(r: &Results, c: &Case) -> String {
    tag(c, "placement")
        .map(str::to_string)
        .unwrap_or_else(|| r.placement.key())
}

/// The command that measured a case: the suite's `command` tag, else the
/// file's `kind`.
pub fn case_command<'a>(r: &'a Results, c: &'a Case) -> &'a str {
    c.params
        .extra
        .get("command")
        .and_then(|v| v.as_str())
        .unwrap_or(&r.kind)
}

/// A string tag of the case's parameters (`command`, `target`,
/// `suite_case`, set by `suite`).
pub fn tag<'a>(c: &'a Case, k: &str) -> Option<&'a str> {
    c.params.extra.get(k).and_then(|v| v.as_str())
}

/// What a case measured: command, mode, type, size and every other
/// parameter (`suite_case` included) except the `target` label. With
/// `with_target`, the target tag too (for merging runs of one target).
pub fn case_key(r: &Results, c: &Case, with_target: bool) -> String {
    let mut k = format!(
        "{} | {} | {} | {}",
        case_command(r, c),
        c.params.mode,
        c.params.ty,
        c.params.size
    );
    for (name, v) in &c.params.extra {
        if LABEL_PARAMS.contains(&name.as_str()) {
            continue;
        }
        k.push_str(&format!(" | {name}={v}"));
    }
    if with_target {
        if let Some(t) = tag(c, "target") {
            k.push_str(&format!(" | target={t}"));
        }
    }
    k
}

/// The label of the latency fit covering `c`, as `bench latency` and
/// `suite` write them: `{mode} {type}`, prefixed `{target} {suite_case}: `
/// in suite files.
pub fn fit_label(c: &Case) -> String {
    let base = format!("{} {}", c.params.mode, c.params.ty);
    match (tag(c, "target"), tag(c, "suite_case")) {
        (Some(t), Some(s)) => format!("{t} {s}: {base}"),
        _ => base,
    }
}

/// Merge `inputs` (labelled by their file names in errors).
pub fn merge(inputs: &[(String, Results)]) -> crate::error::Result<Results> {
    let Some((_, first)) = inputs.first() else {
        crate::error::bail!(Local, "merge: no input files");
    };
    let mut out = first.clone();
    out.cases.clear();
    out.fits.clear();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut merged_from: Vec<u64> = Vec::new();
    let mut failures = Vec::new();
    let mut complete = true;
    for (name, r) in inputs {
        if !r.outcome.complete {
            complete = false;
            failures.push(format!(
                "{name}: {}",
                r.outcome.failure.as_deref().unwrap_or("incomplete")
            ));
        }
        for c in &r.cases {
            let key = format!("{} || {}", r.kind, case_key(r, c, true));
            match index.get(&key) {
                Some(&i) => {
                    merge_case(&mut out.cases[i], c).map_err(|e| {
                        crate::error::fail!(Local, "{name}: case {:?}: {e}", c.name)
                    })?;
                    merged_from[i] += 1;
                }
                None => {
                    let mut c = c.clone();
                    if out.kind != r.kind {
                        // Keep the case's own command visible once kinds mix.
                        c.params
                            .extra
                            .entry("command".into())
                            .or_insert_with(|| r.kind.clone().into());
                    }
                    index.insert(key, out.cases.len());
                    out.cases.push(c);
                    merged_from.push(1);
                }
            }
        }
    }
    for (c, n) in out.cases.iter_mut().zip(&merged_from) {
        if *n > 1 {
            c.extra.insert("merged_runs".into(), (*n).into());
        }
    }
    if inputs.iter().any(|(_, r)| r.kind != first.kind) {
        out.kind = "merged".into();
    }
    // One job ran them all, or the merge is of several: then none is.
    if inputs.iter().any(|(_, r)| r.job != first.job) {
        out.job = None;
    }
    out.fits = refit(&out);
    out.params.insert(
        "merged_files".into(),
        inputs
            .iter()
            .map(|(n, _)| n.clone())
            .collect::<Vec<_>>()
            .into(),
    );
    out.outcome.complete = complete;
    out.outcome.failure = (!failures.is_empty()).then(|| failures.join("; "));
    Ok(out)
}

/// How the two measurements folded into one case were placed in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlap {
    /// One after the other (`merge` of separate runs): seconds add up and
    /// rates are the totals over the summed seconds.
    Sequential,
    /// At the same time (the agents of one distributed run): the longest
    /// one's seconds, and rates add up.
    Concurrent,
}

/// Fold `b` into `a` (same key).
fn merge_case(a: &mut Case, b: &Case) -> crate::error::Result<()> {
    fold_case(a, b, Overlap::Sequential)
}

/// Fold measurement `b` of a case into `a`: counts, errors, the latency
/// histogram, CPU and phase breakdown add up; times and rates combine as
/// `overlap` says. A figure only one side has is dropped, since it would
/// describe part of the calls only.
pub fn fold_case(a: &mut Case, b: &Case, overlap: Overlap) -> crate::error::Result<()> {
    match overlap {
        Overlap::Sequential => {
            // Every run of both (a case measured once is one run), and
            // the intervals across all of them: the first file's alone
            // would describe a part of the calls and judge `compare`'s
            // verdicts by it.
            let runs_of = |c: &Case| match c.runs.is_empty() {
                true => vec![crate::runs::figures(c)],
                false => c.runs.clone(),
            };
            a.runs = [runs_of(a), runs_of(b)].concat();
            a.intervals = crate::runs::intervals(&a.runs);
            let recv_bits = |c: &Case| c.receiver_throughput_mbps.map(|m| m * c.seconds);
            a.receiver_throughput_mbps = match (recv_bits(a), recv_bits(b)) {
                (Some(x), Some(y)) => Some((x + y) / (a.seconds + b.seconds).max(1e-12)),
                _ => None,
            };
            a.seconds += b.seconds;
            a.calls_per_sec = (a.calls + b.calls) as f64 / a.seconds.max(1e-12);
            a.throughput_mbps = (a.bytes + b.bytes) as f64 * 8.0 / a.seconds.max(1e-12) / 1e6;
        }
        Overlap::Concurrent => {
            a.receiver_throughput_mbps = a
                .receiver_throughput_mbps
                .zip(b.receiver_throughput_mbps)
                .map(|(x, y)| x + y);
            a.seconds = a.seconds.max(b.seconds);
            a.calls_per_sec += b.calls_per_sec;
            a.throughput_mbps += b.throughput_mbps;
        }
    }
    a.overhead = match (a.overhead, b.overhead) {
        (Some(x), Some(y)) if x == y => Some(x),
        _ => None,
    };
    a.calls += b.calls;
    a.bytes += b.bytes;
    for (k, v) in &b.errors {
        *a.errors.entry(k.clone()).or_insert(0) += v;
    }
    match (&a.histogram, &b.histogram) {
        (Some(ha), Some(hb)) => {
            let mut h = Latency::from_base64(ha)
                .map_err(|e| crate::error::fail!(Local, "first histogram undecodable: {e}"))?;
            h.merge(
                &Latency::from_base64(hb)
                    .map_err(|e| crate::error::fail!(Local, "histogram undecodable: {e}"))?,
            );
            a.latency_us = Some(h.summary());
            a.histogram = Some(h.to_base64());
        }
        (None, None) => {}
        _ => {
            // One side without a histogram: a summary cannot be merged.
            a.latency_us = None;
            a.histogram = None;
        }
    }
    a.cpu = match (a.cpu, b.cpu) {
        (Some(x), Some(y)) => {
            let (user, sys) = (
                x.client_user_s + y.client_user_s,
                x.client_sys_s + y.client_sys_s,
            );
            let mib = a.bytes as f64 / 1048576.0;
            Some(CpuFigures {
                client_user_s: user,
                client_sys_s: sys,
                client_s_per_mib: if mib > 0.0 { (user + sys) / mib } else { 0.0 },
                server_s: x.server_s.zip(y.server_s).map(|(p, q)| p + q),
            })
        }
        _ => None,
    };
    a.breakdown = match (a.breakdown.take(), &b.breakdown) {
        (Some(mut x), Some(y)) => {
            for (k, v) in y {
                *x.entry(k.clone()).or_insert(0.0) += v;
            }
            Some(x)
        }
        _ => None,
    };
    // A ratio to one run's baseline does not survive summing runs.
    a.baseline = None;
    a.limit = None;
    a.tls_baseline = None;
    a.vs_plain = None;
    Ok(())
}

/// Latency fits recomputed from the (merged) cases: mean latency against
/// bytes per call, per [`fit_label`], for `latency` echo/send sweeps.
pub fn refit(r: &Results) -> Vec<Fit> {
    let mut pts: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for c in &r.cases {
        if case_command(r, c) != "latency" || !matches!(c.params.mode.as_str(), "echo" | "send") {
            continue;
        }
        if let (Some(l), true) = (c.latency_us, c.calls > 0) {
            pts.entry(fit_label(c))
                .or_default()
                .push((c.bytes as f64 / c.calls as f64, l.mean));
        }
    }
    pts.iter()
        .filter_map(|(l, p)| Fit::from_points(l, p))
        .collect()
}
