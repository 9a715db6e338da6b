//! `iiopbench lab matrix`: the ATON host-pair matrix (seed 002, E2.1) from
//! one command. Client hosts `client0` … and server hosts `server0` …, each
//! client host linked to each server host; a server runs in every server
//! host, and for every pair (client host, server host) the bench command
//! runs as `--agents` coordinated agents in that client host against that
//! server host (`iiopbench agents`, docs/agents.md). One results file: the
//! merged cases of every cell, tagged with their hosts, and a table per
//! case with client hosts as rows and server hosts as columns.
//!
//! Cells run one after another, so no cell shares the server's CPUs with
//! another; a cell that fails is named, the others are kept, and the run
//! is marked incomplete. The run is the engine's
//! (`iiopbench_engine::lab::matrix`); here are the flags, the results file
//! and the grid.

use clap::Args;
use iiopbench_engine::lab;
use iiopbench_engine::results::Results;

use super::common;
use super::fleet::FleetArgs;
use crate::table::Table;

/// `lab matrix` options.
#[derive(Debug, Clone, Args)]
pub struct LabMatrixArgs {
    /// Client hosts (`client0` …).
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub client_hosts: u32,
    /// Server hosts (`server0` …), each running its own server.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub server_hosts: u32,
    #[command(flatten)]
    pub fleet: FleetArgs,
}

/// Run `lab matrix`.
pub fn run(o: &LabMatrixArgs, argv: &[String]) -> anyhow::Result<()> {
    let f = &o.fleet;
    let (fleet, json_out) = f.split()?;
    common::require_root_and_signals()?;
    let opts = lab::matrix::LabMatrixOpts {
        client_hosts: o.client_hosts,
        server_hosts: o.server_hosts,
        fleet,
    };
    let ctx = common::context(argv, crate::programs::ThisBinary::new()?);
    let mut r = lab::matrix::run(&opts, &ctx, &common::Printer { quiet: f.quiet })?;
    crate::words::in_results(&mut r);
    let out = crate::flags::OutputOpts::json_only(json_out, f.quiet);
    crate::output::emit(&r, &out)?;
    if out.shows_tables() {
        out!("{}", matrix_table(&r, &opts.clients(), &opts.servers()));
    }
    if !r.outcome.complete {
        anyhow::bail!("{}", r.outcome.failure.clone().unwrap_or_default());
    }
    Ok(())
}

/// Per bench case, a grid: client hosts down, server hosts across, each
/// cell `calls/s, p50`.
fn matrix_table(r: &Results, cs: &[String], ss: &[String]) -> String {
    let mut names: Vec<String> = Vec::new();
    for c in &r.cases {
        let base = c.name.split_once(' ').map_or("", |(_, n)| n).to_string();
        if !names.contains(&base) {
            names.push(base);
        }
    }
    let mut out = String::new();
    for name in names {
        out.push_str(&format!("{name}: calls/s, p50\n"));
        let mut head = vec!["client \\ server".to_string()];
        head.extend(ss.iter().cloned());
        let mut t = Table::new(head).left_align(&[0]);
        for c in cs {
            let mut row = vec![c.clone()];
            for s in ss {
                let found = r
                    .cases
                    .iter()
                    .find(|k| k.name == format!("{c}->{s} {name}"));
                row.push(found.map_or_else(
                    || "-".to_string(),
                    |k| {
                        let p50 = k.latency_us.map(|l| l.p50).unwrap_or(0.0);
                        format!("{:.0}, {p50:.1} µs", k.calls_per_sec)
                    },
                ));
            }
            t.row(row);
        }
        out.push_str(&t.render());
    }
    out
}
