//! `iiopbench merge A.json B.json… --json all.json`: the flags; merging is
//! [`iiopbench_engine::merge`]'s.

use std::path::PathBuf;

use clap::Args;
use iiopbench_engine::merge::merge;
use iiopbench_engine::results;

/// `merge` flags.
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// Results files to merge (two or more).
    #[arg(required = true, num_args = 1.., value_name = "RESULTS.json")]
    pub inputs: Vec<PathBuf>,
    /// Write the merged results here.
    #[arg(long, value_name = "FILE")]
    pub json: PathBuf,
}

/// Run `merge`.
pub fn run(o: &MergeArgs) -> anyhow::Result<()> {
    anyhow::ensure!(o.inputs.len() >= 2, "merge needs two or more results files");
    let inputs = o
        .inputs
        .iter()
        .map(|p| Ok((p.display().to_string(), results::read(p)?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let m = merge(&inputs)?;
    Ok(results::write_atomic(&o.json, &results::to_json(&m))?)
}
