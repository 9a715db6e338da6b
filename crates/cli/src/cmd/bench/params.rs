//! `iiopbench bench params`: its flags, turned into the engine's [`ParamsOpts`];
//! the measuring is [`iiopbench_engine::bench::params`]'s.

use clap::Args;
use iiopbench_engine::bench::params::{self, ParamsOpts};
use iiopbench_engine::results::Results;

use crate::opts::WorkloadArgs;
use crate::output::ci_json;
use crate::table::{micros, num, Table};

/// `bench params` flags.
#[derive(Debug, Clone, Args)]
pub struct ParamsArgs {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Array sizes (elements), comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,10,100,1000,10000",
        value_name = "N"
    )]
    pub elements: Vec<u32>,
}

impl ParamsArgs {
    /// The engine's options for these flags.
    pub fn opts(&self) -> ParamsOpts {
        let (w, b) = (&self.workload, self.workload.bench.engine());
        ParamsOpts {
            target: w.target.engine(),
            elements: self.elements.clone(),
            run: w.run.engine(),
            socket: b.socket,
            placement: b.placement,
            progress: b.progress,
        }
    }
}

/// Run `bench params` from the command line: measure, emit, print the summary.
pub fn run(a: &ParamsArgs) -> anyhow::Result<()> {
    a.workload
        .bench
        .finish_with(params::run(&a.opts()), summary)
}

/// Per size: mean R of each option, its CI, ratio to option I, wire bytes.
pub fn summary(r: &Results) -> String {
    let mut t = Table::new([
        "elements",
        "option",
        "R mean",
        "R ci",
        "R / R(I)",
        "arg bytes",
        "padding",
    ]);
    for c in &r.cases {
        let e = &c.extra;
        t.row([
            c.params.extra["elements"].to_string(),
            c.params.mode.clone(),
            micros(e["r_mean_us"].as_f64().unwrap_or(0.0)),
            ci_json(&e["r_ci95"]),
            format!("{:.3}", e["ratio_to_option_i"].as_f64().unwrap_or(f64::NAN)),
            num(e["wire_arg_bytes"].as_f64().unwrap_or(0.0)),
            num(e["padding_bytes"].as_f64().unwrap_or(0.0)),
        ]);
    }
    format!(
        "parameter passing (R normalised to option I):\n{}",
        t.render()
    )
}
