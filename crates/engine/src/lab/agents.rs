//! `lab agents`: one job run by N agents, each in its
//! own lab host (`agent0` … `agentN-1`), against one server host
//! (`server`), each agent host linked to the server host. The coordinator
//! listens inside the server host; the agents are processes the run's
//! [`Programs`](crate::programs::Programs) start in their hosts. The whole path of a distributed run —
//! start barrier, clock offsets, run, collect, merge — over real kernel
//! TCP between network namespaces.

use iiop_lab::{Lab, LabSpec};
use serde_json::json;

use super::fleet::{self, FleetOpts};
use super::run::Scratch;
use super::LabSink;
use crate::error::{ensure, Error, Result};
use crate::results::Results;
use crate::run_context::RunContext;

/// The lab: `agent0..agentN-1` and `server`, each agent linked to it.
pub fn spec_of(f: &FleetOpts) -> Result<LabSpec> {
    ensure!(
        (f.coord.agents as usize) < iiop_lab::spec::MAX_HOSTS,
        Job,
        "lab agents: at most {} agents",
        iiop_lab::spec::MAX_HOSTS - 1
    );
    let agents: Vec<String> = (0..f.coord.agents).map(|i| format!("agent{i}")).collect();
    fleet::bipartite_spec(
        &agents,
        &["server".to_string()],
        &f.links,
        "lab agents",
        "each agent host to `server`",
    )
}

/// `lab agents`: the merged results with `params.lab` (when any agent
/// ran) and what ended the run; an `Err` when it could not start. `ctx`
/// starts the processes and gives the results' command line.
pub fn run(
    f: &FleetOpts,
    ctx: &RunContext,
    sink: &dyn LabSink,
) -> Result<(Option<Results>, Option<Error>)> {
    let programs = super::programs(ctx)?;
    super::run::check_job(&f.job)?;
    let spec = spec_of(f)?;
    let scratch = Scratch::new()?;
    let lab = Lab::create(spec.clone())?;
    let ior = scratch.0.join("server.ior");
    let srv = fleet::start_server(&lab, f, "server", "agent0", &scratch.0, &ior, programs)?;
    let agents: Vec<(String, String)> = (0..f.coord.agents)
        .map(|i| (format!("agent{i}"), format!("agent{i}")))
        .collect();
    let ran = fleet::run_agents(&lab, f, &ior, "server", &agents, programs, sink);
    srv.stop();
    let (mut merged, err) = ran?;
    let hosts = fleet::hosts_json(&lab);
    drop(lab);
    if let Some(m) = &mut merged {
        m.command = ctx.command.clone();
        m.params.insert(
            "lab".into(),
            json!({
                "hosts": hosts,
                "server_host": "server",
                "server": f.server.kind.name(),
                "agent_hosts": (0..f.coord.agents).map(|i| format!("agent{i}")).collect::<Vec<_>>(),
                "links": spec.links.iter().map(|l| format!("{}-{}:{}", l.a, l.b, l.a_to_b)).collect::<Vec<_>>(),
            }),
        );
        m.target.isolation = Some(format!(
            "lab: {} agent hosts, server in host server",
            f.coord.agents
        ));
    }
    Ok((merged, err))
}
