//! What a merged sweep of N agents must hold, wherever the agents ran
//! (local processes, Slurm tasks).

use iiopbench_engine::hist::Latency;
use serde_json::Value;

fn hist(b64: &Value) -> Latency {
    Latency::from_base64(b64.as_str().expect("a histogram")).unwrap()
}

fn counts(h: &Latency) -> Vec<(u64, u64)> {
    h.inner()
        .iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

/// `v` is the complete merge of `n` agents that each ran a sweep whose
/// per-agent loads are `loads`: every agent ran and started every step
/// within 0.5 s of the common instant; each merged step's calls, errors
/// and histogram are exactly the sum of the agents' (the histogram bucket
/// by bucket), its rate the sum of theirs and its load `n` times the
/// agent's; the knee is one of the merged steps.
pub fn check_merged_sweep(v: &Value, n: usize, loads: &[f64]) {
    assert_eq!(v["kind"], "sweep", "{}", v["outcome"]);
    assert_eq!(v["outcome"]["complete"], true, "{}", v["outcome"]);
    let info = &v["agents"];
    assert_eq!(info["requested"], n as u64);
    assert_eq!(info["ran"], n as u64, "{:#}", info["agents"]);
    assert_eq!(info["partial"], false);
    for a in info["agents"].as_array().unwrap() {
        assert_eq!(a["status"], "ran", "{a}");
        let late = a["start_late_ms"].as_array().unwrap();
        assert_eq!(late.len(), loads.len(), "one gated start per step: {a}");
        for l in late {
            assert!(l.as_f64().unwrap() < 500.0, "a step started late: {a}");
        }
    }
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), loads.len(), "one merged case per step");
    for (k, (c, &load)) in cases.iter().zip(loads).enumerate() {
        let e = &c["extra"];
        assert_eq!(e["step"], k as u64 + 1, "{e}");
        assert_eq!(e["load_per_agent"].as_f64(), Some(load), "{e}");
        assert_eq!(e["load"].as_f64(), Some(load * n as f64), "{e}");
        let shares = c["agents"].as_array().unwrap();
        assert_eq!(shares.len(), n, "step {}: every agent's share", k + 1);
        let mut sum = Latency::new();
        let (mut calls, mut errors, mut rate) = (0u64, 0u64, 0.0);
        for s in shares {
            assert!(s["calls"].as_u64().unwrap() > 0, "{s}");
            sum.merge(&hist(&s["histogram"]));
            calls += s["calls"].as_u64().unwrap();
            errors += s["errors"]
                .as_object()
                .map_or(0, |m| m.values().filter_map(Value::as_u64).sum());
            rate += s["calls_per_sec"].as_f64().unwrap();
        }
        let merged = hist(&c["histogram"]);
        assert_eq!(counts(&merged), counts(&sum), "step {}", k + 1);
        assert_eq!(merged.len(), calls);
        assert_eq!(c["calls"], calls);
        let merged_errors: u64 = c["errors"]
            .as_object()
            .map_or(0, |m| m.values().filter_map(Value::as_u64).sum());
        assert_eq!(merged_errors, errors);
        let merged_rate = c["calls_per_sec"].as_f64().unwrap();
        assert!(
            (merged_rate - rate).abs() <= 1e-6 * rate,
            "{merged_rate} {rate}"
        );
        assert_eq!(e["achieved_per_s"].as_f64(), Some(merged_rate));
        assert_eq!(c["latency_us"]["p99"].as_f64().unwrap(), sum.summary().p99);
    }
    let knee = &v["params"]["knee"];
    if !knee.is_null() {
        let step = knee["step"].as_u64().unwrap() as usize;
        assert_eq!(knee["load"], cases[step - 1]["extra"]["load"], "{knee}");
    }
    assert!(v["params"]["stopped_by"].is_string(), "{}", v["params"]);
}
