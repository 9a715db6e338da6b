//! The engine's errors, by who failed: the user's job ([`JobError`],
//! found before anything starts), the server under test, a vendor ORB's
//! programs, the peers of a distributed run, this machine, or a run cut
//! short by Ctrl-C.
//!
//! Messages name the options of a job by their field names in backticks
//! (`` `in_flight` ``, `` `tls_ca` ``), which a library user finds in the
//! job types and the command line turns into its own flags.

/// What went wrong, and whose it is to fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The job cannot run as written (the user's to fix); nothing ran.
    #[error(transparent)]
    Job(#[from] JobError),
    /// The server under test failed or misbehaved: unreachable, a call
    /// that failed, a reply that was not what bench.idl promises.
    #[error("{0}")]
    Target(String),
    /// A vendor ORB's programs failed: not installed or built, did not
    /// start, exited, printed no reference.
    #[error("{0}")]
    Orb(String),
    /// A peer of a distributed run failed: the coordinator, an agent.
    #[error("{0}")]
    Peer(String),
    /// This machine: a file, a socket, a CPU, a process, a network
    /// namespace that could not be used.
    #[error("{0}")]
    Local(String),
    /// Cut short by Ctrl-C or SIGTERM; what was measured until then is
    /// kept.
    #[error("{0}")]
    Interrupted(String),
}

/// The engine's `Result`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The server under test failed.
    pub fn target(msg: impl std::fmt::Display) -> Error {
        Error::Target(msg.to_string())
    }

    /// A vendor ORB's programs failed.
    pub fn orb(msg: impl std::fmt::Display) -> Error {
        Error::Orb(msg.to_string())
    }

    /// A peer of a distributed run failed.
    pub fn peer(msg: impl std::fmt::Display) -> Error {
        Error::Peer(msg.to_string())
    }

    /// Something on this machine failed.
    pub fn local(msg: impl std::fmt::Display) -> Error {
        Error::Local(msg.to_string())
    }

    /// The run was interrupted; `msg` says what that cut short.
    pub fn interrupted(msg: impl std::fmt::Display) -> Error {
        Error::Interrupted(msg.to_string())
    }

    /// The job is invalid: `msg` names the fields in backticks.
    pub fn job(msg: impl std::fmt::Display) -> Error {
        Error::Job(JobError::new(msg))
    }

    /// The same error with `what` in front of its message (`what: msg`),
    /// of the same kind.
    pub fn context(self, what: impl std::fmt::Display) -> Error {
        let f = |m: String| format!("{what}: {m}");
        match self {
            Error::Job(j) => Error::Job(JobError::new(f(j.message))),
            Error::Target(m) => Error::Target(f(m)),
            Error::Orb(m) => Error::Orb(f(m)),
            Error::Peer(m) => Error::Peer(f(m)),
            Error::Local(m) => Error::Local(f(m)),
            Error::Interrupted(m) => Error::Interrupted(f(m)),
        }
    }

    /// Whether the user's job was refused before anything ran.
    pub fn is_job(&self) -> bool {
        matches!(self, Error::Job(_))
    }
}

impl From<std::io::Error> for Error {
    /// Local I/O (files, sockets, processes of this machine).
    fn from(e: std::io::Error) -> Error {
        Error::Local(e.to_string())
    }
}

impl From<iiop_bench_idl::client::BenchError> for Error {
    /// A call to the server under test failed.
    fn from(e: iiop_bench_idl::client::BenchError) -> Error {
        Error::Target(e.to_string())
    }
}

impl From<iiop_lab::LabError> for Error {
    /// The network lab could not be built, changed or measured: this
    /// machine's namespaces, links or tools.
    fn from(e: iiop_lab::LabError) -> Error {
        Error::Local(e.to_string())
    }
}

impl From<iiop_cdr::CdrError> for Error {
    /// Encoding or decoding failed: a value that does not fit its type.
    fn from(e: iiop_cdr::CdrError) -> Error {
        Error::Local(format!("encoding: {e}"))
    }
}

impl From<crate::units::ParseError> for Error {
    /// A quantity of the job that does not parse.
    fn from(e: crate::units::ParseError) -> Error {
        Error::job(e)
    }
}

/// A job that cannot run as written, said in one line that names the
/// fields at fault in backticks (`` `count` must be at least 1 ``).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct JobError {
    /// The problem, fields named in backticks.
    pub message: String,
}

impl JobError {
    /// A job error saying `msg`.
    pub fn new(msg: impl std::fmt::Display) -> JobError {
        JobError {
            message: msg.to_string(),
        }
    }
}

/// `Err(JobError)` with this message unless `cond` holds.
pub(crate) fn check(cond: bool, msg: impl FnOnce() -> String) -> Result<(), JobError> {
    if cond {
        Ok(())
    } else {
        Err(JobError::new(msg()))
    }
}

/// `Err(fail!($kind, …))` unless the condition holds.
macro_rules! ensure {
    ($cond:expr, $kind:ident, $($arg:tt)+) => {
        if !$cond {
            return Err($crate::error::fail!($kind, $($arg)+));
        }
    };
}

/// Return `Err(fail!($kind, …))`.
macro_rules! bail {
    ($kind:ident, $($arg:tt)+) => {
        return Err($crate::error::fail!($kind, $($arg)+))
    };
}

/// `Error::$kind(format!(…))`; `Job` makes a [`JobError`].
macro_rules! fail {
    (Job, $($arg:tt)+) => {
        $crate::error::Error::job(format!($($arg)+))
    };
    ($kind:ident, $($arg:tt)+) => {
        $crate::error::Error::$kind(format!($($arg)+))
    };
}

pub(crate) use {bail, ensure, fail};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_keeps_who_failed() {
        let e = Error::target("call 3 failed").context("twoway long 1KiB");
        assert!(matches!(&e, Error::Target(m) if m == "twoway long 1KiB: call 3 failed"));
        let j = Error::job("`count` must be at least 1").context("case a");
        assert!(j.is_job());
        assert_eq!(j.to_string(), "case a: `count` must be at least 1");
    }
}
