//! Generated arguments (`gen`): deterministic argument values for any TypeCode, so an
//! operation can be benchmarked without writing its arguments: sequences
//! of `len` elements (nested ones of `depth`), strings of `str`
//! characters, numbers from a seeded generator (splitmix64), unions
//! cycling through their members. Same spec and seed, same bytes.

use bytes::Bytes;
use iiop_cdr::{Any, Ior, TCKind, TcDef, TypeCode, Value};

use crate::error::JobError;

/// How to generate arguments: lengths and the seed. Its serde form is
/// `{ len = 16, str = 8, depth = 2, seed = 1 }` (any subset).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GenSpec {
    /// Length of outermost sequences.
    pub len: usize,
    /// Length of strings and wstrings.
    #[serde(rename = "str")]
    pub str_len: usize,
    /// Length of sequences nested in other sequences.
    #[serde(rename = "depth")]
    pub depth_len: usize,
    pub seed: u64,
}

impl Default for GenSpec {
    fn default() -> Self {
        GenSpec {
            len: 16,
            str_len: 8,
            depth_len: 2,
            seed: 1,
        }
    }
}

impl std::fmt::Display for GenSpec {
    /// As `parse` reads it: the keys that differ from the defaults
    /// (`len=1000`), empty for the defaults.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let d = GenSpec::default();
        let parts: Vec<String> = [
            ("len", self.len as u64, d.len as u64),
            ("str", self.str_len as u64, d.str_len as u64),
            ("depth", self.depth_len as u64, d.depth_len as u64),
            ("seed", self.seed, d.seed),
        ]
        .into_iter()
        .filter(|(_, v, default)| v != default)
        .map(|(k, v, _)| format!("{k}={v}"))
        .collect();
        f.write_str(&parts.join(","))
    }
}

/// Upper limit of any generated length (keeps generated values bounded).
pub const MAX_LEN: usize = 64 << 20;

impl GenSpec {
    /// Parse `len=N,str=N,depth=N,seed=N` (any subset, any order; sizes
    /// accept the size syntax, e.g. `len=64Ki`).
    pub fn parse(s: &str) -> Result<GenSpec, JobError> {
        let mut g = GenSpec::default();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((k, v)) = part.split_once('=') else {
                return Err(JobError::new(format!(
                    "`gen` {part:?}: expected key=value (len, str, depth, seed)"
                )));
            };
            let n: u64 = match v.trim().parse() {
                Ok(n) => n,
                Err(_) => crate::units::parse_size(v.trim())
                    .map_err(|e| JobError::new(format!("`gen` {k}: {e}")))?,
            };
            match k.trim() {
                "len" => g.len = n as usize,
                "str" => g.str_len = n as usize,
                "depth" => g.depth_len = n as usize,
                "seed" => g.seed = n,
                other => {
                    return Err(JobError::new(format!(
                        "`gen`: unknown key {other:?} (len, str, depth, seed)"
                    )))
                }
            }
        }
        g.validate()?;
        Ok(g)
    }

    /// Every length within [`MAX_LEN`].
    pub fn validate(&self) -> Result<(), JobError> {
        for (k, n) in [
            ("len", self.len),
            ("str", self.str_len),
            ("depth", self.depth_len),
        ] {
            if n > MAX_LEN {
                return Err(JobError::new(format!("`gen` {k}={n} exceeds {MAX_LEN}")));
            }
        }
        Ok(())
    }

    /// A fresh generator for this spec's seed.
    pub fn rng(&self) -> Rng {
        Rng(self.seed)
    }
}

/// splitmix64: tiny, deterministic, good enough for payload contents.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
}

/// A generated value of type `tc`.
pub fn generate(tc: &TypeCode, g: &GenSpec, r: &mut Rng) -> Value {
    Gen {
        g,
        nesting: 0,
        enclosing: Vec::new(),
    }
    .value(tc, r)
}

struct Gen<'a> {
    g: &'a GenSpec,
    /// Sequences entered so far (outermost gets `len`, nested `depth`).
    nesting: u32,
    enclosing: Vec<TypeCode>,
}

const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyz";

impl Gen<'_> {
    fn value(&mut self, tc: &TypeCode, r: &mut Rng) -> Value {
        use TCKind::*;
        let tc = match tc.def() {
            TcDef::Recursive { id } => {
                // Recursion ends with empty sequences below the top.
                match self.enclosing.iter().rev().find(|t| t.id() == Some(&**id)) {
                    Some(t) => t.clone(),
                    None => return Value::Null,
                }
            }
            _ => tc.clone(),
        };
        match tc.def() {
            TcDef::Alias { content, .. } => self.value(content, r),
            TcDef::Basic(k) => match k {
                tk_short => Value::Short(r.next_u64() as i16),
                tk_ushort => Value::UShort(r.next_u64() as u16),
                tk_long => Value::Long(r.next_u64() as i32),
                tk_ulong => Value::ULong(r.next_u64() as u32),
                tk_longlong => Value::LongLong(r.next_u64() as i64),
                tk_ulonglong => Value::ULongLong(r.next_u64()),
                tk_float => Value::Float((r.below(1_000_000) as f32) / 1000.0),
                tk_double => Value::Double((r.below(1 << 40) as f64) / 1024.0),
                tk_longdouble => Value::LongDouble([0; 16]),
                tk_boolean => Value::Boolean(r.next_u64() & 1 == 1),
                tk_char => Value::Char(LETTERS[r.below(26) as usize] as char),
                tk_wchar => Value::WChar(LETTERS[r.below(26) as usize] as char),
                tk_octet => Value::Octet(r.next_u64() as u8),
                tk_any => Value::Any(Box::new(Any {
                    tc: TypeCode::long(),
                    value: Value::Long(r.next_u64() as i32),
                })),
                tk_TypeCode => Value::TypeCode(TypeCode::long()),
                tk_Principal => Value::Principal(Bytes::new()),
                tk_void => Value::Void,
                _ => Value::Null,
            },
            TcDef::String { bound } => Value::String(self.text(*bound, r)),
            TcDef::WString { bound } => Value::WString(self.text(*bound, r)),
            TcDef::Fixed { digits, scale } => {
                let int_digits = (*digits as i32 - *scale as i32).max(0) as usize;
                let mut s = String::new();
                for i in 0..int_digits.min(6) {
                    let d = r.below(10) as u8;
                    if i == 0 && d == 0 {
                        continue;
                    }
                    s.push((b'0' + d) as char);
                }
                if s.is_empty() {
                    s.push('0');
                }
                if *scale > 0 {
                    s.push('.');
                    for _ in 0..*scale {
                        s.push((b'0' + r.below(10) as u8) as char);
                    }
                }
                Value::Fixed(s)
            }
            TcDef::Interface { .. } => Value::ObjRef(Box::new(Ior::nil())),
            TcDef::Enum { members, .. } => Value::Enum(r.below(members.len() as u64) as u32),
            TcDef::Struct { members, .. } => {
                self.enclosing.push(tc.clone());
                let v = Value::Struct(members.iter().map(|m| self.value(&m.tc, r)).collect());
                self.enclosing.pop();
                v
            }
            TcDef::Union {
                discriminator,
                default_index,
                members,
                ..
            } => {
                let i = r.below(members.len() as u64) as usize;
                let disc = if i as i32 == *default_index {
                    match super::json::default_disc(discriminator, members, *default_index) {
                        Some(d) => d,
                        None => members[0].label,
                    }
                } else {
                    members[i].label
                };
                self.enclosing.push(tc.clone());
                let v = self.value(&members[i].tc, r);
                self.enclosing.pop();
                Value::Union {
                    disc,
                    value: Box::new(v),
                }
            }
            TcDef::Sequence { element, bound } => {
                // Nested sequences get `depth` elements down to four levels
                // (which also ends recursive types), then none.
                let mut n = match self.nesting {
                    0 => self.g.len,
                    1..=3 => self.g.depth_len,
                    _ => 0,
                };
                if *bound != 0 {
                    n = n.min(*bound as usize);
                }
                self.items(element, n, r)
            }
            TcDef::Array { element, length } => self.items(element, *length as usize, r),
            TcDef::ValueBox { .. } | TcDef::Value { .. } | TcDef::Recursive { .. } => Value::Null,
        }
    }

    fn items(&mut self, element: &TypeCode, n: usize, r: &mut Rng) -> Value {
        self.nesting += 1;
        let el = element.unalias();
        let v = match el.def() {
            TcDef::Basic(TCKind::tk_octet) => {
                let mut b = vec![0u8; n];
                for c in b.chunks_mut(8) {
                    let x = r.next_u64().to_le_bytes();
                    c.copy_from_slice(&x[..c.len()]);
                }
                Value::OctetSeq(Bytes::from(b))
            }
            _ => {
                let items: Vec<Value> = (0..n).map(|_| self.value(element, r)).collect();
                Value::from_elements(element, items)
            }
        };
        self.nesting -= 1;
        v
    }

    fn text(&self, bound: u32, r: &mut Rng) -> String {
        let mut n = self.g.str_len;
        if bound != 0 {
            n = n.min(bound as usize);
        }
        (0..n)
            .map(|_| LETTERS[r.below(26) as usize] as char)
            .collect()
    }
}
