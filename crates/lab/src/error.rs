//! The lab's error type: says which step failed (which command, in which
//! namespace, which probe) so a user can tell a missing tool or missing
//! privilege from a broken link.

use std::io;

/// Everything that can go wrong while building, running or measuring a lab.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LabError {
    /// The caller is not root; namespaces, veth and TUN need CAP_NET_ADMIN.
    #[error("the network lab needs root (CAP_NET_ADMIN/CAP_SYS_ADMIN); running as uid {uid}")]
    NotRoot {
        /// Effective uid of this process.
        uid: u32,
    },
    /// A required program (`ip`, `tc`, `nft`) is not installed.
    #[error("required program `{program}` not found on PATH; run scripts/lab/install")]
    MissingTool {
        /// Program name.
        program: &'static str,
    },
    /// The spec given by the user is invalid.
    #[error("invalid lab spec: {0}")]
    Spec(String),
    /// An external command (ip, tc, nft) failed.
    #[error("`{command}` failed (exit {status}): {stderr}")]
    Command {
        /// The command line, space separated.
        command: String,
        /// Exit status as printed.
        status: String,
        /// What the command wrote on stderr, trimmed.
        stderr: String,
    },
    /// A system call failed in a named step.
    #[error("{step}: {source}")]
    Io {
        /// What the lab was doing.
        step: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A host name that the lab does not have.
    #[error("no host named `{0}` in this lab")]
    UnknownHost(String),
    /// A link between hosts that the lab does not have.
    #[error("no link between `{0}` and `{1}` in this lab")]
    UnknownLink(String, String),
    /// The self-measurement is outside the tolerances: the lab does not do
    /// what it was configured to do, so results on it are not to be trusted.
    #[error("lab self-check failed: {}", .0.join("; "))]
    SelfCheck(Vec<String>),
    /// A self-measurement probe failed (no answer, timeout).
    #[error("probe {probe} on link {link}: {detail}")]
    Probe {
        /// Which probe (rtt, loss, rate).
        probe: &'static str,
        /// `a<->b`.
        link: String,
        /// What went wrong.
        detail: String,
    },
}

impl LabError {
    /// Wraps an `io::Error` with the step it happened in.
    pub fn io(step: impl Into<String>, source: io::Error) -> Self {
        LabError::Io {
            step: step.into(),
            source,
        }
    }
}

/// Result alias for the lab.
pub type Result<T> = std::result::Result<T, LabError>;
