//! Errors of the pure GIOP layer: who failed (the peer's bytes, or our own
//! limits) and at which byte offset of the message.

use iiop_cdr::CdrError;

/// What went wrong while framing, decoding or encoding a GIOP message.
///
/// `Clone + PartialEq` so tests can `assert_eq!` exact errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GiopError {
    /// The first four bytes are not `GIOP`.
    #[error("bad magic {found:02x?} at offset 0 (expected \"GIOP\")")]
    BadMagic { found: [u8; 4] },
    /// A version other than 1.0, 1.1 or 1.2.
    #[error("unsupported GIOP version {major}.{minor} at offset 4")]
    UnsupportedVersion { major: u8, minor: u8 },
    /// A message type outside 0..=7 (or Fragment in GIOP 1.0).
    #[error("unknown message type {msg_type} for GIOP 1.{minor} at offset 7")]
    UnknownMessageType { msg_type: u8, minor: u8 },
    /// Flag bits we do not understand (e.g. ZIOP's 0x04), or a GIOP 1.0
    /// byte-order octet that is neither 0 nor 1.
    #[error("invalid flags {flags:#04x} for GIOP 1.{minor} at offset 6")]
    BadFlags { flags: u8, minor: u8 },
    /// The declared size (or a reassembled size) exceeds our limit. Checked
    /// before the body is buffered.
    #[error("message size {size} exceeds the limit of {limit} bytes")]
    TooLarge { size: u64, limit: u64 },
    /// A CDR decode or encode failure inside a message; `what` names the
    /// field, the inner error carries the offset from the message start.
    #[error("{what}: {source}")]
    Cdr {
        what: &'static str,
        #[source]
        source: CdrError,
    },
    /// A field value outside its enumeration (reply status, locate status,
    /// addressing disposition, completion status, response flags).
    #[error("invalid {what} {value} at offset {offset}")]
    BadValue {
        what: &'static str,
        value: u32,
        offset: usize,
    },
    /// A message type that cannot be fragmented, or a fragment in GIOP 1.0,
    /// or a more-fragments flag on a message that may not carry it.
    #[error("fragmentation not allowed: {0}")]
    FragmentNotAllowed(&'static str),
    /// A Fragment arrived with no fragmented message in progress.
    #[error("fragment without a first message (request id {request_id:?})")]
    FragmentWithoutStart { request_id: Option<u32> },
    /// A Fragment for a message that was already complete.
    #[error("fragment after the complete message (request id {request_id:?})")]
    FragmentAfterComplete { request_id: Option<u32> },
    /// A new fragmented message started while one with the same key is
    /// still being reassembled.
    #[error("fragmented message {request_id:?} started twice")]
    FragmentDuplicate { request_id: Option<u32> },
    /// A fragment whose version or byte order differs from its first message.
    #[error("fragment header {what} differs from the first message")]
    FragmentMismatch { what: &'static str },
    /// A status or message kind that the negotiated GIOP version does not
    /// have (e.g. LOCATION_FORWARD_PERM to a 1.1 peer). Our own mistake.
    #[error("{what} does not exist in GIOP 1.{minor}")]
    NotInVersion { what: &'static str, minor: u8 },
    /// Bytes left over after a message that has no body.
    #[error("{remaining} trailing bytes at offset {offset} in {what}")]
    Trailing {
        what: &'static str,
        offset: usize,
        remaining: usize,
    },
    /// A malformed textual reference (IOR:, corbaloc:, corbaname:).
    #[error("bad {what}: {reason}")]
    BadReference { what: &'static str, reason: String },
}

impl GiopError {
    /// Wrap a CDR error with the name of the field being decoded.
    pub fn cdr(what: &'static str) -> impl FnOnce(CdrError) -> GiopError {
        move |source| GiopError::Cdr { what, source }
    }

    /// A textual-reference error.
    pub fn reference(what: &'static str, reason: impl Into<String>) -> GiopError {
        GiopError::BadReference {
            what,
            reason: reason.into(),
        }
    }
}

impl From<iiop_cdr::UnsupportedVersion> for GiopError {
    fn from(e: iiop_cdr::UnsupportedVersion) -> GiopError {
        GiopError::UnsupportedVersion {
            major: e.major,
            minor: e.minor,
        }
    }
}

/// An IOR failure (the IOR type lives in `iiop-cdr`) as the GIOP error of
/// the same kind: same variant, same message.
impl From<iiop_cdr::IorError> for GiopError {
    fn from(e: iiop_cdr::IorError) -> GiopError {
        use iiop_cdr::IorError;
        match e {
            IorError::Cdr { what, source } => GiopError::Cdr { what, source },
            IorError::UnsupportedVersion { major, minor } => {
                GiopError::UnsupportedVersion { major, minor }
            }
            IorError::BadReference { what, reason } => GiopError::BadReference { what, reason },
            // `IorError` is non_exhaustive; a future variant keeps its message.
            other => GiopError::BadReference {
                what: "IOR",
                reason: other.to_string(),
            },
        }
    }
}

/// Shorthand used throughout the crate.
pub type Result<T, E = GiopError> = std::result::Result<T, E>;
