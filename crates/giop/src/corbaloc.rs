//! Interoperable Naming Service URLs (CORBA 3 §13.6.10): `corbaloc:` with
//! `iiop:`, `ssliop:` (TAO's spelling for IIOP over TLS) and `rir:` addresses and %-escaped keys, `corbaname:` with a
//! stringified name after `#`, and [`Target`], which accepts any reference
//! a user can type: `IOR:…`, `corbaloc:…`, `corbaname:…`, a file holding
//! one of them, or `-` for standard input.

use std::fmt;
use std::str::FromStr;

use bytes::Bytes;

use crate::error::{GiopError, Result};
use crate::header::Version;
use crate::ior::{IiopProfile, Ior};
use crate::key::unreserved;
pub use crate::key::{escape_key, unescape};

/// The IANA port of corbaloc.
pub const DEFAULT_PORT: u16 = 2809;

/// One address of a corbaloc URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjAddr {
    /// `iiop:[major.minor@]host[:port]` (`:host` is the same). Without a
    /// version the address means IIOP 1.0.
    Iiop {
        version: Option<Version>,
        host: String,
        port: Option<u16>,
        /// `ssliop:`: the port is a TLS port. Its profile carries
        /// TAG_SSL_SEC_TRANS, so it is IIOP 1.2 unless a version ≥ 1.1 is
        /// given (a 1.0 profile has no components).
        tls: bool,
    },
    /// `rir:` — the ORB's initial references.
    Rir,
}

impl ObjAddr {
    /// The version, 1.0 when not given (1.2 for `ssliop:`).
    pub fn version(&self) -> Version {
        match self {
            ObjAddr::Iiop {
                version, tls: true, ..
            } => version.unwrap_or(Version::V1_2),
            ObjAddr::Iiop { version, .. } => version.unwrap_or(Version::V1_0),
            ObjAddr::Rir => Version::V1_0,
        }
    }
}

/// A `corbaloc:` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corbaloc {
    pub addresses: Vec<ObjAddr>,
    /// The object key, unescaped.
    pub key: Bytes,
}

/// A `corbaname:` URL: a naming context's corbaloc plus a name in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corbaname {
    pub addresses: Vec<ObjAddr>,
    /// The naming context's key (`NameService` when omitted).
    pub key: Bytes,
    /// The stringified name after `#`, unescaped (`a/b.kind`).
    pub name: String,
}

/// One CosNaming name component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameComponent {
    pub id: String,
    pub kind: String,
}

fn parse_addr(a: &str, what: &'static str) -> Result<ObjAddr> {
    if a == "rir:" {
        return Ok(ObjAddr::Rir);
    }
    let (rest, tls) = if let Some(r) = a.strip_prefix("iiop:") {
        (r, false)
    } else if let Some(r) = a.strip_prefix("ssliop:") {
        (r, true)
    } else if let Some(r) = a.strip_prefix(':') {
        (r, false)
    } else {
        return Err(GiopError::reference(
            what,
            format!("unsupported address {a:?}"),
        ));
    };
    let (version, hostport) = match rest.split_once('@') {
        Some((v, hp)) => {
            let (maj, min) = v
                .split_once('.')
                .ok_or_else(|| GiopError::reference(what, format!("bad version {v:?}")))?;
            let p = |x: &str| {
                x.parse::<u8>()
                    .map_err(|_| GiopError::reference(what, format!("bad version {v:?}")))
            };
            (Some(Version::new(p(maj)?, p(min)?)?), hp)
        }
        None => (None, rest),
    };
    let (host, port) = if let Some(h) = hostport.strip_prefix('[') {
        let (h, after) = h
            .split_once(']')
            .ok_or_else(|| GiopError::reference(what, "unterminated [IPv6] host"))?;
        if h.contains('[') {
            return Err(GiopError::reference(what, format!("'[' inside [{h}]")));
        }
        if !(after.is_empty() || after.starts_with(':')) {
            return Err(GiopError::reference(
                what,
                format!("junk after ]: {after:?}"),
            ));
        }
        (h, after.strip_prefix(':'))
    } else {
        let (h, p) = match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        };
        // Only a [bracketed] host may hold ':' or brackets (IPv6), so that
        // every address prints back as it parsed (found by fuzzing).
        if h.contains([':', '[', ']']) {
            return Err(GiopError::reference(
                what,
                format!("host {h:?} needs [brackets]"),
            ));
        }
        (h, p)
    };
    if host.is_empty() {
        return Err(GiopError::reference(what, "empty host"));
    }
    let port = match port {
        None | Some("") => None,
        Some(p) => Some(
            p.parse::<u16>()
                .map_err(|_| GiopError::reference(what, format!("bad port {p:?}")))?,
        ),
    };
    if tls && version.is_some_and(|v| v.minor == 0) {
        return Err(GiopError::reference(
            what,
            "ssliop: needs IIOP 1.1 or later (a 1.0 profile cannot carry the SSL component)",
        ));
    }
    Ok(ObjAddr::Iiop {
        version,
        host: host.to_owned(),
        port,
        tls,
    })
}

fn parse_addresses(list: &str, what: &'static str) -> Result<Vec<ObjAddr>> {
    let addrs = list
        .split(',')
        .map(|a| parse_addr(a, what))
        .collect::<Result<Vec<_>>>()?;
    if addrs.contains(&ObjAddr::Rir) && addrs.len() > 1 {
        return Err(GiopError::reference(
            what,
            "rir: cannot be combined with other addresses",
        ));
    }
    Ok(addrs)
}

fn fmt_addrs(f: &mut fmt::Formatter<'_>, addrs: &[ObjAddr]) -> fmt::Result {
    for (i, a) in addrs.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        match a {
            ObjAddr::Rir => f.write_str("rir:")?,
            ObjAddr::Iiop {
                version,
                host,
                port,
                tls,
            } => {
                f.write_str(if *tls { "ssliop:" } else { "iiop:" })?;
                if let Some(v) = version {
                    write!(f, "{v}@")?;
                }
                if host.contains(':') {
                    write!(f, "[{host}]")?;
                } else {
                    f.write_str(host)?;
                }
                if let Some(p) = port {
                    write!(f, ":{p}")?;
                }
            }
        }
    }
    Ok(())
}

impl Corbaloc {
    /// The IOR this URL denotes (one IIOP profile per iiop address, of the
    /// address's version, port 2809 when not given; no components, as an
    /// ORB knows nothing more). `None` for `rir:`.
    pub fn to_ior(&self, type_id: &str) -> Option<Ior> {
        let mut b = Ior::builder(type_id);
        for a in &self.addresses {
            if let ObjAddr::Iiop {
                version,
                host,
                port,
                tls,
            } = a
            {
                let port = port.unwrap_or(DEFAULT_PORT);
                let mut p = IiopProfile::new(host.clone(), port, self.key.clone());
                p.components.clear();
                if *tls {
                    p.version = version.unwrap_or(Version::V1_2);
                    p = crate::ior::tls_only_profile(p, false);
                } else {
                    p.version = version.unwrap_or(Version::V1_0);
                }
                b = b.profile(&p);
            }
        }
        let ior = b.build();
        (!ior.is_nil()).then_some(ior)
    }
}

impl FromStr for Corbaloc {
    type Err = GiopError;

    fn from_str(s: &str) -> Result<Corbaloc> {
        let rest = s
            .trim()
            .strip_prefix("corbaloc:")
            .ok_or_else(|| GiopError::reference("corbaloc", "does not start with corbaloc:"))?;
        let (addrs, key) = rest
            .split_once('/')
            .ok_or_else(|| GiopError::reference("corbaloc", "no /key"))?;
        Ok(Corbaloc {
            addresses: parse_addresses(addrs, "corbaloc")?,
            key: Bytes::from(unescape(key, "corbaloc")?),
        })
    }
}

impl fmt::Display for Corbaloc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("corbaloc:")?;
        fmt_addrs(f, &self.addresses)?;
        write!(f, "/{}", escape_key(&self.key))
    }
}

impl Corbaname {
    /// The naming context's corbaloc.
    pub fn naming_context(&self) -> Corbaloc {
        Corbaloc {
            addresses: self.addresses.clone(),
            key: self.key.clone(),
        }
    }

    /// The name split into components: `/` separates components, `.`
    /// separates id from kind, `\` escapes either.
    pub fn components(&self) -> Result<Vec<NameComponent>> {
        parse_name(&self.name)
    }
}

/// Parse a stringified CosNaming name (`a/b.kind`, `\` escapes).
pub fn parse_name(s: &str) -> Result<Vec<NameComponent>> {
    let mut out = Vec::new();
    if s.is_empty() {
        return Ok(out);
    }
    let (mut id, mut kind, mut in_kind) = (String::new(), String::new(), false);
    let mut it = s.chars();
    while let Some(c) = it.next() {
        match c {
            '\\' => {
                let n = it
                    .next()
                    .ok_or_else(|| GiopError::reference("name", "trailing \\"))?;
                if in_kind {
                    kind.push(n)
                } else {
                    id.push(n)
                }
            }
            '/' => {
                out.push(NameComponent {
                    id: std::mem::take(&mut id),
                    kind: std::mem::take(&mut kind),
                });
                in_kind = false;
            }
            '.' if !in_kind => in_kind = true,
            c => {
                if in_kind {
                    kind.push(c)
                } else {
                    id.push(c)
                }
            }
        }
    }
    out.push(NameComponent { id, kind });
    if out.iter().any(|c| c.id.is_empty() && c.kind.is_empty()) {
        return Err(GiopError::reference(
            "name",
            format!("empty component in {s:?}"),
        ));
    }
    Ok(out)
}

impl FromStr for Corbaname {
    type Err = GiopError;

    fn from_str(s: &str) -> Result<Corbaname> {
        let rest = s
            .trim()
            .strip_prefix("corbaname:")
            .ok_or_else(|| GiopError::reference("corbaname", "does not start with corbaname:"))?;
        let (loc, name) = match rest.split_once('#') {
            Some((l, n)) => (l, n),
            None => (rest, ""),
        };
        let (addrs, key) = match loc.split_once('/') {
            Some((a, k)) => (a, unescape(k, "corbaname")?),
            None => (loc, b"NameService".to_vec()),
        };
        let name_bytes = unescape(name, "corbaname")?;
        let name = String::from_utf8(name_bytes)
            .map_err(|_| GiopError::reference("corbaname", "name is not UTF-8"))?;
        Ok(Corbaname {
            addresses: parse_addresses(addrs, "corbaname")?,
            key: Bytes::from(if key.is_empty() {
                b"NameService".to_vec()
            } else {
                key
            }),
            name,
        })
    }
}

impl fmt::Display for Corbaname {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("corbaname:")?;
        fmt_addrs(f, &self.addresses)?;
        write!(f, "/{}", escape_key(&self.key))?;
        if !self.name.is_empty() {
            f.write_str("#")?;
            for &b in self.name.as_bytes() {
                if unreserved(b) {
                    write!(f, "{}", b as char)?;
                } else {
                    write!(f, "%{b:02x}")?;
                }
            }
        }
        Ok(())
    }
}

/// Any object reference a user can give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Ior(Ior),
    Corbaloc(Corbaloc),
    Corbaname(Corbaname),
}

impl FromStr for Target {
    type Err = GiopError;

    fn from_str(s: &str) -> Result<Target> {
        let s = s.trim();
        if s.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("IOR:")) {
            Ok(Target::Ior(s.parse()?))
        } else if s.starts_with("corbaloc:") {
            Ok(Target::Corbaloc(s.parse()?))
        } else if s.starts_with("corbaname:") {
            Ok(Target::Corbaname(s.parse()?))
        } else {
            Err(GiopError::reference(
                "reference",
                format!(
                    "{:?} is not IOR:, corbaloc: or corbaname:",
                    s.chars().take(40).collect::<String>()
                ),
            ))
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Ior(i) => i.fmt(f),
            Target::Corbaloc(c) => c.fmt(f),
            Target::Corbaname(c) => c.fmt(f),
        }
    }
}

impl Target {
    /// Resolve a command-line argument: a reference itself, `-` for the
    /// first non-empty line of standard input, or a file holding one.
    pub fn load(arg: &str) -> std::result::Result<Target, TargetError> {
        let text = if arg == "-" {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin().lock(), &mut s).map_err(|e| {
                TargetError::Io {
                    path: "-".into(),
                    message: e.to_string(),
                }
            })?;
            s
        } else if arg.starts_with("IOR:")
            || arg.starts_with("ior:")
            || arg.starts_with("corbaloc:")
            || arg.starts_with("corbaname:")
        {
            arg.to_owned()
        } else {
            std::fs::read_to_string(arg).map_err(|e| TargetError::Io {
                path: arg.into(),
                message: e.to_string(),
            })?
        };
        let line = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("");
        line.parse().map_err(TargetError::Parse)
    }

    /// The IOR to contact directly (`None` for corbaname and rir:, which
    /// need a naming lookup / an ORB's initial references).
    pub fn direct_ior(&self) -> Option<Ior> {
        match self {
            Target::Ior(i) => Some(i.clone()),
            Target::Corbaloc(c) => c.to_ior(""),
            Target::Corbaname(_) => None,
        }
    }
}

/// Why [`Target::load`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("cannot read {path}: {message}")]
    Io { path: String, message: String },
    #[error(transparent)]
    Parse(GiopError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corbaloc_parse_and_print() {
        let c: Corbaloc = "corbaloc:iiop:1.2@host.example:1234,:other/My%20Key%2fx"
            .parse()
            .unwrap();
        assert_eq!(
            c.addresses,
            vec![
                ObjAddr::Iiop {
                    version: Some(Version::V1_2),
                    host: "host.example".into(),
                    port: Some(1234),
                    tls: false,
                },
                ObjAddr::Iiop {
                    version: None,
                    host: "other".into(),
                    port: None,
                    tls: false,
                }
            ]
        );
        assert_eq!(&c.key[..], b"My Key/x");
        assert_eq!(
            c.to_string(),
            "corbaloc:iiop:1.2@host.example:1234,iiop:other/My%20Key%2fx"
        );
        let ior = c.to_ior("").unwrap();
        let p = ior.iiop_profile().unwrap();
        assert_eq!((p.port, p.version), (1234, Version::V1_2));
        let second = ior.profiles[1].iiop().unwrap().unwrap();
        assert_eq!((second.port, second.version), (DEFAULT_PORT, Version::V1_0));
        let v6: Corbaloc = "corbaloc:iiop:[::1]:5/k".parse().unwrap();
        assert_eq!(v6.to_string(), "corbaloc:iiop:[::1]:5/k");
    }

    #[test]
    fn ssliop_addresses_become_tls_offers() {
        let c: Corbaloc = "corbaloc:ssliop:127.0.0.1:2810/Bench".parse().unwrap();
        assert_eq!(c.to_string(), "corbaloc:ssliop:127.0.0.1:2810/Bench");
        assert_eq!(c.addresses[0].version(), Version::V1_2);
        let p = c.to_ior("").unwrap().iiop_profile().unwrap();
        assert_eq!((p.port, p.version), (0, Version::V1_2));
        let offer = crate::ior::tls_offer(&p).unwrap();
        assert_eq!((offer.host.as_str(), offer.port), ("127.0.0.1", 2810));
        let e = "corbaloc:ssliop:1.0@h:1/k".parse::<Corbaloc>().unwrap_err();
        assert!(e.to_string().contains("needs IIOP 1.1"), "{e}");
    }

    #[test]
    fn rir_and_errors() {
        let c: Corbaloc = "corbaloc:rir:/NameService".parse().unwrap();
        assert_eq!(c.addresses, vec![ObjAddr::Rir]);
        assert_eq!(c.to_string(), "corbaloc:rir:/NameService");
        assert!(c.to_ior("").is_none());
        for bad in [
            "corbaloc:iiop:h:99999/k",
            "corbaloc:iiop:h:1",
            "corbaloc:http:h/k",
            "corbaloc:iiop:1.9@h/k",
            "corbaloc:iiop:h/%zz",
            "corbaloc:rir:,iiop:h/k",
        ] {
            assert!(bad.parse::<Corbaloc>().is_err(), "{bad}");
        }
    }

    #[test]
    fn corbaname_and_names() {
        let c: Corbaname = "corbaname::127.0.0.1:2809#a/b.kind/c%5c.d".parse().unwrap();
        assert_eq!(&c.key[..], b"NameService");
        assert_eq!(c.name, "a/b.kind/c\\.d");
        assert_eq!(
            c.components().unwrap(),
            vec![
                NameComponent {
                    id: "a".into(),
                    kind: "".into()
                },
                NameComponent {
                    id: "b".into(),
                    kind: "kind".into()
                },
                NameComponent {
                    id: "c.d".into(),
                    kind: "".into()
                },
            ]
        );
        assert_eq!(
            c.to_string(),
            "corbaname:iiop:127.0.0.1:2809/NameService#a/b.kind/c%5c.d"
        );
        assert!(parse_name("a//b").is_err());
    }

    #[test]
    fn target_dispatch() {
        assert!(matches!(
            "corbaloc::h/k".parse::<Target>(),
            Ok(Target::Corbaloc(_))
        ));
        assert!(matches!(
            "corbaname::h#x".parse::<Target>(),
            Ok(Target::Corbaname(_))
        ));
        assert!(matches!(
            "http://x".parse::<Target>(),
            Err(GiopError::BadReference { .. })
        ));
        let dir = std::env::temp_dir().join(format!("giop-target-{}", std::process::id()));
        std::fs::write(&dir, "\n  corbaloc::h:1/k\n").unwrap();
        let t = Target::load(dir.to_str().unwrap()).unwrap();
        std::fs::remove_file(&dir).unwrap();
        assert_eq!(t.to_string(), "corbaloc:iiop:h:1/k");
        assert!(matches!(
            Target::load("/nonexistent/giop/x"),
            Err(TargetError::Io { .. })
        ));
    }
}
