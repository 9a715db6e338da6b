//! Gates a run's result must pass, for CI (`--threshold` on the command
//! line): `p99<2ms`, `p50<=500us`, `errors=0`, `throughput>5000/s`,
//! `mean<1ms`. Pure: a [`Threshold`] is parsed from its text before
//! anything runs, and [`evaluate`] checks the figures of a finished (or
//! merged) run's cases against it
//! ([`Results::check`](crate::results::Results::check) does both and
//! records the outcomes).
//!
//! What each metric is measured on:
//! - a latency (`min`, `mean`, `p50`, `p90`, `p99`, `p99.9`, `p99.99`,
//!   `max`): every case that has a latency must pass; the worst case is
//!   reported. Cases without one (oneways) are not checked.
//! - `throughput` (calls per second): every case must pass; the worst
//!   case is reported.
//! - `errors` (failed calls): the total over all cases.
//! - `knee` (calls per second): a load sweep's knee, the highest achieved
//!   load whose p99 stayed within the sweep's bound; a sweep that found
//!   none (or a run that is not a sweep) fails the gate.
//!
//! A gate no case could be checked against fails: a result that cannot
//! show it passed has not passed.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::hist::LatencySummary;

/// What a gate measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Min,
    Mean,
    P50,
    P90,
    P99,
    P999,
    P9999,
    Max,
    /// Calls per second, per case.
    Throughput,
    /// Failed calls, all cases together.
    Errors,
    /// A load sweep's knee, achieved calls per second.
    Knee,
}

/// The words of each metric, as typed (the first is the canonical one).
const METRICS: [(Metric, &[&str]); 11] = [
    (Metric::Min, &["min"]),
    (Metric::Mean, &["mean", "avg"]),
    (Metric::P50, &["p50", "median"]),
    (Metric::P90, &["p90"]),
    (Metric::P99, &["p99"]),
    (Metric::P999, &["p99.9", "p999"]),
    (Metric::P9999, &["p99.99", "p9999"]),
    (Metric::Max, &["max"]),
    (Metric::Throughput, &["throughput", "rate"]),
    (Metric::Errors, &["errors"]),
    (Metric::Knee, &["knee"]),
];

impl Metric {
    /// Its canonical word (`p99.9`, `throughput` …).
    pub fn word(self) -> &'static str {
        METRICS
            .iter()
            .find(|(m, _)| *m == self)
            .map(|(_, w)| w[0])
            .unwrap_or("?")
    }

    fn latency(self, l: &LatencySummary) -> Option<f64> {
        Some(match self {
            Metric::Min => l.min,
            Metric::Mean => l.mean,
            Metric::P50 => l.p50,
            Metric::P90 => l.p90,
            Metric::P99 => l.p99,
            Metric::P999 => l.p999,
            Metric::P9999 => l.p9999,
            Metric::Max => l.max,
            Metric::Throughput | Metric::Errors | Metric::Knee => return None,
        })
    }
}

/// How the measured value must compare with the bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = "=")]
    Eq,
}

impl Op {
    /// Whether `value op bound` holds.
    pub fn holds(self, value: f64, bound: f64) -> bool {
        match self {
            Op::Lt => value < bound,
            Op::Le => value <= bound,
            Op::Gt => value > bound,
            Op::Ge => value >= bound,
            Op::Eq => value == bound,
        }
    }

    /// Of `a` and `b`, the one further from passing.
    fn worse(self, a: f64, b: f64, bound: f64) -> bool {
        match self {
            Op::Lt | Op::Le => a > b,
            Op::Gt | Op::Ge => a < b,
            Op::Eq => (a - bound).abs() > (b - bound).abs(),
        }
    }
}

/// One gate: `metric op bound`, the bound in the metric's unit
/// (latencies in microseconds, throughput in calls per second, errors
/// in calls).
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    pub metric: Metric,
    pub op: Op,
    pub bound: f64,
    /// As the user wrote it (what the pass/fail list shows).
    pub text: String,
}

/// A gate that cannot be parsed: what was typed and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("threshold {input:?}: {reason}")]
pub struct ThresholdError {
    input: String,
    reason: String,
}

impl FromStr for Threshold {
    type Err = ThresholdError;

    fn from_str(s: &str) -> Result<Threshold, ThresholdError> {
        let bad = |reason: String| ThresholdError {
            input: s.to_string(),
            reason,
        };
        let t = s.trim();
        let at = t.find(['<', '>', '=', '!']).ok_or_else(|| {
            bad("expected METRIC OP VALUE, e.g. p99<2ms, errors=0, throughput>5000/s".into())
        })?;
        let (name, rest) = t.split_at(at);
        let (op, value) = if let Some(v) = rest.strip_prefix("<=") {
            (Op::Le, v)
        } else if let Some(v) = rest.strip_prefix(">=") {
            (Op::Ge, v)
        } else if let Some(v) = rest.strip_prefix("==") {
            (Op::Eq, v)
        } else if let Some(v) = rest.strip_prefix('<') {
            (Op::Lt, v)
        } else if let Some(v) = rest.strip_prefix('>') {
            (Op::Gt, v)
        } else if let Some(v) = rest.strip_prefix('=') {
            (Op::Eq, v)
        } else {
            return Err(bad("the comparison is one of <, <=, >, >=, =".into()));
        };
        let name = name.trim().to_ascii_lowercase();
        let metric = METRICS
            .iter()
            .find(|(_, words)| words.contains(&name.as_str()))
            .map(|(m, _)| *m)
            .ok_or_else(|| {
                let all: Vec<&str> = METRICS.iter().map(|(_, w)| w[0]).collect();
                bad(format!(
                    "unknown metric {name:?} (one of {})",
                    all.join(", ")
                ))
            })?;
        let value = value.trim();
        let bound = match metric {
            Metric::Errors => value
                .parse::<u64>()
                .map_err(|_| bad("errors are counted: a whole number, e.g. errors=0".into()))?
                as f64,
            Metric::Throughput | Metric::Knee => parse_rate(value).map_err(bad)?,
            _ => parse_micros(value).map_err(bad)?,
        };
        Ok(Threshold {
            metric,
            op,
            bound,
            text: t.to_string(),
        })
    }
}

/// A latency with its unit (`2ms`, `500us`, `1.5s`, `800ns`) in
/// microseconds; a bare number is refused (is `2` seconds or
/// milliseconds?).
fn parse_micros(v: &str) -> Result<f64, String> {
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| "expected a time with its unit, e.g. 2ms or 500us".to_string())?;
    let per = match unit.trim() {
        "ns" => 1e-3,
        "us" | "µs" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "" => return Err("give the time's unit: ns, us, ms or s (e.g. 2ms)".into()),
        u => return Err(format!("unknown unit {u:?} (use ns, us, ms or s)")),
    };
    Ok(n * per)
}

/// Calls per second: `5000/s`, `5000`, `5k/s`, `1.5M/s`.
fn parse_rate(v: &str) -> Result<f64, String> {
    let v = v.strip_suffix("/s").unwrap_or(v).trim();
    let (num, mult) = match v.char_indices().last() {
        Some((i, 'k' | 'K')) => (&v[..i], 1e3),
        Some((i, 'M')) => (&v[..i], 1e6),
        _ => (v, 1.0),
    };
    num.trim()
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && *n >= 0.0)
        .map(|n| n * mult)
        .ok_or_else(|| "expected calls per second, e.g. 5000/s or 5k/s".into())
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// How one gate came out, as results files record it (`thresholds`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdOutcome {
    /// The gate as written (`p99<2ms`).
    pub threshold: String,
    pub metric: Metric,
    pub op: Op,
    /// The bound in the metric's unit: µs, calls/s or calls.
    pub bound: f64,
    /// What was measured (the worst case's, or the errors' total), in
    /// the same unit; absent when no case had the metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// The case `value` is from (absent for `errors`, the run's total).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
    pub pass: bool,
}

impl ThresholdOutcome {
    /// One line for people: `PASS p99<2ms  (p99 = 41.2us, case ping)`.
    pub fn line(&self) -> String {
        let verdict = if self.pass { "PASS" } else { "FAIL" };
        let measured = match self.value {
            None if self.metric == Metric::Knee => "the run found no knee".to_string(),
            None => "no case measured it".to_string(),
            Some(v) => {
                let v = match self.metric {
                    Metric::Errors => format!("{v}"),
                    Metric::Throughput | Metric::Knee => format!("{v:.1}/s"),
                    _ => format_micros(v),
                };
                match &self.case {
                    Some(c) => format!("{} = {v}, case {c}", self.metric.word()),
                    None => format!("{} = {v}", self.metric.word()),
                }
            }
        };
        format!("{verdict} {}  ({measured})", self.threshold)
    }
}

/// Microseconds as people read them (`850ns`, `41.2us`, `2.50ms`,
/// `1.20s`).
fn format_micros(us: f64) -> String {
    if us < 1.0 {
        format!("{:.0}ns", us * 1e3)
    } else if us < 1e3 {
        format!("{us:.1}us")
    } else if us < 1e6 {
        format!("{:.2}ms", us / 1e3)
    } else {
        format!("{:.2}s", us / 1e6)
    }
}

/// What the gates read of one case of a result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures<'a> {
    /// The case's name.
    pub case: &'a str,
    /// Its latency, if it measured one (in µs).
    pub latency_us: Option<&'a LatencySummary>,
    pub calls_per_sec: f64,
    /// Failed calls, every kind together.
    pub errors: u64,
}

/// The value of `metric` in one case, if the case has it.
fn case_value(metric: Metric, c: &Figures) -> Option<f64> {
    match metric {
        Metric::Throughput => Some(c.calls_per_sec),
        Metric::Errors => Some(c.errors as f64),
        Metric::Knee => None,
        m => m.latency(c.latency_us?),
    }
}

/// Check the cases' figures against every gate, in their order.
pub fn evaluate(gates: &[Threshold], cases: &[Figures]) -> Vec<ThresholdOutcome> {
    evaluate_run(gates, cases, None)
}

/// [`evaluate`], with the run's figures beside its cases': the knee of a
/// load sweep (achieved calls per second), if it found one.
pub fn evaluate_run(
    gates: &[Threshold],
    cases: &[Figures],
    knee: Option<f64>,
) -> Vec<ThresholdOutcome> {
    gates.iter().map(|g| evaluate_one(g, cases, knee)).collect()
}

fn evaluate_one(g: &Threshold, cases: &[Figures], knee: Option<f64>) -> ThresholdOutcome {
    let (value, case) = if g.metric == Metric::Knee {
        (knee, None)
    } else if g.metric == Metric::Errors {
        let total: f64 = cases.iter().filter_map(|c| case_value(g.metric, c)).sum();
        (Some(total), None)
    } else {
        let mut worst: Option<(f64, &str)> = None;
        for c in cases {
            let Some(v) = case_value(g.metric, c) else {
                continue;
            };
            if worst.is_none_or(|(w, _)| g.op.worse(v, w, g.bound)) {
                worst = Some((v, c.case));
            }
        }
        match worst {
            Some((v, name)) => (Some(v), Some(name.to_string())),
            None => (None, None),
        }
    };
    ThresholdOutcome {
        threshold: g.text.clone(),
        metric: g.metric,
        op: g.op,
        bound: g.bound,
        value,
        case,
        pass: value.is_some_and(|v| g.op.holds(v, g.bound)),
    }
}

/// Whether every gate passed.
pub fn all_pass(outcomes: &[ThresholdOutcome]) -> bool {
    outcomes.iter().all(|o| o.pass)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Threshold {
        s.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    /// A case: its name, latency, calls/s and errors.
    struct C(&'static str, Option<LatencySummary>, f64, u64);

    fn case(name: &'static str, p99_us: Option<f64>, rate: f64, errors: u64) -> C {
        let lat = p99_us.map(|p| LatencySummary {
            min: p / 4.0,
            mean: p / 2.0,
            p50: p / 2.0,
            p90: p * 0.9,
            p99: p,
            p999: p * 1.5,
            p9999: p * 2.0,
            max: p * 3.0,
            ..Default::default()
        });
        C(name, lat, rate, errors)
    }

    fn results(cases: Vec<C>) -> Vec<C> {
        cases
    }

    fn evaluate(gates: &[Threshold], cases: &[C]) -> Vec<ThresholdOutcome> {
        evaluate_run(gates, cases, None)
    }

    fn evaluate_run(gates: &[Threshold], cases: &[C], knee: Option<f64>) -> Vec<ThresholdOutcome> {
        let figures: Vec<Figures> = cases
            .iter()
            .map(|c| Figures {
                case: c.0,
                latency_us: c.1.as_ref(),
                calls_per_sec: c.2,
                errors: c.3,
            })
            .collect();
        super::evaluate_run(gates, &figures, knee)
    }

    #[test]
    fn gates_parse_with_their_units() {
        let g = t("p99<2ms");
        assert_eq!((g.metric, g.op, g.bound), (Metric::P99, Op::Lt, 2000.0));
        assert_eq!(t("p50 <= 500us").bound, 500.0);
        assert_eq!(t("P50<=500µs").metric, Metric::P50);
        assert_eq!(t("p99.9<1.5s").bound, 1.5e6);
        assert_eq!(t("p999<1ns").bound, 1e-3);
        assert_eq!(t("mean<1ms").metric, Metric::Mean);
        assert_eq!(t("max<10ms").metric, Metric::Max);
        let e = t("errors=0");
        assert_eq!((e.metric, e.op, e.bound), (Metric::Errors, Op::Eq, 0.0));
        assert_eq!(t("errors==0").op, Op::Eq);
        assert_eq!(t("errors<=10").bound, 10.0);
        let th = t("throughput>5000/s");
        assert_eq!(
            (th.metric, th.op, th.bound),
            (Metric::Throughput, Op::Gt, 5000.0)
        );
        assert_eq!(t("throughput>=5k/s").bound, 5000.0);
        assert_eq!(t("rate>1.5M/s").bound, 1.5e6);
        assert_eq!(t("throughput>250").bound, 250.0);
        assert_eq!(t(" p99 < 2ms ").text, "p99 < 2ms");
    }

    #[test]
    fn bad_gates_are_refused_in_one_line_that_says_why() {
        for (s, why) in [
            ("p99", "expected METRIC OP VALUE"),
            ("p98<2ms", "unknown metric \"p98\""),
            ("p99<2", "give the time's unit"),
            ("p99<2hours", "unknown unit \"hours\""),
            ("p99<ms", "expected a time"),
            ("errors=0.5", "whole number"),
            ("errors=-1", "whole number"),
            ("throughput>fast", "calls per second"),
            ("p99!2ms", "one of <, <="),
            ("p99=>2ms", "expected a time"),
        ] {
            let e = s.parse::<Threshold>().unwrap_err().to_string();
            assert!(e.contains(why), "{s}: {e}");
            assert!(e.starts_with(&format!("threshold {s:?}")), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn latency_gates_hold_for_every_case_and_name_the_worst() {
        let r = results(vec![
            case("ping", Some(40.0), 20000.0, 0),
            case("echo 4KiB", Some(90.0), 9000.0, 0),
            // A oneway case: no latency, not checked for one.
            case("oneway", None, 90000.0, 0),
        ]);
        let out = evaluate(&[t("p99<100us"), t("p99<50us"), t("p50>=45us")], &r);
        assert!(out[0].pass);
        assert_eq!(out[0].value, Some(90.0));
        assert_eq!(out[0].case.as_deref(), Some("echo 4KiB"));
        assert!(!out[1].pass);
        assert_eq!(out[1].case.as_deref(), Some("echo 4KiB"));
        // `>=`: the worst is the smallest.
        assert!(!out[2].pass);
        assert_eq!(out[2].value, Some(20.0));
        assert_eq!(out[2].case.as_deref(), Some("ping"));
        assert!(!all_pass(&out));
        assert!(all_pass(&out[..1]));
        assert_eq!(
            out[1].line(),
            "FAIL p99<50us  (p99 = 90.0us, case echo 4KiB)"
        );
        assert_eq!(
            out[0].line(),
            "PASS p99<100us  (p99 = 90.0us, case echo 4KiB)"
        );
    }

    #[test]
    fn bounds_are_strict_or_not_as_written() {
        let r = results(vec![case("ping", Some(2000.0), 5000.0, 0)]);
        let out = evaluate(
            &[
                t("p99<2ms"),
                t("p99<=2ms"),
                t("throughput>5000/s"),
                t("throughput>=5000/s"),
            ],
            &r,
        );
        let pass: Vec<bool> = out.iter().map(|o| o.pass).collect();
        assert_eq!(pass, [false, true, false, true]);
    }

    #[test]
    fn errors_are_the_runs_total_and_throughput_the_slowest_case() {
        let r = results(vec![
            case("a", Some(10.0), 8000.0, 2),
            case("b", Some(10.0), 3000.0, 1),
        ]);
        let out = evaluate(&[t("errors=0"), t("errors<=3"), t("throughput>5000/s")], &r);
        assert!(!out[0].pass);
        assert_eq!((out[0].value, out[0].case.as_deref()), (Some(3.0), None));
        assert!(out[1].pass);
        assert!(!out[2].pass);
        assert_eq!(out[2].case.as_deref(), Some("b"));
        assert_eq!(out[0].line(), "FAIL errors=0  (errors = 3)");
        assert_eq!(
            out[2].line(),
            "FAIL throughput>5000/s  (throughput = 3000.0/s, case b)"
        );
        let clean = results(vec![case("a", Some(10.0), 8000.0, 0)]);
        assert!(evaluate(&[t("errors=0")], &clean)[0].pass);
    }

    #[test]
    fn a_knee_gate_reads_the_runs_knee_and_fails_without_one() {
        let r = results(vec![case("step 1", Some(40.0), 20000.0, 0)]);
        let gates = [t("knee>20k/s"), t("knee>=30000/s")];
        let out = evaluate_run(&gates, &r, Some(25_000.0));
        assert!(out[0].pass);
        assert!(!out[1].pass);
        assert_eq!(out[0].case, None);
        assert_eq!(out[1].line(), "FAIL knee>=30000/s  (knee = 25000.0/s)");
        // No knee (no step within the bound, or not a sweep): a failure
        // that says so; the cases' throughput is not a knee.
        let out = evaluate(&gates, &r);
        assert!(!out[0].pass);
        assert_eq!(out[0].line(), "FAIL knee>20k/s  (the run found no knee)");
        assert!("knee<2ms".parse::<Threshold>().is_err());
    }

    #[test]
    fn a_gate_nothing_measured_fails() {
        let r = results(vec![case("oneway", None, 1000.0, 0)]);
        let out = evaluate(&[t("p99<1s")], &r);
        assert!(!out[0].pass);
        assert_eq!(out[0].value, None);
        assert_eq!(out[0].line(), "FAIL p99<1s  (no case measured it)");
        // No cases at all: no throughput either; errors are zero.
        let none = results(Vec::new());
        let out = evaluate(&[t("throughput>1/s"), t("errors=0")], &none);
        assert!(!out[0].pass);
        assert!(out[1].pass);
    }

    #[test]
    fn outcomes_round_trip_through_json() {
        let r = results(vec![case("ping", Some(40.0), 20000.0, 0)]);
        let out = evaluate(&[t("p99<=1ms")], &r);
        let j = serde_json::to_value(&out).unwrap();
        assert_eq!(j[0]["threshold"], "p99<=1ms");
        assert_eq!(j[0]["metric"], "p99");
        assert_eq!(j[0]["op"], "<=");
        assert_eq!(j[0]["bound"], 1000.0);
        assert_eq!(j[0]["value"], 40.0);
        assert_eq!(j[0]["case"], "ping");
        assert_eq!(j[0]["pass"], true);
        let back: Vec<ThresholdOutcome> = serde_json::from_value(j).unwrap();
        assert_eq!(back, out);
    }
}
