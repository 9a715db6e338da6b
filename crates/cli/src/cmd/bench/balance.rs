//! `iiopbench bench balance`: its flags, and their conversion into the
//! engine's [`BalanceJob`]; the measuring is
//! [`iiopbench_engine::bench::balance`]'s.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use clap::Args;
use iiopbench_engine::bench::balance::{BalanceJob, System};
use iiopbench_engine::bench::replicas::Replicas;
use iiopbench_engine::units::parse_duration;

use crate::flags::{DistArg, ServiceKindArg, WorkloadArgs};

/// `bench balance` flags.
#[derive(Debug, Clone, Args)]
pub struct BalanceArgs {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Systems as CLIENTSxSERVERS, comma-separated (even client counts).
    #[arg(long, value_delimiter = ',', value_parser = System::from_str, default_value = "4x2,8x4", value_name = "CxS")]
    pub systems: Vec<System>,
    /// Server service times, comma-separated.
    #[arg(long, allow_hyphen_values = true, value_delimiter = ',', value_parser = parse_duration, default_value = "10ms,40ms,120ms", value_name = "DURATION")]
    pub service: Vec<Duration>,
    /// Distribution of service times (drawn on the client, seeded).
    #[arg(long, value_enum, default_value_t = DistArg::Fixed)]
    pub service_dist: DistArg,
    /// How replicas spend the service time (spin: CPU, as in the study).
    #[arg(long, value_enum, default_value_t = ServiceKindArg::Spin)]
    pub service_kind: ServiceKindArg,
    /// Think time of the non-busy clients (scale it down for quick runs).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "500ms", value_name = "DURATION")]
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
    pub servers: Replicas,
    /// Our binary for `--servers child` (default: this executable).
    #[arg(long, value_name = "FILE")]
    pub server_exe: Option<PathBuf>,
}

impl BalanceArgs {
    /// The job these flags describe.
    pub fn job(&self) -> BalanceJob {
        let w = &self.workload;
        BalanceJob {
            target: w.target.engine(),
            systems: self.systems.clone(),
            service: self.service.clone(),
            service_dist: self.service_dist.into(),
            service_kind: self.service_kind.into(),
            think: self.think,
            think_dist: self.think_dist.into(),
            strategies: self.strategies.clone(),
            servers: self.servers.clone(),
            run: w.run.engine(),
            socket: w.bench.socket.engine(),
            placement: w.bench.placement.engine(),
        }
    }
}
