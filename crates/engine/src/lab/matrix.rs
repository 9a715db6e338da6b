//! `lab matrix`: the ATON host-pair matrix (seed 002, E2.1) from
//! one command. Client hosts `client0` … and server hosts `server0` …, each
//! client host linked to each server host; a server runs in every server
//! host, and for every pair (client host, server host) the bench command
//! runs as `--agents` coordinated agents in that client host against that
//! server host (`iiopbench agents`, docs/agents.md). One results file: the
//! merged cases of every cell, tagged with their hosts.
//!
//! Cells run one after another, so no cell shares the server's CPUs with
//! another; a cell that fails is named, the others are kept, and the run
//! is marked incomplete.

use iiop_lab::{Lab, LabSpec};
use serde_json::json;

use super::fleet::{self, FleetOpts};
use super::run::Scratch;
use super::LabSink;
use crate::error::{ensure, Error, Result};
use crate::programs::Programs;
use crate::results::Results;
use crate::run_context::RunContext;

/// `lab matrix`'s options.
#[derive(Debug, Clone)]
pub struct LabMatrixOpts {
    /// Client hosts (`client0` …).
    pub client_hosts: u32,
    /// Server hosts (`server0` …), each running its own server.
    pub server_hosts: u32,
    pub fleet: FleetOpts,
}

impl LabMatrixOpts {
    /// The client hosts' names, `client0` ….
    pub fn clients(&self) -> Vec<String> {
        (0..self.client_hosts)
            .map(|i| format!("client{i}"))
            .collect()
    }

    /// The server hosts' names, `server0` ….
    pub fn servers(&self) -> Vec<String> {
        (0..self.server_hosts)
            .map(|i| format!("server{i}"))
            .collect()
    }
}

/// The lab: every client host linked to every server host.
pub fn spec_of(o: &LabMatrixOpts) -> Result<LabSpec> {
    ensure!(
        o.client_hosts >= 1 && o.server_hosts >= 1,
        Job,
        "lab matrix: at least one client host and one server host"
    );
    let (cs, ss) = (o.clients(), o.servers());
    ensure!(
        cs.len() + ss.len() <= iiop_lab::spec::MAX_HOSTS,
        Job,
        "lab matrix: at most {} hosts in all",
        iiop_lab::spec::MAX_HOSTS
    );
    fleet::bipartite_spec(
        &cs,
        &ss,
        &o.fleet.links,
        "lab matrix",
        "client hosts to server hosts",
    )
}

/// One cell's merged result, or why there is none.
struct Cell {
    client: String,
    server: String,
    merged: Option<Results>,
    failure: Option<String>,
}

/// `lab matrix`: every cell, one after another, in one results value
/// (incomplete, naming the cells that failed, when any did); `sink` hears
/// each cell start and the coordinators' lines; `ctx` starts the
/// processes and gives the results' command line. An `Err` when it could
/// not start or no cell ran.
pub fn run(o: &LabMatrixOpts, ctx: &RunContext, sink: &dyn LabSink) -> Result<Results> {
    let programs = super::programs(ctx)?;
    let f = &o.fleet;
    super::run::check_job(&f.job)?;
    let spec = spec_of(o)?;
    let scratch = Scratch::new()?;
    let lab = Lab::create(spec.clone())?;
    let (cs, ss) = (o.clients(), o.servers());
    // A server in every server host, started once for all its cells.
    let mut running = Vec::new();
    for s in &ss {
        let ior = scratch.0.join(format!("{s}.ior"));
        let srv = fleet::start_server(&lab, f, s, &cs[0], &scratch.0, &ior, programs)?;
        running.push((s.clone(), ior, srv));
    }
    let mut cells = Vec::new();
    for c in &cs {
        for (s, ior, _) in &running {
            if crate::interrupt::requested() {
                break;
            }
            sink.note(&format!("lab matrix: cell {c} -> {s}"));
            cells.push(run_cell(&lab, f, c, s, ior, programs, sink));
        }
    }
    for (_, _, srv) in running {
        srv.stop();
    }
    let hosts = fleet::hosts_json(&lab);
    drop(lab);
    let mut r = combine(o, &spec, hosts, &cells).ok_or_else(|| {
        Error::target(format!(
            "lab matrix: no cell ran: {}",
            cells
                .iter()
                .filter_map(|c| c.failure.as_deref())
                .collect::<Vec<_>>()
                .join("; ")
        ))
    })?;
    r.command = ctx.command.clone();
    Ok(r)
}

/// One cell: `--agents` agents in client host `c` against the server of
/// host `s`, the coordinator in `s`.
fn run_cell(
    lab: &Lab,
    f: &FleetOpts,
    c: &str,
    s: &str,
    ior: &std::path::Path,
    programs: &dyn Programs,
    sink: &dyn LabSink,
) -> Cell {
    let cell = |merged, failure| Cell {
        client: c.to_string(),
        server: s.to_string(),
        merged,
        failure,
    };
    let agents: Vec<(String, String)> = (0..f.coord.agents)
        .map(|i| (c.to_string(), format!("{c}-{i}")))
        .collect();
    match fleet::run_agents(lab, f, ior, s, &agents, programs, sink) {
        Ok((Some(m), err)) => {
            let failure = err.map(|e| e.to_string()).or_else(|| {
                (!m.outcome.complete).then(|| m.outcome.failure.clone().unwrap_or_default())
            });
            cell(Some(m), failure)
        }
        Ok((None, err)) => cell(
            None,
            Some(err.map_or_else(|| "no result".to_string(), |e| e.to_string())),
        ),
        Err(e) => cell(None, Some(e.to_string())),
    }
}

/// Every cell's merged cases and fits in one results value (the first
/// cell's as the frame), each case and fit named after its cell and each
/// case tagged with its hosts.
fn combine(
    o: &LabMatrixOpts,
    spec: &LabSpec,
    hosts: Vec<serde_json::Value>,
    cells: &[Cell],
) -> Option<Results> {
    let mut out = None;
    for cell in cells {
        let Some(m) = &cell.merged else { continue };
        let tags = [
            ("client_host", json!(cell.client)),
            ("server_host", json!(cell.server)),
        ];
        let prefix = format!("{}->{}", cell.client, cell.server);
        super::add_tagged(&mut out, m.clone(), &prefix, &tags);
    }
    let mut out = out?;
    let failures: Vec<String> = cells
        .iter()
        .filter_map(|c| {
            c.failure
                .as_ref()
                .map(|f| format!("cell {}->{}: {f}", c.client, c.server))
        })
        .collect();
    let planned = (o.client_hosts * o.server_hosts) as usize;
    if cells.len() < planned {
        out.outcome.complete = false;
        out.outcome.failure = Some(format!(
            "interrupted after {} of {planned} cells",
            cells.len()
        ));
    } else if !failures.is_empty() {
        out.outcome.complete = false;
        out.outcome.failure = Some(failures.join("; "));
    }
    out.params.insert(
        "lab".into(),
        json!({
            "hosts": hosts,
            "server": o.fleet.server.kind.name(),
            "client_hosts": o.clients(),
            "server_hosts": o.servers(),
            "links": spec.links.iter().map(|l| format!("{}-{}:{}", l.a, l.b, l.a_to_b)).collect::<Vec<_>>(),
        }),
    );
    out.params.insert(
        "matrix".into(),
        json!(cells
            .iter()
            .map(|c| json!({
                "client_host": c.client,
                "server_host": c.server,
                "agents": c.merged.as_ref().and_then(|m| m.agents.as_ref()).map(|a| a.ran),
                "failure": c.failure,
            }))
            .collect::<Vec<_>>()),
    );
    out.target.isolation = Some(format!(
        "lab: {} client hosts x {} server hosts, {} agent{} per cell",
        o.client_hosts,
        o.server_hosts,
        o.fleet.coord.agents,
        if o.fleet.coord.agents == 1 { "" } else { "s" }
    ));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Case, Fit};

    fn opts() -> LabMatrixOpts {
        LabMatrixOpts {
            client_hosts: 1,
            server_hosts: 2,
            fleet: FleetOpts {
                coord: Default::default(),
                links: Vec::new(),
                server: super::super::ServerOpts {
                    kind: super::super::LabServer::Ours,
                    port: 2809,
                    ready_timeout: std::time::Duration::from_secs(120),
                },
                quiet: false,
                job: crate::job::Job::Latency(Default::default()),
            },
        }
    }
    fn merged(a_us: f64) -> Results {
        let mut r = crate::results::Results::new("latency", Vec::new());
        r.outcome.complete = true;
        r.cases.push(Case {
            name: "echo long 8B".into(),
            ..Default::default()
        });
        r.fits.push(Fit {
            label: "echo long".into(),
            a_us,
            b_us_per_byte: 0.01,
            inv_b_mbytes_per_s: Some(100.0),
            r2: 1.0,
            points: 2,
        });
        r
    }

    #[test]
    fn every_cell_keeps_its_own_fit() {
        let o = opts();
        let spec = spec_of(&o).unwrap();
        let cell = |s: &str, a_us| Cell {
            client: "client0".into(),
            server: s.into(),
            merged: Some(merged(a_us)),
            failure: None,
        };
        let cells = [cell("server0", 10.0), cell("server1", 20.0)];
        let r = combine(&o, &spec, Vec::new(), &cells).unwrap();
        let fits: Vec<(&str, f64)> = r.fits.iter().map(|f| (f.label.as_str(), f.a_us)).collect();
        assert_eq!(
            fits,
            [
                ("client0->server0 echo long", 10.0),
                ("client0->server1 echo long", 20.0)
            ]
        );
        assert_eq!(r.cases[1].name, "client0->server1 echo long 8B");
        assert_eq!(
            r.cases[1].params.extra.get("server_host"),
            Some(&json!("server1"))
        );
        assert!(r.outcome.complete);
    }
}
