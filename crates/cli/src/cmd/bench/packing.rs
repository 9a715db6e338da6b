//! `iiopbench bench packing`: its flags, turned into the engine's [`PackingOpts`];
//! the measuring is [`iiopbench_engine::bench::packing`]'s.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use iiopbench_engine::bench::packing::{self, PackingOpts};
use iiopbench_engine::bench::replicas::ServerKind;
use iiopbench_engine::results::Results;
use iiopbench_engine::units::parse_duration;

use crate::opts::{ServiceKindArg, WorkloadArgs};
use crate::output::ci_json;
use crate::table::{micros, num, Table};

/// `bench packing` flags.
#[derive(Debug, Clone, Args)]
pub struct PackingArgs {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Numbers N of client/method pairs (at most 50), comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,2,4,8",
        value_name = "N"
    )]
    pub pairs: Vec<usize>,
    /// The N servers of mode III: `inproc` (ours, in this process),
    /// `child` (ours, as processes) or `orb:NAME` (scripts/orbs/NAME/start).
    #[arg(long, value_parser = iiopbench_engine::bench::replicas::parse_kind, default_value = "inproc", value_name = "SERVERS")]
    pub servers: ServerKind,
    /// Our binary for `--servers child` (default: this executable).
    #[arg(long, value_name = "FILE")]
    pub server_exe: Option<PathBuf>,
    /// Service time per call; 0 calls the no-op methods.
    #[arg(long, value_parser = parse_duration, default_value = "0s", value_name = "DURATION")]
    pub service: Duration,
    /// How the server spends --service.
    #[arg(long, value_enum, default_value_t = ServiceKindArg::Spin)]
    pub service_kind: ServiceKindArg,
    /// Leave out modes (comma-separated: one-object, objects, servers).
    #[arg(long, value_delimiter = ',', value_name = "MODES")]
    pub skip: Vec<String>,
}

impl PackingArgs {
    /// The engine's options for these flags.
    pub fn opts(&self) -> PackingOpts {
        let (w, b) = (&self.workload, self.workload.bench.engine());
        PackingOpts {
            target: w.target.engine(),
            pairs: self.pairs.clone(),
            servers: self.servers.clone(),
            server_exe: self.server_exe.clone(),
            service: self.service,
            service_kind: self.service_kind.into(),
            skip: self.skip.clone(),
            run: w.run.engine(),
            socket: b.socket,
            placement: b.placement,
            progress: b.progress,
        }
    }
}

/// Run `bench packing` from the command line: measure, emit, print the summary.
pub fn run(a: &PackingArgs) -> anyhow::Result<()> {
    a.workload
        .bench
        .finish_with(packing::run(&a.opts()), summary)
}

/// Mean R per N and mode.
pub fn summary(r: &Results) -> String {
    let mut t = Table::new(["N", "mode", "R mean", "R ci", "X calls/s", "X ci"]);
    for c in &r.cases {
        let e = &c.extra;
        t.row([
            c.params.size.to_string(),
            c.params.mode.clone(),
            micros(e["r_mean_us"].as_f64().unwrap_or(0.0)),
            ci_json(&e["r_ci95"]),
            num(c.calls_per_sec),
            ci_json(&e["x_ci95"]),
        ]);
    }
    format!("packing (mean response time per mode):\n{}", t.render())
}
