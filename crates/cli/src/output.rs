//! Turning [`Results`] into what people and scripts read: the human table
//! on stdout, and the JSON / CSV / interval-log files. Everything here is
//! a pure function of the results except the final writes.

use std::time::Duration;

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;

use crate::flags::OutputOpts;
use crate::table::{count3, micros, micros3, num, pm, ratio_pm, sig3, Table};
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

/// How the human output is drawn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    /// Every column of the full table (`--wide`); else tables that fit
    /// [`WIDTH`] columns.
    pub wide: bool,
    /// ANSI colour: only when stdout is a terminal and `NO_COLOR` is unset.
    pub color: bool,
}

impl Style {
    /// The style these output options ask for, on this stdout.
    pub fn of(o: &OutputOpts) -> Style {
        use std::io::IsTerminal;
        Style {
            wide: o.wide,
            color: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

/// The widest line of the default output, in characters.
pub const WIDTH: usize = 100;

/// The human summary as it fits [`WIDTH`] columns, without colour.
pub fn human(r: &Results) -> String {
    human_with(r, Style::default())
}

/// The header of the human summary: what ran where, and how.
fn header(r: &Results, st: Style) -> String {
    let mut out = String::new();
    let t = &r.target;
    out.push_str(&format!(
        "iiopbench {} {} — target: {} {}{}{}\n",
        r.kind,
        r.tool.version,
        t.kind,
        // A run of several servers names them, with no one address.
        match t.port {
            0 => t.host.clone(),
            p => format!("{}:{p}", t.host),
        },
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
            "  runs: {n}, interleaved across cases; ± is the 95 % interval over the {n} runs{}\n",
            if st.wide { "" } else { "; time is per run" }
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
            "  oneways: buffered (SYNC_NONE), written {} at a time: compare only with buffered runs\n",
            format_size(n)
        ));
    }
    if r.params.get("coalesce_oneways").and_then(|v| v.as_bool()) == Some(true) {
        out.push_str(
            "  oneways: joined into segments by the kernel (Nagle on): compare only with coalesced runs\n",
        );
    }
    baseline_lines(r, &mut out);
    out
}

/// The human summary: a header saying what ran where, then the cases
/// (by default a table per mode that fits [`WIDTH`] columns, with
/// `wide` every column in one table), then the limit and verdict lines
/// under a comparison, fits, and the warnings and failure if any.
pub fn human_with(r: &Results, st: Style) -> String {
    let mut out = header(r, st);
    if !st.wide {
        out = wrap_lines(&out, WIDTH);
        compact_tables(r, &mut out);
        limit_lines(r, &mut out);
        if let Some(v) = verdict(r) {
            out.push_str(&st.paint("1", wrap_lines(&v, WIDTH).trim_end()));
            out.push('\n');
        }
    } else {
        wide_table(r, &mut out);
        if let Some(n) = joining_note(r) {
            out.push_str(&n);
        }
        if let Some(n) = waking_note(r) {
            out.push_str(&n);
        }
    }
    breakdown_table(r, st, &mut out);
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
    out.push_str(&closing_lines(r, st));
    out
}

/// The lines under a table: each case's errors by kind, the warnings (one
/// line each), and the failure that left the run incomplete.
fn closing_lines(r: &Results, st: Style) -> String {
    let mut out = String::new();
    for c in &r.cases {
        for (kind, n) in &c.errors {
            out.push_str(&one_line(&format!("  {}: {n} × {kind}", c.name), st));
        }
    }
    let warnings: Vec<&String> = r.quality.iter().flat_map(|q| &q.warnings).collect();
    let mut cut = false;
    for w in &warnings {
        let line = one_line(&format!("  {w}"), st);
        cut |= line.ends_with("…\n");
        out.push_str(&st.paint("33", line.trim_end_matches('\n')));
        out.push('\n');
    }
    if cut {
        out.push_str("  (each warning in full: --json FILE, under quality.warnings)\n");
    }
    if let Some(f) = &r.outcome.failure {
        let line = one_line(&format!("  INCOMPLETE: {f}"), st);
        out.push_str(&st.paint("31", line.trim_end_matches('\n')));
        out.push('\n');
    }
    out
}

/// `line` and a newline; by default cut at a word to fit [`WIDTH`]
/// columns, ending in `…` where it was cut.
pub fn one_line(line: &str, st: Style) -> String {
    if st.wide || line.chars().count() <= WIDTH {
        return format!("{line}\n");
    }
    let head: String = line.chars().take(WIDTH - 1).collect();
    let at = head.rfind(' ').filter(|&i| i > 20).unwrap_or(head.len());
    format!("{}…\n", head[..at].trim_end_matches([',', ';', ':']))
}

/// Each line of `text` longer than `max` characters broken at spaces,
/// its continuation indented by four.
pub fn wrap_lines(text: &str, max: usize) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut rest = line.to_string();
        let mut first = true;
        loop {
            let indent = if first { "" } else { "    " };
            let room = max - indent.len();
            if rest.chars().count() <= room {
                out.push_str(&format!("{indent}{rest}\n"));
                break;
            }
            let head: String = rest.chars().take(room + 1).collect();
            let Some(at) = head.rfind(' ').filter(|&i| i > 0) else {
                out.push_str(&format!("{indent}{rest}\n"));
                break;
            };
            out.push_str(&format!("{indent}{}\n", rest[..at].trim_end()));
            rest = rest[at..].trim_start().to_string();
            first = false;
        }
    }
    out
}

/// What the raw TCP beside the cases was, under `vs tcp`.
fn baseline_lines(r: &Results, out: &mut String) {
    let p = |k: &str| r.params.get(k).and_then(|v| v.as_str());
    let server = match p("baseline_server_wait") {
        Some("epoll") => Some("its server waits in epoll, as the reactor does"),
        Some("reactor") => Some(
            "driven by the same loop on as many connections, its server one tokio thread (as our reactor)",
        ),
        Some("recv") => Some("its server blocks in recv, a thread per connection"),
        Some("poll") if r.kind == "latency" || p("limit_server_wait").is_some() => {
            Some("its server polls for each request before it blocks in recv, as this one does")
        }
        Some("poll") => Some("its server polls before it blocks in recv: the fastest way"),
        _ => None,
    };
    let writes = match p("baseline_stream_writes") {
        Some("separate") => Some("oneways a segment each (TCP_NODELAY)"),
        Some("joined") => Some("oneways joined by the kernel, as ours were"),
        _ => None,
    };
    if server.is_none() && writes.is_none() {
        return;
    }
    let what = [writes, server].into_iter().flatten().collect::<Vec<_>>();
    let like = if p("limit_server_wait").is_some() || r.kind == "latency" {
        "raw TCP written and waited for as ours: "
    } else {
        "raw TCP: "
    };
    out.push_str(&format!("  vs tcp: {like}{}\n", what.join("; ")));
}

/// The GIOP cases of a comparison: those with a ratio to raw TCP.
fn compared(r: &Results) -> impl Iterator<Item = &results::Case> {
    r.cases.iter().filter(|c| c.baseline.is_some())
}

/// One line per mode and size whose cases have a ratio to the physical
/// limit: the limit's figure and the cases' ratios to it.
fn limit_lines(r: &Results, out: &mut String) {
    let mut groups: Vec<(&str, u64, f64, Vec<f64>)> = Vec::new();
    for c in r.cases.iter() {
        let Some(l) = &c.limit else { continue };
        match groups
            .iter_mut()
            .find(|g| g.0 == c.params.mode && g.1 == c.params.size)
        {
            Some(g) => g.3.push(l.ratio),
            None => groups.push((
                &c.params.mode,
                c.params.size,
                l.baseline_value,
                vec![l.ratio],
            )),
        }
    }
    for (mode, size, limit, ratios) in groups {
        let what = if mode == "oneway" {
            "fastest raw TCP stream"
        } else {
            "fastest raw round trip (polled)"
        };
        out.push_str(&format!(
            "  limit {mode} {}: {what} {} Mbit/s; ours {} of it\n",
            format_size(size),
            sig3(limit),
            ratio_range(&ratios)
        ));
    }
}

/// `0.823x`, or `0.61x–0.95x` for several.
fn ratio_range(ratios: &[f64]) -> String {
    let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if ratios.len() < 2 || sig3(lo) == sig3(hi) {
        format!("{}x", sig3(lo))
    } else {
        format!("{}x–{}x", sig3(lo), sig3(hi))
    }
}

/// The comparison in one line, as hyperfine ends its output: which ran
/// faster, ours or raw TCP that writes and waits as ours, and how many
/// times (the median over the cases; with one case its 95 % interval
/// over the runs, with several their range, said the same way).
fn verdict(r: &Results) -> Option<String> {
    // Per case: how many times faster ours ran than raw TCP (a p50 ratio
    // is time, so its inverse), and that figure's interval.
    let mut speed: Vec<(f64, Option<f64>)> = compared(r)
        .filter_map(|c| {
            let b = c.baseline.as_ref()?;
            let ci = c
                .intervals
                .get("vs_tcp")
                .filter(|i| i.n >= 2)
                .map(|i| i.ci95);
            let q = b.ratio;
            (q.is_finite() && q > 0.0).then(|| {
                if b.metric == "p50" {
                    (1.0 / q, ci.map(|c| c / (q * q)))
                } else {
                    (q, ci)
                }
            })
        })
        .collect();
    if speed.is_empty() {
        return None;
    }
    speed.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = speed.len();
    let median = if n % 2 == 1 {
        speed[n / 2].0
    } else {
        (speed[n / 2 - 1].0 + speed[n / 2].0) / 2.0
    };
    let latency = compared(r).any(|c| c.baseline.as_ref().is_some_and(|b| b.metric == "p50"));
    let like = r.params.contains_key("limit_server_wait") || r.kind == "latency";
    let tcp = match (latency, like) {
        (true, true) => "raw round trips waiting as ours",
        (true, false) => "raw round trips",
        (false, true) => "raw TCP written as ours",
        (false, false) => "raw TCP",
    };
    let (fast, slow, times, ci) = if median >= 1.0 {
        ("ours", tcp, median, speed[0].1)
    } else {
        // The inverse's interval: ci / q².
        (
            tcp,
            "ours",
            1.0 / median,
            speed[0].1.map(|c| c / (median * median)),
        )
    };
    let how = if n == 1 {
        crate::table::pm(times, ci)
    } else {
        sig3(times)
    };
    // The cases' range, as many times faster as the headline says.
    let (lo, hi) = if median >= 1.0 {
        (speed[0].0, speed[n - 1].0)
    } else {
        (1.0 / speed[n - 1].0, 1.0 / speed[0].0)
    };
    let spread = if n > 1 {
        format!(" (median of {n} cases: {}–{})", sig3(lo), sig3(hi))
    } else {
        String::new()
    };
    Some(format!(
        "  {fast} ran {how} times faster than {slow}{spread}"
    ))
}

/// The cases as tables that fit [`WIDTH`] columns: one per mode (in the
/// order the modes first appear), latency columns only where the mode
/// has latencies, an errors column only where a case has errors.
fn compact_tables(r: &Results, out: &mut String) {
    let mut modes: Vec<&str> = Vec::new();
    for c in &r.cases {
        if !modes.contains(&c.params.mode.as_str()) {
            modes.push(&c.params.mode);
        }
    }
    for mode in modes {
        let cases: Vec<&results::Case> = r.cases.iter().filter(|c| c.params.mode == mode).collect();
        let has = |f: fn(&results::Case) -> bool| cases.iter().any(|c| f(c));
        let has_lat = has(|c| c.latency_us.is_some());
        let has_base = has(|c| c.baseline.is_some());
        let has_tls_base = has(|c| c.tls_baseline.is_some());
        let has_vs_plain = has(|c| c.vs_plain.is_some());
        let has_errors = has(|c| c.errors.values().sum::<u64>() > 0);
        let has_bytes = has(|c| c.bytes > 0);
        let mut header = vec!["case", "time", "calls/s"];
        if has_bytes {
            header.push("Mbit/s");
        }
        if has_lat {
            header.extend(["p50", "p99"]);
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
        if has_errors {
            header.push("errors");
        }
        let mut tab = Table::new(header);
        for c in cases {
            let iv = |k: &str| c.intervals.get(k).filter(|i| i.n >= 2);
            let runs = c.runs.len().max(1) as f64;
            let mut row = vec![
                c.name.clone(),
                format!("{} s", sig3(c.seconds / runs)),
                count3(c.calls_per_sec),
            ];
            if has_bytes {
                row.push(pm(c.throughput_mbps, iv("throughput_mbps").map(|i| i.ci95)));
            }
            if has_lat {
                // With runs, the runs' mean percentile and its interval.
                let q = |k: &str, v: f64| match iv(k) {
                    Some(i) => micros3(i.mean, Some(i.ci95)),
                    None => micros3(v, None),
                };
                match &c.latency_us {
                    Some(l) => row.extend([q("p50", l.p50), q("p99", l.p99)]),
                    None => row.extend(["-".to_string(), "-".to_string()]),
                }
            }
            let ratio = |b: Option<&Baseline>, k: &str| {
                b.map(|b| ratio_pm(b.ratio, iv(k).map(|i| i.ci95)))
                    .unwrap_or_else(|| "-".into())
            };
            if has_base {
                row.push(ratio(c.baseline.as_ref(), "vs_tcp"));
            }
            if has_tls_base {
                row.push(ratio(c.tls_baseline.as_ref(), "vs_tls_tcp"));
            }
            if has_vs_plain {
                row.push(ratio(c.vs_plain.as_ref(), "tls_vs_plain"));
            }
            if has_errors {
                row.push(c.errors.values().sum::<u64>().to_string());
            }
            tab.row(row);
        }
        tab.fit(WIDTH, &["time", "calls/s", "p99"]);
        out.push('\n');
        out.push_str(&tab.render());
    }
}

/// Today's full table: every case in one, every column.
fn wide_table(r: &Results, out: &mut String) {
    let has_lat = r.cases.iter().any(|c| c.latency_us.is_some());
    let has_recv = r.cases.iter().any(|c| c.receiver_throughput_mbps.is_some());
    let has_base = r.cases.iter().any(|c| c.baseline.is_some());
    let has_limit = r.cases.iter().any(|c| c.limit.is_some());
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
    if has_limit {
        header.push("vs limit");
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
        if has_limit {
            row.push(ratio_cell(c.limit.as_ref(), c.intervals.get("vs_limit")));
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
}

/// Why a oneway's "vs limit" can be far below 1 at small sizes: the
/// fastest raw stream lets the kernel join its frames into full segments,
/// while these oneways went about one segment per call, as ORB clients
/// send them (TCP_NODELAY per call); on loopback the sender then pays a
/// whole segment's send and receive path per call. Said (with `--wide`),
/// from the `calls_per_segment` of both, for the sizes where the stream
/// joined at least twice as many; `None` where nothing differs so.
fn joining_note(r: &Results) -> Option<String> {
    let cps = |c: &results::Case| c.extra.get("calls_per_segment").and_then(|v| v.as_f64());
    let buffer = |c: &results::Case| c.params.extra.get("oneway_buffer").cloned();
    let is_limit = |c: &results::Case| c.params.extra.contains_key("limit");
    let mut sizes: Vec<(u64, f64, f64)> = Vec::new();
    for c in r.cases.iter().filter(|c| c.params.mode == "oneway") {
        let (Some(_), Some(ours)) = (&c.limit, cps(c)) else {
            continue;
        };
        let raw = r.cases.iter().find(|t| {
            t.params.mode == "tcp-stream"
                && is_limit(t)
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
        "  vs limit, oneways: calls per TCP segment, ours against the fastest stream's: {each}\n    \
         (the stream lets the kernel join small frames, Nagle on, as TTCP and iperf3 send; \
         these oneways went a segment each, TCP_NODELAY per call, as ORB clients send by default; \
         --coalesce-oneways sends as the stream does)\n"
    ))
}

/// Why a twoway's "vs limit" can be far below 1 at small sizes: the
/// fastest round trips' server polls for each request, while a server
/// that sleeps between requests is woken for each call, a scheduler
/// wake-up the polled ones never pay. Said (with `--wide`) when some
/// twoway or echo fell below 0.9x of such a limit and the server is not
/// known to poll (our embedded server with `--server-spin-limit` polls
/// as it does).
fn waking_note(r: &Results) -> Option<String> {
    let polled = r.params.get("limit_server_wait").and_then(|v| v.as_str()) == Some("poll");
    let short = r.cases.iter().any(|c| {
        matches!(c.params.mode.as_str(), "twoway" | "echo")
            && c.limit.as_ref().is_some_and(|b| b.ratio < 0.9)
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
        "  vs limit, twoways: the fastest round trips' server polls for each request; \
         {how} and is woken for each call\n    \
         ({fix}; vs tcp sets beside it raw round trips that wait as it does)\n"
    ))
}

/// A ratio to a baseline: with runs, the median run's ratio and the range
/// of the runs.
fn ratio_cell(b: Option<&Baseline>, runs: Option<&Interval>) -> String {
    b.map(|b| match runs.filter(|i| i.n >= 2) {
        Some(i) => format!("{:.2}x [{:.2}–{:.2}] {}", b.ratio, i.min, i.max, b.metric),
        None => format!("{:.2}x {}", b.ratio, b.metric),
    })
    .unwrap_or_else(|| "-".into())
}

/// µs per call in each phase, client then server, for the cases that
/// have a breakdown; the client's table ends with its phases as a share
/// of the measured time.
fn breakdown_table(r: &Results, st: Style, out: &mut String) {
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
    // Wide: client and server phases in one table; else one each.
    let one = st.wide;
    let fmt = |us: f64| {
        if one {
            micros(us)
        } else {
            micros3(us, None)
        }
    };
    let mut header = vec!["breakdown (µs/call)".to_string()];
    header.extend(CLIENT.iter().map(|p| p.to_string()));
    let server_header = || SERVER.iter().map(|p| format!("srv {p}"));
    if has_server && one {
        header.extend(server_header());
    }
    header.push("of time".into());
    let mut tab = Table::new(header);
    let mut srv_tab =
        Table::new(std::iter::once("server (µs/call)".to_string()).chain(server_header()));
    for (c, b) in cases {
        let per = |k: &str, n: u64| {
            b.get(k)
                .map(|v| fmt(v * 1e6 / n.max(1) as f64))
                .unwrap_or_else(|| "-".into())
        };
        let mut row = vec![c.name.clone()];
        row.extend(CLIENT.iter().map(|k| per(k, c.calls)));
        if has_server {
            let n = b.get("server_requests").copied().unwrap_or(0.0) as u64;
            let srv = SERVER.iter().map(|k| per(&format!("server_{k}"), n));
            if one {
                row.extend(srv);
            } else {
                srv_tab.row(std::iter::once(c.name.clone()).chain(srv));
            }
        }
        let client: f64 = CLIENT.iter().filter_map(|k| b.get(*k)).sum();
        row.push(format!("{:.0} %", 100.0 * client / c.seconds.max(1e-9)));
        tab.row(row);
    }
    if !one {
        out.push('\n');
    }
    out.push_str(&tab.render());
    if !srv_tab.is_empty() {
        out.push('\n');
        out.push_str(&srv_tab.render());
    }
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
    emit_shown(r, o, human_with(r, Style::of(o)))
}

fn emit_shown(r: &Results, o: &OutputOpts, shown: String) -> anyhow::Result<()> {
    if o.shows_tables() {
        out!("{shown}");
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
pub fn show(r: &Results, st: Style) -> String {
    if r.kind == "sweep" {
        return wrap_lines(&header(r, st), WIDTH) + &sweep_summary(r, st);
    }
    let mut out = human_with(r, st);
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
        out.push_str(&summary(r, st));
    }
    out
}

/// Emit a job's results ([`show`]n, in the command line's words; no
/// table when the run failed before it measured anything) and make the
/// run's error the command's outcome.
pub fn finish(mut r: Results, o: &OutputOpts, err: Option<Error>) -> anyhow::Result<()> {
    crate::words::in_results(&mut r);
    // Nothing measured: the error alone says it (once, on stderr).
    let shown = if r.cases.is_empty() && err.is_some() {
        String::new()
    } else {
        show(&r, Style::of(o))
    };
    let written = emit_shown(&r, o, shown);
    match err {
        Some(e) => Err(anyhow::anyhow!(crate::words::flags(&e.to_string()))),
        None => written,
    }
}

/// The summary of the workload kinds, by results kind.
fn summary_of(kind: &str) -> Option<fn(&Results, Style) -> String> {
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

/// How the workload summaries say their intervals, once, in their caption.
const BATCH_PM: &str = "± is the 95 % interval of the batch means";

/// `v ± half-width` of a CI stored in a case's `extra` (JSON), to three
/// significant digits.
fn pm_json(v: f64, ci: &serde_json::Value) -> String {
    pm(v, ci["half_width"].as_f64())
}

/// Microseconds `± half-width` of a CI stored in a case's `extra`.
fn micros_json(us: f64, ci: &serde_json::Value) -> String {
    micros3(us, ci["half_width"].as_f64())
}

/// `f` of a JSON number, `-` when it is none.
fn or_dash(v: &serde_json::Value, f: impl Fn(f64) -> String) -> String {
    v.as_f64()
        .filter(|x| x.is_finite())
        .map(f)
        .unwrap_or_else(|| "-".into())
}

/// Bytes of memory as a table shows them (`812KiB`, `45.2MiB`).
fn mem(bytes: f64) -> String {
    match bytes {
        b if b >= 1024.0 * 1024.0 => format!("{}MiB", num(b / 1048576.0)),
        b if b >= 1024.0 => format!("{}KiB", num(b / 1024.0)),
        b => format!("{}B", num(b)),
    }
}

/// The sweep: one row per step (load, offered and achieved calls/s,
/// percentiles, errors, CPU and memory), then the knee, why it stopped,
/// the generator's ceiling and what the server figures are.
pub fn sweep_summary(r: &Results, st: Style) -> String {
    let p = &r.params;
    let mode = p.get("mode").and_then(|v| v.as_str()).unwrap_or("open");
    let f = |c: &results::Case, k: &str| c.extra.get(k).and_then(|v| v.as_f64());
    let any = |k: &str| r.cases.iter().any(|c| c.extra.contains_key(k));
    let (rss, per_conn, srv) = (
        any("server_rss_bytes"),
        any("rss_per_connection_bytes"),
        any("server_cpu_util"),
    );
    // (The open sweep's load is its offered rate; the connections
    // sweep's offered rate is one for every step, said below the table.)
    // A run of several servers (`--servers`): a column says whose step.
    fn server(c: &results::Case) -> Option<&str> {
        c.params.extra.get("server").and_then(|v| v.as_str())
    }
    let servers = r.cases.iter().any(|c| server(c).is_some());
    let mut head = if servers { vec!["server"] } else { vec![] };
    head.push(if mode == "open" { "offered" } else { "load" });
    head.extend(["achieved", "p50", "p99", "p99.9"]);
    // (The server column takes the width of the max's: it is in the JSON.)
    if !servers {
        head.push("max");
    }
    // With --baseline: raw TCP's figure that compares with ours at the
    // same load (a closed loop's calls/s; an open loop's p99).
    let tcp = any("tcp_achieved_per_s");
    let tcp_rate = mode == "clients";
    if tcp {
        head.push(if tcp_rate { "tcp/s" } else { "tcp p99" });
    }
    head.extend(["err", "cli%"]);
    if srv {
        head.push("srv%");
    }
    if rss {
        head.push("RSS");
    }
    if per_conn {
        head.push("RSS/conn");
    }
    let mut t = Table::new(head);
    let pct = |v: Option<f64>| {
        v.map(|u| format!("{:.0}%", u * 100.0))
            .unwrap_or("-".into())
    };
    for c in &r.cases {
        let load = f(c, "load").unwrap_or(0.0);
        let mut row = if servers {
            vec![server(c).unwrap_or("-").to_string()]
        } else {
            vec![]
        };
        row.push(match mode {
            "clients" => format!("C={load}"),
            "connections" => format!("N={load}"),
            _ => format!("{}/s", iiopbench_engine::bench::sweep::load_text(load)),
        });
        let mark = if c.extra.contains_key("above_half_ceiling") {
            "*"
        } else {
            ""
        };
        row.push(format!("{}{mark}", num(c.calls_per_sec)));
        match &c.latency_us {
            Some(l) => row.extend([micros(l.p50), micros(l.p99), micros(l.p999)]),
            None => row.extend(std::iter::repeat_n("-".to_string(), 3)),
        }
        if !servers {
            row.push(c.latency_us.map(|l| micros(l.max)).unwrap_or("-".into()));
        }
        if tcp {
            row.push(
                match tcp_rate {
                    true => f(c, "tcp_achieved_per_s").map(num),
                    false => f(c, "tcp_p99_us").map(micros),
                }
                .unwrap_or("-".into()),
            );
        }
        row.push(c.errors.values().sum::<u64>().to_string());
        row.push(pct(f(c, "client_cpu_util")));
        if srv {
            row.push(pct(f(c, "server_cpu_util")));
        }
        if rss {
            row.push(f(c, "server_rss_bytes").map(mem).unwrap_or("-".into()));
        }
        if per_conn {
            row.push(
                f(c, "rss_per_connection_bytes")
                    .map(mem)
                    .unwrap_or("-".into()),
            );
        }
        t.row(row);
    }
    let mut out = t.render();
    if tcp {
        out.push_str(&format!(
            "  {}: raw TCP right after each step, driven the same way (ours over it: vs_tcp_*)\n",
            if tcp_rate { "tcp/s" } else { "tcp p99" }
        ));
    }
    if let (Some("connections"), Some(rate)) = (Some(mode), p.get("rate").and_then(|v| v.as_f64()))
    {
        out.push_str(&format!(
            "  N connections held open, {} calls/s offered through them at every step\n",
            num(rate)
        ));
    }
    if per_conn {
        out.push_str("  RSS/conn: what each connection opened for the step added\n");
    }
    match p.get("knees") {
        Some(k) if servers => out.push_str(&knees_lines(k, p.get("knee_ratio"))),
        _ => out.push_str(&format!("  {}\n", knee_line(r))),
    }
    if let Some(s) = p.get("stopped_by").and_then(|v| v.as_str()) {
        out.push_str(&format!("  stopped after: {s}\n"));
    }
    match (
        p.get("ceiling_per_s").and_then(|v| v.as_f64()),
        p.get("ceiling_failure").and_then(|v| v.as_str()),
    ) {
        (Some(c), _) => out.push_str(&format!(
            "  generator ceiling: {} calls/s against a server that does no work ({}); * marks steps above half of it\n",
            num(c),
            p.get("ceiling_how")
                .and_then(|v| v.as_str())
                .unwrap_or("its own pass")
        )),
        (_, Some(e)) => out.push_str(&format!("  generator ceiling not measured: {e}\n")),
        _ => {}
    }
    match p.get("server_cpu_source").and_then(|v| v.as_str()) {
        Some("process-less-client-thread") if rss => out.push_str(
            "  server in this process: srv% = its CPU less the client thread's; RSS = client + server\n",
        ),
        Some("process-less-client-thread") => out.push_str(
            "  server in this process: srv% = its CPU less the client thread's; no RSS: the raw baseline shares the process\n",
        ),
        Some("none") => out.push_str("  server: not on this machine; its CPU and memory are not measured\n"),
        _ => {}
    }
    if let Some(n) = p.get("nofile") {
        let g = |k: &str| n.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
        if n.get("capped").and_then(|v| v.as_bool()) == Some(true) {
            out.push_str(&format!(
                "  open files: capped at {} (hard limit {}), {} needed for the largest step\n",
                g("soft"),
                g("hard"),
                g("needed")
            ));
        } else if g("soft") != g("before") {
            out.push_str(&format!(
                "  open files: limit raised from {} to {}\n",
                g("before"),
                g("soft")
            ));
        }
    }
    out.push_str(&closing_lines(r, st));
    out
}

/// The headline of a sweep: the highest load that tripped no stop rule.
/// The knees of a run of several servers, one line each (the median of
/// its rounds), and ours over the best vendor's.
fn knees_lines(k: &serde_json::Value, ratio: Option<&serde_json::Value>) -> String {
    let mut out = String::new();
    for (name, v) in k.as_object().into_iter().flatten() {
        let rounds = v
            .get("rounds")
            .and_then(|r| r.as_array())
            .map_or(0, Vec::len);
        match v.get("median_per_s").and_then(|m| m.as_f64()) {
            Some(m) => out.push_str(&format!(
                "  knee {name}: {} calls/s (median of {rounds} round{})\n",
                num(m),
                if rounds == 1 { "" } else { "s" }
            )),
            None => out.push_str(&format!(
                "  knee {name}: none (its first step tripped a stop rule)\n"
            )),
        }
    }
    if let Some(r) = ratio.filter(|r| !r.is_null()) {
        let s = |k: &str| r.get(k).and_then(|v| v.as_str()).unwrap_or("?");
        let x = r.get("ratio").and_then(|v| v.as_f64()).unwrap_or(0.0);
        out.push_str(&format!(
            "  ours over the best vendor: {} / {} = {x:.2}x (knees' medians)\n",
            s("ours"),
            s("vendor")
        ));
    }
    out
}

pub fn knee_line(r: &Results) -> String {
    let p = &r.params;
    let bound = p.get("p99_bound_us").and_then(|v| v.as_f64());
    let k = match p.get("knee") {
        Some(k) if !k.is_null() => k,
        _ => return "knee: none: the first step already tripped a stop rule".into(),
    };
    let g = |n: &str| k.get(n).and_then(|v| v.as_f64());
    let (load, achieved) = (g("load").unwrap_or(0.0), g("achieved_per_s").unwrap_or(0.0));
    let at = match p.get("mode").and_then(|v| v.as_str()) {
        Some("clients") => format!("{load} clients, {} calls/s", num(achieved)),
        Some("connections") => {
            format!("{load} connections, {} calls/s through them", num(achieved))
        }
        _ => format!(
            "{} calls/s offered, {} achieved",
            iiopbench_engine::bench::sweep::load_text(load),
            num(achieved)
        ),
    };
    let p99 = g("p99_us").map(micros).unwrap_or("-".into());
    let within = match bound {
        Some(b) => format!("p99 {p99} ≤ {}", micros(b)),
        None => format!("p99 {p99} (no p99 bound: the highest load without errors or shortfall)"),
    };
    let gen = if k.get("above_half_ceiling").and_then(|v| v.as_bool()) == Some(true) {
        " (above half the generator's ceiling: may be the generator's limit)"
    } else {
        ""
    };
    // With --baseline: raw TCP at the same step, measured the same way.
    let mode = p.get("mode").and_then(|v| v.as_str());
    let tcp = match (mode, g("tcp_achieved_per_s"), g("tcp_p99_us")) {
        (Some("clients"), Some(t), _) => format!(
            "; raw TCP the same way: {} calls/s (ours {:.2}x)",
            num(t),
            g("vs_tcp_achieved").unwrap_or(0.0)
        ),
        (_, _, Some(t)) => format!(
            "; raw TCP the same way: p99 {} (ours {:.2}x)",
            micros(t),
            g("vs_tcp_p99").unwrap_or(0.0)
        ),
        _ => String::new(),
    };
    format!("knee: {at}, {within}{gen}{tcp}")
}

/// The closed-system summary: X, R, Z with their CIs and Little's law.
pub fn closed_summary(r: &Results, st: Style) -> String {
    let mut t = Table::new([
        "case",
        "X calls/s",
        "R mean",
        "Z mean",
        "C",
        "X·(R+Z)",
        "Little err",
        "stopped by",
    ])
    .left_align(&[7]);
    for c in &r.cases {
        let e = &c.extra;
        let l = &e["littles_law"];
        t.row([
            c.name.clone(),
            pm_json(c.calls_per_sec, &e["x_ci95"]),
            micros_json(l["r_mean_us"].as_f64().unwrap_or(0.0), &e["r_ci95"]),
            micros3(l["z_mean_us"].as_f64().unwrap_or(0.0), None),
            format!("{:.0}", l["clients"].as_f64().unwrap_or(0.0)),
            sig3(l["x_times_r_plus_z"].as_f64().unwrap_or(0.0)),
            format!(
                "{} %",
                sig3(l["relative_error"].as_f64().unwrap_or(0.0) * 100.0)
            ),
            e["stopped_by"].as_str().unwrap_or("?").to_string(),
        ]);
    }
    format!(
        "closed system (Little's law C = X·(R+Z)); {BATCH_PM}:\n{}",
        fitted(t, st, &["X·(R+Z)", "Z mean", "C", "stopped by"])
    )
}

/// T per server state, and relative to the running server in-process.
pub fn setup_summary(r: &Results, st: Style) -> String {
    let base = r
        .cases
        .iter()
        .find(|c| c.params.mode == "in-process-running")
        .and_then(|c| c.latency_us.as_ref().map(|l| l.mean));
    let mut t = Table::new([
        "state",
        "set-ups",
        "T mean",
        "T p50",
        "T max",
        "vs in-process",
    ]);
    for c in &r.cases {
        let l = c.latency_us.unwrap_or_default();
        t.row([
            c.params.mode.clone(),
            c.calls.to_string(),
            micros_json(l.mean, &c.extra["t_ci95"]),
            micros3(l.p50, None),
            micros3(l.max, None),
            base.map(|b| format!("{}x", sig3(l.mean / b.max(1e-9))))
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    format!(
        "connection set-up T (reference → first reply); ± is the 95 % interval of the mean:\n{}",
        fitted(t, st, &["T max", "T p50"])
    )
}

/// Per size: mean R of each option, its CI, ratio to option I, wire bytes.
pub fn params_summary(r: &Results, st: Style) -> String {
    let mut t = Table::new([
        "elements",
        "option",
        "R mean",
        "R / R(I)",
        "arg bytes",
        "padding",
    ])
    .left_align(&[1]);
    for c in &r.cases {
        let e = &c.extra;
        t.row([
            c.params.extra["elements"].to_string(),
            c.params.mode.clone(),
            micros_json(e["r_mean_us"].as_f64().unwrap_or(0.0), &e["r_ci95"]),
            or_dash(&e["ratio_to_option_i"], sig3),
            format!("{:.0}", e["wire_arg_bytes"].as_f64().unwrap_or(0.0)),
            format!("{:.0}", e["padding_bytes"].as_f64().unwrap_or(0.0)),
        ]);
    }
    format!(
        "parameter passing (R normalised to option I); {BATCH_PM}:\n{}",
        fitted(t, st, &["padding", "arg bytes"])
    )
}

/// Mean R per model and position, and each model's slope.
pub fn dispatch_summary(r: &Results, st: Style) -> String {
    let mut t = Table::new(["model", "position", "operation", "R mean"]).left_align(&[2]);
    for c in &r.cases {
        let e = &c.extra;
        t.row([
            c.params.mode.clone(),
            c.params.size.to_string(),
            c.params.extra["operation"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            micros_json(e["r_mean_us"].as_f64().unwrap_or(0.0), &e["r_ci95"]),
        ]);
    }
    let mut s = format!(
        "dispatch latency by method position; {BATCH_PM}:\n{}",
        fitted(t, st, &["operation"])
    );
    for f in &r.fits {
        s.push_str(&format!(
            "  {}: R = {} {} {} µs × position\n",
            f.label,
            micros3(f.a_us, None),
            if f.b_us_per_byte < 0.0 { "−" } else { "+" },
            sig3(f.b_us_per_byte.abs())
        ));
    }
    s
}

/// Mean R per N and mode.
pub fn packing_summary(r: &Results, st: Style) -> String {
    let mut t = Table::new(["N", "mode", "R mean", "X calls/s"]).left_align(&[1]);
    for c in &r.cases {
        let e = &c.extra;
        t.row([
            c.params.size.to_string(),
            c.params.mode.clone(),
            micros_json(e["r_mean_us"].as_f64().unwrap_or(0.0), &e["r_ci95"]),
            pm_json(c.calls_per_sec, &e["x_ci95"]),
        ]);
    }
    format!(
        "packing (mean response time per mode); {BATCH_PM}:\n{}",
        fitted(t, st, &["X calls/s"])
    )
}

/// X per strategy and relative to strategy 1.
pub fn balance_summary(r: &Results, st: Style) -> String {
    let mut t = Table::new([
        "system",
        "service",
        "strategy",
        "X calls/s",
        "vs strategy 1",
        "busy X",
        "non-busy X",
        "R mean",
    ])
    .left_align(&[2]);
    for c in &r.cases {
        let (e, p) = (&c.extra, &c.params.extra);
        t.row([
            format!(
                "C={} S={}",
                p["clients"].as_u64().unwrap_or(0),
                p["replicas"].as_u64().unwrap_or(0)
            ),
            micros3(p["service_us"].as_f64().unwrap_or(0.0), None),
            c.params.mode.clone(),
            pm_json(c.calls_per_sec, &e["x_ci95"]),
            or_dash(&e["relative_to_strategy_1"], |v| format!("{}x", sig3(v))),
            count3(e["busy_calls_per_sec"].as_f64().unwrap_or(0.0)),
            count3(e["nonbusy_calls_per_sec"].as_f64().unwrap_or(0.0)),
            micros3(e["r_mean_us"].as_f64().unwrap_or(0.0), None),
        ]);
    }
    format!(
        "load balancing (system throughput X); {BATCH_PM}:\n{}",
        fitted(t, st, &["non-busy X", "busy X", "R mean"])
    )
}

/// `t` rendered: by default without the columns `drop` names, in turn,
/// as far as it takes to fit [`WIDTH`]; every column with `--wide`.
fn fitted(mut t: Table, st: Style, drop: &[&str]) -> String {
    if !st.wide {
        t.fit(WIDTH, drop);
    }
    t.render()
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
        c.limit = base.then(|| Baseline {
            metric: "throughput".into(),
            baseline_value: 1.0,
            ratio: 0.2,
        });
        if mode.starts_with("tcp") {
            c.params
                .extra
                .insert("limit".into(), serde_json::json!(true));
        }
        c
    }

    const WIDE: Style = Style {
        wide: true,
        color: false,
    };

    /// `case` with a "vs tcp" ratio `q` of `metric`.
    fn compared(name: &str, metric: &str, q: f64) -> Case {
        let mut c = case(name, "twoway", 1024, 1.0, false);
        c.baseline = Some(Baseline {
            metric: metric.into(),
            baseline_value: 1.0,
            ratio: q,
        });
        c
    }

    /// The verdict says which ran faster and how many times, as hyperfine
    /// does: a throughput ratio as it is, a p50 ratio (time) inverted;
    /// one case with its interval, several with their range.
    #[test]
    fn the_verdict_names_the_faster_side() {
        let mut one = compared("twoway octet 1KiB", "throughput", 0.4);
        one.intervals.insert(
            "vs_tcp".into(),
            Interval {
                n: 3,
                mean: 0.4,
                median: 0.4,
                ci95: 0.01,
                min: 0.39,
                max: 0.41,
            },
        );
        let mut r = results(vec![one]);
        r.params
            .insert("limit_server_wait".into(), serde_json::json!("poll"));
        assert_eq!(
            verdict(&r).unwrap(),
            "  raw TCP written as ours ran 2.50 ± 0.06 times faster than ours"
        );
        let r = results(vec![
            compared("echo 1KiB", "p50", 0.5),
            compared("echo 2KiB", "p50", 0.8),
            compared("echo 4KiB", "p50", 1.25),
        ]);
        assert_eq!(
            verdict(&r).unwrap(),
            "  ours ran 1.25 times faster than raw round trips (median of 3 cases: 0.800–2.00)"
        );
        assert_eq!(verdict(&results(vec![])), None);
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
        assert!(human_with(&r, WIDE).contains(&note));
        assert!(!human(&r).contains(&note));
        // Joined oneways (coalesced), or no baseline: nothing to say.
        r.cases[0]
            .extra
            .insert("calls_per_segment".into(), serde_json::json!(25.0));
        r.cases[1].limit = None;
        assert_eq!(joining_note(&r), None);
        // A buffered point is set beside the batched stream only.
        let mut ours = case("oneway octet 1KiB", "oneway", 1024, 1.0, true);
        ours.params
            .extra
            .insert("oneway_buffer".into(), serde_json::json!(65536));
        let mut batched = case("tcp stream 1KiB", "tcp-stream", 1024, 1.0, false);
        batched.params.extra = ours.params.extra.clone();
        batched
            .params
            .extra
            .insert("limit".into(), serde_json::json!(true));
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
        assert_eq!(waking_note(&r), None, "no limit_server_wait recorded");
        r.params
            .insert("limit_server_wait".into(), serde_json::json!("poll"));
        let note = waking_note(&r).expect("0.2x of polled round trips");
        assert!(
            note.contains("this server waits in epoll between requests"),
            "{note}"
        );
        assert!(note.contains("--server-spin-limit 1ms"), "{note}");
        assert!(human_with(&r, WIDE).contains(&note));
        assert!(!human(&r).contains(&note));
        r.target.server_model = Some("threads".into());
        assert!(waking_note(&r).unwrap().contains("blocks in recv"));
        // A server that polls, or a ratio near 1, or a raw server that
        // slept too: nothing to explain.
        r.target.server_spin_limit_us = Some(1000.0);
        assert_eq!(waking_note(&r), None);
        r.target.server_spin_limit_us = None;
        r.cases[0].limit.as_mut().unwrap().ratio = 0.95;
        assert_eq!(waking_note(&r), None);
        r.cases[0].limit.as_mut().unwrap().ratio = 0.2;
        r.params
            .insert("limit_server_wait".into(), serde_json::json!("recv"));
        assert_eq!(waking_note(&r), None);
        // A remote target: how to start our server polling.
        r.params
            .insert("limit_server_wait".into(), serde_json::json!("poll"));
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
