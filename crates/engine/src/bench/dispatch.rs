//! `iiopbench bench dispatch`: seed 001's method placement (E1.3). No-op
//! response time (one client, no think, no service time) as a function of
//! the method's position in the interface:
//! - model I: one object with 50 methods (`Dispatch50`, `m00`…`m49`), and
//!   the same with 500 methods (`Dispatch500`);
//! - model II: 50 objects with one method each (`Single<p>.op`, the
//!   reference obtained from `get_single(p)`).
//!
//! Every call goes over the same connection (the objects live in one
//! server), so only the demultiplexing differs. A line R = a + b·position
//! is fitted per model (`fits`).

use std::time::Duration;

use iiop_bench_idl::client::BenchClient;
use iiop_giop::ior::Ior;
use serde_json::json;

use serde::{Deserialize, Serialize};

use super::session::{self, Session};
use super::stats::Dist;
use super::workload::{self, ClientSpec, RunRule};
use crate::error::{bail, check, fail, Error, JobError, Result};
use crate::options::{PlacementOpts, Sockets};
use crate::results::{param, Fit, Results};
use crate::run_context::RunContext;
use crate::target::TargetOpts;

/// A `bench dispatch` job (`Default`: the command line's defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DispatchJob {
    pub target: TargetOpts,
    /// Positions measured per model, evenly spaced from the first method
    /// to the last (at least 2).
    pub points: usize,
    /// Leave out the 500-method interface.
    pub no_500: bool,
    pub run: RunRule,
    pub socket: Sockets,
    pub placement: PlacementOpts,
}

impl Default for DispatchJob {
    fn default() -> Self {
        DispatchJob {
            target: TargetOpts::default(),
            points: 6,
            no_500: false,
            run: RunRule::default(),
            socket: Sockets::default(),
            placement: PlacementOpts::default(),
        }
    }
}

impl DispatchJob {
    /// [`validate`](BenchJob::validate) without reading the target's file.
    pub fn validate_fields(&self) -> Result<(), JobError> {
        check(self.points >= 2, || "`points` must be at least 2".into())?;
        self.run.validate()?;
        self.socket.validate()?;
        self.placement.validate()
    }
}

session::bench_job!(DispatchJob, "dispatch");

/// The positions measured among `methods` methods.
pub fn positions(points: usize, methods: u32) -> Vec<u32> {
    let last = methods - 1;
    let mut v: Vec<u32> = (0..points)
        .map(|i| ((i as f64 * last as f64) / (points - 1) as f64).round() as u32)
        .collect();
    v.dedup();
    v
}

/// Run a dispatch job.
pub fn run(o: &DispatchJob, ctx: &RunContext) -> (Results, Option<Error>) {
    session::run(
        o,
        Default::default(),
        ctx,
        |r| {
            param(&mut r.params, "points", o.points);
            param(&mut r.params, "with_500", !o.no_500);
            o.run.record(&mut r.params);
        },
        async |s: &Session, r: &mut Results| {
            tokio::task::LocalSet::new()
                .run_until(measure(o, s, r))
                .await
        },
    )
}

/// A client for `ior`: the main connection when it points at the same
/// server, a new one otherwise.
pub async fn client_for(
    main: &BenchClient,
    main_ior: &Ior,
    ior: &Ior,
    s: &Session,
) -> Result<BenchClient> {
    let (Some(m), Some(p)) = (main_ior.iiop_profile(), ior.iiop_profile()) else {
        bail!(Target, "a reference without an IIOP profile");
    };
    if m.host == p.host && m.port == p.port {
        Ok(main.with_key(&p.object_key))
    } else {
        BenchClient::connect(ior, &s.cfg)
            .await
            .map_err(|e| fail!(Target, "connecting to {}:{}: {e}", p.host, p.port))
    }
}

async fn measure(o: &DispatchJob, s: &Session, r: &mut Results) -> Result<()> {
    let spec = o.run.spec(s.gate.as_ref());
    let main = s
        .connect()
        .await
        .map_err(|e| fail!(Target, "connecting to the target: {e}"))?;
    // (model, methods, key or None for Single objects, op name width)
    let mut models: Vec<(&str, u32)> = vec![("one-object-50", 50)];
    if !o.no_500 {
        models.push(("one-object-500", 500));
    }
    models.push(("objects-50", 50));
    let progress = s.progress.clone();
    for (model, methods) in models {
        let mut pts = Vec::new();
        for p in positions(o.points, methods) {
            let (client, op) = match model {
                "one-object-50" => (main.with_key(b"Dispatch50"), format!("m{p:02}")),
                "one-object-500" => (main.with_key(b"Dispatch500"), format!("m{p:03}")),
                _ => {
                    let ior = main
                        .get_single(p)
                        .await
                        .map_err(|e| fail!(Target, "get_single({p}): {e}"))?;
                    (client_for(&main, s.ior(), &ior, s).await?, "op".to_string())
                }
            };
            let label = if model == "objects-50" {
                format!("Single{p}.op")
            } else {
                format!(
                    "{}.{op}",
                    if methods == 50 {
                        "Dispatch50"
                    } else {
                        "Dispatch500"
                    }
                )
            };
            let name = format!("{model} {label}");
            let pb = progress.case(&name);
            // Shared, not cloned: the call below runs inside the timed
            // interval, and a String per call would be an allocation each.
            let op2: std::sync::Arc<str> = op.as_str().into();
            let res = workload::run(
                spec.clone(),
                vec![ClientSpec {
                    think: Duration::ZERO,
                    think_dist: Dist::Fixed,
                    class: "client".into(),
                    call: Box::new(move |_| {
                        let (c, op) = (client.clone(), op2.clone());
                        Box::pin(async move { c.call(&op, |_| Ok(())).await.map(drop) })
                    }),
                }],
            )
            .await;
            pb.done();
            let params = workload::case_params(
                "void",
                p as u64,
                model,
                json!({ "position": p, "methods": methods, "operation": label }),
            );
            let case = res.case(&name, params);
            pts.push((p as f64, res.r_mean_us()));
            let failure = res.failure(&name);
            r.cases.push(case);
            if let Some(e) = failure {
                return Err(e);
            }
        }
        if let Some(f) = Fit::from_points(model, &pts) {
            r.fits.push(f);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_span_first_to_last() {
        assert_eq!(positions(6, 50), vec![0, 10, 20, 29, 39, 49]);
        assert_eq!(positions(2, 500), vec![0, 499]);
        assert_eq!(positions(3, 2), vec![0, 1]);
    }
}
