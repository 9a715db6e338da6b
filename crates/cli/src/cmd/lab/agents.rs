//! `iiopbench lab agents`: one bench command run by N agents, each in its
//! own lab host (`agent0` … `agentN-1`), against one server host
//! (`server`), each agent host linked to the server host. The coordinator
//! listens inside the server host; the agents are this binary (`agents
//! join`) started in their hosts. The whole path of a distributed run —
//! start barrier, clock offsets, run, collect, merge — over real kernel
//! TCP between network namespaces.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use iiop_lab::{Impairment, Lab, LabSpec, LinkSpec};
use serde_json::json;

use super::run::{self, ServerKind};
use crate::cmd::agents::{self as ag, CoordOpts};
use iiopbench_engine::units::parse_duration;

/// `lab agents` options.
#[derive(Debug, Clone, Args)]
pub struct AgentsOpts {
    #[command(flatten)]
    pub coord: CoordOpts,
    /// A link and its impairment in both directions, as in `lab run`:
    /// `agent0-server:delay=20ms` (others stay unimpaired). Repeatable.
    #[arg(long = "link", value_name = "A-B:IMPAIRMENT")]
    pub links: Vec<String>,
    /// Which server runs in the server host.
    #[arg(long, value_enum, default_value_t = ServerKind::Ours)]
    pub server: ServerKind,
    /// Port of a vendor server (ours picks a free one).
    #[arg(long, default_value_t = 2809, value_name = "PORT")]
    pub port: u16,
    /// How long to wait for the server's `ready` line.
    #[arg(long, value_parser = parse_duration, default_value = "120s", value_name = "DURATION")]
    pub ready_timeout: Duration,
    /// Write the merged results as JSON (docs/results-schema.md).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No progress lines and no tables.
    #[arg(long, short)]
    pub quiet: bool,
    /// The bench command every agent runs, after `--` (`--target` is
    /// added: the server of the lab).
    #[arg(last = true, required = true, value_name = "BENCH ARGS")]
    pub bench: Vec<String>,
}

/// The lab: `agent0..agentN-1` and `server`, each agent linked to it.
pub fn spec_of(o: &AgentsOpts) -> anyhow::Result<LabSpec> {
    anyhow::ensure!(
        (o.coord.agents as usize) < iiop_lab::spec::MAX_HOSTS,
        "lab agents: at most {} agents",
        iiop_lab::spec::MAX_HOSTS - 1
    );
    let mut hosts: Vec<String> = (0..o.coord.agents).map(|i| format!("agent{i}")).collect();
    hosts.push("server".into());
    let given = o
        .links
        .iter()
        .map(|l| run::parse_link(l, &hosts, 1500))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut links = Vec::new();
    for h in &hosts[..hosts.len() - 1] {
        let mine = given
            .iter()
            .find(|l| (l.a == *h && l.b == "server") || (l.b == *h && l.a == "server"));
        links.push(
            mine.cloned()
                .unwrap_or_else(|| LinkSpec::symmetric(h, "server", Impairment::NONE)),
        );
    }
    if let Some(l) = given.iter().find(|l| !links.contains(l)) {
        anyhow::bail!(
            "--link {}-{}: lab agents links each agent host to `server` only",
            l.a,
            l.b
        );
    }
    let spec = LabSpec {
        hosts,
        links,
        ..LabSpec::pair("a", "b", Impairment::NONE)
    };
    spec.validate()?;
    Ok(spec)
}

/// Run `lab agents`.
pub fn run(o: &AgentsOpts) -> anyhow::Result<()> {
    run::require_root_and_signals()?;
    let (bench, json_in) = run::bench_args(&o.bench)?;
    let json_out = o.json.clone().or(json_in);
    let spec = spec_of(o)?;
    let scratch = run::Scratch::new()?;
    let lab = Lab::create(spec.clone())?;
    let plan = run::Plan {
        server: o.server,
        server_host: "server".into(),
        client_host: "agent0".into(),
        port: o.port,
        server_nodelay: true,
        ready_timeout: o.ready_timeout,
        bench: bench.clone(),
        dir: scratch.0.clone(),
    };
    let ior = scratch.0.join("server.ior");
    let srv = run::start_server(&lab, &plan, &ior)?;
    let mut user = vec!["bench".to_string()];
    user.extend(bench);
    user.extend(["--target".to_string(), ior.display().to_string()]);
    let agent_spec = ag::prepare_spec(&user, o.coord.duration)?;
    let listener = lab.tcp_listener("server", 0)?;
    let port = listener.local_addr()?.port();
    let coord_addr = format!("{}:{port}", lab.host("server")?.addr());
    if !o.quiet {
        eprintln!("lab agents: coordinator on {coord_addr} (host server)");
    }
    let mut children = ag::Children::default();
    for i in 0..o.coord.agents {
        let host = format!("agent{i}");
        let cmd = ag::agent_command(&coord_addr, &host, o.quiet)?;
        children.0.push(lab.spawn(&host, cmd)?);
    }
    let (merged, err) = ag::coordinate_and_merge(&listener, &o.coord, &agent_spec, o.quiet);
    drop(children);
    srv.stop();
    let hosts: Vec<_> = lab
        .hosts()
        .iter()
        .map(|h| json!({"name": h.name(), "addr": h.addr().to_string()}))
        .collect();
    drop(lab);
    let out = crate::opts::OutputOpts::json_only(json_out, o.quiet);
    if let Some(mut m) = merged {
        m.params.insert(
            "lab".into(),
            json!({
                "hosts": hosts,
                "server_host": "server",
                "server": o.server.name(),
                "agent_hosts": (0..o.coord.agents).map(|i| format!("agent{i}")).collect::<Vec<_>>(),
                "links": spec.links.iter().map(|l| format!("{}-{}:{}", l.a, l.b, l.a_to_b)).collect::<Vec<_>>(),
            }),
        );
        m.target.isolation = Some(format!(
            "lab: {} agent hosts, server in host server",
            o.coord.agents
        ));
        crate::output::emit(&m, &out)?;
        if out.shows_tables() {
            print!("{}", ag::agents_table(&m));
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
