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
//!   measuring them, starts the server, runs the job in the client host,
//!   writes one results file with a `params.lab` section, removes
//!   everything.
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
//! The labs, their servers and clients (handed their typed job in a file),
//! the suite file and the combined results are the engine's
//! (`iiopbench_engine::lab`); here are the flags, the bench command line
//! given after `--` turned into the job, the signal handling of this
//! process, and what is printed: the lab's self-measurement
//! ([`common::Printer`]), `lab check`'s table, the summary and matrix
//! tables.
//!
//! Signals: `run()` installs the CLI's SIGINT/SIGTERM flag
//! ([`iiopbench_engine::interrupt`]); every wait in the engine's lab polls
//! it, kills the children and drops the lab (which removes the
//! namespaces). SIGHUP goes to the lab crate's handler (removes every lab,
//! then dies). A watchdog removes the labs and exits if an interrupted run
//! has not ended within 15 s.

pub mod agents;
pub mod common;
pub mod fleet;
pub mod matrix;
pub mod run;
pub mod suite;

use clap::{Args, Subcommand};
use iiopbench_engine::lab;

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
    #[command(after_help = crate::examples::LAB_CHECK)]
    Check,
    /// Remove lab namespaces (`iiopb-*`) left behind by killed runs.
    #[command(after_help = crate::examples::LAB_CLEAN)]
    Clean {
        /// Also remove labs whose owner process is still running.
        #[arg(long)]
        all: bool,
    },
    /// Build a lab, verify it, run a server and a bench client across it.
    #[command(after_help = crate::examples::LAB_RUN)]
    Run(Box<run::LabRunArgs>),
    /// Run one bench command from N agents in N lab hosts against one
    /// server host; one merged result (docs/agents.md).
    #[command(after_help = crate::examples::LAB_AGENTS)]
    Agents(Box<agents::LabAgentsArgs>),
    /// Every client host against every server host (a host-pair matrix of
    /// round trips): each cell one merged agent run.
    #[command(after_help = crate::examples::LAB_MATRIX)]
    Matrix(Box<matrix::LabMatrixArgs>),
    /// Run a suite file (conditions × bench cases) in a lab.
    #[command(after_help = crate::examples::LAB_SUITE)]
    Suite(Box<suite::LabSuiteArgs>),
}

/// Dispatch one `lab` command (`argv`: the command line, recorded).
pub fn run(o: &LabOpts, argv: &[String]) -> anyhow::Result<()> {
    match &o.command {
        LabCommand::Check => check(),
        LabCommand::Clean { all } => clean(*all),
        LabCommand::Run(r) => run::run(r, argv),
        LabCommand::Suite(s) => suite::run(s, argv),
        LabCommand::Agents(a) => agents::run(a, argv),
        LabCommand::Matrix(m) => matrix::run(m, argv),
    }
}

fn check() -> anyhow::Result<()> {
    lab::require_root()?;
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
    out!("{}", t.render());
    outln!(
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
    outln!("lab: possible");
    Ok(())
}

fn clean(all: bool) -> anyhow::Result<()> {
    lab::require_root()?;
    let removed = iiop_lab::cleanup_leftovers(iiop_lab::NAME_PREFIX, all)?;
    if removed.is_empty() {
        outln!("no lab namespaces to remove");
    }
    for n in &removed {
        outln!("removed {n}");
    }
    Ok(())
}
