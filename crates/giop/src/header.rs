//! The fixed 12-byte GIOP message header: magic, version, flags (byte order
//! and more-fragments; a byte-order boolean in 1.0), message type and the
//! size of what follows, in the header's byte order.

use iiop_cdr::ByteOrder;

use crate::error::{GiopError, Result};

/// Length of the GIOP header.
pub const HEADER_LEN: usize = 12;
/// Length of a GIOP 1.2 Fragment header (the common header plus request id).
pub const FRAGMENT_HEADER_LEN_12: usize = 16;
/// The magic.
pub const MAGIC: [u8; 4] = *b"GIOP";

/// A GIOP protocol version (also the IIOP profile version): defined in
/// `iiop-cdr` next to the IOR that carries it.
pub use iiop_cdr::Version;

/// The eight GIOP message types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum MsgType {
    Request = 0,
    Reply = 1,
    CancelRequest = 2,
    LocateRequest = 3,
    LocateReply = 4,
    CloseConnection = 5,
    MessageError = 6,
    /// GIOP 1.1 and later.
    Fragment = 7,
}

impl MsgType {
    /// From the header octet, given the version (Fragment needs 1.1+).
    pub fn from_u8(v: u8, version: Version) -> Result<MsgType> {
        Ok(match v {
            0 => MsgType::Request,
            1 => MsgType::Reply,
            2 => MsgType::CancelRequest,
            3 => MsgType::LocateRequest,
            4 => MsgType::LocateReply,
            5 => MsgType::CloseConnection,
            6 => MsgType::MessageError,
            7 if version.minor >= 1 => MsgType::Fragment,
            _ => {
                return Err(GiopError::UnknownMessageType {
                    msg_type: v,
                    minor: version.minor,
                })
            }
        })
    }

    /// The type's name as the spec spells it (`LocateReply`).
    pub fn name(self) -> &'static str {
        match self {
            MsgType::Request => "Request",
            MsgType::Reply => "Reply",
            MsgType::CancelRequest => "CancelRequest",
            MsgType::LocateRequest => "LocateRequest",
            MsgType::LocateReply => "LocateReply",
            MsgType::CloseConnection => "CloseConnection",
            MsgType::MessageError => "MessageError",
            MsgType::Fragment => "Fragment",
        }
    }

    /// What a message of this type answers: a Reply a Request, a
    /// LocateReply a LocateRequest (and must be in its version); `None`
    /// for the other types.
    pub fn answers(self) -> Option<MsgType> {
        match self {
            MsgType::Reply => Some(MsgType::Request),
            MsgType::LocateReply => Some(MsgType::LocateRequest),
            _ => None,
        }
    }

    /// Whether a message of this type may carry the more-fragments flag in
    /// `version` (1.1: Request/Reply; 1.2: also Locate*; Fragment itself).
    pub fn fragmentable(self, version: Version) -> bool {
        match self {
            MsgType::Request | MsgType::Reply | MsgType::Fragment => version.minor >= 1,
            MsgType::LocateRequest | MsgType::LocateReply => version.minor >= 2,
            _ => false,
        }
    }
}

/// A parsed GIOP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub version: Version,
    /// Byte order of the header's size and of the whole message.
    pub order: ByteOrder,
    /// Flags bit 1 (1.1+): more fragments follow.
    pub more_fragments: bool,
    pub msg_type: MsgType,
    /// Bytes after the header.
    pub size: u32,
}

impl Header {
    /// A header for a message of `size` bytes after the header.
    pub fn new(version: Version, order: ByteOrder, msg_type: MsgType, size: u32) -> Header {
        Header {
            version,
            order,
            more_fragments: false,
            msg_type,
            size,
        }
    }

    /// Parse the first 12 bytes of `buf` (which must hold at least 12).
    pub fn parse(buf: &[u8]) -> Result<Header> {
        let b: &[u8; HEADER_LEN] = buf
            .get(..HEADER_LEN)
            .and_then(|s| s.try_into().ok())
            .ok_or(GiopError::Cdr {
                what: "GIOP header",
                source: iiop_cdr::CdrError::Truncated {
                    offset: 0,
                    needed: HEADER_LEN,
                    available: buf.len(),
                },
            })?;
        if b[..4] != MAGIC {
            return Err(GiopError::BadMagic {
                found: [b[0], b[1], b[2], b[3]],
            });
        }
        let version = Version::new(b[4], b[5])?;
        let flags = b[6];
        let (order, more_fragments) = if version.minor == 0 {
            match flags {
                0 | 1 => (ByteOrder::from_flag(flags == 1), false),
                _ => return Err(GiopError::BadFlags { flags, minor: 0 }),
            }
        } else {
            if flags & !0x03 != 0 {
                return Err(GiopError::BadFlags {
                    flags,
                    minor: version.minor,
                });
            }
            (ByteOrder::from_flag(flags & 1 == 1), flags & 2 == 2)
        };
        let msg_type = MsgType::from_u8(b[7], version)?;
        if more_fragments && !msg_type.fragmentable(version) {
            return Err(GiopError::FragmentNotAllowed(
                "more-fragments flag on a message type that cannot be fragmented",
            ));
        }
        let raw = [b[8], b[9], b[10], b[11]];
        let size = match order {
            ByteOrder::Big => u32::from_be_bytes(raw),
            ByteOrder::Little => u32::from_le_bytes(raw),
        };
        Ok(Header {
            version,
            order,
            more_fragments,
            msg_type,
            size,
        })
    }

    /// The flags octet (byte 6).
    pub fn flags(&self) -> u8 {
        self.order.flag() | if self.more_fragments { 2 } else { 0 }
    }

    /// The 12 header bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let s = match self.order {
            ByteOrder::Big => self.size.to_be_bytes(),
            ByteOrder::Little => self.size.to_le_bytes(),
        };
        [
            b'G',
            b'I',
            b'O',
            b'P',
            self.version.major,
            self.version.minor,
            self.flags(),
            self.msg_type as u8,
            s[0],
            s[1],
            s[2],
            s[3],
        ]
    }

    /// Total length of the message: header plus size.
    pub fn total_len(&self) -> usize {
        HEADER_LEN + self.size as usize
    }
}

/// Overwrite the size field of the header starting at `buf[start]`.
pub(crate) fn patch_size(buf: &mut [u8], start: usize, order: ByteOrder, size: u32) {
    let b = match order {
        ByteOrder::Big => size.to_be_bytes(),
        ByteOrder::Little => size.to_le_bytes(),
    };
    buf[start + 8..start + 12].copy_from_slice(&b);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_writes_12_byte_header() {
        let b = [b'G', b'I', b'O', b'P', 1, 2, 3, 0, 0x20, 0, 0, 0];
        let h = Header::parse(&b).unwrap();
        assert_eq!(h.version, Version::V1_2);
        assert_eq!(h.order, ByteOrder::Little);
        assert!(h.more_fragments);
        assert_eq!(h.msg_type, MsgType::Request);
        assert_eq!(h.size, 32);
        assert_eq!(h.to_bytes(), b);
    }

    #[test]
    fn clear_errors() {
        assert_eq!(
            Header::parse(b"GIOQ\x01\x02\x00\x00\0\0\0\0"),
            Err(GiopError::BadMagic { found: *b"GIOQ" })
        );
        assert_eq!(
            Header::parse(b"GIOP\x01\x03\x00\x00\0\0\0\0"),
            Err(GiopError::UnsupportedVersion { major: 1, minor: 3 })
        );
        assert_eq!(
            Header::parse(b"GIOP\x01\x00\x00\x07\0\0\0\0"),
            Err(GiopError::UnknownMessageType {
                msg_type: 7,
                minor: 0
            })
        );
        assert_eq!(
            Header::parse(b"GIOP\x01\x02\x00\x08\0\0\0\0"),
            Err(GiopError::UnknownMessageType {
                msg_type: 8,
                minor: 2
            })
        );
        assert_eq!(
            Header::parse(b"GIOP\x01\x00\x02\x00\0\0\0\0"),
            Err(GiopError::BadFlags { flags: 2, minor: 0 })
        );
        assert_eq!(
            Header::parse(b"GIOP\x01\x02\x04\x00\0\0\0\0"),
            Err(GiopError::BadFlags { flags: 4, minor: 2 })
        );
        assert!(matches!(
            Header::parse(b"GIOP\x01\x02\x02\x05\0\0\0\0"),
            Err(GiopError::FragmentNotAllowed(_))
        ));
        assert!(matches!(
            Header::parse(b"GIOP\x01\x01\x02\x03\0\0\0\0"),
            Err(GiopError::FragmentNotAllowed(_))
        ));
        assert!(matches!(
            Header::parse(b"GIOP\x01"),
            Err(GiopError::Cdr { .. })
        ));
    }

    #[test]
    fn big_endian_size() {
        let h = Header::parse(b"GIOP\x01\x00\x00\x01\x00\x00\x01\x02").unwrap();
        assert_eq!(h.size, 258);
        assert_eq!(h.order, ByteOrder::Big);
        assert_eq!(h.total_len(), 270);
    }
}
