//! `iiopbench job run FILE`: run a job handed over as JSON (the engine's
//! [`Job`] in its serde form), as the bench command of its kind would, and
//! write its results. Hidden: it is how the network lab runs a job inside
//! a lab host (the engine writes the job's file, this process runs it
//! there); a user runs `bench <kind>`.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use iiopbench_engine::job::Job;

use crate::examples;
use crate::flags::OutputOpts;

/// `iiopbench job …`.
#[derive(Debug, Subcommand)]
pub enum JobCommand {
    /// Run the job in FILE (JSON) and write its results.
    #[command(after_help = examples::JOB_RUN)]
    Run(JobRunArgs),
}

/// `job run` flags (hidden, like the command: the lab's own).
#[derive(Debug, Clone, Args)]
pub struct JobRunArgs {
    /// The job (JSON, as the engine's `Job` writes it).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Write the results as JSON; `-` for stdout.
    #[arg(long, value_name = "FILE", hide = true)]
    pub json: Option<PathBuf>,
    /// Write one CSV row per case.
    #[arg(long, value_name = "FILE", hide = true)]
    pub csv: Option<PathBuf>,
    /// Write an HdrHistogram interval log.
    #[arg(long, value_name = "FILE", hide = true)]
    pub hlog: Option<PathBuf>,
    /// No progress and no table.
    #[arg(long, short, hide = true)]
    pub quiet: bool,
}

/// Run `job …`.
pub fn run(c: &JobCommand, argv: &[String]) -> anyhow::Result<()> {
    let JobCommand::Run(a) = c;
    let text = std::fs::read_to_string(&a.file)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", a.file.display()))?;
    let job = Job::from_json(&text).map_err(|e| anyhow::anyhow!("{}: {e}", a.file.display()))?;
    let output = OutputOpts {
        json: a.json.clone(),
        csv: a.csv.clone(),
        hlog: a.hlog.clone(),
        quiet: a.quiet,
        wide: false,
    };
    crate::cmd::bench::run_job(&job, &output, argv, crate::programs::ThisBinary::new()?)
}
