//! `iiopbench lab agents`: one bench command run by N agents, each in its
//! own lab host (`agent0` … `agentN-1`), against one server host
//! (`server`), each agent host linked to the server host. The coordinator
//! listens inside the server host; the agents are this binary (`agents
//! join`) started in their hosts. The whole path of a distributed run —
//! start barrier, clock offsets, run, collect, merge — over real kernel
//! TCP between network namespaces.

use clap::Args;
use iiop_lab::{Lab, LabSpec};
use serde_json::json;

use super::fleet::{self, FleetOpts};
use super::run as lab_run;

/// `lab agents` options.
#[derive(Debug, Clone, Args)]
pub struct AgentsOpts {
    #[command(flatten)]
    pub fleet: FleetOpts,
}

/// The lab: `agent0..agentN-1` and `server`, each agent linked to it.
pub fn spec_of(o: &AgentsOpts) -> anyhow::Result<LabSpec> {
    let f = &o.fleet;
    anyhow::ensure!(
        (f.coord.agents as usize) < iiop_lab::spec::MAX_HOSTS,
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

/// Run `lab agents`.
pub fn run(o: &AgentsOpts) -> anyhow::Result<()> {
    lab_run::require_root_and_signals()?;
    let f = &o.fleet;
    let (bench, json_in) = lab_run::bench_args(&f.bench)?;
    let json_out = f.json.clone().or(json_in);
    let spec = spec_of(o)?;
    let scratch = lab_run::Scratch::new()?;
    let lab = Lab::create(spec.clone())?;
    let ior = scratch.0.join("server.ior");
    let srv = fleet::start_server(&lab, f, &bench, "server", "agent0", &scratch.0, &ior)?;
    let agents: Vec<(String, String)> = (0..f.coord.agents)
        .map(|i| (format!("agent{i}"), format!("agent{i}")))
        .collect();
    let ran = fleet::run_agents(&lab, f, &bench, &ior, "server", &agents);
    srv.stop();
    let (merged, err) = ran?;
    let hosts = fleet::hosts_json(&lab);
    drop(lab);
    let out = crate::opts::OutputOpts::json_only(json_out, f.quiet);
    if let Some(mut m) = merged {
        m.params.insert(
            "lab".into(),
            json!({
                "hosts": hosts,
                "server_host": "server",
                "server": f.server.name(),
                "agent_hosts": (0..f.coord.agents).map(|i| format!("agent{i}")).collect::<Vec<_>>(),
                "links": spec.links.iter().map(|l| format!("{}-{}:{}", l.a, l.b, l.a_to_b)).collect::<Vec<_>>(),
            }),
        );
        m.target.isolation = Some(format!(
            "lab: {} agent hosts, server in host server",
            f.coord.agents
        ));
        crate::output::emit(&m, &out)?;
        if out.shows_tables() {
            print!("{}", crate::cmd::agents::agents_table(&m));
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
