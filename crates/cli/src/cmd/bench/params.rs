//! `iiopbench bench params`: its flags, and their conversion into the
//! engine's [`ParamsJob`]; the measuring is
//! [`iiopbench_engine::bench::params`]'s.

use clap::Args;
use iiopbench_engine::bench::params::ParamsJob;

use crate::flags::WorkloadArgs;

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
    /// The job these flags describe.
    pub fn job(&self) -> ParamsJob {
        let w = &self.workload;
        ParamsJob {
            target: w.target.engine(),
            elements: self.elements.clone(),
            run: w.run.engine(),
            socket: w.bench.socket.engine(),
            placement: w.bench.placement.engine(),
        }
    }
}
