//! `iiopbench lab`: run the benchmarks across an emulated network on one
//! Linux machine (issue 11, seed 003's experiment E3). Hosts are network
//! namespaces joined by impaired links (crate `iiop-lab`); our server or a
//! vendor ORB's runs inside one host, the bench client inside another, with
//! the real kernel TCP between them.
//!
//! * `lab check` — what this kernel offers (netem, tbf, nftables, TUN).
//! * `lab clean [--all]` — removes namespaces left by killed runs.
//! * `lab run [--hosts …] [--link …] [--server ours|omniorb|jacorb] --
//!   bench <kind> <args>` — builds the lab, verifies the impairments by
//!   measuring them, starts the server, runs the bench client, writes one
//!   results file with a `params.lab` section, removes everything.
//! * `lab agents --agents N [--server …] -- bench <kind> <args>` — N agent
//!   hosts and one server host; one distributed run (`iiopbench agents`,
//!   docs/agents.md), merged.
//! * `lab matrix --client-hosts N --server-hosts M --agents K -- bench
//!   <kind> <args>` — the ATON host-pair matrix (E2.1): every client host
//!   against every server host, each cell a merged agent run.
//! * `lab suite FILE [--quick]` — a list of conditions × cases (see
//!   `fixtures/suites/network-2003.toml`), one results file.
//!
//! Between real hosts the same bench commands run without the lab: start
//! the server on one machine (`iiopbench serve --listen <its address>:0
//! --ior-file F` or `iiopbench orbs start omniorb --listen H:0 --ior-file F`)
//! and on the other drop `lab run … --` and pass `--target F`
//! (`iiopbench bench latency --target F …`).
//!
//! Signals: `run()` installs the CLI's SIGINT/SIGTERM flag
//! ([`iiopbench_engine::interrupt`]); every wait here polls it, kills the children and
//! drops the lab (which removes the namespaces). SIGHUP goes to the lab
//! crate's handler (removes every lab, then dies). A watchdog removes the
//! labs and exits if an interrupted run has not ended within 15 s.
//!
//! Sub-modules: [`run`] (one server + client run in a lab) and [`suite`]
//! (the suite file and its runner).

pub mod agents;
pub mod fleet;
pub mod matrix;
pub mod run;
pub mod suite;

use std::time::Duration;

use clap::{Args, Subcommand};
use iiopbench_engine::results::Results;
use serde_json::Value;

use crate::table::Table;

/// `iiopbench lab …`.
#[derive(Debug, Clone, Args)]
pub struct LabOpts {
    #[command(subcommand)]
    pub command: LabCommand,
}

/// The lab sub-commands.
#[derive(Debug, Clone, Subcommand)]
pub enum LabCommand {
    /// Probe what this machine offers the lab (namespaces, veth, TUN,
    /// netem, tbf, nftables) and which delay mechanism will run.
    #[command(after_help = crate::opts::examples::LAB_CHECK)]
    Check,
    /// Remove lab namespaces (`iiopb-*`) left behind by killed runs.
    #[command(after_help = crate::opts::examples::LAB_CLEAN)]
    Clean {
        /// Also remove labs whose owner process is still running.
        #[arg(long)]
        all: bool,
    },
    /// Build a lab, verify it, run a server and a bench client across it.
    #[command(after_help = crate::opts::examples::LAB_RUN)]
    Run(Box<run::RunOpts>),
    /// Run one bench command from N agents in N lab hosts against one
    /// server host; one merged result (docs/agents.md).
    #[command(after_help = crate::opts::examples::LAB_AGENTS)]
    Agents(Box<agents::AgentsOpts>),
    /// Every client host against every server host (the ATON host-pair
    /// matrix, E2.1): each cell one merged agent run.
    #[command(after_help = crate::opts::examples::LAB_MATRIX)]
    Matrix(Box<matrix::MatrixOpts>),
    /// Run a suite file (conditions × bench cases) in a lab.
    #[command(after_help = crate::opts::examples::LAB_SUITE)]
    Suite(Box<suite::SuiteOpts>),
}

/// Dispatch one `lab` command.
pub fn run(o: &LabOpts) -> anyhow::Result<()> {
    match &o.command {
        LabCommand::Check => check(),
        LabCommand::Clean { all } => clean(*all),
        LabCommand::Run(r) => run::run(r),
        LabCommand::Suite(s) => suite::run(s),
        LabCommand::Agents(a) => agents::run(a),
        LabCommand::Matrix(m) => matrix::run(m),
    }
}

/// Fails with one line when not root (namespaces need CAP_NET_ADMIN).
pub fn require_root() -> anyhow::Result<()> {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    anyhow::ensure!(
        uid == 0,
        "iiopbench lab needs root (network namespaces, veth, TUN need CAP_NET_ADMIN); \
         running as uid {uid}: rerun with sudo"
    );
    Ok(())
}

/// Installs the signal cooperation described in the module doc: the lab
/// crate's handler (SIGHUP and a fallback), then the CLI's flag handler
/// again for SIGINT/SIGTERM, and a watchdog for interrupted runs.
pub fn install_signals() -> anyhow::Result<()> {
    iiop_lab::install_cleanup_handler()?;
    iiopbench_engine::interrupt::install();
    static WATCHDOG: std::sync::Once = std::sync::Once::new();
    WATCHDOG.call_once(|| {
        let _ = std::thread::Builder::new()
            .name("lab-watchdog".into())
            .spawn(|| {
                while !iiopbench_engine::interrupt::requested() {
                    std::thread::sleep(Duration::from_millis(100));
                }
                std::thread::sleep(Duration::from_secs(15));
                eprintln!("iiopbench lab: interrupted run did not end in 15 s; removing the lab");
                iiop_lab::remove_all_labs();
                std::process::exit(130);
            });
    });
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

fn check() -> anyhow::Result<()> {
    require_root()?;
    let f = iiop_lab::probe_features()?;
    let mut t = Table::new(["feature", "works", "used for"]).left_align(&[0, 2]);
    let yes = |b: bool| if b { "yes" } else { "no" }.to_string();
    let rows: [(&str, bool, &str); 10] = [
        ("ip (iproute2)", f.ip, "namespaces, veth, routes"),
        ("tc", f.tc, "qdiscs"),
        ("nft", f.nft, "random loss"),
        ("ping", f.ping, "optional, manual checks"),
        ("network namespaces", f.netns, "hosts"),
        ("veth", f.veth, "links"),
        ("TUN", f.tun, "delay relay (without netem)"),
        ("tc netem", f.netem, "delay, jitter (optional)"),
        ("tc tbf", f.tbf, "rate cap"),
        ("nft numgen random", f.nft_numgen, "random loss"),
    ];
    for (name, ok, what) in rows {
        t.row(vec![name.to_string(), yes(ok), what.to_string()]);
    }
    print!("{}", t.render());
    println!(
        "delay mechanism: {}",
        if f.netem {
            "tc netem"
        } else {
            "TUN relay (no netem in this kernel)"
        }
    );
    anyhow::ensure!(
        f.lab_possible(),
        "this machine cannot build a lab: a required feature above is missing (run scripts/lab/install)"
    );
    println!("lab: possible");
    Ok(())
}

fn clean(all: bool) -> anyhow::Result<()> {
    require_root()?;
    let removed = iiop_lab::cleanup_leftovers(iiop_lab::NAME_PREFIX, all)?;
    if removed.is_empty() {
        println!("no lab namespaces to remove");
    }
    for n in &removed {
        println!("removed {n}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use iiopbench_engine::results::{Case, Fit};
    use serde_json::json;

    fn run(kind: &str, complete: bool, failure: Option<&str>) -> Results {
        let mut r =
            iiopbench_engine::context::new_results(kind, Default::default(), Default::default());
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
