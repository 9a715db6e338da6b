//! `iiopbench ior`: look inside an object reference and write one.
//!
//! `ior decode REF` prints what omniORB's `catior` and TAO's `tao_catior`
//! print, and more: type id, byte order, every profile (IIOP version,
//! host, port, object key as corbaloc-escaped text and hex; the components
//! of TAG_MULTIPLE_COMPONENTS profiles; unknown profiles as tag, length and
//! hex) and every tagged component, decoded where its kind is known
//! (crates/giop/src/ior.rs does the decoding). `--json FILE` writes the
//! same as a stable JSON document (docs/ior.md; `-` for stdout). `ior make` writes an IOR, as
//! omniORB's `genior` does.
//!
//! Decoding builds a plain [`Decoded`] value first; the text and the JSON
//! are pure functions of it ([`render_text`], [`render_json`]).

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context as _};
use bytes::Bytes;
use clap::{Args, Subcommand, ValueEnum};
use iiop_cdr::ByteOrder;
use iiop_giop::context::{CodeSetComponent, CodeSetComponentInfo};
use iiop_giop::corbaloc::{escape_key, unescape};
use iiop_giop::ior::{self, Component, IiopProfile, TaggedComponent, TaggedProfile};
use iiop_giop::{Ior, Target, Version};
use serde::Serialize;
use serde_json::{json, Value};

/// Examples at the end of `iiopbench ior --help`.
pub const EXAMPLES: &str = "\
Examples:
  iiopbench ior decode omni.ior
  iiopbench ior decode --json - corbaloc:iiop:1.2@127.0.0.1:2809/Bench
  iiopbench ior make --host 127.0.0.1 --port 2809 --key Bench --type-id IDL:Bench/Perf:1.0 --code-sets";

const DECODE_EXAMPLES: &str = "\
Examples:
  iiopbench ior decode bench.ior              # a file: `serve --ior-file`, `orbs start NAME --ior-file`
  iiopbench ior decode --json - - < omni.ior  # standard input, JSON on stdout
  iiopbench ior decode 'corbaname::127.0.0.1:2809#Bench'   # the naming context; no lookup";

const MAKE_EXAMPLES: &str = "\
Examples:
  iiopbench ior make --host 127.0.0.1 --port 2809 --key Bench --type-id IDL:Bench/Perf:1.0
  iiopbench ior make --host h --port 5000 --key %14%01%0f%00RootPOA --type-id IDL:X:1.0 --code-sets --orb-type tao
  iiopbench ior make --host 127.0.0.1 --port 2809 --key Bench --type-id IDL:Bench/Perf:1.0 --giop 1.0 --ior-file bench.ior";

/// `iiopbench ior …`.
#[derive(Debug, Subcommand)]
pub enum IorCommand {
    /// Print everything inside a reference: type id, byte order, every
    /// profile and every tagged component, decoded where known (like
    /// omniORB's catior and TAO's tao_catior).
    #[command(after_help = DECODE_EXAMPLES)]
    Decode(DecodeOpts),
    /// Write an IOR with one IIOP profile (like omniORB's genior).
    #[command(after_help = MAKE_EXAMPLES)]
    Make(MakeOpts),
}

#[derive(Debug, Clone, Args)]
pub struct DecodeOpts {
    /// `IOR:…`, `corbaloc:…`, `corbaname:…` (the naming context it names;
    /// no lookup is made), a file holding one of them, or `-` for stdin.
    #[arg(value_name = "REF")]
    pub reference: String,
    /// Write the same as a JSON document (fields in docs/ior.md) to this
    /// file; `-` prints it on stdout instead of the text.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct MakeOpts {
    /// Host name or address in the IIOP profile.
    #[arg(long)]
    pub host: String,
    /// Port in the IIOP profile.
    #[arg(long)]
    pub port: u16,
    /// Object key, %-escaped as in a corbaloc URL (`%14%01%0f%00…`).
    #[arg(long)]
    pub key: String,
    /// Repository id (`IDL:Bench/Perf:1.0`; empty for none).
    #[arg(long, value_name = "ID")]
    pub type_id: String,
    /// IIOP version of the profile (1.0 profiles carry no components).
    #[arg(long, value_parser = crate::flags::parse_giop, default_value = "1.2", value_name = "1.0|1.1|1.2")]
    pub giop: Version,
    /// Add TAG_CODE_SETS as our server advertises it: char ISO-8859-1
    /// (conversion UTF-8), wchar UTF-16 (conversion UCS-2).
    #[arg(long)]
    pub code_sets: bool,
    /// Add TAG_ORB_TYPE: iiopbench, omniorb, jacorb, tao, or a number
    /// (`0x41545400`).
    #[arg(long, value_parser = parse_orb_type, value_name = "ORB")]
    pub orb_type: Option<u32>,
    /// Add a TAG_ALTERNATE_IIOP_ADDRESS (repeatable).
    #[arg(long, value_name = "HOST:PORT")]
    pub alternate: Vec<String>,
    /// Byte order of the encapsulations.
    #[arg(long, value_enum, default_value_t = IorByteOrder::Big)]
    pub byte_order: IorByteOrder,
    /// Write the IOR (and a newline) to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub ior_file: Option<PathBuf>,
}

/// `ior make --byte-order`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IorByteOrder {
    Big,
    Little,
}

fn parse_orb_type(s: &str) -> Result<u32, String> {
    let known = match s.to_ascii_lowercase().as_str() {
        "iiopbench" => Some(ior::ORB_TYPE_IIOPBENCH),
        "omniorb" | "omniorbpy" => Some(0x4154_5400),
        "jacorb" => Some(0x4A41_4300),
        "tao" => Some(0x5441_4F00),
        _ => None,
    };
    if let Some(t) = known {
        return Ok(t);
    }
    let n = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => s.parse::<u32>(),
    };
    n.map_err(|_| format!("{s:?}: expected iiopbench, omniorb, jacorb, tao or a number"))
}

/// Run `iiopbench ior …`.
pub fn run(c: &IorCommand) -> anyhow::Result<()> {
    match c {
        IorCommand::Decode(o) => {
            let d = decode_arg(&o.reference)?;
            match &o.json {
                Some(f) if f.as_os_str() == "-" => out!("{}", render_json(&d)),
                Some(f) => {
                    out!("{}", render_text(&d));
                    iiopbench_engine::results::write_atomic(f, &render_json(&d))?;
                }
                None => out!("{}", render_text(&d)),
            }
            Ok(())
        }
        IorCommand::Make(o) => {
            let ior = make(o)?;
            match &o.ior_file {
                Some(f) => Ok(iiopbench_engine::results::write_atomic(
                    f,
                    &format!("{ior}\n"),
                )?),
                None => {
                    outln!("{ior}");
                    Ok(())
                }
            }
        }
    }
}

/// The IOR `ior make` writes.
pub fn make(o: &MakeOpts) -> anyhow::Result<Ior> {
    let key = unescape(&o.key, "--key")?;
    let order = match o.byte_order {
        IorByteOrder::Big => ByteOrder::Big,
        IorByteOrder::Little => ByteOrder::Little,
    };
    let mut components = Vec::new();
    if let Some(t) = o.orb_type {
        components.push(TaggedComponent::from_component(
            &Component::OrbType(t),
            order,
        ));
    }
    if o.code_sets {
        components.push(TaggedComponent::from_component(
            &Component::CodeSets(CodeSetComponentInfo::ours()),
            order,
        ));
    }
    for a in &o.alternate {
        let (host, port) = a
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h.trim_matches(['[', ']']), p.parse::<u16>().ok()?)))
            .with_context(|| format!("--alternate {a:?}: expected HOST:PORT"))?;
        components.push(TaggedComponent::from_component(
            &Component::AlternateAddress {
                host: host.to_owned(),
                port,
            },
            order,
        ));
    }
    if o.giop.minor == 0 && !components.is_empty() {
        bail!(
            "IIOP 1.0 profiles carry no components: drop --code-sets, --orb-type and \
             --alternate, or use --giop 1.1 or 1.2"
        );
    }
    if !o.type_id.chars().all(|c| u32::from(c) < 256) {
        bail!("--type-id {:?}: repository ids are ISO 8859-1", o.type_id);
    }
    let mut p = IiopProfile::new(o.host.clone(), o.port, Bytes::from(key));
    p.version = o.giop;
    p.order = order;
    p.components = components;
    Ok(Ior::builder(o.type_id.clone())
        .order(order)
        .profile(&p)
        .build())
}

/// Where a decoded reference came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    Ior,
    Corbaloc,
    Corbaname,
}

/// Everything `ior decode` prints; the JSON document is this, serialized.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decoded {
    /// `iiopbench-ior/1`; changes only when a field changes meaning.
    pub schema: &'static str,
    pub source: SourceKind,
    /// The reference as text (for corbaloc/corbaname, as normalised).
    pub reference: String,
    /// corbaname: the name after `#` (not looked up).
    pub naming_name: Option<String>,
    /// Empty when the reference names none (corbaloc, corbaname).
    pub type_id: String,
    /// `big` / `little` for an IOR; null for corbaloc/corbaname, which
    /// have no encoding of their own.
    pub byte_order: Option<&'static str>,
    /// No profiles: the nil reference.
    pub nil: bool,
    pub profiles: Vec<ProfileInfo>,
}

/// One tagged profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileInfo {
    /// 1-based, as catior numbers them.
    pub index: usize,
    pub tag: u32,
    pub tag_name: Option<&'static str>,
    /// Length of the profile body in bytes.
    pub length: usize,
    /// The decoded TAG_INTERNET_IOP body.
    pub iiop: Option<IiopInfo>,
    /// Components of an IIOP 1.1+ or TAG_MULTIPLE_COMPONENTS profile.
    pub components: Vec<ComponentInfo>,
    /// The body in hex, for profiles not decoded (unknown or broken).
    pub hex: Option<String>,
    /// Why a known profile did not decode.
    pub error: Option<String>,
}

/// A TAG_INTERNET_IOP profile body.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IiopInfo {
    /// `1.0`, `1.1`, `1.2`.
    pub version: String,
    /// Byte order of the profile's own encapsulation.
    pub byte_order: &'static str,
    pub host: String,
    pub port: u16,
    /// The key %-escaped as in a corbaloc URL.
    pub object_key: String,
    pub object_key_hex: String,
    pub object_key_length: usize,
}

/// One tagged component.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComponentInfo {
    pub tag: u32,
    pub name: Option<&'static str>,
    pub length: usize,
    pub hex: String,
    /// One line: what the text output shows, joined with `; `.
    pub summary: String,
    /// The decoded body (fields per kind in docs/ior.md); null when the
    /// kind is unknown or the body did not decode.
    pub value: Value,
    /// Why a known kind did not decode.
    pub error: Option<String>,
    /// The text output's lines for this component.
    #[serde(skip)]
    pub lines: Vec<String>,
}

/// Load REF (reference, file, `-`) and decode it.
pub fn decode_arg(arg: &str) -> anyhow::Result<Decoded> {
    let target = Target::load(arg)?;
    decode_target(&target)
}

/// Decode a reference given as text.
pub fn decode_str(s: &str) -> anyhow::Result<Decoded> {
    decode_target(&s.parse::<Target>()?)
}

/// Decode a parsed reference.
pub fn decode_target(t: &Target) -> anyhow::Result<Decoded> {
    let (source, ior, naming_name, byte_order) = match t {
        Target::Ior(i) => (SourceKind::Ior, i.clone(), None, Some(order_name(i.order))),
        Target::Corbaloc(c) => {
            let ior = c.to_ior("").with_context(|| {
                format!(
                    "{c}: rir: names an ORB's initial references; there is no reference to decode"
                )
            })?;
            (SourceKind::Corbaloc, ior, None, None)
        }
        Target::Corbaname(c) => {
            let ior = c.naming_context().to_ior("").with_context(|| {
                format!(
                    "{c}: rir: names an ORB's initial references; there is no reference to decode"
                )
            })?;
            (SourceKind::Corbaname, ior, Some(c.name.clone()), None)
        }
    };
    Ok(decode_ior(
        &ior,
        source,
        t.to_string(),
        naming_name,
        byte_order,
    ))
}

fn decode_ior(
    ior: &Ior,
    source: SourceKind,
    reference: String,
    naming_name: Option<String>,
    byte_order: Option<&'static str>,
) -> Decoded {
    Decoded {
        schema: "iiopbench-ior/1",
        source,
        reference,
        naming_name,
        type_id: ior.type_id.clone(),
        byte_order,
        nil: ior.is_nil(),
        profiles: ior
            .profiles
            .iter()
            .enumerate()
            .map(|(i, p)| profile_info(i + 1, p))
            .collect(),
    }
}

fn order_name(o: ByteOrder) -> &'static str {
    match o {
        ByteOrder::Big => "big",
        ByteOrder::Little => "little",
    }
}

/// Lower-case hex of `b`, no separators.
pub fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(2 * b.len());
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

fn profile_info(index: usize, p: &TaggedProfile) -> ProfileInfo {
    let mut info = ProfileInfo {
        index,
        tag: p.tag,
        tag_name: ior::profile_tag_name(p.tag),
        length: p.data.len(),
        iiop: None,
        components: Vec::new(),
        hex: None,
        error: None,
    };
    if let Some(r) = p.iiop() {
        match r {
            Ok(ip) => {
                info.iiop = Some(IiopInfo {
                    version: ip.version.to_string(),
                    byte_order: order_name(ip.order),
                    host: ip.host.clone(),
                    port: ip.port,
                    object_key: escape_key(&ip.object_key),
                    object_key_hex: hex(&ip.object_key),
                    object_key_length: ip.object_key.len(),
                });
                info.components = ip.components.iter().map(component_info).collect();
            }
            Err(e) => {
                info.error = Some(e.to_string());
                info.hex = Some(hex(&p.data));
            }
        }
    } else if let Some(r) = p.multiple_components() {
        match r {
            Ok(comps) => info.components = comps.iter().map(component_info).collect(),
            Err(e) => {
                info.error = Some(e.to_string());
                info.hex = Some(hex(&p.data));
            }
        }
    } else {
        info.hex = Some(hex(&p.data));
    }
    info
}

fn code_set_json(id: u32) -> Value {
    json!({"id": id, "hex": format!("{id:#010x}"), "name": ior::code_set_name(id)})
}

fn code_set_text(id: u32) -> String {
    match ior::code_set_name(id) {
        Some(n) => format!("{n} ({id:#010x})"),
        None => format!("{id:#010x}"),
    }
}

fn code_set_component_json(c: &CodeSetComponent) -> Value {
    json!({
        "native": code_set_json(c.native),
        "conversion": c.conversion.iter().map(|&i| code_set_json(i)).collect::<Vec<_>>(),
    })
}

fn code_set_component_text(what: &str, c: &CodeSetComponent) -> String {
    let conv: Vec<String> = c.conversion.iter().map(|&i| code_set_text(i)).collect();
    format!(
        "{what} native {}, conversion {}",
        code_set_text(c.native),
        if conv.is_empty() {
            "none".to_string()
        } else {
            conv.join(", ")
        }
    )
}

fn options_json(bits: u16) -> Value {
    json!({"bits": bits, "names": ior::association_option_names(bits)})
}

fn options_text(bits: u16) -> String {
    let names = ior::association_option_names(bits);
    if names.is_empty() {
        format!("{bits:#06x}")
    } else {
        format!("{bits:#06x} ({})", names.join(","))
    }
}

fn oid_text(der: &[u8]) -> String {
    if der.is_empty() {
        return "none".into();
    }
    ior::oid_to_string(der).unwrap_or_else(|| format!("0x{}", hex(der)))
}

/// A component tag for people: small tags in decimal, vendor tags in hex.
fn tag_text(tag: u32) -> String {
    if tag < 0x1_0000 {
        tag.to_string()
    } else {
        format!("{tag:#010x}")
    }
}

/// Decode one component into its JSON value and text lines.
fn decode_component(c: &TaggedComponent) -> Result<Option<(Value, Vec<String>)>, String> {
    let e = |e: iiop_giop::GiopError| e.to_string();
    Ok(Some(match c.tag {
        ior::TAG_ORB_TYPE | ior::TAG_CODE_SETS | ior::TAG_ALTERNATE_IIOP_ADDRESS => {
            match c.decode().map_err(|x| x.to_string())? {
                Component::OrbType(t) => {
                    let vendor = ior::orb_type_name(t);
                    (
                        json!({"orb_type": t, "hex": format!("{t:#010x}"), "vendor": vendor}),
                        vec![format!("{} ({t:#010x})", vendor.unwrap_or("unknown ORB"))],
                    )
                }
                Component::CodeSets(cs) => (
                    json!({
                        "char": code_set_component_json(&cs.for_char),
                        "wchar": code_set_component_json(&cs.for_wchar),
                    }),
                    vec![
                        code_set_component_text("char", &cs.for_char),
                        code_set_component_text("wchar", &cs.for_wchar),
                    ],
                ),
                Component::AlternateAddress { host, port } => (
                    json!({"host": host, "port": port}),
                    vec![format!("{host}:{port}")],
                ),
                Component::Other(_) => return Ok(None),
            }
        }
        ior::TAG_SSL_SEC_TRANS => {
            let s = ior::SslSecTrans::decode(&c.data).map_err(e)?;
            (
                json!({
                    "target_supports": options_json(s.target_supports),
                    "target_requires": options_json(s.target_requires),
                    "port": s.port,
                }),
                vec![format!(
                    "port {}, target_supports {}, target_requires {}",
                    s.port,
                    options_text(s.target_supports),
                    options_text(s.target_requires)
                )],
            )
        }
        ior::TAG_TLS_SEC_TRANS => {
            let t = ior::TlsSecTrans::decode(&c.data).map_err(e)?;
            tls_value(&t)
        }
        ior::TAG_CSI_SEC_MECH_LIST => {
            let l = ior::CompoundSecMechList::decode(&c.data).map_err(e)?;
            csi_value(&l)
        }
        ior::TAG_POLICIES => {
            let ps = ior::decode_policies(&c.data).map_err(e)?;
            let v: Vec<Value> = ps
                .iter()
                .map(|p| {
                    json!({"type": p.ptype, "name": ior::policy_type_name(p.ptype), "value_hex": hex(&p.value)})
                })
                .collect();
            let lines = if ps.is_empty() {
                vec!["no policies".to_string()]
            } else {
                ps.iter()
                    .map(|p| {
                        format!(
                            "{} ({}): {}",
                            ior::policy_type_name(p.ptype).unwrap_or("unknown policy"),
                            p.ptype,
                            hex(&p.value)
                        )
                    })
                    .collect()
            };
            (json!({ "policies": v }), lines)
        }
        ior::TAG_JAVA_CODEBASE => {
            let cb = ior::decode_java_codebase(&c.data).map_err(e)?;
            (json!({ "codebase": cb }), vec![cb])
        }
        ior::TAG_RMI_CUSTOM_MAX_STREAM_FORMAT => {
            let v = ior::decode_rmi_custom_max_stream_format(&c.data).map_err(e)?;
            (
                json!({ "max_stream_format": v }),
                vec![format!("max stream format version {v}")],
            )
        }
        _ => return Ok(None),
    }))
}

fn tls_value(t: &ior::TlsSecTrans) -> (Value, Vec<String>) {
    let addrs: Vec<String> = t
        .addresses
        .iter()
        .map(|(h, p)| format!("{h}:{p}"))
        .collect();
    (
        json!({
            "target_supports": options_json(t.target_supports),
            "target_requires": options_json(t.target_requires),
            "addresses": t.addresses.iter().map(|(h, p)| json!({"host": h, "port": p})).collect::<Vec<_>>(),
        }),
        vec![format!(
            "addresses {}, target_supports {}, target_requires {}",
            if addrs.is_empty() {
                "none".to_string()
            } else {
                addrs.join(" ")
            },
            options_text(t.target_supports),
            options_text(t.target_requires)
        )],
    )
}

fn csi_value(l: &ior::CompoundSecMechList) -> (Value, Vec<String>) {
    let mut lines = vec![format!(
        "{} mechanism(s), stateful {}",
        l.mechanisms.len(),
        l.stateful
    )];
    let mut mechs = Vec::new();
    for (i, m) in l.mechanisms.iter().enumerate() {
        let tm = &m.transport_mech;
        let (transport_value, transport_text) = match tm.tag {
            ior::TAG_TLS_SEC_TRANS => match ior::TlsSecTrans::decode(&tm.data) {
                Ok(t) => {
                    let (v, l) = tls_value(&t);
                    (v, format!("TAG_TLS_SEC_TRANS {}", l.join("")))
                }
                Err(e) => (Value::Null, format!("TAG_TLS_SEC_TRANS undecodable: {e}")),
            },
            ior::TAG_NULL_TAG => (Value::Null, "TAG_NULL_TAG (none)".to_string()),
            t => (
                Value::Null,
                format!(
                    "{} ({} bytes)",
                    ior::component_tag_name(t)
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("tag {}", tag_text(t))),
                    tm.data.len()
                ),
            ),
        };
        let a = &m.as_context;
        let s = &m.sas_context;
        let naming: Vec<String> = s
            .supported_naming_mechanisms
            .iter()
            .map(|o| oid_text(o))
            .collect();
        mechs.push(json!({
            "target_requires": options_json(m.target_requires),
            "transport": {
                "tag": tm.tag,
                "name": ior::component_tag_name(tm.tag),
                "hex": hex(&tm.data),
                "value": transport_value,
            },
            "as_context": {
                "target_supports": options_json(a.target_supports),
                "target_requires": options_json(a.target_requires),
                "client_authentication_mech": ior::oid_to_string(&a.client_authentication_mech),
                "client_authentication_mech_hex": hex(&a.client_authentication_mech),
                "target_name_hex": hex(&a.target_name),
            },
            "sas_context": {
                "target_supports": options_json(s.target_supports),
                "target_requires": options_json(s.target_requires),
                "privilege_authorities": s.privilege_authorities.iter()
                    .map(|(syntax, name)| json!({"syntax": syntax, "name_hex": hex(name)}))
                    .collect::<Vec<_>>(),
                "supported_naming_mechanisms": naming,
                "supported_identity_types": s.supported_identity_types,
            },
        }));
        lines.push(format!(
            "mechanism {}: target_requires {}",
            i + 1,
            options_text(m.target_requires)
        ));
        lines.push(format!("  transport {transport_text}"));
        lines.push(format!(
            "  as  supports {} requires {} mech {} target name {} bytes",
            options_text(a.target_supports),
            options_text(a.target_requires),
            oid_text(&a.client_authentication_mech),
            a.target_name.len()
        ));
        lines.push(format!(
            "  sas supports {} requires {} authorities {} naming {} identity types {:#x}",
            options_text(s.target_supports),
            options_text(s.target_requires),
            s.privilege_authorities.len(),
            if naming.is_empty() {
                "none".to_string()
            } else {
                naming.join(",")
            },
            s.supported_identity_types
        ));
    }
    (json!({"stateful": l.stateful, "mechanisms": mechs}), lines)
}

fn component_info(c: &TaggedComponent) -> ComponentInfo {
    let (value, lines, error) = match decode_component(c) {
        Ok(Some((v, lines))) => (v, lines, None),
        Ok(None) => (
            Value::Null,
            vec![format!("{} bytes: {}", c.data.len(), hex(&c.data))],
            None,
        ),
        Err(e) => (
            Value::Null,
            vec![format!("undecodable ({e}): {}", hex(&c.data))],
            Some(e),
        ),
    };
    ComponentInfo {
        tag: c.tag,
        name: ior::component_tag_name(c.tag),
        length: c.data.len(),
        hex: hex(&c.data),
        summary: lines.join("; "),
        value,
        error,
        lines,
    }
}

/// The JSON document (pretty, with a final newline).
pub fn render_json(d: &Decoded) -> String {
    let mut s = serde_json::to_string_pretty(d).expect("plain data serializes");
    s.push('\n');
    s
}

/// The text output.
pub fn render_text(d: &Decoded) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "Type ID: {:?}", d.type_id);
    match d.source {
        SourceKind::Ior => {}
        SourceKind::Corbaloc => {
            let _ = writeln!(
                s,
                "Source: corbaloc (no type id, no components: what a client knows before it calls)"
            );
        }
        SourceKind::Corbaname => {
            let _ = writeln!(
                s,
                "Source: corbaname: the naming context below; name {:?} (not looked up)",
                d.naming_name.as_deref().unwrap_or("")
            );
        }
    }
    if let Some(o) = d.byte_order {
        let _ = writeln!(s, "Byte order: {o}-endian");
    }
    if d.nil {
        let _ = writeln!(s, "Nil reference (no profiles)");
        return s;
    }
    let _ = writeln!(s, "Profiles: {}", d.profiles.len());
    for p in &d.profiles {
        let tag = match p.tag_name {
            Some(n) => format!("{n} (tag {})", p.tag),
            None => format!("unknown profile tag {} ({:#x})", p.tag, p.tag),
        };
        let _ = writeln!(s, "{}. {tag}, {} bytes", p.index, p.length);
        if let Some(ip) = &p.iiop {
            // A corbaloc's profiles have no byte order of their own.
            let order = match d.byte_order {
                Some(_) => format!(" ({}-endian)", ip.byte_order),
                None => String::new(),
            };
            let _ = writeln!(s, "   IIOP {} {} {}{order}", ip.version, ip.host, ip.port);
            let _ = writeln!(s, "   object key: {}", ip.object_key);
            let _ = writeln!(
                s,
                "   object key hex: {} ({} bytes)",
                ip.object_key_hex, ip.object_key_length
            );
        }
        if let Some(e) = &p.error {
            let _ = writeln!(s, "   undecodable: {e}");
        }
        if let Some(h) = &p.hex {
            let _ = writeln!(s, "   hex: {h}");
        }
        for c in &p.components {
            let name = match c.name {
                Some(n) => format!("{n} (tag {})", tag_text(c.tag)),
                None => format!("unknown component tag {}", tag_text(c.tag)),
            };
            let mut lines = c.lines.iter();
            let first = lines.next().map(String::as_str).unwrap_or("");
            let _ = writeln!(s, "   {name}: {first}");
            for l in lines {
                let _ = writeln!(s, "      {l}");
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orb_type_and_giop_arguments() {
        assert_eq!(parse_orb_type("omniORB"), Ok(0x4154_5400));
        assert_eq!(parse_orb_type("0x4A414300"), Ok(0x4A41_4300));
        assert_eq!(parse_orb_type("7"), Ok(7));
        assert!(parse_orb_type("orbix?").is_err());
        assert_eq!(crate::flags::parse_giop("1.1"), Ok(Version::V1_1));
        assert!(crate::flags::parse_giop("1.3").is_err());
    }

    #[test]
    fn text_of_our_ior() {
        let ior = Ior::builder("IDL:Bench/Perf:1.0")
            .iiop("127.0.0.1", 2809, &b"Bench"[..], &[("10.0.0.1", 7)])
            .build();
        let d = decode_str(&ior.to_string()).unwrap();
        assert_eq!(
            render_text(&d),
            "Type ID: \"IDL:Bench/Perf:1.0\"\n\
             Byte order: big-endian\n\
             Profiles: 1\n\
             1. TAG_INTERNET_IOP (tag 0), 116 bytes\n   \
             IIOP 1.2 127.0.0.1 2809 (big-endian)\n   \
             object key: Bench\n   \
             object key hex: 42656e6368 (5 bytes)\n   \
             TAG_ORB_TYPE (tag 0): iiopbench (0x49494f50)\n   \
             TAG_CODE_SETS (tag 1): char native ISO-8859-1 (0x00010001), conversion UTF-8 (0x05010001)\n      \
             wchar native UTF-16 (0x00010109), conversion UCS-2 (0x00010100)\n   \
             TAG_ALTERNATE_IIOP_ADDRESS (tag 3): 10.0.0.1:7\n"
        );
    }
}
