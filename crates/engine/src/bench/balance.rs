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
use std::rc::Rc;
use std::time::Duration;

use iiop_bench_idl::bench::work::{Dist as WireDist, Kind};
use iiop_bench_idl::client::{BenchClient, BenchError};
use iiop_bench_idl::dispatcher::RunningDispatcher;
use iiop_giop::ior::Ior;
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
use crate::units::micros;

/// One system: C clients (half busy, half not) over S server replicas.
/// Written `4x2`; its serde form is `{ clients = 4, servers = 2 }` (or
/// that text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct System {
    pub clients: usize,
    pub servers: usize,
}

impl std::fmt::Display for System {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.clients, self.servers)
    }
}

impl std::str::FromStr for System {
    type Err = String;

    /// `CLIENTSxSERVERS` (e.g. `4x2`).
    fn from_str(s: &str) -> Result<System, String> {
        let (c, v) = s
            .split_once(['x', 'X'])
            .ok_or_else(|| format!("{s:?}: use CLIENTSxSERVERS, e.g. 4x2"))?;
        let clients: usize = c.trim().parse().map_err(|e| format!("{s:?}: {e}"))?;
        let servers: usize = v.trim().parse().map_err(|e| format!("{s:?}: {e}"))?;
        let sys = System { clients, servers };
        sys.check().map_err(|e| format!("{s:?}: {e}"))?;
        Ok(sys)
    }
}

impl System {
    /// Clients even and at least 2 (at most 256), servers 2..64.
    fn check(&self) -> Result<(), String> {
        let (c, v) = (self.clients, self.servers);
        if !(2..=256).contains(&c) || !c.is_multiple_of(2) || !(2..=64).contains(&v) {
            return Err("clients must be even and at least 2, servers 2..64".into());
        }
        Ok(())
    }
}

impl<'de> Deserialize<'de> for System {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<System, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Fields {
            clients: usize,
            servers: usize,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Fields(Fields),
            Text(String),
        }
        match Form::deserialize(d)? {
            Form::Fields(f) => {
                let s = System {
                    clients: f.clients,
                    servers: f.servers,
                };
                s.check().map(|()| s).map_err(serde::de::Error::custom)
            }
            Form::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// A `bench balance` job (`Default`: the command line's defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BalanceJob {
    pub target: TargetOpts,
    /// The systems measured.
    pub systems: Vec<System>,
    /// Server service times.
    #[serde(with = "crate::units::durations")]
    pub service: Vec<Duration>,
    /// Distribution of service times (drawn on the client, seeded).
    pub service_dist: Dist,
    /// How replicas spend the service time (spin: CPU, as in the study).
    pub service_kind: ServiceKind,
    /// Think time of the non-busy clients (scale it down for quick runs).
    #[serde(with = "crate::units::duration")]
    pub think: Duration,
    /// Distribution of the think time.
    pub think_dist: Dist,
    /// Strategies to run (1-5).
    pub strategies: Vec<u8>,
    /// The replicas: ours in this process (one thread each), ours as
    /// processes, or a vendor ORB's.
    pub servers: Replicas,
    pub run: RunRule,
    pub socket: Sockets,
    pub placement: PlacementOpts,
}

impl Default for BalanceJob {
    /// Replicas in this process.
    fn default() -> Self {
        BalanceJob {
            target: TargetOpts::default(),
            systems: vec![
                System {
                    clients: 4,
                    servers: 2,
                },
                System {
                    clients: 8,
                    servers: 4,
                },
            ],
            service: [10, 40, 120].map(Duration::from_millis).to_vec(),
            service_dist: Dist::Fixed,
            service_kind: ServiceKind::Spin,
            think: Duration::from_millis(500),
            think_dist: Dist::Fixed,
            strategies: vec![1, 2, 3, 4, 5],
            servers: Replicas::InProcess,
            run: RunRule::default(),
            socket: Sockets::default(),
            placement: PlacementOpts::default(),
        }
    }
}

impl BalanceJob {
    /// [`validate`](BenchJob::validate) without reading the target's file.
    pub fn validate_fields(&self) -> Result<(), JobError> {
        check(!self.systems.is_empty(), || "`systems` is empty".into())?;
        for sys in &self.systems {
            sys.check()
                .map_err(|e| JobError::new(format!("`systems` {sys}: {e}")))?;
        }
        check(!self.strategies.is_empty(), || {
            "`strategies` is empty".into()
        })?;
        for &k in &self.strategies {
            check((1..=5).contains(&k), || {
                format!("`strategies`: {k} is not 1..5")
            })?;
        }
        check(!self.service.is_empty(), || "`service` is empty".into())?;
        self.run.validate()?;
        self.socket.validate()?;
        self.placement.validate()
    }
}

session::bench_job!(BalanceJob, "balance");

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

/// Run a load-balancing job.
pub fn run(o: &BalanceJob, ctx: &RunContext) -> (Results, Option<Error>) {
    session::run(
        o,
        Default::default(),
        ctx,
        |r| {
            let p = &mut r.params;
            param(
                p,
                "systems",
                o.systems.iter().map(System::to_string).collect::<Vec<_>>(),
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
            let programs = ctx.programs.as_deref();
            tokio::task::LocalSet::new()
                .run_until(measure(o, programs, s, r))
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

async fn measure(
    o: &BalanceJob,
    programs: Option<&dyn crate::programs::Programs>,
    s: &Session,
    r: &mut Results,
) -> Result<()> {
    let spec = o.run.spec(s.gate.as_ref());
    let progress = s.progress.clone();
    for sys in &o.systems {
        let (nc, ns) = (sys.clients, sys.servers);
        let servers = replicas::start(&o.servers, ns, programs)?;
        let iors: Vec<Ior> = servers.iter().map(|x| x.ior()).collect();
        let dispatcher = if o.strategies.contains(&5) {
            Some(
                RunningDispatcher::start("127.0.0.1:0", iors.clone())
                    .map_err(|e| fail!(Local, "starting the dispatcher: {e}"))?,
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
                            fail!(Target, "client {ci}: connecting to replica {i}: {e}")
                        })?;
                        if let Some(p) = ior.iiop_profile() {
                            conns.by_addr.insert((p.host.clone(), p.port), i);
                        }
                        conns.replicas.push(c);
                    }
                    let disp = match (&dispatcher, route(k, busy, j, ns)) {
                        (Some(d), Route::Dispatcher) => {
                            Some(BenchClient::connect(&d.ior, &s.cfg).await.map_err(|e| {
                                fail!(Target, "client {ci}: connecting to the dispatcher: {e}")
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
        assert_eq!(
            "8x4".parse::<System>(),
            Ok(System {
                clients: 8,
                servers: 4
            })
        );
        assert!("3x2".parse::<System>().is_err());
        let sys: Vec<System> =
            serde_json::from_str(r#"[{"clients": 4, "servers": 2}, "8x4"]"#).unwrap();
        assert_eq!(sys[1].to_string(), "8x4");
        assert!(serde_json::from_str::<System>(r#"{"clients": 3, "servers": 2}"#).is_err());
        assert_eq!(strategy_name(5), "central-dispatcher-rr");
    }
}
