//! How a running benchmark tells its caller what it is doing, without
//! printing anything itself: a [`Progress`] handle carries an optional
//! [`ProgressSink`] that hears when each case starts and ends, and the
//! occasional line of news (a soak's interval figures). The default
//! handle reports to nobody; the command line plugs a terminal spinner in.
//! Runs of `--runs` and the cases of a suite are announced as stages
//! ([`Stage`]), from which [`Stages`] estimates the time left.

use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// Stage `k` (1-based) of `n` of the given level starts.
    fn stage(&self, level: Stage, k: usize, n: usize) {
        let _ = (level, k, n);
    }
}

/// What a stage is a part of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// One case on one target of a suite (its runs are nested in it).
    Part,
    /// One of a bench's `--runs`.
    Run,
}

/// Where a run stands among equal stages and when it should end: stage
/// `k` of `n` started at `at`, the first at `first`. Stages are taken as
/// equally long (the runs of one bench are; a suite's cases roughly).
#[derive(Debug, Clone, Copy, Default)]
struct Count {
    first: Option<Instant>,
    at: Option<Instant>,
    k: usize,
    n: usize,
}

impl Count {
    fn start(&mut self, k: usize, n: usize, now: Instant) {
        if k <= 1 || self.first.is_none() {
            self.first = Some(now);
        }
        self.at = Some(now);
        (self.k, self.n) = (k, n);
    }

    /// Time left at `now`: the stages done so far took what they took,
    /// each stage left takes their mean. None before one stage ended.
    fn left(&self, now: Instant) -> Option<Duration> {
        let (first, at) = (self.first?, self.at?);
        if self.k < 2 || self.n < self.k {
            return None;
        }
        let done = (self.k - 1) as u32;
        let per = (at - first) / done;
        let end = first + per * self.n as u32;
        Some(end.saturating_duration_since(now))
    }
}

/// The stages a run is in (suite part, run) and the time left, for a
/// progress line: `part 3/12, run 2/3, ~1m20s left`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stages {
    part: Count,
    run: Count,
}

impl Stages {
    /// Stage `k` of `n` of `level` starts at `now`. A new part starts its
    /// runs afresh.
    pub fn start(&mut self, level: Stage, k: usize, n: usize, now: Instant) {
        match level {
            Stage::Part => {
                self.part.start(k, n, now);
                self.run = Count::default();
            }
            Stage::Run => self.run.start(k, n, now),
        }
    }

    /// Time left at `now`, from the outermost level that can tell.
    pub fn left(&self, now: Instant) -> Option<Duration> {
        self.part.left(now).or_else(|| self.run.left(now))
    }

    /// `part 3/12, run 2/3, ~1m20s left`; empty when there is one stage
    /// of each and so nothing to say.
    pub fn describe(&self, now: Instant) -> String {
        let mut parts = Vec::new();
        for (name, c) in [("part", &self.part), ("run", &self.run)] {
            if c.n > 1 {
                parts.push(format!("{name} {}/{}", c.k, c.n));
            }
        }
        if let Some(d) = self.left(now) {
            parts.push(format!("~{} left", short_duration(d)));
        }
        parts.join(", ")
    }
}

/// `45s`, `3m05s`, `1h02m`.
fn short_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
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

    /// Stage `k` (1-based) of `n` of `level` starts.
    pub fn stage(&self, level: Stage, k: usize, n: usize) {
        if let Some(s) = &self.0 {
            s.stage(level, k, n);
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

    #[test]
    fn the_time_left_is_the_mean_stage_times_the_stages_left() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut st = Stages::default();
        st.start(Stage::Run, 1, 3, at(0));
        // Nothing ended yet: no estimate.
        assert_eq!(st.left(at(5)), None);
        assert_eq!(st.describe(at(5)), "run 1/3");
        // Run 1 took 10 s: runs 2 and 3 end at 30 s.
        st.start(Stage::Run, 2, 3, at(10));
        assert_eq!(st.left(at(12)), Some(Duration::from_secs(18)));
        assert_eq!(st.describe(at(12)), "run 2/3, ~18s left");
        // Past the estimate: nothing left, not a negative time.
        assert_eq!(st.left(at(40)), Some(Duration::ZERO));
        // A suite's parts take over the estimate; each part's runs
        // start afresh.
        st.start(Stage::Part, 1, 4, at(100));
        st.start(Stage::Run, 1, 3, at(100));
        st.start(Stage::Part, 2, 4, at(160));
        assert_eq!(st.describe(at(160)), "part 2/4, ~3m00s left");
        st.start(Stage::Run, 2, 3, at(180));
        assert_eq!(st.describe(at(190)), "part 2/4, run 2/3, ~2m30s left");
        // One stage of each: nothing to say.
        let mut one = Stages::default();
        one.start(Stage::Run, 1, 1, at(0));
        assert_eq!(one.describe(at(1)), "");
        assert_eq!(short_duration(Duration::from_secs(3725)), "1h02m");
    }
}
