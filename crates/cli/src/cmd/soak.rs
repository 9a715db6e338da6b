//! `iiopbench soak`: its flags, and their conversion into the engine's
//! [`SoakJob`]; the measuring is [`iiopbench_engine::soak`]'s.

use std::time::Duration;

use clap::Args;
use iiopbench_engine::job::Job;
use iiopbench_engine::soak::SoakJob;
use iiopbench_engine::units::parse_duration;

use crate::flags::{BenchArgs, TargetArgs};

/// `soak` flags.
#[derive(Debug, Clone, Args)]
pub struct SoakArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// How long to run (required; at most 1h), e.g. `10m`.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, value_name = "DURATION")]
    pub duration: Duration,
    /// Connections, each one caller sending mixed traffic.
    #[arg(long, default_value_t = 32, value_name = "N")]
    pub connections: usize,
    /// Length of a latency interval (one row of the drift table).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "60s", value_name = "DURATION")]
    pub interval: Duration,
    /// With --target: the server's process id, to read its resident memory
    /// from /proc (the embedded server's is this process's).
    #[arg(long, value_name = "PID")]
    pub server_pid: Option<u32>,
    #[command(flatten)]
    pub bench: BenchArgs,
}

impl SoakArgs {
    /// The job these flags describe.
    pub fn job(&self) -> SoakJob {
        SoakJob {
            target: self.target.engine(),
            duration: self.duration,
            connections: self.connections,
            interval: self.interval,
            server_pid: self.server_pid,
            socket: self.bench.socket.engine(),
            placement: self.bench.placement.engine(),
        }
    }
}

/// Run `soak` from the command line: measure, then emit what was
/// measured (also when the run failed half-way).
pub fn run(a: &SoakArgs, argv: &[String]) -> anyhow::Result<()> {
    let programs = crate::programs::ThisBinary::new()?;
    crate::cmd::bench::run_job(&Job::Soak(a.job()), &a.bench.output, argv, programs)
}
