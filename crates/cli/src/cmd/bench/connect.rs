//! `iiopbench bench connect`: its flags, turned into the engine's [`ConnectOpts`];
//! the measuring is [`iiopbench_engine::bench::connect`]'s.

use std::time::Duration;

use clap::Args;
use iiopbench_engine::bench::connect::{self, ConnectOpts};
use iiopbench_engine::units::parse_duration;

use crate::opts::{BenchArgs, OnErrorArg, TargetArgs};

/// `bench connect` flags.
#[derive(Debug, Clone, Args)]
pub struct ConnectArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// New connections to time.
    #[arg(long, default_value_t = 200, value_name = "N")]
    pub count: u64,
    /// Pause between connections (lets TIME_WAIT sockets and the server settle).
    #[arg(long, value_parser = parse_duration, default_value = "0s", value_name = "DURATION")]
    pub pause: Duration,
    /// Stop at the first failure, or count failures and go on.
    #[arg(long, value_enum, default_value_t = OnErrorArg::Stop)]
    pub on_error: OnErrorArg,
    #[command(flatten)]
    pub bench: BenchArgs,
}

impl ConnectArgs {
    /// The engine's options for these flags.
    pub fn opts(&self) -> ConnectOpts {
        let b = self.bench.engine();
        ConnectOpts {
            target: self.target.engine(),
            count: self.count,
            pause: self.pause,
            on_error: self.on_error.into(),
            socket: b.socket,
            placement: b.placement,
            progress: b.progress,
        }
    }
}

/// Run `bench connect` from the command line: measure, then emit what was
/// measured (also when the run failed half-way).
pub fn run(a: &ConnectArgs) -> anyhow::Result<()> {
    a.bench.finish(connect::run(&a.opts()))
}
