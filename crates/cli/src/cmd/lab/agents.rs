//! `iiopbench lab agents`: one bench command run by N agents, each in its
//! own lab host (`agent0` … `agentN-1`), against one server host
//! (`server`), each agent host linked to the server host. The coordinator
//! listens inside the server host; the agents are this binary (`agents
//! join`) started in their hosts, sent the job over the wire. The whole path of a distributed run —
//! start barrier, clock offsets, run, collect, merge — over real kernel
//! TCP between network namespaces. The run is the engine's
//! (`iiopbench_engine::lab::agents`); here are the flags, the merged
//! results file and the agents' table.

use clap::Args;
use iiopbench_engine::lab;

use super::common;
use super::fleet::FleetArgs;
use crate::cmd::agents::agents_table;

/// `lab agents` options.
#[derive(Debug, Clone, Args)]
pub struct LabAgentsArgs {
    #[command(flatten)]
    pub fleet: FleetArgs,
}

/// Run `lab agents`.
pub fn run(o: &LabAgentsArgs, argv: &[String]) -> anyhow::Result<()> {
    let f = &o.fleet;
    let (opts, json_out) = f.split()?;
    common::require_root_and_signals()?;
    let printer = common::Printer { quiet: f.quiet };
    let ctx = common::context(argv, crate::programs::ThisBinary::new()?);
    let (merged, err) = lab::agents::run(&opts, &ctx, &printer)?;
    let out = crate::flags::OutputOpts::json_only(json_out, f.quiet);
    if let Some(mut m) = merged {
        crate::words::in_results(&mut m);
        crate::output::emit(&m, &out)?;
        if out.shows_tables() {
            out!("{}", agents_table(&m));
        }
        if err.is_none() && !m.outcome.complete {
            anyhow::bail!("{}", m.outcome.failure.unwrap_or_default());
        }
    }
    match err {
        Some(e) => Err(anyhow::anyhow!(crate::words::flags(&e.to_string()))),
        None => Ok(()),
    }
}
