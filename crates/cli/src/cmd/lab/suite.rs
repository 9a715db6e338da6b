//! `iiopbench lab suite FILE`: a suite file's network conditions × bench
//! cases in one lab, one results file. The suite file (its format is in
//! `iiopbench_engine::lab::suite` and `fixtures/suites/network-2003.toml`)
//! and its runner are the engine's; here are the flags, the summary table
//! and the results file.

use std::path::PathBuf;

use clap::Args;
use iiopbench_engine::lab::{self, suite::LabSuite};
use iiopbench_engine::results::{self, Results};
use iiopbench_engine::units::parse_duration;
use serde_json::Value;

use super::common::{self, ServerArg};

/// `lab suite` options.
#[derive(Debug, Clone, Args)]
pub struct LabSuiteArgs {
    /// The suite file (TOML).
    pub file: PathBuf,
    /// Run the suite's `[quick]` reduction.
    #[arg(long)]
    pub quick: bool,
    /// Which server to run.
    #[arg(long, value_enum, default_value_t = ServerArg::Ours)]
    pub server: ServerArg,
    /// Port of a vendor server.
    #[arg(long, default_value_t = 2809, value_name = "PORT")]
    pub port: u16,
    /// How long to wait for the server's `ready` line.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "120s", value_name = "DURATION")]
    pub ready_timeout: std::time::Duration,
    /// Run conditions whose self-check fails anyway (marked in the results).
    #[arg(long)]
    pub no_verify: bool,
    /// Write the combined results here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No summary table at the end (the bench tables still print).
    #[arg(long, short)]
    pub quiet: bool,
}

/// `iiopbench lab suite`.
pub fn run(o: &LabSuiteArgs, argv: &[String]) -> anyhow::Result<()> {
    let suite = LabSuite::load(&o.file)?;
    let plan = suite.expand(o.quick)?;
    common::require_root_and_signals()?;
    let opts = lab::suite::LabSuiteOpts {
        server: o.server.engine(o.port, o.ready_timeout),
        no_verify: o.no_verify,
    };
    let ctx = common::context(argv, crate::programs::ThisBinary::new()?);
    let mut r = lab::suite::run(
        &suite,
        &plan,
        &opts,
        &ctx,
        &common::Printer { quiet: false },
    )?;
    crate::words::in_results(&mut r);
    if !o.quiet {
        out!("{}", summary(&r));
    }
    if let Some(f) = &o.json {
        results::write_atomic(f, &results::to_json(&r))?;
    }
    match &r.outcome.failure {
        Some(f) if !r.outcome.complete => anyhow::bail!("suite {}: {f}", suite.name),
        _ => Ok(()),
    }
}

/// One line per case: condition, case, size, mean/p50 latency, throughput,
/// errors; then the fits.
pub fn summary(r: &Results) -> String {
    let mut t = crate::table::Table::new([
        "condition",
        "case",
        "mode",
        "size",
        "calls",
        "mean ms",
        "p50 ms",
        "p99 ms",
        "Mbit/s",
        "errors",
    ]);
    for c in &r.cases {
        let l = c.latency_us.unwrap_or_default();
        let get = |k: &str| {
            c.params
                .extra
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        t.row([
            get("condition"),
            get("suite_case"),
            c.params.mode.clone(),
            iiopbench_engine::units::format_size(c.params.size),
            c.calls.to_string(),
            format!("{:.2}", l.mean / 1000.0),
            format!("{:.2}", l.p50 / 1000.0),
            format!("{:.2}", l.p99 / 1000.0),
            format!("{:.4}", c.throughput_mbps),
            c.errors.values().sum::<u64>().to_string(),
        ]);
    }
    let mut out = t.render();
    for f in &r.fits {
        out.push_str(&format!(
            "fit {}: T = {:.2} ms + {:.3} us/B * L (r2 {:.3}, {} points)\n",
            f.label,
            f.a_us / 1000.0,
            f.b_us_per_byte,
            f.r2,
            f.points
        ));
    }
    out
}
