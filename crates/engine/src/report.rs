//! What a report shows (`iiopbench report`): the figures computed from
//! results files, as data — x/y charts, stacked or interval bars and
//! pass/fail matrices with their titles, one-sentence captions and file
//! names — and the summary rows of every case. Drawing them (SVG) and
//! laying out the pages are the command line's.
//!
//! - throughput against payload size (log2 axis), one figure per command,
//!   mode and path (seed 000's Figures 2–7), one series per type and file;
//! - HDR percentile distribution curves of every histogram;
//! - mean latency against bytes per call with the a + b·bytes fit line;
//! - time breakdown per phase (µs per call), stacked bars;
//! - figures with confidence intervals (`extra` keys `K` with `K_ci95`
//!   half-widths or `K_ci` = [lo, hi]: workload R and X);
//! - the interop pass/fail matrix;
//! - agent runs: each agent's rate and percentiles beside the total.
//!
//! Several files go on the same figures; their series are labelled by
//! target (suite files) and file name.

use std::collections::BTreeMap;
use std::path::Path;

use crate::hist::Latency;
use crate::merge::{case_command, case_placement, fit_label, tag};
use crate::results::{Case, Fit, Results};

/// One figure of a report.
#[derive(Debug, Clone)]
pub struct Figure {
    /// File name within the report directory (`fig-01-….svg`).
    pub file: String,
    pub title: String,
    /// One sentence: what the figure shows.
    pub what: String,
    /// What to draw.
    pub plot: Plot,
}

/// The kinds of figure.
#[derive(Debug, Clone)]
pub enum Plot {
    /// An x/y chart.
    Chart(Chart),
    /// Horizontal (stacked) bars, one row per bar, against `x_desc`.
    Bars { x_desc: String, rows: Vec<Bar> },
    /// A grid of labelled cells (`cells[row][col]`: `pass 3/3`, `FAIL`…).
    Matrix {
        rows: Vec<String>,
        cols: Vec<String>,
        cells: Vec<Vec<String>>,
    },
}

impl Plot {
    fn bars(x_desc: &str, rows: Vec<Bar>) -> Plot {
        Plot::Bars {
            x_desc: x_desc.to_string(),
            rows,
        }
    }
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Points joined by a line.
    LineMarkers,
    /// Points only.
    Markers,
    /// A dashed-looking thin line (fits), no markers.
    Line,
}

/// One series of an x/y chart.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    pub style: Style,
    /// Series sharing a colour index get the same colour (one element
    /// type across sources; a fit and its points).
    pub color: usize,
    /// Marker shape index (one per source): circle, triangle, square,
    /// cross, then again.
    pub marker: usize,
    /// Whiskers `(x, lo, hi)`: where a point is a figure over several
    /// runs, its 95 % interval (mean ± half-width, Student's t).
    pub whiskers: Vec<(f64, f64, f64)>,
}

/// The x axis of a chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XAxis {
    /// Payload sizes in bytes on a log2 scale, labelled 1KiB, 2KiB…
    Log2Size,
    /// Linear.
    Linear,
    /// Percentiles on the HDR scale: x = log10(1/(1−p)), labelled 90%,
    /// 99%, 99.9%…; points are given as percentiles (0–100).
    Percentile,
}

/// An x/y chart.
#[derive(Debug, Clone)]
pub struct Chart {
    pub title: String,
    pub x_desc: String,
    pub y_desc: String,
    pub x: XAxis,
    /// Logarithmic (base 10) y axis, for long-tailed values.
    pub log_y: bool,
    pub series: Vec<Series>,
}

/// One bar of a horizontal bar chart: a label and stacked segments
/// (segment name, value, and optionally an interval drawn over the bar).
#[derive(Debug, Clone)]
pub struct Bar {
    pub label: String,
    pub segments: Vec<(String, f64)>,
    pub interval: Option<(f64, f64)>,
}

/// Parameters that never split figures (they are series or labels).
const NOT_GROUPING: [&str; 7] = [
    "placement",
    "type",
    "elements",
    "target",
    "command",
    "suite_case",
    "size",
];

/// One case with where it came from.
struct Entry<'a> {
    file: usize,
    r: &'a Results,
    c: &'a Case,
    /// Series prefix: target and/or file name (empty with one plain file).
    origin: String,
    /// Where it ran, when the inputs hold more than one placement: then
    /// figures are split by placement, so none compares placements.
    placement: Option<String>,
}

/// The distinct placements of the inputs' cases, in first-seen order.
pub fn placements(inputs: &[(String, Results)]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (_, r) in inputs {
        for c in &r.cases {
            let p = case_placement(r, c);
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// A file name without directory and extension.
pub fn stem(name: &str) -> String {
    Path::new(name)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| name.to_string())
}

fn entries(inputs: &[(String, Results)]) -> Vec<Entry<'_>> {
    // Several files: series are named by target alone when every target
    // label belongs to one file (ours.json + omniorb.json), else by file
    // name (and target).
    let mut owner: BTreeMap<&str, usize> = BTreeMap::new();
    let mut shared = false;
    for (i, (_, r)) in inputs.iter().enumerate() {
        for c in &r.cases {
            match tag(c, "target") {
                Some(t) => shared |= *owner.entry(t).or_insert(i) != i,
                None => shared = true,
            }
        }
    }
    let many = inputs.len() > 1 && shared;
    let mixed = placements(inputs).len() > 1;
    inputs
        .iter()
        .enumerate()
        .flat_map(|(i, (name, r))| {
            r.cases.iter().map(move |c| {
                let origin = match (many, tag(c, "target")) {
                    (true, Some(t)) => format!("{}/{t}", stem(name)),
                    (true, None) => stem(name),
                    (false, Some(t)) => t.to_string(),
                    (false, None) => String::new(),
                };
                Entry {
                    file: i,
                    r,
                    c,
                    origin,
                    placement: mixed.then(|| case_placement(r, c)),
                }
            })
        })
        .collect()
}

/// The figure a case belongs to: command, mode, suite case and every
/// parameter that is not a series label.
fn group_title(e: &Entry) -> String {
    let mut parts = vec![case_command(e.r, e.c).to_string(), e.c.params.mode.clone()];
    for (k, v) in &e.c.params.extra {
        if NOT_GROUPING.contains(&k.as_str()) {
            continue;
        }
        let v = v
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| v.to_string());
        parts.push(format!("{k}={v}"));
    }
    if let Some(s) = tag(e.c, "suite_case") {
        parts.push(format!("[{s}]"));
    }
    if let Some(p) = &e.placement {
        parts.push(format!("placed {p}"));
    }
    parts.join(" · ")
}

fn join_label(parts: &[&str]) -> String {
    parts
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
}

fn slug(s: &str) -> String {
    let mut out = String::new();
    for ch in s.chars() {
        if ch.is_ascii_alphanumeric() {
            out.push(ch.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').chars().take(100).collect()
}

/// Group entries by figure title, keeping first-seen order.
fn groups<'a, 'b>(
    es: &'b [Entry<'a>],
    keep: impl Fn(&Entry) -> bool,
) -> Vec<(String, Vec<&'b Entry<'a>>)> {
    let mut out: Vec<(String, Vec<&'b Entry<'a>>)> = Vec::new();
    for e in es.iter().filter(|e| keep(e)) {
        let t = group_title(e);
        match out.iter_mut().find(|(k, _)| *k == t) {
            Some((_, v)) => v.push(e),
            None => out.push((t, vec![e])),
        }
    }
    out
}

/// Series in first-seen order, keyed by label.
fn series_of<'a, 'b>(
    es: &[&'b Entry<'a>],
    label: impl Fn(&Entry) -> String,
) -> Vec<(String, Vec<&'b Entry<'a>>)> {
    let mut out: Vec<(String, Vec<&'b Entry<'a>>)> = Vec::new();
    for e in es {
        let l = label(e);
        match out.iter_mut().find(|(k, _)| *k == l) {
            Some((_, v)) => v.push(e),
            None => out.push((l, vec![*e])),
        }
    }
    out
}

fn throughput_figures(
    es: &[Entry],
    figs: &mut Vec<(String, String, Plot)>,
) -> crate::error::Result<()> {
    let gs = groups(es, |e| {
        matches!(case_command(e.r, e.c), "throughput" | "tcp")
            && e.c.calls > 0
            && e.c.throughput_mbps > 0.0
    });
    for (title, g) in gs {
        let ss = series_of(&g, |e| join_label(&[&e.origin, &e.c.params.ty]));
        let (mut types, mut origins) = (Vec::new(), Vec::new());
        let series = ss
            .into_iter()
            .map(|(label, v)| {
                let mut pts: Vec<(f64, f64)> = v
                    .iter()
                    .map(|e| (e.c.params.size as f64, e.c.throughput_mbps))
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                Series {
                    label,
                    points: pts,
                    style: Style::LineMarkers,
                    color: index_of(&mut types, &v[0].c.params.ty),
                    marker: index_of(&mut origins, &v[0].origin),
                    whiskers: v
                        .iter()
                        .filter_map(|e| run_interval(e.c, "throughput_mbps"))
                        .collect(),
                }
            })
            .collect();
        let t = format!("Throughput: {title}");
        let svg = Plot::Chart(Chart {
            title: t.clone(),
            x_desc: "payload bytes per call (log2)".into(),
            y_desc: "sender Mbit/s".into(),
            x: XAxis::Log2Size,
            log_y: false,
            series,
        });
        figs.push((
            t,
            "Sender-side payload throughput (Mbit/s) against bytes per call, one line per element type and source; whiskers, where a case ran more than once (--runs), span the 95 % interval of its runs.".into(),
            svg,
        ));
    }
    Ok(())
}

fn percentile_figures(
    es: &[Entry],
    figs: &mut Vec<(String, String, Plot)>,
) -> crate::error::Result<()> {
    let mut gs: Vec<(String, Vec<&Entry>)> = Vec::new();
    // One figure per group and size, one curve per source and type.
    // (A sweep's steps are drawn against throughput instead.)
    let shown = |e: &Entry| e.c.histogram.is_some() && e.c.calls > 0 && e.r.kind != "sweep";
    for (title, g) in groups(es, shown) {
        for e in g {
            let t = match e.c.params.size {
                0 => title.clone(),
                n => format!("{title} · {}", crate::units::format_size(n)),
            };
            match gs.iter_mut().find(|(k, _)| *k == t) {
                Some((_, v)) => v.push(e),
                None => gs.push((t, vec![e])),
            }
        }
    }
    for (title, g) in gs {
        let mut series = Vec::new();
        for (i, e) in g.iter().enumerate() {
            let h = Latency::from_base64(e.c.histogram.as_deref().unwrap_or_default()).map_err(
                |err| {
                    crate::error::fail!(Local, "case {:?}: histogram undecodable: {err}", e.c.name)
                },
            )?;
            if h.is_empty() {
                continue;
            }
            series.push(Series {
                label: join_label(&[&e.origin, &e.c.params.ty]),
                points: h.percentile_curve(),
                style: Style::Line,
                color: i,
                marker: 0,
                whiskers: Vec::new(),
            });
        }
        if series.is_empty() {
            continue;
        }
        let t = format!("Latency percentiles: {title}");
        let svg = percentile_chart(&t, series);
        figs.push((
            t,
            "HDR percentile distribution: call latency (µs, log scale) at each percentile, the x axis stretched towards the tail (90 %, 99 %, 99.9 %…), one curve per source and type.".into(),
            svg,
        ));
    }
    Ok(())
}

/// Latency (µs, log scale) against percentiles on the HDR axis.
fn percentile_chart(title: &str, series: Vec<Series>) -> Plot {
    Plot::Chart(Chart {
        title: title.to_string(),
        x_desc: "percentile".into(),
        y_desc: "latency µs".into(),
        x: XAxis::Percentile,
        log_y: true,
        series,
    })
}

/// The whisker of a case's figure `key` over its runs: `(size, lo, hi)`,
/// the 95 % interval about the runs' mean; none for a single run.
fn run_interval(c: &Case, key: &str) -> Option<(f64, f64, f64)> {
    let i = c.intervals.get(key)?;
    (i.n >= 2 && i.ci95.is_finite()).then(|| {
        (
            c.params.size as f64,
            (i.mean - i.ci95).max(0.0),
            i.mean + i.ci95,
        )
    })
}

/// Position of `v` in `list`, appended when new (stable colours and
/// markers per type and per source within a figure).
fn index_of(list: &mut Vec<String>, v: &str) -> usize {
    match list.iter().position(|x| x == v) {
        Some(i) => i,
        None => {
            list.push(v.to_string());
            list.len() - 1
        }
    }
}

fn fit_for<'a>(r: &'a Results, c: &Case) -> Option<&'a Fit> {
    let l = fit_label(c);
    r.fits.iter().find(|f| f.label == l)
}

fn latency_size_figures(
    es: &[Entry],
    figs: &mut Vec<(String, String, Plot)>,
) -> crate::error::Result<()> {
    let gs = groups(es, |e| {
        matches!(case_command(e.r, e.c), "latency" | "tcp")
            && matches!(e.c.params.mode.as_str(), "echo" | "send" | "pingpong")
            && e.c.latency_us.is_some()
            && e.c.calls > 0
    });
    for (title, g) in gs {
        let mut sizes: Vec<u64> = g.iter().map(|e| e.c.params.size).collect();
        sizes.sort();
        sizes.dedup();
        if sizes.len() < 2 {
            continue;
        }
        let mut series = Vec::new();
        let mut origins = Vec::new();
        for (i, (label, v)) in series_of(&g, |e| join_label(&[&e.origin, &e.c.params.ty]))
            .into_iter()
            .enumerate()
        {
            let mut pts: Vec<(f64, f64)> = v
                .iter()
                .filter_map(|e| {
                    e.c.latency_us
                        .map(|l| (e.c.bytes as f64 / e.c.calls as f64, l.mean))
                })
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let xmax = pts.last().map(|p| p.0).unwrap_or(0.0);
            let (fit, computed) = match fit_for(v[0].r, v[0].c) {
                Some(f) => (Some(f.clone()), false),
                None => (Fit::from_points(&label, &pts), true),
            };
            let marker = index_of(&mut origins, &v[0].origin);
            series.push(Series {
                label: label.clone(),
                points: pts,
                style: Style::Markers,
                color: i,
                marker,
                whiskers: Vec::new(),
            });
            if let Some(f) = fit {
                series.push(Series {
                    label: format!(
                        "{} fit{}: {:.1} µs + {:.3} ns/B",
                        label,
                        if computed { " (computed)" } else { "" },
                        f.a_us,
                        f.b_us_per_byte * 1e3
                    ),
                    points: vec![(0.0, f.a_us), (xmax, f.a_us + f.b_us_per_byte * xmax)],
                    style: Style::Line,
                    color: i,
                    marker,
                    whiskers: Vec::new(),
                });
            }
        }
        let t = format!("Latency vs size: {title}");
        let svg = Plot::Chart(Chart {
            title: t.clone(),
            x_desc: "payload bytes per call".into(),
            y_desc: "mean latency µs".into(),
            x: XAxis::Linear,
            log_y: false,
            series,
        });
        figs.push((
            t,
            "Mean round-trip latency (µs) against payload bytes per call (points) with the least-squares line a + b·bytes (from the results' fits): a is the fixed cost per call, 1/b the marginal transfer rate.".into(),
            svg,
        ));
    }
    Ok(())
}

fn breakdown_figures(
    es: &[Entry],
    figs: &mut Vec<(String, String, Plot)>,
) -> crate::error::Result<()> {
    let gs = groups(es, |e| e.c.breakdown.is_some() && e.c.calls > 0);
    for (title, g) in gs {
        let mut rows: Vec<Bar> = Vec::new();
        for e in &g {
            let size = crate::units::format_size(e.c.params.size);
            let label = join_label(&[&e.origin, &e.c.params.ty, &size]);
            let b = e.c.breakdown.as_ref().expect("grouped by breakdown");
            // The client's phases add up to a call; the server's run during
            // the client's `wait`, so they get a bar of their own.
            rows.push(Bar {
                label: label.clone(),
                segments: b
                    .iter()
                    .filter(|(k, _)| !k.starts_with("server_"))
                    .map(|(k, v)| (k.clone(), v / e.c.calls as f64 * 1e6))
                    .collect(),
                interval: None,
            });
            if let Some(&n) = b.get("server_requests").filter(|n| **n > 0.0) {
                rows.push(Bar {
                    label: format!("{label} · server"),
                    segments: b
                        .iter()
                        .filter_map(|(k, v)| {
                            let phase = k.strip_prefix("server_")?;
                            (phase != "requests").then(|| (format!("server {phase}"), v / n * 1e6))
                        })
                        .collect(),
                    interval: None,
                });
            }
        }
        let t = format!("Time breakdown: {title}");
        let svg = Plot::bars("µs per call", rows);
        figs.push((
            t,
            "Where the time of one call goes, per phase (µs per call, stacked).".into(),
            svg,
        ));
    }
    Ok(())
}

/// Every interval figure of a case as `(name, value, lo, hi)`: an
/// `extra` entry `K_ci95` that is `{mean, half_width, …}` (the workload
/// engine's form, docs/workloads.md), or a number `K` with a half-width
/// `K_ci95` or a `K_ci` of `[lo, hi]` / `{lo, hi}` beside it.
fn intervals(c: &Case) -> Vec<(String, f64, f64, f64)> {
    let mut out = Vec::new();
    for (k, val) in &c.extra {
        let num = |key: &str| c.extra.get(key).and_then(|v| v.as_f64());
        if let Some(base) = k.strip_suffix("_ci95") {
            if let (Some(m), Some(h)) = (
                val.get("mean").and_then(|v| v.as_f64()),
                val.get("half_width").and_then(|v| v.as_f64()),
            ) {
                out.push((interval_name(base), m, m - h, m + h));
            } else if let (Some(v), Some(h)) = (num(base), val.as_f64()) {
                out.push((interval_name(base), v, v - h, v + h));
            }
        } else if let Some(base) = k.strip_suffix("_ci") {
            let lohi = match val {
                serde_json::Value::Array(a) if a.len() == 2 => a[0].as_f64().zip(a[1].as_f64()),
                serde_json::Value::Object(o) => o
                    .get("lo")
                    .and_then(|v| v.as_f64())
                    .zip(o.get("hi").and_then(|v| v.as_f64())),
                _ => None,
            };
            if let (Some(v), Some((lo, hi))) = (num(base), lohi) {
                out.push((interval_name(base), v, lo, hi));
            }
        }
    }
    out
}

/// Display name of an interval key: the workload engine's `r`, `x`, `z`
/// with their units, others as they are.
fn interval_name(base: &str) -> String {
    match base {
        "r" => "R (response time, µs)".into(),
        "x" => "X (throughput, calls/s)".into(),
        "z" => "Z (think time, µs)".into(),
        other => other.to_string(),
    }
}

fn interval_figures(
    es: &[Entry],
    figs: &mut Vec<(String, String, Plot)>,
) -> crate::error::Result<()> {
    let gs = groups(es, |e| !intervals(e.c).is_empty());
    for (title, g) in gs {
        let mut keys: Vec<String> = g
            .iter()
            .flat_map(|e| intervals(e.c).into_iter().map(|i| i.0))
            .collect();
        keys.sort();
        keys.dedup();
        for k in keys {
            let rows: Vec<Bar> = g
                .iter()
                .filter_map(|e| {
                    let (_, v, lo, hi) = intervals(e.c).into_iter().find(|i| i.0 == k)?;
                    Some(Bar {
                        label: join_label(&[&e.origin, &e.c.name]),
                        segments: vec![(k.clone(), v)],
                        interval: Some((lo, hi)),
                    })
                })
                .collect();
            let t = format!("{k} with 95% interval: {title}");
            let svg = Plot::bars(&k, rows);
            figs.push((
                t,
                format!("{k} per case (bar: mean) with its 95 % confidence interval (whiskers)."),
                svg,
            ));
        }
    }
    Ok(())
}

fn result_text(c: &Case) -> String {
    c.extra
        .get("result")
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string())
        })
        .unwrap_or_default()
}

fn interop_figures(inputs: &[(String, Results)], figs: &mut Vec<(String, String, Plot)>) {
    // The vendor matrix: client × server.
    for (name, r) in inputs.iter().filter(|(_, r)| r.kind == "interop-matrix") {
        let mut clients: Vec<String> = Vec::new();
        let mut servers: Vec<String> = Vec::new();
        let get = |c: &Case, k: &str| {
            c.extra
                .get(k)
                .and_then(|v| v.as_str())
                .unwrap_or("?")
                .to_string()
        };
        for c in &r.cases {
            let (cl, sv) = (get(c, "client"), get(c, "server"));
            if !clients.contains(&cl) {
                clients.push(cl);
            }
            if !servers.contains(&sv) {
                servers.push(sv);
            }
        }
        let mut cells = vec![vec![String::new(); servers.len()]; clients.len()];
        for c in &r.cases {
            let i = clients
                .iter()
                .position(|x| *x == get(c, "client"))
                .unwrap_or(0);
            let j = servers
                .iter()
                .position(|x| *x == get(c, "server"))
                .unwrap_or(0);
            cells[i][j] = result_text(c);
        }
        let t = format!(
            "Interop matrix: {} (rows: clients, columns: servers)",
            stem(name)
        );
        let svg = Plot::Matrix {
            rows: clients,
            cols: servers,
            cells,
        };
        figs.push((
            t,
            "Each vendor client against each server: checks passed / counted.".into(),
            svg,
        ));
    }
    // Conformance checks: check × file.
    let files: Vec<&(String, Results)> =
        inputs.iter().filter(|(_, r)| r.kind == "interop").collect();
    if files.is_empty() {
        return;
    }
    let cols: Vec<String> = files.iter().map(|(n, _)| stem(n)).collect();
    let mut rows: Vec<String> = Vec::new();
    for (_, r) in &files {
        for c in &r.cases {
            if !rows.contains(&c.name) {
                rows.push(c.name.clone());
            }
        }
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            files
                .iter()
                .map(|(_, r)| {
                    r.cases
                        .iter()
                        .find(|c| &c.name == row)
                        .map(result_text)
                        .unwrap_or_default()
                })
                .collect()
        })
        .collect();
    let t = "Interop checks: pass / fail / note per check and file".to_string();
    let svg = Plot::Matrix { rows, cols, cells };
    figs.push((
        t,
        "Every conformance check against each target (one column per results file).".into(),
        svg,
    ));
}

/// Agent runs (schema 3, `iiopbench agents`): per merged case, each
/// agent's rate and the total as bars, and each agent's latency
/// percentiles with the combined curve.
fn agent_figures(
    inputs: &[(String, Results)],
    figs: &mut Vec<(String, String, Plot)>,
) -> crate::error::Result<()> {
    for (file, r) in inputs {
        let Some(info) = &r.agents else { continue };
        let name = |id: u32| {
            info.agents
                .iter()
                .find(|a| a.id == id)
                .and_then(|a| a.name.clone())
                .map(|n| format!("agent {id} ({n})"))
                .unwrap_or_else(|| format!("agent {id}"))
        };
        for c in r.cases.iter().filter(|c| !c.agents.is_empty()) {
            let head = format!("{} · {}", stem(file), c.name);
            let mut rows: Vec<Bar> = c
                .agents
                .iter()
                .map(|a| Bar {
                    label: name(a.agent),
                    segments: vec![("calls/s".into(), a.calls_per_sec)],
                    interval: None,
                })
                .collect();
            rows.push(Bar {
                label: format!("total of {}", c.agents.len()),
                segments: vec![("calls/s".into(), c.calls_per_sec)],
                interval: None,
            });
            let t = format!("Agents' rates: {head}");
            figs.push((
                t.clone(),
                format!(
                    "Calls per second of each agent and their sum ({} of {} agents ran{}).",
                    info.ran,
                    info.requested,
                    if info.partial { ": partial run" } else { "" }
                ),
                Plot::bars("calls/s", rows),
            ));
            let mut series = Vec::new();
            for (i, a) in c.agents.iter().enumerate() {
                if let Some(h) = a.histogram.as_deref() {
                    let h = Latency::from_base64(h).map_err(|e| {
                        crate::error::fail!(
                            Local,
                            "case {:?} agent {}: histogram undecodable: {e}",
                            c.name,
                            a.agent
                        )
                    })?;
                    series.push(Series {
                        label: name(a.agent),
                        points: h.percentile_curve(),
                        style: Style::Line,
                        color: i,
                        marker: 0,
                        whiskers: Vec::new(),
                    });
                }
            }
            if let Some(h) = c.histogram.as_deref() {
                let h = Latency::from_base64(h).map_err(|e| {
                    crate::error::fail!(Local, "case {:?}: histogram undecodable: {e}", c.name)
                })?;
                series.push(Series {
                    label: "all agents".into(),
                    points: h.percentile_curve(),
                    style: Style::LineMarkers,
                    color: c.agents.len(),
                    marker: 0,
                    whiskers: Vec::new(),
                });
            }
            if series.is_empty() {
                continue;
            }
            let t = format!("Agents' latency percentiles: {head}");
            let svg = percentile_chart(&t, series);
            figs.push((
                t,
                "Each agent's latency at each percentile, and all agents' calls together (the merged histogram).".into(),
                svg,
            ));
        }
    }
    Ok(())
}

/// Sweeps (`bench sweep`): per results file, its steps' p50, p99, p99.9
/// and max latency against the calls/s each achieved, the knee marked; a
/// run of several servers (`--servers`) gets one figure per server, its
/// rounds' steps together, each round's knee marked.
fn sweep_figures(inputs: &[(String, Results)], figs: &mut Vec<(String, String, Plot)>) {
    for (file, r) in inputs.iter().filter(|(_, r)| r.kind == "sweep") {
        let who = match r.target.orb_type.as_deref() {
            Some(o) => format!("{} ({o})", stem(file)),
            None => stem(file),
        };
        let sweeps = r.params.get("sweeps").and_then(|v| v.as_array());
        let Some(sweeps) = sweeps else {
            let cases: Vec<&Case> = r.cases.iter().collect();
            let knees: Vec<&serde_json::Value> = r.params.get("knee").into_iter().collect();
            sweep_figure(r, &cases, &knees, &who, false, figs);
            continue;
        };
        let mut servers: Vec<&str> = Vec::new();
        for sw in sweeps {
            if let Some(n) = sw.get("server").and_then(|v| v.as_str()) {
                if !servers.contains(&n) {
                    servers.push(n);
                }
            }
        }
        for srv in servers {
            let cases: Vec<&Case> = r
                .cases
                .iter()
                .filter(|c| tag(c, "server") == Some(srv))
                .collect();
            let mine: Vec<&serde_json::Value> = sweeps
                .iter()
                .filter(|sw| sw.get("server").and_then(|v| v.as_str()) == Some(srv))
                .collect();
            let knees: Vec<&serde_json::Value> =
                mine.iter().filter_map(|sw| sw.get("knee")).collect();
            sweep_figure(
                r,
                &cases,
                &knees,
                &format!("{srv}, {who}"),
                mine.len() > 1,
                figs,
            );
        }
    }
}

/// One sweep figure: `cases`' steps, `knees` marked (each round's, for a
/// server swept in several: then the steps are points, not a line).
fn sweep_figure(
    r: &Results,
    cases: &[&Case],
    knees: &[&serde_json::Value],
    who: &str,
    rounds: bool,
    figs: &mut Vec<(String, String, Plot)>,
) {
    let mode = r
        .params
        .get("mode")
        .and_then(|v| v.as_str())
        .unwrap_or("open");
    // A connections sweep offers one rate throughout: its x is the
    // connections held.
    let by_conns = mode == "connections";
    let x_of = |c: &Case| match by_conns {
        true => c.extra.get("load").and_then(|v| v.as_f64()),
        false => Some(c.calls_per_sec),
    };
    let mut steps: Vec<(f64, crate::hist::LatencySummary)> = cases
        .iter()
        .filter_map(|c| Some((x_of(c)?, c.latency_us?)))
        .collect();
    if steps.is_empty() {
        return;
    }
    // One sweep's line follows its steps (an overloaded step may achieve
    // less than the one before: the curve bends back); several rounds'
    // steps are points in x order.
    if rounds {
        steps.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    type Quantile = fn(&crate::hist::LatencySummary) -> f64;
    let quantiles: [(&str, Quantile); 4] = [
        ("p50", |l| l.p50),
        ("p99", |l| l.p99),
        ("p99.9", |l| l.p999),
        ("max", |l| l.max),
    ];
    let mut series: Vec<Series> = quantiles
        .iter()
        .enumerate()
        .map(|(i, (name, q))| Series {
            label: (*name).to_string(),
            points: steps.iter().map(|(x, l)| (*x, q(l))).collect(),
            style: if rounds {
                Style::Markers
            } else {
                Style::LineMarkers
            },
            color: i,
            marker: i,
            whiskers: Vec::new(),
        })
        .collect();
    let bound = r.params.get("p99_bound_us").and_then(|v| v.as_f64());
    if let (Some(b), Some((x0, x1))) = (
        bound,
        steps
            .iter()
            .map(|s| s.0)
            .fold(None, |m: Option<(f64, f64)>, x| {
                Some(m.map_or((x, x), |(a, b)| (a.min(x), b.max(x))))
            }),
    ) {
        series.push(Series {
            label: format!("p99 bound {}", crate::units::micros(b)),
            points: vec![(x0, b), (x1, b)],
            style: Style::Line,
            color: 4,
            marker: 0,
            whiskers: Vec::new(),
        });
    }
    for k in knees.iter().filter(|k| !k.is_null()) {
        let g = |n: &str| k.get(n).and_then(|v| v.as_f64());
        let x = if by_conns {
            g("load")
        } else {
            g("achieved_per_s")
        };
        if let (Some(x), Some(y)) = (x, g("p99_us")) {
            let unit = if by_conns { "connections" } else { "calls/s" };
            series.push(Series {
                label: format!("knee {} {unit}", crate::units::num(x)),
                points: vec![(x, y)],
                style: Style::Markers,
                color: 5,
                marker: 2,
                whiskers: Vec::new(),
            });
        }
    }
    let t = match by_conns {
        true => format!("Sweep (connections): latency vs connections held: {who}"),
        false => format!("Sweep ({mode}): latency vs throughput: {who}"),
    };
    figs.push((
        t.clone(),
        "Latency percentiles (µs, log scale) of each step of the sweep against the calls/s it achieved, with the p99 bound and the knee (the highest load that tripped no stop rule).".into(),
        Plot::Chart(Chart {
            title: t,
            x_desc: match by_conns {
                true => "connections held open".into(),
                false => "achieved calls/s".into(),
            },
            y_desc: "latency µs".into(),
            x: XAxis::Linear,
            log_y: true,
            series,
        }),
    ));
}

/// Every figure for these results files, as data to draw.
pub fn figures(inputs: &[(String, Results)]) -> crate::error::Result<Vec<Figure>> {
    // A comparison's cases are drawn as its sections' ratios instead.
    let es: Vec<Entry> = entries(inputs)
        .into_iter()
        .filter(|e| e.r.comparison.is_none())
        .collect();
    let mut raw = Vec::new();
    comparison_figures(inputs, &mut raw);
    throughput_figures(&es, &mut raw)?;
    latency_size_figures(&es, &mut raw)?;
    percentile_figures(&es, &mut raw)?;
    breakdown_figures(&es, &mut raw)?;
    interval_figures(&es, &mut raw)?;
    interop_figures(inputs, &mut raw);
    agent_figures(inputs, &mut raw)?;
    sweep_figures(inputs, &mut raw);
    Ok(raw
        .into_iter()
        .enumerate()
        .map(|(i, (title, what, plot))| Figure {
            file: format!("fig-{:02}-{}.svg", i + 1, slug(&title)),
            title,
            what,
            plot,
        })
        .collect())
}

/// One section of a cross-ORB comparison (`orbs compare`), laid out as
/// rows under [`COMPARISON_HEAD`].
#[derive(Debug, Clone, PartialEq)]
pub struct ComparisonSection {
    /// `client`, `server` … (a [`Ratio`](crate::results::Ratio)'s section).
    pub id: String,
    pub title: String,
    /// What its ratios divide.
    pub what: String,
    pub rows: Vec<[String; 6]>,
}

/// The columns of a [`ComparisonSection`]'s rows.
pub const COMPARISON_HEAD: [&str; 6] = [
    "case",
    "divided",
    "values (medians)",
    "ratio",
    "range over rounds",
    "rounds",
];

/// A figure to three significant digits, whole numbers in full (`12.3`,
/// `0.0123`, `1234`).
fn sig3(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = (2 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.digits$}")
}

/// The sections of a comparison's results, in the report's order (empty
/// for other results).
pub fn comparison_sections(r: &Results) -> Vec<ComparisonSection> {
    let Some(cmp) = &r.comparison else {
        return Vec::new();
    };
    crate::orbs_compare::SECTIONS
        .iter()
        .filter_map(|(id, title, what)| {
            let rows: Vec<[String; 6]> = cmp
                .ratios
                .iter()
                .filter(|x| x.section == *id)
                .map(|x| {
                    [
                        x.case.clone(),
                        format!("{} / {}", x.num, x.den),
                        format!("{} / {} {}", sig3(x.num_value), sig3(x.den_value), x.unit),
                        format!(
                            "{:.2}x{}",
                            x.ratio.median,
                            if x.lower_is_better {
                                " (lower is better)"
                            } else {
                                ""
                            }
                        ),
                        format!("{:.2}x–{:.2}x", x.ratio.min, x.ratio.max),
                        x.ratio.n.to_string(),
                    ]
                })
                .collect();
            (!rows.is_empty()).then(|| ComparisonSection {
                id: id.to_string(),
                title: title.to_string(),
                what: what.to_string(),
                rows,
            })
        })
        .collect()
}

/// Each comparison section's ratios as bars (the median of the rounds)
/// with whiskers over the rounds' range.
fn comparison_figures(inputs: &[(String, Results)], figs: &mut Vec<(String, String, Plot)>) {
    for (name, r) in inputs {
        let Some(cmp) = &r.comparison else {
            continue;
        };
        for (id, title, what) in crate::orbs_compare::SECTIONS {
            let rows: Vec<Bar> = cmp
                .ratios
                .iter()
                .filter(|x| x.section == id)
                .map(|x| Bar {
                    label: format!("{}: {} / {}", x.case, x.num, x.den),
                    segments: vec![("ratio".into(), x.ratio.median)],
                    interval: Some((x.ratio.min, x.ratio.max)),
                })
                .collect();
            if rows.is_empty() {
                continue;
            }
            figs.push((
                format!("{title}: {}", stem(name)),
                format!(
                    "{what}. Bar: the median of the per-round ratios; whiskers: their range over the rounds; 1.0 = equal."
                ),
                Plot::bars("ratio", rows),
            ));
        }
    }
}

/// One row per case of every input, under [`SUMMARY_HEAD`].
pub fn summary_rows(inputs: &[(String, Results)]) -> Vec<[String; 9]> {
    let es = entries(inputs);
    es.iter()
        .map(|e| {
            let l = e.c.latency_us;
            let errors: u64 = e.c.errors.values().sum();
            [
                stem(&inputs[e.file].0),
                tag(e.c, "target").unwrap_or(&e.r.target.kind).to_string(),
                e.c.name.clone(),
                e.c.calls.to_string(),
                format!("{:.1}", e.c.throughput_mbps),
                l.map(|l| format!("{:.1}", l.p50)).unwrap_or_default(),
                l.map(|l| format!("{:.1}", l.p99)).unwrap_or_default(),
                errors.to_string(),
                case_placement(e.r, e.c),
            ]
        })
        .collect()
}

/// The columns of [`summary_rows`].
pub const SUMMARY_HEAD: [&str; 9] = [
    "file",
    "target",
    "case",
    "calls",
    "Mbit/s",
    "p50 µs",
    "p99 µs",
    "errors",
    "placement",
];

/// The warning a report carries when its inputs ran placed differently.
pub fn placement_warning(inputs: &[(String, Results)]) -> Option<String> {
    let p = placements(inputs);
    (p.len() > 1).then(|| {
        format!(
            "These results ran with {} different placements ({}): placement moves a loopback round trip more than any ORB does, so each figure holds one placement only and cases placed differently are not compared.",
            p.len(),
            p.join("; ")
        )
    })
}

/// The noise warnings each input's run printed under its table ("busy
/// machine", "runs disagree" …), as `file: warning`, so a noisy run does
/// not look clean on the page.
pub fn run_warnings(inputs: &[(String, Results)]) -> Vec<String> {
    inputs
        .iter()
        .flat_map(|(n, r)| {
            r.quality
                .iter()
                .flat_map(|q| q.warnings.iter())
                .map(move |w| {
                    let w = w.strip_prefix("Warning: ").unwrap_or(w);
                    format!("{}: {w}", stem(n))
                })
        })
        .collect()
}

/// One line about an input: kind, title, target, start, host, cases,
/// and whether it is incomplete.
pub fn describe(name: &str, r: &Results) -> String {
    let t = &r.target;
    let mut s = format!(
        "{}: {} ({}), target {} {}, started {}, host {} ({} cores), {} cases",
        stem(name),
        r.kind,
        r.params
            .get("title")
            .and_then(|v| v.as_str())
            .unwrap_or("-"),
        t.kind,
        t.orb_type.as_deref().unwrap_or(""),
        r.started_at,
        r.host.hostname,
        r.host.cores,
        r.cases.len()
    );
    if let Some(f) = &r.outcome.failure {
        s.push_str(&format!("; INCOMPLETE: {f}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interop::report::matrix_results;
    use crate::interop::report::Cell;

    fn comparison() -> Results {
        use crate::results::{Comparison, Interval, Quality, Ratio};
        let mut r = Results::new(crate::orbs_compare::KIND, vec![]);
        let ratio = |section: &str, case: &str, rs: &[f64], lower| Ratio {
            section: section.into(),
            case: case.into(),
            num: "iiopbench client".into(),
            den: "omniORB client".into(),
            num_value: 1234.5,
            den_value: 0.0123,
            unit: "Mbit/s".into(),
            ratio: Interval::of(rs),
            lower_is_better: lower,
        };
        r.comparison = Some(Comparison {
            servers: vec!["ours".into(), "omniorb".into()],
            ratios: vec![
                // Out of the report's order: sections come in theirs.
                ratio("latency", "ping p50", &[1.2, 1.3], true),
                ratio(
                    "client",
                    "oneway octet 1KiB on omniORB's server",
                    &[0.9, 1.1, 1.05],
                    false,
                ),
            ],
            ..Comparison::default()
        });
        r.quality = Some(Quality {
            warnings: vec!["busy machine during the comparison: steal 3.0 %".into()],
            runs: vec![],
        });
        r
    }

    #[test]
    fn a_comparison_is_laid_out_by_section_with_each_ratios_range() {
        let r = comparison();
        let secs = comparison_sections(&r);
        let ids: Vec<&str> = secs.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["client", "latency"]);
        assert_eq!(secs[0].title, "1. Client against client");
        assert_eq!(
            secs[0].rows[0],
            [
                "oneway octet 1KiB on omniORB's server",
                "iiopbench client / omniORB client",
                "1234 / 0.0123 Mbit/s",
                "1.05x",
                "0.90x–1.10x",
                "3"
            ]
        );
        assert_eq!(secs[1].rows[0][3], "1.25x (lower is better)");
        assert!(comparison_sections(&Results::new("throughput", vec![])).is_empty());
        // A figure per section, each bar's whiskers the rounds' range; no
        // generic figures from the comparison's cases.
        let figs = figures(&[("runs/c.json".into(), r.clone())]).unwrap();
        assert_eq!(figs.len(), 2);
        assert_eq!(figs[0].title, "1. Client against client: c");
        let Plot::Bars { rows, .. } = &figs[0].plot else {
            panic!("{:?}", figs[0].plot)
        };
        assert_eq!(rows[0].interval, Some((0.9, 1.1)));
        assert_eq!(
            run_warnings(&[("a.json".into(), r)]),
            ["a: busy machine during the comparison: steal 3.0 %"]
        );
    }

    #[test]
    fn an_interop_matrix_becomes_a_grid_of_its_cells() {
        let cell = |client: &str, server: &str, passed, failed| Cell {
            client: client.into(),
            server: server.into(),
            passed,
            failed,
            ..Cell::default()
        };
        let r = matrix_results(
            &[
                cell("ours", "ours", 4, 0),
                cell("ours", "jacorb", 3, 1),
                cell("omniorb", "ours", 2, 0),
            ],
            &[],
            "2026-01-01T00:00:00Z",
        );
        let figs = figures(&[("runs/m.json".into(), r)]).unwrap();
        assert_eq!(figs.len(), 1);
        let f = &figs[0];
        assert_eq!(
            f.title,
            "Interop matrix: m (rows: clients, columns: servers)"
        );
        assert_eq!(
            f.file,
            "fig-01-interop-matrix-m-rows-clients-columns-servers.svg"
        );
        let Plot::Matrix { rows, cols, cells } = &f.plot else {
            panic!("{:?}", f.plot)
        };
        assert_eq!(rows, &["ours", "omniorb"]);
        assert_eq!(cols, &["ours", "jacorb"]);
        assert_eq!(
            cells,
            &[
                vec!["pass 4/4".to_string(), "FAIL 3/4".into()],
                vec!["pass 2/2".into(), String::new()],
            ]
        );
    }

    #[test]
    fn throughput_over_runs_gets_whiskers_and_the_runs_warnings_reach_the_page() {
        use crate::results::{CaseParams, Interval, Quality};
        let case = |size: u64, mbps: f64, runs: &[f64]| {
            let mut c = Case {
                name: format!("twoway octet {size}"),
                params: CaseParams {
                    ty: "octet".into(),
                    size,
                    mode: "twoway".into(),
                    extra: BTreeMap::new(),
                },
                calls: 100,
                bytes: 100 * size,
                seconds: 1.0,
                throughput_mbps: mbps,
                ..Default::default()
            };
            c.intervals
                .insert("throughput_mbps".into(), Interval::of(runs));
            c
        };
        let mut r = Results::new("throughput", Vec::new());
        r.cases = vec![
            case(1024, 100.0, &[90.0, 100.0, 110.0]),
            // One run: no interval to draw.
            case(2048, 180.0, &[180.0]),
        ];
        r.quality = Some(Quality {
            warnings: vec!["Warning: busy machine: load 9.1 on 2 CPUs".into()],
            runs: Vec::new(),
        });
        let inputs = [("runs/tp.json".to_string(), r)];
        let figs = figures(&inputs).unwrap();
        let Plot::Chart(ch) = &figs[0].plot else {
            panic!("{:?}", figs[0].plot)
        };
        assert!(figs[0].title.starts_with("Throughput"), "{}", figs[0].title);
        let w = &ch.series[0].whiskers;
        assert_eq!(w.len(), 1, "{w:?}");
        let i = Interval::of(&[90.0, 100.0, 110.0]);
        assert_eq!(w[0], (1024.0, i.mean - i.ci95, i.mean + i.ci95));
        // Student's t with 2 degrees of freedom: 4.30 × 10 / √3.
        assert!((i.ci95 - 24.8).abs() < 0.1, "{}", i.ci95);
        assert_eq!(
            run_warnings(&inputs),
            ["tp: busy machine: load 9.1 on 2 CPUs"]
        );
    }
}
