//! Distributed runs (docs/agents.md): one job run by N agents at once
//! against one shared server, their results merged into one. The protocol
//! — start barrier, clock offsets, collecting results — is crate
//! `iiop-agents`; this module plugs the engine's jobs into it: the
//! coordinator sends every agent the same typed [`Job`], which the agent
//! runs in-process, held by its start gate.
//!
//! - the coordinator: [`prepare_job`] (the job every agent runs),
//!   [`run`] (listen, optionally start local agents, coordinate, merge)
//!   and [`coordinate_and_merge`] (the same on a listener the caller made,
//!   e.g. inside a lab host);
//! - an agent: [`join`] (take part in a coordinator's run) and
//!   [`run_order`] (run the job an order carries, held by its start gate);
//! - [`Children`]: agents started as processes (by the caller's
//!   [`Programs`](crate::programs::Programs));
//! - [`merge`]: the agents' results folded into one results value;
//! - [`slurm`]: the whole run as one Slurm job (the coordinator in its
//!   batch step, the agents one task each).

pub mod merge;
pub mod slurm;

pub use merge::{merge_agents, Ran};

use std::net::TcpListener;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use iiop_agents::{coordinate, AgentReport, Clock, Config, Order, Status, SystemClock};

use crate::error::{check, fail, Error, JobError, Result};
use crate::gate::Gate;
use crate::job::Job;
use crate::results::{AgentEntry, AgentsInfo, Results};
use crate::run_context::RunContext;

/// From the barrier closing to the first case: for agents to connect and
/// warm up.
pub const LEAD: Duration = Duration::from_secs(2);
/// Added to `duration` between the starts of consecutive cases: the
/// next case's connection set-up and warm-up happen in it.
pub const CASE_GAP: Duration = Duration::from_secs(1);

/// What every coordinated run needs, wherever its agents run.
#[derive(Debug, Clone)]
pub struct CoordOpts {
    /// Agents to run (ids 0..N).
    pub agents: u32,
    /// Measuring time of each case, the same for every agent.
    pub duration: Duration,
    /// How long the start barrier waits for agents to register; the run
    /// starts with those that did.
    pub register_timeout: Duration,
    /// How long, after the start, agents may take to send their results
    /// (`None`: enough for 100 cases).
    pub result_timeout: Option<Duration>,
    /// Agents whose clock is further off than this (or measured less
    /// precisely) are not admitted.
    pub max_clock_offset: Duration,
}

impl Default for CoordOpts {
    /// The command line's defaults, with one agent.
    fn default() -> Self {
        CoordOpts {
            agents: 1,
            duration: Duration::from_secs(10),
            register_timeout: Duration::from_secs(60),
            result_timeout: None,
            max_clock_offset: Duration::from_secs(1),
        }
    }
}

impl CoordOpts {
    /// The coordinator's configuration: one case every `duration` plus
    /// [`CASE_GAP`].
    pub fn config(&self) -> Config {
        let period = self.duration + CASE_GAP;
        Config {
            agents: self.agents,
            register_timeout: self.register_timeout,
            max_offset: self.max_clock_offset,
            pings: 8,
            lead: LEAD,
            case_period: period,
            result_timeout: self.result_timeout.unwrap_or(period * 100),
            io_timeout: Duration::from_secs(10),
            version: version(),
        }
    }

    /// How long a whole run may take, from the first agent's start to the
    /// last results (Kubernetes' deadline for its Jobs).
    pub fn deadline(&self) -> Duration {
        let cfg = self.config();
        self.register_timeout + LEAD + cfg.result_timeout + Duration::from_secs(60)
    }
}

/// This program's version, which agents must share with the coordinator.
pub fn version() -> String {
    let t = crate::results::Tool::current();
    format!("{} {}", t.version, t.git_commit)
}

/// The job every agent runs: `job` (a latency, throughput, closed or
/// sweep job with a shared target), checked, with one run and `duration`
/// per case (a sweep's step) in the job's own terms. Options the run sets itself are refused, said
/// in one line.
pub fn prepare_job(job: &Job, duration: Duration) -> Result<Job, JobError> {
    let per_case = "every agent measures the run's `duration` per case";
    let set = |f: &str, why: &str| JobError::new(format!("`{f}` is set by the agent run: {why}"));
    let mut job = job.clone();
    check(
        matches!(
            job,
            Job::Latency(_) | Job::Throughput(_) | Job::Closed(_) | Job::Sweep(_)
        ),
        || {
            format!(
                "agents run latency, throughput, closed or sweep jobs, not {}",
                job.kind()
            )
        },
    )?;
    if job.placement().runs.is_some() {
        return Err(set("runs", "each agent measures one run"));
    }
    check(job.target().is_some_and(|t| t.target.is_some()), || {
        "agents need a shared server: give the job a `target`".into()
    })?;
    match &mut job {
        Job::Latency(l) => {
            let d = crate::bench::latency::LatencyJob::default();
            if l.duration.is_some() {
                return Err(set("duration", per_case));
            }
            if l.count != d.count {
                return Err(set("count", per_case));
            }
            if l.baseline {
                return Err(set(
                    "baseline",
                    "a raw-TCP baseline per agent measures no shared server",
                ));
            }
            l.duration = Some(duration);
        }
        Job::Throughput(t) => {
            let d = crate::bench::throughput::ThroughputJob::default();
            for (f, same) in [
                ("total", t.total == d.total),
                ("min_duration", t.min_duration == d.min_duration),
                ("max_duration", t.max_duration == d.max_duration),
            ] {
                if !same {
                    return Err(set(f, per_case));
                }
            }
            if t.baseline {
                return Err(set(
                    "baseline",
                    "a raw-TCP baseline per agent measures no shared server",
                ));
            }
            t.total = 0;
            t.min_duration = duration;
            t.max_duration = duration;
        }
        Job::Closed(c) => {
            let d = crate::bench::workload::RunRule::default();
            if c.run.duration != d.duration {
                return Err(set("duration", per_case));
            }
            if c.run.until_ci.is_some() {
                return Err(set("until_ci", per_case));
            }
            c.run.duration = duration;
        }
        Job::Sweep(w) => {
            let d = crate::bench::sweep::SweepJob::default();
            if w.step_duration != d.step_duration && w.step_duration != duration {
                return Err(set("step_duration", per_case));
            }
            check(!w.ceiling, || {
                "`ceiling` is one process's: measure the generator's ceiling with a sweep of its own, not in an agent run".into()
            })?;
            check(!w.baseline, || {
                "`baseline` is one process's: measure raw TCP with a sweep of its own, not in an agent run".into()
            })?;
            w.step_duration = duration;
            // Every agent on every step at the same instants; the stop
            // rules judge the merged steps.
            w.every_step = true;
        }
        _ => unreachable!("checked above"),
    }
    job.placement_mut().runs = Some(1);
    job.validate_fields()?;
    Ok(job)
}

/// Run an order in this process: the gate armed at the order's start, the
/// job, the results as JSON with `params.agent`; an `Err` (the agent
/// reports it as failed) when the job cannot run here.
pub fn run_order(order: &Order<Job>, clock: &dyn Clock) -> Result<serde_json::Value, String> {
    order.job.validate().map_err(|e| e.to_string())?;
    let gate = Gate::new(order.start_instant(clock), order.case_period);
    let ctx = RunContext::new().with_gate(gate.clone());
    let (mut r, err) = order.job.run(&ctx);
    let late = gate.late_ms();
    r.params.insert(
        "agent".into(),
        serde_json::json!({"id": order.id, "start_late_ms": late, "clock_offset_ns": order.offset_ns}),
    );
    if let Some(e) = err {
        r.outcome.complete = false;
        r.outcome.failure.get_or_insert_with(|| e.to_string());
    }
    serde_json::to_value(&r).map_err(|e| e.to_string())
}

/// One agent's options (`agents join`).
#[derive(Debug, Clone)]
pub struct JoinOpts {
    /// The coordinator to join, `HOST:PORT`.
    pub coordinator: String,
    /// This agent's id (a Kubernetes completion index); assigned by the
    /// coordinator when `None`.
    pub id: Option<u32>,
    /// This agent's name in the results (`None`: the host name).
    pub name: Option<String>,
    /// How long to keep trying to reach the coordinator.
    pub connect_timeout: Duration,
}

/// Take part in a coordinator's run as one agent: register, run the job
/// it orders, send the results.
pub fn join(o: &JoinOpts) -> Result<()> {
    let name = o
        .name
        .clone()
        .unwrap_or_else(|| crate::sysinfo::HostInfo::current().hostname);
    let cfg = iiop_agents::JoinConfig {
        coordinator: o.coordinator.clone(),
        id: o.id,
        name,
        version: version(),
        connect_timeout: o.connect_timeout,
        // The barrier's deadline is the coordinator's: wait long enough
        // for any of them.
        start_timeout: Duration::from_secs(3600),
    };
    let clock = SystemClock;
    match iiop_agents::join(&cfg, &clock, &mut |order: &Order<Job>| {
        run_order(order, &clock)
    })
    .map_err(Error::peer)?
    {
        iiop_agents::Joined::Ran { .. } => Ok(()),
        iiop_agents::Joined::Aborted(why) => Err(fail!(
            Peer,
            "coordinator {} did not admit this agent: {why}",
            o.coordinator
        )),
    }
}

/// Agents a run started itself (`agents run --local`, lab hosts): waited
/// for a little after the run, then killed.
#[derive(Debug, Default)]
pub struct Children(pub Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        let until = Instant::now() + Duration::from_secs(5);
        for c in &mut self.0 {
            while Instant::now() < until && matches!(c.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(20));
            }
            if matches!(c.try_wait(), Ok(None)) {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

/// The options of a coordinator (`agents run`).
#[derive(Debug, Clone)]
pub struct CoordinatorOpts {
    pub coord: CoordOpts,
    /// Address to listen on for agents (port 0 picks a free port).
    pub listen: String,
    /// Also start the agents on this host, as processes (the run's
    /// [`Programs`](crate::programs::Programs) start them).
    pub local: bool,
    /// The local agents' stderr is dropped.
    pub quiet: bool,
    /// The job every agent runs, checked and completed by [`prepare_job`].
    pub job: Job,
}

/// A coordinated run: the merged results (when any agent was admitted or
/// reported) and the error that ended the run; an `Err` when it could not
/// start (a job the agents cannot run, no listening socket, an agent that
/// could not be started). `ctx` hears the coordinator's news as notes
/// (`agents: …` lines), starts the local agents and gives the merged
/// results' command line.
pub fn run(o: &CoordinatorOpts, ctx: &RunContext) -> Result<(Option<Results>, Option<Error>)> {
    let job = prepare_job(&o.job, o.coord.duration)?;
    let listener = TcpListener::bind(&o.listen)
        .map_err(|e| fail!(Local, "listening for agents on {}: {e}", o.listen))?;
    let addr = listener.local_addr()?;
    ctx.progress
        .note(&format!("agents: coordinator listening on {addr}"));
    let mut children = Children::default();
    if o.local {
        let programs = ctx.programs.as_deref().ok_or_else(|| {
            Error::local("local agents are processes: this run has no way to start them (RunContext::programs)")
        })?;
        let host = if addr.ip().is_unspecified() {
            "127.0.0.1".to_string()
        } else {
            addr.ip().to_string()
        };
        let to = format!("{host}:{}", addr.port());
        for i in 0..o.coord.agents {
            let mut cmd = programs.agent(&to, &format!("local-{i}"));
            quiet_agent(&mut cmd, o.quiet);
            children.0.push(
                cmd.spawn()
                    .map_err(|e| fail!(Local, "starting local agent {i}: {e}"))?,
            );
        }
    }
    let (mut merged, err) =
        coordinate_and_merge(&listener, &o.coord, &job, &|l| ctx.progress.note(l));
    drop(children);
    if let Some(m) = &mut merged {
        m.command = ctx.command.clone();
    }
    Ok((merged, err))
}

/// An agent process's standard streams: no input or output, and with
/// `quiet` no error output either.
pub fn quiet_agent(cmd: &mut std::process::Command, quiet: bool) {
    cmd.stdin(Stdio::null()).stdout(Stdio::null());
    if quiet {
        cmd.stderr(Stdio::null());
    }
}

/// Coordinate on `listener` and merge: the merged results (when any agent
/// was admitted or reported), and the error that ended the run. `log`
/// hears the coordinator's news, one `agents: …` line at a time.
pub fn coordinate_and_merge(
    listener: &TcpListener,
    o: &CoordOpts,
    job: &Job,
    log: &dyn Fn(&str),
) -> (Option<Results>, Option<Error>) {
    let cfg = o.config();
    let log = |line: &str| log(&format!("agents: {line}"));
    let outcome = match coordinate(listener, &cfg, job, &SystemClock, &log) {
        Ok(x) => x,
        Err(e) => return (None, Some(fail!(Local, "coordinator: {e}"))),
    };
    let start = outcome.start_at.unwrap_or_else(|| SystemClock.now_ns());
    let mut info = AgentsInfo {
        requested: o.agents,
        start_at: crate::results::rfc3339_ms(start),
        start_at_unix_ns: start,
        duration_s: o.duration.as_secs_f64(),
        case_period_s: cfg.case_period.as_secs_f64(),
        ..Default::default()
    };
    let mut ran = Vec::new();
    for a in &outcome.agents {
        let mut e = entry(a);
        if let Some(v) = &a.results {
            match serde_json::from_value::<Results>(v.clone()) {
                Ok(results) => ran.push(Ran { id: a.id, results }),
                Err(err) => {
                    e.status = "failed".into();
                    e.reason = Some(format!("its results are not a results file: {err}"));
                }
            }
        }
        info.agents.push(e);
    }
    let mut base = crate::results::Results::new("agents", Vec::new());
    base.job = serde_json::to_value(job).ok();
    base.started_at = info.start_at.clone();
    base.params.insert(
        "refused_connections".into(),
        outcome
            .refused
            .iter()
            .map(|(n, w)| format!("{n}: {w}"))
            .collect::<Vec<_>>()
            .into(),
    );
    match merge_agents(base, &ran, info) {
        Ok(mut m) => {
            if let Job::Sweep(w) = job {
                let each: Vec<&Results> = ran.iter().map(|a| &a.results).collect();
                crate::bench::sweep::merge_steps(&mut m, &each, w);
            }
            (Some(m), None)
        }
        Err(e) => (None, Some(e)),
    }
}

fn entry(a: &AgentReport) -> AgentEntry {
    AgentEntry {
        id: a.id,
        name: a.name.clone(),
        status: match a.status {
            Status::Ran => "ran",
            Status::Failed => "failed",
            Status::Missing => "missing",
            Status::Rejected => "rejected",
        }
        .into(),
        reason: a.reason.clone(),
        clock_offset_ms: a.clock.map(|c| c.offset_ns as f64 / 1e6),
        clock_rtt_ms: a.clock.map(|c| c.rtt_ns as f64 / 1e6),
        clock_samples: a.clock.map(|c| c.samples),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::closed::ClosedJob;
    use crate::bench::latency::LatencyJob;
    use crate::bench::throughput::ThroughputJob;

    fn on_target<J: Into<Job>>(j: J) -> Job {
        let mut job = j.into();
        job.target_mut().unwrap().target = Some("corbaloc::h:2809/Bench".into());
        job
    }

    #[test]
    fn the_job_gets_one_run_and_the_duration_in_each_kinds_terms() {
        let d = Duration::from_millis(1500);
        let Job::Latency(l) = prepare_job(&on_target(LatencyJob::default()), d).unwrap() else {
            panic!()
        };
        assert_eq!((l.duration, l.placement.runs), (Some(d), Some(1)));
        let Job::Throughput(t) = prepare_job(&on_target(ThroughputJob::default()), d).unwrap()
        else {
            panic!()
        };
        assert_eq!((t.total, t.min_duration, t.max_duration), (0, d, d));
        let Job::Closed(c) = prepare_job(&on_target(ClosedJob::default()), d).unwrap() else {
            panic!()
        };
        assert_eq!((c.run.duration, c.placement.runs), (d, Some(1)));
    }

    /// A sweep's steps are the run's cases: each measures the run's
    /// duration, and every agent runs every step.
    #[test]
    fn a_sweep_runs_every_step_for_the_runs_duration() {
        use crate::bench::sweep::SweepJob;
        let d = Duration::from_secs(3);
        let Job::Sweep(w) = prepare_job(&on_target(SweepJob::default()), d).unwrap() else {
            panic!()
        };
        assert_eq!(
            (w.step_duration, w.every_step, w.placement.runs),
            (d, true, Some(1))
        );
        let err = |f: &dyn Fn(&mut SweepJob)| {
            let mut j = SweepJob::default();
            f(&mut j);
            prepare_job(&on_target(j), d).unwrap_err().to_string()
        };
        assert_eq!(
            err(&|j| j.step_duration = Duration::from_secs(5)),
            "`step_duration` is set by the agent run: every agent measures the run's `duration` per case"
        );
        assert!(err(&|j| j.ceiling = true).starts_with("`ceiling` is one process's"));
        assert!(err(&|j| j.baseline = true).starts_with("`baseline` is one process's"));
        // The run's own duration given as the step's is no contradiction.
        let same = SweepJob {
            step_duration: d,
            ..Default::default()
        };
        assert!(prepare_job(&on_target(same), d).is_ok());
    }

    #[test]
    fn jobs_the_run_cannot_honour_are_refused_in_one_line() {
        let d = Duration::from_secs(1);
        let err = |j: Job| prepare_job(&j, d).unwrap_err().to_string();
        assert_eq!(
            err(Job::Latency(LatencyJob::default())),
            "agents need a shared server: give the job a `target`"
        );
        assert_eq!(
            err(on_target(LatencyJob {
                count: 5,
                ..Default::default()
            })),
            "`count` is set by the agent run: every agent measures the run's `duration` per case"
        );
        assert_eq!(
            err(on_target(ThroughputJob {
                baseline: true,
                ..Default::default()
            })),
            "`baseline` is set by the agent run: a raw-TCP baseline per agent measures no shared server"
        );
        assert_eq!(
            err(on_target(crate::bench::connect::ConnectJob::default())),
            "agents run latency, throughput, closed or sweep jobs, not connect"
        );
    }

    /// The wire's start order carries the typed job: an agent decodes the
    /// coordinator's frame straight into a [`Job`].
    #[test]
    fn an_agents_wire_message_deserializes_into_the_typed_job() {
        let job = prepare_job(&on_target(LatencyJob::default()), Duration::from_secs(2)).unwrap();
        let mut frame = Vec::new();
        iiop_agents::wire::encode(
            &iiop_agents::wire::ToAgent::Start {
                id: 1,
                agents: 2,
                job: &job,
                start_at: 0,
                offset_ns: 0,
                case_period_ns: 3_000_000_000,
            },
            &mut frame,
        );
        let got: iiop_agents::wire::ToAgent<Job> =
            iiop_agents::wire::decode(&mut frame).unwrap().unwrap();
        let iiop_agents::wire::ToAgent::Start { job: back, .. } = got else {
            panic!("{got:?}")
        };
        assert_eq!(back, job);
        let Job::Latency(l) = back else { panic!() };
        assert_eq!(l.duration, Some(Duration::from_secs(2)));
    }
}
