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

use std::path::PathBuf;
use std::time::Duration;

use iiop_bench_idl::bench::work::{Dist as WireDist, Kind};
use iiop_bench_idl::client::BenchClient;
use serde_json::json;

use super::closed::ServiceKind;
use super::replicas::{self, ServerKind};
use super::session::{self, Session};
use super::stats::Dist;
use super::workload::{self, ClientSpec, RunOpts};
use crate::context::param;
use crate::options::{PlacementOpts, Sockets};
use crate::results::Results;
use crate::target::TargetOpts;

/// `bench packing` options.
#[derive(Debug, Clone)]
pub struct PackingOpts {
    pub target: TargetOpts,
    /// Numbers N of client/method pairs (at most 50), comma-separated.
    pub pairs: Vec<usize>,
    /// The N servers of mode III: `inproc` (ours, in this process),
    /// `child` (ours, as processes) or `orb:NAME` (scripts/orbs/NAME/start).
    pub servers: ServerKind,
    /// Our binary for `--servers child` (default: this executable).
    pub server_exe: Option<PathBuf>,
    /// Service time per call; 0 calls the no-op methods.
    pub service: Duration,
    /// How the server spends --service.
    pub service_kind: ServiceKind,
    /// Leave out modes (comma-separated: one-object, objects, servers).
    pub skip: Vec<String>,
    pub run: RunOpts,
    pub socket: Sockets,
    pub placement: PlacementOpts,
    /// Who hears about each case.
    pub progress: crate::progress::Progress,
}

impl Default for PackingOpts {
    /// Mode III's servers in this process (`ServerKind::Child` needs
    /// `server_exe` outside the iiopbench binary).
    fn default() -> Self {
        PackingOpts {
            target: TargetOpts::default(),
            pairs: vec![1, 2, 4, 8],
            servers: ServerKind::InProcess,
            server_exe: None,
            service: Duration::ZERO,
            service_kind: ServiceKind::Spin,
            skip: Vec::new(),
            run: RunOpts::default(),
            socket: Sockets::default(),
            placement: PlacementOpts::default(),
            progress: Default::default(),
        }
    }
}

/// The modes, in the study's order.
pub const MODES: [&str; 3] = ["one-object", "objects", "servers"];

/// Run `bench packing`.
pub fn run(o: &PackingOpts) -> (Results, Option<anyhow::Error>) {
    session::run(
        "packing",
        &o.target,
        &o.socket,
        &o.placement,
        Default::default(),
        |r| {
            let p = &mut r.params;
            param(p, "pairs", &o.pairs);
            param(p, "servers", o.servers.name());
            param(p, "service_s", o.service.as_secs_f64());
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

async fn measure(o: &PackingOpts, s: &Session, r: &mut Results) -> anyhow::Result<()> {
    for m in &o.skip {
        anyhow::ensure!(MODES.contains(&m.as_str()), "--skip {m:?}: not a mode");
    }
    anyhow::ensure!(
        !o.pairs.is_empty() && o.pairs.iter().all(|&n| (1..=50).contains(&n)),
        "--pairs must be between 1 and 50"
    );
    let spec = o.run.spec(o.target.gate.as_ref())?;
    let service =
        (!o.service.is_zero()).then(|| (o.service.as_secs_f64() * 1e6, o.service_kind.wire()));
    let progress = o.progress.clone();
    for &n in &o.pairs {
        for mode in MODES {
            if o.skip.iter().any(|m| m == mode) {
                continue;
            }
            // Servers of mode III live until the case ends.
            let mut started = Vec::new();
            let mut clients = Vec::with_capacity(n);
            if mode == "servers" {
                started = replicas::start(&o.servers, n, o.server_exe.as_ref())?;
            }
            for i in 0..n {
                let main = match started.get(i) {
                    Some(srv) => BenchClient::connect(&srv.ior(), &s.cfg).await,
                    None => s.connect().await,
                }
                .map_err(|e| anyhow::anyhow!("{mode} N={n}: client {i} connecting: {e}"))?;
                let (c, op) = match mode {
                    "one-object" => (main.with_key(b"Dispatch50"), format!("m{i:02}")),
                    _ => {
                        let ior = main
                            .get_single(i as u32)
                            .await
                            .map_err(|e| anyhow::anyhow!("{mode} N={n}: get_single({i}): {e}"))?;
                        let p = ior
                            .iiop_profile()
                            .ok_or_else(|| anyhow::anyhow!("get_single({i}): no IIOP profile"))?;
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
