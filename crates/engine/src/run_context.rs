//! What a run needs besides its job: who hears about its progress, the
//! command line that asked for it (recorded in the results, never read),
//! how to start iiopbench's own programs when the job needs a process,
//! and, in an agent run, the start gate its cases wait at. A job says what
//! to measure and can be written to a file or sent to an agent; these are
//! the run's own and stay in the process that runs it. Ctrl-C is the
//! process-wide flag of [`crate::interrupt`].

use std::sync::Arc;

use crate::gate::Gate;
use crate::programs::Programs;
use crate::progress::Progress;

/// A run's caller-side context; `Default`: nobody hears anything, no
/// command line, no programs, no gate.
#[derive(Clone, Default)]
pub struct RunContext {
    /// Who hears when each case starts and ends.
    pub progress: Progress,
    /// The command line that asked for the run, for the results'
    /// `command` (the command line passes its own argv; a harness may
    /// pass what describes its call, or nothing).
    pub command: Vec<String>,
    /// How to start iiopbench's own programs (our server as a process,
    /// for `packing` and `balance` with child servers); `None` in a
    /// harness without the iiopbench executable.
    pub programs: Option<Arc<dyn Programs>>,
    /// An agent run's start gate: every case starts at its agent-wide
    /// slot, and the target is shared (its counters are left alone).
    pub gate: Option<Gate>,
}

impl RunContext {
    /// Nobody hears anything, no command line, no gate.
    pub fn new() -> RunContext {
        RunContext::default()
    }

    /// The same, reporting to `progress`.
    pub fn with_progress(mut self, progress: Progress) -> RunContext {
        self.progress = progress;
        self
    }

    /// The same, recording `command` as the results' command line.
    pub fn with_command(mut self, command: Vec<String>) -> RunContext {
        self.command = command;
        self
    }

    /// The same, starting iiopbench's programs with `programs`.
    pub fn with_programs(mut self, programs: Arc<dyn Programs>) -> RunContext {
        self.programs = Some(programs);
        self
    }

    /// The same, with an agent run's start gate.
    pub fn with_gate(mut self, gate: Gate) -> RunContext {
        self.gate = Some(gate);
        self
    }
}

impl std::fmt::Debug for RunContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunContext")
            .field("progress", &self.progress)
            .field("command", &self.command)
            .field("programs", &self.programs.is_some())
            .field("gate", &self.gate)
            .finish()
    }
}
