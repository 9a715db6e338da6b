//! The flags `lab agents` and `lab matrix` share past their host counts,
//! and their conversion into the engine's options
//! (`iiopbench_engine::lab::fleet`, which runs the servers and the agents).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use iiopbench_engine::lab::fleet;
use iiopbench_engine::units::parse_duration;

use super::common::ServerArg;
use crate::cmd::agents::CoordArgs;

/// The options of a lab command whose clients are agents.
#[derive(Debug, Clone, Args)]
pub struct FleetArgs {
    /// `--agents`: in `lab agents` one per agent host, in `lab matrix`
    /// the agents of each cell, all in the cell's client host.
    #[command(flatten)]
    pub coord: CoordArgs,
    /// A link and its impairment in both directions, as in `lab run`:
    /// `agent0-server:delay=20ms` (lab agents) or
    /// `client1-server0:delay=20ms` (lab matrix); the other links stay
    /// unimpaired. Repeatable.
    #[arg(long = "link", value_name = "A-B:IMPAIRMENT")]
    pub links: Vec<String>,
    /// Which server runs in the server host(s).
    #[arg(long, value_enum, default_value_t = ServerArg::Ours)]
    pub server: ServerArg,
    /// Port of a vendor server (ours picks a free one).
    #[arg(long, default_value_t = 2809, value_name = "PORT")]
    pub port: u16,
    /// How long to wait for each server's `ready` line.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "120s", value_name = "DURATION")]
    pub ready_timeout: Duration,
    /// Write the merged results as JSON (docs/results-schema.md); `-` for
    /// stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No progress lines and no tables.
    #[arg(long, short)]
    pub quiet: bool,
    /// The bench command the agents run, after `--` (`--target` is added:
    /// the server host's server).
    #[arg(last = true, required = true, value_name = "BENCH ARGS")]
    pub bench: Vec<String>,
}

impl FleetArgs {
    /// As the engine's options, with the bench command after `--` as
    /// their job; and where the results go (this command's `--json`, or
    /// one among the bench arguments).
    pub fn split(&self) -> anyhow::Result<(fleet::FleetOpts, Option<PathBuf>)> {
        let (job, output) =
            crate::cmd::bench::parse_words(&self.bench).map_err(anyhow::Error::msg)?;
        Ok((
            fleet::FleetOpts {
                coord: self.coord.engine(),
                links: self.links.clone(),
                server: self.server.engine(self.port, self.ready_timeout),
                quiet: self.quiet,
                job,
            },
            self.json.clone().or(output.json),
        ))
    }
}
