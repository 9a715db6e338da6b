//! The text exposition formats, pure: metric families in, bytes out.
//! Two formats, chosen by the scraper's `Accept` header ([`negotiate`]):
//!
//! - Prometheus text 0.0.4 (`text/plain; version=0.0.4`): `# HELP` and
//!   `# TYPE` per family, a counter's family named with its `_total`;
//! - OpenMetrics 1.0 (`application/openmetrics-text; version=1.0.0`): a
//!   counter's family named without `_total` (its samples keep it),
//!   `# UNIT` where the family has one, and `# EOF` at the end.
//!
//! Histograms are cumulative `_bucket{le="…"}` samples ending at
//! `le="+Inf"`, then `_sum` and `_count`. Times are seconds, written as
//! exact decimals of whole nanoseconds (`0.0000015`), so a bucket's `le`
//! reads the same in every scrape.

use std::fmt::Write;

use super::buckets::{Buckets, BOUNDS_NS};

/// Which text format to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Prometheus text format 0.0.4.
    Prometheus,
    /// OpenMetrics 1.0.0.
    OpenMetrics,
}

impl Format {
    /// The `Content-Type` of a scrape answered in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// The format to answer a request with this `Accept` header in:
/// OpenMetrics when the header accepts it at least as much as plain text
/// (Prometheus asks for it first, with the text format as a fallback),
/// else the Prometheus text format, which is also the answer to no header.
pub fn negotiate(accept: Option<&str>) -> Format {
    let Some(accept) = accept else {
        return Format::Prometheus;
    };
    let (mut open, mut text) = (0.0f64, 0.0f64);
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.split_once('='))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
            .and_then(|(_, v)| v.trim().parse::<f64>().ok())
            .unwrap_or(1.0);
        match media.as_str() {
            "application/openmetrics-text" => open = open.max(q),
            "text/plain" | "text/*" | "*/*" => text = text.max(q),
            _ => {}
        }
    }
    if open > 0.0 && open >= text {
        Format::OpenMetrics
    } else {
        Format::Prometheus
    }
}

/// What kind of metric a family is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up; samples are named `<family>_total`.
    Counter,
    /// Any value now.
    Gauge,
    /// Values counted into [`BOUNDS_NS`] buckets (in seconds).
    Histogram,
}

/// One sample's value (its family's kind says which).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A count (counters, integral gauges).
    Count(u64),
    /// A gauge's value.
    Float(f64),
    /// A histogram of nanoseconds, exposed in seconds.
    Histogram(Buckets),
}

/// One labelled series of a family.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Label names and values, in the order written.
    pub labels: Vec<(&'static str, String)>,
    pub value: Value,
}

/// A metric family: its name without the `_total` of a counter, help
/// text, unit (the last part of the name, for OpenMetrics' `# UNIT`),
/// kind, and series.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    pub name: &'static str,
    pub help: &'static str,
    pub unit: Option<&'static str>,
    pub kind: Kind,
    pub samples: Vec<Sample>,
}

/// Write `families` in `format`. A family without samples is left out.
pub fn render(families: &[Family], format: Format) -> String {
    let mut out = String::new();
    for f in families.iter().filter(|f| !f.samples.is_empty()) {
        debug_assert!(valid_name(f.name), "metric name {:?}", f.name);
        let typed = match (f.kind, format) {
            (Kind::Counter, Format::Prometheus) => format!("{}_total", f.name),
            _ => f.name.to_string(),
        };
        let kind = match f.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        };
        let _ = writeln!(out, "# HELP {typed} {}", escape_help(f.help, format));
        let _ = writeln!(out, "# TYPE {typed} {kind}");
        if let (Some(unit), Format::OpenMetrics) = (f.unit, format) {
            let _ = writeln!(out, "# UNIT {typed} {unit}");
        }
        for s in &f.samples {
            write_sample(&mut out, f, s);
        }
    }
    if format == Format::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

fn write_sample(out: &mut String, f: &Family, s: &Sample) {
    match (&s.value, f.kind) {
        (Value::Histogram(b), _) => {
            let mut cumulative = 0u64;
            for (i, n) in b.counts.iter().enumerate() {
                cumulative += n;
                let le = match BOUNDS_NS.get(i) {
                    Some(&ns) => seconds(ns),
                    None => "+Inf".to_string(),
                };
                line(
                    out,
                    f.name,
                    "_bucket",
                    &s.labels,
                    Some(&le),
                    &cumulative.to_string(),
                );
            }
            line(out, f.name, "_sum", &s.labels, None, &seconds(b.sum_ns));
            line(
                out,
                f.name,
                "_count",
                &s.labels,
                None,
                &cumulative.to_string(),
            );
        }
        (v, kind) => {
            let suffix = if kind == Kind::Counter { "_total" } else { "" };
            let value = match v {
                Value::Count(n) => n.to_string(),
                Value::Float(x) => float(*x),
                Value::Histogram(_) => unreachable!("matched above"),
            };
            line(out, f.name, suffix, &s.labels, None, &value);
        }
    }
}

fn line(
    out: &mut String,
    name: &str,
    suffix: &str,
    labels: &[(&'static str, String)],
    le: Option<&str>,
    value: &str,
) {
    out.push_str(name);
    out.push_str(suffix);
    if !labels.is_empty() || le.is_some() {
        out.push('{');
        let le = le.map(|v| ("le", v));
        let all = labels.iter().map(|(k, v)| (*k, v.as_str())).chain(le);
        for (i, (k, v)) in all.enumerate() {
            debug_assert!(valid_label_name(k), "label name {k:?}");
            if i > 0 {
                out.push(',');
            }
            out.push_str(k);
            out.push_str("=\"");
            escape_label_value(out, v);
            out.push('"');
        }
        out.push('}');
    }
    out.push(' ');
    out.push_str(value);
    out.push('\n');
}

/// A label value with `\`, `"` and newlines escaped (both formats).
fn escape_label_value(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Help text escaped: `\` and newlines in both formats, `"` too in
/// OpenMetrics (whose help is an escaped string; the 0.0.4 parser would
/// keep such a backslash).
fn escape_help(h: &str, format: Format) -> String {
    let mut out = String::with_capacity(h.len());
    for c in h.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '"' if format == Format::OpenMetrics => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out
}

/// Whole nanoseconds as exact decimal seconds: `0.0000015`, `2`, `12.5`.
pub fn seconds(ns: u64) -> String {
    let (whole, frac) = (ns / 1_000_000_000, ns % 1_000_000_000);
    if frac == 0 {
        return whole.to_string();
    }
    let digits = format!("{frac:09}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// A gauge's value: shortest round-trip decimal, `NaN`, `+Inf`, `-Inf`.
fn float(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{x}")
    }
}

fn valid_name(n: &str) -> bool {
    let mut cs = n.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn valid_label_name(n: &str) -> bool {
    let mut cs = n.chars();
    cs.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::buckets::BUCKETS;

    fn calls(n: u64, case: &str) -> Family {
        Family {
            name: "x_calls",
            help: "Calls \"done\", with a \\ and\na newline.",
            unit: None,
            kind: Kind::Counter,
            samples: vec![Sample {
                labels: vec![("case", case.into()), ("target", "embedded".into())],
                value: Value::Count(n),
            }],
        }
    }

    #[test]
    fn a_counter_in_the_prometheus_text_format() {
        assert_eq!(
            render(&[calls(42, "ping")], Format::Prometheus),
            "# HELP x_calls_total Calls \"done\", with a \\\\ and\\na newline.\n\
             # TYPE x_calls_total counter\n\
             x_calls_total{case=\"ping\",target=\"embedded\"} 42\n"
        );
    }

    #[test]
    fn a_counter_in_openmetrics_is_typed_without_total_and_ends_with_eof() {
        assert_eq!(
            render(&[calls(42, "ping")], Format::OpenMetrics),
            "# HELP x_calls Calls \\\"done\\\", with a \\\\ and\\na newline.\n\
             # TYPE x_calls counter\n\
             x_calls_total{case=\"ping\",target=\"embedded\"} 42\n\
             # EOF\n"
        );
    }

    #[test]
    fn label_values_are_escaped() {
        let text = render(&[calls(1, "echo \"a\\b\"\nx")], Format::Prometheus);
        assert!(
            text.contains(
                "x_calls_total{case=\"echo \\\"a\\\\b\\\"\\nx\",target=\"embedded\"} 1\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_histogram_is_cumulative_in_seconds_with_sum_and_count() {
        let mut b = Buckets::default();
        b.counts[0] = 1; // <= 1 µs
        b.counts[9] = 3; // <= 30 µs
        b.counts[BUCKETS - 1] = 2; // > 10 s
        b.sum_ns = 25_000_000_123_456;
        let f = Family {
            name: "x_latency_seconds",
            help: "Latency.",
            unit: Some("seconds"),
            kind: Kind::Histogram,
            samples: vec![Sample {
                labels: vec![("case", "ping".into())],
                value: Value::Histogram(b),
            }],
        };
        let text = render(std::slice::from_ref(&f), Format::Prometheus);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2 + BUCKETS + 2, "{text}");
        assert_eq!(lines[0], "# HELP x_latency_seconds Latency.");
        assert_eq!(lines[1], "# TYPE x_latency_seconds histogram");
        assert_eq!(
            lines[2],
            "x_latency_seconds_bucket{case=\"ping\",le=\"0.000001\"} 1"
        );
        assert_eq!(
            lines[3],
            "x_latency_seconds_bucket{case=\"ping\",le=\"0.0000015\"} 1"
        );
        assert_eq!(
            lines[10],
            "x_latency_seconds_bucket{case=\"ping\",le=\"0.00002\"} 1"
        );
        assert_eq!(
            lines[11],
            "x_latency_seconds_bucket{case=\"ping\",le=\"0.00003\"} 4"
        );
        assert_eq!(
            lines[44],
            "x_latency_seconds_bucket{case=\"ping\",le=\"10\"} 4"
        );
        assert_eq!(
            lines[45],
            "x_latency_seconds_bucket{case=\"ping\",le=\"+Inf\"} 6"
        );
        assert_eq!(
            lines[46],
            "x_latency_seconds_sum{case=\"ping\"} 25000.000123456"
        );
        assert_eq!(lines[47], "x_latency_seconds_count{case=\"ping\"} 6");
        // OpenMetrics: the same samples, with its unit and the end marker.
        let open = render(&[f], Format::OpenMetrics);
        assert!(open.starts_with(
            "# HELP x_latency_seconds Latency.\n\
             # TYPE x_latency_seconds histogram\n\
             # UNIT x_latency_seconds seconds\n\
             x_latency_seconds_bucket{case=\"ping\",le=\"0.000001\"} 1\n"
        ));
        assert!(open.ends_with("x_latency_seconds_count{case=\"ping\"} 6\n# EOF\n"));
    }

    #[test]
    fn gauges_empty_families_and_an_empty_scrape() {
        let g = |v| Family {
            name: "x_up",
            help: "Up.",
            unit: None,
            kind: Kind::Gauge,
            samples: vec![Sample {
                labels: vec![],
                value: v,
            }],
        };
        let none = Family {
            samples: vec![],
            ..g(Value::Count(0))
        };
        assert_eq!(
            render(&[none.clone(), g(Value::Float(0.25))], Format::Prometheus),
            "# HELP x_up Up.\n# TYPE x_up gauge\nx_up 0.25\n"
        );
        assert_eq!(
            render(&[g(Value::Float(f64::INFINITY))], Format::Prometheus),
            "# HELP x_up Up.\n# TYPE x_up gauge\nx_up +Inf\n"
        );
        assert_eq!(render(std::slice::from_ref(&none), Format::Prometheus), "");
        assert_eq!(render(&[none], Format::OpenMetrics), "# EOF\n");
    }

    #[test]
    fn seconds_are_exact_decimals() {
        assert_eq!(seconds(0), "0");
        assert_eq!(seconds(1_000), "0.000001");
        assert_eq!(seconds(7_500_000), "0.0075");
        assert_eq!(seconds(2_000_000_000), "2");
        assert_eq!(seconds(12_500_000_001), "12.500000001");
    }

    #[test]
    fn openmetrics_is_chosen_when_the_scraper_prefers_it() {
        // What Prometheus 2.x sends.
        let prom = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(negotiate(Some(prom)), Format::OpenMetrics);
        assert_eq!(negotiate(None), Format::Prometheus);
        assert_eq!(negotiate(Some("*/*")), Format::Prometheus);
        assert_eq!(negotiate(Some("text/plain")), Format::Prometheus);
        assert_eq!(
            negotiate(Some("text/plain;q=1, application/openmetrics-text;q=0.5")),
            Format::Prometheus
        );
        assert_eq!(
            negotiate(Some("Application/OpenMetrics-Text; version=1.0.0")),
            Format::OpenMetrics
        );
        assert_eq!(
            negotiate(Some("application/openmetrics-text;q=0")),
            Format::Prometheus
        );
    }
}
