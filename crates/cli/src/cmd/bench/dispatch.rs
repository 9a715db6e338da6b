//! `iiopbench bench dispatch`: its flags, turned into the engine's [`DispatchOpts`];
//! the measuring is [`iiopbench_engine::bench::dispatch`]'s.

use clap::Args;
use iiopbench_engine::bench::dispatch::{self, DispatchOpts};
use iiopbench_engine::results::Results;

use crate::opts::WorkloadArgs;
use crate::output::ci_json;
use crate::table::{micros, Table};

/// `bench dispatch` flags.
#[derive(Debug, Clone, Args)]
pub struct DispatchArgs {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Positions measured per model, evenly spaced from the first method
    /// to the last (at least 2).
    #[arg(long, default_value_t = 6, value_name = "N")]
    pub points: usize,
    /// Leave out the 500-method interface.
    #[arg(long)]
    pub no_500: bool,
}

impl DispatchArgs {
    /// The engine's options for these flags.
    pub fn opts(&self) -> DispatchOpts {
        let (w, b) = (&self.workload, self.workload.bench.engine());
        DispatchOpts {
            target: w.target.engine(),
            points: self.points,
            no_500: self.no_500,
            run: w.run.engine(),
            socket: b.socket,
            placement: b.placement,
            progress: b.progress,
        }
    }
}

/// Run `bench dispatch` from the command line: measure, emit, print the summary.
pub fn run(a: &DispatchArgs) -> anyhow::Result<()> {
    a.workload
        .bench
        .finish_with(dispatch::run(&a.opts()), summary)
}

/// Mean R per model and position, and each model's slope.
pub fn summary(r: &Results) -> String {
    let mut t = Table::new(["model", "position", "operation", "R mean", "R ci"]);
    for c in &r.cases {
        let e = &c.extra;
        t.row([
            c.params.mode.clone(),
            c.params.size.to_string(),
            c.params.extra["operation"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            micros(e["r_mean_us"].as_f64().unwrap_or(0.0)),
            ci_json(&e["r_ci95"]),
        ]);
    }
    let mut s = format!("dispatch latency by method position:\n{}", t.render());
    for f in &r.fits {
        s.push_str(&format!(
            "  {}: R = {} + {:.4} µs × position\n",
            f.label,
            micros(f.a_us),
            f.b_us_per_byte
        ));
    }
    s
}
