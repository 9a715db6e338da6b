//! Progress on a terminal: one spinner line per case with its elapsed time
//! and, where the run has stages (`--runs`, a suite's cases), which one it
//! is in and the time left,
//! drawn on stderr, and nothing at all when stdout is not a terminal or
//! with `--quiet` (so piped and JSON output stays clean). News lines of a
//! run (a soak's intervals) go to stderr unless `--quiet`. This is the
//! command line's [`ProgressSink`] for the engine.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use iiopbench_engine::progress::{CaseSink, Progress, ProgressSink, Stage, Stages};
use iiopbench_engine::results::Results;
use indicatif::{ProgressBar, ProgressStyle};

use crate::flags::OutputOpts;

/// The engine's progress handle for these output options: nobody hears
/// anything with `--quiet`.
pub fn for_output(o: &OutputOpts) -> Progress {
    unless_quiet(o.quiet)
}

/// Spinners on a terminal and news on stderr, or nothing when `quiet`.
pub fn unless_quiet(quiet: bool) -> Progress {
    if quiet {
        return Progress::none();
    }
    Progress::to(Terminal {
        spinners: std::io::stdout().is_terminal() && std::io::stderr().is_terminal(),
        parts: false,
        stages: Arc::default(),
    })
}

/// [`unless_quiet`], and the results of each part of a larger run (a
/// suite's cases) shown on stdout as their own command would show them.
pub fn showing_parts(quiet: bool) -> Progress {
    if quiet {
        return Progress::none();
    }
    Progress::to(Terminal {
        spinners: std::io::stdout().is_terminal() && std::io::stderr().is_terminal(),
        parts: true,
        stages: Arc::default(),
    })
}

/// Spinners on a terminal, news lines on stderr; with `parts`, the
/// results of a larger run's parts on stdout.
#[derive(Debug, Clone)]
struct Terminal {
    spinners: bool,
    parts: bool,
    /// Which run / suite case is under way, for the time left.
    stages: Arc<Mutex<Stages>>,
}

impl ProgressSink for Terminal {
    fn case(&self, label: &str) -> Box<dyn CaseSink> {
        if !self.spinners {
            return Box::new(Spinner(None));
        }
        let pb = ProgressBar::new_spinner();
        pb.set_style(
            ProgressStyle::with_template("{spinner} {msg} {elapsed_precise}")
                .expect("static template"),
        );
        let at = self
            .stages
            .lock()
            .map(|s| s.describe(Instant::now()))
            .unwrap_or_default();
        pb.set_message(match at.is_empty() {
            true => label.to_string(),
            false => format!("{label}  [{at}]"),
        });
        pb.enable_steady_tick(Duration::from_millis(100));
        Box::new(Spinner(Some(pb)))
    }

    fn note(&self, line: &str) {
        eprintln!("{line}");
    }

    fn stage(&self, level: Stage, k: usize, n: usize) {
        if let Ok(mut s) = self.stages.lock() {
            s.start(level, k, n, Instant::now());
        }
    }

    fn results(&self, r: &Results) {
        if self.parts {
            let mut r = r.clone();
            crate::words::in_results(&mut r);
            let st = crate::output::Style {
                wide: false,
                color: self.spinners && std::env::var_os("NO_COLOR").is_none(),
            };
            out!("{}", crate::output::show(&r, st));
        }
    }
}

/// The spinner of one running case.
struct Spinner(Option<ProgressBar>);

impl CaseSink for Spinner {
    fn done(self: Box<Self>) {
        if let Some(pb) = self.0 {
            pb.finish_and_clear();
        }
    }
}
