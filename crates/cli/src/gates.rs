//! `--threshold`: the gates a run's result must pass, checked on the
//! finished (or, for agents, merged) result by `Results::check`
//! ([`iiopbench_engine::threshold`]), recorded in its `thresholds`, listed
//! pass/fail, and a failed one made the command's outcome with its own
//! exit status ([`EXIT_STATUS`]; docs/cli.md).

use iiopbench_engine::threshold::{Threshold, ThresholdOutcome};

/// The exit status of a command whose run went through but whose result
/// failed a `--threshold` (1 is a run that failed, 2 a command line that
/// did not parse).
pub const EXIT_STATUS: i32 = 3;

/// `--threshold`'s value parser: the whole expression checked before
/// anything runs, its error one line.
pub fn parse(s: &str) -> Result<Threshold, String> {
    s.parse::<Threshold>().map_err(|e| e.to_string())
}

/// One or more gates failed: the failed ones, each with what was
/// measured.
#[derive(Debug)]
pub struct GatesFailed {
    failed: Vec<String>,
    total: usize,
}

impl std::fmt::Display for GatesFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} of {} thresholds failed: {}",
            self.failed.len(),
            self.total,
            self.failed.join("; ")
        )
    }
}

impl std::error::Error for GatesFailed {}

/// List the outcomes on stdout when `show` (tables are shown), and make
/// a failed gate an error of its own ([`GatesFailed`]).
pub fn verdict(outcomes: &[ThresholdOutcome], show: bool) -> anyhow::Result<()> {
    if outcomes.is_empty() {
        return Ok(());
    }
    if show {
        outln!("thresholds:");
        for o in outcomes {
            outln!("  {}", o.line());
        }
    }
    let failed: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.pass)
        .map(|o| o.line().trim_start_matches("FAIL ").to_string())
        .collect();
    if failed.is_empty() {
        return Ok(());
    }
    Err(GatesFailed {
        failed,
        total: outcomes.len(),
    }
    .into())
}

/// The exit status of a command's outcome: 0, [`EXIT_STATUS`] when only
/// gates failed, else 1.
pub fn exit_status(outcome: &anyhow::Result<()>) -> i32 {
    match outcome {
        Ok(()) => 0,
        Err(e) if e.downcast_ref::<GatesFailed>().is_some() => EXIT_STATUS,
        Err(_) => 1,
    }
}
