//! What `lab agents` and `lab matrix` share: their options past the host
//! counts, a lab of client hosts each linked to each server host, a server
//! started in a server host, and one coordinated agent run against it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use iiop_lab::{Impairment, Lab, LabSpec, LinkSpec};
use iiopbench_engine::results::Results;
use iiopbench_engine::units::parse_duration;
use serde_json::{json, Value};

use super::run::{self, ServerKind};
use crate::cmd::agents::{parse_bench, CoordOpts};
use iiopbench_engine::agents as ag;

/// The options of a lab command whose clients are agents.
#[derive(Debug, Clone, Args)]
pub struct FleetOpts {
    /// `--agents`: in `lab agents` one per agent host, in `lab matrix`
    /// the agents of each cell, all in the cell's client host.
    #[command(flatten)]
    pub coord: CoordOpts,
    /// A link and its impairment in both directions, as in `lab run`:
    /// `agent0-server:delay=20ms` (lab agents) or
    /// `client1-server0:delay=20ms` (lab matrix); the other links stay
    /// unimpaired. Repeatable.
    #[arg(long = "link", value_name = "A-B:IMPAIRMENT")]
    pub links: Vec<String>,
    /// Which server runs in the server host(s).
    #[arg(long, value_enum, default_value_t = ServerKind::Ours)]
    pub server: ServerKind,
    /// Port of a vendor server (ours picks a free one).
    #[arg(long, default_value_t = 2809, value_name = "PORT")]
    pub port: u16,
    /// How long to wait for each server's `ready` line.
    #[arg(long, value_parser = parse_duration, default_value = "120s", value_name = "DURATION")]
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

/// Hosts `clients` then `servers`, each client host linked to each server
/// host: unimpaired, unless one of `given` (`--link`, as in `lab run`)
/// names the pair. A `--link` between two client or two server hosts is
/// refused with `rule` (which hosts `command` links).
pub fn bipartite_spec(
    clients: &[String],
    servers: &[String],
    given: &[String],
    command: &str,
    rule: &str,
) -> anyhow::Result<LabSpec> {
    let hosts: Vec<String> = clients.iter().chain(servers).cloned().collect();
    let given = given
        .iter()
        .map(|l| run::parse_link(l, &hosts, 1500))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut links = Vec::new();
    for c in clients {
        for s in servers {
            let mine = given
                .iter()
                .find(|l| (l.a == *c && l.b == *s) || (l.a == *s && l.b == *c));
            links.push(
                mine.cloned()
                    .unwrap_or_else(|| LinkSpec::symmetric(c, s, Impairment::NONE)),
            );
        }
    }
    if let Some(l) = given.iter().find(|l| !links.contains(l)) {
        anyhow::bail!("--link {}-{}: {command} links {rule} only", l.a, l.b);
    }
    let spec = LabSpec {
        hosts,
        links,
        ..LabSpec::pair("a", "b", Impairment::NONE)
    };
    spec.validate()?;
    Ok(spec)
}

/// Starts the server of `o` in `server_host`, its reference written to
/// `ior` (`client_host`: where a raw-TCP baseline's client will run).
pub(crate) fn start_server(
    lab: &Lab,
    o: &FleetOpts,
    bench: &[String],
    server_host: &str,
    client_host: &str,
    dir: &Path,
    ior: &Path,
) -> anyhow::Result<run::ServerProc> {
    let plan = run::Plan {
        server: o.server,
        server_host: server_host.into(),
        client_host: client_host.into(),
        port: o.port,
        server_nodelay: true,
        ready_timeout: o.ready_timeout,
        bench: bench.to_vec(),
        dir: dir.to_path_buf(),
    };
    run::start_server(lab, &plan, ior)
}

/// One coordinated run of `bench` against the server at `ior`: the
/// coordinator listens in `server_host`, and each `(host, name)` of
/// `agents` is an agent (this binary, `agents join`) started in that lab
/// host under that name. The merged results, if any agent ran, and what
/// went wrong.
pub fn run_agents(
    lab: &Lab,
    o: &FleetOpts,
    bench: &[String],
    ior: &Path,
    server_host: &str,
    agents: &[(String, String)],
) -> anyhow::Result<(Option<Results>, Option<anyhow::Error>)> {
    let mut user = vec!["bench".to_string()];
    user.extend(bench.iter().cloned());
    user.extend(["--target".to_string(), ior.display().to_string()]);
    let agent_spec = ag::prepare_spec(&user, o.coord.duration, &parse_bench)?;
    let listener = lab.tcp_listener(server_host, 0)?;
    let coord_addr = format!(
        "{}:{}",
        lab.host(server_host)?.addr(),
        listener.local_addr()?.port()
    );
    if !o.quiet {
        eprintln!("coordinator on {coord_addr} (host {server_host})");
    }
    let mut children = ag::Children::default();
    for (host, name) in agents {
        let cmd = ag::agent_command(&run::own_exe()?, &coord_addr, name, o.quiet);
        children.0.push(lab.spawn(host, cmd)?);
    }
    let log = |line: &str| {
        if !o.quiet {
            eprintln!("{line}");
        }
    };
    Ok(ag::coordinate_and_merge(
        &listener,
        &o.coord.engine(),
        &agent_spec,
        &log,
    ))
}

/// The lab's hosts and their addresses, for the results' `params.lab`.
pub fn hosts_json(lab: &Lab) -> Vec<Value> {
    lab.hosts()
        .iter()
        .map(|h| json!({"name": h.name(), "addr": h.addr().to_string()}))
        .collect()
}
