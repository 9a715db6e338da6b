//! The iiopbench programs a run starts as processes of their own: our
//! reference server (packing's and balance's servers, a lab's server),
//! an agent of a coordinated run, and a job run inside a lab host. How to
//! start them is the caller's: the command line knows its own executable
//! and spelling and implements [`Programs`]; the engine only says what
//! each process is for, and reads what it prints or writes.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Starts iiopbench's own programs. The command line's implementation
/// runs its own executable; a harness that has none gives
/// [`RunContext::programs`](crate::run_context::RunContext::programs)
/// `None`, and the jobs that need a process say so.
pub trait Programs: Send + Sync {
    /// Our reference server, as [`ServerProcess`] describes it. It prints
    /// its IOR alone on a line, then `config raw_tcp=HOST:PORT` when it
    /// also serves the raw-TCP baseline, then `ready`
    /// (docs/vendor-protocol.md).
    fn server(&self, s: &ServerProcess) -> Command;
    /// An agent that joins the coordinator at `coordinator` (`HOST:PORT`)
    /// under `name`, runs the job it is sent, and sends its results back.
    fn agent(&self, coordinator: &str, name: &str) -> Command;
    /// A process that runs the job in `job_file` (its JSON) and writes
    /// the results to `results_file`, also when the run fails half-way.
    fn job(&self, job_file: &Path, results_file: &Path) -> Command;
    /// The batch step of a Slurm run whose files are in `dir`: it reads
    /// the run there and coordinates it
    /// ([`batch_step`](crate::agents::slurm::batch_step)).
    fn slurm_step(&self, dir: &Path) -> Command;
    /// One agent as a Slurm task: it joins `coordinator` (`HOST:PORT`,
    /// trying for `connect_timeout`) with its task rank as its id.
    fn slurm_agent(&self, coordinator: &str, connect_timeout: std::time::Duration) -> Command;
}

/// One of our reference servers started as a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerProcess {
    /// `HOST:PORT` to listen on (port 0: a free one).
    pub listen: String,
    /// Its threads (`None`: its default).
    pub threads: Option<usize>,
    /// Where it also writes its IOR.
    pub ior_file: Option<PathBuf>,
    /// TCP_NODELAY on its connections.
    pub nodelay: bool,
    /// Also serve the raw-TCP baseline on this `HOST:PORT`.
    pub raw_tcp: Option<String>,
    /// A thread per connection that, after each message, polls this long
    /// for the next bytes before it blocks (`None`: its default model).
    pub spin_limit: Option<std::time::Duration>,
}

impl ServerProcess {
    /// A server on `listen`, with its defaults.
    pub fn on(listen: impl Into<String>) -> ServerProcess {
        ServerProcess {
            listen: listen.into(),
            threads: None,
            ior_file: None,
            nodelay: true,
            raw_tcp: None,
            spin_limit: None,
        }
    }
}
