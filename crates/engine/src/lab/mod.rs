//! The network lab (issue 11, seed 003's experiment E3): jobs across
//! an emulated network on one Linux machine. Hosts are network namespaces
//! joined by impaired links (crate `iiop-lab`); our server or a vendor
//! ORB's runs inside one host, the job's client inside another — a process
//! the caller's [`Programs`](crate::programs::Programs) start, handed the
//! typed job in a file — with the real kernel TCP between them.
//!
//! - [`run`]: one lab, one server, one job's client (`lab run`), and the
//!   pieces the others reuse: links, the lab's self-measurement, a server
//!   started in a host, one server + client run;
//! - [`suite`]: a suite file of network conditions × jobs, one
//!   results value (`lab suite`);
//! - [`fleet`]: labs whose clients are coordinated agents
//!   ([`crate::agents`]): [`agents`] (`lab agents`, N agent hosts against
//!   one server host) and [`matrix`] (`lab matrix`, every client host
//!   against every server host).
//!
//! Everything here needs root (namespaces, veth and TUN need
//! CAP_NET_ADMIN): [`require_root`] says so in one line. Every wait polls
//! [`crate::interrupt`]; an interrupted run kills its children and drops
//! the lab, which removes the namespaces. The engine prints nothing: what
//! a run has to tell while it runs reaches a [`LabSink`].

pub mod agents;
pub mod fleet;
pub mod matrix;
pub mod run;
pub mod suite;

use std::time::Duration;

use serde_json::Value;

use crate::error::{ensure, Error, Result};
use crate::programs::Programs;
use crate::results::Results;
use crate::run_context::RunContext;

pub use run::Verified;

/// Which server runs in the server host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabServer {
    /// `iiopbench serve` (our reference server).
    Ours,
    /// omniORB's bench server (`scripts/orbs/omniorb/start`).
    Omniorb,
    /// JacORB's bench server (`scripts/orbs/jacorb/start`).
    Jacorb,
}

impl LabServer {
    /// The name used in results and `scripts/orbs/<name>`.
    pub fn name(self) -> &'static str {
        match self {
            LabServer::Ours => "ours",
            LabServer::Omniorb => "omniorb",
            LabServer::Jacorb => "jacorb",
        }
    }
}

/// The server a lab command starts in its server host(s).
#[derive(Debug, Clone)]
pub struct ServerOpts {
    /// Which server to run.
    pub kind: LabServer,
    /// Port of a vendor server (ours picks a free one).
    pub port: u16,
    /// How long to wait for the server's `ready` line.
    pub ready_timeout: Duration,
}

/// The run's [`Programs`]: a lab starts our server, the job's client and
/// the agents as processes inside its hosts.
pub fn programs(ctx: &RunContext) -> Result<&dyn Programs> {
    ctx.programs.as_deref().ok_or_else(|| {
        Error::local(
            "the lab runs our server, the job's client and agents as processes: \
             this run has no way to start them (RunContext::programs)",
        )
    })
}

/// What a lab run tells its caller while it runs (the command line prints
/// it; a harness may log it or ignore it: every method does nothing by
/// default).
pub trait LabSink {
    /// The lab's links were measured against their configuration.
    fn verified(&self, v: &Verified) {
        let _ = v;
    }
    /// What runs next (`lab suite`'s conditions and cases): on the command
    /// line, a line on stdout between the bench client's own tables.
    fn heading(&self, line: &str) {
        let _ = line;
    }
    /// News: a re-measurement, a condition or cell that failed, the
    /// coordinator's lines; on the command line, a line on stderr.
    fn note(&self, line: &str) {
        let _ = line;
    }
}

/// A [`LabSink`] that hears nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl LabSink for Silent {}

/// Fails with one line when not root (namespaces need CAP_NET_ADMIN).
pub fn require_root() -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    ensure!(
        uid == 0,
        Local,
        "iiopbench lab needs root (network namespaces, veth, TUN need CAP_NET_ADMIN); \
         running as uid {uid}: rerun with sudo"
    );
    Ok(())
}

/// Appends one run's cases and fits to `merged`, which then holds the
/// runs of a whole lab command (`lab suite`'s cases under every condition,
/// `lab matrix`'s cells): each case name and fit label is prefixed with
/// `prefix` (so the runs' cases and fits stay apart), each case gets the
/// `tags` among its parameters, and the first run gives the file its frame
/// (kind, target, host, params). A run that is incomplete makes the whole
/// incomplete; the first failure is kept.
pub fn add_tagged(
    merged: &mut Option<Results>,
    mut r: Results,
    prefix: &str,
    tags: &[(&str, Value)],
) {
    for case in &mut r.cases {
        case.name = format!("{prefix} {}", case.name);
        for (k, v) in tags {
            case.params.extra.insert((*k).to_string(), v.clone());
        }
    }
    for f in &mut r.fits {
        f.label = format!("{prefix} {}", f.label);
    }
    match merged {
        None => *merged = Some(r),
        Some(m) => {
            m.cases.append(&mut r.cases);
            m.fits.append(&mut r.fits);
            if !r.outcome.complete {
                m.outcome.complete = false;
                if m.outcome.failure.is_none() {
                    m.outcome.failure = r.outcome.failure;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Case, Fit};
    use serde_json::json;

    fn run(kind: &str, complete: bool, failure: Option<&str>) -> Results {
        let mut r = crate::results::Results::new(kind, Vec::new());
        r.params.insert("op".into(), json!(kind));
        r.cases.push(Case {
            name: "echo long 8B".into(),
            ..Default::default()
        });
        r.fits.push(Fit {
            label: "echo long".into(),
            a_us: 10.0,
            b_us_per_byte: 0.01,
            inv_b_mbytes_per_s: Some(100.0),
            r2: 1.0,
            points: 2,
        });
        r.outcome.complete = complete;
        r.outcome.failure = failure.map(String::from);
        r
    }

    #[test]
    fn tagged_runs_keep_their_cases_and_fits_apart_in_the_first_runs_frame() {
        let mut merged = None;
        add_tagged(
            &mut merged,
            run("latency", true, None),
            "c0->s0",
            &[("client_host", json!("c0"))],
        );
        add_tagged(
            &mut merged,
            run("closed", false, Some("cell broke")),
            "c1->s0",
            &[("client_host", json!("c1"))],
        );
        add_tagged(
            &mut merged,
            run("closed", false, Some("later")),
            "c1->s1",
            &[],
        );
        let m = merged.unwrap();
        assert_eq!(
            m.cases.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            [
                "c0->s0 echo long 8B",
                "c1->s0 echo long 8B",
                "c1->s1 echo long 8B"
            ]
        );
        assert_eq!(
            m.fits.iter().map(|f| f.label.as_str()).collect::<Vec<_>>(),
            ["c0->s0 echo long", "c1->s0 echo long", "c1->s1 echo long"]
        );
        assert_eq!(
            m.cases[1].params.extra.get("client_host"),
            Some(&json!("c1"))
        );
        assert_eq!(m.cases[2].params.extra.get("client_host"), None);
        assert_eq!(
            (m.kind.as_str(), m.params.get("op")),
            ("latency", Some(&json!("latency")))
        );
        assert!(!m.outcome.complete);
        assert_eq!(m.outcome.failure.as_deref(), Some("cell broke"));
    }
}
