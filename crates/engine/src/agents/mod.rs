//! Distributed runs (docs/agents.md): one bench command run by N agents
//! at once against one shared server, their results merged into one. The
//! protocol — start barrier, clock offsets, collecting results — is crate
//! `iiop-agents`; this module plugs the engine's benches into it.
//!
//! - the coordinator: [`prepare_spec`] (the bench command every agent
//!   runs), [`run`] (listen, optionally start local agents, coordinate,
//!   merge) and [`coordinate_and_merge`] (the same on a listener the
//!   caller made, e.g. inside a lab host);
//! - an agent: [`join`] (take part in a coordinator's run) and
//!   [`run_order`] (run the bench an order names, held by its start gate);
//! - [`agent_command`] and [`Children`]: agents started as processes of
//!   the iiopbench executable; [`k8s`]: Kubernetes manifests for a run;
//! - [`merge`]: the agents' results folded into one results value.
//!
//! A bench command reaches an agent as a command line (`bench latency
//! --target REF …`); turning it into engine options takes the command
//! line's parser, which the engine does not have: the caller passes it
//! as a [`BenchParser`].

pub mod k8s;
pub mod merge;

pub use merge::{merge_agents, Ran};

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use iiop_agents::{coordinate, AgentReport, Clock, Config, Order, Status, SystemClock};

use crate::bench::closed::{self, ClosedOpts};
use crate::bench::latency::{self, LatencyOpts};
use crate::bench::throughput::{self, ThroughputOpts};
use crate::gate::Gate;
use crate::progress::Progress;
use crate::results::{AgentEntry, AgentsInfo, Results};

/// From the barrier closing to the first case: for agents to connect and
/// warm up.
pub const LEAD: Duration = Duration::from_secs(2);
/// Added to `--duration` between the starts of consecutive cases: the
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
}

/// This program's version, which agents must share with the coordinator.
pub fn version() -> String {
    let t = crate::results::Tool::current();
    format!("{} {}", t.version, t.git_commit)
}

/// A bench an agent can run, as the engine's options.
#[derive(Debug, Clone)]
pub enum AgentBench {
    Latency(Box<LatencyOpts>),
    Throughput(Box<ThroughputOpts>),
    Closed(Box<ClosedOpts>),
}

/// Turns a bench command line (`bench latency --target REF …`) into the
/// bench it asks for; the error is one line. The command line's clap
/// parser is one; any `Fn(&[String]) -> Result<AgentBench, String>` is.
pub trait BenchParser {
    /// Parse `spec`, which starts with `bench`.
    fn parse(&self, spec: &[String]) -> Result<AgentBench, String>;
}

impl<F: Fn(&[String]) -> Result<AgentBench, String>> BenchParser for F {
    fn parse(&self, spec: &[String]) -> Result<AgentBench, String> {
        self(spec)
    }
}

/// Options the agents' bench command may not carry (the run sets them),
/// and why.
const SET_BY_THE_RUN: [(&str, &str); 11] = [
    (
        "--json",
        "the coordinator writes the merged file (give --json to `agents run`)",
    ),
    ("--csv", "the coordinator writes the merged file"),
    ("--hlog", "the coordinator writes the merged file"),
    ("--runs", "each agent measures one run"),
    (
        "--duration",
        "every agent measures `agents --duration` per case",
    ),
    (
        "--count",
        "every agent measures `agents --duration` per case",
    ),
    (
        "--total",
        "every agent measures `agents --duration` per case",
    ),
    (
        "--min-duration",
        "every agent measures `agents --duration` per case",
    ),
    (
        "--max-duration",
        "every agent measures `agents --duration` per case",
    ),
    (
        "--until-ci",
        "every agent measures `agents --duration` per case",
    ),
    (
        "--baseline",
        "a raw-TCP baseline per agent measures no shared server",
    ),
];

/// The bench arguments every agent runs: the user's, checked, plus one
/// run, quiet, and `duration` per case in the command's own terms;
/// `parser` must accept the result.
pub fn prepare_spec(
    user: &[String],
    duration: Duration,
    parser: &dyn BenchParser,
) -> anyhow::Result<Vec<String>> {
    let kind = match user {
        [b, k, ..] if b == "bench" => k.as_str(),
        _ => anyhow::bail!("agents run a bench command: `-- bench latency|throughput|closed …`"),
    };
    for a in user {
        let flag = a.split('=').next().unwrap_or(a);
        if let Some((f, why)) = SET_BY_THE_RUN.iter().find(|(f, _)| *f == flag) {
            anyhow::bail!("bench option {f} is set by the agent run: {why}");
        }
    }
    anyhow::ensure!(
        user.iter()
            .any(|a| a == "--target" || a == "-t" || a.starts_with("--target=")),
        "agents need a shared server: give the bench command --target REF"
    );
    let d = format!("{}ms", duration.as_millis().max(1));
    let mut spec = user.to_vec();
    spec.extend(["--runs", "1", "--quiet"].map(String::from));
    match kind {
        "latency" | "closed" => spec.extend(["--duration".to_string(), d]),
        "throughput" => spec.extend([
            "--total".to_string(),
            "0".into(),
            "--min-duration".into(),
            d.clone(),
            "--max-duration".into(),
            d,
        ]),
        other => anyhow::bail!("agents run bench latency, throughput or closed, not bench {other}"),
    }
    parser
        .parse(&spec)
        .map_err(|e| anyhow::anyhow!("the agents' bench command: {e}"))?;
    Ok(spec)
}

/// Run an order in this process: the gate armed at the order's start, the
/// bench command, the results as JSON with `params.agent`.
pub fn run_order(
    order: &Order,
    clock: &dyn Clock,
    parser: &dyn BenchParser,
) -> Result<serde_json::Value, String> {
    let b = parser.parse(&order.spec)?;
    let gate = Gate::new(order.start_instant(clock), order.case_period);
    let gated = Some(gate.clone());
    let (mut r, err) = match b {
        AgentBench::Latency(mut x) => {
            x.target.gate = gated;
            latency::run(&x)
        }
        AgentBench::Throughput(mut x) => {
            x.target.gate = gated;
            throughput::run(&x)
        }
        AgentBench::Closed(mut x) => {
            x.target.gate = gated;
            closed::run(&x)
        }
    };
    let late = gate.late_ms();
    r.params.insert(
        "agent".into(),
        serde_json::json!({"id": order.id, "start_late_ms": late, "clock_offset_ns": order.offset_ns}),
    );
    if let Some(e) = err {
        r.outcome.complete = false;
        r.outcome.failure.get_or_insert_with(|| format!("{e:#}"));
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

/// Take part in a coordinator's run as one agent: register, run the
/// bench it orders (parsed by `parser`), send the results.
pub fn join(o: &JoinOpts, parser: &dyn BenchParser) -> anyhow::Result<()> {
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
    match iiop_agents::join(&cfg, &clock, &mut |order| run_order(order, &clock, parser))? {
        iiop_agents::Joined::Ran { .. } => Ok(()),
        iiop_agents::Joined::Aborted(why) => {
            anyhow::bail!(
                "coordinator {} did not admit this agent: {why}",
                o.coordinator
            )
        }
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

/// The command that starts one agent: `exe` (the iiopbench executable)
/// `agents join` to `coordinator` as `name`; with `quiet` its stderr is
/// dropped too.
pub fn agent_command(exe: &Path, coordinator: &str, name: &str, quiet: bool) -> Command {
    let mut cmd = Command::new(exe);
    cmd.args([
        "agents",
        "join",
        "--coordinator",
        coordinator,
        "--name",
        name,
    ]);
    cmd.args(["--connect-timeout", "30s"]);
    cmd.stdin(Stdio::null()).stdout(Stdio::null());
    if quiet {
        cmd.stderr(Stdio::null());
    }
    cmd
}

/// The coordinator's options (`agents run`).
#[derive(Debug, Clone)]
pub struct RunOpts {
    pub coord: CoordOpts,
    /// Address to listen on for agents (port 0 picks a free port).
    pub listen: String,
    /// Also start the agents on this host, as processes of `exe`.
    pub local: bool,
    /// The iiopbench executable the local agents run.
    pub exe: PathBuf,
    /// The local agents' stderr is dropped.
    pub quiet: bool,
    /// The bench command every agent runs (`bench latency --target REF
    /// …`), checked and completed by [`prepare_spec`].
    pub bench: Vec<String>,
    /// Hears the coordinator's news as notes (`agents: …` lines).
    pub progress: Progress,
}

/// A coordinated run: the merged results (when any agent was admitted or
/// reported) and the error that ended the run; an `Err` when it could not
/// start (a bench command the agents cannot run, no listening socket, an
/// agent that could not be started).
pub fn run(
    o: &RunOpts,
    parser: &dyn BenchParser,
) -> anyhow::Result<(Option<Results>, Option<anyhow::Error>)> {
    let spec = prepare_spec(&o.bench, o.coord.duration, parser)?;
    let listener = TcpListener::bind(&o.listen)
        .map_err(|e| anyhow::anyhow!("listening for agents on {}: {e}", o.listen))?;
    let addr = listener.local_addr()?;
    o.progress
        .note(&format!("agents: coordinator listening on {addr}"));
    let mut children = Children::default();
    if o.local {
        let host = if addr.ip().is_unspecified() {
            "127.0.0.1".to_string()
        } else {
            addr.ip().to_string()
        };
        let to = format!("{host}:{}", addr.port());
        for i in 0..o.coord.agents {
            let mut cmd = agent_command(&o.exe, &to, &format!("local-{i}"), o.quiet);
            children.0.push(
                cmd.spawn()
                    .map_err(|e| anyhow::anyhow!("starting local agent {i}: {e}"))?,
            );
        }
    }
    let merged = coordinate_and_merge(&listener, &o.coord, &spec, &|l| o.progress.note(l));
    drop(children);
    Ok(merged)
}

/// Coordinate on `listener` and merge: the merged results (when any agent
/// was admitted or reported), and the error that ended the run. `log`
/// hears the coordinator's news, one `agents: …` line at a time.
pub fn coordinate_and_merge(
    listener: &TcpListener,
    o: &CoordOpts,
    spec: &[String],
    log: &dyn Fn(&str),
) -> (Option<Results>, Option<anyhow::Error>) {
    let cfg = o.config();
    let log = |line: &str| log(&format!("agents: {line}"));
    let outcome = match coordinate(listener, &cfg, spec, &SystemClock, &log) {
        Ok(x) => x,
        Err(e) => return (None, Some(anyhow::anyhow!("coordinator: {e}"))),
    };
    let start = outcome.start_at.unwrap_or_else(|| SystemClock.now_ns());
    let mut info = AgentsInfo {
        requested: o.agents,
        start_at: crate::results::rfc3339_ms(start),
        start_at_unix_ns: start,
        duration_s: o.duration.as_secs_f64(),
        case_period_s: cfg.case_period.as_secs_f64(),
        spec: spec.to_vec(),
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
    let mut base = crate::context::new_results("agents", Default::default(), Default::default());
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
        Ok(m) => (Some(m), None),
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

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    /// A parser that accepts any latency command but one with `--bogus`.
    fn parser(spec: &[String]) -> Result<AgentBench, String> {
        match spec.iter().find(|a| *a == "--bogus") {
            Some(_) => Err("unexpected argument '--bogus' found".into()),
            None => Ok(AgentBench::Latency(Box::default())),
        }
    }

    #[test]
    fn the_spec_gets_one_run_and_the_duration_in_each_commands_terms() {
        let d = Duration::from_millis(1500);
        assert_eq!(
            prepare_spec(&args("bench latency --target x.ior --op ping"), d, &parser).unwrap(),
            args("bench latency --target x.ior --op ping --runs 1 --quiet --duration 1500ms")
        );
        assert_eq!(
            prepare_spec(&args("bench throughput -t x.ior --size 1KiB"), d, &parser).unwrap(),
            args("bench throughput -t x.ior --size 1KiB --runs 1 --quiet --total 0 --min-duration 1500ms --max-duration 1500ms")
        );
        assert_eq!(
            prepare_spec(&args("bench closed --target x.ior --clients 2"), d, &parser).unwrap(),
            args("bench closed --target x.ior --clients 2 --runs 1 --quiet --duration 1500ms")
        );
    }

    #[test]
    fn specs_the_run_cannot_honour_are_refused_in_one_line() {
        let d = Duration::from_secs(1);
        let err = |s: &str| prepare_spec(&args(s), d, &parser).unwrap_err().to_string();
        assert_eq!(
            err("bench latency --op ping"),
            "agents need a shared server: give the bench command --target REF"
        );
        assert_eq!(
            err("bench latency --target x --count=5"),
            "bench option --count is set by the agent run: every agent measures `agents --duration` per case"
        );
        assert_eq!(
            err("bench connect --target x"),
            "agents run bench latency, throughput or closed, not bench connect"
        );
        assert_eq!(
            err("bench latency --target x --bogus"),
            "the agents' bench command: unexpected argument '--bogus' found"
        );
        assert_eq!(
            err("serve"),
            "agents run a bench command: `-- bench latency|throughput|closed …`"
        );
    }
}
