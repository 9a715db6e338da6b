//! Progress on a terminal: one spinner line per case with its elapsed time,
//! drawn on stderr, and nothing at all when stdout is not a terminal or
//! with `--quiet` (so piped and JSON output stays clean).

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// Spinner factory; hidden when not on a terminal.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    visible: bool,
}

impl Progress {
    /// Visible only on a terminal and when not quiet.
    pub fn new(quiet: bool) -> Self {
        Progress {
            visible: !quiet && std::io::stdout().is_terminal() && std::io::stderr().is_terminal(),
        }
    }

    /// A spinner for one case; finish it with [`CaseProgress::done`].
    pub fn case(&self, label: &str) -> CaseProgress {
        if !self.visible {
            return CaseProgress(None);
        }
        let pb = ProgressBar::new_spinner();
        pb.set_style(
            ProgressStyle::with_template("{spinner} {msg} {elapsed_precise}")
                .expect("static template"),
        );
        pb.set_message(label.to_string());
        pb.enable_steady_tick(Duration::from_millis(100));
        CaseProgress(Some(pb))
    }
}

/// The spinner of one running case.
#[derive(Debug)]
pub struct CaseProgress(Option<ProgressBar>);

impl CaseProgress {
    /// Remove the spinner line.
    pub fn done(self) {
        if let Some(pb) = self.0 {
            pb.finish_and_clear();
        }
    }
}
