//! `iiopbench bench setup`: its flags, and their conversion into the
//! engine's [`SetupJob`]; the measuring is
//! [`iiopbench_engine::bench::setup`]'s.

use std::time::Duration;

use clap::Args;
use iiopbench_engine::bench::setup::SetupJob;
use iiopbench_engine::units::parse_duration;

use crate::flags::{BenchArgs, TargetArgs};

/// `bench setup` flags.
#[derive(Debug, Clone, Args)]
pub struct SetupArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Set-ups timed per running / in-process case.
    #[arg(long, default_value_t = 50, value_name = "N")]
    pub count: u64,
    /// Start this server command on demand (`sh -c`); `{port}` becomes a
    /// free port. It must print its IOR on a line, unless --spawn-ref.
    #[arg(long, value_name = "COMMAND")]
    pub spawn: Option<String>,
    /// The spawned server's reference (IOR, corbaloc, file; `{port}`
    /// substituted), polled until it answers.
    #[arg(long, value_name = "REF")]
    pub spawn_ref: Option<String>,
    /// Spawned servers to time.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub spawn_count: u64,
    /// Give up on a spawned server after this long.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "60s", value_name = "DURATION")]
    pub spawn_timeout: Duration,
    #[command(flatten)]
    pub bench: BenchArgs,
}

impl SetupArgs {
    /// The job these flags describe.
    pub fn job(&self) -> SetupJob {
        SetupJob {
            target: self.target.engine(),
            count: self.count,
            spawn: self.spawn.clone(),
            spawn_ref: self.spawn_ref.clone(),
            spawn_count: self.spawn_count,
            spawn_timeout: self.spawn_timeout,
            socket: self.bench.socket.engine(),
            placement: self.bench.placement.engine(),
        }
    }
}
