//! `iiopbench compare A.json B.json`: the flags, the table and the
//! placement check; the verdicts are [`iiopbench_engine::compare`]'s.

use std::path::PathBuf;

use clap::Args;
use iiopbench_engine::compare::{compare, noise_from_runs, slower, to_json, Row, Verdict};
use iiopbench_engine::results;
use iiopbench_engine::units::parse_percent;

use crate::table::{sig3, Table};

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

/// The comparison as a text table that fits 100 columns: per figure the
/// B/A ratio and the verdict in one cell (`1.05x same`); whose count the
/// throughput is last, dropped first when a long case name needs room.
pub fn render(rows: &[Row]) -> String {
    let mut t =
        Table::new(["case", "throughput B/A", "p50 B/A", "p99 B/A", "counted by"]).left_align(&[4]);
    let cell = |q: Option<f64>, v: Verdict| match q {
        Some(x) => format!("{}x {:<6}", sig3(x), v.name()),
        None => "-".into(),
    };
    for row in rows {
        t.row([
            row.case.clone(),
            cell(row.throughput_ratio, row.throughput),
            cell(row.p50_ratio, row.p50),
            cell(row.p99_ratio, row.p99),
            row.throughput_basis.name().into(),
        ]);
    }
    t.fit(crate::output::WIDTH, &["counted by", "p99 B/A"]);
    t.render()
}

/// The comparison in one line, as hyperfine ends its output: which ran
/// faster on throughput and by how much (the median B/A ratio over the
/// cases), and how many cases each verdict has; wrapped to fit.
pub fn verdict(rows: &[Row]) -> Option<String> {
    let mut q: Vec<f64> = rows
        .iter()
        .filter_map(|r| r.throughput_ratio)
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    if q.is_empty() {
        return None;
    }
    q.sort_by(f64::total_cmp);
    let n = q.len();
    let median = if n % 2 == 1 {
        q[n / 2]
    } else {
        (q[n / 2 - 1] + q[n / 2]) / 2.0
    };
    let (fast, slow, times) = if median >= 1.0 {
        ("B", "A", median)
    } else {
        ("A", "B", 1.0 / median)
    };
    let count = |v: Verdict| rows.iter().filter(|r| r.throughput == v).count();
    // With several cases the figure is their median.
    let of = if n > 1 {
        format!("median of {n}: ")
    } else {
        String::new()
    };
    let line = format!(
        "  {fast} ran {} times faster than {slow} on throughput ({of}B faster on {}, same on {}, \
         slower on {})",
        sig3(times),
        count(Verdict::Faster),
        count(Verdict::Same),
        count(Verdict::Slower),
    );
    Some(crate::output::wrap_lines(&line, crate::output::WIDTH))
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
        out!(
            "{}",
            crate::output::wrap_lines(
                &format!(
                    "B = {bn} against A = {an}\n  verdicts say what B is; throughput is counted by the \
                     receiving server where both have one, else by the client\n"
                ),
                crate::output::WIDTH
            )
        );
        out!("{}", render(&rows));
        if let Some(v) = verdict(&rows) {
            out!("{v}");
        }
        for r in rows.iter().filter(|r| !r.split_runs.is_empty()) {
            out!(
                "{}",
                crate::output::one_line(
                    &format!(
                        "  Warning: runs fall in two groups on {} ({}): its verdicts compare mixtures; \
                         rerun until each side's runs agree",
                        r.case,
                        r.split_runs.join("; ")
                    ),
                    crate::output::Style::default()
                )
            );
        }
        if let Some((pa, pb)) = mixed.first() {
            out!(
                "{}",
                crate::output::one_line(
                    &format!(
                        "  Warning: placements differ on {} case(s) (A {pa}, B {pb}): the ratios compare \
                         placements as much as ORBs",
                        mixed.len()
                    ),
                    crate::output::Style::default()
                )
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

#[cfg(test)]
mod tests {
    use super::*;
    use iiopbench_engine::compare::Basis;

    fn row(case: &str, q: f64, v: Verdict) -> Row {
        Row {
            case: case.into(),
            throughput_ratio: Some(q),
            throughput: v,
            throughput_basis: Basis::Receiver,
            p50_ratio: Some(1.0 / q),
            p50: Verdict::Same,
            p99_ratio: None,
            p99: Verdict::Unknown,
            placements: None,
            split_runs: Vec::new(),
        }
    }

    #[test]
    fn the_verdict_names_the_faster_side_by_the_median_ratio() {
        let rows = [
            row("oneway 1KiB", 1.5, Verdict::Faster),
            row("twoway 1KiB", 1.2, Verdict::Faster),
            row("echo 1KiB", 0.98, Verdict::Same),
        ];
        assert_eq!(
            verdict(&rows).unwrap(),
            "  B ran 1.20 times faster than A on throughput (median of 3: B faster on 2, same on 1, \
             slower on 0)\n"
        );
        let rows = [row("oneway 1KiB", 0.5, Verdict::Slower)];
        assert_eq!(
            verdict(&rows).unwrap(),
            "  A ran 2.00 times faster than B on throughput (B faster on 0, same on 0, slower on 1)\n"
        );
        assert_eq!(verdict(&[]), None);
    }

    #[test]
    fn the_table_sets_each_ratio_beside_its_verdict() {
        let text = render(&[row("oneway 1KiB", 2.0, Verdict::Faster)]);
        let line = text.lines().nth(2).unwrap();
        assert!(
            line.contains("2.00x faster") && line.contains("0.500x same"),
            "{text}"
        );
        assert!(line.ends_with("receiver"), "{text}");
    }
}
