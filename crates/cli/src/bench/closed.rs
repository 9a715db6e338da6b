//! `iiopbench bench closed`: the general closed system of seed 001 — C
//! clients looping {`work(S)`; think Z} against one bench.idl object —
//! with Little's law checked and every mean given with its 95 % CI.
//!
//! Service times are drawn on the client from the seeded RNG and sent as
//! fixed (`DIST_FIXED`), so `--seed` repeats a run's service times exactly
//! whatever the server's own random source.

use std::time::Duration;

use clap::{Args, ValueEnum};
use iiop_servers::bench::work::{Dist as WireDist, Kind};
use serde_json::json;

use super::session::{self, Session};
use super::stats::Dist;
use super::workload::{self, ClientSpec, RunArgs};
use crate::context::param;
use crate::opts::{OutputOpts, PlacementOpts, SocketArgs};
use crate::results::Results;
use crate::table::{micros, num, Table};
use crate::target::TargetOpts;
use crate::units::parse_duration;

/// How the server spends the service time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
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

/// `bench closed` options.
#[derive(Debug, Clone, Args)]
pub struct ClosedOpts {
    #[command(flatten)]
    pub target: TargetOpts,
    /// Client tasks C (each on its own connection).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub clients: usize,
    /// Mean think time Z between a reply and the next call.
    #[arg(long, value_parser = parse_duration, default_value = "0s", value_name = "DURATION")]
    pub think: Duration,
    /// Distribution of Z.
    #[arg(long, value_enum, default_value_t = Dist::Fixed)]
    pub think_dist: Dist,
    /// Mean server service time S (sent to `work`; 0 = no-op work call).
    #[arg(long, value_parser = parse_duration, default_value = "0s", value_name = "DURATION")]
    pub service: Duration,
    /// Distribution of S (drawn on the client, seeded).
    #[arg(long, value_enum, default_value_t = Dist::Fixed)]
    pub service_dist: Dist,
    /// How the server spends S.
    #[arg(long, value_enum, default_value_t = ServiceKind::Sleep)]
    pub service_kind: ServiceKind,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub socket: SocketArgs,
    #[command(flatten)]
    pub placement: PlacementOpts,
    #[command(flatten)]
    pub output: OutputOpts,
}

/// `bench closed` from the command line: run, emit, print the summary.
pub fn main(o: &ClosedOpts) -> anyhow::Result<()> {
    let (r, err) = run(o);
    workload::finish(&r, &o.output, err, summary)
}

/// The closed-system summary: X, R, Z with their CIs and Little's law.
pub fn summary(r: &Results) -> String {
    let mut t = Table::new([
        "case",
        "X calls/s",
        "X ci",
        "R mean",
        "R ci",
        "Z mean",
        "C",
        "X·(R+Z)",
        "Little err",
        "stopped by",
    ]);
    for c in &r.cases {
        let e = &c.extra;
        let l = &e["littles_law"];
        t.row([
            c.name.clone(),
            num(c.calls_per_sec),
            workload::ci_json(&e["x_ci95"]),
            micros(l["r_mean_us"].as_f64().unwrap_or(0.0)),
            workload::ci_json(&e["r_ci95"]),
            micros(l["z_mean_us"].as_f64().unwrap_or(0.0)),
            num(l["clients"].as_f64().unwrap_or(0.0)),
            format!("{:.3}", l["x_times_r_plus_z"].as_f64().unwrap_or(0.0)),
            format!(
                "{:.2} %",
                l["relative_error"].as_f64().unwrap_or(0.0) * 100.0
            ),
            e["stopped_by"].as_str().unwrap_or("?").to_string(),
        ]);
    }
    format!("closed system (Little's law C = X·(R+Z)):\n{}", t.render())
}

/// Run `bench closed`.
pub fn run(o: &ClosedOpts) -> (Results, Option<anyhow::Error>) {
    session::run(
        "closed",
        &o.target,
        &o.socket,
        &o.placement,
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

async fn measure(o: &ClosedOpts, s: &Session, r: &mut Results) -> anyhow::Result<()> {
    anyhow::ensure!(o.clients >= 1, "--clients must be at least 1");
    let spec = o.run.spec()?;
    let mut clients = Vec::with_capacity(o.clients);
    for i in 0..o.clients {
        let c = s
            .connect()
            .await
            .map_err(|e| anyhow::anyhow!("client {i}: connecting to the target: {e}"))?;
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
    let pb = crate::progress::Progress::new(o.output.quiet).case("closed");
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
