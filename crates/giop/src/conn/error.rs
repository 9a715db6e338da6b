//! Why a client call failed, and whose fault it was: the one error type
//! of the client state machine and of every driver over it.

use std::time::Duration;

use crate::error::GiopError;
use crate::exception::SystemException;
use crate::header::{MsgType, Version};
use crate::message::Body;

/// Why a call failed, and whose fault it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// TCP connect failed.
    #[error("connect to {addr} failed: {message}")]
    Connect { addr: String, message: String },
    /// TCP connect did not finish in time.
    #[error("connect to {addr} timed out after {after:?}")]
    ConnectTimeout { addr: String, after: Duration },
    /// The TLS handshake failed; `reason` says which side refused and why.
    #[error("TLS handshake with {addr} failed: {reason}")]
    Tls { addr: String, reason: String },
    /// The reference asks for TLS and the client has no TLS settings.
    #[error("{addr} accepts only TLS ({via} in its IOR) and this client has no TLS settings (a CA to verify it: --tls-ca)")]
    TlsNotConfigured { addr: String, via: &'static str },
    /// Reading or writing the socket failed.
    #[error("I/O error on connection to {addr}: {message}")]
    Io { addr: String, message: String },
    /// The peer closed the connection. `retryable`: it sent CloseConnection
    /// first, so the request was not processed and may be sent again.
    #[error("connection to {addr} closed by the peer{}", if *.retryable { " (CloseConnection: retry)" } else { "" })]
    Closed { addr: String, retryable: bool },
    /// The peer sent MessageError: it could not parse something we sent.
    #[error("peer {addr} sent MessageError")]
    PeerMessageError { addr: String },
    /// The peer sent something malformed.
    #[error("malformed message from {addr}: {error}")]
    Protocol { addr: String, error: GiopError },
    /// The peer answered in another GIOP version than its request's: a
    /// Reply or LocateReply must be in the version of the request it
    /// answers (a 1.0 or 1.1 client cannot read a 1.2 reply header; the
    /// only messages a server may send in another version are
    /// MessageError and CloseConnection). The peer's error.
    #[error(
        "{} in GIOP {reply} to a GIOP {request} {} from {addr} (the peer's error: an answer must be in its request's GIOP version)",
        answer.name(),
        answer.answers().map_or("request", MsgType::name)
    )]
    ReplyVersion {
        addr: String,
        /// Reply or LocateReply.
        answer: MsgType,
        /// The answer's version.
        reply: Version,
        /// The request's.
        request: Version,
    },
    /// We could not encode the request (a body closure error, a status not
    /// in this GIOP version, …).
    #[error("cannot encode request: {0}")]
    Encode(GiopError),
    /// No reply in time.
    #[error("request {request_id} to {addr} timed out after {after:?}")]
    Timeout {
        addr: String,
        request_id: u32,
        after: Duration,
    },
    /// More forwards than `max_forwards` in one call; `addr` sent the last.
    #[error("more than {limit} LOCATION_FORWARD/OBJECT_FORWARD hops (the last from {addr})")]
    TooManyForwards { addr: String, limit: u32 },
    /// The IOR has no IIOP profile we can use.
    #[error("no usable IIOP profile in the IOR")]
    NoProfile,
    /// A forward named a reference with no IIOP profile to go to; `addr`
    /// sent it.
    #[error("{addr} forwarded to a reference with no usable IIOP profile")]
    ForwardedNowhere { addr: String },
    /// A request prepared for reuse got an answer its bytes cannot follow
    /// (they carry their target address): a forward (the client moved:
    /// prepare it again there), or another addressing disposition.
    #[error("{addr} answered a request prepared for reuse with {what}, which its prepared bytes cannot follow: prepare it again")]
    PreparedCannotFollow { addr: String, what: String },
    /// The server raised a system exception.
    #[error("system exception: {0}")]
    System(SystemException),
    /// The server raised a user exception.
    #[error("user exception {repo_id}")]
    User { repo_id: String, body: Body },
    /// The server asked for another addressing mode (GIOP 1.2).
    #[error("server needs addressing disposition {0}")]
    NeedsAddressingMode(i16),
    /// The connection handle was closed by us.
    #[error("connection closed locally")]
    LocallyClosed,
}

impl ClientError {
    /// Whether sending the request again (on a new connection) is safe.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ClientError::Closed {
                retryable: true,
                ..
            }
        )
    }
}
