//! `iiopbench bench closed`: its flags, turned into the engine's [`ClosedOpts`];
//! the measuring is [`iiopbench_engine::bench::closed`]'s.

use std::time::Duration;

use clap::Args;
use iiopbench_engine::bench::closed::{self, ClosedOpts};
use iiopbench_engine::results::Results;
use iiopbench_engine::units::parse_duration;

use crate::opts::{DistArg, ServiceKindArg, WorkloadArgs};
use crate::output::ci_json;
use crate::table::{micros, num, Table};

/// `bench closed` flags.
#[derive(Debug, Clone, Args)]
pub struct ClosedArgs {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Client tasks C (each on its own connection).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub clients: usize,
    /// Mean think time Z between a reply and the next call.
    #[arg(long, value_parser = parse_duration, default_value = "0s", value_name = "DURATION")]
    pub think: Duration,
    /// Distribution of Z.
    #[arg(long, value_enum, default_value_t = DistArg::Fixed)]
    pub think_dist: DistArg,
    /// Mean server service time S (sent to `work`; 0 = no-op work call).
    #[arg(long, value_parser = parse_duration, default_value = "0s", value_name = "DURATION")]
    pub service: Duration,
    /// Distribution of S (drawn on the client, seeded).
    #[arg(long, value_enum, default_value_t = DistArg::Fixed)]
    pub service_dist: DistArg,
    /// How the server spends S.
    #[arg(long, value_enum, default_value_t = ServiceKindArg::Sleep)]
    pub service_kind: ServiceKindArg,
}

impl ClosedArgs {
    /// The engine's options for these flags.
    pub fn opts(&self) -> ClosedOpts {
        let (w, b) = (&self.workload, self.workload.bench.engine());
        ClosedOpts {
            target: w.target.engine(),
            clients: self.clients,
            think: self.think,
            think_dist: self.think_dist.into(),
            service: self.service,
            service_dist: self.service_dist.into(),
            service_kind: self.service_kind.into(),
            run: w.run.engine(),
            socket: b.socket,
            placement: b.placement,
            progress: b.progress,
        }
    }
}

/// Run `bench closed` from the command line: measure, emit, print the summary.
pub fn run(a: &ClosedArgs) -> anyhow::Result<()> {
    a.workload
        .bench
        .finish_with(closed::run(&a.opts()), summary)
}

/// The closed-system summary: X, R, Z with their CIs and Little's law.
pub fn summary(r: &Results) -> String {
    let mut t = Table::new([
        "case",
        "X calls/s",
        "X ci",
        "R mean",
        "R ci",
        "Z mean",
        "C",
        "X·(R+Z)",
        "Little err",
        "stopped by",
    ]);
    for c in &r.cases {
        let e = &c.extra;
        let l = &e["littles_law"];
        t.row([
            c.name.clone(),
            num(c.calls_per_sec),
            ci_json(&e["x_ci95"]),
            micros(l["r_mean_us"].as_f64().unwrap_or(0.0)),
            ci_json(&e["r_ci95"]),
            micros(l["z_mean_us"].as_f64().unwrap_or(0.0)),
            num(l["clients"].as_f64().unwrap_or(0.0)),
            format!("{:.3}", l["x_times_r_plus_z"].as_f64().unwrap_or(0.0)),
            format!(
                "{:.2} %",
                l["relative_error"].as_f64().unwrap_or(0.0) * 100.0
            ),
            e["stopped_by"].as_str().unwrap_or("?").to_string(),
        ]);
    }
    format!("closed system (Little's law C = X·(R+Z)):\n{}", t.render())
}
