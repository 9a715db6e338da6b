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

use clap::Args;
use iiop_servers::bench::work::{Dist as WireDist, Kind};
use iiop_servers::client::BenchClient;
use serde_json::json;

use super::closed::ServiceKind;
use super::replicas::{self, ServerKind};
use super::session::{self, Session};
use super::stats::Dist;
use super::workload::{self, ClientSpec, RunArgs};
use crate::context::param;
use crate::opts::{OutputOpts, PlacementOpts, SocketArgs};
use crate::results::Results;
use crate::table::{micros, num, Table};
use crate::target::TargetOpts;
use crate::units::parse_duration;

/// `bench packing` options.
#[derive(Debug, Clone, Args)]
pub struct PackingOpts {
    #[command(flatten)]
    pub target: TargetOpts,
    /// Numbers N of client/method pairs (at most 50), comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,2,4,8",
        value_name = "N"
    )]
    pub pairs: Vec<usize>,
    /// The N servers of mode III: `inproc` (ours, in this process),
    /// `child` (ours, as processes) or `orb:NAME` (scripts/orbs/NAME/start).
    #[arg(long, value_parser = replicas::parse_kind, default_value = "inproc", value_name = "SERVERS")]
    pub servers: ServerKind,
    /// Our binary for `--servers child` (default: this executable).
    #[arg(long, value_name = "FILE")]
    pub server_exe: Option<PathBuf>,
    /// Service time per call; 0 calls the no-op methods.
    #[arg(long, value_parser = parse_duration, default_value = "0s", value_name = "DURATION")]
    pub service: Duration,
    /// How the server spends --service.
    #[arg(long, value_enum, default_value_t = ServiceKind::Spin)]
    pub service_kind: ServiceKind,
    /// Leave out modes (comma-separated: one-object, objects, servers).
    #[arg(long, value_delimiter = ',', value_name = "MODES")]
    pub skip: Vec<String>,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub socket: SocketArgs,
    #[command(flatten)]
    pub placement: PlacementOpts,
    #[command(flatten)]
    pub output: OutputOpts,
}

/// The modes, in the study's order.
pub const MODES: [&str; 3] = ["one-object", "objects", "servers"];

/// `bench packing` from the command line.
pub fn main(o: &PackingOpts) -> anyhow::Result<()> {
    let (r, err) = run(o);
    workload::finish(&r, &o.output, err, summary)
}

/// Mean R per N and mode.
pub fn summary(r: &Results) -> String {
    let mut t = Table::new(["N", "mode", "R mean", "R ci", "X calls/s", "X ci"]);
    for c in &r.cases {
        let e = &c.extra;
        t.row([
            c.params.size.to_string(),
            c.params.mode.clone(),
            micros(e["r_mean_us"].as_f64().unwrap_or(0.0)),
            workload::ci_json(&e["r_ci95"]),
            num(c.calls_per_sec),
            workload::ci_json(&e["x_ci95"]),
        ]);
    }
    format!("packing (mean response time per mode):\n{}", t.render())
}

/// Run `bench packing`.
pub fn run(o: &PackingOpts) -> (Results, Option<anyhow::Error>) {
    session::run(
        "packing",
        &o.target,
        &o.socket,
        &o.placement,
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
    let spec = o.run.spec()?;
    let service =
        (!o.service.is_zero()).then(|| (o.service.as_secs_f64() * 1e6, o.service_kind.wire()));
    let progress = crate::progress::Progress::new(o.output.quiet);
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
            let res = workload::run(spec, clients).await;
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
