//! `iiopbench bench balance`: seed 001's application-level load balancing
//! (E1.5). S server replicas, C clients: half busy (no think time), half
//! non-busy (think Z, 500 ms in the study). Strategies:
//! 1. unbalanced — busy clients on one half of the replicas, non-busy on
//!    the other;
//! 2. balanced — each replica gets busy and non-busy clients alike;
//! 3. half-dynamic self round robin — busy clients rotate over all
//!    replicas call by call, non-busy ones are bound statically;
//! 4. full-dynamic self round robin — every client rotates;
//! 5. central dispatcher round robin — before each call a client asks a
//!    dispatcher object (`Dispatcher::next`, served by iiopbench) for a
//!    replica's reference; the cycle includes that request.
//!
//! Replicas are started by iiopbench (ours in this process or as
//! children, or a vendor's via its start script) and handles are acquired
//! before measuring, as in the study. The figure is system throughput X
//! per strategy and relative to strategy 1.

use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use iiop_bench_idl::bench::work::{Dist as WireDist, Kind};
use iiop_bench_idl::client::{BenchClient, BenchError};
use iiop_bench_idl::dispatcher::RunningDispatcher;
use iiop_giop::ior::Ior;
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
use crate::units::micros;

/// `bench balance` options.
#[derive(Debug, Clone)]
pub struct BalanceOpts {
    pub target: TargetOpts,
    /// Systems as CLIENTSxSERVERS, comma-separated (even client counts).
    pub systems: Vec<(usize, usize)>,
    /// Server service times, comma-separated.
    pub service: Vec<Duration>,
    /// Distribution of service times (drawn on the client, seeded).
    pub service_dist: Dist,
    /// How replicas spend the service time (spin: CPU, as in the study).
    pub service_kind: ServiceKind,
    /// Think time of the non-busy clients (scale it down for quick runs).
    pub think: Duration,
    /// Distribution of the think time.
    pub think_dist: Dist,
    /// Strategies to run (1-5), comma-separated.
    pub strategies: Vec<u8>,
    /// The replicas: `inproc` (ours, one thread each), `child` (ours, as
    /// processes) or `orb:NAME` (scripts/orbs/NAME/start).
    pub servers: ServerKind,
    /// Our binary for `--servers child` (default: this executable).
    pub server_exe: Option<PathBuf>,
    pub run: RunOpts,
    pub socket: Sockets,
    pub placement: PlacementOpts,
    /// Who hears about each case.
    pub progress: crate::progress::Progress,
}

impl Default for BalanceOpts {
    /// Replicas in this process (`ServerKind::Child` needs `server_exe`
    /// outside the iiopbench binary).
    fn default() -> Self {
        BalanceOpts {
            target: TargetOpts::default(),
            systems: vec![(4, 2), (8, 4)],
            service: [10, 40, 120].map(Duration::from_millis).to_vec(),
            service_dist: Dist::Fixed,
            service_kind: ServiceKind::Spin,
            think: Duration::from_millis(500),
            think_dist: Dist::Fixed,
            strategies: vec![1, 2, 3, 4, 5],
            servers: ServerKind::InProcess,
            server_exe: None,
            run: RunOpts::default(),
            socket: Sockets::default(),
            placement: PlacementOpts::default(),
            progress: Default::default(),
        }
    }
}

/// Parse one system of `--systems`: `CLIENTSxSERVERS` (e.g. `4x2`).
pub fn parse_system(s: &str) -> Result<(usize, usize), String> {
    let (c, v) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("{s:?}: use CLIENTSxSERVERS, e.g. 4x2"))?;
    let c: usize = c.trim().parse().map_err(|e| format!("{s:?}: {e}"))?;
    let v: usize = v.trim().parse().map_err(|e| format!("{s:?}: {e}"))?;
    if !(2..=256).contains(&c) || !c.is_multiple_of(2) || !(2..=64).contains(&v) {
        return Err(format!(
            "{s:?}: clients must be even and at least 2, servers 2..64"
        ));
    }
    Ok((c, v))
}

/// The study's strategy names.
pub fn strategy_name(k: u8) -> &'static str {
    match k {
        1 => "unbalanced",
        2 => "balanced",
        3 => "half-dynamic-rr",
        4 => "full-dynamic-rr",
        5 => "central-dispatcher-rr",
        _ => "unknown",
    }
}

/// Where a client sends its calls: a fixed replica, its own round robin
/// starting at an offset, or the dispatcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Fixed(usize),
    RoundRobin(usize),
    Dispatcher,
}

/// The route of client `j` of its class (`busy` or not) under strategy
/// `k` with `s` replicas.
pub fn route(k: u8, busy: bool, j: usize, s: usize) -> Route {
    let half = (s / 2).max(1);
    match (k, busy) {
        (1, true) => Route::Fixed(j % half),
        (1, false) => Route::Fixed(half + j % (s - half)),
        (2, _) | (3, false) => Route::Fixed(j % s),
        (3, true) | (4, _) => Route::RoundRobin(j % s),
        _ => Route::Dispatcher,
    }
}

/// Run `bench balance`.
pub fn run(o: &BalanceOpts) -> (Results, Option<anyhow::Error>) {
    session::run(
        "balance",
        &o.target,
        &o.socket,
        &o.placement,
        Default::default(),
        |r| {
            let p = &mut r.params;
            param(
                p,
                "systems",
                o.systems
                    .iter()
                    .map(|(c, s)| format!("{c}x{s}"))
                    .collect::<Vec<_>>(),
            );
            param(
                p,
                "service_s",
                o.service
                    .iter()
                    .map(|d| d.as_secs_f64())
                    .collect::<Vec<_>>(),
            );
            param(p, "service_dist", o.service_dist.name());
            param(p, "service_kind", o.service_kind.name());
            param(p, "think_s", o.think.as_secs_f64());
            param(p, "think_dist", o.think_dist.name());
            param(p, "strategies", &o.strategies);
            param(p, "servers", o.servers.name());
            o.run.record(p);
        },
        async |s: &Session, r: &mut Results| {
            tokio::task::LocalSet::new()
                .run_until(measure(o, s, r))
                .await
        },
    )
}

/// A client's connections: one per replica, found by address.
struct Conns {
    replicas: Vec<BenchClient>,
    by_addr: HashMap<(String, u16), usize>,
}

impl Conns {
    fn for_ior(&self, ior: &Ior) -> Result<BenchClient, BenchError> {
        let p = ior.iiop_profile().ok_or_else(|| {
            BenchError::Reference("the dispatcher's reference has no IIOP profile".into())
        })?;
        let i = self.by_addr.get(&(p.host.clone(), p.port)).ok_or_else(|| {
            BenchError::Reference(format!(
                "the dispatcher handed out {}:{}, not a replica",
                p.host, p.port
            ))
        })?;
        Ok(self.replicas[*i].with_key(&p.object_key))
    }
}

async fn next_replica(d: &BenchClient) -> Result<Ior, BenchError> {
    let b = d.call("next", |_| Ok(())).await?;
    Ior::decode(&mut b.reader(d.options()))
        .map_err(|e| BenchError::Reference(format!("Dispatcher::next reply: {e}")))
}

async fn measure(o: &BalanceOpts, s: &Session, r: &mut Results) -> anyhow::Result<()> {
    for &k in &o.strategies {
        anyhow::ensure!((1..=5).contains(&k), "--strategies: {k} is not 1..5");
    }
    anyhow::ensure!(!o.service.is_empty(), "--service is empty");
    let spec = o.run.spec(o.target.gate.as_ref())?;
    let progress = o.progress.clone();
    for &(nc, ns) in &o.systems {
        let servers = replicas::start(&o.servers, ns, o.server_exe.as_ref())?;
        let iors: Vec<Ior> = servers.iter().map(|x| x.ior()).collect();
        let dispatcher = if o.strategies.contains(&5) {
            Some(
                RunningDispatcher::start("127.0.0.1:0", iors.clone())
                    .map_err(|e| anyhow::anyhow!("starting the dispatcher: {e}"))?,
            )
        } else {
            None
        };
        for &service in &o.service {
            let mut x1 = None;
            for &k in &o.strategies {
                let mut clients = Vec::with_capacity(nc);
                for ci in 0..nc {
                    let busy = ci < nc / 2;
                    let j = if busy { ci } else { ci - nc / 2 };
                    let mut conns = Conns {
                        replicas: Vec::with_capacity(ns),
                        by_addr: HashMap::new(),
                    };
                    for (i, ior) in iors.iter().enumerate() {
                        let c = BenchClient::connect(ior, &s.cfg).await.map_err(|e| {
                            anyhow::anyhow!("client {ci}: connecting to replica {i}: {e}")
                        })?;
                        if let Some(p) = ior.iiop_profile() {
                            conns.by_addr.insert((p.host.clone(), p.port), i);
                        }
                        conns.replicas.push(c);
                    }
                    let disp = match (&dispatcher, route(k, busy, j, ns)) {
                        (Some(d), Route::Dispatcher) => {
                            Some(BenchClient::connect(&d.ior, &s.cfg).await.map_err(|e| {
                                anyhow::anyhow!("client {ci}: connecting to the dispatcher: {e}")
                            })?)
                        }
                        _ => None,
                    };
                    let conns = Rc::new(conns);
                    let rr = Rc::new(std::cell::Cell::new(0usize));
                    let (mean_us, dist, kind) = (
                        service.as_secs_f64() * 1e6,
                        o.service_dist,
                        o.service_kind.wire(),
                    );
                    let rt = route(k, busy, j, ns);
                    clients.push(ClientSpec {
                        think: if busy { Duration::ZERO } else { o.think },
                        think_dist: o.think_dist,
                        class: if busy { "busy" } else { "nonbusy" }.into(),
                        call: Box::new(move |rng| {
                            let us = rng.draw(mean_us, dist);
                            let (conns, rr, disp) = (conns.clone(), rr.clone(), disp.clone());
                            Box::pin(async move {
                                let c = match rt {
                                    Route::Fixed(i) => conns.replicas[i].clone(),
                                    Route::RoundRobin(off) => {
                                        let n = rr.get();
                                        rr.set(n + 1);
                                        conns.replicas[(off + n) % conns.replicas.len()].clone()
                                    }
                                    Route::Dispatcher => {
                                        let d = disp.as_ref().ok_or_else(|| {
                                            BenchError::Reference("no dispatcher".into())
                                        })?;
                                        conns.for_ior(&next_replica(d).await?)?
                                    }
                                };
                                work(&c, us, kind).await
                            })
                        }),
                    });
                }
                let name = format!(
                    "C={nc} S={ns} service={} strategy {k}",
                    micros(service.as_secs_f64() * 1e6)
                );
                let pb = progress.case(&name);
                let res = workload::run(spec.clone(), clients).await;
                pb.done();
                let params = workload::case_params(
                    "void",
                    0,
                    &format!("strategy-{k}"),
                    json!({
                        "clients": nc,
                        "replicas": ns,
                        "service_us": service.as_secs_f64() * 1e6,
                        "strategy": k,
                        "strategy_name": strategy_name(k),
                    }),
                );
                let mut case = res.case(&name, params);
                let x = res.x();
                if k == 1 {
                    x1 = Some(x);
                }
                param(
                    &mut case.extra,
                    "relative_to_strategy_1",
                    x1.map(|b| x / b.max(1e-9)),
                );
                param(&mut case.extra, "busy_calls_per_sec", res.class_x("busy"));
                param(
                    &mut case.extra,
                    "nonbusy_calls_per_sec",
                    res.class_x("nonbusy"),
                );
                let failure = res.failure(&name);
                r.cases.push(case);
                if let Some(e) = failure {
                    return Err(e);
                }
            }
        }
        if let Some(d) = &dispatcher {
            param(
                &mut r.params,
                &format!("dispatcher_handed_out_{nc}x{ns}"),
                d.handed_out(),
            );
        }
    }
    Ok(())
}

async fn work(c: &BenchClient, us: f64, kind: Kind) -> Result<(), BenchError> {
    c.work(us, WireDist::Fixed, kind).await.map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_follow_the_study() {
        // C=4 S=2: busy 0,1 / non-busy 0,1
        assert_eq!(route(1, true, 0, 2), Route::Fixed(0));
        assert_eq!(route(1, true, 1, 2), Route::Fixed(0));
        assert_eq!(route(1, false, 0, 2), Route::Fixed(1));
        assert_eq!(route(1, false, 1, 2), Route::Fixed(1));
        assert_eq!(route(2, true, 1, 2), Route::Fixed(1));
        assert_eq!(route(2, false, 1, 2), Route::Fixed(1));
        assert_eq!(route(3, true, 1, 2), Route::RoundRobin(1));
        assert_eq!(route(3, false, 0, 2), Route::Fixed(0));
        assert_eq!(route(4, false, 1, 2), Route::RoundRobin(1));
        assert_eq!(route(5, true, 0, 2), Route::Dispatcher);
        // C=8 S=4: unbalanced busy on 0,1 and non-busy on 2,3
        assert_eq!(route(1, true, 3, 4), Route::Fixed(1));
        assert_eq!(route(1, false, 3, 4), Route::Fixed(3));
        assert_eq!(parse_system("8x4"), Ok((8, 4)));
        assert!(parse_system("3x2").is_err());
        assert_eq!(strategy_name(5), "central-dispatcher-rr");
    }
}
