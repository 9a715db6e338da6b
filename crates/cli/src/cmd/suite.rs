//! `iiopbench suite FILE`: rerun a whole study. The suite file, its
//! targets and the combined results are the engine's
//! (`iiopbench_engine::suite`); here are the flags, and the runner that
//! hands each case's command line to this binary's own entry point (so any
//! bench subcommand this binary has can appear in a suite; one it lacks is
//! refused before anything runs).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, CommandFactory, Parser};

use iiopbench_engine::results::{self, Results};
use iiopbench_engine::suite::{self, CaseRunner, SuiteCase};

use crate::opts::Cli;

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
    #[arg(long, value_parser = iiopbench_engine::units::parse_duration, default_value = "300s", value_name = "DURATION")]
    pub ready_timeout: Duration,
    /// No tables from the cases.
    #[arg(long, short)]
    pub quiet: bool,
}

impl SuiteOpts {
    /// As the engine's options.
    pub fn engine(&self) -> suite::SuiteOpts {
        suite::SuiteOpts {
            file: self.file.clone(),
            targets: self.target.clone(),
            all_orbs: self.all_orbs,
            quick: self.quick,
            ready_timeout: self.ready_timeout,
            quiet: self.quiet,
            progress: crate::progress::unless_quiet(self.quiet),
        }
    }
}

/// The suite's cases run through this binary's own entry point.
#[derive(Debug, Clone, Copy)]
pub struct ThisBinary;

impl CaseRunner for ThisBinary {
    fn commands(&self) -> Vec<String> {
        Cli::command()
            .find_subcommand("bench")
            .map(|b| {
                b.get_subcommands()
                    .map(|s| s.get_name().to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn check(&self, what: &str, argv: &[String]) -> anyhow::Result<()> {
        Cli::try_parse_from(argv).map_err(|e| {
            anyhow::anyhow!(
                "{what}: arguments do not parse: {}",
                e.render().to_string().lines().next().unwrap_or("")
            )
        })?;
        Ok(())
    }

    fn run(&self, argv: &[String]) -> i32 {
        match Cli::try_parse_from(argv) {
            Ok(cli) => crate::run(cli),
            Err(e) => {
                let _ = e.print();
                2
            }
        }
    }
}

/// Check every case of `plan` before running any (the engine's
/// [`suite::validate`] with this binary as the runner).
pub fn validate(file: &str, plan: &[(SuiteCase, Vec<String>)]) -> anyhow::Result<()> {
    suite::validate(file, plan, &ThisBinary)
}

/// Run the suite through this binary; the combined results.
pub fn run_suite(o: &SuiteOpts) -> anyhow::Result<Results> {
    suite::run(&o.engine(), &ThisBinary)
}

/// Run `suite`: write the results, then the report if asked.
pub fn run(o: &SuiteOpts) -> anyhow::Result<()> {
    let r = run_suite(o)?;
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
