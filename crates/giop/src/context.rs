//! Service contexts (a list of (id, encapsulated bytes) that keeps unknown
//! entries), the typed CodeSets (1) and BI_DIR_IIOP (5) contexts, and code
//! set negotiation from an IOR's TAG_CODE_SETS component.

use bytes::{Bytes, BytesMut};
use iiop_cdr::{ByteOrder, CharCodeSet, Options, Reader, WCharCodeSet, Writer};

use crate::error::{GiopError, Result};
use crate::header::Version;

/// Service context id of CodeSets.
pub const SC_CODE_SETS: u32 = 1;
/// Service context id of BI_DIR_IIOP.
pub const SC_BI_DIR_IIOP: u32 = 5;
/// JacORB's ExceptionDetailMessage.
pub const SC_EXCEPTION_DETAIL_MESSAGE: u32 = 14;

/// One service context: its id and its (encapsulated) data, kept verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceContext {
    pub id: u32,
    pub data: Bytes,
}

/// A service context list in wire order; unknown entries are preserved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceContextList(pub Vec<ServiceContext>);

impl ServiceContextList {
    /// An empty list.
    pub fn new() -> Self {
        ServiceContextList(Vec::new())
    }

    /// Whether the list has no entries.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The first context with this id.
    pub fn get(&self, id: u32) -> Option<&ServiceContext> {
        self.0.iter().find(|c| c.id == id)
    }

    /// Append a context.
    pub fn push(&mut self, id: u32, data: Bytes) {
        self.0.push(ServiceContext { id, data });
    }

    /// The CodeSets context, decoded, if present.
    pub fn code_sets(&self) -> Result<Option<CodeSetContext>> {
        self.get(SC_CODE_SETS)
            .map(|c| CodeSetContext::decode(&c.data))
            .transpose()
    }

    /// The BI_DIR_IIOP context, decoded, if present.
    pub fn bi_dir(&self) -> Result<Option<BiDirIiop>> {
        self.get(SC_BI_DIR_IIOP)
            .map(|c| BiDirIiop::decode(&c.data))
            .transpose()
    }

    /// Decode `sequence<ServiceContext>`.
    pub fn decode(r: &mut Reader<'_>) -> Result<Self> {
        let n = r
            .read_len(8)
            .map_err(GiopError::cdr("service context count"))?;
        let mut v = Vec::with_capacity(n.min(16));
        for _ in 0..n {
            let id = r.read_u32().map_err(GiopError::cdr("service context id"))?;
            let data = r
                .read_octet_bytes()
                .map_err(GiopError::cdr("service context data"))?;
            v.push(ServiceContext { id, data });
        }
        Ok(ServiceContextList(v))
    }

    /// Encode `sequence<ServiceContext>`.
    pub fn encode(&self, w: &mut Writer<'_>) -> Result<()> {
        w.write_len(self.0.len())
            .map_err(GiopError::cdr("service context count"))?;
        for c in &self.0 {
            w.write_u32(c.id);
            w.write_octet_seq(&c.data)
                .map_err(GiopError::cdr("service context data"))?;
        }
        Ok(())
    }
}

/// The CodeSets service context: the transmission code sets the client
/// chose for this connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeSetContext {
    pub char_data: u32,
    pub wchar_data: u32,
}

impl CodeSetContext {
    /// Decode the encapsulated {u32 char, u32 wchar}.
    pub fn decode(data: &[u8]) -> Result<Self> {
        let mut r = encapsulation(data, "CodeSets context")?;
        let char_data = r.read_u32().map_err(GiopError::cdr("CodeSets char"))?;
        let wchar_data = r.read_u32().map_err(GiopError::cdr("CodeSets wchar"))?;
        Ok(CodeSetContext {
            char_data,
            wchar_data,
        })
    }

    /// Encode as an encapsulation in `order`.
    pub fn encode(&self, order: ByteOrder) -> Bytes {
        let mut buf = BytesMut::with_capacity(12);
        let mut w = Writer::new(&mut buf, order);
        w.write_u8(order.flag());
        w.write_u32(self.char_data);
        w.write_u32(self.wchar_data);
        buf.freeze()
    }

    /// The CDR options these code sets mean under `version`. Unsupported
    /// ids fall back to ISO-8859-1 for char and to no wchar at all.
    pub fn options(&self, version: Version) -> Options {
        Options {
            char_set: CharCodeSet::from_id(self.char_data).unwrap_or(CharCodeSet::Latin1),
            wchar_set: WCharCodeSet::from_id(self.wchar_data),
            wchar_rules: version.wchar_rules(),
            ..Options::default()
        }
    }
}

/// The code sets in force on one connection, as its server side holds
/// them (and an observer of the connection, which must read its messages
/// the way the server does): the first CodeSets context the client sends
/// fixes them for the connection's life. CORBA 3.0 §13.10.2.6: code sets
/// are negotiated once per connection, when the client first uses it, not
/// per request; §13.10.2.5 has the client send the context on its first
/// request. A later context naming other sets therefore changes nothing:
/// it is the client's error ([`offer`](Self::offer) says so).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnectionCodeSets(Option<CodeSetContext>);

impl ConnectionCodeSets {
    /// The code sets in force: the first context the client sent, if any.
    pub fn get(&self) -> Option<CodeSetContext> {
        self.0
    }

    /// A request carried the CodeSets context `sent`. The connection's
    /// first context fixes its code sets; a later one that names the same
    /// sets is harmless; one that names others is refused with the sets
    /// kept (`Err(kept)`), which stay in force.
    pub fn offer(&mut self, sent: CodeSetContext) -> std::result::Result<(), CodeSetContext> {
        match self.0 {
            Some(kept) if kept != sent => Err(kept),
            Some(_) => Ok(()),
            None => {
                self.0 = Some(sent);
                Ok(())
            }
        }
    }

    /// CDR options for a message of `version` on this connection: the
    /// code sets in force from GIOP 1.1 on; [`default_options`] in GIOP
    /// 1.0 (which negotiates none) or before any context.
    pub fn options(&self, version: Version) -> Options {
        match self.0 {
            Some(cs) if version.minor >= 1 => cs.options(version),
            _ => default_options(version),
        }
    }
}

/// Start reading an encapsulation held whole in `data` (byte-order octet
/// first): the reader is positioned after that octet.
pub(crate) fn encapsulation<'a>(data: &'a [u8], what: &'static str) -> Result<Reader<'a>> {
    Reader::encapsulation(data).map_err(GiopError::cdr(what))
}

/// BI_DIR_IIOP: the listen points a client offers for callbacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BiDirIiop {
    pub listen_points: Vec<(String, u16)>,
}

impl BiDirIiop {
    /// Decode the encapsulated `sequence<ListenPoint{string host; ushort port}>`.
    pub fn decode(data: &[u8]) -> Result<Self> {
        let mut r = encapsulation(data, "BI_DIR_IIOP context")?;
        let n = r.read_len(8).map_err(GiopError::cdr("BI_DIR_IIOP count"))?;
        let mut listen_points = Vec::with_capacity(n.min(16));
        for _ in 0..n {
            let host = r
                .read_string()
                .map_err(GiopError::cdr("BI_DIR_IIOP host"))?;
            let port = r.read_u16().map_err(GiopError::cdr("BI_DIR_IIOP port"))?;
            listen_points.push((host, port));
        }
        Ok(BiDirIiop { listen_points })
    }

    /// Encode as an encapsulation in `order` (CORBA 3.0, 15.8:
    /// `BiDirIIOPServiceContext { ListenPointList listen_points; }`).
    pub fn encode(&self, order: ByteOrder) -> Result<Bytes> {
        let mut buf = BytesMut::with_capacity(16 + 16 * self.listen_points.len());
        let mut w = Writer::new(&mut buf, order);
        w.write_u8(order.flag());
        w.write_len(self.listen_points.len())
            .map_err(GiopError::cdr("BI_DIR_IIOP count"))?;
        for (host, port) in &self.listen_points {
            w.write_string(host)
                .map_err(GiopError::cdr("BI_DIR_IIOP host"))?;
            w.write_u16(*port);
        }
        Ok(buf.freeze())
    }

    /// The BI_DIR_IIOP service context (id 5) offering these listen points.
    pub fn context(&self, order: ByteOrder) -> Result<ServiceContext> {
        Ok(ServiceContext {
            id: SC_BI_DIR_IIOP,
            data: self.encode(order)?,
        })
    }

    /// Whether `host:port` is one of the listen points (hosts compared
    /// without regard to case, as DNS names are).
    pub fn lists(&self, host: &str, port: u16) -> bool {
        self.listen_points
            .iter()
            .any(|(h, p)| *p == port && h.eq_ignore_ascii_case(host))
    }
}

/// TAG_CODE_SETS, part of the IOR's wire form in `iiop-cdr`.
pub use iiop_cdr::ior::{CodeSetComponent, CodeSetComponentInfo};

/// The outcome of code set negotiation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Negotiated {
    /// What to send in the CodeSets context.
    pub context: CodeSetContext,
    /// The CDR options for the connection.
    pub options: Options,
}

/// Client-side code set negotiation (CORBA 3 §13.10.2.6) against the
/// server's TAG_CODE_SETS, with our sets: char ISO-8859-1 (native) and
/// UTF-8; wchar UTF-16 (native) and UCS-2.
///
/// Per set: the server's native set if we support it; else our native set
/// if the server lists it as a conversion set; else the first of the
/// server's conversion sets we support; else the fallback (UTF-8 for char,
/// UTF-16 for wchar), as the spec prescribes. A server with no wchar
/// information (native 0 and no conversion sets) gets wchar 0: wide
/// characters are then refused, as omniORB does.
pub fn negotiate(server: &CodeSetComponentInfo, version: Version) -> Negotiated {
    fn pick(s: &CodeSetComponent, ours: &[u32], fallback: u32) -> u32 {
        if ours.contains(&s.native) {
            return s.native;
        }
        if s.conversion.contains(&ours[0]) {
            return ours[0];
        }
        s.conversion
            .iter()
            .copied()
            .find(|c| ours.contains(c))
            .unwrap_or(fallback)
    }
    let char_data = pick(
        &server.for_char,
        &[CharCodeSet::Latin1.id(), CharCodeSet::Utf8.id()],
        CharCodeSet::Utf8.id(),
    );
    let wchar_data = if server.for_wchar.native == 0 && server.for_wchar.conversion.is_empty() {
        0
    } else {
        pick(
            &server.for_wchar,
            &[WCharCodeSet::Utf16.id(), WCharCodeSet::Ucs2.id()],
            WCharCodeSet::Utf16.id(),
        )
    };
    let context = CodeSetContext {
        char_data,
        wchar_data,
    };
    Negotiated {
        context,
        options: context.options(version),
    }
}

/// CDR options for a connection without code set negotiation: ISO-8859-1
/// and no wchar (GIOP 1.0 has none; omniORB refuses wchar without one).
pub fn default_options(version: Version) -> Options {
    Options {
        char_set: CharCodeSet::Latin1,
        wchar_set: None,
        wchar_rules: version.wchar_rules(),
        ..Options::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_sets_context_little_endian_bytes() {
        let c = CodeSetContext {
            char_data: 0x0001_0001,
            wchar_data: 0x0001_0109,
        };
        let b = c.encode(ByteOrder::Little);
        assert_eq!(&b[..], &[1, 0, 0, 0, 1, 0, 1, 0, 9, 1, 1, 0]);
        assert_eq!(CodeSetContext::decode(&b).unwrap(), c);
    }

    /// BiDirIIOPServiceContext, big-endian, one listen point 127.0.0.1:2809:
    /// byte order, pad, count 1, string length 10 + "127.0.0.1\0", port.
    #[test]
    fn bi_dir_context_big_endian_bytes() {
        let c = BiDirIiop {
            listen_points: vec![("127.0.0.1".into(), 2809)],
        };
        let sc = c.context(ByteOrder::Big).unwrap();
        assert_eq!(sc.id, 5);
        let mut want = vec![0u8, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 10];
        want.extend_from_slice(b"127.0.0.1\0");
        want.extend_from_slice(&[0x0a, 0xf9]);
        assert_eq!(&sc.data[..], &want[..]);
        assert_eq!(BiDirIiop::decode(&sc.data).unwrap(), c);
        assert!(c.lists("127.0.0.1", 2809));
        assert!(!c.lists("127.0.0.1", 2810));
        let le = c.encode(ByteOrder::Little).unwrap();
        assert_eq!(BiDirIiop::decode(&le).unwrap(), c);
    }

    /// The first context a connection carries wins; the same one again is
    /// harmless; another is refused and changes nothing; GIOP 1.0 reads
    /// with the defaults whatever was sent.
    #[test]
    fn the_first_code_sets_context_of_a_connection_stays_in_force() {
        let utf8 = CodeSetContext {
            char_data: CharCodeSet::Utf8.id(),
            wchar_data: WCharCodeSet::Utf16.id(),
        };
        let latin1 = CodeSetContext {
            char_data: CharCodeSet::Latin1.id(),
            wchar_data: WCharCodeSet::Ucs2.id(),
        };
        let mut cs = ConnectionCodeSets::default();
        assert_eq!(cs.get(), None);
        assert_eq!(cs.options(Version::V1_2), default_options(Version::V1_2));
        assert_eq!(cs.offer(utf8), Ok(()));
        assert_eq!(cs.offer(utf8), Ok(()));
        assert_eq!(cs.offer(latin1), Err(utf8));
        assert_eq!(cs.get(), Some(utf8));
        assert_eq!(cs.options(Version::V1_1).char_set, CharCodeSet::Utf8);
        assert_eq!(
            cs.options(Version::V1_2).wchar_set,
            Some(WCharCodeSet::Utf16)
        );
        assert_eq!(cs.options(Version::V1_0), default_options(Version::V1_0));
    }

    #[test]
    fn negotiation_picks_server_native_then_conversions_then_fallback() {
        let omni = CodeSetComponentInfo {
            for_char: CodeSetComponent {
                native: 0x0001_0001,
                conversion: vec![0x0501_0001],
            },
            for_wchar: CodeSetComponent {
                native: 0x0001_0109,
                conversion: vec![],
            },
        };
        let n = negotiate(&omni, Version::V1_2);
        assert_eq!(n.context.char_data, 0x0001_0001);
        assert_eq!(n.context.wchar_data, 0x0001_0109);
        assert_eq!(n.options.wchar_set, Some(WCharCodeSet::Utf16));
        // A JacORB-like server with native UTF-8.
        let jac = CodeSetComponentInfo {
            for_char: CodeSetComponent {
                native: 0x0501_0001,
                conversion: vec![0x0001_0001],
            },
            for_wchar: CodeSetComponent {
                native: 0x0001_0100,
                conversion: vec![],
            },
        };
        let n = negotiate(&jac, Version::V1_1);
        assert_eq!(n.options.char_set, CharCodeSet::Utf8);
        assert_eq!(n.options.wchar_set, Some(WCharCodeSet::Ucs2));
        // Something we do not know at all: fall back.
        let odd = CodeSetComponentInfo {
            for_char: CodeSetComponent {
                native: 0x0002_0001,
                conversion: vec![],
            },
            for_wchar: CodeSetComponent::default(),
        };
        let n = negotiate(&odd, Version::V1_2);
        assert_eq!(n.context.char_data, 0x0501_0001);
        assert_eq!(n.context.wchar_data, 0);
        assert_eq!(n.options.wchar_set, None);
    }

    #[test]
    fn bi_dir_listen_points() {
        // Big-endian encapsulation: 1 listen point "h", port 7.
        let data = [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, b'h', 0, 0, 7];
        assert_eq!(
            BiDirIiop::decode(&data).unwrap(),
            BiDirIiop {
                listen_points: vec![("h".to_string(), 7)]
            }
        );
        let mut l = ServiceContextList::new();
        l.push(SC_BI_DIR_IIOP, Bytes::copy_from_slice(&data));
        l.push(99, Bytes::from_static(b"kept"));
        assert_eq!(l.bi_dir().unwrap().unwrap().listen_points.len(), 1);
        assert_eq!(&l.get(99).unwrap().data[..], b"kept");
        assert_eq!(l.code_sets(), Ok(None));
        assert!(BiDirIiop::decode(&data[..14]).is_err());
    }
}
