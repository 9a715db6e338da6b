//! `iiopbench bench connect`: what it costs to start talking to an object
//! (seed 001's connection set-up T, E1.1), each step timed on its own over
//! fresh connections: TCP connect; LocateRequest; the first request, which
//! carries the CodeSets context when the IOR has TAG_CODE_SETS
//! (`_non_existent`); a second request on the now-warm connection (`ping`);
//! and the whole "have a reference → first reply". Over TLS the handshake
//! is a step of its own (`tls-handshake`), taken out of `tcp-connect`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use iiop_giop::message::LocateStatus;

use serde::{Deserialize, Serialize};

use super::session::{self, Session};
use super::{count_error, error_kind};
use crate::error::{check, Error, JobError, Result};
use crate::hist::Latency;
use crate::options::{OnError, PlacementOpts, Sockets};
use crate::results::{param, Case, CaseParams, Results};
use crate::run_context::RunContext;
use crate::target::TargetOpts;

/// A `bench connect` job (`Default`: the command line's defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConnectJob {
    pub target: TargetOpts,
    /// New connections to time.
    pub count: u64,
    /// Pause between connections (lets TIME_WAIT sockets and the server settle).
    #[serde(with = "crate::units::duration")]
    pub pause: Duration,
    /// Stop at the first failure, or count failures and go on.
    pub on_error: OnError,
    pub socket: Sockets,
    pub placement: PlacementOpts,
}

impl Default for ConnectJob {
    fn default() -> Self {
        ConnectJob {
            target: TargetOpts::default(),
            count: 200,
            pause: Duration::ZERO,
            on_error: OnError::Stop,
            socket: Sockets::default(),
            placement: PlacementOpts::default(),
        }
    }
}

impl ConnectJob {
    /// [`validate`](BenchJob::validate) without reading the target's file.
    pub fn validate_fields(&self) -> Result<(), JobError> {
        check(self.count >= 1, || "`count` must be at least 1".into())?;
        self.socket.validate()?;
        self.placement.validate()
    }
}

session::bench_job!(ConnectJob, "connect");

const STEPS: [&str; 6] = [
    "tcp-connect",
    "tls-handshake",
    "locate",
    "first-request",
    "warm-request",
    "reference-to-first-reply",
];

/// Run a connect job.
pub fn run(o: &ConnectJob, ctx: &RunContext) -> (Results, Option<Error>) {
    session::run(
        o,
        Default::default(),
        ctx,
        |r| {
            param(&mut r.params, "count", o.count);
            param(&mut r.params, "pause_s", o.pause.as_secs_f64());
        },
        async |s: &Session, r: &mut Results| measure(o, s, r).await,
    )
}

async fn measure(o: &ConnectJob, s: &Session, r: &mut Results) -> Result<()> {
    let mut hists: Vec<Latency> = STEPS.iter().map(|_| Latency::new()).collect();
    let mut errors = BTreeMap::new();
    let mut ok = 0u64;
    let start = Instant::now();
    let pb = s.progress.case("connect");
    let mut failure = None;
    for i in 0..o.count {
        if crate::interrupt::requested() {
            failure = Some(Error::interrupted("interrupted"));
            break;
        }
        match one(s).await {
            Ok(t) => {
                for (h, d) in hists.iter_mut().zip(t) {
                    if let Some(d) = d {
                        h.record_ns(d.as_nanos() as u64);
                    }
                }
                ok += 1;
            }
            Err((step, e)) => {
                count_error(&mut errors, format!("{step}: {}", error_kind(&e)));
                if o.on_error == OnError::Stop {
                    failure = Some(Error::target(format!(
                        "connection {}: {step} failed: {e}",
                        i + 1
                    )));
                    break;
                }
            }
        }
        if !o.pause.is_zero() {
            tokio::time::sleep(o.pause).await;
        }
    }
    pb.done();
    let secs = start.elapsed().as_secs_f64();
    for (step, h) in STEPS.iter().zip(hists) {
        if *step == "tls-handshake" && h.is_empty() {
            continue; // plain TCP
        }
        r.cases.push(Case {
            name: (*step).to_string(),
            params: CaseParams {
                ty: "void".into(),
                size: 0,
                mode: (*step).to_string(),
                extra: BTreeMap::new(),
            },
            calls: ok,
            bytes: 0,
            seconds: secs,
            calls_per_sec: ok as f64 / secs.max(1e-9),
            latency_us: (!h.is_empty()).then(|| h.summary()),
            histogram: (!h.is_empty()).then(|| h.to_base64()),
            errors: if *step == "reference-to-first-reply" {
                errors.clone()
            } else {
                BTreeMap::new()
            },
            ..Default::default()
        });
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

type StepError = (&'static str, iiop_bench_idl::client::BenchError);

/// One fresh connection, every step timed (the handshake only over TLS).
async fn one(s: &Session) -> Result<[Option<Duration>; 6], StepError> {
    let t0 = Instant::now();
    let c = s.open().await.map_err(|e| ("tcp-connect", e))?;
    let t1 = Instant::now();
    let handshake = c.tls_handshake();
    // The first request of the connection: it carries the CodeSets
    // context, and it follows any forward the reference leads to.
    let exists = {
        let _closing = super::CloseOnInterrupt::closing(&c);
        c.non_existent().await.map_err(|e| ("first-request", e))?
    };
    let t2 = Instant::now();
    s.note_forwards(&c);
    if exists {
        return Err((
            "first-request",
            iiop_bench_idl::client::BenchError::Reference(
                "the server says the object does not exist".into(),
            ),
        ));
    }
    let l = c.locate().await.map_err(|e| ("locate", e))?;
    let t3 = Instant::now();
    // The client followed any OBJECT_FORWARD: this is the final status.
    if l.status != LocateStatus::ObjectHere {
        return Err((
            "locate",
            iiop_bench_idl::client::BenchError::Reference(format!("LocateReply {:?}", l.status)),
        ));
    }
    c.ping().await.map_err(|e| ("warm-request", e))?;
    let t4 = Instant::now();
    c.close();
    let connect = (t1 - t0).saturating_sub(handshake.unwrap_or_default());
    Ok([
        Some(connect),
        handshake,
        Some(t3 - t2),
        Some(t2 - t1),
        Some(t4 - t3),
        Some(t2 - t0),
    ])
}
