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

    /// TAG_CODE_SETS, if present.
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
                None => {
                    let _ = write!(s, "\nprofile tag {} ({} bytes)", p.tag, p.data.len());
                }
            }
        }
        s
    }
}

fn code_set_name(id: u32) -> String {
    match id {
        0x0001_0001 => "ISO-8859-1".into(),
        0x0501_0001 => "UTF-8".into(),
        0x0001_0109 => "UTF-16".into(),
        0x0001_0100 => "UCS-2".into(),
        0x0002_0001 => "UCS-4".into(),
        0 => "none".into(),
        other => format!("{other:#010x}"),
    }
}

fn code_set_list(c: &crate::context::CodeSetComponent) -> String {
    let mut s = code_set_name(c.native);
    if !c.conversion.is_empty() {
        s.push_str(" (conv ");
        let names: Vec<String> = c.conversion.iter().map(|&i| code_set_name(i)).collect();
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

    /// The IOR.
    pub fn build(self) -> Ior {
        Ior {
            type_id: self.type_id,
            profiles: self.profiles,
            order: self.order,
        }
    }
}

/// `s` as ISO 8859-1 bytes, if every char fits in one.
pub(crate) fn latin1(s: &str) -> Option<Vec<u8>> {
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
        assert_eq!(ior.summary(), "type <none>\nprofile tag 1 (35 bytes)");
        assert_eq!(ior.to_string().parse::<Ior>().unwrap(), ior);
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
