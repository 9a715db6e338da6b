//! Agent runs on a Slurm cluster (docs/agents.md#slurm): one batch job
//! holds the whole run. Its batch step runs the coordinator, which
//! listens, publishes its address (`HOST:PORT`, the host being the batch
//! node's Slurm name) and starts the N agents as one `srun` step of N
//! tasks, handing them that address on their command line; each task is
//! an agent whose id is its task rank (`SLURM_PROCID`). The coordinator
//! merges the agents' results into the run directory, where the
//! submitter ([`submit`]) reads them once the job has ended.
//!
//! The run directory holds, for people as much as for the program:
//! - `run.json` — the [`SlurmRun`]: the coordinator's options and the
//!   typed job every agent runs (the batch step reads it; no command line
//!   carries the job);
//! - `run.sbatch` — the batch script `sbatch` was given;
//! - `coordinator` — the coordinator's `HOST:PORT`, once it listens;
//! - `merged.json` — the merged results, and `failure.txt` when the run
//!   failed;
//! - `slurm-JOBID.out` — the batch step's and every task's output.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{coordinate_and_merge, prepare_job, CoordOpts};
use crate::error::{fail, Error, JobError, Result};
use crate::job::Job;
use crate::results::Results;
use crate::run_context::RunContext;

/// The run's settings, as the batch step reads them from `run.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmRun {
    /// Agent tasks (ids 0..N, their Slurm task ranks).
    pub agents: u32,
    /// Measuring time of each case (a sweep's step).
    #[serde(with = "crate::units::duration")]
    pub duration: Duration,
    /// How long the start barrier waits for the tasks to register.
    #[serde(with = "crate::units::duration")]
    pub register_timeout: Duration,
    /// How long, after the start, the agents may take to send results.
    #[serde(
        default,
        with = "crate::units::opt_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub result_timeout: Option<Duration>,
    /// Agents whose clock is further off are not admitted.
    #[serde(with = "crate::units::duration")]
    pub max_clock_offset: Duration,
    /// The coordinator's port on the batch node (0: a free one).
    pub port: u16,
    /// The host name the agents reach the coordinator by, `{node}` the
    /// batch node's Slurm name (`None`: that name, `SLURMD_NODENAME`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordinator_host: Option<String>,
    /// The job every agent runs, checked and completed.
    pub job: Job,
}

impl SlurmRun {
    /// The coordinator's options.
    pub fn coord(&self) -> CoordOpts {
        CoordOpts {
            agents: self.agents,
            duration: self.duration,
            register_timeout: self.register_timeout,
            result_timeout: self.result_timeout,
            max_clock_offset: self.max_clock_offset,
        }
    }
}

/// Files of the run directory.
pub const RUN_FILE: &str = "run.json";
pub const SCRIPT_FILE: &str = "run.sbatch";
pub const COORDINATOR_FILE: &str = "coordinator";
pub const MERGED_FILE: &str = "merged.json";
pub const FAILURE_FILE: &str = "failure.txt";

/// One Slurm task's identity, from the environment `srun` gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// `SLURM_PROCID`: the task's rank, 0..N.
    pub rank: u32,
    /// `SLURM_NTASKS`: tasks in the step.
    pub ntasks: u32,
    /// `SLURMD_NODENAME`: the node it runs on.
    pub node: String,
    /// `SLURM_JOB_ID`.
    pub job_id: String,
}

impl Task {
    /// The task `get` (an environment lookup) describes; an error names
    /// what is missing (not run by `srun`).
    pub fn from_env(get: &dyn Fn(&str) -> Option<String>) -> Result<Task, JobError> {
        let need = |k: &str| {
            get(k).ok_or_else(|| {
                JobError::new(format!(
                    "{k} is not set: a Slurm agent runs as a task of `srun`"
                ))
            })
        };
        let number = |k: &str| -> Result<u32, JobError> {
            let v = need(k)?;
            v.trim()
                .parse()
                .map_err(|_| JobError::new(format!("{k}={v:?} is not a task number")))
        };
        let t = Task {
            rank: number("SLURM_PROCID")?,
            ntasks: number("SLURM_NTASKS").or_else(|_| number("SLURM_NPROCS"))?,
            node: get("SLURMD_NODENAME").unwrap_or_else(|| "?".into()),
            job_id: get("SLURM_JOB_ID").unwrap_or_else(|| "?".into()),
        };
        if t.rank >= t.ntasks {
            return Err(JobError::new(format!(
                "task rank {} is not below the step's {} tasks",
                t.rank, t.ntasks
            )));
        }
        Ok(t)
    }

    /// This process's task.
    pub fn current() -> Result<Task, JobError> {
        Task::from_env(&|k| std::env::var(k).ok())
    }

    /// The agent's name in the results: `task R@NODE`.
    pub fn name(&self) -> String {
        format!("task {}@{}", self.rank, self.node)
    }
}

/// A new run directory's name, here: `iiopbench-slurm-YYYYMMDDTHHMMSSZ`.
pub fn new_dir_name() -> PathBuf {
    use iiop_agents::Clock;
    let now = crate::results::rfc3339_ms(iiop_agents::SystemClock.now_ns());
    let stamp: String = now
        .split('.')
        .next()
        .unwrap_or_default()
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    PathBuf::from(format!("iiopbench-slurm-{stamp}Z"))
}

/// What `agents slurm` submits.
#[derive(Debug, Clone)]
pub struct SubmitOpts {
    pub coord: CoordOpts,
    /// The run directory (created; on a cluster, a directory every node
    /// of the job sees at the same path, e.g. under the home or a shared
    /// scratch file system).
    pub dir: PathBuf,
    /// The coordinator's port on the batch node (0: a free one).
    pub port: u16,
    /// The host name agents reach the coordinator by, `{node}` the batch
    /// node's Slurm name (`None`: that name).
    pub coordinator_host: Option<String>,
    /// More `sbatch` options (`--partition=…`, `--nodes=…`, …), given on
    /// its command line (they take precedence over the script's).
    pub sbatch_args: Vec<String>,
    /// How long the job may wait in the queue before it starts; then it
    /// is cancelled.
    pub queue_timeout: Duration,
    /// The job every agent runs (checked and completed here).
    pub job: Job,
}

/// A line of shell: each word single-quoted.
fn shell_line(cmd: &Command) -> String {
    let quote = |w: &std::ffi::OsStr| {
        let w = w.to_string_lossy();
        format!("'{}'", w.replace('\'', r"'\''"))
    };
    std::iter::once(quote(cmd.get_program()))
        .chain(cmd.get_args().map(quote))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The batch script: the job's shape as `#SBATCH` lines (N tasks, a time
/// limit covering the whole run, the output file in the run directory),
/// then the batch step, `step` (the coordinator).
pub fn batch_script(run: &SlurmRun, dir: &Path, step: &Command) -> String {
    let minutes = run.coord().deadline().as_secs().div_ceil(60) + 1;
    format!(
        "#!/bin/sh\n\
         # iiopbench agents on Slurm: this batch step runs the coordinator,\n\
         # which starts the {n} agents as one srun step of {n} tasks.\n\
         #SBATCH --job-name=iiopbench-agents\n\
         #SBATCH --ntasks={n}\n\
         #SBATCH --time={minutes}\n\
         #SBATCH --chdir={dir}\n\
         #SBATCH --output={dir}/slurm-%j.out\n\
         exec {step}\n",
        n = run.agents,
        dir = dir.display(),
        step = shell_line(step),
    )
}

/// Run a command bounded by `limit`; its stdout, or an error naming it
/// and its stderr.
fn output(cmd: &mut Command, limit: Duration) -> Result<String> {
    let what = shell_line(cmd);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| fail!(Local, "{what}: {e} (is Slurm's client installed?)"))?;
    let until = Instant::now() + limit;
    while matches!(child.try_wait(), Ok(None)) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    if matches!(child.try_wait(), Ok(None)) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(fail!(Local, "{what}: no answer within {limit:?}"));
    }
    let out = child.wait_with_output()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() {
        return Err(fail!(
            Local,
            "{what}: {} ({})",
            String::from_utf8_lossy(&out.stderr).trim(),
            out.status
        ));
    }
    Ok(text)
}

/// How long `squeue` may fail in a row before the job is cancelled.
const STATE_PATIENCE: Duration = Duration::from_secs(60);

/// Slurm's job states in which the job has not ended.
fn waiting(state: &str) -> bool {
    matches!(
        state,
        "PENDING"
            | "CONFIGURING"
            | "RUNNING"
            | "COMPLETING"
            | "RESIZING"
            | "SUSPENDED"
            | "REQUEUED"
            | "STAGE_OUT"
            | "SIGNALING"
    )
}

/// The job's state (`None`: Slurm no longer knows it, it has ended).
fn job_state(id: &str) -> Result<Option<String>> {
    let out = output(
        Command::new("squeue").args(["-h", "-t", "all", "-o", "%T", "-j", id]),
        Duration::from_secs(30),
    );
    match out {
        Ok(s) => Ok(s.lines().next().map(|l| l.trim().to_string())),
        // A job purged since it ended is an invalid id to squeue.
        Err(e) if e.to_string().contains("Invalid job id") => Ok(None),
        Err(e) => Err(e),
    }
}

/// Submit the run as one Slurm job and wait for it: the merged results
/// (when the coordinator wrote them) and the error that ended the run.
/// The job is cancelled when it waits in the queue beyond
/// `queue_timeout`, runs beyond the run's deadline, or on Ctrl-C. `ctx`
/// hears the news (`agents: …` lines) and starts the batch step (its
/// [`Programs`](crate::programs::Programs)).
pub fn submit(o: &SubmitOpts, ctx: &RunContext) -> Result<(Option<Results>, Option<Error>)> {
    let job = prepare_job(&o.job, o.coord.duration)?;
    let programs = ctx.programs.as_deref().ok_or_else(|| {
        Error::local("a Slurm run starts iiopbench in the job: this run has no way to name it (RunContext::programs)")
    })?;
    std::fs::create_dir_all(&o.dir)
        .map_err(|e| fail!(Local, "creating the run directory {}: {e}", o.dir.display()))?;
    let dir = o.dir.canonicalize()?;
    // (#SBATCH lines are split at white space.)
    if dir
        .to_string_lossy()
        .contains(|c: char| c.is_whitespace() || "'\"".contains(c))
    {
        return Err(fail!(
            Local,
            "the run directory {} has white space or quotes in its path, which #SBATCH lines cannot carry",
            dir.display()
        ));
    }
    for f in [MERGED_FILE, FAILURE_FILE, COORDINATOR_FILE] {
        if dir.join(f).exists() {
            return Err(fail!(
                Local,
                "{} already holds a run ({f}): give a new run directory",
                dir.display()
            ));
        }
    }
    let run = SlurmRun {
        agents: o.coord.agents,
        duration: o.coord.duration,
        register_timeout: o.coord.register_timeout,
        result_timeout: o.coord.result_timeout,
        max_clock_offset: o.coord.max_clock_offset,
        port: o.port,
        coordinator_host: o.coordinator_host.clone(),
        job,
    };
    let json = serde_json::to_string_pretty(&run).map_err(|e| fail!(Local, "{e}"))?;
    std::fs::write(dir.join(RUN_FILE), json)?;
    let script = dir.join(SCRIPT_FILE);
    std::fs::write(
        &script,
        batch_script(&run, &dir, &programs.slurm_step(&dir)),
    )?;
    let id = output(
        Command::new("sbatch")
            .arg("--parsable")
            .args(&o.sbatch_args)
            .arg(&script),
        Duration::from_secs(60),
    )?;
    // `--parsable`: `ID` or `ID;CLUSTER`.
    let id = id.split(';').next().unwrap_or_default().trim().to_string();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        return Err(fail!(Local, "sbatch answered {id:?}, not a job id"));
    }
    let note = |l: &str| ctx.progress.note(&format!("agents: {l}"));
    note(&format!(
        "Slurm job {id} submitted ({} tasks); its files are in {}",
        run.agents,
        dir.display()
    ));
    let cancel = |why: &str| {
        let _ = output(Command::new("scancel").arg(&id), Duration::from_secs(30));
        fail!(Local, "Slurm job {id} cancelled: {why}")
    };
    let queued = Instant::now();
    let mut started: Option<Instant> = None;
    // Since when squeue has failed (a busy controller answers late).
    let mut failing: Option<Instant> = None;
    let run_limit = run.coord().deadline() + Duration::from_secs(60);
    let last_state = loop {
        if crate::interrupt::requested() {
            return Err(cancel("interrupted"));
        }
        let state = match job_state(&id) {
            Ok(s) => {
                failing = None;
                s
            }
            Err(e) if failing.get_or_insert_with(Instant::now).elapsed() > STATE_PATIENCE => {
                return Err(cancel(&format!(
                    "its state could not be read for {STATE_PATIENCE:?}: {e}"
                )))
            }
            Err(_) => {
                std::thread::sleep(Duration::from_secs(1));
                continue;
            }
        };
        match state.as_deref() {
            Some(s) if waiting(s) => {
                if s != "PENDING" && started.is_none() {
                    started = Some(Instant::now());
                    note(&format!("Slurm job {id} is {s}"));
                }
                match started {
                    None if queued.elapsed() > o.queue_timeout => {
                        return Err(cancel(&format!(
                            "still waiting in the queue after {:?}",
                            o.queue_timeout
                        )))
                    }
                    Some(t) if t.elapsed() > run_limit => {
                        return Err(cancel(&format!(
                            "still running after {run_limit:?}, the run's deadline"
                        )))
                    }
                    _ => {}
                }
            }
            s => break s.unwrap_or("gone").to_string(),
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    note(&format!("Slurm job {id} ended: {last_state}"));
    let failure = std::fs::read_to_string(dir.join(FAILURE_FILE)).ok();
    let merged = match std::fs::read_to_string(dir.join(MERGED_FILE)) {
        Ok(text) => Some(
            serde_json::from_str::<Results>(&text)
                .map_err(|e| fail!(Local, "{}: {e}", dir.join(MERGED_FILE).display()))?,
        ),
        Err(_) => None,
    };
    let err = match (&merged, failure) {
        (_, Some(f)) => Some(fail!(Local, "Slurm job {id}: {}", f.trim())),
        (None, None) => {
            let out = dir.join(format!("slurm-{id}.out"));
            let text = std::fs::read_to_string(&out).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(10)..].join("\n");
            Some(fail!(
                Local,
                "Slurm job {id} ended {last_state} without results; the end of {}:\n{tail}",
                out.display()
            ))
        }
        (Some(_), None) => None,
    };
    Ok((merged, err))
}

/// The batch step of a Slurm run (`agents slurm-step DIR`): read
/// `run.json`, listen, publish the address, start the agents as one
/// `srun` step, coordinate, write the merged results (and
/// `failure.txt`), and end the step. An `Err` when the run failed.
pub fn batch_step(dir: &Path, ctx: &RunContext) -> Result<()> {
    let text = std::fs::read_to_string(dir.join(RUN_FILE))
        .map_err(|e| fail!(Local, "{}: {e}", dir.join(RUN_FILE).display()))?;
    let run: SlurmRun = serde_json::from_str(&text)
        .map_err(|e| fail!(Local, "{}: {e}", dir.join(RUN_FILE).display()))?;
    let result = coordinate_step(&run, dir, ctx);
    let failure = match &result {
        Ok((Some(m), None)) => {
            let text = serde_json::to_string_pretty(m).map_err(|e| fail!(Local, "{e}"))?;
            std::fs::write(dir.join(MERGED_FILE), text)?;
            (!m.outcome.complete).then(|| m.outcome.failure.clone().unwrap_or_default())
        }
        Ok((m, e)) => {
            if let Some(m) = m {
                let text = serde_json::to_string_pretty(m).map_err(|e| fail!(Local, "{e}"))?;
                std::fs::write(dir.join(MERGED_FILE), text)?;
            }
            Some(e.as_ref().map_or("no results".into(), |e| e.to_string()))
        }
        Err(e) => Some(e.to_string()),
    };
    if let Some(f) = &failure {
        std::fs::write(dir.join(FAILURE_FILE), format!("{f}\n"))?;
    }
    match failure {
        Some(f) => Err(Error::local(f)),
        None => Ok(()),
    }
}

/// The host name agents reach the coordinator by: `template` with
/// `{node}` replaced by the batch node's Slurm name (`{node}-ib`: its
/// name on another network), or that name.
pub fn coordinator_host(template: Option<&str>, node: &str) -> String {
    template.map_or_else(|| node.to_string(), |t| t.replace("{node}", node))
}

/// An `srun` step, killed (with its tasks) when dropped still running.
struct Step(Child);

impl Drop for Step {
    fn drop(&mut self) {
        let until = Instant::now() + Duration::from_secs(20);
        while Instant::now() < until && matches!(self.0.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(50));
        }
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

fn coordinate_step(
    run: &SlurmRun,
    dir: &Path,
    ctx: &RunContext,
) -> Result<(Option<Results>, Option<Error>)> {
    let programs = ctx.programs.as_deref().ok_or_else(|| {
        Error::local(
            "the agents are processes: this run has no way to start them (RunContext::programs)",
        )
    })?;
    let listen = format!("0.0.0.0:{}", run.port);
    let listener = std::net::TcpListener::bind(&listen)
        .map_err(|e| fail!(Local, "listening for agents on {listen}: {e}"))?;
    let port = listener.local_addr()?.port();
    let node = std::env::var("SLURMD_NODENAME")
        .unwrap_or_else(|_| crate::sysinfo::HostInfo::current().hostname);
    let host = coordinator_host(run.coordinator_host.as_deref(), &node);
    let addr = format!("{host}:{port}");
    std::fs::write(dir.join(COORDINATOR_FILE), format!("{addr}\n"))?;
    ctx.progress
        .note(&format!("agents: coordinator listening on {addr}"));
    let agent = programs.slurm_agent(&addr, run.register_timeout);
    let mut srun = Command::new("srun");
    srun.arg(format!("--ntasks={}", run.agents))
        // An agent that fails is reported by the coordinator; the
        // others go on.
        .arg("--kill-on-bad-exit=0")
        .arg("--job-name=iiopbench-agent")
        .arg(agent.get_program())
        .args(agent.get_args())
        .stdin(Stdio::null());
    let _step = Step(
        srun.spawn()
            .map_err(|e| fail!(Local, "starting the agents with srun: {e}"))?,
    );
    let (mut merged, err) =
        coordinate_and_merge(&listener, &run.coord(), &run.job, &|l| ctx.progress.note(l));
    if let Some(m) = &mut merged {
        m.command = ctx.command.clone();
    }
    Ok((merged, err))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn a_tasks_id_is_its_rank_and_outside_srun_it_says_so() {
        let t = Task::from_env(&env(&[
            ("SLURM_PROCID", "2"),
            ("SLURM_NTASKS", "3"),
            ("SLURMD_NODENAME", "node07"),
            ("SLURM_JOB_ID", "41"),
        ]))
        .unwrap();
        assert_eq!((t.rank, t.ntasks, t.name()), (2, 3, "task 2@node07".into()));
        assert_eq!(
            Task::from_env(&env(&[])).unwrap_err().to_string(),
            "SLURM_PROCID is not set: a Slurm agent runs as a task of `srun`"
        );
        assert!(
            Task::from_env(&env(&[("SLURM_PROCID", "3"), ("SLURM_NTASKS", "3")]))
                .unwrap_err()
                .to_string()
                .contains("not below")
        );
    }

    #[test]
    fn the_coordinators_host_is_the_batch_nodes_name_or_a_template_of_it() {
        assert_eq!(coordinator_host(None, "cn07"), "cn07");
        assert_eq!(coordinator_host(Some("{node}-ib"), "cn07"), "cn07-ib");
        assert_eq!(coordinator_host(Some("10.1.0.7"), "cn07"), "10.1.0.7");
    }

    #[test]
    fn the_batch_script_asks_for_n_tasks_and_quotes_the_step() {
        let run = SlurmRun {
            agents: 3,
            duration: Duration::from_secs(1),
            register_timeout: Duration::from_secs(60),
            result_timeout: None,
            max_clock_offset: Duration::from_secs(1),
            port: 0,
            coordinator_host: None,
            job: Job::Sweep(Default::default()),
        };
        let mut step = Command::new("/opt/it's/iiopbench");
        step.args(["agents", "slurm-step", "/runs/a"]);
        let s = batch_script(&run, Path::new("/runs/a"), &step);
        assert!(s.contains("#SBATCH --ntasks=3\n"), "{s}");
        assert!(s.contains("#SBATCH --output=/runs/a/slurm-%j.out\n"), "{s}");
        assert!(
            s.ends_with("exec '/opt/it'\\''s/iiopbench' 'agents' 'slurm-step' '/runs/a'\n"),
            "{s}"
        );
        // The time limit covers the run's deadline.
        let minutes: u64 = s
            .lines()
            .find_map(|l| l.strip_prefix("#SBATCH --time="))
            .unwrap()
            .parse()
            .unwrap();
        assert!(minutes * 60 >= run.coord().deadline().as_secs());
        // run.json reads back into the same run.
        let back: SlurmRun = serde_json::from_str(&serde_json::to_string(&run).unwrap()).unwrap();
        assert_eq!(back, run);
    }
}
