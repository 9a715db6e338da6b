//! `iiopbench agents`: one job run by N coordinated agents, one merged
//! result (issue 22). The coordinator, the agent and the merge are the
//! engine's (`iiopbench_engine::agents`, over crate `iiop-agents`; the
//! wire carries the typed job); here are the flags, the bench command
//! line given after `--` turned into the job, the Kubernetes manifests
//! (whose coordinator is handed the job as JSON), and the table.
//!
//! * `agents run --agents N [--local] -- bench latency --target REF …` —
//!   the coordinator: waits for N agents (at most `--register-timeout`),
//!   measures their clocks, starts them together, merges their results;
//!   `--local` also starts the N agents here, as processes.
//! * `agents join --coordinator HOST:PORT` — one agent (any host).
//! * `agents k8s --agents N --image IMG -- bench …` — Kubernetes
//!   manifests for the same run (docs/agents.md).
//! * `agents slurm --agents N -- bench …` — the same run as one Slurm job
//!   (the engine's `agents::slurm`), waited for and merged; the job's
//!   batch step is the hidden `agents slurm-step DIR`, its tasks `agents
//!   join --slurm`.
//!
//! Every agent runs the job in-process, one run of the run's `--duration`
//! per case; the start gate ([`iiopbench_engine::gate`]) holds each case
//! until its common start instant.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::programs::ThisBinary;
use crate::table::{micros, num, Table};
use iiopbench_engine::agents;
use iiopbench_engine::job::Job;
use iiopbench_engine::results::Results;
use iiopbench_engine::run_context::RunContext;
use iiopbench_engine::threshold::Threshold;
use iiopbench_engine::units::{format_duration, parse_duration};

/// `iiopbench agents …`.
#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// Coordinate N agents running one bench command; merge their results.
    #[command(after_help = crate::examples::AGENTS_RUN)]
    Run(Box<AgentsRunArgs>),
    /// Take part in a coordinator's run as one agent.
    #[command(after_help = crate::examples::AGENTS_JOIN)]
    Join(Box<JoinArgs>),
    /// Print Kubernetes manifests (a v1 List, JSON) for a run of N agents.
    #[command(after_help = crate::examples::AGENTS_K8S)]
    K8s(Box<K8sArgs>),
    /// Submit a run of N agents to Slurm (one job: the coordinator and N
    /// agent tasks), wait for it, and merge their results.
    #[command(after_help = crate::examples::AGENTS_SLURM)]
    Slurm(Box<SlurmArgs>),
    /// The batch step of `agents slurm` (inside the Slurm job).
    #[command(hide = true, after_help = crate::examples::AGENTS_SLURM_STEP)]
    SlurmStep(SlurmStepArgs),
}

/// What every coordinated run needs, wherever its agents run.
#[derive(Debug, Clone, Args)]
pub struct CoordArgs {
    /// Agents to run (ids 0..N).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub agents: u32,
    /// Measuring time of each case, the same for every agent.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "10s", value_name = "DURATION")]
    pub duration: Duration,
    /// How long the start barrier waits for agents to register; the run
    /// starts with those that did.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "60s", value_name = "DURATION")]
    pub register_timeout: Duration,
    /// How long, after the start, agents may take to send their results
    /// (default: enough for 100 cases).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, value_name = "DURATION")]
    pub result_timeout: Option<Duration>,
    /// Agents whose clock is further off than this (or measured less
    /// precisely) are not admitted.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "1s", value_name = "DURATION")]
    pub max_clock_offset: Duration,
}

impl CoordArgs {
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
pub struct AgentsRunArgs {
    #[command(flatten)]
    pub coord: CoordArgs,
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
    /// The job every agent runs, as JSON (the engine's `Job`), instead of
    /// a bench command after `--` (how `agents k8s` hands it over).
    #[arg(long, value_name = "JSON", hide = true, conflicts_with = "bench")]
    pub job: Option<String>,
    /// A gate the merged result must pass (as a bench's `--threshold`,
    /// which may also be given in the bench command); a failed one makes
    /// the exit status 3.
    #[arg(long = "threshold", value_name = "EXPR", value_parser = crate::gates::parse)]
    pub thresholds: Vec<Threshold>,
    /// The bench command every agent runs, after `--`: `bench latency
    /// --target REF …` (latency, throughput or closed; `--idl` calls too).
    #[arg(
        last = true,
        required_unless_present = "job",
        value_name = "BENCH ARGS"
    )]
    pub bench: Vec<String>,
}

impl AgentsRunArgs {
    /// The job every agent runs (`--job`'s, or the bench command's), and
    /// the gates its merged result must pass (this command's and the
    /// bench command's).
    pub fn job(&self) -> anyhow::Result<(Job, Vec<Threshold>)> {
        let (job, mut gates) = match &self.job {
            Some(j) => (
                Job::from_json(j).map_err(|e| anyhow::anyhow!("--job: {e}"))?,
                Vec::new(),
            ),
            None => job_of(&self.bench)?,
        };
        gates.extend(self.thresholds.iter().cloned());
        Ok((job, gates))
    }
}

/// `agents join` options.
#[derive(Debug, Clone, Args)]
pub struct JoinArgs {
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
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "60s", value_name = "DURATION")]
    pub connect_timeout: Duration,
    /// Run as a Slurm task: the id is the task's rank (SLURM_PROCID), the
    /// name `task RANK@NODE`.
    #[arg(long, conflicts_with_all = ["id", "name"])]
    pub slurm: bool,
}

/// `agents slurm` options.
#[derive(Debug, Clone, Args)]
pub struct SlurmArgs {
    #[command(flatten)]
    pub coord: CoordArgs,
    /// The run's directory: the batch script, the job, the coordinator's
    /// address, the merged results and Slurm's output file. On a cluster,
    /// one every node sees at the same path (default: a new directory
    /// `iiopbench-slurm-TIME` here).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// The coordinator's port on the batch node (0: a free one).
    #[arg(long, default_value_t = 0, value_name = "PORT")]
    pub port: u16,
    /// The host name the agents reach the coordinator by; `{node}` stands
    /// for the batch node's Slurm name (`{node}-ib`) [default: that name].
    #[arg(long, value_name = "HOST")]
    pub coordinator_host: Option<String>,
    /// An `sbatch` option, as one word (`--sbatch-arg=--partition=bench`);
    /// repeat for more. They take precedence over the batch script's.
    #[arg(long = "sbatch-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub sbatch_args: Vec<String>,
    /// How long the job may wait in the queue before it is cancelled.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "10m", value_name = "DURATION")]
    pub queue_timeout: Duration,
    /// The iiopbench the job runs (default: this one; it must be at this
    /// path on every node).
    #[arg(long, value_name = "FILE")]
    pub program: Option<PathBuf>,
    /// Write the merged results as JSON (docs/results-schema.md); `-` for
    /// stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No progress lines and no tables.
    #[arg(long, short)]
    pub quiet: bool,
    /// A gate the merged result must pass; a failed one makes the exit
    /// status 3.
    #[arg(long = "threshold", value_name = "EXPR", value_parser = crate::gates::parse)]
    pub thresholds: Vec<Threshold>,
    /// The bench command every agent runs, after `--` (its `--target` must
    /// be reachable from the compute nodes).
    #[arg(last = true, required = true, value_name = "BENCH ARGS")]
    pub bench: Vec<String>,
}

/// `agents slurm-step` options.
#[derive(Debug, Clone, Args)]
pub struct SlurmStepArgs {
    /// The run's directory (its `run.json`).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// `agents k8s` options.
#[derive(Debug, Clone, Args)]
pub struct K8sArgs {
    #[command(flatten)]
    pub coord: CoordArgs,
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

/// Output options the agents' bench command may not carry (the
/// coordinator writes the merged file), and why.
const SET_BY_THE_RUN: [(&str, &str); 4] = [
    (
        "--json",
        "the coordinator writes the merged file (give --json to `agents run`)",
    ),
    ("--csv", "the coordinator writes the merged file"),
    ("--hlog", "the coordinator writes the merged file"),
    ("--metrics-listen", "agents serve no live metrics"),
];

/// The job of the agents' bench command line (`bench latency --target
/// REF …`) and its gates (checked on the merged result, not by the
/// agents); an error names what is wrong in one line.
pub fn job_of(words: &[String]) -> anyhow::Result<(Job, Vec<Threshold>)> {
    match words {
        [b, _, ..] if b == "bench" => {}
        _ => anyhow::bail!(
            "agents run a bench command: `-- bench latency|throughput|closed|sweep …`"
        ),
    }
    for a in words {
        let flag = a.split('=').next().unwrap_or(a);
        if let Some((f, why)) = SET_BY_THE_RUN.iter().find(|(f, _)| *f == flag) {
            anyhow::bail!("bench option {f} is set by the agent run: {why}");
        }
    }
    let (job, bench) = crate::cmd::bench::parse_words(words)
        .map_err(|e| anyhow::anyhow!("the agents' bench command: {e}"))?;
    Ok((job, bench.thresholds))
}

/// Run `agents …`.
pub fn run(c: &AgentsCommand, argv: &[String]) -> anyhow::Result<()> {
    match c {
        AgentsCommand::Run(o) => run_coordinator(o, argv),
        AgentsCommand::Join(o) => {
            let task = o.slurm.then(agents::slurm::Task::current).transpose()?;
            Ok(agents::join(&agents::JoinOpts {
                coordinator: o.coordinator.clone(),
                id: task.as_ref().map(|t| t.rank).or(o.id),
                name: task.as_ref().map(|t| t.name()).or(o.name.clone()),
                connect_timeout: o.connect_timeout,
            })?)
        }
        AgentsCommand::Slurm(o) => run_slurm(o, argv),
        AgentsCommand::SlurmStep(o) => {
            let ctx = RunContext::new()
                .with_progress(crate::progress::unless_quiet(false))
                .with_command(argv.to_vec())
                .with_programs(Arc::new(ThisBinary::new()?));
            Ok(agents::slurm::batch_step(&o.dir, &ctx)?)
        }
        AgentsCommand::K8s(o) => {
            out!("{}", manifests(o)?);
            Ok(())
        }
    }
}

/// The Kubernetes manifests (a v1 List, JSON) of `o`'s run: the
/// coordinator is handed the job, checked here, as JSON; the agents join
/// it by its Service name. A job the agents cannot run is refused here
/// rather than in the pods.
pub fn manifests(o: &K8sArgs) -> anyhow::Result<String> {
    let c = o.coord.engine();
    let (job, gates) = job_of(&o.bench)?;
    let job = agents::prepare_job(&job, c.duration)?;
    let cfg = c.config();
    let dur = |d: Duration| format_duration(d);
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
    ];
    for g in &gates {
        coordinator.extend(["--threshold".into(), g.text.clone()]);
    }
    coordinator.push("--job".into());
    coordinator.push(serde_json::to_string(&job)?);
    let agent_binary = ThisBinary {
        exe: PathBuf::from("iiopbench"),
        connect_timeout: c.register_timeout,
        job_output: Vec::new(),
    };
    let mut agent = vec!["iiopbench".to_string()];
    agent.extend(agent_binary.agent_args(
        &format!("{}:{}", iiop_agents::k8s::coordinator_host(&o.name), o.port),
        "$(POD_NAME)@$(NODE_NAME)",
        Some("$(JOB_COMPLETION_INDEX)"),
    ));
    let d = iiop_agents::k8s::Deployment {
        name: o.name.clone(),
        namespace: o.namespace.clone(),
        image: o.image.clone(),
        agents: c.agents,
        port: o.port,
        coordinator_command: coordinator,
        agent_command: agent,
        deadline_s: c.deadline().as_secs() as i64,
    };
    let m = iiop_agents::k8s::manifests(&d).map_err(|e| anyhow::anyhow!("agents k8s: {e}"))?;
    Ok(m.to_json())
}

fn run_coordinator(o: &AgentsRunArgs, argv: &[String]) -> anyhow::Result<()> {
    let (job, gates) = o.job()?;
    let opts = agents::CoordinatorOpts {
        coord: o.coord.engine(),
        listen: o.listen.clone(),
        local: o.local,
        quiet: o.quiet,
        job,
    };
    let ctx = RunContext::new()
        .with_progress(crate::progress::unless_quiet(o.quiet))
        .with_command(argv.to_vec())
        .with_programs(Arc::new(ThisBinary::new()?));
    let (merged, err) = agents::run(&opts, &ctx)?;
    finish(merged, err, &gates, o.json.clone(), o.quiet)
}

fn run_slurm(o: &SlurmArgs, argv: &[String]) -> anyhow::Result<()> {
    let (job, mut gates) = job_of(&o.bench)?;
    gates.extend(o.thresholds.iter().cloned());
    let dir = o.dir.clone().unwrap_or_else(agents::slurm::new_dir_name);
    let opts = agents::slurm::SubmitOpts {
        coord: o.coord.engine(),
        dir,
        port: o.port,
        coordinator_host: o.coordinator_host.clone(),
        sbatch_args: o.sbatch_args.clone(),
        queue_timeout: o.queue_timeout,
        job,
    };
    let ctx = RunContext::new()
        .with_progress(crate::progress::unless_quiet(o.quiet))
        .with_command(argv.to_vec())
        .with_programs(Arc::new(ThisBinary::new()?.with_exe(o.program.as_deref())));
    let (merged, err) = agents::slurm::submit(&opts, &ctx)?;
    finish(merged, err, &gates, o.json.clone(), o.quiet)
}

/// The merged result written, shown and gated; the exit as the run went.
fn finish(
    merged: Option<Results>,
    err: Option<iiopbench_engine::error::Error>,
    gates: &[Threshold],
    json: Option<PathBuf>,
    quiet: bool,
) -> anyhow::Result<()> {
    let out = crate::flags::OutputOpts::json_only(json, quiet);
    // Gated on the merged result: every agent's calls together.
    let mut checked = Vec::new();
    if let Some(mut m) = merged.clone() {
        crate::words::in_results(&mut m);
        checked = m.check(gates);
        crate::output::emit(&m, &out)?;
        if out.shows_tables() {
            out!("{}", agents_table(&m));
        }
    }
    let verdict = crate::gates::verdict(&checked, out.shows_tables());
    match (err, merged) {
        (Some(e), _) => Err(e.into()),
        (None, Some(m)) if !m.outcome.complete => Err(anyhow::anyhow!(
            "{}",
            m.outcome.failure.clone().unwrap_or_default()
        )),
        (None, None) if !gates.is_empty() => Err(anyhow::anyhow!(
            "no merged result to check the thresholds against"
        )),
        _ => verdict,
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
    if r.kind == "sweep" {
        // Judged on the merged steps.
        out.push_str(&format!("  {}\n", crate::output::knee_line(r)));
        if let Some(s) = r.params.get("stopped_by").and_then(|v| v.as_str()) {
            out.push_str(&format!("  stopped after: {s}\n"));
        }
    }
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
    use crate::opts::{Cli, Command as Cmd};
    use clap::Parser;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    /// The command line's words become the job the engine checks and
    /// completes; what clap refuses is refused in one line.
    #[test]
    fn the_bench_words_become_the_agents_job_or_one_line() {
        assert_eq!(
            job_of(&args("bench latency --target x --bogus"))
                .unwrap_err()
                .to_string(),
            "the agents' bench command: unexpected argument '--bogus' found"
        );
        assert_eq!(
            job_of(&args("bench latency --target x --json=o.json"))
                .unwrap_err()
                .to_string(),
            "bench option --json is set by the agent run: the coordinator writes the merged file (give --json to `agents run`)"
        );
        assert_eq!(
            job_of(&args("serve")).unwrap_err().to_string(),
            "agents run a bench command: `-- bench latency|throughput|closed|sweep …`"
        );
        let (job, gates) = job_of(&args(
            "bench closed --target x.ior --clients 2 --threshold errors=0",
        ))
        .unwrap();
        assert_eq!(gates[0].text, "errors=0");
        assert_eq!(
            job_of(&args(
                "bench latency --target x --metrics-listen 127.0.0.1:0"
            ))
            .unwrap_err()
            .to_string(),
            "bench option --metrics-listen is set by the agent run: agents serve no live metrics"
        );
        let prepared = agents::prepare_job(&job, Duration::from_secs(1)).unwrap();
        let Job::Closed(c) = prepared else { panic!() };
        assert_eq!((c.clients, c.run.duration), (2, Duration::from_secs(1)));
        let e = agents::prepare_job(
            &job_of(&args("bench latency --target x --count=5"))
                .unwrap()
                .0,
            Duration::from_secs(1),
        )
        .unwrap_err();
        assert_eq!(
            crate::words::flags(&e.to_string()),
            "--count is set by the agent run: every agent measures the run's --duration per case"
        );
    }

    /// The command lines a Slurm run starts (the batch step, each task)
    /// parse as the commands they mean.
    #[test]
    fn the_slurm_step_and_task_command_lines_parse() {
        use iiopbench_engine::programs::Programs;
        let me = ThisBinary {
            exe: PathBuf::from("iiopbench"),
            connect_timeout: Duration::from_secs(30),
            job_output: Vec::new(),
        };
        let words = |c: std::process::Command| -> Vec<String> {
            std::iter::once(c.get_program())
                .chain(c.get_args())
                .map(|w| w.to_string_lossy().into_owned())
                .collect()
        };
        let step = words(me.slurm_step(std::path::Path::new("/runs/r1")));
        let Cmd::Agents(AgentsCommand::SlurmStep(s)) = Cli::try_parse_from(&step).unwrap().command
        else {
            panic!("{step:?}")
        };
        assert_eq!(s.dir, PathBuf::from("/runs/r1"));
        let task = words(me.slurm_agent("cn07:40123", Duration::from_secs(60)));
        let Cmd::Agents(AgentsCommand::Join(j)) = Cli::try_parse_from(&task).unwrap().command
        else {
            panic!("{task:?}")
        };
        assert!(j.slurm);
        assert_eq!(
            (j.coordinator.as_str(), j.id, j.connect_timeout),
            ("cn07:40123", None, Duration::from_secs(60))
        );
    }

    /// A sweep goes to the pods as any job: the coordinator's job runs
    /// every step for the run's duration.
    #[test]
    fn k8s_manifests_carry_a_sweep_that_runs_every_step() {
        let cli = Cli::try_parse_from(args(
            "iiopbench agents k8s --agents 3 --image reg/iiopbench:1 --duration 5s -- bench sweep --target corbaloc::srv:2809/Bench --open 1000,2000",
        ))
        .unwrap();
        let Cmd::Agents(AgentsCommand::K8s(o)) = cli.command else {
            panic!("parsed as {:?}", cli.command)
        };
        let m = iiop_agents::k8s::Manifests::from_json(&manifests(&o).unwrap()).unwrap();
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
        let Cmd::Agents(AgentsCommand::Run(r)) = Cli::try_parse_from(&coord).unwrap().command
        else {
            panic!("{coord:?}")
        };
        let Job::Sweep(w) = r.job().unwrap().0 else {
            panic!()
        };
        assert_eq!(w.steps.0, [1000.0, 2000.0]);
        assert_eq!(
            (w.step_duration, w.every_step),
            (Duration::from_secs(5), true)
        );
    }

    /// The manifests carry the job, typed: the coordinator's command line
    /// parses, and its `--job` is the checked job.
    #[test]
    fn k8s_manifests_read_back_and_carry_the_job() {
        let cli = Cli::try_parse_from(args(
            "iiopbench agents k8s --agents 4 --image reg/iiopbench:1 --duration 30s -- bench latency --target corbaloc::10.0.0.5:2809/Bench --threshold p99<2ms",
        ))
        .unwrap();
        let Cmd::Agents(AgentsCommand::K8s(o)) = cli.command else {
            panic!("parsed as {:?}", cli.command)
        };
        let text = manifests(&o).unwrap();
        let m = iiop_agents::k8s::Manifests::from_json(&text).unwrap();
        let agents = m.agents.spec.unwrap();
        assert_eq!(agents.completions, Some(4));
        let cmd = agents.template.spec.unwrap().containers[0]
            .command
            .clone()
            .unwrap();
        assert_eq!(cmd[4], "iiopbench-coordinator:7070");
        // As Kubernetes expands it, the agent's command line parses.
        let expanded: Vec<String> = cmd
            .iter()
            .map(|a| a.replace("$(JOB_COMPLETION_INDEX)", "3"))
            .collect();
        assert!(Cli::try_parse_from(&expanded).is_ok(), "{cmd:?}");
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
        // The coordinator parses its own command line, and its job is the
        // agents' job, checked and completed.
        let parsed = Cli::try_parse_from(&coord).unwrap();
        let Cmd::Agents(AgentsCommand::Run(r)) = parsed.command else {
            panic!("{coord:?}")
        };
        // The bench command's gates are the coordinator's.
        let (job, gates) = r.job().unwrap();
        assert_eq!(gates.len(), 1);
        assert_eq!(gates[0].text, "p99<2ms");
        let Job::Latency(l) = job else { panic!() };
        assert_eq!(
            l.target.target.as_deref(),
            Some("corbaloc::10.0.0.5:2809/Bench")
        );
        assert_eq!(l.duration, Some(Duration::from_secs(30)));
    }
}
