//! Byte order, code sets, GIOP versions and their rules, and limits: everything a
//! [`Reader`](crate::Reader) or [`Writer`](crate::Writer) needs to know
//! besides the bytes. All of it is `Copy`, so it travels by value.

/// The byte order of a CDR stream (or encapsulation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    Big,
    Little,
}

impl ByteOrder {
    /// The order of the machine we run on.
    #[cfg(target_endian = "little")]
    pub const NATIVE: ByteOrder = ByteOrder::Little;
    /// The order of the machine we run on.
    #[cfg(target_endian = "big")]
    pub const NATIVE: ByteOrder = ByteOrder::Big;

    /// From the GIOP flags bit / encapsulation octet: 0 big, 1 little.
    pub fn from_flag(little: bool) -> Self {
        if little {
            ByteOrder::Little
        } else {
            ByteOrder::Big
        }
    }

    /// The octet that announces this order (0 big-endian, 1 little-endian).
    pub fn flag(self) -> u8 {
        match self {
            ByteOrder::Big => 0,
            ByteOrder::Little => 1,
        }
    }

    /// Whether this is the host's order (bulk copies need no swapping).
    pub fn is_native(self) -> bool {
        self == Self::NATIVE
    }
}

/// Transmission code set for `char` and `string`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CharCodeSet {
    /// ISO 8859-1 (0x00010001): one octet per character, the CORBA default.
    Latin1,
    /// UTF-8 (0x05010001): strings may hold any Unicode; a `char` is still a
    /// single octet and so limited to ASCII.
    Utf8,
}

impl CharCodeSet {
    /// OSF registry id.
    pub fn id(self) -> u32 {
        match self {
            CharCodeSet::Latin1 => 0x0001_0001,
            CharCodeSet::Utf8 => 0x0501_0001,
        }
    }
    /// From an OSF registry id, if we support it.
    pub fn from_id(id: u32) -> Option<Self> {
        match id {
            0x0001_0001 => Some(CharCodeSet::Latin1),
            0x0501_0001 => Some(CharCodeSet::Utf8),
            _ => None,
        }
    }
    /// Name used in errors.
    pub fn name(self) -> &'static str {
        match self {
            CharCodeSet::Latin1 => "ISO-8859-1",
            CharCodeSet::Utf8 => "UTF-8",
        }
    }
}

/// Transmission code set for `wchar` and `wstring`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WCharCodeSet {
    /// UTF-16 (0x00010109), surrogate pairs allowed.
    Utf16,
    /// UCS-2 (0x00010100), BMP only.
    Ucs2,
}

impl WCharCodeSet {
    /// OSF registry id.
    pub fn id(self) -> u32 {
        match self {
            WCharCodeSet::Utf16 => 0x0001_0109,
            WCharCodeSet::Ucs2 => 0x0001_0100,
        }
    }
    /// From an OSF registry id, if we support it.
    pub fn from_id(id: u32) -> Option<Self> {
        match id {
            0x0001_0109 => Some(WCharCodeSet::Utf16),
            0x0001_0100 => Some(WCharCodeSet::Ucs2),
            _ => None,
        }
    }
    /// Name used in errors.
    pub fn name(self) -> &'static str {
        match self {
            WCharCodeSet::Utf16 => "UTF-16",
            WCharCodeSet::Ucs2 => "UCS-2",
        }
    }
}

/// Which GIOP version's wchar rules apply. They differ in layout, not only
/// in legality, so the reader and writer must be told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WcharRules {
    /// GIOP 1.0: wchar and wstring are illegal.
    Giop10,
    /// GIOP 1.1: wchar is one 2-octet code unit aligned to 2 in stream
    /// order; wstring is a u32 count of code units including a NUL.
    Giop11,
    /// GIOP 1.2: wchar is an octet length then the octets; wstring is a u32
    /// octet length, no NUL; UTF-16 without BOM is big-endian.
    Giop12,
}

/// A GIOP protocol version, which is also the version of an IIOP profile
/// (an IOR carries it, so it lives here with the IOR's wire form).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Version {
    pub major: u8,
    pub minor: u8,
}

impl Version {
    pub const V1_0: Version = Version { major: 1, minor: 0 };
    pub const V1_1: Version = Version { major: 1, minor: 1 };
    pub const V1_2: Version = Version { major: 1, minor: 2 };

    /// A GIOP version we speak (1.0, 1.1, 1.2).
    pub fn new(major: u8, minor: u8) -> Result<Version, UnsupportedVersion> {
        if major == 1 && minor <= 2 {
            Ok(Version { major, minor })
        } else {
            Err(UnsupportedVersion { major, minor })
        }
    }

    /// Whether this is GIOP 1.2 (layouts with TargetAddress, 8-aligned bodies).
    pub fn is_12(self) -> bool {
        self.minor >= 2
    }

    /// The CDR wchar rules of this version.
    pub fn wchar_rules(self) -> WcharRules {
        match self.minor {
            0 => WcharRules::Giop10,
            1 => WcharRules::Giop11,
            _ => WcharRules::Giop12,
        }
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// A version other than 1.0, 1.1 and 1.2 ([`Version::new`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("unsupported GIOP version {major}.{minor}")]
pub struct UnsupportedVersion {
    pub major: u8,
    pub minor: u8,
}

/// Bounds that protect a decoder from hostile lengths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Largest number of bytes any single length field may ask for
    /// (sequence, string, encapsulation). Also bounded by the bytes left.
    pub max_len: usize,
    /// Deepest nesting of constructed types, values and TypeCodes.
    pub max_depth: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_len: 256 * 1024 * 1024,
            max_depth: 64,
        }
    }
}

/// The per-stream settings of a reader or writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Options {
    /// Code set for `char`/`string`.
    pub char_set: CharCodeSet,
    /// Code set for `wchar`/`wstring`; `None` when none was negotiated
    /// (using a wide character is then an error, as omniORB does).
    pub wchar_set: Option<WCharCodeSet>,
    /// GIOP-version wchar layout.
    pub wchar_rules: WcharRules,
    /// Hostile-input bounds.
    pub limits: Limits,
}

impl Default for Options {
    /// ISO-8859-1 and UTF-16 under GIOP 1.2 rules, default limits.
    fn default() -> Self {
        Options {
            char_set: CharCodeSet::Latin1,
            wchar_set: Some(WCharCodeSet::Utf16),
            wchar_rules: WcharRules::Giop12,
            limits: Limits::default(),
        }
    }
}
