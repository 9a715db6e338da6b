//! Turning [`Results`] into what people and scripts read: the human table
//! on stdout, and the JSON / CSV / interval-log files. Everything here is
//! a pure function of the results except the final writes.

use std::time::Duration;

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;

use crate::flags::OutputOpts;
use crate::table::{micros, num, Table};
use iiopbench_engine::hist::Latency;
use iiopbench_engine::results::{self, Baseline, Interval, Results};
use iiopbench_engine::units::format_size;
use iiopbench_engine::Error;

/// The placement lines of the header: as chosen, and as observed.
pub fn placement_lines(p: &iiopbench_engine::results::Placement) -> String {
    let list = iiopbench_engine::sysinfo::format_cpu_list;
    let how = match p.chosen.as_str() {
        "auto" => ", chosen by iiopbench; --pin none leaves it to the kernel",
        "none" => ", left to the kernel",
        _ => "",
    };
    let mut out = format!(
        "  placement: client CPUs {}, server CPUs {} ({}{how})\n",
        list(&p.client_cpus),
        p.server_cpus
            .as_deref()
            .map(list)
            .unwrap_or_else(|| "?".into()),
        p.relation
    );
    if let Some(o) = &p.observed {
        out.push_str(&format!(
            "  observed: client ran on CPUs {}, server on {}\n",
            list(&o.client_cpus),
            if o.server_cpus.is_empty() {
                "? (not on this machine, or not visible)".to_string()
            } else {
                list(&o.server_cpus)
            }
        ));
    }
    out
}

/// `value` with its 95 % interval across runs when there is one.
fn with_ci(
    value: String,
    iv: Option<&iiopbench_engine::results::Interval>,
    fmt: fn(f64) -> String,
) -> String {
    match iv.filter(|i| i.n >= 2) {
        Some(i) => format!("{value} ± {}", fmt(i.ci95)),
        None => value,
    }
}

/// The human summary: a header line saying what ran where, then one table
/// row per case, then fits and the failure line if any.
pub fn human(r: &Results) -> String {
    let mut out = String::new();
    let t = &r.target;
    out.push_str(&format!(
        "iiopbench {} {} — target: {} {}:{}{}{}\n",
        r.kind,
        r.tool.version,
        t.kind,
        t.host,
        t.port,
        t.orb_type
            .as_deref()
            .map(|o| format!(" ({o})"))
            .unwrap_or_default(),
        if t.giop_version.is_empty() {
            String::new()
        } else {
            format!(", GIOP {}", t.giop_version)
        }
    ));
    if let Some(iso) = &t.isolation {
        out.push_str(&format!("  server: {iso}\n"));
    }
    for hop in &t.forwards {
        out.push_str(&format!("  forwarded: {hop}\n"));
    }
    out.push_str(&placement_lines(&r.placement));
    if let Some(n) = r
        .params
        .get("runs")
        .and_then(|v| v.as_u64())
        .filter(|&n| n > 1)
    {
        out.push_str(&format!(
            "  runs: {n}, interleaved across cases; figures are mean ± 95 % interval over runs\n"
        ));
    }
    if let Some(w) = r.params.get("wait_strategy").and_then(|v| v.as_str()) {
        let spin = r.params.get("spin_limit_us").and_then(|v| v.as_f64());
        out.push_str(&format!(
            "  client waits: {}\n",
            match (w, spin) {
                ("read", _) => "on read (the calling thread blocks in recv)".to_string(),
                ("spin", Some(us)) => format!(
                    "spinning (polls without blocking for up to {:?}, then blocks in recv)",
                    std::time::Duration::from_secs_f64(us / 1e6)
                ),
                ("reactor", _) => "on the async runtime".to_string(),
                (other, _) => other.to_string(),
            }
        ));
    }
    if let Some(n) = r.params.get("oneway_buffer").and_then(|v| v.as_u64()) {
        out.push_str(&format!(
            "  oneways: buffered (SYNC_NONE), written {} at a time; Mbit/s not comparable with unbuffered runs\n",
            format_size(n)
        ));
    }
    if r.params.get("coalesce_oneways").and_then(|v| v.as_bool()) == Some(true) {
        out.push_str(
            "  oneways: one write each, joined by the kernel (Nagle on between oneways); Mbit/s not comparable with one-segment-per-call runs\n",
        );
    }
    match r
        .params
        .get("baseline_server_wait")
        .and_then(|v| v.as_str())
    {
        Some("epoll") => out.push_str(
            "  baseline: raw round trips whose server waits in epoll, as the reactor does\n",
        ),
        Some("recv") => out.push_str(
            "  baseline: raw round trips whose server blocks in recv, a thread per connection\n",
        ),
        Some("poll") if r.kind == "latency" => out.push_str(
            "  baseline: raw round trips whose server polls for each request before it blocks in recv, as this server does\n",
        ),
        Some("poll") => out.push_str(
            "  baseline: raw TCP whose server polls for its bytes before it blocks in recv: the fastest way this machine moves them\n",
        ),
        _ => {}
    }
    let has_lat = r.cases.iter().any(|c| c.latency_us.is_some());
    let has_recv = r.cases.iter().any(|c| c.receiver_throughput_mbps.is_some());
    let has_base = r.cases.iter().any(|c| c.baseline.is_some());
    let has_tls_base = r.cases.iter().any(|c| c.tls_baseline.is_some());
    let has_vs_plain = r.cases.iter().any(|c| c.vs_plain.is_some());
    let mut header = vec!["case", "size", "calls", "time", "calls/s", "Mbit/s"];
    if has_recv {
        header.push("recv Mbit/s");
    }
    if has_lat {
        header.extend(["mean ± σ", "p50", "p99", "p99.9", "max"]);
    }
    if has_base {
        header.push("vs tcp");
    }
    if has_tls_base {
        header.push("vs tls-tcp");
    }
    if has_vs_plain {
        header.push("tls/plain");
    }
    header.push("errors");
    let mut tab = Table::new(header);
    for c in &r.cases {
        let mut row = vec![
            c.name.clone(),
            format_size(c.params.size),
            c.calls.to_string(),
            format!("{} s", num(c.seconds)),
            num(c.calls_per_sec),
            with_ci(
                num(c.throughput_mbps),
                c.intervals.get("throughput_mbps"),
                num,
            ),
        ];
        if has_recv {
            row.push(
                c.receiver_throughput_mbps
                    .map(|v| with_ci(num(v), c.intervals.get("receiver_throughput_mbps"), num))
                    .unwrap_or_else(|| "-".into()),
            );
        }
        if has_lat {
            // With runs, the percentiles shown are the runs' means, so
            // that value and interval describe the same thing.
            let q = |k: &str, v: f64| match c.intervals.get(k).filter(|i| i.n >= 2) {
                Some(i) => format!("{} ± {}", micros(i.mean), micros(i.ci95)),
                None => micros(v),
            };
            match &c.latency_us {
                Some(l) => row.extend([
                    format!("{} ± {}", micros(l.mean), micros(l.stdev)),
                    q("p50", l.p50),
                    q("p99", l.p99),
                    q("p999", l.p999),
                    micros(l.max),
                ]),
                None => row.extend(std::iter::repeat_n("-".to_string(), 5)),
            }
        }
        if has_base {
            row.push(ratio_cell(c.baseline.as_ref(), c.intervals.get("vs_tcp")));
        }
        if has_tls_base {
            row.push(ratio_cell(
                c.tls_baseline.as_ref(),
                c.intervals.get("vs_tls_tcp"),
            ));
        }
        if has_vs_plain {
            row.push(ratio_cell(
                c.vs_plain.as_ref(),
                c.intervals.get("tls_vs_plain"),
            ));
        }
        let errors: u64 = c.errors.values().sum();
        row.push(errors.to_string());
        tab.row(row);
    }
    out.push_str(&tab.render());
    if let Some(n) = joining_note(r) {
        out.push_str(&n);
    }
    if let Some(n) = waking_note(r) {
        out.push_str(&n);
    }
    breakdown_table(r, &mut out);
    for f in &r.fits {
        out.push_str(&format!(
            "  fit {}: latency = {} + {:.5} µs/byte{} (R² {:.3}, {} points)\n",
            f.label,
            micros(f.a_us),
            f.b_us_per_byte,
            f.inv_b_mbytes_per_s
                .map(|v| format!(", 1/b = {} MB/s", num(v)))
                .unwrap_or_default(),
            f.r2,
            f.points
        ));
    }
    for c in &r.cases {
        for (kind, n) in &c.errors {
            out.push_str(&format!("  {}: {n} × {kind}\n", c.name));
        }
    }
    for w in r.quality.iter().flat_map(|q| &q.warnings) {
        out.push_str(&format!("  {w}\n"));
    }
    if let Some(f) = &r.outcome.failure {
        out.push_str(&format!("  INCOMPLETE: {f}\n"));
    }
    out
}

/// Why a oneway's "vs tcp" can be far below 1 at small sizes: the raw
/// stream (the physical limit) lets the kernel join its frames into full
/// segments, while these oneways went about one segment per call, as ORB
/// clients send them (TCP_NODELAY per call); on loopback the sender then
/// pays a whole segment's send and receive path per call. Said, from the
/// `calls_per_segment` of both, for the sizes where the stream joined at
/// least twice as many; `None` where nothing differs so.
fn joining_note(r: &Results) -> Option<String> {
    let cps = |c: &results::Case| c.extra.get("calls_per_segment").and_then(|v| v.as_f64());
    let buffer = |c: &results::Case| c.params.extra.get("oneway_buffer").cloned();
    let mut sizes: Vec<(u64, f64, f64)> = Vec::new();
    for c in r.cases.iter().filter(|c| c.params.mode == "oneway") {
        let (Some(_), Some(ours)) = (&c.baseline, cps(c)) else {
            continue;
        };
        let raw = r.cases.iter().find(|t| {
            t.params.mode == "tcp-stream"
                && t.params.size == c.params.size
                && buffer(t) == buffer(c)
        });
        let Some(raw) = raw.and_then(cps).filter(|&raw| raw >= 2.0 * ours) else {
            continue;
        };
        match sizes.iter_mut().find(|s| s.0 == c.params.size) {
            Some(s) => s.1 = s.1.max(ours),
            None => sizes.push((c.params.size, ours, raw)),
        }
    }
    if sizes.is_empty() {
        return None;
    }
    let each = sizes
        .iter()
        .map(|(size, ours, raw)| format!("{} {ours:.1} against {raw:.1}", format_size(*size)))
        .collect::<Vec<_>>()
        .join(", ");
    Some(format!(
        "  vs tcp, oneways: calls per TCP segment, ours against the raw stream's: {each}\n    \
         (the stream lets the kernel join small frames, Nagle on, as TTCP and iperf3 send; \
         these oneways went a segment each, TCP_NODELAY per call, as ORB clients send by default; \
         --coalesce-oneways sends as the stream does)\n"
    ))
}

/// Why a twoway's "vs tcp" can be far below 1 at small sizes: the raw
/// round trips' server polls for each request (the fastest round trip),
/// while a server that sleeps between requests is woken for each call, a
/// scheduler wake-up the raw ones never pay. Said when some twoway or echo
/// fell below 0.9x of such a baseline and the server is not known to poll
/// (our embedded server with `--server-spin-limit` polls as it does).
fn waking_note(r: &Results) -> Option<String> {
    let polled = r
        .params
        .get("baseline_server_wait")
        .and_then(|v| v.as_str())
        == Some("poll");
    let short = r.cases.iter().any(|c| {
        matches!(c.params.mode.as_str(), "twoway" | "echo")
            && c.baseline.as_ref().is_some_and(|b| b.ratio < 0.9)
    });
    if !polled || !short || r.target.server_spin_limit_us.is_some() {
        return None;
    }
    let t = &r.target;
    let how = match (t.kind.as_str(), t.server_model.as_deref()) {
        ("embedded", Some("reactor")) => "this server waits in epoll between requests",
        ("embedded", _) => "this server blocks in recv between requests",
        _ => "a server that sleeps between requests",
    };
    let fix = match t.kind.as_str() {
        "embedded" => "--server-model threads --server-spin-limit 1ms polls as it does",
        _ => "`iiopbench serve --server-model threads --spin-limit 1ms` polls as it does",
    };
    Some(format!(
        "  vs tcp, twoways: the raw round trips' server polls for each request, the fastest round trip; \
         {how} and is woken for each call\n    \
         ({fix}; bench latency --baseline sets beside it raw round trips that wait as it does)\n"
    ))
}

/// E0.5: µs per call in each phase, client then server, for the cases
/// that have a breakdown; the last column is the client's phases as a share
/// of the measured time.
/// A ratio to a baseline: with runs, the median run's ratio and the range
/// of the runs.
fn ratio_cell(b: Option<&Baseline>, runs: Option<&Interval>) -> String {
    b.map(|b| match runs.filter(|i| i.n >= 2) {
        Some(i) => format!("{:.2}x [{:.2}–{:.2}] {}", b.ratio, i.min, i.max, b.metric),
        None => format!("{:.2}x {}", b.ratio, b.metric),
    })
    .unwrap_or_else(|| "-".into())
}

fn breakdown_table(r: &Results, out: &mut String) {
    const CLIENT: [&str; 5] = ["marshal", "write", "wait", "read", "demarshal"];
    const SERVER: [&str; 5] = ["read", "decode", "upcall", "marshal", "write"];
    let cases: Vec<_> = r
        .cases
        .iter()
        .filter_map(|c| c.breakdown.as_ref().map(|b| (c, b)))
        .filter(|(c, _)| c.calls > 0)
        .collect();
    if cases.is_empty() {
        return;
    }
    let has_server = cases.iter().any(|(_, b)| b.contains_key("server_requests"));
    let mut header = vec!["breakdown (µs/call)".to_string()];
    header.extend(CLIENT.iter().map(|p| p.to_string()));
    if has_server {
        header.extend(SERVER.iter().map(|p| format!("srv {p}")));
    }
    header.push("of time".into());
    let mut tab = Table::new(header);
    for (c, b) in cases {
        let per = |k: &str, n: u64| {
            b.get(k)
                .map(|v| micros(v * 1e6 / n.max(1) as f64))
                .unwrap_or_else(|| "-".into())
        };
        let mut row = vec![c.name.clone()];
        row.extend(CLIENT.iter().map(|k| per(k, c.calls)));
        if has_server {
            let n = b.get("server_requests").copied().unwrap_or(0.0) as u64;
            row.extend(SERVER.iter().map(|k| per(&format!("server_{k}"), n)));
        }
        let client: f64 = CLIENT.iter().filter_map(|k| b.get(*k)).sum();
        row.push(format!("{:.0} %", 100.0 * client / c.seconds.max(1e-9)));
        tab.row(row);
    }
    out.push_str(&tab.render());
}

/// HdrHistogram interval log, one interval per case that has a histogram.
pub fn hlog(r: &Results) -> anyhow::Result<String> {
    let mut buf = Vec::new();
    let mut ser = V2DeflateSerializer::new();
    {
        let mut w = IntervalLogWriterBuilder::new()
            .add_comment(&format!("iiopbench {} {}", r.kind, r.started_at))
            .add_comment("values in nanoseconds")
            .with_max_value_divisor(1e3)
            .begin_log_with(&mut buf, &mut ser)?;
        let mut start = Duration::ZERO;
        for c in &r.cases {
            let Some(h) = &c.histogram else { continue };
            let l = Latency::from_base64(h)?;
            let tag: String = c
                .name
                .chars()
                .map(|ch| {
                    if matches!(ch, ',' | ' ' | '\r' | '\n') {
                        '_'
                    } else {
                        ch
                    }
                })
                .collect();
            let dur = Duration::from_secs_f64(c.seconds.max(0.0));
            w.write_histogram(l.inner(), start, dur, Tag::new(&tag))
                .map_err(|e| anyhow::anyhow!("interval log: {e:?}"))?;
            start += dur;
        }
    }
    Ok(String::from_utf8(buf)?)
}

/// Print (unless quiet) the human table and write every requested file.
pub fn emit(r: &Results, o: &OutputOpts) -> anyhow::Result<()> {
    emit_shown(r, o, human(r))
}

fn emit_shown(r: &Results, o: &OutputOpts, shown: String) -> anyhow::Result<()> {
    if o.shows_tables() {
        print!("{shown}");
    }
    if let Some(p) = &o.json {
        results::write_atomic(p, &results::to_json(r))?;
    }
    if let Some(p) = &o.csv {
        results::write_atomic(p, &results::to_csv(r))?;
    }
    if let Some(p) = &o.hlog {
        results::write_atomic(p, &hlog(r)?)?;
    }
    Ok(())
}

/// What a job's results show people: the human table, and for the
/// workloads the target's resolution time and the experiment's own
/// summary.
pub fn show(r: &Results) -> String {
    let mut out = human(r);
    let Some(summary) = summary_of(&r.kind) else {
        return out;
    };
    if let Some(s) = r.params.get("resolve_seconds").and_then(|v| v.as_f64()) {
        out.push_str(&format!(
            "  target resolved ({}) in {}\n",
            r.target.kind,
            micros(s * 1e6)
        ));
    }
    if !r.cases.is_empty() {
        out.push_str(&summary(r));
    }
    out
}

/// Emit a job's results ([`show`]n, in the command line's words) and
/// make the run's error the command's outcome.
pub fn finish(mut r: Results, o: &OutputOpts, err: Option<Error>) -> anyhow::Result<()> {
    crate::words::in_results(&mut r);
    let shown = show(&r);
    let written = emit_shown(&r, o, shown);
    match err {
        Some(e) => Err(anyhow::anyhow!(crate::words::flags(&e.to_string()))),
        None => written,
    }
}

/// The summary of the workload kinds, by results kind.
fn summary_of(kind: &str) -> Option<fn(&Results) -> String> {
    Some(match kind {
        "closed" => closed_summary,
        "setup" => setup_summary,
        "params" => params_summary,
        "dispatch" => dispatch_summary,
        "packing" => packing_summary,
        "balance" => balance_summary,
        _ => return None,
    })
}

/// The closed-system summary: X, R, Z with their CIs and Little's law.
pub fn closed_summary(r: &Results) -> String {
    let mut t = Table::new([
        "case",
        "X calls/s",
        "X ci",
        "R mean",
        "R ci",
        "Z mean",
        "C",
        "X·(R+Z)",
        "Little err",
        "stopped by",
    ]);
    for c in &r.cases {
        let e = &c.extra;
        let l = &e["littles_law"];
        t.row([
            c.name.clone(),
            num(c.calls_per_sec),
            ci_json(&e["x_ci95"]),
            micros(l["r_mean_us"].as_f64().unwrap_or(0.0)),
            ci_json(&e["r_ci95"]),
            micros(l["z_mean_us"].as_f64().unwrap_or(0.0)),
            num(l["clients"].as_f64().unwrap_or(0.0)),
            format!("{:.3}", l["x_times_r_plus_z"].as_f64().unwrap_or(0.0)),
            format!(
                "{:.2} %",
                l["relative_error"].as_f64().unwrap_or(0.0) * 100.0
            ),
            e["stopped_by"].as_str().unwrap_or("?").to_string(),
        ]);
    }
    format!("closed system (Little's law C = X·(R+Z)):\n{}", t.render())
}

/// T per server state, and relative to the running server in-process.
pub fn setup_summary(r: &Results) -> String {
    let base = r
        .cases
        .iter()
        .find(|c| c.params.mode == "in-process-running")
        .and_then(|c| c.latency_us.as_ref().map(|l| l.mean));
    let mut t = Table::new([
        "state",
        "set-ups",
        "T mean",
        "T ci",
        "T p50",
        "T max",
        "vs in-process",
    ]);
    for c in &r.cases {
        let l = c.latency_us.unwrap_or_default();
        t.row([
            c.params.mode.clone(),
            c.calls.to_string(),
            micros(l.mean),
            ci_json(&c.extra["t_ci95"]),
            micros(l.p50),
            micros(l.max),
            base.map(|b| format!("{:.1}x", l.mean / b.max(1e-9)))
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    format!(
        "connection set-up T (reference → first reply):\n{}",
        t.render()
    )
}

/// Per size: mean R of each option, its CI, ratio to option I, wire bytes.
pub fn params_summary(r: &Results) -> String {
    let mut t = Table::new([
        "elements",
        "option",
        "R mean",
        "R ci",
        "R / R(I)",
        "arg bytes",
        "padding",
    ]);
    for c in &r.cases {
        let e = &c.extra;
        t.row([
            c.params.extra["elements"].to_string(),
            c.params.mode.clone(),
            micros(e["r_mean_us"].as_f64().unwrap_or(0.0)),
            ci_json(&e["r_ci95"]),
            format!("{:.3}", e["ratio_to_option_i"].as_f64().unwrap_or(f64::NAN)),
            num(e["wire_arg_bytes"].as_f64().unwrap_or(0.0)),
            num(e["padding_bytes"].as_f64().unwrap_or(0.0)),
        ]);
    }
    format!(
        "parameter passing (R normalised to option I):\n{}",
        t.render()
    )
}

/// Mean R per model and position, and each model's slope.
pub fn dispatch_summary(r: &Results) -> String {
    let mut t = Table::new(["model", "position", "operation", "R mean", "R ci"]);
    for c in &r.cases {
        let e = &c.extra;
        t.row([
            c.params.mode.clone(),
            c.params.size.to_string(),
            c.params.extra["operation"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            micros(e["r_mean_us"].as_f64().unwrap_or(0.0)),
            ci_json(&e["r_ci95"]),
        ]);
    }
    let mut s = format!("dispatch latency by method position:\n{}", t.render());
    for f in &r.fits {
        s.push_str(&format!(
            "  {}: R = {} + {:.4} µs × position\n",
            f.label,
            micros(f.a_us),
            f.b_us_per_byte
        ));
    }
    s
}

/// Mean R per N and mode.
pub fn packing_summary(r: &Results) -> String {
    let mut t = Table::new(["N", "mode", "R mean", "R ci", "X calls/s", "X ci"]);
    for c in &r.cases {
        let e = &c.extra;
        t.row([
            c.params.size.to_string(),
            c.params.mode.clone(),
            micros(e["r_mean_us"].as_f64().unwrap_or(0.0)),
            ci_json(&e["r_ci95"]),
            num(c.calls_per_sec),
            ci_json(&e["x_ci95"]),
        ]);
    }
    format!("packing (mean response time per mode):\n{}", t.render())
}

/// X per strategy and relative to strategy 1.
pub fn balance_summary(r: &Results) -> String {
    let mut t = Table::new([
        "system",
        "service",
        "strategy",
        "X calls/s",
        "X ci",
        "vs strategy 1",
        "busy X",
        "non-busy X",
        "R mean",
    ]);
    for c in &r.cases {
        let (e, p) = (&c.extra, &c.params.extra);
        t.row([
            format!(
                "C={} S={}",
                p["clients"].as_u64().unwrap_or(0),
                p["replicas"].as_u64().unwrap_or(0)
            ),
            micros(p["service_us"].as_f64().unwrap_or(0.0)),
            c.params.mode.clone(),
            num(c.calls_per_sec),
            ci_json(&e["x_ci95"]),
            e["relative_to_strategy_1"]
                .as_f64()
                .map(|v| format!("{v:.3}"))
                .unwrap_or_else(|| "-".into()),
            num(e["busy_calls_per_sec"].as_f64().unwrap_or(0.0)),
            num(e["nonbusy_calls_per_sec"].as_f64().unwrap_or(0.0)),
            micros(e["r_mean_us"].as_f64().unwrap_or(0.0)),
        ]);
    }
    format!("load balancing (system throughput X):\n{}", t.render())
}

/// `±x %` of a CI as stored in a case's `extra` (JSON).
pub fn ci_json(v: &serde_json::Value) -> String {
    match v["relative"].as_f64() {
        Some(r) => format!("±{:.1} %", r * 100.0),
        None => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iiopbench_engine::results::{Case, Placement};

    fn results(cases: Vec<Case>) -> Results {
        let placement = Placement::new(vec![0], Some(vec![1]));
        let mut r = Results::new("throughput", Vec::new());
        r.placement = placement;
        r.cases = cases;
        r
    }

    fn case(name: &str, mode: &str, size: u64, cps: f64, base: bool) -> Case {
        let mut c = Case {
            name: name.into(),
            ..Default::default()
        };
        c.params.mode = mode.into();
        c.params.size = size;
        c.extra
            .insert("calls_per_segment".into(), serde_json::json!(cps));
        c.baseline = base.then(|| Baseline {
            metric: "throughput".into(),
            baseline_value: 1.0,
            ratio: 0.2,
        });
        c
    }

    /// The note names each size where the raw stream joined at least
    /// twice as many frames per segment as the oneways went, and only
    /// those; buffered oneways are set beside the stream that wrote the
    /// same batches.
    #[test]
    fn the_joining_note_names_the_sizes_where_the_stream_joined_frames() {
        let mut r = results(vec![
            case("oneway octet 1KiB", "oneway", 1024, 1.0, true),
            case("oneway long 1KiB", "oneway", 1024, 1.1, true),
            case("oneway octet 64KiB", "oneway", 65536, 0.5, true),
            case("twoway octet 1KiB", "twoway", 1024, 1.0, true),
            case("tcp stream 1KiB", "tcp-stream", 1024, 30.0, false),
            case("tcp stream 64KiB", "tcp-stream", 65536, 0.5, false),
        ]);
        let note = joining_note(&r).expect("1 KiB was joined");
        assert!(note.contains("stream's: 1KiB 1.1 against 30.0\n"), "{note}");
        assert!(note.contains("--coalesce-oneways"), "{note}");
        assert!(human(&r).contains(&note));
        // Joined oneways (coalesced), or no baseline: nothing to say.
        r.cases[0]
            .extra
            .insert("calls_per_segment".into(), serde_json::json!(25.0));
        r.cases[1].baseline = None;
        assert_eq!(joining_note(&r), None);
        // A buffered point is set beside the batched stream only.
        let mut ours = case("oneway octet 1KiB", "oneway", 1024, 1.0, true);
        ours.params
            .extra
            .insert("oneway_buffer".into(), serde_json::json!(65536));
        let mut batched = case("tcp stream 1KiB", "tcp-stream", 1024, 1.0, false);
        batched.params.extra = ours.params.extra.clone();
        let r = results(vec![
            ours,
            batched,
            case("tcp stream 1KiB", "tcp-stream", 1024, 30.0, false),
        ]);
        assert_eq!(joining_note(&r), None);
    }

    /// The wake-up note comes only where a twoway fell short of round trips
    /// whose server polled, and the server measured is not known to poll;
    /// it says how the embedded server waited and how to make it poll.
    #[test]
    fn the_waking_note_explains_twoways_short_of_polled_round_trips() {
        let mut r = results(vec![
            case("twoway octet 1KiB", "twoway", 1024, 1.0, true),
            case(
                "tcp pingpong-ack 1KiB",
                "tcp-pingpong-ack",
                1024,
                1.0,
                false,
            ),
        ]);
        r.target.kind = "embedded".into();
        r.target.server_model = Some("reactor".into());
        assert_eq!(waking_note(&r), None, "no baseline_server_wait recorded");
        r.params
            .insert("baseline_server_wait".into(), serde_json::json!("poll"));
        let note = waking_note(&r).expect("0.2x of polled round trips");
        assert!(
            note.contains("this server waits in epoll between requests"),
            "{note}"
        );
        assert!(note.contains("--server-spin-limit 1ms"), "{note}");
        assert!(human(&r).contains(&note));
        r.target.server_model = Some("threads".into());
        assert!(waking_note(&r).unwrap().contains("blocks in recv"));
        // A server that polls, or a ratio near 1, or a raw server that
        // slept too: nothing to explain.
        r.target.server_spin_limit_us = Some(1000.0);
        assert_eq!(waking_note(&r), None);
        r.target.server_spin_limit_us = None;
        r.cases[0].baseline.as_mut().unwrap().ratio = 0.95;
        assert_eq!(waking_note(&r), None);
        r.cases[0].baseline.as_mut().unwrap().ratio = 0.2;
        r.params
            .insert("baseline_server_wait".into(), serde_json::json!("recv"));
        assert_eq!(waking_note(&r), None);
        // A remote target: how to start our server polling.
        r.params
            .insert("baseline_server_wait".into(), serde_json::json!("poll"));
        r.target.kind = "ior".into();
        let note = waking_note(&r).unwrap();
        assert!(
            note.contains("a server that sleeps between requests"),
            "{note}"
        );
        assert!(
            note.contains("iiopbench serve --server-model threads --spin-limit 1ms"),
            "{note}"
        );
    }
}
