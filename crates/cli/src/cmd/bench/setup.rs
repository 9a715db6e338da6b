//! `iiopbench bench setup`: its flags, turned into the engine's [`SetupOpts`];
//! the measuring is [`iiopbench_engine::bench::setup`]'s.

use std::time::Duration;

use clap::Args;
use iiopbench_engine::bench::setup::{self, SetupOpts};
use iiopbench_engine::results::Results;
use iiopbench_engine::units::parse_duration;

use crate::opts::{BenchArgs, TargetArgs};
use crate::output::ci_json;
use crate::table::{micros, Table};

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
    #[arg(long, value_parser = parse_duration, default_value = "60s", value_name = "DURATION")]
    pub spawn_timeout: Duration,
    #[command(flatten)]
    pub bench: BenchArgs,
}

impl SetupArgs {
    /// The engine's options for these flags.
    pub fn opts(&self) -> SetupOpts {
        let b = self.bench.engine();
        SetupOpts {
            target: self.target.engine(),
            count: self.count,
            spawn: self.spawn.clone(),
            spawn_ref: self.spawn_ref.clone(),
            spawn_count: self.spawn_count,
            spawn_timeout: self.spawn_timeout,
            socket: b.socket,
            placement: b.placement,
            progress: b.progress,
        }
    }
}

/// Run `bench setup` from the command line: measure, emit, print the summary.
pub fn run(a: &SetupArgs) -> anyhow::Result<()> {
    a.bench.finish_with(setup::run(&a.opts()), summary)
}

/// T per server state, and relative to the running server in-process.
pub fn summary(r: &Results) -> String {
    let base = r
        .cases
        .iter()
        .find(|c| c.params.mode == "in-process-running")
        .and_then(|c| c.latency_us.as_ref().map(|l| l.mean));
    let mut t = Table::new([
        "state",
        "set-ups",
        "T mean",
        "T ci",
        "T p50",
        "T max",
        "vs in-process",
    ]);
    for c in &r.cases {
        let l = c.latency_us.unwrap_or_default();
        t.row([
            c.params.mode.clone(),
            c.calls.to_string(),
            micros(l.mean),
            ci_json(&c.extra["t_ci95"]),
            micros(l.p50),
            micros(l.max),
            base.map(|b| format!("{:.1}x", l.mean / b.max(1e-9)))
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    format!(
        "connection set-up T (reference → first reply):\n{}",
        t.render()
    )
}
