//! `iiopbench agents`: one bench command run by N coordinated agents, one
//! merged result (issue 22). The protocol (start barrier, clock offsets,
//! collection) is crate `iiop-agents`; this module plugs the bench
//! commands into it and merges the agents' results ([`merge`]).
//!
//! * `agents run --agents N [--local] -- bench latency --target REF …` —
//!   the coordinator: waits for N agents (at most `--register-timeout`),
//!   measures their clocks, starts them together, merges their results;
//!   `--local` also starts the N agents here, as processes.
//! * `agents join --coordinator HOST:PORT` — one agent (any host).
//! * `agents k8s --agents N --image IMG -- bench …` — Kubernetes
//!   manifests for the same run (docs/agents.md).
//!
//! Every agent runs the bench command in-process with `--runs 1 --quiet`
//! and the run's `--duration` per case; the start gate ([`iiopbench_engine::gate`])
//! holds each case until its common start instant.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand};
use iiop_agents::{coordinate, AgentReport, Clock, Config, Order, Status, SystemClock};

use crate::opts::{BenchCommand, Cli, Command as Cmd};
use crate::table::{micros, num, Table};
use iiopbench_engine::bench::{closed, latency, throughput};
use iiopbench_engine::gate::Gate;
use iiopbench_engine::results::{AgentEntry, AgentsInfo, Results};
use iiopbench_engine::units::parse_duration;

/// From the barrier closing to the first case: for agents to connect and
/// warm up.
pub const LEAD: Duration = Duration::from_secs(2);
/// Added to `--duration` between the starts of consecutive cases: the
/// next case's connection set-up and warm-up happen in it.
pub const CASE_GAP: Duration = Duration::from_secs(1);

/// `iiopbench agents …`.
#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// Coordinate N agents running one bench command; merge their results.
    #[command(after_help = crate::opts::examples::AGENTS_RUN)]
    Run(Box<RunOpts>),
    /// Take part in a coordinator's run as one agent.
    #[command(after_help = crate::opts::examples::AGENTS_JOIN)]
    Join(Box<JoinOpts>),
    /// Print Kubernetes manifests (a v1 List, JSON) for a run of N agents.
    #[command(after_help = crate::opts::examples::AGENTS_K8S)]
    K8s(Box<K8sOpts>),
}

/// What every coordinated run needs, wherever its agents run.
#[derive(Debug, Clone, Args)]
pub struct CoordOpts {
    /// Agents to run (ids 0..N).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub agents: u32,
    /// Measuring time of each case, the same for every agent.
    #[arg(long, value_parser = parse_duration, default_value = "10s", value_name = "DURATION")]
    pub duration: Duration,
    /// How long the start barrier waits for agents to register; the run
    /// starts with those that did.
    #[arg(long, value_parser = parse_duration, default_value = "60s", value_name = "DURATION")]
    pub register_timeout: Duration,
    /// How long, after the start, agents may take to send their results
    /// (default: enough for 100 cases).
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub result_timeout: Option<Duration>,
    /// Agents whose clock is further off than this (or measured less
    /// precisely) are not admitted.
    #[arg(long, value_parser = parse_duration, default_value = "1s", value_name = "DURATION")]
    pub max_clock_offset: Duration,
}

impl CoordOpts {
    fn config(&self) -> Config {
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

/// `agents run` options.
#[derive(Debug, Clone, Args)]
pub struct RunOpts {
    #[command(flatten)]
    pub coord: CoordOpts,
    /// Address to listen on for agents (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:0", value_name = "HOST:PORT")]
    pub listen: String,
    /// Also start the N agents on this host, as processes.
    #[arg(long)]
    pub local: bool,
    /// Write the merged results as JSON (docs/results-schema.md); `-` for
    /// stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No progress lines and no tables.
    #[arg(long, short)]
    pub quiet: bool,
    /// The bench command every agent runs, after `--`: `bench latency
    /// --target REF …` (latency, throughput or closed; `--idl` calls too).
    #[arg(last = true, required = true, value_name = "BENCH ARGS")]
    pub bench: Vec<String>,
}

/// `agents join` options.
#[derive(Debug, Clone, Args)]
pub struct JoinOpts {
    /// The coordinator (`agents run`) to join.
    #[arg(long, value_name = "HOST:PORT")]
    pub coordinator: String,
    /// This agent's id (a Kubernetes completion index); assigned by the
    /// coordinator when absent.
    #[arg(long, value_name = "N")]
    pub id: Option<u32>,
    /// This agent's name in the results (default: the host name).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// How long to keep trying to reach the coordinator.
    #[arg(long, value_parser = parse_duration, default_value = "60s", value_name = "DURATION")]
    pub connect_timeout: Duration,
}

/// `agents k8s` options.
#[derive(Debug, Clone, Args)]
pub struct K8sOpts {
    #[command(flatten)]
    pub coord: CoordOpts,
    /// Container image with `iiopbench` on its PATH (deploy/k8s/Dockerfile).
    #[arg(long, value_name = "IMAGE")]
    pub image: String,
    /// Prefix of the Kubernetes objects' names.
    #[arg(long, default_value = "iiopbench", value_name = "NAME")]
    pub name: String,
    /// Namespace of the objects (default: kubectl's current one).
    #[arg(long, value_name = "NAME")]
    pub namespace: Option<String>,
    /// The coordinator's port.
    #[arg(long, default_value_t = 7070, value_name = "PORT")]
    pub port: u16,
    /// The bench command every agent runs, after `--` (its `--target` must
    /// be reachable from the pods: an IOR, corbaloc: or corbaname:).
    #[arg(last = true, required = true, value_name = "BENCH ARGS")]
    pub bench: Vec<String>,
}

/// This program's version, which agents must share with the coordinator.
pub fn version() -> String {
    let t = iiopbench_engine::results::Tool::current();
    format!("{} {}", t.version, t.git_commit)
}

/// Run `agents …`.
pub fn run(c: &AgentsCommand) -> anyhow::Result<()> {
    match c {
        AgentsCommand::Run(o) => run_coordinator(o),
        AgentsCommand::Join(o) => run_agent(o),
        AgentsCommand::K8s(o) => {
            print!("{}", k8s_manifests(o)?);
            Ok(())
        }
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
/// run, quiet, and `duration` per case in the command's own terms.
pub fn prepare_spec(user: &[String], duration: Duration) -> anyhow::Result<Vec<String>> {
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
    parse_bench(&spec).map_err(|e| anyhow::anyhow!("the agents' bench command: {e}"))?;
    Ok(spec)
}

fn parse_bench(spec: &[String]) -> Result<BenchCommand, String> {
    let argv = std::iter::once("iiopbench".to_string()).chain(spec.iter().cloned());
    let cli = Cli::try_parse_from(argv).map_err(|e| {
        e.to_string()
            .lines()
            .next()
            .unwrap_or("unparsable")
            .trim_start_matches("error: ")
            .to_string()
    })?;
    match cli.command {
        Cmd::Bench(b) => Ok(b),
        _ => Err("not a bench command".into()),
    }
}

/// Run an order in this process: the gate armed at the order's start, the
/// bench command, the results as JSON with `params.agent`.
pub fn run_order(order: &Order, clock: &dyn Clock) -> Result<serde_json::Value, String> {
    let b = parse_bench(&order.spec)?;
    let gate = Gate::new(order.start_instant(clock), order.case_period);
    let gated = Some(gate.clone());
    let (mut r, err) = match b {
        BenchCommand::Latency(o) => {
            let mut x = o.opts();
            x.target.gate = gated;
            latency::run(&x)
        }
        BenchCommand::Throughput(o) => {
            let mut x = o.opts();
            x.target.gate = gated;
            throughput::run(&x)
        }
        BenchCommand::Closed(o) => {
            let mut x = o.opts();
            x.target.gate = gated;
            closed::run(&x)
        }
        _ => return Err("agents run bench latency, throughput or closed".into()),
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

fn run_agent(o: &JoinOpts) -> anyhow::Result<()> {
    let name = o
        .name
        .clone()
        .unwrap_or_else(|| iiopbench_engine::sysinfo::HostInfo::current().hostname);
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
    match iiop_agents::join(&cfg, &clock, &mut |order| run_order(order, &clock))? {
        iiop_agents::Joined::Ran { .. } => Ok(()),
        iiop_agents::Joined::Aborted(why) => {
            anyhow::bail!(
                "coordinator {} did not admit this agent: {why}",
                o.coordinator
            )
        }
    }
}

/// Agents this run started itself (`--local`, lab hosts): waited for a
/// little after the run, then killed.
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

/// The command that starts one agent of this binary.
pub fn agent_command(coordinator: &str, name: &str, quiet: bool) -> anyhow::Result<Command> {
    let mut cmd = Command::new(crate::cmd::lab::run::own_exe()?);
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
    Ok(cmd)
}

fn run_coordinator(o: &RunOpts) -> anyhow::Result<()> {
    let spec = prepare_spec(&o.bench, o.coord.duration)?;
    let listener = TcpListener::bind(&o.listen)
        .map_err(|e| anyhow::anyhow!("listening for agents on {}: {e}", o.listen))?;
    let addr = listener.local_addr()?;
    if !o.quiet {
        eprintln!("agents: coordinator listening on {addr}");
    }
    let mut children = Children::default();
    if o.local {
        let host = if addr.ip().is_unspecified() {
            "127.0.0.1".to_string()
        } else {
            addr.ip().to_string()
        };
        let to = format!("{host}:{}", addr.port());
        for i in 0..o.coord.agents {
            let mut cmd = agent_command(&to, &format!("local-{i}"), o.quiet)?;
            children.0.push(
                cmd.spawn()
                    .map_err(|e| anyhow::anyhow!("starting local agent {i}: {e}"))?,
            );
        }
    }
    let (merged, err) = coordinate_and_merge(&listener, &o.coord, &spec, o.quiet);
    drop(children);
    let out = crate::opts::OutputOpts::json_only(o.json.clone(), o.quiet);
    if let Some(m) = &merged {
        crate::output::emit(m, &out)?;
        if out.shows_tables() {
            print!("{}", agents_table(m));
        }
    }
    match (err, merged) {
        (Some(e), _) => Err(e),
        (None, Some(m)) if !m.outcome.complete => Err(anyhow::anyhow!(
            "{}",
            m.outcome.failure.clone().unwrap_or_default()
        )),
        _ => Ok(()),
    }
}

/// Coordinate on `listener` and merge: the merged results (when any agent
/// was admitted or reported), and the error that ended the run.
pub fn coordinate_and_merge(
    listener: &TcpListener,
    o: &CoordOpts,
    spec: &[String],
    quiet: bool,
) -> (Option<Results>, Option<anyhow::Error>) {
    let cfg = o.config();
    let log = |line: &str| {
        if !quiet {
            eprintln!("agents: {line}");
        }
    };
    let outcome = match coordinate(listener, &cfg, spec, &SystemClock, &log) {
        Ok(x) => x,
        Err(e) => return (None, Some(anyhow::anyhow!("coordinator: {e}"))),
    };
    let start = outcome.start_at.unwrap_or_else(|| SystemClock.now_ns());
    let mut info = AgentsInfo {
        requested: o.agents,
        start_at: iiopbench_engine::results::rfc3339_ms(start),
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
                Ok(results) => ran.push(iiopbench_engine::agents::Ran { id: a.id, results }),
                Err(err) => {
                    e.status = "failed".into();
                    e.reason = Some(format!("its results are not a results file: {err}"));
                }
            }
        }
        info.agents.push(e);
    }
    let mut base =
        iiopbench_engine::context::new_results("agents", Default::default(), Default::default());
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
    match iiopbench_engine::agents::merge_agents(base, &ran, info) {
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

/// Per case: each agent's calls, rate and percentiles, then the total.
pub fn agents_table(r: &Results) -> String {
    let mut out = String::new();
    let Some(info) = &r.agents else {
        return out;
    };
    let name = |id: u32| {
        info.agents
            .iter()
            .find(|a| a.id == id)
            .and_then(|a| a.name.clone())
            .unwrap_or_default()
    };
    let mut t = Table::new(["case", "agent", "calls", "calls/s", "Mbit/s", "p50", "p99"])
        .left_align(&[0, 1]);
    for c in &r.cases {
        for a in &c.agents {
            let l = a.latency_us.unwrap_or_default();
            t.row([
                c.name.clone(),
                format!("{} {}", a.agent, name(a.agent)),
                a.calls.to_string(),
                num(a.calls_per_sec),
                num(a.throughput_mbps),
                micros(l.p50),
                micros(l.p99),
            ]);
        }
        let l = c.latency_us.unwrap_or_default();
        t.row([
            c.name.clone(),
            format!("total of {}", c.agents.len()),
            c.calls.to_string(),
            num(c.calls_per_sec),
            num(c.throughput_mbps),
            micros(l.p50),
            micros(l.p99),
        ]);
    }
    out.push_str(&t.render());
    for a in info.agents.iter().filter(|a| a.status != "ran") {
        out.push_str(&format!(
            "agent {} {}: {}\n",
            a.id,
            a.status,
            a.reason.as_deref().unwrap_or("")
        ));
    }
    out
}

fn k8s_manifests(o: &K8sOpts) -> anyhow::Result<String> {
    // Refused here rather than in the pods.
    prepare_spec(&o.bench, o.coord.duration)?;
    let c = &o.coord;
    let cfg = c.config();
    let dur = |d: Duration| format!("{}ms", d.as_millis());
    let mut coordinator = vec![
        "iiopbench".to_string(),
        "agents".into(),
        "run".into(),
        "--agents".into(),
        c.agents.to_string(),
        "--duration".into(),
        dur(c.duration),
        "--register-timeout".into(),
        dur(c.register_timeout),
        "--result-timeout".into(),
        dur(cfg.result_timeout),
        "--max-clock-offset".into(),
        dur(c.max_clock_offset),
        "--listen".into(),
        format!("0.0.0.0:{}", o.port),
        "--json".into(),
        iiop_agents::k8s::RESULTS_FILE.into(),
        "--".into(),
    ];
    coordinator.extend(o.bench.iter().cloned());
    let agent = vec![
        "iiopbench".to_string(),
        "agents".into(),
        "join".into(),
        "--coordinator".into(),
        format!("{}:{}", iiop_agents::k8s::coordinator_host(&o.name), o.port),
        "--id".into(),
        "$(JOB_COMPLETION_INDEX)".into(),
        "--name".into(),
        "$(POD_NAME)@$(NODE_NAME)".into(),
        "--connect-timeout".into(),
        dur(c.register_timeout),
    ];
    let deadline = c.register_timeout + LEAD + cfg.result_timeout + Duration::from_secs(60);
    let d = iiop_agents::k8s::Deployment {
        name: o.name.clone(),
        namespace: o.namespace.clone(),
        image: o.image.clone(),
        agents: c.agents,
        port: o.port,
        coordinator_command: coordinator,
        agent_command: agent,
        deadline_s: deadline.as_secs() as i64,
    };
    let m = iiop_agents::k8s::manifests(&d).map_err(|e| anyhow::anyhow!("agents k8s: {e}"))?;
    Ok(m.to_json())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_spec_gets_one_run_and_the_duration_in_each_commands_terms() {
        let d = Duration::from_millis(1500);
        assert_eq!(
            prepare_spec(&args("bench latency --target x.ior --op ping"), d).unwrap(),
            args("bench latency --target x.ior --op ping --runs 1 --quiet --duration 1500ms")
        );
        assert_eq!(
            prepare_spec(&args("bench throughput -t x.ior --size 1KiB"), d).unwrap(),
            args("bench throughput -t x.ior --size 1KiB --runs 1 --quiet --total 0 --min-duration 1500ms --max-duration 1500ms")
        );
        assert!(prepare_spec(&args("bench closed --target x.ior --clients 2"), d).is_ok());
    }

    #[test]
    fn specs_the_run_cannot_honour_are_refused_in_one_line() {
        let d = Duration::from_secs(1);
        let err = |s: &str| prepare_spec(&args(s), d).unwrap_err().to_string();
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
        assert!(err("bench latency --target x --bogus").starts_with("the agents' bench command: "));
        assert!(err("serve").starts_with("agents run a bench command"));
    }

    #[test]
    fn k8s_manifests_read_back_and_carry_the_run() {
        let cli = Cli::try_parse_from(args(
            "iiopbench agents k8s --agents 4 --image reg/iiopbench:1 --duration 30s -- bench latency --target corbaloc::10.0.0.5:2809/Bench",
        ))
        .unwrap();
        let Cmd::Agents(AgentsCommand::K8s(o)) = cli.command else {
            panic!("parsed as {:?}", cli.command)
        };
        let text = k8s_manifests(&o).unwrap();
        let m = iiop_agents::k8s::Manifests::from_json(&text).unwrap();
        let agents = m.agents.spec.unwrap();
        assert_eq!(agents.completions, Some(4));
        let cmd = agents.template.spec.unwrap().containers[0]
            .command
            .clone()
            .unwrap();
        assert_eq!(cmd[4], "iiopbench-coordinator:7070");
        let coord = m
            .coordinator
            .spec
            .unwrap()
            .template
            .spec
            .unwrap()
            .containers[0]
            .command
            .clone()
            .unwrap();
        // The coordinator parses its own command line.
        let parsed = Cli::try_parse_from(&coord).unwrap();
        assert!(matches!(parsed.command, Cmd::Agents(AgentsCommand::Run(_))));
        assert_eq!(coord.last().unwrap(), "corbaloc::10.0.0.5:2809/Bench");
    }
}
