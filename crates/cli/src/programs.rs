//! How the engine starts iiopbench's own programs when a run needs a
//! process: this executable (or `$IIOPBENCH_EXE`, for tests that run the
//! command line in-process) with its own subcommands — `serve` for our
//! server, `agents join` for an agent, the hidden `job run` for a job
//! handed over in a file, the hidden `agents slurm-step` for a Slurm run's
//! batch step. tests in `cmd` parse every command line made
//! here, so it stays in step with the flags.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context as _;
use iiopbench_engine::programs::{Programs, ServerProcess};
use iiopbench_engine::units::format_duration;

/// The executable run as server, agent and job: `$IIOPBENCH_EXE` (tests,
/// which run the command line in-process) or this process's own.
pub fn own_exe() -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os("IIOPBENCH_EXE") {
        return Ok(PathBuf::from(p));
    }
    std::env::current_exe().context("finding the iiopbench executable")
}

/// This binary's programs.
#[derive(Debug, Clone)]
pub struct ThisBinary {
    /// The executable.
    pub exe: PathBuf,
    /// How long an agent keeps trying to reach its coordinator.
    pub connect_timeout: std::time::Duration,
    /// The output flags a job's process gets besides its `--json`:
    /// `--quiet`, `--csv FILE`, `--hlog FILE`.
    pub job_output: Vec<String>,
}

impl ThisBinary {
    /// [`own_exe`], agents that wait 30 s for their coordinator, jobs that
    /// print their table.
    pub fn new() -> anyhow::Result<ThisBinary> {
        Ok(ThisBinary {
            exe: own_exe()?,
            connect_timeout: std::time::Duration::from_secs(30),
            job_output: Vec::new(),
        })
    }

    /// The same with the server binary `exe` (`--server-exe`).
    pub fn with_exe(mut self, exe: Option<&Path>) -> ThisBinary {
        if let Some(e) = exe {
            self.exe = e.to_path_buf();
        }
        self
    }

    /// The arguments of [`Programs::server`].
    pub fn server_args(s: &ServerProcess) -> Vec<String> {
        let mut a = vec!["serve".to_string(), "--listen".into(), s.listen.clone()];
        if let Some(n) = s.threads {
            a.extend(["--server-threads".into(), n.to_string()]);
        }
        if let Some(f) = &s.ior_file {
            a.extend(["--ior-file".into(), f.display().to_string()]);
        }
        a.extend(["--nodelay".into(), s.nodelay.to_string()]);
        if let Some(r) = &s.raw_tcp {
            a.extend(["--raw-tcp".into(), r.clone()]);
        }
        if let Some(d) = s.spin_limit {
            a.extend([
                "--server-model".into(),
                "threads".into(),
                "--spin-limit".into(),
                format_duration(d),
            ]);
        }
        a
    }

    /// The arguments of [`Programs::agent`], with `id` (`--id`) when an
    /// agent's number is given outside (a Kubernetes completion index).
    pub fn agent_args(&self, coordinator: &str, name: &str, id: Option<&str>) -> Vec<String> {
        let mut a = vec![
            "agents".to_string(),
            "join".into(),
            "--coordinator".into(),
            coordinator.into(),
        ];
        if let Some(id) = id {
            a.extend(["--id".into(), id.into()]);
        }
        a.extend([
            "--name".into(),
            name.into(),
            "--connect-timeout".into(),
            format_duration(self.connect_timeout),
        ]);
        a
    }

    /// The arguments of [`Programs::slurm_agent`]: `agents join --slurm`,
    /// whose id and name come from its task's environment.
    pub fn slurm_agent_args(
        coordinator: &str,
        connect_timeout: std::time::Duration,
    ) -> Vec<String> {
        vec![
            "agents".to_string(),
            "join".into(),
            "--coordinator".into(),
            coordinator.into(),
            "--slurm".into(),
            "--connect-timeout".into(),
            format_duration(connect_timeout),
        ]
    }

    /// The arguments of [`Programs::job`].
    pub fn job_args(&self, job_file: &Path, results_file: &Path) -> Vec<String> {
        let mut a = vec![
            "job".to_string(),
            "run".into(),
            job_file.display().to_string(),
            "--json".into(),
            results_file.display().to_string(),
        ];
        a.extend(self.job_output.iter().cloned());
        a
    }
}

impl Programs for ThisBinary {
    fn server(&self, s: &ServerProcess) -> Command {
        let mut c = Command::new(&self.exe);
        c.args(Self::server_args(s));
        c
    }

    fn agent(&self, coordinator: &str, name: &str) -> Command {
        let mut c = Command::new(&self.exe);
        c.args(self.agent_args(coordinator, name, None));
        c
    }

    fn job(&self, job_file: &Path, results_file: &Path) -> Command {
        let mut c = Command::new(&self.exe);
        c.args(self.job_args(job_file, results_file));
        c
    }

    fn slurm_step(&self, dir: &Path) -> Command {
        let mut c = Command::new(&self.exe);
        c.args(["agents", "slurm-step"]).arg(dir);
        c
    }

    fn slurm_agent(&self, coordinator: &str, connect_timeout: std::time::Duration) -> Command {
        let mut c = Command::new(&self.exe);
        c.args(Self::slurm_agent_args(coordinator, connect_timeout));
        c
    }
}
