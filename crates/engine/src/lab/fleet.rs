//! What `lab agents` and `lab matrix` share: their options past the host
//! counts, a lab of client hosts each linked to each server host, a server
//! started in a server host, and one coordinated agent run against it
//! (the agents are processes the run's [`Programs`] start in lab hosts;
//! the coordinator listens inside the server host).

use std::path::Path;

use iiop_lab::{Impairment, Lab, LabSpec, LinkSpec};
use serde_json::{json, Value};

use super::run;
use super::{LabSink, ServerOpts};
use crate::agents::{self as ag, CoordOpts};
use crate::error::{bail, Error, Result};
use crate::job::Job;
use crate::programs::Programs;
use crate::results::Results;

/// The options of a lab command whose clients are agents.
#[derive(Debug, Clone)]
pub struct FleetOpts {
    /// In `lab agents` one agent per agent host, in `lab matrix` the
    /// agents of each cell, all in the cell's client host.
    pub coord: CoordOpts,
    /// Links and their impairment in both directions, as in `lab run`:
    /// `agent0-server:delay=20ms` (lab agents) or
    /// `client1-server0:delay=20ms` (lab matrix); the other links stay
    /// unimpaired.
    pub links: Vec<String>,
    /// The server in each server host, and the executable (also the
    /// agents').
    pub server: ServerOpts,
    /// The agents' stderr is dropped.
    pub quiet: bool,
    /// The job the agents run (without a target: the lab gives it the
    /// server host's server).
    pub job: Job,
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
) -> Result<LabSpec> {
    let hosts: Vec<String> = clients.iter().chain(servers).cloned().collect();
    let given = given
        .iter()
        .map(|l| run::parse_link(l, &hosts, 1500))
        .collect::<Result<Vec<_>>>()?;
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
        bail!(Job, "link {}-{}: {command} links {rule} only", l.a, l.b);
    }
    run::lab_spec(hosts, links)
}

/// Starts the server of `o` in `server_host`, its reference written to
/// `ior` (`client_host`: where a raw-TCP baseline's client will run).
pub fn start_server(
    lab: &Lab,
    o: &FleetOpts,
    server_host: &str,
    client_host: &str,
    dir: &Path,
    ior: &Path,
    programs: &dyn Programs,
) -> Result<run::ServerProc> {
    let plan = run::Plan {
        server: o.server.clone(),
        server_host: server_host.into(),
        client_host: client_host.into(),
        server_nodelay: true,
        job: o.job.clone(),
        dir: dir.to_path_buf(),
    };
    run::start_server(lab, &plan, ior, programs)
}

/// One coordinated run of `o.job` against the server at `ior`: the
/// coordinator listens in `server_host`, and each `(host, name)` of
/// `agents` is an agent started (by `programs`) in that lab host under
/// that name; `sink` hears the coordinator's lines. The merged results,
/// if any agent ran, and what went wrong.
pub fn run_agents(
    lab: &Lab,
    o: &FleetOpts,
    ior: &Path,
    server_host: &str,
    agents: &[(String, String)],
    programs: &dyn Programs,
    sink: &dyn LabSink,
) -> Result<(Option<Results>, Option<Error>)> {
    let job = ag::prepare_job(&run::client_job(&o.job, ior, None), o.coord.duration)?;
    let listener = lab.tcp_listener(server_host, 0)?;
    let coord_addr = format!(
        "{}:{}",
        lab.host(server_host)?.addr(),
        listener.local_addr()?.port()
    );
    sink.note(&format!("coordinator on {coord_addr} (host {server_host})"));
    let mut children = ag::Children::default();
    for (host, name) in agents {
        let mut cmd = programs.agent(&coord_addr, name);
        ag::quiet_agent(&mut cmd, o.quiet);
        children.0.push(lab.spawn(host, cmd)?);
    }
    Ok(ag::coordinate_and_merge(
        &listener,
        &o.coord,
        &job,
        &|line| sink.note(line),
    ))
}

/// The lab's hosts and their addresses, for the results' `params.lab`.
pub fn hosts_json(lab: &Lab) -> Vec<Value> {
    lab.hosts()
        .iter()
        .map(|h| json!({"name": h.name(), "addr": h.addr().to_string()}))
        .collect()
}
