//! `iiopbench soak`: its flags, turned into the engine's [`SoakOpts`];
//! the measuring is [`iiopbench_engine::soak`]'s.

use std::time::Duration;

use clap::Args;
use iiopbench_engine::soak::{self, SoakOpts};
use iiopbench_engine::units::parse_duration;

use crate::opts::{BenchArgs, TargetArgs};

/// `soak` flags.
#[derive(Debug, Clone, Args)]
pub struct SoakArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// How long to run (required; at most 1h), e.g. `10m`.
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub duration: Duration,
    /// Connections, each one caller sending mixed traffic.
    #[arg(long, default_value_t = 32, value_name = "N")]
    pub connections: usize,
    /// Length of a latency interval (one row of the drift table).
    #[arg(long, value_parser = parse_duration, default_value = "60s", value_name = "DURATION")]
    pub interval: Duration,
    /// With --target: the server's process id, to read its resident memory
    /// from /proc (the embedded server's is this process's).
    #[arg(long, value_name = "PID")]
    pub server_pid: Option<u32>,
    #[command(flatten)]
    pub bench: BenchArgs,
}

impl SoakArgs {
    /// The engine's options for these flags.
    pub fn opts(&self) -> SoakOpts {
        let b = self.bench.engine();
        SoakOpts {
            target: self.target.engine(),
            duration: self.duration,
            connections: self.connections,
            interval: self.interval,
            server_pid: self.server_pid,
            socket: b.socket,
            placement: b.placement,
            progress: b.progress,
        }
    }
}

/// Run `soak` from the command line: measure, then emit what was
/// measured (also when the run failed half-way).
pub fn run(a: &SoakArgs) -> anyhow::Result<()> {
    a.bench.finish(soak::run(&a.opts()))
}
