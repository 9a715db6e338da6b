//! `iiopbench agents`: one bench command run by N coordinated agents, one
//! merged result (issue 22). The coordinator, the agent and the merge are
//! the engine's (`iiopbench_engine::agents`, over crate `iiop-agents`);
//! here are the flags, the clap parser that turns an agent's bench command
//! line into engine options ([`parse_bench`]), and the table.
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

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::opts::{BenchCommand, Cli, Command as Cmd};
use crate::table::{micros, num, Table};
use iiopbench_engine::agents::{self, AgentBench};
use iiopbench_engine::results::Results;
use iiopbench_engine::units::parse_duration;

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
    /// As the engine's options.
    pub fn engine(&self) -> agents::CoordOpts {
        agents::CoordOpts {
            agents: self.agents,
            duration: self.duration,
            register_timeout: self.register_timeout,
            result_timeout: self.result_timeout,
            max_clock_offset: self.max_clock_offset,
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

/// Run `agents …`.
pub fn run(c: &AgentsCommand) -> anyhow::Result<()> {
    match c {
        AgentsCommand::Run(o) => run_coordinator(o),
        AgentsCommand::Join(o) => agents::join(
            &agents::JoinOpts {
                coordinator: o.coordinator.clone(),
                id: o.id,
                name: o.name.clone(),
                connect_timeout: o.connect_timeout,
            },
            &parse_bench,
        ),
        AgentsCommand::K8s(o) => {
            print!("{}", agents::k8s::manifests(&o.engine(), &parse_bench)?);
            Ok(())
        }
    }
}

impl K8sOpts {
    /// As the engine's options.
    pub fn engine(&self) -> agents::k8s::K8sOpts {
        agents::k8s::K8sOpts {
            coord: self.coord.engine(),
            image: self.image.clone(),
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            port: self.port,
            bench: self.bench.clone(),
        }
    }
}

/// An agent's bench command line (`bench latency …`) as the engine's
/// options, through this binary's own parser; the error is clap's first
/// line.
pub fn parse_bench(spec: &[String]) -> Result<AgentBench, String> {
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
        Cmd::Bench(BenchCommand::Latency(o)) => Ok(AgentBench::Latency(Box::new(o.opts()))),
        Cmd::Bench(BenchCommand::Throughput(o)) => Ok(AgentBench::Throughput(Box::new(o.opts()))),
        Cmd::Bench(BenchCommand::Closed(o)) => Ok(AgentBench::Closed(Box::new(o.opts()))),
        Cmd::Bench(_) => Err("agents run bench latency, throughput or closed".into()),
        _ => Err("not a bench command".into()),
    }
}

fn run_coordinator(o: &RunOpts) -> anyhow::Result<()> {
    let opts = agents::RunOpts {
        coord: o.coord.engine(),
        listen: o.listen.clone(),
        local: o.local,
        exe: crate::cmd::lab::run::own_exe()?,
        quiet: o.quiet,
        bench: o.bench.clone(),
        progress: crate::progress::unless_quiet(o.quiet),
    };
    let (merged, err) = agents::run(&opts, &parse_bench)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    /// The engine checks the spec's shape (its own tests); this binary's
    /// parser refuses what clap refuses, in one line, and hands the engine
    /// only the benches agents run.
    #[test]
    fn the_clap_parser_gives_the_engine_benches_or_one_line() {
        let d = Duration::from_secs(1);
        let spec = |s: &str| agents::prepare_spec(&args(s), d, &parse_bench);
        assert_eq!(
            spec("bench latency --target x --bogus")
                .unwrap_err()
                .to_string(),
            "the agents' bench command: unexpected argument '--bogus' found"
        );
        assert!(matches!(
            parse_bench(&spec("bench closed --target x.ior --clients 2").unwrap()),
            Ok(AgentBench::Closed(c)) if c.clients == 2
        ));
        assert_eq!(
            parse_bench(&args("bench connect --target x")).unwrap_err(),
            "agents run bench latency, throughput or closed"
        );
        assert_eq!(
            parse_bench(&args("serve")).unwrap_err(),
            "not a bench command"
        );
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
        let text = agents::k8s::manifests(&o.engine(), &parse_bench).unwrap();
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
