//! `iiopbench report RESULTS.json… --report DIR`: figures people read instead
//! of tables. Writes `DIR/index.html` (self-contained: the SVG figures
//! inline, no script, no external asset), `DIR/report.md` (Markdown
//! referencing the figures) and one `DIR/fig-NN-*.svg` per figure. What
//! the figures show is computed by the engine
//! (`iiopbench_engine::report`); here they are drawn ([`plot`]) and laid
//! out.

pub mod plot;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;

use iiopbench_engine::report::SUMMARY_HEAD;
use iiopbench_engine::report::{
    self as data, describe, placement_warning, run_warnings, summary_rows, Plot,
};
use iiopbench_engine::results::{self, Results};

/// `report` options.
#[derive(Debug, Clone, Args)]
pub struct ReportOpts {
    /// Results files (several go on the same figures).
    #[arg(required = true, num_args = 1.., value_name = "RESULTS.json")]
    pub inputs: Vec<PathBuf>,
    /// Directory to write index.html, report.md and the SVG figures to.
    #[arg(long, value_name = "DIR")]
    pub report: PathBuf,
}

/// One figure of a report, drawn.
#[derive(Debug, Clone)]
pub struct Figure {
    /// File name within the report directory (`fig-01-….svg`).
    pub file: String,
    pub title: String,
    /// One sentence: what the figure shows.
    pub what: String,
    pub svg: String,
}

/// Every figure for these results files, drawn as SVG.
pub fn figures(inputs: &[(String, Results)]) -> anyhow::Result<Vec<Figure>> {
    data::figures(inputs)?
        .into_iter()
        .map(|f| {
            let svg = match &f.plot {
                Plot::Chart(c) => plot::chart(c)?,
                Plot::Bars { x_desc, rows } => plot::bars(&f.title, x_desc, rows)?,
                Plot::Matrix { rows, cols, cells } => plot::matrix(&f.title, rows, cols, cells),
            };
            Ok(Figure {
                file: f.file,
                title: f.title,
                what: f.what,
                svg,
            })
        })
        .collect()
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The self-contained HTML page.
pub fn html(inputs: &[(String, Results)], figs: &[Figure]) -> String {
    let mut h = String::from(
        "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>iiopbench report</title>\n<style>\nbody{font-family:sans-serif;max-width:1200px;margin:1em auto;padding:0 1em}\ntable{border-collapse:collapse;font-size:0.85em}\ntd,th{border:1px solid #ccc;padding:2px 6px;text-align:right}\ntd:nth-child(-n+3){text-align:left}\nfigure{margin:2em 0}\n</style>\n</head>\n<body>\n<h1>iiopbench report</h1>\n<ul>\n",
    );
    for (n, r) in inputs {
        h.push_str(&format!("<li>{}</li>\n", esc(&describe(n, r))));
    }
    h.push_str("</ul>\n");
    if let Some(w) = placement_warning(inputs) {
        h.push_str(&format!("<p><b>Warning:</b> {}</p>\n", esc(&w)));
    }
    let noise = run_warnings(inputs);
    if !noise.is_empty() {
        h.push_str("<p><b>How far to trust these figures</b> (warnings of the runs):</p>\n<ul>\n");
        for w in &noise {
            h.push_str(&format!("<li>{}</li>\n", esc(w)));
        }
        h.push_str("</ul>\n");
    }
    h.push_str("<h2>Figures</h2>\n");
    for f in figs {
        let svg = f.svg.trim_start();
        let svg = svg
            .strip_prefix("<?xml")
            .map(|s| &s[s.find("?>").map(|i| i + 2).unwrap_or(0)..])
            .unwrap_or(svg);
        h.push_str(&format!(
            "<figure id=\"{}\">\n{}\n<figcaption><b>{}</b>. {}</figcaption>\n</figure>\n",
            esc(f.file.trim_end_matches(".svg")),
            svg.trim(),
            esc(&f.title),
            esc(&f.what)
        ));
    }
    h.push_str("<h2>Cases</h2>\n<table>\n<tr>");
    for c in SUMMARY_HEAD {
        h.push_str(&format!("<th>{}</th>", esc(c)));
    }
    h.push_str("</tr>\n");
    for row in summary_rows(inputs) {
        h.push_str("<tr>");
        for c in row {
            h.push_str(&format!("<td>{}</td>", esc(&c)));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n</body>\n</html>\n");
    h
}

/// The Markdown page (figures referenced as files beside it).
pub fn markdown(inputs: &[(String, Results)], figs: &[Figure]) -> String {
    let mut m = String::from("# iiopbench report\n\n");
    for (n, r) in inputs {
        m.push_str(&format!("- {}\n", describe(n, r)));
    }
    if let Some(w) = placement_warning(inputs) {
        m.push_str(&format!("\n**Warning:** {w}\n"));
    }
    let noise = run_warnings(inputs);
    if !noise.is_empty() {
        m.push_str("\n**How far to trust these figures** (warnings of the runs):\n\n");
        for w in &noise {
            m.push_str(&format!("- {w}\n"));
        }
    }
    m.push_str("\n## Figures\n\n");
    for f in figs {
        m.push_str(&format!(
            "### {}\n\n![{}]({})\n\n{}\n\n",
            f.title, f.title, f.file, f.what
        ));
    }
    m.push_str("## Cases\n\n|");
    for c in SUMMARY_HEAD {
        m.push_str(&format!(" {c} |"));
    }
    m.push_str("\n|");
    m.push_str(&"---|".repeat(SUMMARY_HEAD.len()));
    m.push('\n');
    for row in summary_rows(inputs) {
        m.push('|');
        for c in row {
            m.push_str(&format!(" {} |", c.replace('|', "\\|")));
        }
        m.push('\n');
    }
    m
}

/// Write the report of `inputs` into `dir`.
pub fn write(inputs: &[(String, Results)], dir: &Path) -> anyhow::Result<Vec<Figure>> {
    let figs = figures(inputs)?;
    std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
    for f in &figs {
        results::write_atomic(&dir.join(&f.file), &f.svg)?;
    }
    results::write_atomic(&dir.join("index.html"), &html(inputs, &figs))?;
    results::write_atomic(&dir.join("report.md"), &markdown(inputs, &figs))?;
    Ok(figs)
}

/// Run `report`.
pub fn run(o: &ReportOpts) -> anyhow::Result<()> {
    let inputs = o
        .inputs
        .iter()
        .map(|p| Ok((p.display().to_string(), results::read(p)?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let figs = write(&inputs, &o.report)?;
    let mut by_kind: BTreeMap<&str, usize> = BTreeMap::new();
    for f in &figs {
        *by_kind
            .entry(f.title.split(':').next().unwrap_or(""))
            .or_insert(0) += 1;
    }
    outln!(
        "report: {} figures in {} ({})",
        figs.len(),
        o.report.join("index.html").display(),
        by_kind
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}
