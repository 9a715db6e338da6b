//! `iiopbench bench connect`: its flags, turned into the engine's [`ConnectOpts`];
//! the measuring is [`iiopbench_engine::bench::connect`]'s.

use std::time::Duration;

use clap::Args;
use iiopbench_engine::bench::connect::{self, ConnectOpts};
use iiopbench_engine::units::parse_duration;

use crate::opts::{OnErrorArg, OutputOpts, PlacementArgs, SocketArgs, TargetArgs};

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
    pub socket: SocketArgs,
    #[command(flatten)]
    pub placement: PlacementArgs,
    #[command(flatten)]
    pub output: OutputOpts,
}

impl ConnectArgs {
    /// The engine's options for these flags.
    pub fn opts(&self) -> ConnectOpts {
        ConnectOpts {
            target: self.target.engine(),
            count: self.count,
            pause: self.pause,
            on_error: self.on_error.into(),
            socket: self.socket.engine(),
            placement: self.placement.engine(),
            progress: crate::progress::for_output(&self.output),
        }
    }
}

/// Run `bench connect` from the command line: measure, then emit what was
/// measured (also when the run failed half-way).
pub fn run(a: &ConnectArgs) -> anyhow::Result<()> {
    let (r, err) = connect::run(&a.opts());
    crate::output::finish(&r, &a.output, err)
}
