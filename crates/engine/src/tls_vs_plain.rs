//! `--tls-vs-plain`: every case measured twice in each run, against the
//! embedded server's plain port and against its TLS port, and each TLS
//! case's figure divided by its plain twin's (`vs_plain`). Pure functions
//! over the cases the two halves of a run measured.

use crate::results::{Baseline, Case, Interval, Results};

/// What the name of a case measured over TLS ends with.
pub const TLS_SUFFIX: &str = " tls";

/// `extra` key saying which half measured a case: `plain` or `tls`.
pub const TRANSPORT: &str = "transport";

/// The name of a case (or fit) of the plain or the TLS half.
pub fn label(name: &str, plain: bool) -> String {
    if plain {
        name.to_string()
    } else {
        format!("{name}{TLS_SUFFIX}")
    }
}

fn is_raw(c: &Case) -> bool {
    c.params.mode.starts_with("tcp") || c.params.mode.starts_with("tls-tcp")
}

/// One run's cases from its two halves (`(plain, cases)`, in the order
/// they ran): each benchmark case of the plain half followed by its TLS
/// twin (named with [`TLS_SUFFIX`]), then the raw baselines. The TLS
/// half's raw-TCP points are left out: the plain half measured the same
/// (its cases' `baseline` ratios stay as measured next to them).
pub fn merge_halves(halves: Vec<(bool, Vec<Case>)>) -> Vec<Case> {
    let (mut plain, mut tls) = (Vec::new(), Vec::new());
    for (is_plain, cases) in halves {
        for mut c in cases {
            if is_raw(&c) {
                if is_plain || c.params.mode.starts_with("tls-tcp") {
                    (if is_plain { &mut plain } else { &mut tls }).push(c);
                }
                continue;
            }
            let t = if is_plain { "plain" } else { "tls" };
            crate::results::param(&mut c.extra, TRANSPORT, t);
            if is_plain {
                plain.push(c);
            } else {
                c.name = label(&c.name, false);
                tls.push(c);
            }
        }
    }
    let mut out = Vec::with_capacity(plain.len() + tls.len());
    let (raw_plain, plain): (Vec<Case>, Vec<Case>) = plain.into_iter().partition(is_raw);
    for p in plain {
        let twin = label(&p.name, false);
        let at = tls.iter().position(|c| c.name == twin);
        out.push(p);
        if let Some(i) = at {
            out.push(tls.remove(i));
        }
    }
    out.extend(tls.iter().filter(|c| !is_raw(c)).cloned());
    out.extend(raw_plain);
    out.extend(tls.into_iter().filter(is_raw));
    out
}

/// The figure a TLS case is compared on: throughput for `bench
/// throughput`, else the p50 latency where there is one, else calls per
/// second. Returns the metric's name and a case's value of it.
fn metric(kind: &str, c: &Case) -> (&'static str, f64) {
    match (&c.latency_us, kind) {
        (_, "throughput") => ("throughput", c.throughput_mbps),
        (Some(l), _) => ("p50", l.p50),
        (None, _) => ("calls_per_sec", c.calls_per_sec),
    }
}

/// Each run's value of the metric (`None`: the run does not record it).
fn run_values(name: &str, c: &Case) -> Option<Vec<f64>> {
    c.runs
        .iter()
        .map(|r| match name {
            "throughput" => Some(r.throughput_mbps),
            "p50" => r.latency_us.map(|l| l.p50),
            _ => (r.seconds > 0.0).then(|| r.calls as f64 / r.seconds),
        })
        .collect()
}

/// Give every TLS case its ratio to its plain twin: `vs_plain` (the
/// median of the runs' TLS/plain ratios, each run pairing the two halves
/// measured in it), and with runs the interval `tls_vs_plain`.
pub fn attach_ratios(r: &mut Results) {
    let kind = r.kind.clone();
    let plain: Vec<Case> = r
        .cases
        .iter()
        .filter(|c| c.extra.get(TRANSPORT).is_some_and(|t| t == "plain"))
        .cloned()
        .collect();
    for c in r.cases.iter_mut() {
        let Some(base) = c.name.strip_suffix(TLS_SUFFIX) else {
            continue;
        };
        let Some(p) = plain.iter().find(|p| p.name == base) else {
            continue;
        };
        let (name, tls_v) = metric(&kind, c);
        let (_, plain_v) = metric(&kind, p);
        let mut ratio = tls_v / plain_v.max(1e-12);
        if let (Some(t), Some(pl)) = (run_values(name, c), run_values(name, p)) {
            if t.len() == pl.len() && t.len() >= 2 {
                let ratios: Vec<f64> = t.iter().zip(&pl).map(|(a, b)| a / b.max(1e-12)).collect();
                let iv = Interval::of(&ratios);
                ratio = iv.median;
                c.intervals.insert("tls_vs_plain".into(), iv);
            }
        }
        c.vs_plain = Some(Baseline {
            metric: name.into(),
            baseline_value: plain_v,
            ratio,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{CaseParams, RunFigures};

    fn case(name: &str, mode: &str, mbps: f64) -> Case {
        Case {
            name: name.into(),
            params: CaseParams {
                ty: "octet".into(),
                size: 1024,
                mode: mode.into(),
                extra: Default::default(),
            },
            throughput_mbps: mbps,
            ..Default::default()
        }
    }

    #[test]
    fn halves_pair_up_and_the_tls_half_drops_its_raw_tcp_points() {
        let plain = vec![
            case("oneway octet 1KiB", "oneway", 100.0),
            case("tcp stream 1KiB", "tcp-stream", 300.0),
        ];
        let tls = vec![
            case("oneway octet 1KiB", "oneway", 50.0),
            case("tcp stream 1KiB", "tcp-stream", 290.0),
            case("tls-tcp stream 1KiB", "tls-tcp-stream", 150.0),
        ];
        let out = merge_halves(vec![(false, tls), (true, plain)]);
        let names: Vec<&str> = out.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "oneway octet 1KiB",
                "oneway octet 1KiB tls",
                "tcp stream 1KiB",
                "tls-tcp stream 1KiB"
            ]
        );
        assert_eq!(out[0].extra[TRANSPORT], "plain");
        assert_eq!(out[1].extra[TRANSPORT], "tls");
        assert_eq!(out[2].throughput_mbps, 300.0);
    }

    #[test]
    fn the_ratio_is_the_median_of_the_runs_ratios() {
        let mut r = crate::results::Results::new("throughput", Vec::new());
        let runs = |xs: &[f64]| {
            xs.iter()
                .map(|&x| RunFigures {
                    throughput_mbps: x,
                    ..Default::default()
                })
                .collect::<Vec<_>>()
        };
        let mut p = case("oneway octet 1KiB", "oneway", 100.0);
        p.runs = runs(&[100.0, 100.0, 100.0]);
        crate::results::param(&mut p.extra, TRANSPORT, "plain");
        let mut t = case("oneway octet 1KiB tls", "oneway", 60.0);
        t.runs = runs(&[50.0, 60.0, 70.0]);
        r.cases = vec![p, t];
        attach_ratios(&mut r);
        assert!(r.cases[0].vs_plain.is_none());
        let v = r.cases[1].vs_plain.as_ref().unwrap();
        assert_eq!(v.metric, "throughput");
        assert_eq!(v.baseline_value, 100.0);
        assert!((v.ratio - 0.6).abs() < 1e-12);
        let iv = r.cases[1].intervals["tls_vs_plain"];
        assert_eq!((iv.n, iv.min, iv.max), (3, 0.5, 0.7));
    }
}
