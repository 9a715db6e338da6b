//! Interoperable Object References, the one IOR type of the workspace:
//! its CDR encoding (type id + tagged profiles), its stringified `IOR:`
//! hex form (either byte order inside the encapsulation), IIOP profile
//! bodies 1.0–1.2, tagged components (TAG_ORB_TYPE, TAG_CODE_SETS,
//! TAG_ALTERNATE_IIOP_ADDRESS decoded; others kept opaque),
//! TAG_MULTIPLE_COMPONENTS profiles, and a builder for the IORs our server
//! hands out.
//!
//! The same [`Ior`] is what a dynamic [`Value::ObjRef`](crate::Value)
//! holds and what `iiop-giop` re-exports for messages, forwarding and
//! textual references, so nothing converts between IOR types.
//!
//! Profiles and components are kept as raw bytes and decoded on demand, so
//! an IOR prints back exactly as it was read.

use std::fmt;
use std::str::FromStr;

use bytes::{Bytes, BytesMut};

use crate::error::CdrError;
use crate::options::{ByteOrder, CharCodeSet, Version, WCharCodeSet};
use crate::reader::Reader;
use crate::writer::Writer;

/// Profile tag of IIOP.
pub const TAG_INTERNET_IOP: u32 = 0;
/// Profile tag of a bare list of components.
pub const TAG_MULTIPLE_COMPONENTS: u32 = 1;
/// Component tags.
pub const TAG_ORB_TYPE: u32 = 0;
pub const TAG_CODE_SETS: u32 = 1;
pub const TAG_ALTERNATE_IIOP_ADDRESS: u32 = 3;

/// The ORB type our own IORs carry: "IIOP" in ASCII. Not an OMG-assigned
/// vendor id (none was requested); chosen so it cannot collide with the
/// omniORB/JacORB/TAO values, whose low octet is 0.
pub const ORB_TYPE_IIOPBENCH: u32 = 0x4949_4F50;

/// What went wrong decoding or encoding an IOR, a profile or a component.
/// The messages are those `iiop-giop`'s `GiopError` has for the same
/// failures (it converts from this one variant for variant).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IorError {
    /// A CDR failure; `what` names the field.
    #[error("{what}: {source}")]
    Cdr {
        what: &'static str,
        #[source]
        source: CdrError,
    },
    /// An IIOP profile whose major version is not 1.
    #[error("unsupported IIOP profile version {major}.{minor}")]
    UnsupportedVersion { major: u8, minor: u8 },
    /// Malformed stringified text, or a field the wire form cannot carry.
    #[error("bad {what}: {reason}")]
    BadReference { what: &'static str, reason: String },
}

impl IorError {
    /// Wrap a CDR error with the name of the field being decoded.
    pub fn cdr(what: &'static str) -> impl FnOnce(CdrError) -> IorError {
        move |source| IorError::Cdr { what, source }
    }

    /// A malformed-reference error.
    pub fn reference(what: &'static str, reason: impl Into<String>) -> IorError {
        IorError::BadReference {
            what,
            reason: reason.into(),
        }
    }
}

/// For dynamic values: a CDR failure keeps its offset (the field name is
/// dropped, as for every other value); the rest become a message.
impl From<IorError> for CdrError {
    fn from(e: IorError) -> CdrError {
        match e {
            IorError::Cdr { source, .. } => source,
            other => CdrError::Message(other.to_string()),
        }
    }
}

/// Shorthand for this module.
pub type Result<T, E = IorError> = std::result::Result<T, E>;

/// A reader over an encapsulation held whole in `data`, errors named by
/// `what`.
pub fn encapsulation<'a>(data: &'a [u8], what: &'static str) -> Result<Reader<'a>> {
    Reader::encapsulation(data).map_err(IorError::cdr(what))
}

/// An IOR: repository id and tagged profiles.
///
/// Equality compares the type id and the profiles, not [`order`](Self::order):
/// the same reference carried in either byte order is the same value (as
/// every other dynamic value is), though it prints back in the order read.
#[derive(Debug, Clone, Eq)]
pub struct Ior {
    pub type_id: String,
    pub profiles: Vec<TaggedProfile>,
    /// Byte order of the stringified form's encapsulation (kept so the
    /// IOR prints back as read); for an IOR read from a message, that
    /// message's order.
    pub order: ByteOrder,
}

impl PartialEq for Ior {
    fn eq(&self, other: &Ior) -> bool {
        self.type_id == other.type_id && self.profiles == other.profiles
    }
}

impl Default for Ior {
    /// The nil reference.
    fn default() -> Ior {
        Ior::nil()
    }
}

/// One tagged profile, its body kept verbatim (an encapsulation for the
/// standard tags).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaggedProfile {
    pub tag: u32,
    pub data: Bytes,
}

/// One tagged component, its body kept verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaggedComponent {
    pub tag: u32,
    pub data: Bytes,
}

/// A decoded component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Component {
    OrbType(u32),
    CodeSets(CodeSetComponentInfo),
    AlternateAddress { host: String, port: u16 },
    Other(TaggedComponent),
}

/// One half of TAG_CODE_SETS: a native code set and conversion code sets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct CodeSetComponent {
    pub native: u32,
    pub conversion: Vec<u32>,
}

/// The TAG_CODE_SETS component of an IOR profile.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct CodeSetComponentInfo {
    pub for_char: CodeSetComponent,
    pub for_wchar: CodeSetComponent,
}

impl CodeSetComponentInfo {
    /// What our own IORs advertise: char native ISO-8859-1 with UTF-8 as
    /// conversion; wchar native UTF-16 with UCS-2 as conversion.
    pub fn ours() -> Self {
        CodeSetComponentInfo {
            for_char: CodeSetComponent {
                native: CharCodeSet::Latin1.id(),
                conversion: vec![CharCodeSet::Utf8.id()],
            },
            for_wchar: CodeSetComponent {
                native: WCharCodeSet::Utf16.id(),
                conversion: vec![WCharCodeSet::Ucs2.id()],
            },
        }
    }

    /// Decode from a component body (an encapsulation).
    pub fn decode(data: &[u8]) -> Result<Self> {
        let mut r = encapsulation(data, "TAG_CODE_SETS")?;
        let one = |r: &mut Reader<'_>| -> Result<CodeSetComponent> {
            let native = r
                .read_u32()
                .map_err(IorError::cdr("TAG_CODE_SETS native"))?;
            let conversion = r
                .read_seq::<u32>()
                .map_err(IorError::cdr("TAG_CODE_SETS conversion"))?;
            Ok(CodeSetComponent { native, conversion })
        };
        let for_char = one(&mut r)?;
        let for_wchar = one(&mut r)?;
        Ok(CodeSetComponentInfo {
            for_char,
            for_wchar,
        })
    }

    /// Encode as a component body (an encapsulation in `order`).
    pub fn encode(&self, order: ByteOrder) -> Bytes {
        let mut buf = BytesMut::new();
        let mut w = Writer::new(&mut buf, order);
        w.write_u8(order.flag());
        for c in [&self.for_char, &self.for_wchar] {
            w.write_u32(c.native);
            // A u32 count of u32s cannot overflow a u32 length here.
            let _ = w.write_seq(&c.conversion);
        }
        buf.freeze()
    }
}

/// Where an IOR carried its TAG_CODE_SETS component: the spec allows it in
/// the IIOP profile's components or in a TAG_MULTIPLE_COMPONENTS profile
/// of the same IOR (Combat 0.8.1 puts it there).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CodeSetsSource {
    /// The components of the IIOP profile.
    IiopProfile,
    /// A TAG_MULTIPLE_COMPONENTS profile.
    MultipleComponents,
}

impl CodeSetsSource {
    /// `IIOP profile` / `TAG_MULTIPLE_COMPONENTS profile`, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            CodeSetsSource::IiopProfile => "IIOP profile",
            CodeSetsSource::MultipleComponents => "TAG_MULTIPLE_COMPONENTS profile",
        }
    }
}

impl fmt::Display for CodeSetsSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// A decoded IIOP profile body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IiopProfile {
    /// IIOP version of the profile (1.0 has no components).
    pub version: Version,
    pub host: String,
    pub port: u16,
    pub object_key: Bytes,
    pub components: Vec<TaggedComponent>,
    /// Byte order of the profile's encapsulation.
    pub order: ByteOrder,
}

impl TaggedComponent {
    /// Decode the known component kinds.
    pub fn decode(&self) -> Result<Component> {
        Ok(match self.tag {
            TAG_ORB_TYPE => {
                let mut r = encapsulation(&self.data, "TAG_ORB_TYPE")?;
                Component::OrbType(r.read_u32().map_err(IorError::cdr("TAG_ORB_TYPE"))?)
            }
            TAG_CODE_SETS => Component::CodeSets(CodeSetComponentInfo::decode(&self.data)?),
            TAG_ALTERNATE_IIOP_ADDRESS => {
                let mut r = encapsulation(&self.data, "TAG_ALTERNATE_IIOP_ADDRESS")?;
                let host = r
                    .read_string()
                    .map_err(IorError::cdr("alternate address host"))?;
                let port = r
                    .read_u16()
                    .map_err(IorError::cdr("alternate address port"))?;
                Component::AlternateAddress { host, port }
            }
            _ => Component::Other(self.clone()),
        })
    }

    /// Encode a typed component in `order`.
    pub fn from_component(c: &Component, order: ByteOrder) -> TaggedComponent {
        let mut buf = BytesMut::new();
        let mut w = Writer::new(&mut buf, order);
        let tag = match c {
            Component::Other(t) => return t.clone(),
            Component::CodeSets(info) => {
                return TaggedComponent {
                    tag: TAG_CODE_SETS,
                    data: info.encode(order),
                }
            }
            Component::OrbType(t) => {
                w.write_u8(order.flag());
                w.write_u32(*t);
                TAG_ORB_TYPE
            }
            Component::AlternateAddress { host, port } => {
                w.write_u8(order.flag());
                // Host names are ASCII; a length over 4 GiB cannot happen.
                let _ = w.write_string_bytes(host.as_bytes());
                w.write_u16(*port);
                TAG_ALTERNATE_IIOP_ADDRESS
            }
        };
        TaggedComponent {
            tag,
            data: buf.freeze(),
        }
    }
}

/// Decode `sequence<TaggedComponent>`.
fn decode_components(r: &mut Reader<'_>) -> Result<Vec<TaggedComponent>> {
    let n = r.read_len(8).map_err(IorError::cdr("component count"))?;
    let mut v = Vec::with_capacity(n.min(16));
    for _ in 0..n {
        let tag = r.read_u32().map_err(IorError::cdr("component tag"))?;
        let data = r
            .read_octet_bytes()
            .map_err(IorError::cdr("component data"))?;
        v.push(TaggedComponent { tag, data });
    }
    Ok(v)
}

/// Encode `sequence<TaggedComponent>`.
fn encode_components(w: &mut Writer<'_>, comps: &[TaggedComponent]) {
    let _ = w.write_len(comps.len());
    for c in comps {
        w.write_u32(c.tag);
        let _ = w.write_octet_seq(&c.data);
    }
}

impl IiopProfile {
    /// A 1.2 profile with our ORB type and code sets.
    pub fn new(host: impl Into<String>, port: u16, key: impl Into<Bytes>) -> IiopProfile {
        let order = ByteOrder::Big;
        IiopProfile {
            version: Version::V1_2,
            host: host.into(),
            port,
            object_key: key.into(),
            components: vec![
                TaggedComponent::from_component(&Component::OrbType(ORB_TYPE_IIOPBENCH), order),
                TaggedComponent::from_component(
                    &Component::CodeSets(CodeSetComponentInfo::ours()),
                    order,
                ),
            ],
            order,
        }
    }

    /// Decode a TAG_INTERNET_IOP profile body (the host as ISO 8859-1).
    pub fn decode(data: &[u8]) -> Result<IiopProfile> {
        let mut r = encapsulation(data, "IIOP profile")?;
        let order = r.order();
        let major = r.read_u8().map_err(IorError::cdr("IIOP version"))?;
        let minor = r.read_u8().map_err(IorError::cdr("IIOP version"))?;
        if major != 1 {
            return Err(IorError::UnsupportedVersion { major, minor });
        }
        let host = r.read_string().map_err(IorError::cdr("IIOP host"))?;
        let port = r.read_u16().map_err(IorError::cdr("IIOP port"))?;
        let object_key = r
            .read_octet_bytes()
            .map_err(IorError::cdr("IIOP object key"))?;
        let components = if minor >= 1 {
            decode_components(&mut r)?
        } else {
            Vec::new()
        };
        Ok(IiopProfile {
            version: Version { major, minor },
            host,
            port,
            object_key,
            components,
            order,
        })
    }

    /// Encode as a profile body (an encapsulation in `self.order`).
    pub fn encode(&self) -> Bytes {
        let mut buf = BytesMut::new();
        let mut w = Writer::new(&mut buf, self.order);
        w.write_u8(self.order.flag());
        w.write_u8(self.version.major);
        w.write_u8(self.version.minor);
        // Decoded as ISO 8859-1 (one char per byte), so encoded so; a host
        // beyond Latin-1 (not a real host name) goes out as UTF-8.
        let host = latin1(&self.host).unwrap_or_else(|| self.host.as_bytes().to_vec());
        let _ = w.write_string_bytes(&host);
        w.write_u16(self.port);
        let _ = w.write_octet_seq(&self.object_key);
        if self.version.minor >= 1 {
            encode_components(&mut w, &self.components);
        }
        buf.freeze()
    }

    /// As a tagged profile.
    pub fn to_tagged(&self) -> TaggedProfile {
        TaggedProfile {
            tag: TAG_INTERNET_IOP,
            data: self.encode(),
        }
    }

    /// The decoded components (undecodable ones are skipped).
    pub fn decoded_components(&self) -> impl Iterator<Item = Component> + '_ {
        self.components.iter().filter_map(|c| c.decode().ok())
    }

    /// TAG_ORB_TYPE, if present.
    pub fn orb_type(&self) -> Option<u32> {
        self.decoded_components().find_map(|c| match c {
            Component::OrbType(t) => Some(t),
            _ => None,
        })
    }

    /// TAG_CODE_SETS among this profile's own components, if present.
    /// To negotiate, use [`Ior::code_sets`], which also looks in the
    /// IOR's TAG_MULTIPLE_COMPONENTS profiles.
    pub fn code_sets(&self) -> Option<CodeSetComponentInfo> {
        self.decoded_components().find_map(|c| match c {
            Component::CodeSets(i) => Some(i),
            _ => None,
        })
    }

    /// TAG_ALTERNATE_IIOP_ADDRESS entries.
    pub fn alternate_addresses(&self) -> Vec<(String, u16)> {
        self.decoded_components()
            .filter_map(|c| match c {
                Component::AlternateAddress { host, port } => Some((host, port)),
                _ => None,
            })
            .collect()
    }
}

impl TaggedProfile {
    /// The IIOP profile, if this is one.
    pub fn iiop(&self) -> Option<Result<IiopProfile>> {
        (self.tag == TAG_INTERNET_IOP).then(|| IiopProfile::decode(&self.data))
    }

    /// The components of a TAG_MULTIPLE_COMPONENTS profile.
    pub fn multiple_components(&self) -> Option<Result<Vec<TaggedComponent>>> {
        (self.tag == TAG_MULTIPLE_COMPONENTS).then(|| {
            let mut r = encapsulation(&self.data, "TAG_MULTIPLE_COMPONENTS")?;
            decode_components(&mut r)
        })
    }

    /// A TAG_MULTIPLE_COMPONENTS profile holding `comps` (an
    /// encapsulation in `order`).
    pub fn from_components(comps: &[TaggedComponent], order: ByteOrder) -> TaggedProfile {
        let mut buf = BytesMut::new();
        let mut w = Writer::new(&mut buf, order);
        w.write_u8(order.flag());
        encode_components(&mut w, comps);
        TaggedProfile {
            tag: TAG_MULTIPLE_COMPONENTS,
            data: buf.freeze(),
        }
    }

    /// The object key of an IIOP profile.
    pub fn object_key(&self) -> Option<Bytes> {
        self.iiop()?.ok().map(|p| p.object_key)
    }

    /// Decode from CDR (u32 tag, `sequence<octet>`).
    pub fn decode(r: &mut Reader<'_>) -> Result<TaggedProfile> {
        let tag = r.read_u32().map_err(IorError::cdr("profile tag"))?;
        let data = r
            .read_octet_bytes()
            .map_err(IorError::cdr("profile data"))?;
        Ok(TaggedProfile { tag, data })
    }

    /// Encode as CDR.
    pub fn encode(&self, w: &mut Writer<'_>) -> Result<()> {
        w.write_u32(self.tag);
        w.write_octet_seq(&self.data)
            .map_err(IorError::cdr("profile data"))
    }
}

impl Ior {
    /// The nil reference: an empty type id and no profiles.
    pub fn nil() -> Ior {
        Ior::new("", Vec::new())
    }

    /// An IOR with these profiles.
    pub fn new(type_id: impl Into<String>, profiles: Vec<TaggedProfile>) -> Ior {
        Ior {
            type_id: type_id.into(),
            profiles,
            order: ByteOrder::Big,
        }
    }

    /// An IOR with one IIOP 1.2 profile carrying our ORB type and code sets.
    pub fn iiop(type_id: impl Into<String>, host: &str, port: u16, key: impl Into<Bytes>) -> Ior {
        Ior::new(type_id, vec![IiopProfile::new(host, port, key).to_tagged()])
    }

    /// A builder.
    pub fn builder(type_id: impl Into<String>) -> IorBuilder {
        IorBuilder {
            type_id: type_id.into(),
            profiles: Vec::new(),
            order: ByteOrder::Big,
            code_sets_in: CodeSetsSource::IiopProfile,
        }
    }

    /// Whether this is a nil reference: one with no profiles, whatever its
    /// type id (nothing can be invoked on it). [`Ior::nil`] also has an
    /// empty type id, as the spec writes a nil reference.
    pub fn is_nil(&self) -> bool {
        self.profiles.is_empty()
    }

    /// The first IIOP profile that decodes.
    pub fn iiop_profile(&self) -> Option<IiopProfile> {
        self.profiles
            .iter()
            .find_map(|p| p.iiop().and_then(|r| r.ok()))
    }

    /// The code sets to negotiate with the object: TAG_CODE_SETS from the
    /// components of the IIOP profile [`iiop_profile`](Self::iiop_profile)
    /// picks, else from the first TAG_MULTIPLE_COMPONENTS profile that
    /// has one (undecodable profiles and components are skipped), with
    /// where it was found.
    pub fn code_sets(&self) -> Option<(CodeSetComponentInfo, CodeSetsSource)> {
        if let Some(cs) = self.iiop_profile().and_then(|p| p.code_sets()) {
            return Some((cs, CodeSetsSource::IiopProfile));
        }
        self.profiles.iter().find_map(|p| {
            let comps = p.multiple_components()?.ok()?;
            comps.iter().find_map(|c| match c.decode() {
                Ok(Component::CodeSets(cs)) => Some((cs, CodeSetsSource::MultipleComponents)),
                _ => None,
            })
        })
    }

    /// Decode from CDR (string type_id, `sequence<TaggedProfile>`).
    pub fn decode(r: &mut Reader<'_>) -> Result<Ior> {
        // Repository ids are ISO 8859-1 whatever code sets a connection
        // negotiated (the IOR exists before any negotiation): one char per
        // byte, so decode and encode round-trip (found by fuzzing).
        let type_id = r
            .read_string_bytes()
            .map_err(IorError::cdr("IOR type id"))?
            .iter()
            .map(|&b| b as char)
            .collect();
        let n = r.read_len(8).map_err(IorError::cdr("IOR profile count"))?;
        let mut profiles = Vec::with_capacity(n.min(16));
        for _ in 0..n {
            profiles.push(TaggedProfile::decode(r)?);
        }
        Ok(Ior {
            type_id,
            profiles,
            order: r.order(),
        })
    }

    /// Encode as CDR (in the writer's order, whatever [`order`](Self::order) says).
    pub fn encode(&self, w: &mut Writer<'_>) -> Result<()> {
        let id = latin1(&self.type_id)
            .ok_or_else(|| IorError::reference("IOR type id", "not ISO 8859-1"))?;
        w.write_string_bytes(&id)
            .map_err(IorError::cdr("IOR type id"))?;
        w.write_len(self.profiles.len())
            .map_err(IorError::cdr("IOR profile count"))?;
        for p in &self.profiles {
            p.encode(w)?;
        }
        Ok(())
    }

    /// The encapsulation (in [`order`](Self::order)) the stringified form
    /// is the hex of.
    pub fn to_encapsulation(&self) -> Bytes {
        let mut buf = BytesMut::new();
        let mut w = Writer::new(&mut buf, self.order);
        w.write_u8(self.order.flag());
        let _ = self.encode(&mut w);
        buf.freeze()
    }

    /// Decode the encapsulation the stringified form is the hex of.
    pub fn from_encapsulation(data: &[u8]) -> Result<Ior> {
        Ior::decode(&mut encapsulation(data, "IOR")?)
    }
}

/// The stringified form: `IOR:` and the encapsulation in lower-case hex.
impl fmt::Display for Ior {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("IOR:")?;
        for b in self.to_encapsulation().iter() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// Parse the stringified form (`IOR:` in any case, hex digits in any case,
/// surrounding white space ignored).
impl FromStr for Ior {
    type Err = IorError;

    fn from_str(s: &str) -> Result<Ior> {
        let s = s.trim();
        let hex = match s.get(..4) {
            Some(p) if p.eq_ignore_ascii_case("IOR:") => &s[4..],
            _ => return Err(IorError::reference("IOR", "does not start with IOR:")),
        };
        if hex.len() % 2 != 0 {
            return Err(IorError::reference("IOR", "odd number of hex digits"));
        }
        let mut bytes = Vec::with_capacity(hex.len() / 2);
        for (i, pair) in hex.as_bytes().chunks_exact(2).enumerate() {
            let d = |c: u8| (c as char).to_digit(16);
            match (d(pair[0]), d(pair[1])) {
                (Some(h), Some(l)) => bytes.push((h * 16 + l) as u8),
                _ => {
                    return Err(IorError::reference(
                        "IOR",
                        format!("bad hex digit at character {}", 4 + 2 * i),
                    ))
                }
            }
        }
        Ior::from_encapsulation(&bytes)
    }
}

/// Builds IORs with IIOP profiles.
#[derive(Debug, Clone)]
pub struct IorBuilder {
    type_id: String,
    profiles: Vec<TaggedProfile>,
    order: ByteOrder,
    code_sets_in: CodeSetsSource,
}

impl IorBuilder {
    /// Byte order of the stringified encapsulation.
    pub fn order(mut self, order: ByteOrder) -> Self {
        self.order = order;
        self
    }

    /// Add an IIOP profile (build it with [`IiopProfile::new`] and adjust
    /// its fields: version, components, order).
    pub fn profile(mut self, p: &IiopProfile) -> Self {
        self.profiles.push(p.to_tagged());
        self
    }

    /// Add an IIOP 1.2 profile with our ORB type and code sets, plus
    /// TAG_ALTERNATE_IIOP_ADDRESS for each of `alternates`.
    pub fn iiop(
        mut self,
        host: &str,
        port: u16,
        key: impl Into<Bytes>,
        alternates: &[(&str, u16)],
    ) -> Self {
        let mut p = IiopProfile::new(host, port, key);
        for (h, port) in alternates {
            p.components.push(TaggedComponent::from_component(
                &Component::AlternateAddress {
                    host: (*h).to_owned(),
                    port: *port,
                },
                p.order,
            ));
        }
        self.profiles.push(p.to_tagged());
        self
    }

    /// Add any profile.
    pub fn tagged(mut self, p: TaggedProfile) -> Self {
        self.profiles.push(p);
        self
    }

    /// Where the IIOP profiles' TAG_CODE_SETS go: left in each profile
    /// (the default, what omniORB, JacORB and TAO do), or moved, at
    /// [`build`](Self::build), into one TAG_MULTIPLE_COMPONENTS profile
    /// after the others (what Combat does; the spec allows both).
    pub fn code_sets_in(mut self, at: CodeSetsSource) -> Self {
        self.code_sets_in = at;
        self
    }

    /// The IOR.
    pub fn build(self) -> Ior {
        let mut profiles = self.profiles;
        if self.code_sets_in == CodeSetsSource::MultipleComponents {
            let mut moved: Vec<TaggedComponent> = Vec::new();
            for tp in profiles.iter_mut() {
                let Some(Ok(mut ip)) = tp.iiop() else {
                    continue;
                };
                let before = ip.components.len();
                for c in ip.components.iter().filter(|c| c.tag == TAG_CODE_SETS) {
                    if !moved.contains(c) {
                        moved.push(c.clone());
                    }
                }
                ip.components.retain(|c| c.tag != TAG_CODE_SETS);
                if ip.components.len() != before {
                    *tp = ip.to_tagged();
                }
            }
            if !moved.is_empty() {
                profiles.push(TaggedProfile::from_components(&moved, self.order));
            }
        }
        Ior {
            type_id: self.type_id,
            profiles,
            order: self.order,
        }
    }
}

/// `s` as ISO 8859-1 bytes, if every char fits in one (repository ids and
/// host names go on the wire so, whatever code sets were negotiated).
pub fn latin1(s: &str) -> Option<Vec<u8>> {
    s.chars().map(|c| u8::try_from(c).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_ior_round_trips_through_text() {
        let ior = Ior::builder("IDL:Bench/Perf:1.0")
            .iiop("127.0.0.1", 2809, &b"Bench"[..], &[("10.0.0.1", 7)])
            .build();
        let s = ior.to_string();
        assert!(s.starts_with("IOR:000000000000001349444c3a"), "{s}");
        let back: Ior = s.parse().unwrap();
        assert_eq!(back, ior);
        assert_eq!(back.to_string(), s);
        let p = back.iiop_profile().unwrap();
        assert_eq!(p.host, "127.0.0.1");
        assert_eq!(p.port, 2809);
        assert_eq!(&p.object_key[..], b"Bench");
        assert_eq!(p.orb_type(), Some(ORB_TYPE_IIOPBENCH));
        assert_eq!(p.code_sets(), Some(CodeSetComponentInfo::ours()));
        assert_eq!(p.alternate_addresses(), vec![("10.0.0.1".to_string(), 7)]);
    }

    #[test]
    fn little_endian_and_profile_1_0() {
        let mut p = IiopProfile::new("h", 1, &b"k"[..]);
        p.version = Version::V1_0;
        p.order = ByteOrder::Little;
        p.components.clear();
        let body = p.encode();
        assert_eq!(
            &body[..],
            &[1, 1, 0, 0, 2, 0, 0, 0, b'h', 0, 1, 0, 1, 0, 0, 0, b'k']
        );
        let ior = Ior::builder("")
            .order(ByteOrder::Little)
            .profile(&p)
            .build();
        let s = ior.to_string();
        let back: Ior = s.parse().unwrap();
        assert_eq!(back.order, ByteOrder::Little);
        assert_eq!(back.iiop_profile().unwrap(), p);
        assert_eq!(back.to_string(), s);
    }

    #[test]
    fn equal_whatever_byte_order_carried_it() {
        let ior = Ior::iiop("IDL:X:1.0", "h", 1, &b"k"[..]);
        let mut le = ior.clone();
        le.order = ByteOrder::Little;
        assert_eq!(le, ior);
        assert_ne!(le.to_string(), ior.to_string());
        assert_eq!(
            le.to_string().parse::<Ior>().unwrap().order,
            ByteOrder::Little
        );
        assert_eq!(Ior::default(), Ior::nil());
        assert!(Ior::nil().is_nil() && Ior::nil().type_id.is_empty());
        assert!(Ior::new("IDL:X:1.0", vec![]).is_nil());
    }

    #[test]
    fn multiple_components_profile() {
        let order = ByteOrder::Big;
        let comps = [
            TaggedComponent::from_component(&Component::OrbType(0x5441_4F00), order),
            TaggedComponent {
                tag: 0x99,
                data: Bytes::from_static(&[0, 1, 2]),
            },
        ];
        let mut buf = BytesMut::new();
        let mut w = Writer::new(&mut buf, order);
        w.write_u8(order.flag());
        encode_components(&mut w, &comps);
        let p = TaggedProfile {
            tag: TAG_MULTIPLE_COMPONENTS,
            data: buf.freeze(),
        };
        assert_eq!(p, TaggedProfile::from_components(&comps, order));
        let got = p.multiple_components().unwrap().unwrap();
        assert_eq!(got, comps);
        assert_eq!(got[0].decode().unwrap(), Component::OrbType(0x5441_4F00));
        assert_eq!(got[1].decode().unwrap(), Component::Other(comps[1].clone()));
        assert!(p.iiop().is_none());
        let ior = Ior::new("", vec![p]);
        assert_eq!(ior.code_sets(), None);
        assert_eq!(ior.to_string().parse::<Ior>().unwrap(), ior);
    }

    /// A stringified IOR written byte by byte, the way Combat 0.8.1 lays
    /// it out: an IIOP 1.2 profile with no components, then a
    /// TAG_MULTIPLE_COMPONENTS profile holding TAG_CODE_SETS (char
    /// ISO-8859-1 + UTF-8, wchar UTF-16). Every encapsulation in `order`.
    fn code_sets_only_in_multiple_components(order: ByteOrder) -> Vec<u8> {
        let le = order == ByteOrder::Little;
        let u32b = |x: u32| if le { x.to_le_bytes() } else { x.to_be_bytes() };
        let flag = u8::from(le);
        let mut iiop = vec![flag, 1, 2, 0]; // byte order, IIOP 1.2, pad
        iiop.extend(u32b(10)); // host length
        iiop.extend(b"127.0.0.1\0"); // offsets 8..18
        iiop.extend(if le { [0xf9, 0x0a] } else { [0x0a, 0xf9] }); // port 2809
        iiop.extend(u32b(1)); // key length
        iiop.extend([b'K', 0, 0, 0]); // key, pad
        iiop.extend(u32b(0)); // no components
        assert_eq!(iiop.len(), 32);
        let mut cs = vec![flag, 0, 0, 0];
        cs.extend(u32b(0x0001_0001)); // char native ISO-8859-1
        cs.extend(u32b(1));
        cs.extend(u32b(0x0501_0001)); // conversion UTF-8
        cs.extend(u32b(0x0001_0109)); // wchar native UTF-16
        cs.extend(u32b(0)); // no conversion
        assert_eq!(cs.len(), 24);
        let mut multi = vec![flag, 0, 0, 0];
        multi.extend(u32b(1)); // one component
        multi.extend(u32b(TAG_CODE_SETS));
        multi.extend(u32b(cs.len() as u32));
        multi.extend(&cs);
        assert_eq!(multi.len(), 40);
        let mut ior = vec![flag, 0, 0, 0];
        ior.extend(u32b(1)); // type id "" (its NUL only)
        ior.extend([0, 0, 0, 0]); // NUL, pad
        ior.extend(u32b(2)); // two profiles
        ior.extend(u32b(TAG_INTERNET_IOP));
        ior.extend(u32b(iiop.len() as u32));
        ior.extend(&iiop);
        ior.extend(u32b(TAG_MULTIPLE_COMPONENTS));
        ior.extend(u32b(multi.len() as u32));
        ior.extend(&multi);
        assert_eq!(ior.len(), 104);
        ior
    }

    fn text(bytes: &[u8]) -> String {
        let mut s = String::from("IOR:");
        for b in bytes {
            s.push_str(&format!("{b:02x}"));
        }
        s
    }

    #[test]
    fn code_sets_found_in_a_multiple_components_profile_in_both_orders() {
        let want = CodeSetComponentInfo {
            for_char: CodeSetComponent {
                native: 0x0001_0001,
                conversion: vec![0x0501_0001],
            },
            for_wchar: CodeSetComponent {
                native: 0x0001_0109,
                conversion: vec![],
            },
        };
        for order in [ByteOrder::Big, ByteOrder::Little] {
            let bytes = code_sets_only_in_multiple_components(order);
            let s = text(&bytes);
            let ior: Ior = s.parse().unwrap();
            assert_eq!(ior.order, order);
            assert_eq!(Ior::from_encapsulation(&bytes).unwrap(), ior);
            assert_eq!(&ior.to_encapsulation()[..], &bytes[..]);
            let p = ior.iiop_profile().unwrap();
            assert_eq!((p.host.as_str(), p.port), ("127.0.0.1", 2809));
            assert_eq!(p.code_sets(), None, "{order:?}: not in the IIOP profile");
            assert_eq!(
                ior.code_sets(),
                Some((want.clone(), CodeSetsSource::MultipleComponents)),
                "{order:?}"
            );
            assert_eq!(ior.to_string(), s, "{order:?}: prints back as read");
        }
        // The layout pinned (big-endian): the MULTIPLE_COMPONENTS profile
        // starts at offset 56 with tag 1 and 40 bytes.
        let be = code_sets_only_in_multiple_components(ByteOrder::Big);
        assert_eq!(&be[56..68], &[0, 0, 0, 1, 0, 0, 0, 40, 0, 0, 0, 0]);
    }

    #[test]
    fn code_sets_in_the_iiop_profile_win_over_multiple_components() {
        let mut other = CodeSetComponentInfo::ours();
        other.for_wchar.native = 0x0002_0001; // UCS-4, to tell them apart
        let extra = TaggedProfile::from_components(
            &[TaggedComponent::from_component(
                &Component::CodeSets(other.clone()),
                ByteOrder::Little,
            )],
            ByteOrder::Little,
        );
        let ior = Ior::builder("IDL:X:1.0")
            .iiop("h", 1, &b"k"[..], &[])
            .tagged(extra.clone())
            .build();
        assert_eq!(
            ior.code_sets(),
            Some((CodeSetComponentInfo::ours(), CodeSetsSource::IiopProfile))
        );
        // With none in the IIOP profile, the other profile's are used.
        let mut p = IiopProfile::new("h", 1, &b"k"[..]);
        p.components.retain(|c| c.tag != TAG_CODE_SETS);
        let ior = Ior::builder("IDL:X:1.0").profile(&p).tagged(extra).build();
        assert_eq!(
            ior.code_sets(),
            Some((other, CodeSetsSource::MultipleComponents))
        );
        assert_eq!(
            CodeSetsSource::MultipleComponents.to_string(),
            "TAG_MULTIPLE_COMPONENTS profile"
        );
    }

    #[test]
    fn builder_moves_code_sets_into_a_multiple_components_profile() {
        let ior = Ior::builder("IDL:Bench/Perf:1.0")
            .iiop("127.0.0.1", 2809, &b"Bench"[..], &[])
            .code_sets_in(CodeSetsSource::MultipleComponents)
            .build();
        assert_eq!(ior.profiles.len(), 2);
        assert_eq!(
            ior.profiles.iter().map(|p| p.tag).collect::<Vec<_>>(),
            [TAG_INTERNET_IOP, TAG_MULTIPLE_COMPONENTS]
        );
        let p = ior.iiop_profile().unwrap();
        assert_eq!(p.code_sets(), None);
        assert_eq!(p.orb_type(), Some(ORB_TYPE_IIOPBENCH));
        assert_eq!(
            ior.code_sets(),
            Some((
                CodeSetComponentInfo::ours(),
                CodeSetsSource::MultipleComponents
            ))
        );
        let back: Ior = ior.to_string().parse().unwrap();
        assert_eq!(back, ior);
    }

    #[test]
    fn tag_code_sets_round_trip() {
        let ours = CodeSetComponentInfo::ours();
        let b = ours.encode(ByteOrder::Big);
        assert_eq!(
            &b[..],
            &[0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 5, 1, 0, 1, 0, 1, 1, 9, 0, 0, 0, 1, 0, 1, 1, 0]
        );
        assert_eq!(CodeSetComponentInfo::decode(&b).unwrap(), ours);
    }

    #[test]
    fn bad_text_is_refused_cleanly() {
        assert!(matches!(
            "IOR:0".parse::<Ior>(),
            Err(IorError::BadReference { .. })
        ));
        assert!(matches!(
            "IOR:zz".parse::<Ior>(),
            Err(IorError::BadReference { .. })
        ));
        assert!(matches!(
            "XYZ:00".parse::<Ior>(),
            Err(IorError::BadReference { .. })
        ));
        assert!(matches!("IOR:02".parse::<Ior>(), Err(IorError::Cdr { .. })));
        assert!(matches!(
            "IOR:00ffffffff".parse::<Ior>(),
            Err(IorError::Cdr { .. })
        ));
        assert_eq!(
            "IOR:0".parse::<Ior>().unwrap_err().to_string(),
            "bad IOR: odd number of hex digits"
        );
    }

    #[test]
    fn a_profile_of_another_major_version_is_refused() {
        let mut p = IiopProfile::new("h", 1, &b"k"[..]).encode().to_vec();
        p[1] = 2;
        assert_eq!(
            IiopProfile::decode(&p),
            Err(IorError::UnsupportedVersion { major: 2, minor: 2 })
        );
    }
}
