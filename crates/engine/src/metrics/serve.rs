//! A server's live figures per operation: [`Metered`] wraps any GIOP
//! [`Handler`] and, around each call of it, counts the request, its
//! argument and result bytes, whether it raised an exception, and its
//! service time (from the handler's start to its reply: an asynchronous
//! reply's future included). Only a server started with metrics wears
//! the wrapper, so the default path is untouched.
//!
//! Operation names come from the clients: past [`MAX_OPERATIONS`]
//! distinct names, the rest are counted under `(other)`, so a client
//! cannot grow the scrape without bound.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

use iiop_cdr::{Reader, Writer};
use iiop_transport::server::{
    AsyncReply, ConnectionSummary, Dispatch, Handler, LocateOutcome, Outcome, RequestContext,
};

use super::buckets::AtomicBuckets;
use super::exposition::{Family, Kind, Sample, Value};

/// Distinct operation names counted apart.
pub const MAX_OPERATIONS: usize = 256;

/// The name the operations beyond [`MAX_OPERATIONS`] share.
pub const OTHER: &str = "(other)";

/// One operation's figures.
#[derive(Debug, Default)]
struct OpCell {
    service: AtomicBuckets,
    exceptions: AtomicU64,
    request_bytes: AtomicU64,
    reply_bytes: AtomicU64,
}

impl OpCell {
    fn done(&self, start: Instant, outcome: &Outcome, reply_bytes: usize) {
        if matches!(outcome, Outcome::System(_) | Outcome::UserException) {
            self.exceptions.fetch_add(1, Ordering::Relaxed);
        }
        self.reply_bytes
            .fetch_add(reply_bytes as u64, Ordering::Relaxed);
        self.service.record(start.elapsed().as_nanos() as u64);
    }
}

/// A server's figures per operation, and its connections.
#[derive(Debug, Default)]
pub struct ServerMetrics {
    ops: RwLock<HashMap<String, Arc<OpCell>>>,
    connections_closed: AtomicU64,
}

impl ServerMetrics {
    fn op(&self, name: &str) -> Arc<OpCell> {
        if let Some(c) = self.ops.read().unwrap_or_else(|e| e.into_inner()).get(name) {
            return c.clone();
        }
        let mut ops = self.ops.write().unwrap_or_else(|e| e.into_inner());
        let key = if ops.len() >= MAX_OPERATIONS && !ops.contains_key(name) {
            OTHER
        } else {
            name
        };
        ops.entry(key.to_string()).or_default().clone()
    }

    /// The server's families, operations in name order.
    pub fn families(&self) -> Vec<Family> {
        let mut ops: Vec<(String, Arc<OpCell>)> = self
            .ops
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        ops.sort_by(|a, b| a.0.cmp(&b.0));
        let mut requests = Vec::new();
        let mut exceptions = Vec::new();
        let mut req_bytes = Vec::new();
        let mut rep_bytes = Vec::new();
        let mut service = Vec::new();
        for (name, c) in ops {
            let labels = vec![("operation", name)];
            let svc = c.service.snapshot();
            let count = |n: u64| Sample {
                labels: labels.clone(),
                value: Value::Count(n),
            };
            requests.push(count(svc.count()));
            exceptions.push(count(c.exceptions.load(Ordering::Relaxed)));
            req_bytes.push(count(c.request_bytes.load(Ordering::Relaxed)));
            rep_bytes.push(count(c.reply_bytes.load(Ordering::Relaxed)));
            service.push(Sample {
                labels,
                value: Value::Histogram(svc),
            });
        }
        vec![
            Family {
                name: "iiopbench_server_requests",
                help: "Requests handled (twoway and oneway), by operation.",
                unit: None,
                kind: Kind::Counter,
                samples: requests,
            },
            Family {
                name: "iiopbench_server_exceptions",
                help: "Requests answered with a system or user exception, by operation.",
                unit: None,
                kind: Kind::Counter,
                samples: exceptions,
            },
            Family {
                name: "iiopbench_server_request_bytes",
                help: "Request body bytes (arguments, from the end of the request header), by operation.",
                unit: Some("bytes"),
                kind: Kind::Counter,
                samples: req_bytes,
            },
            Family {
                name: "iiopbench_server_reply_bytes",
                help: "Reply body bytes written by the handler, by operation.",
                unit: Some("bytes"),
                kind: Kind::Counter,
                samples: rep_bytes,
            },
            Family {
                name: "iiopbench_server_service_seconds",
                help: "Time from the handler's start to its reply being ready, by operation.",
                unit: Some("seconds"),
                kind: Kind::Histogram,
                samples: service,
            },
            Family {
                name: "iiopbench_server_connections_closed",
                help: "Client connections that have ended.",
                unit: None,
                kind: Kind::Counter,
                samples: vec![Sample {
                    labels: vec![],
                    value: Value::Count(self.connections_closed.load(Ordering::Relaxed)),
                }],
            },
        ]
    }
}

/// A handler that records what `inner` does into `metrics`.
#[derive(Debug)]
pub struct Metered<H> {
    inner: Arc<H>,
    metrics: Arc<ServerMetrics>,
}

impl<H: Handler> Metered<H> {
    /// Wrap `inner`.
    pub fn new(inner: Arc<H>, metrics: Arc<ServerMetrics>) -> Metered<H> {
        Metered { inner, metrics }
    }
}

impl<H: Handler> Handler for Metered<H> {
    fn handle(
        &self,
        req: &RequestContext<'_>,
        body: &mut Reader<'_>,
        reply: &mut Writer<'_>,
    ) -> Dispatch {
        let cell = self.metrics.op(req.operation);
        cell.request_bytes
            .fetch_add(body.remaining() as u64, Ordering::Relaxed);
        let before = reply.position();
        let start = Instant::now();
        match self.inner.handle(req, body, reply) {
            Dispatch::Done(outcome) => {
                cell.done(start, &outcome, reply.position().saturating_sub(before));
                Dispatch::Done(outcome)
            }
            Dispatch::Async(fut) => Dispatch::Async(Box::pin(async move {
                let r: AsyncReply = fut.await;
                cell.done(start, &r.outcome, r.body.len());
                r
            })),
            // Timed until the callback's reply came and the answer is made.
            Dispatch::CallBack(mut cb) => {
                let then = cb.then;
                cb.then = Box::new(move |r| {
                    let a = then(r);
                    cell.done(start, &a.outcome, a.body.len());
                    a
                });
                Dispatch::CallBack(cb)
            }
        }
    }

    fn connection_closed(&self, summary: &ConnectionSummary) {
        self.metrics
            .connections_closed
            .fetch_add(1, Ordering::Relaxed);
        self.inner.connection_closed(summary);
    }

    fn locate(&self, object_key: &[u8]) -> LocateOutcome {
        self.inner.locate(object_key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_beyond_the_cap_share_one_series() {
        let m = ServerMetrics::default();
        for i in 0..MAX_OPERATIONS + 10 {
            m.op(&format!("op{i}")).service.record(1_000);
        }
        // A name seen before the cap keeps its own series.
        m.op("op0").service.record(1_000);
        let f = m.families();
        let requests = &f[0].samples;
        assert_eq!(requests.len(), MAX_OPERATIONS + 1);
        let of = |name: &str| {
            requests
                .iter()
                .find(|s| s.labels[0].1 == name)
                .map(|s| s.value.clone())
        };
        assert_eq!(of(OTHER), Some(Value::Count(10)));
        assert_eq!(of("op0"), Some(Value::Count(2)));
    }
}
