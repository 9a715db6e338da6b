//! `iiopbench bench setup`: seed 001's connection set-up latency T (E1.1)
//! across server states — from holding a reference to the first reply
//! (`ping`) on a fresh connection:
//! - `running-target`: the `--target`, already running (study case III/IV);
//! - `in-process-running`: our server already running inside this process
//!   (the nearest thing to the study's collocated case V: we have no ORB
//!   to short-circuit the call, so it still goes through loopback GIOP);
//! - `in-process-start`: our server started in this process on demand,
//!   timed from the start until the first reply;
//! - `spawned`: a server process started on demand with `--spawn "<cmd>"`
//!   (study case I/II), timed from spawn until its first reply. The
//!   reference is the IOR line the command prints (docs/vendor-protocol.md)
//!   or `--spawn-ref`; `{port}` in the command becomes a free port. A
//!   server on another host is the same thing with a command that starts
//!   it there (e.g. `ssh host iiopbench serve --listen 0.0.0.0:{port}`).
//!
//! `bench connect` breaks one fresh connection to a running server into
//! its steps (TCP, first request with code sets, LocateRequest, warm
//! request); `bench setup` measures only the whole T, but across the
//! server states the study compares.

use std::process::Command;
use std::time::{Duration, Instant};

use iiop_bench_idl::client::BenchClient;
use iiop_bench_idl::run::{RunningServer, ServerOptions};
use iiop_giop::ior::Ior;
use iiop_giop::Target;
use iiop_transport::client::Client;
use iiop_transport::naming::resolve_target;
use serde_json::json;

use serde::{Deserialize, Serialize};

use super::replicas;
use super::session::{self, Session};
use super::workload;
use crate::error::{bail, check, ensure, fail, Error, JobError, Result};
use crate::hist::Latency;
use crate::options::{PlacementOpts, Sockets};
use crate::results::{param, Case, Results};
use crate::run_context::RunContext;
use crate::target::TargetOpts;

/// A `bench setup` job (`Default`: the command line's defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SetupJob {
    pub target: TargetOpts,
    /// Set-ups timed per running / in-process case.
    pub count: u64,
    /// Start this server command on demand (`sh -c`); `{port}` becomes a
    /// free port. It must print its IOR on a line, unless `spawn_ref`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spawn: Option<String>,
    /// The spawned server's reference (IOR, corbaloc, file; `{port}`
    /// substituted), polled until it answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spawn_ref: Option<String>,
    /// Spawned servers to time.
    pub spawn_count: u64,
    /// Give up on a spawned server after this long.
    #[serde(with = "crate::units::duration")]
    pub spawn_timeout: Duration,
    pub socket: Sockets,
    pub placement: PlacementOpts,
}

impl Default for SetupJob {
    fn default() -> Self {
        SetupJob {
            target: TargetOpts::default(),
            count: 50,
            spawn: None,
            spawn_ref: None,
            spawn_count: 5,
            spawn_timeout: Duration::from_secs(60),
            socket: Sockets::default(),
            placement: PlacementOpts::default(),
        }
    }
}

impl SetupJob {
    /// [`validate`](BenchJob::validate) without reading the target's file.
    pub fn validate_fields(&self) -> Result<(), JobError> {
        check(self.count >= 1, || "`count` must be at least 1".into())?;
        check(self.spawn_ref.is_none() || self.spawn.is_some(), || {
            "`spawn_ref` is the reference of `spawn`'s server, and there is no `spawn`".into()
        })?;
        if self.spawn.is_some() {
            check(self.spawn_count >= 1, || {
                "`spawn_count` must be at least 1".into()
            })?;
            check(!self.spawn_timeout.is_zero(), || {
                "`spawn_timeout` must be more than 0".into()
            })?;
        }
        self.socket.validate()?;
        self.placement.validate()
    }
}

session::bench_job!(SetupJob, "setup");

/// Run a set-up job.
pub fn run(o: &SetupJob, ctx: &RunContext) -> (Results, Option<Error>) {
    session::run(
        o,
        Default::default(),
        ctx,
        |r| {
            let p = &mut r.params;
            param(p, "count", o.count);
            param(p, "spawn", &o.spawn);
            param(p, "spawn_ref", &o.spawn_ref);
            param(p, "spawn_count", o.spawn_count);
        },
        async |s: &Session, r: &mut Results| measure(o, s, r).await,
    )
}

/// Fresh connection to `ior` → first `ping` reply.
async fn first_reply(ior: &Ior, s: &Session) -> Result<()> {
    let c = BenchClient::connect(ior, &s.cfg)
        .await
        .map_err(|e| fail!(Target, "connecting: {e}"))?;
    c.ping().await.map_err(|e| fail!(Target, "ping: {e}"))?;
    c.close();
    Ok(())
}

/// The case of one server state; `samples` (µs) are independent set-ups,
/// so their mean's 95 % CI is `extra.t_ci95`.
fn case(mode: &str, h: &Latency, samples: &[f64], secs: f64, what: &str) -> Case {
    let mut extra = std::collections::BTreeMap::new();
    param(&mut extra, "t_ci95", super::stats::ci95(samples));
    Case {
        extra,
        name: mode.to_string(),
        params: workload::case_params("void", 0, mode, json!({ "server": what })),
        calls: h.len(),
        seconds: secs,
        calls_per_sec: h.len() as f64 / secs.max(1e-9),
        latency_us: (!h.is_empty()).then(|| h.summary()),
        histogram: (!h.is_empty()).then(|| h.to_base64()),
        ..Default::default()
    }
}

async fn measure(o: &SetupJob, s: &Session, r: &mut Results) -> Result<()> {
    let progress = s.progress.clone();
    // Already running: the target (when given) and our server in-process.
    let local;
    let mut running: Vec<(&str, Ior, String)> = Vec::new();
    if !s.embedded() {
        running.push((
            "running-target",
            s.ior().clone(),
            s.resolved.info.reference.clone(),
        ));
        local = Some(
            RunningServer::start(ServerOptions {
                threads: 1,
                ..ServerOptions::default()
            })
            .map_err(|e| fail!(Local, "in-process server: {e}"))?,
        );
        let l = local.as_ref().expect("just set");
        running.push((
            "in-process-running",
            l.refs().ior.clone(),
            "ours, in this process".into(),
        ));
    } else {
        running.push((
            "in-process-running",
            s.ior().clone(),
            "ours, in this process".into(),
        ));
    }
    for (mode, ior, what) in running {
        let pb = progress.case(mode);
        let mut h = Latency::new();
        let mut samples = Vec::new();
        let t0 = Instant::now();
        for i in 0..o.count {
            ensure!(!crate::interrupt::requested(), Interrupted, "interrupted");
            let t = Instant::now();
            first_reply(&ior, s)
                .await
                .map_err(|e| e.context(format!("{mode} set-up {}", i + 1)))?;
            h.record_ns(t.elapsed().as_nanos() as u64);
            samples.push(t.elapsed().as_secs_f64() * 1e6);
        }
        pb.done();
        r.cases
            .push(case(mode, &h, &samples, t0.elapsed().as_secs_f64(), &what));
    }
    // Our server started in this process on demand.
    {
        let pb = progress.case("in-process-start");
        let mut h = Latency::new();
        let mut samples = Vec::new();
        let t0 = Instant::now();
        for i in 0..o.count {
            ensure!(!crate::interrupt::requested(), Interrupted, "interrupted");
            let t = Instant::now();
            let srv = RunningServer::start(ServerOptions {
                threads: 1,
                ..ServerOptions::default()
            })
            .map_err(|e| fail!(Local, "in-process-start {}: {e}", i + 1))?;
            first_reply(&srv.refs().ior, s)
                .await
                .map_err(|e| e.context(format!("in-process-start {}", i + 1)))?;
            h.record_ns(t.elapsed().as_nanos() as u64);
            samples.push(t.elapsed().as_secs_f64() * 1e6);
            drop(srv);
        }
        pb.done();
        r.cases.push(case(
            "in-process-start",
            &h,
            &samples,
            t0.elapsed().as_secs_f64(),
            "ours, started in this process",
        ));
    }
    if let Some(cmd) = &o.spawn {
        let pb = progress.case("spawned");
        let mut h = Latency::new();
        let mut samples = Vec::new();
        let t0 = Instant::now();
        for i in 0..o.spawn_count {
            ensure!(!crate::interrupt::requested(), Interrupted, "interrupted");
            let d = spawn_once(o, cmd, s)
                .await
                .map_err(|e| e.context(format!("spawned server {}", i + 1)))?;
            h.record_ns(d.as_nanos() as u64);
            samples.push(d.as_secs_f64() * 1e6);
        }
        pb.done();
        r.cases.push(case(
            "spawned",
            &h,
            &samples,
            t0.elapsed().as_secs_f64(),
            cmd,
        ));
    }
    Ok(())
}

/// Start the command, wait for its first reply; the time in between.
async fn spawn_once(o: &SetupJob, cmd: &str, s: &Session) -> Result<Duration> {
    let port = replicas::free_port()?.to_string();
    let line = cmd.replace("{port}", &port);
    let mut c = Command::new("sh");
    c.args(["-c", &format!("exec {line}")]);
    let t0 = Instant::now();
    match &o.spawn_ref {
        None => {
            // Blocks this (client) thread while the child starts: nothing
            // else runs on it meanwhile.
            let child = replicas::spawn_reading_ior(c, "the spawn command", o.spawn_timeout)?;
            first_reply(&child.ior, s).await?;
            Ok(t0.elapsed())
        }
        Some(r) => {
            let reference = r.replace("{port}", &port);
            let _child = replicas::spawn_quiet(c, "the spawn command")?;
            let parsed =
                Target::load(&reference).map_err(|e| Error::job(format!("`spawn_ref`: {e}")))?;
            let client = Client::new(s.cfg.clone());
            loop {
                let attempt = async {
                    let ior = resolve_target(&client, &parsed)
                        .await
                        .map_err(Error::target)?;
                    first_reply(&ior, s).await
                };
                match attempt.await {
                    Ok(()) => return Ok(t0.elapsed()),
                    Err(e) if t0.elapsed() > o.spawn_timeout => {
                        bail!(Target, "no reply within {:?}: {e}", o.spawn_timeout)
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(2)).await,
                }
            }
        }
    }
}
