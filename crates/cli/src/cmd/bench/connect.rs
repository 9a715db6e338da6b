//! `iiopbench bench connect`: its flags, and their conversion into the
//! engine's [`ConnectJob`]; the measuring is
//! [`iiopbench_engine::bench::connect`]'s.

use std::time::Duration;

use clap::Args;
use iiopbench_engine::bench::connect::ConnectJob;
use iiopbench_engine::units::parse_duration;

use crate::flags::{BenchArgs, OnErrorArg, TargetArgs};

/// `bench connect` flags.
#[derive(Debug, Clone, Args)]
pub struct ConnectArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// New connections to time.
    #[arg(long, default_value_t = 200, value_name = "N")]
    pub count: u64,
    /// Pause between connections (lets TIME_WAIT sockets and the server settle).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "0s", value_name = "DURATION")]
    pub pause: Duration,
    /// Stop at the first failure, or count failures and go on.
    #[arg(long, value_enum, default_value_t = OnErrorArg::Stop)]
    pub on_error: OnErrorArg,
    #[command(flatten)]
    pub bench: BenchArgs,
}

impl ConnectArgs {
    /// The job these flags describe.
    pub fn job(&self) -> ConnectJob {
        ConnectJob {
            target: self.target.engine(),
            count: self.count,
            pause: self.pause,
            on_error: self.on_error.into(),
            socket: self.bench.socket.engine(),
            placement: self.bench.placement.engine(),
        }
    }
}
