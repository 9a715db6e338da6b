//! Decode and encode errors. Every variant that comes from input says at
//! which byte offset (counted from the reader's alignment origin, i.e. from
//! the start of the GIOP message when the caller set it up that way) the
//! problem was found, so a failure can be matched against a hex dump.

/// What went wrong while reading or writing CDR.
///
/// `Clone + PartialEq` so that tests can `assert_eq!` exact errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CdrError {
    /// The input ended before a value was complete.
    #[error("truncated input: need {needed} bytes at offset {offset}, only {available} left")]
    Truncated {
        offset: usize,
        needed: usize,
        available: usize,
    },
    /// A length field (sequence, string, encapsulation) asks for more than the
    /// configured limit allows. Checked before anything is allocated.
    #[error("length {len} at offset {offset} exceeds the limit of {limit}")]
    LimitExceeded { offset: usize, len: u64, limit: u64 },
    /// Nested types or values deeper than the configured limit.
    #[error("nesting deeper than {limit} at offset {offset}")]
    DepthExceeded { offset: usize, limit: u32 },
    /// A boolean octet other than 0 or 1.
    #[error("invalid boolean octet {value:#04x} at offset {offset}")]
    InvalidBool { offset: usize, value: u8 },
    /// A string whose last octet is not NUL.
    #[error("string at offset {offset} is not NUL-terminated")]
    StringNotTerminated { offset: usize },
    /// A string with length 0 (a CDR string always counts its NUL).
    #[error("string at offset {offset} has length 0 (must count its NUL)")]
    EmptyString { offset: usize },
    /// A string or char whose bytes are not valid in the negotiated code set.
    #[error("invalid {codeset} data at offset {offset}")]
    InvalidCodeSet {
        offset: usize,
        codeset: &'static str,
    },
    /// A value that cannot be represented in the negotiated transmission
    /// code set (e.g. 'é' as a UTF-8 `char`, which must be one octet).
    #[error("{what} cannot be encoded in {codeset}")]
    Unrepresentable { what: String, codeset: &'static str },
    /// wchar/wstring used where no wide code set was negotiated, or in
    /// GIOP 1.0 where wchar is illegal.
    #[error("wchar data at offset {offset} without a negotiated wide code set")]
    WcharNotNegotiated { offset: usize },
    /// An enum value outside the enumeration.
    #[error("enum value {value} at offset {offset} is outside 0..{count}")]
    InvalidEnum {
        offset: usize,
        value: u32,
        count: u32,
    },
    /// A union discriminator that selects no member and there is no default.
    #[error("union discriminator {value} at offset {offset} selects no member")]
    InvalidDiscriminator { offset: usize, value: i64 },
    /// An encapsulation whose byte-order octet is neither 0 nor 1.
    #[error("invalid byte-order octet {value:#04x} at offset {offset}")]
    InvalidByteOrder { offset: usize, value: u8 },
    /// A malformed TypeCode.
    #[error("bad TypeCode at offset {offset}: {reason}")]
    BadTypeCode { offset: usize, reason: String },
    /// A value does not match the type it is encoded or decoded with.
    #[error("type mismatch at offset {offset}: expected {expected}, found {found}")]
    TypeMismatch {
        offset: usize,
        expected: String,
        found: String,
    },
    /// Malformed valuetype encoding: a bad value tag, chunk or end tag, an
    /// indirection that does not point back at an earlier value or
    /// repository id, a value of a type we cannot decode.
    #[error("bad valuetype encoding at offset {offset}: {reason}")]
    BadValue { offset: usize, reason: String },
    /// Bytes left over where the value should have ended.
    #[error("{remaining} trailing bytes at offset {offset}")]
    TrailingData { offset: usize, remaining: usize },
    /// A free-form message (serde's `custom`, unsupported shapes).
    #[error("{0}")]
    Message(String),
}

impl CdrError {
    /// The byte offset the error refers to, where it has one.
    pub fn offset(&self) -> Option<usize> {
        use CdrError::*;
        match self {
            Truncated { offset, .. }
            | LimitExceeded { offset, .. }
            | DepthExceeded { offset, .. }
            | InvalidBool { offset, .. }
            | StringNotTerminated { offset }
            | EmptyString { offset }
            | InvalidCodeSet { offset, .. }
            | WcharNotNegotiated { offset }
            | InvalidEnum { offset, .. }
            | InvalidDiscriminator { offset, .. }
            | InvalidByteOrder { offset, .. }
            | BadTypeCode { offset, .. }
            | BadValue { offset, .. }
            | TypeMismatch { offset, .. }
            | TrailingData { offset, .. } => Some(*offset),
            Unrepresentable { .. } | Message(_) => None,
        }
    }
}

/// Shorthand used throughout the crate.
pub type Result<T, E = CdrError> = std::result::Result<T, E>;
