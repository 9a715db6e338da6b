//! Interoperable Object References. The type and its wire forms (CDR,
//! stringified `IOR:` hex, IIOP profiles, tagged components, the
//! builder) live in [`iiop_cdr::ior`], shared with dynamic values, and are
//! re-exported here; their errors convert into [`GiopError`]. This module
//! adds what is for people rather than for the wire: a human
//! [`summary`], ORB and tag names, and decoders of the security and
//! policy components that `iiopbench ior decode` shows.

use bytes::{Bytes, BytesMut};
use iiop_cdr::{ByteOrder, Writer};

use crate::context::encapsulation;
use crate::error::{GiopError, Result};

pub use iiop_cdr::ior::{
    CodeSetComponent, CodeSetComponentInfo, CodeSetsSource, Component, IiopProfile, Ior,
    IorBuilder, IorError, TaggedComponent, TaggedProfile, ORB_TYPE_IIOPBENCH,
    TAG_ALTERNATE_IIOP_ADDRESS, TAG_CODE_SETS, TAG_INTERNET_IOP, TAG_MULTIPLE_COMPONENTS,
    TAG_ORB_TYPE,
};

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

/// A one-paragraph human description of `ior`: type, then per profile
/// host, port, key, ORB type and code sets.
pub fn summary(ior: &Ior) -> String {
    use std::fmt::Write;
    let mut s = format!(
        "type {}",
        if ior.type_id.is_empty() {
            "<none>"
        } else {
            &ior.type_id
        }
    );
    if ior.is_nil() {
        s.push_str(" (nil)");
    }
    for p in &ior.profiles {
        match p.iiop() {
            Some(Ok(ip)) => {
                let _ = write!(
                    s,
                    "\nIIOP {} {}:{} key {}",
                    ip.version,
                    ip.host,
                    ip.port,
                    crate::key::escape_key(&ip.object_key)
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

/// Security::AssociationOptions bits that mean "only over a protected
/// transport": Integrity, Confidentiality, EstablishTrustInClient.
/// (omniORB's TAG_SSL_SEC_TRANS requires EstablishTrustInTarget and
/// EstablishTrustInClient; TAO's and ours Integrity and Confidentiality.)
pub const PROTECTION_REQUIRED: u16 = 0x02 | 0x04 | 0x40;

/// A TLS endpoint a profile offers: from TAG_SSL_SEC_TRANS (its port on
/// the profile's host) or, failing that, from the first TAG_TLS_SEC_TRANS
/// address of a CSIv2 mechanism in TAG_CSI_SEC_MECH_LIST.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsOffer {
    pub host: String,
    pub port: u16,
    pub target_supports: u16,
    pub target_requires: u16,
    /// The component it came from.
    pub via: &'static str,
}

impl TlsOffer {
    /// Whether the target refuses unprotected connections.
    pub fn required(&self) -> bool {
        self.target_requires & PROTECTION_REQUIRED != 0
    }
}

/// The TLS endpoint `p` offers, if any (undecodable components are
/// passed over, as a client that does not know them would).
pub fn tls_offer(p: &IiopProfile) -> Option<TlsOffer> {
    let ssl = p
        .components
        .iter()
        .filter(|c| c.tag == TAG_SSL_SEC_TRANS)
        .find_map(|c| SslSecTrans::decode(&c.data).ok())
        .filter(|s| s.port != 0);
    if let Some(s) = ssl {
        return Some(TlsOffer {
            host: p.host.clone(),
            port: s.port,
            target_supports: s.target_supports,
            target_requires: s.target_requires,
            via: "TAG_SSL_SEC_TRANS",
        });
    }
    p.components
        .iter()
        .filter(|c| c.tag == TAG_CSI_SEC_MECH_LIST)
        .filter_map(|c| CompoundSecMechList::decode(&c.data).ok())
        .flat_map(|l| l.mechanisms)
        .filter(|m| m.transport_mech.tag == TAG_TLS_SEC_TRANS)
        .filter_map(|m| TlsSecTrans::decode(&m.transport_mech.data).ok())
        .find_map(|t| {
            let (host, port) = t.addresses.into_iter().find(|(_, port)| *port != 0)?;
            Some(TlsOffer {
                host,
                port,
                target_supports: t.target_supports,
                target_requires: t.target_requires,
                via: "TAG_CSI_SEC_MECH_LIST",
            })
        })
}

/// The TAG_SSL_SEC_TRANS component a TLS server of ours puts in its
/// profiles: it supports Integrity, Confidentiality and trust in both
/// directions, and requires Integrity and Confidentiality (plus
/// EstablishTrustInClient when it asks clients for certificates). What
/// omniORB's and JacORB's clients read to go to `port` over TLS.
pub fn ssl_component(port: u16, client_certificates: bool) -> TaggedComponent {
    SslSecTrans {
        target_supports: 0x66,
        target_requires: 0x06 | if client_certificates { 0x40 } else { 0 },
        port,
    }
    .to_component(ByteOrder::Big)
}

/// `p`, a profile at a TLS port, as a TLS-only server publishes it
/// (omniORB 4.2's `giop:ssl:` endpoints, our `serve --tls-cert`,
/// `corbaloc:ssliop:`): the port moves into TAG_SSL_SEC_TRANS
/// ([`ssl_component`]) and the profile's own port becomes 0, so that no
/// client tries plain TCP.
pub fn tls_only_profile(mut p: IiopProfile, client_certificates: bool) -> IiopProfile {
    p.components
        .push(ssl_component(p.port, client_certificates));
    p.port = 0;
    p
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
    fn a_tls_only_profile_moves_its_port_into_the_ssl_component() {
        let p = tls_only_profile(IiopProfile::new("h", 2810, &b"K"[..]), true);
        assert_eq!(p.port, 0);
        let o = tls_offer(&p).unwrap();
        assert_eq!((o.host.as_str(), o.port), ("h", 2810));
        assert!(o.required());
        let ssl = p
            .components
            .iter()
            .find(|c| c.tag == TAG_SSL_SEC_TRANS)
            .and_then(|c| SslSecTrans::decode(&c.data).ok());
        assert_eq!(ssl.map(|s| s.target_requires), Some(0x46));
    }

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
    fn tls_offers_come_from_ssl_or_csiv2_components() {
        let mut p = IiopProfile::new("h", 0, &b"K"[..]);
        assert_eq!(tls_offer(&p), None);
        p.components.push(ssl_component(2810, false));
        let o = tls_offer(&p).unwrap();
        assert_eq!(
            (o.host.as_str(), o.port, o.via),
            ("h", 2810, "TAG_SSL_SEC_TRANS")
        );
        assert!(o.required());
        // omniORB's options: EstablishTrustInTarget | EstablishTrustInClient.
        let omni = SslSecTrans {
            target_supports: 0x60,
            target_requires: 0x60,
            port: 7,
        };
        p.components = vec![omni.to_component(ByteOrder::Little)];
        assert!(tls_offer(&p).unwrap().required());
        // JacORB without enforcing SSL: supports NoProtection, requires nothing.
        let lax = SslSecTrans {
            target_supports: 0x67,
            target_requires: 0,
            port: 7,
        };
        p.components = vec![lax.to_component(ByteOrder::Big)];
        assert!(!tls_offer(&p).unwrap().required());
        // A zero SSL port offers nothing.
        let zero = SslSecTrans { port: 0, ..lax };
        p.components = vec![zero.to_component(ByteOrder::Big)];
        assert_eq!(tls_offer(&p), None);
    }

    #[test]
    fn a_csiv2_tls_mechanism_is_an_offer() {
        // CompoundSecMechList { stateful false, one mechanism: requires
        // 0x06, TLS_SEC_TRANS {0x66, 0x06, [("tls.host", 443)]}, empty AS
        // and SAS layers }, big-endian.
        let mut tls = BytesMut::new();
        let mut w = Writer::new(&mut tls, ByteOrder::Big);
        w.write_u8(0);
        w.write_u16(0x66);
        w.write_u16(0x06);
        w.write_u32(1);
        w.write_string("tls.host").unwrap();
        w.write_u16(443);
        let mut list = BytesMut::new();
        let mut w = Writer::new(&mut list, ByteOrder::Big);
        w.write_u8(0);
        w.write_bool(false);
        w.write_u32(1);
        w.write_u16(0x06);
        w.write_u32(TAG_TLS_SEC_TRANS);
        w.write_octet_seq(&tls).unwrap();
        w.write_u16(0);
        w.write_u16(0);
        w.write_octet_seq(&[]).unwrap();
        w.write_octet_seq(&[]).unwrap();
        w.write_u16(0);
        w.write_u16(0);
        w.write_u32(0);
        w.write_u32(0);
        w.write_u32(0);
        let mut p = IiopProfile::new("h", 2809, &b"K"[..]);
        p.components.push(TaggedComponent {
            tag: TAG_CSI_SEC_MECH_LIST,
            data: list.freeze(),
        });
        assert_eq!(
            tls_offer(&p),
            Some(TlsOffer {
                host: "tls.host".into(),
                port: 443,
                target_supports: 0x66,
                target_requires: 0x06,
                via: "TAG_CSI_SEC_MECH_LIST",
            })
        );
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
    use crate::header::Version;

    #[test]
    fn summary_of_a_built_ior() {
        let ior = Ior::builder("IDL:Bench/Perf:1.0")
            .iiop("127.0.0.1", 2809, &b"Bench"[..], &[("10.0.0.1", 7)])
            .build();
        assert_eq!(
            summary(&ior),
            "type IDL:Bench/Perf:1.0\nIIOP 1.2 127.0.0.1:2809 key Bench orb iiopbench (0x49494f50) \
             char ISO-8859-1 (conv UTF-8) wchar UTF-16 (conv UCS-2) alt 10.0.0.1:7"
        );
        assert_eq!(summary(&Ior::nil()), "type <none> (nil)");
    }

    #[test]
    fn summary_of_a_multiple_components_profile() {
        let comps = [
            TaggedComponent::from_component(&Component::OrbType(0x5441_4F00), ByteOrder::Big),
            TaggedComponent {
                tag: 0x99,
                data: Bytes::from_static(&[0, 1, 2]),
            },
        ];
        let ior = Ior::new(
            "",
            vec![TaggedProfile::from_components(&comps, ByteOrder::Big)],
        );
        assert_eq!(
            summary(&ior),
            "type <none>\nTAG_MULTIPLE_COMPONENTS orb TAO (0x54414f00) tag 153 (3 bytes)"
        );
    }

    /// Combat 0.8.1's layout: an IIOP 1.2 profile with no components, then
    /// TAG_CODE_SETS in a TAG_MULTIPLE_COMPONENTS profile (the bytes are
    /// pinned in `iiop_cdr::ior`'s tests).
    #[test]
    fn summary_with_code_sets_in_a_multiple_components_profile() {
        let cs = CodeSetComponentInfo {
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
            let mut p = IiopProfile::new("127.0.0.1", 2809, &b"K"[..]);
            p.components.clear();
            p.order = order;
            let multi = TaggedProfile::from_components(
                &[TaggedComponent::from_component(
                    &Component::CodeSets(cs.clone()),
                    order,
                )],
                order,
            );
            let ior = Ior::builder("")
                .order(order)
                .profile(&p)
                .tagged(multi)
                .build();
            assert_eq!(
                summary(&ior),
                "type <none>\nIIOP 1.2 127.0.0.1:2809 key K\n\
                 TAG_MULTIPLE_COMPONENTS char ISO-8859-1 (conv UTF-8) wchar UTF-16"
            );
        }
        let ior = Ior::builder("IDL:Bench/Perf:1.0")
            .iiop("127.0.0.1", 2809, &b"Bench"[..], &[])
            .code_sets_in(CodeSetsSource::MultipleComponents)
            .build();
        assert_eq!(
            summary(&ior),
            "type IDL:Bench/Perf:1.0\nIIOP 1.2 127.0.0.1:2809 key Bench orb iiopbench (0x49494f50)\n\
             TAG_MULTIPLE_COMPONENTS char ISO-8859-1 (conv UTF-8) wchar UTF-16 (conv UCS-2)"
        );
    }

    #[test]
    fn ior_errors_become_the_giop_errors_they_were() {
        let e = |s: &str| GiopError::from(s.parse::<Ior>().unwrap_err());
        assert!(matches!(
            e("IOR:0"),
            GiopError::BadReference { what: "IOR", .. }
        ));
        assert!(matches!(e("IOR:zz"), GiopError::BadReference { .. }));
        assert!(matches!(e("XYZ:00"), GiopError::BadReference { .. }));
        assert!(matches!(e("IOR:02"), GiopError::Cdr { .. }));
        assert!(matches!(e("IOR:00ffffffff"), GiopError::Cdr { .. }));
        assert_eq!(e("IOR:0").to_string(), "bad IOR: odd number of hex digits");
        let mut p = IiopProfile::new("h", 1, &b"k"[..]);
        p.version = Version { major: 2, minor: 0 };
        assert_eq!(
            GiopError::from(IiopProfile::decode(&p.encode()).unwrap_err()),
            GiopError::UnsupportedVersion { major: 2, minor: 0 }
        );
        let bad = Ior::new("IDL:\u{263a}:1.0", vec![]);
        let mut buf = BytesMut::new();
        assert!(matches!(
            GiopError::from(
                bad.encode(&mut Writer::new(&mut buf, ByteOrder::Big))
                    .unwrap_err()
            ),
            GiopError::BadReference {
                what: "IOR type id",
                ..
            }
        ));
    }
}
