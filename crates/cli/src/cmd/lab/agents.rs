//! `iiopbench lab agents`: one bench command run by N agents, each in its
//! own lab host (`agent0` … `agentN-1`), against one server host
//! (`server`), each agent host linked to the server host. The coordinator
//! listens inside the server host; the agents are this binary (`agents
//! join`) started in their hosts. The whole path of a distributed run —
//! start barrier, clock offsets, run, collect, merge — over real kernel
//! TCP between network namespaces. The run is the engine's
//! (`iiopbench_engine::lab::agents`); here are the flags, the merged
//! results file and the agents' table.

use clap::Args;
use iiopbench_engine::lab;

use super::fleet::FleetOpts;
use crate::cmd::agents::{agents_table, parse_bench};

/// `lab agents` options.
#[derive(Debug, Clone, Args)]
pub struct AgentsOpts {
    #[command(flatten)]
    pub fleet: FleetOpts,
}

/// Run `lab agents`.
pub fn run(o: &AgentsOpts) -> anyhow::Result<()> {
    super::require_root_and_signals()?;
    let f = &o.fleet;
    let (opts, json_out) = f.split()?;
    let printer = super::Printer { quiet: f.quiet };
    let (merged, err) = lab::agents::run(&opts, &parse_bench, &printer)?;
    let out = crate::opts::OutputOpts::json_only(json_out, f.quiet);
    if let Some(m) = merged {
        crate::output::emit(&m, &out)?;
        if out.shows_tables() {
            print!("{}", agents_table(&m));
        }
        if err.is_none() && !m.outcome.complete {
            anyhow::bail!("{}", m.outcome.failure.unwrap_or_default());
        }
    }
    match err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
