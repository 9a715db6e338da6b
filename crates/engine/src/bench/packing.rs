//! `iiopbench bench packing`: seed 001's packing of objects into servers
//! (E1.4). N clients, client i always invoking "its" method, served as:
//! - mode I `one-object`: N methods of one object (`Dispatch50.m<i>`);
//! - mode II `objects`: N objects in one server (`Single<i>.op`);
//! - mode III `servers`: N servers on this host, client i on server i's
//!   `Single<i>.op` — ours in this process or as child processes, or a
//!   vendor's via `scripts/orbs/<orb>/start` (`--servers`).
//!
//! Modes I and II use the target (or the embedded server). Each client has
//! its own connection and no think time; the figure is the mean response
//! time R per mode as N grows. bench.idl's per-object methods are no-ops;
//! `--service S` makes every mode call `work(S)` on the server's `Perf`
//! object instead (then modes I and II coincide: bench.idl has no
//! service-time operation per object).

use std::time::Duration;

use iiop_bench_idl::bench::work::{Dist as WireDist, Kind};
use iiop_bench_idl::client::BenchClient;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::closed::ServiceKind;
use super::replicas::{self, Replicas};
use super::session::{self, Session};
use super::stats::Dist;
use super::workload::{self, ClientSpec, RunRule};
use crate::error::{check, fail, Error, JobError, Result};
use crate::options::{PlacementOpts, Sockets};
use crate::results::{param, Results};
use crate::run_context::RunContext;
use crate::target::TargetOpts;

/// How the N client/method pairs are served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PackingMode {
    /// N methods of one object.
    OneObject,
    /// N objects in one server.
    Objects,
    /// N servers.
    Servers,
}

impl PackingMode {
    /// In the study's order.
    pub const ALL: [PackingMode; 3] = [
        PackingMode::OneObject,
        PackingMode::Objects,
        PackingMode::Servers,
    ];

    /// `one-object`, `objects`, `servers`.
    pub fn name(self) -> &'static str {
        match self {
            PackingMode::OneObject => "one-object",
            PackingMode::Objects => "objects",
            PackingMode::Servers => "servers",
        }
    }
}

impl std::str::FromStr for PackingMode {
    type Err = String;

    fn from_str(s: &str) -> Result<PackingMode, String> {
        PackingMode::ALL
            .into_iter()
            .find(|m| m.name() == s.trim())
            .ok_or_else(|| format!("{s:?}: not a mode (one-object, objects, servers)"))
    }
}

/// A `bench packing` job (`Default`: the command line's defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PackingJob {
    pub target: TargetOpts,
    /// Numbers N of client/method pairs (each at most 50).
    pub pairs: Vec<usize>,
    /// The N servers of mode III: ours in this process, ours as
    /// processes, or a vendor ORB's.
    pub servers: Replicas,
    /// Service time per call; 0 calls the no-op methods.
    #[serde(with = "crate::units::duration")]
    pub service: Duration,
    /// How the server spends `service`.
    pub service_kind: ServiceKind,
    /// Modes left out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skip: Vec<PackingMode>,
    pub run: RunRule,
    pub socket: Sockets,
    pub placement: PlacementOpts,
}

impl Default for PackingJob {
    /// Mode III's servers in this process.
    fn default() -> Self {
        PackingJob {
            target: TargetOpts::default(),
            pairs: vec![1, 2, 4, 8],
            servers: Replicas::InProcess,
            service: Duration::ZERO,
            service_kind: ServiceKind::Spin,
            skip: Vec::new(),
            run: RunRule::default(),
            socket: Sockets::default(),
            placement: PlacementOpts::default(),
        }
    }
}

impl PackingJob {
    /// [`validate`](BenchJob::validate) without reading the target's file.
    pub fn validate_fields(&self) -> Result<(), JobError> {
        check(
            !self.pairs.is_empty() && self.pairs.iter().all(|&n| (1..=50).contains(&n)),
            || "`pairs` must be between 1 and 50".into(),
        )?;
        check(
            PackingMode::ALL.iter().any(|m| !self.skip.contains(m)),
            || "`skip` leaves no mode to measure".into(),
        )?;
        self.run.validate()?;
        self.socket.validate()?;
        self.placement.validate()
    }
}

session::bench_job!(PackingJob, "packing");

/// Run a packing job.
pub fn run(o: &PackingJob, ctx: &RunContext) -> (Results, Option<Error>) {
    session::run(
        o,
        Default::default(),
        ctx,
        |r| {
            let p = &mut r.params;
            param(p, "pairs", &o.pairs);
            param(p, "servers", o.servers.name());
            param(p, "service_s", o.service.as_secs_f64());
            param(p, "service_kind", o.service_kind.name());
            o.run.record(p);
        },
        async |s: &Session, r: &mut Results| {
            let programs = ctx.programs.as_deref();
            tokio::task::LocalSet::new()
                .run_until(measure(o, programs, s, r))
                .await
        },
    )
}

fn client_spec(c: BenchClient, op: String, service: Option<(f64, Kind)>) -> ClientSpec {
    ClientSpec {
        think: Duration::ZERO,
        think_dist: Dist::Fixed,
        class: "client".into(),
        call: Box::new(move |_| {
            let (c, op) = (c.clone(), op.clone());
            Box::pin(async move {
                match service {
                    Some((us, kind)) => c.work(us, WireDist::Fixed, kind).await.map(drop),
                    None => c.call(&op, |_| Ok(())).await.map(drop),
                }
            })
        }),
    }
}

async fn measure(
    o: &PackingJob,
    programs: Option<&dyn crate::programs::Programs>,
    s: &Session,
    r: &mut Results,
) -> Result<()> {
    let spec = o.run.spec(s.gate.as_ref());
    let service =
        (!o.service.is_zero()).then(|| (o.service.as_secs_f64() * 1e6, o.service_kind.wire()));
    let progress = s.progress.clone();
    for &n in &o.pairs {
        for m in PackingMode::ALL {
            if o.skip.contains(&m) {
                continue;
            }
            let mode = m.name();
            // Servers of mode III live until the case ends.
            let mut started = Vec::new();
            let mut clients = Vec::with_capacity(n);
            if mode == "servers" {
                started = replicas::start(&o.servers, n, programs)?;
            }
            for i in 0..n {
                let main = match started.get(i) {
                    Some(srv) => BenchClient::connect(&srv.ior(), &s.cfg).await,
                    None => s.connect().await,
                }
                .map_err(|e| fail!(Target, "{mode} N={n}: client {i} connecting: {e}"))?;
                let (c, op) = match mode {
                    "one-object" => (main.with_key(b"Dispatch50"), format!("m{i:02}")),
                    _ => {
                        let ior = main
                            .get_single(i as u32)
                            .await
                            .map_err(|e| fail!(Target, "{mode} N={n}: get_single({i}): {e}"))?;
                        let p = ior
                            .iiop_profile()
                            .ok_or_else(|| fail!(Target, "get_single({i}): no IIOP profile"))?;
                        (main.with_key(&p.object_key), "op".to_string())
                    }
                };
                let c = if service.is_some() { main } else { c };
                clients.push(client_spec(c, op, service));
            }
            let name = format!("N={n} {mode}");
            let pb = progress.case(&name);
            let res = workload::run(spec.clone(), clients).await;
            pb.done();
            drop(started);
            let params = workload::case_params(
                "void",
                n as u64,
                mode,
                json!({
                    "pairs": n,
                    "mode": mode,
                    "servers": if mode == "servers" { o.servers.name() } else { "target".into() },
                }),
            );
            let case = res.case(&name, params);
            let failure = res.failure(&name);
            r.cases.push(case);
            if let Some(e) = failure {
                return Err(e);
            }
        }
    }
    Ok(())
}
