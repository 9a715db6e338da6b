//! How a running benchmark tells its caller what it is doing, without
//! printing anything itself: a [`Progress`] handle carries an optional
//! [`ProgressSink`] that hears when each case starts and ends, and the
//! occasional line of news (a soak's interval figures). The default
//! handle reports to nobody; the command line plugs a terminal spinner in.

use std::sync::Arc;

/// Receives a run's progress. Implementations must be cheap: `case` and
/// `done` run between measured cases, never inside one.
pub trait ProgressSink: Send + Sync {
    /// A case labelled `label` starts; the returned value hears its end.
    fn case(&self, label: &str) -> Box<dyn CaseSink>;
    /// A line of news about the run (e.g. one soak interval's figures).
    fn note(&self, line: &str) {
        let _ = line;
    }
    /// One run of a larger one finished with these results (a suite's
    /// case on one target), for callers that show each as it comes.
    fn results(&self, r: &crate::results::Results) {
        let _ = r;
    }
}

/// Hears the end of one case.
pub trait CaseSink: Send {
    /// The case ended (measured, failed or interrupted).
    fn done(self: Box<Self>);
}

/// A cloneable handle on an optional [`ProgressSink`].
#[derive(Clone, Default)]
pub struct Progress(Option<Arc<dyn ProgressSink>>);

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Progress(sink)"
        } else {
            "Progress(none)"
        })
    }
}

impl Progress {
    /// Report to nobody.
    pub fn none() -> Self {
        Progress(None)
    }

    /// Report to `sink`.
    pub fn to(sink: impl ProgressSink + 'static) -> Self {
        Progress(Some(Arc::new(sink)))
    }

    /// A case starts; call [`CaseProgress::done`] when it ends.
    pub fn case(&self, label: &str) -> CaseProgress {
        CaseProgress(self.0.as_ref().map(|s| s.case(label)))
    }

    /// Pass a line of news on.
    pub fn note(&self, line: &str) {
        if let Some(s) = &self.0 {
            s.note(line);
        }
    }

    /// Pass a finished part's results on.
    pub fn results(&self, r: &crate::results::Results) {
        if let Some(s) = &self.0 {
            s.results(r);
        }
    }

    /// Whether anyone listens (so news need not be formatted otherwise).
    pub fn listening(&self) -> bool {
        self.0.is_some()
    }
}

/// One running case's progress.
pub struct CaseProgress(Option<Box<dyn CaseSink>>);

impl std::fmt::Debug for CaseProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CaseProgress")
    }
}

impl CaseProgress {
    /// The case ended.
    pub fn done(self) {
        if let Some(s) = self.0 {
            s.done();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Log(Arc<Mutex<Vec<String>>>);

    struct End(Arc<Mutex<Vec<String>>>, String);

    impl ProgressSink for Log {
        fn case(&self, label: &str) -> Box<dyn CaseSink> {
            self.0.lock().unwrap().push(format!("start {label}"));
            Box::new(End(self.0.clone(), label.to_string()))
        }
        fn note(&self, line: &str) {
            self.0.lock().unwrap().push(format!("note {line}"));
        }
    }

    impl CaseSink for End {
        fn done(self: Box<Self>) {
            self.0.lock().unwrap().push(format!("done {}", self.1));
        }
    }

    #[test]
    fn a_sink_hears_starts_ends_and_notes_in_order() {
        let log = Log::default();
        let seen = log.0.clone();
        let p = Progress::to(log);
        assert!(p.listening());
        let c = p.case("a");
        p.note("halfway");
        c.done();
        assert_eq!(*seen.lock().unwrap(), ["start a", "note halfway", "done a"]);
        // Nobody listening: nothing happens, nothing fails.
        let quiet = Progress::none();
        assert!(!quiet.listening());
        quiet.case("b").done();
        quiet.note("x");
    }
}
