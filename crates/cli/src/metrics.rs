//! `--metrics-listen`: the exporter of a bench command, `soak` or
//! `serve`, started before the run and stopped after it (and after
//! `--metrics-linger`); docs/metrics.md.

use std::sync::Arc;
use std::time::{Duration, Instant};

use iiopbench_engine::metrics::http::Exporter;
use iiopbench_engine::metrics::Registry;

use crate::flags::MetricsArgs;

/// A started exporter, until [`finish`](MetricsServer::finish).
#[derive(Debug)]
pub struct MetricsServer {
    exporter: Exporter,
    registry: Arc<Registry>,
    linger: Duration,
}

impl MetricsServer {
    /// Start the exporter if `--metrics-listen` asks for one, and say
    /// where it listens on stderr (`metrics: URL`).
    pub fn start(args: &MetricsArgs) -> anyhow::Result<Option<MetricsServer>> {
        let Some(listen) = &args.metrics_listen else {
            return Ok(None);
        };
        let registry = Registry::new();
        let exporter = Exporter::start(listen, registry.clone())
            .map_err(|e| anyhow::anyhow!("--metrics-listen {listen}: {e}"))?;
        eprintln!("metrics: {}", exporter.url());
        Ok(Some(MetricsServer {
            exporter,
            registry,
            linger: args.metrics_linger,
        }))
    }

    /// What the run records into.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// `http://HOST:PORT/metrics`.
    pub fn url(&self) -> String {
        self.exporter.url()
    }

    /// Serve `--metrics-linger` longer (unless interrupted), then stop.
    pub fn finish(self) {
        let until = Instant::now() + self.linger;
        while !iiopbench_engine::interrupt::requested() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
        self.exporter.stop();
    }
}
