//! What the engine's black-box tests share: a progress sink that records
//! what a run tells it.

use std::sync::{Arc, Mutex};

use iiopbench_engine::progress::{CaseSink, ProgressSink};

/// Records each case's start and end (`start LABEL`, `done LABEL`) and
/// every note (`note LINE`), in order.
#[derive(Clone, Default)]
pub struct Log(pub Arc<Mutex<Vec<String>>>);

struct End(Log, String);

impl ProgressSink for Log {
    fn case(&self, label: &str) -> Box<dyn CaseSink> {
        self.0.lock().unwrap().push(format!("start {label}"));
        Box::new(End(self.clone(), label.to_string()))
    }
    fn note(&self, line: &str) {
        self.0.lock().unwrap().push(format!("note {line}"));
    }
}

impl CaseSink for End {
    fn done(self: Box<Self>) {
        self.0 .0.lock().unwrap().push(format!("done {}", self.1));
    }
}
