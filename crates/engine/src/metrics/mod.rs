//! Live metrics of a running benchmark or server, for Prometheus and
//! anything else that reads its text formats (docs/metrics.md names
//! every metric).
//!
//! - [`Registry`]: what is exported — one [`LiveCase`] per case of a run
//!   (its calls, errors and latency buckets), and the per-operation figures
//!   of a server ([`serve::ServerMetrics`]) — and where the exporter's
//!   threads may run;
//! - [`Live`]: a case's handle that the measuring loops record into, with
//!   relaxed atomic adds and no lock (a handle of no registry does
//!   nothing);
//! - [`exposition`]: the text formats, pure; [`buckets`]: the fixed
//!   latency buckets;
//! - [`http`]: the small HTTP server that answers `GET /metrics`;
//! - [`serve`]: a handler wrapper that counts and times a server's
//!   requests.
//!
//! Values are recorded as they happen (no interval: a scrape sees every
//! call that completed before it), except the oneways of `bench
//! throughput`, which are added in batches of the 16 calls between its
//! clock readings.

pub mod buckets;
pub mod exposition;
pub mod http;
pub mod serve;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use buckets::AtomicBuckets;
use exposition::{Family, Format, Kind, Sample, Value};

/// What names a case's series: the bench (the results' `kind`), the
/// case (its name in the results), the target (`embedded` or
/// `host:port`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CaseLabels {
    pub bench: String,
    pub case: String,
    pub target: String,
}

impl CaseLabels {
    fn pairs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("bench", self.bench.clone()),
            ("case", self.case.clone()),
            ("target", self.target.clone()),
        ]
    }
}

/// The live figures of one case: every run of it (`--runs`) adds to the
/// same counters.
#[derive(Debug)]
pub struct LiveCase {
    labels: CaseLabels,
    /// Calls completed without a latency (oneways).
    untimed: AtomicU64,
    /// Payload bytes one call carries (set when the case starts).
    bytes_per_call: AtomicU64,
    /// Latencies of the timed calls (their count is the timed calls').
    latency: AtomicBuckets,
    errors: Mutex<BTreeMap<String, u64>>,
}

impl LiveCase {
    fn new(labels: CaseLabels) -> LiveCase {
        LiveCase {
            labels,
            untimed: AtomicU64::new(0),
            bytes_per_call: AtomicU64::new(0),
            latency: AtomicBuckets::default(),
            errors: Mutex::new(BTreeMap::new()),
        }
    }
}

/// A case's handle for the measuring loops: cheap to clone, `Send`, and
/// a no-op when metrics are off ([`Live::off`], the default).
#[derive(Debug, Clone, Default)]
pub struct Live(Option<Arc<LiveCase>>);

impl Live {
    /// A handle that records nothing.
    pub fn off() -> Live {
        Live(None)
    }

    /// Whether anything is recorded.
    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// One call completed in `ns` nanoseconds.
    #[inline]
    pub fn call(&self, ns: u64) {
        if let Some(c) = &self.0 {
            c.latency.record(ns);
        }
    }

    /// `n` calls completed whose latency was not measured (oneways).
    #[inline]
    pub fn untimed_calls(&self, n: u64) {
        if let Some(c) = &self.0 {
            if n > 0 {
                c.untimed.fetch_add(n, Ordering::Relaxed);
            }
        }
    }

    /// One call failed with an error of `kind` (the results' key).
    pub fn error(&self, kind: &str) {
        if let Some(c) = &self.0 {
            *lock(&c.errors).entry(kind.to_string()).or_insert(0) += 1;
        }
    }

    /// Every call of this case carries `bytes` of payload.
    pub fn bytes_per_call(&self, bytes: u64) {
        if let Some(c) = &self.0 {
            c.bytes_per_call.store(bytes, Ordering::Relaxed);
        }
    }
}

/// Where the exporter's threads may run: a generation number that moves
/// at each change, so a thread re-pins itself only when it changed.
#[derive(Debug, Default)]
struct Placement {
    generation: AtomicU64,
    cpus: Mutex<Vec<usize>>,
}

/// Everything exported, shared by the measuring code and the exporter.
#[derive(Debug, Default)]
pub struct Registry {
    cases: Mutex<Vec<Arc<LiveCase>>>,
    server: Mutex<Option<Arc<serve::ServerMetrics>>>,
    placement: Placement,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Arc<Registry> {
        Arc::new(Registry::default())
    }

    /// The handle of the case named by `labels`, made on first use (a
    /// case of the next run with the same labels adds to it).
    pub fn case(&self, labels: CaseLabels) -> Live {
        let mut cases = lock(&self.cases);
        if let Some(c) = cases.iter().find(|c| c.labels == labels) {
            return Live(Some(c.clone()));
        }
        let c = Arc::new(LiveCase::new(labels));
        cases.push(c.clone());
        Live(Some(c))
    }

    /// Export a server's per-operation figures (one server per registry).
    pub fn server(&self) -> Arc<serve::ServerMetrics> {
        lock(&self.server)
            .get_or_insert_with(Default::default)
            .clone()
    }

    /// Keep the exporter's threads on `cpus` (none: wherever this process
    /// may run). Each thread moves there before it answers its next
    /// request.
    pub fn place_exporter(&self, cpus: &[usize]) {
        let mut now = lock(&self.placement.cpus);
        if *now != cpus {
            *now = cpus.to_vec();
            self.placement.generation.fetch_add(1, Ordering::Release);
        }
    }

    /// The exporter's CPUs if they changed since `seen` (updated).
    pub(crate) fn exporter_cpus_since(&self, seen: &mut u64) -> Option<Vec<usize>> {
        let g = self.placement.generation.load(Ordering::Acquire);
        if g == *seen {
            return None;
        }
        *seen = g;
        Some(lock(&self.placement.cpus).clone())
    }

    /// Every family with its series now.
    pub fn families(&self) -> Vec<Family> {
        let cases: Vec<Arc<LiveCase>> = lock(&self.cases).clone();
        let mut calls = Vec::new();
        let mut bytes = Vec::new();
        let mut errors = Vec::new();
        let mut latency = Vec::new();
        for c in &cases {
            let lat = c.latency.snapshot();
            let n = lat.count() + c.untimed.load(Ordering::Relaxed);
            let labels = c.labels.pairs();
            calls.push(Sample {
                labels: labels.clone(),
                value: Value::Count(n),
            });
            bytes.push(Sample {
                labels: labels.clone(),
                value: Value::Count(n.saturating_mul(c.bytes_per_call.load(Ordering::Relaxed))),
            });
            for (kind, count) in lock(&c.errors).iter() {
                let mut l = labels.clone();
                l.push(("kind", kind.clone()));
                errors.push(Sample {
                    labels: l,
                    value: Value::Count(*count),
                });
            }
            if lat.count() > 0 {
                latency.push(Sample {
                    labels,
                    value: Value::Histogram(lat),
                });
            }
        }
        let mut out = vec![
            Family {
                name: "iiopbench_calls",
                help: "Calls completed (measured calls only: no warm-up).",
                unit: None,
                kind: Kind::Counter,
                samples: calls,
            },
            Family {
                name: "iiopbench_payload_bytes",
                help: "Payload bytes carried by the completed calls, as the results count them.",
                unit: Some("bytes"),
                kind: Kind::Counter,
                samples: bytes,
            },
            Family {
                name: "iiopbench_call_errors",
                help: "Calls that failed, by kind of error.",
                unit: None,
                kind: Kind::Counter,
                samples: errors,
            },
            Family {
                name: "iiopbench_call_latency_seconds",
                help: "Latency of the completed calls (open loop: from the intended send time).",
                unit: Some("seconds"),
                kind: Kind::Histogram,
                samples: latency,
            },
        ];
        if let Some(s) = lock(&self.server).as_ref() {
            out.extend(s.families());
        }
        out
    }

    /// A scrape's body in `format`.
    pub fn render(&self, format: Format) -> String {
        exposition::render(&self.families(), format)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(case: &str) -> CaseLabels {
        CaseLabels {
            bench: "latency".into(),
            case: case.into(),
            target: "embedded".into(),
        }
    }

    #[test]
    fn a_scrape_shows_each_case_with_its_calls_bytes_errors_and_latency() {
        let r = Registry::new();
        let ping = r.case(labels("ping"));
        ping.call(25_000);
        ping.call(26_000);
        ping.error("timeout");
        let echo = r.case(labels("echo octet 1KiB"));
        echo.bytes_per_call(1024);
        echo.untimed_calls(3);
        // The second run of a case adds to the first's series.
        r.case(labels("ping")).call(900);
        Live::off().call(1);
        let text = r.render(Format::Prometheus);
        let series = |name: &str| -> Vec<&str> {
            text.lines()
                .filter(|l| l.starts_with(name) && !l.starts_with('#'))
                .collect()
        };
        let ping_l = "bench=\"latency\",case=\"ping\",target=\"embedded\"";
        let echo_l = "bench=\"latency\",case=\"echo octet 1KiB\",target=\"embedded\"";
        assert_eq!(
            series("iiopbench_calls_total"),
            [
                format!("iiopbench_calls_total{{{ping_l}}} 3"),
                format!("iiopbench_calls_total{{{echo_l}}} 3"),
            ]
        );
        assert_eq!(
            series("iiopbench_payload_bytes_total"),
            [
                format!("iiopbench_payload_bytes_total{{{ping_l}}} 0"),
                format!("iiopbench_payload_bytes_total{{{echo_l}}} 3072"),
            ]
        );
        assert_eq!(
            series("iiopbench_call_errors_total"),
            [format!(
                "iiopbench_call_errors_total{{{ping_l},kind=\"timeout\"}} 1"
            )]
        );
        // Only the case with timed calls has a histogram.
        assert_eq!(
            series("iiopbench_call_latency_seconds_count"),
            [format!(
                "iiopbench_call_latency_seconds_count{{{ping_l}}} 3"
            )]
        );
        assert_eq!(
            series("iiopbench_call_latency_seconds_sum"),
            [format!(
                "iiopbench_call_latency_seconds_sum{{{ping_l}}} 0.0000519"
            )]
        );
        assert!(text.contains(&format!(
            "iiopbench_call_latency_seconds_bucket{{{ping_l},le=\"0.000001\"}} 1\n"
        )));
        assert!(text.contains(&format!(
            "iiopbench_call_latency_seconds_bucket{{{ping_l},le=\"0.00003\"}} 3\n"
        )));
    }

    #[test]
    fn the_exporters_cpus_are_news_once_per_change() {
        let r = Registry::new();
        let mut seen = 0;
        assert_eq!(r.exporter_cpus_since(&mut seen), None);
        r.place_exporter(&[2, 3]);
        assert_eq!(r.exporter_cpus_since(&mut seen), Some(vec![2, 3]));
        assert_eq!(r.exporter_cpus_since(&mut seen), None);
        r.place_exporter(&[2, 3]);
        assert_eq!(r.exporter_cpus_since(&mut seen), None);
        r.place_exporter(&[]);
        assert_eq!(r.exporter_cpus_since(&mut seen), Some(vec![]));
    }
}
