//! `iiopbench bench closed`: its flags, and their conversion into the
//! engine's [`ClosedJob`]; the measuring is
//! [`iiopbench_engine::bench::closed`]'s.

use std::time::Duration;

use clap::Args;
use iiopbench_engine::bench::closed::ClosedJob;
use iiopbench_engine::units::parse_duration;

use crate::flags::{DistArg, ServiceKindArg, WorkloadArgs};

/// `bench closed` flags.
#[derive(Debug, Clone, Args)]
pub struct ClosedArgs {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Client tasks C (each on its own connection).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub clients: usize,
    /// Mean think time Z between a reply and the next call.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "0s", value_name = "DURATION")]
    pub think: Duration,
    /// Distribution of Z.
    #[arg(long, value_enum, default_value_t = DistArg::Fixed)]
    pub think_dist: DistArg,
    /// Mean server service time S (sent to `work`; 0 = no-op work call).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "0s", value_name = "DURATION")]
    pub service: Duration,
    /// Distribution of S (drawn on the client, seeded).
    #[arg(long, value_enum, default_value_t = DistArg::Fixed)]
    pub service_dist: DistArg,
    /// How the server spends S.
    #[arg(long, value_enum, default_value_t = ServiceKindArg::Sleep)]
    pub service_kind: ServiceKindArg,
}

impl ClosedArgs {
    /// The job these flags describe.
    pub fn job(&self) -> ClosedJob {
        let w = &self.workload;
        ClosedJob {
            target: w.target.engine(),
            clients: self.clients,
            think: self.think,
            think_dist: self.think_dist.into(),
            service: self.service,
            service_dist: self.service_dist.into(),
            service_kind: self.service_kind.into(),
            run: w.run.engine(),
            socket: w.bench.socket.engine(),
            placement: w.bench.placement.engine(),
        }
    }
}
