//! `iiopbench bench balance`: its flags, turned into the engine's [`BalanceOpts`];
//! the measuring is [`iiopbench_engine::bench::balance`]'s.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use iiopbench_engine::bench::balance::{self, BalanceOpts};
use iiopbench_engine::bench::replicas::ServerKind;
use iiopbench_engine::results::Results;
use iiopbench_engine::units::parse_duration;

use crate::opts::{DistArg, ServiceKindArg, WorkloadArgs};
use crate::output::ci_json;
use crate::table::{micros, num, Table};

/// `bench balance` flags.
#[derive(Debug, Clone, Args)]
pub struct BalanceArgs {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Systems as CLIENTSxSERVERS, comma-separated (even client counts).
    #[arg(long, value_delimiter = ',', value_parser = iiopbench_engine::bench::balance::parse_system, default_value = "4x2,8x4", value_name = "CxS")]
    pub systems: Vec<(usize, usize)>,
    /// Server service times, comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = parse_duration, default_value = "10ms,40ms,120ms", value_name = "DURATION")]
    pub service: Vec<Duration>,
    /// Distribution of service times (drawn on the client, seeded).
    #[arg(long, value_enum, default_value_t = DistArg::Fixed)]
    pub service_dist: DistArg,
    /// How replicas spend the service time (spin: CPU, as in the study).
    #[arg(long, value_enum, default_value_t = ServiceKindArg::Spin)]
    pub service_kind: ServiceKindArg,
    /// Think time of the non-busy clients (scale it down for quick runs).
    #[arg(long, value_parser = parse_duration, default_value = "500ms", value_name = "DURATION")]
    pub think: Duration,
    /// Distribution of the think time.
    #[arg(long, value_enum, default_value_t = DistArg::Fixed)]
    pub think_dist: DistArg,
    /// Strategies to run (1-5), comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,2,3,4,5",
        value_name = "N"
    )]
    pub strategies: Vec<u8>,
    /// The replicas: `inproc` (ours, one thread each), `child` (ours, as
    /// processes) or `orb:NAME` (scripts/orbs/NAME/start).
    #[arg(long, value_parser = iiopbench_engine::bench::replicas::parse_kind, default_value = "inproc", value_name = "SERVERS")]
    pub servers: ServerKind,
    /// Our binary for `--servers child` (default: this executable).
    #[arg(long, value_name = "FILE")]
    pub server_exe: Option<PathBuf>,
}

impl BalanceArgs {
    /// The engine's options for these flags.
    pub fn opts(&self) -> BalanceOpts {
        let (w, b) = (&self.workload, self.workload.bench.engine());
        BalanceOpts {
            target: w.target.engine(),
            systems: self.systems.clone(),
            service: self.service.clone(),
            service_dist: self.service_dist.into(),
            service_kind: self.service_kind.into(),
            think: self.think,
            think_dist: self.think_dist.into(),
            strategies: self.strategies.clone(),
            servers: self.servers.clone(),
            server_exe: self.server_exe.clone(),
            run: w.run.engine(),
            socket: b.socket,
            placement: b.placement,
            progress: b.progress,
        }
    }
}

/// Run `bench balance` from the command line: measure, emit, print the summary.
pub fn run(a: &BalanceArgs) -> anyhow::Result<()> {
    a.workload
        .bench
        .finish_with(balance::run(&a.opts()), summary)
}

/// X per strategy and relative to strategy 1.
pub fn summary(r: &Results) -> String {
    let mut t = Table::new([
        "system",
        "service",
        "strategy",
        "X calls/s",
        "X ci",
        "vs strategy 1",
        "busy X",
        "non-busy X",
        "R mean",
    ]);
    for c in &r.cases {
        let (e, p) = (&c.extra, &c.params.extra);
        t.row([
            format!(
                "C={} S={}",
                p["clients"].as_u64().unwrap_or(0),
                p["replicas"].as_u64().unwrap_or(0)
            ),
            micros(p["service_us"].as_f64().unwrap_or(0.0)),
            c.params.mode.clone(),
            num(c.calls_per_sec),
            ci_json(&e["x_ci95"]),
            e["relative_to_strategy_1"]
                .as_f64()
                .map(|v| format!("{v:.3}"))
                .unwrap_or_else(|| "-".into()),
            num(e["busy_calls_per_sec"].as_f64().unwrap_or(0.0)),
            num(e["nonbusy_calls_per_sec"].as_f64().unwrap_or(0.0)),
            micros(e["r_mean_us"].as_f64().unwrap_or(0.0)),
        ]);
    }
    format!("load balancing (system throughput X):\n{}", t.render())
}
