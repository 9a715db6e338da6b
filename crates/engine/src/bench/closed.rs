//! `iiopbench bench closed`: the general closed system of seed 001 — C
//! clients looping {`work(S)`; think Z} against one bench.idl object —
//! with Little's law checked and every mean given with its 95 % CI.
//!
//! Service times are drawn on the client from the seeded RNG and sent as
//! fixed (`DIST_FIXED`), so `--seed` repeats a run's service times exactly
//! whatever the server's own random source.

use std::time::Duration;

use iiop_bench_idl::bench::work::{Dist as WireDist, Kind};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::session::{self, Session};
use super::stats::Dist;
use super::workload::{self, ClientSpec, RunRule};
use crate::error::{check, fail, Error, JobError, Result};
use crate::options::{PlacementOpts, Sockets};
use crate::results::{param, Results};
use crate::run_context::RunContext;
use crate::target::TargetOpts;
use crate::units::micros;

/// How the server spends the service time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServiceKind {
    /// Wait without using CPU (KIND_SLEEP).
    Sleep,
    /// Burn CPU (KIND_SPIN), like the study's for loop.
    Spin,
}

impl ServiceKind {
    /// As bench.idl's enum.
    pub fn wire(self) -> Kind {
        match self {
            ServiceKind::Sleep => Kind::Sleep,
            ServiceKind::Spin => Kind::Spin,
        }
    }

    /// `sleep` / `spin`.
    pub fn name(self) -> &'static str {
        match self {
            ServiceKind::Sleep => "sleep",
            ServiceKind::Spin => "spin",
        }
    }
}

/// A `bench closed` job (`Default`: the command line's defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClosedJob {
    pub target: TargetOpts,
    /// Client tasks C (each on its own connection).
    pub clients: usize,
    /// Mean think time Z between a reply and the next call.
    #[serde(with = "crate::units::duration")]
    pub think: Duration,
    /// Distribution of Z.
    pub think_dist: Dist,
    /// Mean server service time S (sent to `work`; 0 = no-op work call).
    #[serde(with = "crate::units::duration")]
    pub service: Duration,
    /// Distribution of S (drawn on the client, seeded).
    pub service_dist: Dist,
    /// How the server spends S.
    pub service_kind: ServiceKind,
    pub run: RunRule,
    pub socket: Sockets,
    pub placement: PlacementOpts,
}

impl Default for ClosedJob {
    fn default() -> Self {
        ClosedJob {
            target: TargetOpts::default(),
            clients: 1,
            think: Duration::ZERO,
            think_dist: Dist::Fixed,
            service: Duration::ZERO,
            service_dist: Dist::Fixed,
            service_kind: ServiceKind::Sleep,
            run: RunRule::default(),
            socket: Sockets::default(),
            placement: PlacementOpts::default(),
        }
    }
}

impl ClosedJob {
    /// [`validate`](BenchJob::validate) without reading the target's file.
    pub fn validate_fields(&self) -> Result<(), JobError> {
        check(self.clients >= 1, || "`clients` must be at least 1".into())?;
        self.run.validate()?;
        self.socket.validate()?;
        self.placement.validate()
    }
}

session::bench_job!(ClosedJob, "closed");

/// Run a closed-system job.
pub fn run(o: &ClosedJob, ctx: &RunContext) -> (Results, Option<Error>) {
    session::run(
        o,
        Default::default(),
        ctx,
        |r| {
            let p = &mut r.params;
            param(p, "clients", o.clients);
            param(p, "think_s", o.think.as_secs_f64());
            param(p, "think_dist", o.think_dist.name());
            param(p, "service_s", o.service.as_secs_f64());
            param(p, "service_dist", o.service_dist.name());
            param(p, "service_kind", o.service_kind.name());
            o.run.record(p);
        },
        async |s: &Session, r: &mut Results| {
            tokio::task::LocalSet::new()
                .run_until(measure(o, s, r))
                .await
        },
    )
}

async fn measure(o: &ClosedJob, s: &Session, r: &mut Results) -> Result<()> {
    let spec = o.run.spec(s.gate.as_ref());
    let mut clients = Vec::with_capacity(o.clients);
    for i in 0..o.clients {
        let c = s
            .connect()
            .await
            .map_err(|e| fail!(Target, "client {i}: connecting to the target: {e}"))?;
        let (mean_us, dist, kind) = (
            o.service.as_secs_f64() * 1e6,
            o.service_dist,
            o.service_kind.wire(),
        );
        clients.push(ClientSpec {
            think: o.think,
            think_dist: o.think_dist,
            class: "client".into(),
            call: Box::new(move |rng| {
                let c = c.clone();
                let us = rng.draw(mean_us, dist);
                Box::pin(async move { c.work(us, WireDist::Fixed, kind).await.map(drop) })
            }),
        });
    }
    let pb = s.progress.case("closed");
    let res = workload::run(spec, clients).await;
    pb.done();
    let name = format!(
        "C={} Z={} S={}",
        o.clients,
        micros(o.think.as_secs_f64() * 1e6),
        micros(o.service.as_secs_f64() * 1e6)
    );
    let params = workload::case_params(
        "void",
        0,
        "closed",
        json!({
            "clients": o.clients,
            "think_us": o.think.as_secs_f64() * 1e6,
            "think_dist": o.think_dist.name(),
            "service_us": o.service.as_secs_f64() * 1e6,
            "service_dist": o.service_dist.name(),
            "service_kind": o.service_kind.name(),
        }),
    );
    r.cases.push(res.case(&name, params));
    match res.failure("closed") {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
