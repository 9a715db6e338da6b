//! `iiopbench suite FILE`: rerun a whole study. The suite file (its cases
//! typed jobs), its targets, the runs and the combined results are the
//! engine's (`iiopbench_engine::suite`); here are the flags, each case's
//! table as it finishes, and the files written.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use iiopbench_engine::results::{self, Results};
use iiopbench_engine::run_context::RunContext;
use iiopbench_engine::suite;

/// `suite` options.
#[derive(Debug, Clone, Args)]
pub struct SuiteOpts {
    /// The suite file (fixtures/suites/*.toml).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Run against this server (`IOR:…`, `corbaloc:…`, a file holding
    /// one), optionally labelled `LABEL=REF`; repeat for several. Without
    /// any, our reference server runs embedded.
    #[arg(long, short, value_name = "REF")]
    pub target: Vec<String>,
    /// Run against our server and every installed and built vendor ORB
    /// (`iiopbench orbs list`), starting and stopping each one's server.
    #[arg(long, conflicts_with = "target")]
    pub all_orbs: bool,
    /// The reduced version of the suite (file's `[quick]` section).
    #[arg(long)]
    pub quick: bool,
    /// Write the combined results here (default `<suite name>.json`).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Then write a report (`iiopbench report`) into this directory.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// How long a vendor server may take to say `ready` (it may build first).
    #[arg(long, allow_hyphen_values = true, value_parser = iiopbench_engine::units::parse_duration, default_value = "300s", value_name = "DURATION")]
    pub ready_timeout: Duration,
    /// No tables from the cases.
    #[arg(long, short)]
    pub quiet: bool,
}

impl SuiteOpts {
    /// As the engine's options.
    pub fn engine(&self) -> suite::StudySuiteOpts {
        suite::StudySuiteOpts {
            file: self.file.clone(),
            targets: self.target.clone(),
            all_orbs: self.all_orbs,
            quick: self.quick,
            ready_timeout: self.ready_timeout,
        }
    }
}

/// Run the suite in this process (each case's table on stdout unless
/// `quiet`); the combined results, in the command line's words.
pub fn run_suite(o: &SuiteOpts, argv: &[String]) -> anyhow::Result<Results> {
    let ctx = RunContext::new()
        .with_progress(crate::progress::showing_parts(o.quiet))
        .with_command(argv.to_vec())
        .with_programs(Arc::new(crate::programs::ThisBinary::new()?));
    let mut r = suite::run(&o.engine(), &ctx)?;
    crate::words::in_results(&mut r);
    Ok(r)
}

/// Run `suite`: write the results, then the report if asked.
pub fn run(o: &SuiteOpts, argv: &[String]) -> anyhow::Result<()> {
    let r = run_suite(o, argv)?;
    let name = r
        .params
        .get("suite")
        .and_then(|v| v.as_str())
        .unwrap_or("suite")
        .to_string();
    let out = o
        .json
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{name}.json")));
    results::write_atomic(&out, &results::to_json(&r))?;
    if !o.quiet {
        eprintln!(
            "suite {name}: {} cases written to {}",
            r.cases.len(),
            out.display()
        );
    }
    if let Some(dir) = &o.report {
        crate::cmd::report::write(&[(out.display().to_string(), r.clone())], dir)?;
        if !o.quiet {
            eprintln!("suite {name}: report in {}", dir.display());
        }
    }
    match &r.outcome.failure {
        Some(f) => anyhow::bail!("suite {name}: {f}"),
        None => Ok(()),
    }
}
