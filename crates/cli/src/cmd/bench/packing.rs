//! `iiopbench bench packing`: its flags, and their conversion into the
//! engine's [`PackingJob`]; the measuring is
//! [`iiopbench_engine::bench::packing`]'s.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use clap::Args;
use iiopbench_engine::bench::packing::{PackingJob, PackingMode};
use iiopbench_engine::bench::replicas::Replicas;
use iiopbench_engine::units::parse_duration;

use crate::flags::{ServiceKindArg, WorkloadArgs};

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
    pub servers: Replicas,
    /// Our binary for `--servers child` (default: this executable).
    #[arg(long, value_name = "FILE")]
    pub server_exe: Option<PathBuf>,
    /// Service time per call; 0 calls the no-op methods.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "0s", value_name = "DURATION")]
    pub service: Duration,
    /// How the server spends --service.
    #[arg(long, value_enum, default_value_t = ServiceKindArg::Spin)]
    pub service_kind: ServiceKindArg,
    /// Leave out modes (comma-separated: one-object, objects, servers).
    #[arg(long, value_delimiter = ',', value_parser = PackingMode::from_str, value_name = "MODES")]
    pub skip: Vec<PackingMode>,
}

impl PackingArgs {
    /// The job these flags describe.
    pub fn job(&self) -> PackingJob {
        let w = &self.workload;
        PackingJob {
            target: w.target.engine(),
            pairs: self.pairs.clone(),
            servers: self.servers.clone(),
            service: self.service,
            service_kind: self.service_kind.into(),
            skip: self.skip.clone(),
            run: w.run.engine(),
            socket: w.bench.socket.engine(),
            placement: w.bench.placement.engine(),
        }
    }
}
