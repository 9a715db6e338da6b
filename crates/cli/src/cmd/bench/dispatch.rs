//! `iiopbench bench dispatch`: its flags, and their conversion into the
//! engine's [`DispatchJob`]; the measuring is
//! [`iiopbench_engine::bench::dispatch`]'s.

use clap::Args;
use iiopbench_engine::bench::dispatch::DispatchJob;

use crate::flags::WorkloadArgs;

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
    /// The job these flags describe.
    pub fn job(&self) -> DispatchJob {
        let w = &self.workload;
        DispatchJob {
            target: w.target.engine(),
            points: self.points,
            no_500: self.no_500,
            run: w.run.engine(),
            socket: w.bench.socket.engine(),
            placement: w.bench.placement.engine(),
        }
    }
}
