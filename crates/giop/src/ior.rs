//! Interoperable Object References: stringified `IOR:` hex (either byte
//! order inside the encapsulation), IIOP profile bodies 1.0–1.2, tagged
//! components (TAG_ORB_TYPE, TAG_CODE_SETS, TAG_ALTERNATE_IIOP_ADDRESS
//! decoded; others kept opaque), TAG_MULTIPLE_COMPONENTS profiles, a
//! builder for the IORs our server hands out, and a human summary.
//!
//! Profiles and components are kept as raw bytes and decoded on demand, so
//! an IOR prints back exactly as it was read.

use std::fmt;
use std::str::FromStr;

use bytes::{Bytes, BytesMut};
use iiop_cdr::{ByteOrder, Reader, Writer};

use crate::context::{encapsulation, CodeSetComponentInfo};
use crate::error::{GiopError, Result};
use crate::header::Version;

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

/// A known ORB type's name.
pub fn orb_type_name(orb_type: u32) -> Option<&'static str> {
    Some(match orb_type {
        0x4154_5400 => "omniORB",
        0x4A41_4300 => "JacORB",
        0x5441_4F00 => "TAO",
        ORB_TYPE_IIOPBENCH => "iiopbench",
        _ => return None,
    })
}

/// An IOR: repository id and tagged profiles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ior {
    pub type_id: String,
    pub profiles: Vec<TaggedProfile>,
    /// Byte order of the stringified form's encapsulation (kept so the
    /// IOR prints back as read); for an IOR read from a message, that
    /// message's order.
    pub order: ByteOrder,
}

/// One tagged profile, its body kept verbatim.
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
                Component::OrbType(r.read_u32().map_err(GiopError::cdr("TAG_ORB_TYPE"))?)
            }
            TAG_CODE_SETS => Component::CodeSets(CodeSetComponentInfo::decode(&self.data)?),
            TAG_ALTERNATE_IIOP_ADDRESS => {
                let mut r = encapsulation(&self.data, "TAG_ALTERNATE_IIOP_ADDRESS")?;
                let host = r
                    .read_string()
                    .map_err(GiopError::cdr("alternate address host"))?;
                let port = r
                    .read_u16()
                    .map_err(GiopError::cdr("alternate address port"))?;
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

fn decode_components(r: &mut Reader<'_>) -> Result<Vec<TaggedComponent>> {
    let n = r.read_len(8).map_err(GiopError::cdr("component count"))?;
    let mut v = Vec::with_capacity(n.min(16));
    for _ in 0..n {
        let tag = r.read_u32().map_err(GiopError::cdr("component tag"))?;
        let data = Bytes::copy_from_slice(
            r.read_octet_seq()
                .map_err(GiopError::cdr("component data"))?,
        );
        v.push(TaggedComponent { tag, data });
    }
    Ok(v)
}

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
        let major = r.read_u8().map_err(GiopError::cdr("IIOP version"))?;
        let minor = r.read_u8().map_err(GiopError::cdr("IIOP version"))?;
        if major != 1 {
            return Err(GiopError::UnsupportedVersion { major, minor });
        }
        let host = r.read_string().map_err(GiopError::cdr("IIOP host"))?;
        let port = r.read_u16().map_err(GiopError::cdr("IIOP port"))?;
        let object_key = Bytes::copy_from_slice(
            r.read_octet_seq()
                .map_err(GiopError::cdr("IIOP object key"))?,
        );
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

    /// Decode from CDR (u32 tag, sequence<octet>).
    pub fn decode(r: &mut Reader<'_>) -> Result<TaggedProfile> {
        let tag = r.read_u32().map_err(GiopError::cdr("profile tag"))?;
        let data =
            Bytes::copy_from_slice(r.read_octet_seq().map_err(GiopError::cdr("profile data"))?);
        Ok(TaggedProfile { tag, data })
    }

    /// Encode as CDR.
    pub fn encode(&self, w: &mut Writer<'_>) -> Result<()> {
        w.write_u32(self.tag);
        w.write_octet_seq(&self.data)
            .map_err(GiopError::cdr("profile data"))
    }
}

impl Ior {
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

    /// The nil reference has no profiles.
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

    /// Decode from CDR (string type_id, sequence<TaggedProfile>).
    pub fn decode(r: &mut Reader<'_>) -> Result<Ior> {
        // Repository ids are ISO 8859-1 whatever code sets a connection
        // negotiated (the IOR exists before any negotiation): one char per
        // byte, so decode and encode round-trip (found by fuzzing).
        let type_id = r
            .read_string_bytes()
            .map_err(GiopError::cdr("IOR type id"))?
            .iter()
            .map(|&b| b as char)
            .collect();
        let n = r.read_len(8).map_err(GiopError::cdr("IOR profile count"))?;
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

    /// Encode as CDR.
    pub fn encode(&self, w: &mut Writer<'_>) -> Result<()> {
        let id = latin1(&self.type_id)
            .ok_or_else(|| GiopError::reference("IOR type id", "not ISO 8859-1"))?;
        w.write_string_bytes(&id)
            .map_err(GiopError::cdr("IOR type id"))?;
        w.write_len(self.profiles.len())
            .map_err(GiopError::cdr("IOR profile count"))?;
        for p in &self.profiles {
            p.encode(w)?;
        }
        Ok(())
    }

    /// The encapsulation the stringified form is the hex of.
    pub fn to_encapsulation(&self) -> Bytes {
        let mut buf = BytesMut::new();
        let mut w = Writer::new(&mut buf, self.order);
        w.write_u8(self.order.flag());
        let _ = self.encode(&mut w);
        buf.freeze()
    }

    /// A one-paragraph human description: type, then per profile host,
    /// port, key, ORB type and code sets.
    pub fn summary(&self) -> String {
        use std::fmt::Write;
        let mut s = format!(
            "type {}",
            if self.type_id.is_empty() {
                "<none>"
            } else {
                &self.type_id
            }
        );
        if self.is_nil() {
            s.push_str(" (nil)");
        }
        for p in &self.profiles {
            match p.iiop() {
                Some(Ok(ip)) => {
                    let _ = write!(
                        s,
                        "\nIIOP {} {}:{} key {}",
                        ip.version,
                        ip.host,
                        ip.port,
                        crate::corbaloc::escape_key(&ip.object_key)
                    );
                    if let Some(t) = ip.orb_type() {
                        let _ = write!(
                            s,
                            " orb {} ({t:#010x})",
                            orb_type_name(t).unwrap_or("unknown")
                        );
                    }
                    if let Some(cs) = ip.code_sets() {
                        let _ = write!(
                            s,
                            " char {} wchar {}",
                            code_set_list(&cs.for_char),
                            code_set_list(&cs.for_wchar)
                        );
                    }
                    for (h, port) in ip.alternate_addresses() {
                        let _ = write!(s, " alt {h}:{port}");
                    }
                }
                Some(Err(e)) => {
                    let _ = write!(s, "\nIIOP profile undecodable: {e}");
                }
                None => match p.multiple_components() {
                    Some(Ok(comps)) => {
                        let _ = write!(s, "\nTAG_MULTIPLE_COMPONENTS");
                        for c in comps.iter().filter_map(|c| c.decode().ok()) {
                            match c {
                                Component::OrbType(t) => {
                                    let _ = write!(
                                        s,
                                        " orb {} ({t:#010x})",
                                        orb_type_name(t).unwrap_or("unknown")
                                    );
                                }
                                Component::CodeSets(cs) => {
                                    let _ = write!(
                                        s,
                                        " char {} wchar {}",
                                        code_set_list(&cs.for_char),
                                        code_set_list(&cs.for_wchar)
                                    );
                                }
                                Component::AlternateAddress { host, port } => {
                                    let _ = write!(s, " alt {host}:{port}");
                                }
                                Component::Other(t) => {
                                    let _ = write!(s, " tag {} ({} bytes)", t.tag, t.data.len());
                                }
                            }
                        }
                    }
                    _ => {
                        let _ = write!(s, "\nprofile tag {} ({} bytes)", p.tag, p.data.len());
                    }
                },
            }
        }
        s
    }
}

fn code_set_label(id: u32) -> String {
    match (id, code_set_name(id)) {
        (0, _) => "none".into(),
        (_, Some(name)) => name.into(),
        (other, None) => format!("{other:#010x}"),
    }
}

fn code_set_list(c: &crate::context::CodeSetComponent) -> String {
    let mut s = code_set_label(c.native);
    if !c.conversion.is_empty() {
        s.push_str(" (conv ");
        let names: Vec<String> = c.conversion.iter().map(|&i| code_set_label(i)).collect();
        s.push_str(&names.join(","));
        s.push(')');
    }
    s
}

impl fmt::Display for Ior {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("IOR:")?;
        for b in self.to_encapsulation().iter() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl FromStr for Ior {
    type Err = GiopError;

    fn from_str(s: &str) -> Result<Ior> {
        let s = s.trim();
        let hex = match s.get(..4) {
            Some(p) if p.eq_ignore_ascii_case("IOR:") => &s[4..],
            _ => return Err(GiopError::reference("IOR", "does not start with IOR:")),
        };
        if hex.len() % 2 != 0 {
            return Err(GiopError::reference("IOR", "odd number of hex digits"));
        }
        let mut bytes = Vec::with_capacity(hex.len() / 2);
        for (i, pair) in hex.as_bytes().chunks_exact(2).enumerate() {
            let d = |c: u8| (c as char).to_digit(16);
            match (d(pair[0]), d(pair[1])) {
                (Some(h), Some(l)) => bytes.push((h * 16 + l) as u8),
                _ => {
                    return Err(GiopError::reference(
                        "IOR",
                        format!("bad hex digit at character {}", 4 + 2 * i),
                    ))
                }
            }
        }
        let mut r = encapsulation(&bytes, "IOR")?;
        let ior = Ior::decode(&mut r)?;
        Ok(ior)
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

/// `s` as ISO 8859-1 bytes, if every char fits in one.
pub(crate) fn latin1(s: &str) -> Option<Vec<u8>> {
    s.chars().map(|c| u8::try_from(c).ok()).collect()
}

// ---------------------------------------------------------------------
// Names and bodies of more components, for inspecting references
// (`iiopbench ior decode`). Kept apart from [`Component`] so that what a
// client negotiates with stays as it was: these are decoded only to show.
// ---------------------------------------------------------------------

/// TAG_POLICIES: the Messaging policies the object was created with.
pub const TAG_POLICIES: u32 = 2;
/// SSLIOP's TAG_SSL_SEC_TRANS: SSL port and association options.
pub const TAG_SSL_SEC_TRANS: u32 = 20;
/// TAG_JAVA_CODEBASE: where RMI-IIOP classes are downloaded from.
pub const TAG_JAVA_CODEBASE: u32 = 25;
/// CSIv2's TAG_CSI_SEC_MECH_LIST: the compound security mechanisms.
pub const TAG_CSI_SEC_MECH_LIST: u32 = 33;
/// CSIv2's TAG_NULL_TAG: a mechanism with no transport security.
pub const TAG_NULL_TAG: u32 = 34;
/// CSIv2's TAG_TLS_SEC_TRANS: TLS addresses and association options.
pub const TAG_TLS_SEC_TRANS: u32 = 36;
/// TAG_RMI_CUSTOM_MAX_STREAM_FORMAT: highest RMI-IIOP stream format.
pub const TAG_RMI_CUSTOM_MAX_STREAM_FORMAT: u32 = 38;

/// The name of a profile tag (IOP::ProfileId), if known.
pub fn profile_tag_name(tag: u32) -> Option<&'static str> {
    Some(match tag {
        TAG_INTERNET_IOP => "TAG_INTERNET_IOP",
        TAG_MULTIPLE_COMPONENTS => "TAG_MULTIPLE_COMPONENTS",
        2 => "TAG_SCCP_IOP",
        3 => "TAG_UIPMC",
        4 => "TAG_MOBILE_TERMINAL_IOP",
        _ => return None,
    })
}

/// The name of a component tag (IOP::ComponentId, the security
/// specifications', and omniORB's own), if known.
pub fn component_tag_name(tag: u32) -> Option<&'static str> {
    Some(match tag {
        TAG_ORB_TYPE => "TAG_ORB_TYPE",
        TAG_CODE_SETS => "TAG_CODE_SETS",
        TAG_POLICIES => "TAG_POLICIES",
        TAG_ALTERNATE_IIOP_ADDRESS => "TAG_ALTERNATE_IIOP_ADDRESS",
        5 => "TAG_COMPLETE_OBJECT_KEY",
        6 => "TAG_ENDPOINT_ID_POSITION",
        12 => "TAG_LOCATION_POLICY",
        13 => "TAG_ASSOCIATION_OPTIONS",
        14 => "TAG_SEC_NAME",
        15 => "TAG_SPKM_1_SEC_MECH",
        16 => "TAG_SPKM_2_SEC_MECH",
        17 => "TAG_KerberosV5_SEC_MECH",
        18 => "TAG_CSI_ECMA_Secret_SEC_MECH",
        19 => "TAG_CSI_ECMA_Hybrid_SEC_MECH",
        TAG_SSL_SEC_TRANS => "TAG_SSL_SEC_TRANS",
        21 => "TAG_CSI_ECMA_Public_SEC_MECH",
        22 => "TAG_GENERIC_SEC_MECH",
        23 => "TAG_FIREWALL_TRANS",
        24 => "TAG_SCCP_CONTACT_INFO",
        TAG_JAVA_CODEBASE => "TAG_JAVA_CODEBASE",
        26 => "TAG_TRANSACTION_POLICY",
        30 => "TAG_MESSAGE_ROUTER",
        31 => "TAG_OTS_POLICY",
        32 => "TAG_INV_POLICY",
        TAG_CSI_SEC_MECH_LIST => "TAG_CSI_SEC_MECH_LIST",
        TAG_NULL_TAG => "TAG_NULL_TAG",
        35 => "TAG_SECIOP_SEC_TRANS",
        TAG_TLS_SEC_TRANS => "TAG_TLS_SEC_TRANS",
        37 => "TAG_ACTIVITY_POLICY",
        TAG_RMI_CUSTOM_MAX_STREAM_FORMAT => "TAG_RMI_CUSTOM_MAX_STREAM_FORMAT",
        39 => "TAG_GROUP",
        40 => "TAG_GROUP_IIOP",
        41 => "TAG_PASSTHRU_TRANS",
        42 => "TAG_FIREWALL_PATH",
        43 => "TAG_IIOP_SEC_TRANS",
        100 => "TAG_DCE_STRING_BINDING",
        101 => "TAG_DCE_BINDING_NAME",
        102 => "TAG_DCE_NO_PIPES",
        103 => "TAG_DCE_SEC_MECH",
        123 => "TAG_INET_SEC_TRANS",
        0x4154_5401 => "TAG_OMNIORB_BIDIR",
        0x4154_5402 => "TAG_OMNIORB_UNIX_TRANS",
        0x4154_5403 => "TAG_OMNIORB_PERSISTENT_ID",
        0x4154_5404 => "TAG_OMNIORB_RESTRICTED_CONNECTION",
        _ => return None,
    })
}

/// The name of a code set (OSF code set registry id), if known. Names as
/// omniORB's `catior` prints them, except that UCS-2 level 1 (the one
/// every ORB means by UCS-2) is plain `UCS-2`.
pub fn code_set_name(id: u32) -> Option<&'static str> {
    Some(match id {
        0x0001_0001 => "ISO-8859-1",
        0x0001_0002 => "ISO-8859-2",
        0x0001_0003 => "ISO-8859-3",
        0x0001_0004 => "ISO-8859-4",
        0x0001_0005 => "ISO-8859-5",
        0x0001_0006 => "ISO-8859-6",
        0x0001_0007 => "ISO-8859-7",
        0x0001_0008 => "ISO-8859-8",
        0x0001_0009 => "ISO-8859-9",
        0x0001_000a => "ISO-8859-10",
        0x0001_000b => "ISO-8859-11",
        0x0001_000d => "ISO-8859-13",
        0x0001_000e => "ISO-8859-14",
        0x0001_000f => "ISO-8859-15",
        0x0001_0010 => "ISO-8859-16",
        0x0001_0020 => "ISO-646",
        0x0001_0100 => "UCS-2",
        0x0001_0101 => "UCS-2-level-2",
        0x0001_0102 => "UCS-2-level-3",
        0x0001_0104 => "UCS-4-level-1",
        0x0001_0105 => "UCS-4-level-2",
        0x0001_0106 => "UCS-4",
        0x0001_0108 => "UTF-1",
        0x0001_0109 => "UTF-16",
        0x0501_0001 => "UTF-8",
        0x1002_0025 => "IBM-037",
        0x1002_04e2 => "windows-1250",
        0x1002_04e3 => "windows-1251",
        0x1002_04e4 => "windows-1252",
        0x1002_04e5 => "windows-1253",
        0x1002_04e6 => "windows-1254",
        0x1002_04e7 => "windows-1255",
        0x1002_04e8 => "windows-1256",
        0x1002_04e9 => "windows-1257",
        0x1002_04ea => "windows-1258",
        _ => return None,
    })
}

/// The name of a CORBA policy type (Messaging, PortableServer, BiDir,
/// RTCORBA), if known.
pub fn policy_type_name(ptype: u32) -> Option<&'static str> {
    Some(match ptype {
        16 => "THREAD_POLICY",
        17 => "LIFESPAN_POLICY",
        18 => "ID_UNIQUENESS_POLICY",
        19 => "ID_ASSIGNMENT_POLICY",
        20 => "IMPLICIT_ACTIVATION_POLICY",
        21 => "SERVANT_RETENTION_POLICY",
        22 => "REQUEST_PROCESSING_POLICY",
        23 => "REBIND_POLICY",
        24 => "SYNC_SCOPE_POLICY",
        25 => "REQUEST_PRIORITY_POLICY",
        26 => "REPLY_PRIORITY_POLICY",
        27 => "REQUEST_START_TIME_POLICY",
        28 => "REQUEST_END_TIME_POLICY",
        29 => "REPLY_START_TIME_POLICY",
        30 => "REPLY_END_TIME_POLICY",
        31 => "RELATIVE_REQ_TIMEOUT_POLICY",
        32 => "RELATIVE_RT_TIMEOUT_POLICY",
        33 => "ROUTING_POLICY",
        34 => "MAX_HOPS_POLICY",
        35 => "QUEUE_ORDER_POLICY",
        37 => "BIDIRECTIONAL_POLICY",
        40 => "PRIORITY_MODEL_POLICY",
        41 => "THREADPOOL_POLICY",
        42 => "SERVER_PROTOCOL_POLICY",
        43 => "CLIENT_PROTOCOL_POLICY",
        44 => "PRIVATE_CONNECTION_POLICY",
        45 => "PRIORITY_BANDED_CONNECTION_POLICY",
        _ => return None,
    })
}

/// The names of the bits set in a Security::AssociationOptions value
/// (the bits with no name are left out).
pub fn association_option_names(bits: u16) -> Vec<&'static str> {
    const NAMES: [&str; 12] = [
        "NoProtection",
        "Integrity",
        "Confidentiality",
        "DetectReplay",
        "DetectMisordering",
        "EstablishTrustInTarget",
        "EstablishTrustInClient",
        "NoDelegation",
        "SimpleDelegation",
        "CompositeDelegation",
        "IdentityAssertion",
        "DelegationByClient",
    ];
    NAMES
        .iter()
        .enumerate()
        .filter(|(i, _)| bits & (1 << i) != 0)
        .map(|(_, n)| *n)
        .collect()
}

/// The body of TAG_SSL_SEC_TRANS (SSLIOP::SSL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SslSecTrans {
    pub target_supports: u16,
    pub target_requires: u16,
    /// The SSL port on the IIOP profile's host.
    pub port: u16,
}

impl SslSecTrans {
    /// Decode the component body (an encapsulation).
    pub fn decode(data: &[u8]) -> Result<SslSecTrans> {
        const W: &str = "TAG_SSL_SEC_TRANS";
        let mut r = encapsulation(data, W)?;
        Ok(SslSecTrans {
            target_supports: r.read_u16().map_err(GiopError::cdr(W))?,
            target_requires: r.read_u16().map_err(GiopError::cdr(W))?,
            port: r.read_u16().map_err(GiopError::cdr(W))?,
        })
    }

    /// Encode as a component (an encapsulation in `order`).
    pub fn to_component(&self, order: ByteOrder) -> TaggedComponent {
        let mut buf = BytesMut::new();
        let mut w = Writer::new(&mut buf, order);
        w.write_u8(order.flag());
        w.write_u16(self.target_supports);
        w.write_u16(self.target_requires);
        w.write_u16(self.port);
        TaggedComponent {
            tag: TAG_SSL_SEC_TRANS,
            data: buf.freeze(),
        }
    }
}

/// The body of CSIv2's TAG_TLS_SEC_TRANS (CSIIOP::TLS_SEC_TRANS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSecTrans {
    pub target_supports: u16,
    pub target_requires: u16,
    pub addresses: Vec<(String, u16)>,
}

impl TlsSecTrans {
    /// Decode the component body (an encapsulation).
    pub fn decode(data: &[u8]) -> Result<TlsSecTrans> {
        const W: &str = "TAG_TLS_SEC_TRANS";
        let mut r = encapsulation(data, W)?;
        let target_supports = r.read_u16().map_err(GiopError::cdr(W))?;
        let target_requires = r.read_u16().map_err(GiopError::cdr(W))?;
        // One address is at least a length, a NUL and a port: 8 bytes.
        let n = r.read_len(8).map_err(GiopError::cdr(W))?;
        let mut addresses = Vec::with_capacity(n.min(16));
        for _ in 0..n {
            let host = r.read_string().map_err(GiopError::cdr(W))?;
            let port = r.read_u16().map_err(GiopError::cdr(W))?;
            addresses.push((host, port));
        }
        Ok(TlsSecTrans {
            target_supports,
            target_requires,
            addresses,
        })
    }
}

/// One policy of TAG_POLICIES (Messaging::PolicyValue), its value an
/// encapsulation kept verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyValue {
    pub ptype: u32,
    pub value: Bytes,
}

/// Decode the body of TAG_POLICIES (Messaging::PolicyValueSeq).
pub fn decode_policies(data: &[u8]) -> Result<Vec<PolicyValue>> {
    const W: &str = "TAG_POLICIES";
    let mut r = encapsulation(data, W)?;
    let n = r.read_len(8).map_err(GiopError::cdr(W))?;
    let mut v = Vec::with_capacity(n.min(16));
    for _ in 0..n {
        let ptype = r.read_u32().map_err(GiopError::cdr(W))?;
        let value = Bytes::copy_from_slice(r.read_octet_seq().map_err(GiopError::cdr(W))?);
        v.push(PolicyValue { ptype, value });
    }
    Ok(v)
}

/// Decode the body of TAG_JAVA_CODEBASE: a string of space-separated
/// URLs.
pub fn decode_java_codebase(data: &[u8]) -> Result<String> {
    let mut r = encapsulation(data, "TAG_JAVA_CODEBASE")?;
    r.read_string().map_err(GiopError::cdr("TAG_JAVA_CODEBASE"))
}

/// Decode the body of TAG_RMI_CUSTOM_MAX_STREAM_FORMAT: one octet.
pub fn decode_rmi_custom_max_stream_format(data: &[u8]) -> Result<u8> {
    let mut r = encapsulation(data, "TAG_RMI_CUSTOM_MAX_STREAM_FORMAT")?;
    r.read_u8()
        .map_err(GiopError::cdr("TAG_RMI_CUSTOM_MAX_STREAM_FORMAT"))
}

/// The body of CSIv2's TAG_CSI_SEC_MECH_LIST (CSIIOP::CompoundSecMechList).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompoundSecMechList {
    pub stateful: bool,
    pub mechanisms: Vec<CompoundSecMech>,
}

/// One CSIv2 compound mechanism: transport, authentication and
/// attribute (identity assertion) layers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompoundSecMech {
    pub target_requires: u16,
    /// TAG_TLS_SEC_TRANS, TAG_SECIOP_SEC_TRANS or TAG_NULL_TAG.
    pub transport_mech: TaggedComponent,
    pub as_context: AsContextSec,
    pub sas_context: SasContextSec,
}

/// CSIIOP::AS_ContextSec: client authentication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsContextSec {
    pub target_supports: u16,
    pub target_requires: u16,
    /// A DER-encoded OID (GSSUP is 2.23.130.1.1.1); see [`oid_to_string`].
    pub client_authentication_mech: Bytes,
    /// A GSS exported name.
    pub target_name: Bytes,
}

/// CSIIOP::SAS_ContextSec: identity assertion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SasContextSec {
    pub target_supports: u16,
    pub target_requires: u16,
    /// (syntax, name) of each privilege authority.
    pub privilege_authorities: Vec<(u32, Bytes)>,
    /// DER-encoded OIDs.
    pub supported_naming_mechanisms: Vec<Bytes>,
    pub supported_identity_types: u32,
}

impl CompoundSecMechList {
    /// Decode the component body (an encapsulation).
    pub fn decode(data: &[u8]) -> Result<CompoundSecMechList> {
        const W: &str = "TAG_CSI_SEC_MECH_LIST";
        let e = GiopError::cdr;
        let mut r = encapsulation(data, W)?;
        let stateful = r.read_bool().map_err(e(W))?;
        // A mechanism is at least 2 + 2 + 8 (transport) + 16 + 20 bytes.
        let n = r.read_len(40).map_err(e(W))?;
        let mut mechanisms = Vec::with_capacity(n.min(16));
        for _ in 0..n {
            let target_requires = r.read_u16().map_err(e(W))?;
            let tag = r.read_u32().map_err(e(W))?;
            let data = Bytes::copy_from_slice(r.read_octet_seq().map_err(e(W))?);
            let as_context = AsContextSec {
                target_supports: r.read_u16().map_err(e(W))?,
                target_requires: r.read_u16().map_err(e(W))?,
                client_authentication_mech: Bytes::copy_from_slice(
                    r.read_octet_seq().map_err(e(W))?,
                ),
                target_name: Bytes::copy_from_slice(r.read_octet_seq().map_err(e(W))?),
            };
            let sas_supports = r.read_u16().map_err(e(W))?;
            let sas_requires = r.read_u16().map_err(e(W))?;
            let na = r.read_len(8).map_err(e(W))?;
            let mut privilege_authorities = Vec::with_capacity(na.min(16));
            for _ in 0..na {
                let syntax = r.read_u32().map_err(e(W))?;
                let name = Bytes::copy_from_slice(r.read_octet_seq().map_err(e(W))?);
                privilege_authorities.push((syntax, name));
            }
            let nn = r.read_len(4).map_err(e(W))?;
            let mut supported_naming_mechanisms = Vec::with_capacity(nn.min(16));
            for _ in 0..nn {
                supported_naming_mechanisms
                    .push(Bytes::copy_from_slice(r.read_octet_seq().map_err(e(W))?));
            }
            let supported_identity_types = r.read_u32().map_err(e(W))?;
            mechanisms.push(CompoundSecMech {
                target_requires,
                transport_mech: TaggedComponent { tag, data },
                as_context,
                sas_context: SasContextSec {
                    target_supports: sas_supports,
                    target_requires: sas_requires,
                    privilege_authorities,
                    supported_naming_mechanisms,
                    supported_identity_types,
                },
            });
        }
        Ok(CompoundSecMechList {
            stateful,
            mechanisms,
        })
    }
}

/// A DER-encoded OBJECT IDENTIFIER (tag 0x06, short length) in dotted
/// form, e.g. `2.23.130.1.1.1`; `None` when it is not one.
pub fn oid_to_string(der: &[u8]) -> Option<String> {
    let (&tag, rest) = der.split_first()?;
    let (&len, body) = rest.split_first()?;
    if tag != 0x06 || len >= 0x80 || body.len() != len as usize || body.is_empty() {
        return None;
    }
    let mut arcs: Vec<u64> = Vec::new();
    let mut v: u64 = 0;
    for (i, &b) in body.iter().enumerate() {
        if v > (u64::MAX >> 7) {
            return None;
        }
        v = (v << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            if arcs.is_empty() {
                let first = (v / 40).min(2);
                arcs.push(first);
                arcs.push(v - 40 * first);
            } else {
                arcs.push(v);
            }
            v = 0;
        } else if i + 1 == body.len() {
            return None;
        }
    }
    Some(
        arcs.iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join("."),
    )
}

#[cfg(test)]
mod component_tests {
    use super::*;

    #[test]
    fn ssl_component_round_trips_and_names_its_options() {
        let ssl = SslSecTrans {
            target_supports: 0x66,
            target_requires: 0x46,
            port: 2810,
        };
        let c = ssl.to_component(ByteOrder::Big);
        assert_eq!(&c.data[..], &[0, 0, 0, 0x66, 0, 0x46, 0x0a, 0xfa]);
        assert_eq!(SslSecTrans::decode(&c.data).unwrap(), ssl);
        assert_eq!(
            association_option_names(0x66),
            [
                "Integrity",
                "Confidentiality",
                "EstablishTrustInTarget",
                "EstablishTrustInClient"
            ]
        );
        assert!(SslSecTrans::decode(&c.data[..5]).is_err());
    }

    #[test]
    fn oids_print_dotted() {
        let gssup = [0x06, 0x06, 0x67, 0x81, 0x02, 0x01, 0x01, 0x01];
        assert_eq!(oid_to_string(&gssup).as_deref(), Some("2.23.130.1.1.1"));
        assert_eq!(oid_to_string(&[0x06, 0x01, 0x81]), None);
        assert_eq!(oid_to_string(&[0x04, 0x00]), None);
    }

    #[test]
    fn code_set_names_agree_with_catior() {
        assert_eq!(code_set_name(0x0001_0001), Some("ISO-8859-1"));
        assert_eq!(code_set_name(0x0001_0100), Some("UCS-2"));
        assert_eq!(code_set_name(0x0001_0106), Some("UCS-4"));
        assert_eq!(code_set_name(0x1002_04e2), Some("windows-1250"));
        assert_eq!(code_set_name(0x0002_0001), None);
        assert_eq!(component_tag_name(20), Some("TAG_SSL_SEC_TRANS"));
        assert_eq!(profile_tag_name(0x42), None);
    }
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
        assert_eq!(
            back.summary(),
            "type IDL:Bench/Perf:1.0\nIIOP 1.2 127.0.0.1:2809 key Bench orb iiopbench (0x49494f50) \
             char ISO-8859-1 (conv UTF-8) wchar UTF-16 (conv UCS-2) alt 10.0.0.1:7"
        );
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
        let got = p.multiple_components().unwrap().unwrap();
        assert_eq!(got, comps);
        assert_eq!(got[0].decode().unwrap(), Component::OrbType(0x5441_4F00));
        assert_eq!(got[1].decode().unwrap(), Component::Other(comps[1].clone()));
        assert!(p.iiop().is_none());
        let ior = Ior::new("", vec![p]);
        assert_eq!(
            ior.summary(),
            "type <none>\nTAG_MULTIPLE_COMPONENTS orb TAO (0x54414f00) tag 153 (3 bytes)"
        );
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
            for_char: crate::context::CodeSetComponent {
                native: 0x0001_0001,
                conversion: vec![0x0501_0001],
            },
            for_wchar: crate::context::CodeSetComponent {
                native: 0x0001_0109,
                conversion: vec![],
            },
        };
        for order in [ByteOrder::Big, ByteOrder::Little] {
            let bytes = code_sets_only_in_multiple_components(order);
            let s = text(&bytes);
            let ior: Ior = s.parse().unwrap();
            assert_eq!(ior.order, order);
            let p = ior.iiop_profile().unwrap();
            assert_eq!((p.host.as_str(), p.port), ("127.0.0.1", 2809));
            assert_eq!(p.code_sets(), None, "{order:?}: not in the IIOP profile");
            assert_eq!(
                ior.code_sets(),
                Some((want.clone(), CodeSetsSource::MultipleComponents)),
                "{order:?}"
            );
            assert_eq!(
                ior.summary(),
                "type <none>\nIIOP 1.2 127.0.0.1:2809 key K\n\
                 TAG_MULTIPLE_COMPONENTS char ISO-8859-1 (conv UTF-8) wchar UTF-16"
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
        assert_eq!(
            ior.summary(),
            "type IDL:Bench/Perf:1.0\nIIOP 1.2 127.0.0.1:2809 key Bench orb iiopbench (0x49494f50)\n\
             TAG_MULTIPLE_COMPONENTS char ISO-8859-1 (conv UTF-8) wchar UTF-16 (conv UCS-2)"
        );
    }

    #[test]
    fn bad_text_is_refused_cleanly() {
        assert!(matches!(
            "IOR:0".parse::<Ior>(),
            Err(GiopError::BadReference { .. })
        ));
        assert!(matches!(
            "IOR:zz".parse::<Ior>(),
            Err(GiopError::BadReference { .. })
        ));
        assert!(matches!(
            "XYZ:00".parse::<Ior>(),
            Err(GiopError::BadReference { .. })
        ));
        assert!(matches!(
            "IOR:02".parse::<Ior>(),
            Err(GiopError::Cdr { .. })
        ));
        assert!(matches!(
            "IOR:00ffffffff".parse::<Ior>(),
            Err(GiopError::Cdr { .. })
        ));
    }
}
