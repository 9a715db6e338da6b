//! `iiopbench compare A.json B.json`: the flags, the table and the
//! placement check; the verdicts are [`iiopbench_engine::compare`]'s.

use std::path::PathBuf;

use clap::Args;
use iiopbench_engine::compare::{compare, noise_from_runs, slower, to_json, Row};
use iiopbench_engine::results;
use iiopbench_engine::units::parse_percent;

use crate::table::Table;

/// `compare` flags.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The reference results.
    #[arg(value_name = "A.json")]
    pub a: PathBuf,
    /// The results judged against A.
    #[arg(value_name = "B.json")]
    pub b: PathBuf,
    /// Results files of repeated runs of one configuration (any number):
    /// the per-case spread of their throughput sets the noise threshold.
    #[arg(long, num_args = 1.., value_name = "FILE")]
    pub noise_from: Vec<PathBuf>,
    /// Throughput noise threshold when no --noise-from is given.
    #[arg(long, value_parser = parse_percent, default_value = "10%", value_name = "PERCENT")]
    pub noise: f64,
    /// Smallest latency difference ever called a change.
    #[arg(long, value_parser = parse_percent, default_value = "5%", value_name = "PERCENT")]
    pub min_effect: f64,
    /// Use only A's cases of this target (suite files with several).
    #[arg(long, value_name = "LABEL")]
    pub a_target: Option<String>,
    /// Use only B's cases of this target.
    #[arg(long, value_name = "LABEL")]
    pub b_target: Option<String>,
    /// Compare even when A and B ran with different placements (the
    /// table then says so).
    #[arg(long)]
    pub mixed_placement: bool,
    /// Also write the comparison as JSON (schema iiopbench-comparison/1,
    /// docs/results-schema.md); `-` for standard output, and then no table.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Exit with status 1 when B is slower than A on any case and figure
    /// (throughput, p50 or p99), naming them: a CI job's regression guard.
    /// The table and the JSON are written first.
    #[arg(long)]
    pub fail_if_slower: bool,
}

/// The comparison as a text table.
pub fn render(rows: &[Row]) -> String {
    let mut t = Table::new([
        "case",
        "throughput B/A",
        "counted by",
        "verdict",
        "p50 B/A",
        "verdict",
        "p99 B/A",
        "verdict",
    ])
    .left_align(&[0, 2, 3, 5, 7]);
    let r = |v: Option<f64>| v.map(|x| format!("{x:.3}")).unwrap_or_else(|| "-".into());
    for row in rows {
        t.row([
            row.case.clone(),
            r(row.throughput_ratio),
            row.throughput_basis.name().into(),
            row.throughput.name().into(),
            r(row.p50_ratio),
            row.p50.name().into(),
            r(row.p99_ratio),
            row.p99.name().into(),
        ]);
    }
    t.render()
}

/// Run `compare`.
pub fn run(o: &CompareArgs) -> anyhow::Result<()> {
    let a = results::read(&o.a)?;
    let b = results::read(&o.b)?;
    let runs = o
        .noise_from
        .iter()
        .map(|p| results::read(p))
        .collect::<Result<Vec<_>, _>>()?;
    let noise = noise_from_runs(&runs);
    let (an, bn) = (o.a.display().to_string(), o.b.display().to_string());
    let rows = compare(
        (&an, &a, o.a_target.as_deref()),
        (&bn, &b, o.b_target.as_deref()),
        &noise,
        o.noise / 100.0,
        o.min_effect / 100.0,
    )?;
    anyhow::ensure!(
        !rows.is_empty(),
        "{an} and {bn} have no case in common (same command, mode, type, size and parameters)"
    );
    let mixed: Vec<&(String, String)> = rows.iter().filter_map(|r| r.placements.as_ref()).collect();
    if let Some((pa, pb)) = mixed.first() {
        anyhow::ensure!(
            o.mixed_placement,
            "{an} ran with placement {pa:?} and {bn} with {pb:?}{}: placement moves a loopback \
             round trip more than any ORB does, so this would compare placements, not ORBs; \
             rerun one pinned like the other (--client-cpus/--server-cpus), or pass \
             --mixed-placement to compare anyway",
            if mixed.len() > 1 {
                format!(" (and {} more cases differ)", mixed.len() - 1)
            } else {
                String::new()
            }
        );
    }
    let to_stdout = o.json.as_deref() == Some(std::path::Path::new("-"));
    if !to_stdout {
        println!(
            "B = {bn} against A = {an}; verdicts say what B is; throughput is the receiving \
             server's count where both have one (receiver), else the client's (sender)"
        );
        print!("{}", render(&rows));
        for r in rows.iter().filter(|r| !r.split_runs.is_empty()) {
            println!(
                "  Warning: runs fall in two groups on {} ({}): its verdicts compare mixtures of the groups; find what differs between them, or rerun until each side's runs agree.",
                r.case,
                r.split_runs.join("; ")
            );
        }
        if let Some((pa, pb)) = mixed.first() {
            println!(
                "  Warning: placements differ on {} case(s) (A {pa}, B {pb}): the ratios compare placements as much as ORBs.",
                mixed.len()
            );
        }
    }
    if let Some(p) = &o.json {
        let doc = serde_json::to_string_pretty(&to_json(&an, &bn, &rows))? + "\n";
        results::write_atomic(p, &doc)?;
    }
    let worse = slower(&rows);
    if o.fail_if_slower && !worse.is_empty() {
        let list: Vec<String> = worse
            .iter()
            .map(|(case, figs)| format!("{case} ({})", figs.join(", ")))
            .collect();
        anyhow::bail!(
            "{bn} is slower than {an} beyond the noise on {} case(s): {}",
            worse.len(),
            list.join("; ")
        );
    }
    Ok(())
}
