//! The JSON mapping of IDL values (docs/json-mapping.md): [`to_json`]
//! turns a dynamic [`Value`] of a [`TypeCode`] into JSON, [`from_json`]
//! turns JSON back into the `Value` the CDR decoder would have produced
//! (packed sequences, column-wise struct sequences), so that
//! `from_json(tc, to_json(tc, v)) == v` for every value `v` a decode can
//! produce. TypeCodes themselves map to JSON by [`typecode_to_json`] /
//! [`typecode_from_json`] (used by `any` and `TypeCode` values).
//!
//! Errors name the JSON path of the offending element (`args.s[3].d`).

use base64::Engine;
use bytes::Bytes;
use iiop_cdr::typecode::{StructMember, UnionMember};
use iiop_cdr::{Any, ByteOrder, Ior, TCKind, TcDef, TypeCode, Value};
use serde_json::{json, Map, Number, Value as Json};

/// Largest integer magnitude written as a JSON number (exact in an IEEE
/// double); larger 64-bit integers are written as decimal strings.
pub const MAX_EXACT: u64 = 1 << 53;

/// A mapping failure, with the JSON path where it happened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct JsonError {
    pub path: String,
    pub message: String,
}

type R<T> = Result<T, JsonError>;

fn err<T>(path: &str, message: impl Into<String>) -> R<T> {
    Err(JsonError {
        path: if path.is_empty() {
            "value".into()
        } else {
            path.into()
        },
        message: message.into(),
    })
}

/// Resolves IDL type names (`::Bench::Variant`) to TypeCodes, for the
/// `"type"` of an `any` written as a name instead of a description.
pub trait TypeNames {
    fn typecode_of(&self, name: &str) -> Option<TypeCode>;
}

/// No names known: `any` types must be JSON TypeCode descriptions.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoNames;

impl TypeNames for NoNames {
    fn typecode_of(&self, _: &str) -> Option<TypeCode> {
        None
    }
}

impl TypeNames for iiop_idl::Spec {
    fn typecode_of(&self, name: &str) -> Option<TypeCode> {
        let n = name.strip_prefix("::").unwrap_or(name);
        let id = self.lookup(n).or_else(|| self.lookup(name))?;
        self.def_typecode(id).ok()
    }
}

// ---------------------------------------------------------------- to JSON

/// `v` (a value of type `tc`) as JSON.
pub fn to_json(tc: &TypeCode, v: &Value) -> R<Json> {
    Enc::default().enc(tc, v, "")
}

#[derive(Default)]
struct Enc {
    enclosing: Vec<TypeCode>,
}

fn resolve<'a>(enclosing: &'a [TypeCode], tc: &'a TypeCode, path: &str) -> R<&'a TypeCode> {
    match tc.def() {
        TcDef::Recursive { id } => match enclosing.iter().rev().find(|t| t.id() == Some(&**id)) {
            Some(t) => Ok(t),
            None => err(
                path,
                format!("recursive reference to {id} outside its type"),
            ),
        },
        _ => Ok(tc),
    }
}

fn int_json_i(v: i64) -> Json {
    if v.unsigned_abs() <= MAX_EXACT {
        Json::from(v)
    } else {
        Json::String(v.to_string())
    }
}

fn int_json_u(v: u64) -> Json {
    if v <= MAX_EXACT {
        Json::from(v)
    } else {
        Json::String(v.to_string())
    }
}

fn f64_json(v: f64) -> Json {
    if v.is_nan() {
        Json::String("NaN".into())
    } else if v.is_infinite() {
        Json::String(if v > 0.0 { "Infinity" } else { "-Infinity" }.into())
    } else {
        Json::Number(Number::from_f64(v).expect("finite"))
    }
}

fn f32_json(v: f32) -> Json {
    if !v.is_finite() {
        return f64_json(v as f64);
    }
    // The shortest decimal that reads back as this f32, when that holds
    // through f64 too; else the exact f64 value.
    let short: f64 = format!("{v}").parse().unwrap_or(v as f64);
    let x = if short as f32 == v { short } else { v as f64 };
    f64_json(x)
}

fn latin1(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| b as char).collect()
}

fn b64(b: &[u8]) -> Json {
    Json::String(base64::engine::general_purpose::STANDARD.encode(b))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn is_char_like(tc: &TypeCode) -> bool {
    matches!(
        tc.unalias().def(),
        TcDef::Basic(TCKind::tk_char) | TcDef::Basic(TCKind::tk_wchar)
    )
}

/// A union discriminator value as JSON.
fn label_json(disc_tc: &TypeCode, d: i64) -> Json {
    match disc_tc.unalias().def() {
        TcDef::Enum { members, .. } => members
            .get(d as usize)
            .map(|m| Json::String(m.clone()))
            .unwrap_or(Json::from(d)),
        TcDef::Basic(TCKind::tk_boolean) => Json::Bool(d != 0),
        TcDef::Basic(TCKind::tk_char) | TcDef::Basic(TCKind::tk_wchar) => {
            Json::String(char::from_u32(d as u32).unwrap_or('\u{fffd}').to_string())
        }
        TcDef::Basic(TCKind::tk_ulonglong) => int_json_u(d as u64),
        _ => int_json_i(d),
    }
}

impl Enc {
    fn enc(&mut self, tc: &TypeCode, v: &Value, path: &str) -> R<Json> {
        let tc = resolve(&self.enclosing, tc, path)?.clone();
        let mismatch = || {
            err::<Json>(
                path,
                format!(
                    "a {} value cannot be of type {}",
                    v.variant_name(),
                    tc.kind().name()
                ),
            )
        };
        Ok(match (tc.def(), v) {
            (TcDef::Alias { content, .. }, _) => return self.enc(content, v, path),
            (TcDef::Basic(_), Value::Null) | (TcDef::Basic(_), Value::Void) => Json::Null,
            (_, Value::Short(x)) => Json::from(*x),
            (_, Value::UShort(x)) => Json::from(*x),
            (_, Value::Long(x)) => Json::from(*x),
            (_, Value::ULong(x)) => Json::from(*x),
            (_, Value::LongLong(x)) => int_json_i(*x),
            (_, Value::ULongLong(x)) => int_json_u(*x),
            (_, Value::Float(x)) => f32_json(*x),
            (_, Value::Double(x)) => f64_json(*x),
            (_, Value::LongDouble(b)) => Json::String(hex(b)),
            (_, Value::Boolean(b)) => Json::Bool(*b),
            (_, Value::Char(c)) | (_, Value::WChar(c)) => Json::String(c.to_string()),
            (_, Value::Octet(x)) => Json::from(*x),
            (_, Value::String(s)) | (_, Value::WString(s)) | (_, Value::Fixed(s)) => {
                Json::String(s.clone())
            }
            (TcDef::Enum { members, .. }, Value::Enum(i)) => match members.get(*i as usize) {
                Some(m) => Json::String(m.clone()),
                None => return err(path, format!("enumerator index {i} out of range")),
            },
            (
                TcDef::Struct {
                    members, kind, id, ..
                },
                Value::Struct(vals),
            ) => {
                if vals.len() != members.len() {
                    return err(
                        path,
                        format!("{} members for {}", vals.len(), members.len()),
                    );
                }
                let target = tc.is_recursion_target();
                if target {
                    self.enclosing.push(tc.clone());
                }
                let mut m = Map::new();
                if *kind == TCKind::tk_except {
                    m.insert("_id".into(), Json::String(id.to_string()));
                }
                for (mem, x) in members.iter().zip(vals) {
                    let p = format!("{path}.{}", mem.name);
                    m.insert(mem.name.clone(), self.enc(&mem.tc, x, &p)?);
                }
                if target {
                    self.enclosing.pop();
                }
                Json::Object(m)
            }
            (
                TcDef::Union {
                    discriminator,
                    default_index,
                    members,
                    ..
                },
                Value::Union { disc, value },
            ) => {
                let i = members
                    .iter()
                    .enumerate()
                    .find(|(i, m)| *i as i32 != *default_index && m.label == *disc)
                    .map(|(i, _)| i)
                    .or_else(|| (*default_index >= 0).then_some(*default_index as usize));
                let Some(i) = i else {
                    return err(path, format!("discriminator {disc} selects no member"));
                };
                let target = tc.is_recursion_target();
                if target {
                    self.enclosing.push(tc.clone());
                }
                let mut m = Map::new();
                m.insert("_d".into(), label_json(discriminator, *disc));
                let name = members[i].name.clone();
                let p = format!("{path}.{name}");
                m.insert(name, self.enc(&members[i].tc, value, &p)?);
                if target {
                    self.enclosing.pop();
                }
                Json::Object(m)
            }
            (
                TcDef::Sequence { element, .. } | TcDef::Array { element, .. },
                Value::Seq(_)
                | Value::StructSeq(_)
                | Value::ShortSeq(_)
                | Value::UShortSeq(_)
                | Value::LongSeq(_)
                | Value::ULongSeq(_)
                | Value::LongLongSeq(_)
                | Value::ULongLongSeq(_)
                | Value::FloatSeq(_)
                | Value::DoubleSeq(_)
                | Value::BooleanSeq(_)
                | Value::CharSeq(_)
                | Value::OctetSeq(_)
                | Value::EnumSeq(_),
            ) => self.seq(element, v, path)?,
            (TcDef::Basic(TCKind::tk_any), Value::Any(a)) => {
                // An any's TypeCode is self-contained.
                let outer = std::mem::take(&mut self.enclosing);
                let value = self.enc(&a.tc, &a.value, &format!("{path}.value"));
                self.enclosing = outer;
                json!({"type": typecode_to_json(&a.tc), "value": value?})
            }
            (TcDef::Basic(TCKind::tk_TypeCode), Value::TypeCode(t)) => typecode_to_json(t),
            (TcDef::Basic(TCKind::tk_Principal), Value::Principal(b)) => b64(b),
            (TcDef::Interface { .. }, Value::ObjRef(ior)) => {
                if **ior == Ior::nil() {
                    Json::Null
                } else {
                    // Big-endian text whatever order carried the reference,
                    // so a value prints the same from any peer.
                    let mut text = Ior::clone(ior);
                    text.order = ByteOrder::Big;
                    Json::String(text.to_string())
                }
            }
            _ => return mismatch(),
        })
    }

    fn seq(&mut self, element: &TypeCode, v: &Value, path: &str) -> R<Json> {
        let arr = |it: Vec<Json>| Json::Array(it);
        Ok(match v {
            Value::OctetSeq(b) => b64(b),
            Value::CharSeq(b) => Json::String(latin1(b)),
            Value::ShortSeq(x) => arr(x.iter().map(|&v| Json::from(v)).collect()),
            Value::UShortSeq(x) => arr(x.iter().map(|&v| Json::from(v)).collect()),
            Value::LongSeq(x) => arr(x.iter().map(|&v| Json::from(v)).collect()),
            Value::ULongSeq(x) => arr(x.iter().map(|&v| Json::from(v)).collect()),
            Value::LongLongSeq(x) => arr(x.iter().map(|&v| int_json_i(v)).collect()),
            Value::ULongLongSeq(x) => arr(x.iter().map(|&v| int_json_u(v)).collect()),
            Value::FloatSeq(x) => arr(x.iter().map(|&v| f32_json(v)).collect()),
            Value::DoubleSeq(x) => arr(x.iter().map(|&v| f64_json(v)).collect()),
            Value::BooleanSeq(x) => arr(x.iter().map(|&v| Json::Bool(v)).collect()),
            Value::Seq(items) if is_char_like(element) => {
                let mut s = String::new();
                for (i, it) in items.iter().enumerate() {
                    match it {
                        Value::WChar(c) | Value::Char(c) => s.push(*c),
                        other => {
                            return err(
                                &format!("{path}[{i}]"),
                                format!("{} in a character sequence", other.variant_name()),
                            )
                        }
                    }
                }
                Json::String(s)
            }
            _ => {
                let n = v.len().unwrap_or(0);
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    let e = v.element(i).expect("index below len");
                    out.push(self.enc(element, &e, &format!("{path}[{i}]"))?);
                }
                Json::Array(out)
            }
        })
    }
}

// ------------------------------------------------------------ TypeCodes

/// IDL names of the kinds without parameters.
const BASIC_NAMES: &[(TCKind, &str)] = &[
    (TCKind::tk_null, "null"),
    (TCKind::tk_void, "void"),
    (TCKind::tk_short, "short"),
    (TCKind::tk_long, "long"),
    (TCKind::tk_ushort, "unsigned short"),
    (TCKind::tk_ulong, "unsigned long"),
    (TCKind::tk_float, "float"),
    (TCKind::tk_double, "double"),
    (TCKind::tk_boolean, "boolean"),
    (TCKind::tk_char, "char"),
    (TCKind::tk_octet, "octet"),
    (TCKind::tk_any, "any"),
    (TCKind::tk_TypeCode, "TypeCode"),
    (TCKind::tk_Principal, "Principal"),
    (TCKind::tk_longlong, "long long"),
    (TCKind::tk_ulonglong, "unsigned long long"),
    (TCKind::tk_longdouble, "long double"),
    (TCKind::tk_wchar, "wchar"),
];

/// A TypeCode as JSON: kinds without parameters as their IDL name
/// (`"long"`, `"unsigned long long"`), unbounded `"string"`/`"wstring"`,
/// others as an object with `"kind"` and the parameters.
pub fn typecode_to_json(tc: &TypeCode) -> Json {
    match tc.def() {
        TcDef::Basic(k) => match BASIC_NAMES.iter().find(|(b, _)| b == k) {
            Some((_, n)) => Json::String((*n).into()),
            None => json!({"kind": k.name()}),
        },
        TcDef::String { bound: 0 } => "string".into(),
        TcDef::WString { bound: 0 } => "wstring".into(),
        TcDef::String { bound } => json!({"kind": "string", "bound": bound}),
        TcDef::WString { bound } => json!({"kind": "wstring", "bound": bound}),
        TcDef::Fixed { digits, scale } => {
            json!({"kind": "fixed", "digits": digits, "scale": scale})
        }
        TcDef::Interface { kind, id, name } => {
            json!({"kind": kind_short(*kind), "id": &**id, "name": name})
        }
        TcDef::Struct {
            kind,
            id,
            name,
            members,
        } => json!({
            "kind": kind_short(*kind), "id": &**id, "name": name,
            "members": members.iter().map(|m| json!({"name": m.name, "type": typecode_to_json(&m.tc)})).collect::<Vec<_>>(),
        }),
        TcDef::Union {
            id,
            name,
            discriminator,
            default_index,
            members,
        } => json!({
            "kind": "union", "id": &**id, "name": name,
            "discriminator": typecode_to_json(discriminator),
            "default": default_index,
            "members": members.iter().map(|m| json!({"label": m.label, "name": m.name, "type": typecode_to_json(&m.tc)})).collect::<Vec<_>>(),
        }),
        TcDef::Enum { id, name, members } => {
            json!({"kind": "enum", "id": &**id, "name": name, "members": members})
        }
        TcDef::Sequence { element, bound } => {
            json!({"kind": "sequence", "element": typecode_to_json(element), "bound": bound})
        }
        TcDef::Array { element, length } => {
            json!({"kind": "array", "element": typecode_to_json(element), "length": length})
        }
        TcDef::Alias { id, name, content } => {
            json!({"kind": "alias", "id": &**id, "name": name, "content": typecode_to_json(content)})
        }
        TcDef::ValueBox { id, name, content } => {
            json!({"kind": "value_box", "id": &**id, "name": name, "content": typecode_to_json(content)})
        }
        TcDef::Value {
            kind,
            id,
            name,
            modifier,
            base,
            members,
        } => json!({
            "kind": kind_short(*kind), "id": &**id, "name": name, "modifier": modifier,
            "base": base.as_ref().map(typecode_to_json),
            "members": members.iter().map(|m| json!({"name": m.name, "type": typecode_to_json(&m.tc), "visibility": m.visibility})).collect::<Vec<_>>(),
        }),
        TcDef::Recursive { id } => json!({"kind": "recursive", "id": &**id}),
    }
}

fn kind_short(k: TCKind) -> &'static str {
    k.name().strip_prefix("tk_").unwrap_or(k.name())
}

fn kind_from_short(s: &str) -> Option<TCKind> {
    (0..=40u32)
        .filter_map(TCKind::from_u32)
        .find(|k| kind_short(*k) == s)
}

/// Reads a TypeCode written by [`typecode_to_json`] (or an IDL type name
/// `names` knows).
pub fn typecode_from_json(j: &Json, names: &dyn TypeNames) -> R<TypeCode> {
    tc_from(j, names, "type")
}

fn tc_from(j: &Json, names: &dyn TypeNames, path: &str) -> R<TypeCode> {
    let bad = |e: iiop_cdr::CdrError| JsonError {
        path: path.into(),
        message: e.to_string(),
    };
    match j {
        Json::String(s) => {
            let s = s.trim();
            if let Some((k, _)) = BASIC_NAMES.iter().find(|(_, n)| *n == s) {
                return Ok(TypeCode::basic(*k));
            }
            match s {
                "string" => Ok(TypeCode::string(0)),
                "wstring" => Ok(TypeCode::wstring(0)),
                "Object" => Ok(TypeCode::objref("IDL:omg.org/CORBA/Object:1.0", "Object")),
                _ => names.typecode_of(s).ok_or_else(|| JsonError {
                    path: path.into(),
                    message: format!("unknown type name {s:?}"),
                }),
            }
        }
        Json::Object(o) => {
            let kind = o.get("kind").and_then(Json::as_str).unwrap_or("");
            let st = |k: &str| -> R<String> {
                match o.get(k).and_then(Json::as_str) {
                    Some(s) => Ok(s.to_string()),
                    None => err(path, format!("{kind} TypeCode needs a string {k:?}")),
                }
            };
            let num = |k: &str| -> R<i64> {
                match o.get(k).and_then(Json::as_i64) {
                    Some(n) => Ok(n),
                    None => err(path, format!("{kind} TypeCode needs an integer {k:?}")),
                }
            };
            let sub = |k: &str| -> R<TypeCode> {
                match o.get(k) {
                    Some(x) => tc_from(x, names, &format!("{path}.{k}")),
                    None => err(path, format!("{kind} TypeCode needs {k:?}")),
                }
            };
            let list = |k: &str| -> R<&Vec<Json>> {
                match o.get(k).and_then(Json::as_array) {
                    Some(a) => Ok(a),
                    None => err(path, format!("{kind} TypeCode needs an array {k:?}")),
                }
            };
            let u32_of = |k: &str| -> R<u32> {
                u32::try_from(num(k)?).or_else(|_| err(path, format!("{k} out of range")))
            };
            Ok(match kind {
                "string" => TypeCode::string(u32_of("bound")?),
                "wstring" => TypeCode::wstring(u32_of("bound")?),
                "fixed" => {
                    TypeCode::fixed(num("digits")? as u16, num("scale")? as i16).map_err(bad)?
                }
                "objref" | "native" | "abstract_interface" | "local_interface" | "component"
                | "home" => TypeCode::new(TcDef::Interface {
                    kind: kind_from_short(kind).expect("listed kind"),
                    id: st("id")?.into(),
                    name: st("name")?,
                })
                .map_err(bad)?,
                "struct" | "except" => {
                    let mut members = Vec::new();
                    for (i, m) in list("members")?.iter().enumerate() {
                        let p = format!("{path}.members[{i}]");
                        members.push(StructMember {
                            name: m.get("name").and_then(Json::as_str).unwrap_or("").into(),
                            tc: tc_from(m.get("type").unwrap_or(&Json::Null), names, &p)?,
                        });
                    }
                    TypeCode::new(TcDef::Struct {
                        kind: kind_from_short(kind).expect("listed kind"),
                        id: st("id")?.into(),
                        name: st("name")?,
                        members,
                    })
                    .map_err(bad)?
                }
                "union" => {
                    let mut members = Vec::new();
                    for (i, m) in list("members")?.iter().enumerate() {
                        let p = format!("{path}.members[{i}]");
                        members.push(UnionMember {
                            label: m.get("label").and_then(Json::as_i64).unwrap_or(0),
                            name: m.get("name").and_then(Json::as_str).unwrap_or("").into(),
                            tc: tc_from(m.get("type").unwrap_or(&Json::Null), names, &p)?,
                        });
                    }
                    TypeCode::new(TcDef::Union {
                        id: st("id")?.into(),
                        name: st("name")?,
                        discriminator: sub("discriminator")?,
                        default_index: num("default")? as i32,
                        members,
                    })
                    .map_err(bad)?
                }
                "enum" => TypeCode::new(TcDef::Enum {
                    id: st("id")?.into(),
                    name: st("name")?,
                    members: list("members")?
                        .iter()
                        .map(|m| m.as_str().unwrap_or("").to_string())
                        .collect(),
                })
                .map_err(bad)?,
                "sequence" => TypeCode::sequence(sub("element")?, u32_of("bound")?),
                "array" => TypeCode::array(sub("element")?, u32_of("length")?),
                "alias" => TypeCode::alias(&st("id")?, &st("name")?, sub("content")?),
                "value_box" => TypeCode::value_box(&st("id")?, &st("name")?, sub("content")?),
                "recursive" => TypeCode::recursive(&st("id")?),
                "value" | "event" => {
                    let mut members = Vec::new();
                    for (i, m) in list("members")?.iter().enumerate() {
                        let p = format!("{path}.members[{i}]");
                        members.push(iiop_cdr::typecode::ValueMember {
                            name: m.get("name").and_then(Json::as_str).unwrap_or("").into(),
                            tc: tc_from(m.get("type").unwrap_or(&Json::Null), names, &p)?,
                            visibility: m.get("visibility").and_then(Json::as_i64).unwrap_or(1)
                                as i16,
                        });
                    }
                    let base = match o.get("base") {
                        None | Some(Json::Null) => None,
                        Some(b) => Some(tc_from(b, names, &format!("{path}.base"))?),
                    };
                    TypeCode::new(TcDef::Value {
                        kind: kind_from_short(kind).expect("listed kind"),
                        id: st("id")?.into(),
                        name: st("name")?,
                        modifier: num("modifier")? as i16,
                        base,
                        members,
                    })
                    .map_err(bad)?
                }
                other => return err(path, format!("unknown TypeCode kind {other:?}")),
            })
        }
        _ => err(path, "a TypeCode is a type name or an object with \"kind\""),
    }
}

// -------------------------------------------------------------- from JSON

/// JSON as a value of type `tc` (the representation a CDR decode of the
/// same value produces). `names` resolves type names in `any`s.
pub fn from_json(tc: &TypeCode, j: &Json, names: &dyn TypeNames) -> R<Value> {
    Dec {
        enclosing: Vec::new(),
        names,
    }
    .dec(tc, j, "")
}

struct Dec<'n> {
    enclosing: Vec<TypeCode>,
    names: &'n dyn TypeNames,
}

fn what(j: &Json) -> &'static str {
    match j {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

fn int_i128(j: &Json, path: &str) -> R<i128> {
    match j {
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(i as i128)
            } else if let Some(u) = n.as_u64() {
                Ok(u as i128)
            } else {
                err(path, format!("{n} is not an integer"))
            }
        }
        Json::String(s) => {
            let t = s.trim();
            let (neg, body) = match t.strip_prefix('-') {
                Some(b) => (true, b),
                None => (false, t),
            };
            let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
                i128::from_str_radix(h, 16)
            } else {
                body.parse::<i128>()
            };
            match v {
                Ok(v) => Ok(if neg { -v } else { v }),
                Err(_) => err(path, format!("{s:?} is not an integer")),
            }
        }
        other => err(path, format!("expected an integer, found {}", what(other))),
    }
}

fn int<T: TryFrom<i128>>(j: &Json, path: &str, ty: &str) -> R<T> {
    let v = int_i128(j, path)?;
    T::try_from(v).or_else(|_| err(path, format!("{v} is out of range for {ty}")))
}

fn float(j: &Json, path: &str) -> R<f64> {
    match j {
        Json::Number(n) => Ok(n.as_f64().expect("serde_json numbers are f64-convertible")),
        Json::String(s) => match s.trim() {
            "NaN" | "nan" => Ok(f64::NAN),
            "Infinity" | "inf" | "+Infinity" => Ok(f64::INFINITY),
            "-Infinity" | "-inf" => Ok(f64::NEG_INFINITY),
            t => t
                .parse::<f64>()
                .or_else(|_| err(path, format!("{s:?} is not a number"))),
        },
        other => err(path, format!("expected a number, found {}", what(other))),
    }
}

fn one_char(j: &Json, path: &str) -> R<char> {
    match j {
        Json::String(s) => {
            let mut it = s.chars();
            match (it.next(), it.next()) {
                (Some(c), None) => Ok(c),
                _ => err(path, format!("{s:?} is not exactly one character")),
            }
        }
        Json::Number(_) => {
            let v: u32 = int(j, path, "char")?;
            char::from_u32(v).ok_or_else(|| JsonError {
                path: path.into(),
                message: format!("{v} is not a character"),
            })
        }
        other => err(
            path,
            format!("expected a one-character string, found {}", what(other)),
        ),
    }
}

fn string(j: &Json, path: &str) -> R<String> {
    match j {
        Json::String(s) => Ok(s.clone()),
        other => err(path, format!("expected a string, found {}", what(other))),
    }
}

fn octets(j: &Json, path: &str) -> R<Vec<u8>> {
    match j {
        Json::String(s) => base64::engine::general_purpose::STANDARD
            .decode(s.trim())
            .or_else(|e| err(path, format!("not base64: {e}"))),
        Json::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, x)| int::<u8>(x, &format!("{path}[{i}]"), "octet"))
            .collect(),
        other => err(
            path,
            format!(
                "expected base64 or an array of octets, found {}",
                what(other)
            ),
        ),
    }
}

fn enum_index(members: &[String], j: &Json, path: &str) -> R<u32> {
    match j {
        Json::String(s) => {
            let name = s.rsplit("::").next().unwrap_or(s);
            match members.iter().position(|m| m == name) {
                Some(i) => Ok(i as u32),
                None => err(path, format!("{s:?} is not one of {}", members.join(", "))),
            }
        }
        _ => {
            let i: u32 = int(j, path, "enum")?;
            if (i as usize) < members.len() {
                Ok(i)
            } else {
                err(path, format!("enumerator index {i} out of range"))
            }
        }
    }
}

fn label_from(disc_tc: &TypeCode, j: &Json, path: &str) -> R<i64> {
    Ok(match disc_tc.unalias().def() {
        TcDef::Enum { members, .. } => enum_index(members, j, path)? as i64,
        TcDef::Basic(TCKind::tk_boolean) => match j {
            Json::Bool(b) => *b as i64,
            _ => int::<i64>(j, path, "boolean discriminator")?,
        },
        TcDef::Basic(TCKind::tk_char) | TcDef::Basic(TCKind::tk_wchar) => one_char(j, path)? as i64,
        TcDef::Basic(TCKind::tk_ulonglong) => int::<u64>(j, path, "unsigned long long")? as i64,
        TcDef::Basic(TCKind::tk_short) => int::<i16>(j, path, "short")? as i64,
        TcDef::Basic(TCKind::tk_ushort) => int::<u16>(j, path, "unsigned short")? as i64,
        TcDef::Basic(TCKind::tk_long) => int::<i32>(j, path, "long")? as i64,
        TcDef::Basic(TCKind::tk_ulong) => int::<u32>(j, path, "unsigned long")? as i64,
        _ => int::<i64>(j, path, "discriminator")?,
    })
}

fn items<'j>(j: &'j Json, path: &str) -> R<&'j Vec<Json>> {
    match j {
        Json::Array(a) => Ok(a),
        other => err(path, format!("expected an array, found {}", what(other))),
    }
}

fn check_len(path: &str, n: usize, tc: &TypeCode) -> R<()> {
    match tc.def() {
        TcDef::Sequence { bound, .. } if *bound != 0 && n > *bound as usize => {
            err(path, format!("{n} elements exceed the bound {bound}"))
        }
        TcDef::Array { length, .. } if n != *length as usize => {
            err(path, format!("{n} elements for an array of {length}"))
        }
        _ => Ok(()),
    }
}

impl Dec<'_> {
    fn dec(&mut self, tc: &TypeCode, j: &Json, path: &str) -> R<Value> {
        use TCKind::*;
        let tc = resolve(&self.enclosing, tc, path)?.clone();
        Ok(match tc.def() {
            TcDef::Alias { content, .. } => return self.dec(content, j, path),
            TcDef::Basic(k) => match k {
                tk_null => Value::Null,
                tk_void => Value::Void,
                tk_short => Value::Short(int(j, path, "short")?),
                tk_ushort => Value::UShort(int(j, path, "unsigned short")?),
                tk_long => Value::Long(int(j, path, "long")?),
                tk_ulong => Value::ULong(int(j, path, "unsigned long")?),
                tk_longlong => Value::LongLong(int(j, path, "long long")?),
                tk_ulonglong => Value::ULongLong(int(j, path, "unsigned long long")?),
                tk_float => Value::Float(float(j, path)? as f32),
                tk_double => Value::Double(float(j, path)?),
                tk_longdouble => {
                    let s = string(j, path)?;
                    let t = s.trim();
                    let mut b = [0u8; 16];
                    if t.len() != 32 || !t.is_ascii() {
                        return err(path, "long double is 32 hex digits (16 raw octets)");
                    }
                    for (i, x) in b.iter_mut().enumerate() {
                        *x = u8::from_str_radix(&t[2 * i..2 * i + 2], 16).or_else(|_| {
                            err(path, format!("bad hex digits at character {}", 2 * i))
                        })?;
                    }
                    Value::LongDouble(b)
                }
                tk_boolean => match j {
                    Json::Bool(b) => Value::Boolean(*b),
                    other => {
                        return err(path, format!("expected a boolean, found {}", what(other)))
                    }
                },
                tk_char => Value::Char(one_char(j, path)?),
                tk_wchar => Value::WChar(one_char(j, path)?),
                tk_octet => Value::Octet(int(j, path, "octet")?),
                tk_any => {
                    let Json::Object(o) = j else {
                        return err(path, "an any is {\"type\": …, \"value\": …}");
                    };
                    let t = match o.get("type") {
                        Some(t) => tc_from(t, self.names, &format!("{path}.type"))?,
                        None => return err(path, "an any needs \"type\""),
                    };
                    let outer = std::mem::take(&mut self.enclosing);
                    let v = self.dec(
                        &t,
                        o.get("value").unwrap_or(&Json::Null),
                        &format!("{path}.value"),
                    );
                    self.enclosing = outer;
                    Value::Any(Box::new(Any { tc: t, value: v? }))
                }
                tk_TypeCode => Value::TypeCode(tc_from(j, self.names, path)?),
                tk_Principal => Value::Principal(Bytes::from(octets(j, path)?)),
                other => return err(path, format!("{} has no JSON values", other.name())),
            },
            TcDef::String { bound } | TcDef::WString { bound } => {
                let s = string(j, path)?;
                if *bound != 0 && s.chars().count() > *bound as usize {
                    return err(path, format!("longer than the bound {bound}"));
                }
                if tc.kind() == tk_string {
                    Value::String(s)
                } else {
                    Value::WString(s)
                }
            }
            TcDef::Fixed { .. } => match j {
                Json::Number(n) => Value::Fixed(n.to_string()),
                _ => Value::Fixed(string(j, path)?),
            },
            TcDef::Interface {
                kind: tk_objref, ..
            } => match j {
                Json::Null => Value::ObjRef(Box::new(Ior::nil())),
                Json::String(s) => {
                    let ior: Ior = s
                        .parse()
                        .or_else(|e| err(path, format!("not an IOR: {e}")))?;
                    Value::ObjRef(Box::new(ior))
                }
                other => {
                    return err(
                        path,
                        format!("expected an IOR string or null, found {}", what(other)),
                    )
                }
            },
            TcDef::Enum { members, .. } => Value::Enum(enum_index(members, j, path)?),
            TcDef::Struct { members, kind, .. } => {
                let target = tc.is_recursion_target();
                if target {
                    self.enclosing.push(tc.clone());
                }
                let mut vals = Vec::with_capacity(members.len());
                match j {
                    Json::Object(o) => {
                        for k in o.keys() {
                            let known = (k == "_id" && *kind == tk_except)
                                || members.iter().any(|m| &m.name == k);
                            if !known {
                                return err(
                                    path,
                                    format!("no member {k:?} in {}", tc.name().unwrap_or("")),
                                );
                            }
                        }
                        for m in members {
                            let p = format!("{path}.{}", m.name);
                            match o.get(&m.name) {
                                Some(x) => vals.push(self.dec(&m.tc, x, &p)?),
                                None => return err(&p, "missing member"),
                            }
                        }
                    }
                    Json::Array(a) if a.len() == members.len() => {
                        for (m, x) in members.iter().zip(a) {
                            vals.push(self.dec(&m.tc, x, &format!("{path}.{}", m.name))?);
                        }
                    }
                    other => {
                        return err(
                            path,
                            format!(
                                "expected an object with {} members, found {}",
                                members.len(),
                                what(other)
                            ),
                        )
                    }
                }
                if target {
                    self.enclosing.pop();
                }
                Value::Struct(vals)
            }
            TcDef::Union {
                discriminator,
                default_index,
                members,
                ..
            } => {
                let Json::Object(o) = j else {
                    return err(
                        path,
                        "a union is {\"_d\": discriminator, \"<member>\": value}",
                    );
                };
                let named: Vec<&String> = o.keys().filter(|k| *k != "_d").collect();
                if named.len() > 1 {
                    return err(path, "a union holds one member");
                }
                let disc = match (o.get("_d"), named.first()) {
                    (Some(d), _) => label_from(discriminator, d, &format!("{path}._d"))?,
                    (None, Some(name)) => {
                        // No discriminator: the first label of the named member.
                        match members.iter().enumerate().find(|(_, m)| &&m.name == name) {
                            Some((i, m)) if i as i32 != *default_index => m.label,
                            Some(_) => default_disc(discriminator, members, *default_index)
                                .ok_or_else(|| JsonError {
                                    path: path.into(),
                                    message: "no discriminator value selects the default member"
                                        .into(),
                                })?,
                            None => return err(path, format!("no member {name:?}")),
                        }
                    }
                    (None, None) => return err(path, "a union needs \"_d\" or a member"),
                };
                let sel = members
                    .iter()
                    .enumerate()
                    .find(|(i, m)| *i as i32 != *default_index && m.label == disc)
                    .map(|(i, _)| i)
                    .or_else(|| (*default_index >= 0).then_some(*default_index as usize));
                let Some(i) = sel else {
                    return err(path, format!("discriminator {disc} selects no member"));
                };
                let m = &members[i];
                let x = match o.get(&m.name) {
                    Some(x) => x,
                    None => {
                        return err(
                            path,
                            format!("discriminator selects member {:?}, not given", m.name),
                        )
                    }
                };
                let target = tc.is_recursion_target();
                if target {
                    self.enclosing.push(tc.clone());
                }
                let v = self.dec(&m.tc, x, &format!("{path}.{}", m.name))?;
                if target {
                    self.enclosing.pop();
                }
                Value::Union {
                    disc,
                    value: Box::new(v),
                }
            }
            TcDef::Sequence { element, .. } | TcDef::Array { element, .. } => {
                let v = self.seq(element, j, path)?;
                check_len(path, v.len().unwrap_or(0), &tc)?;
                v
            }
            _ => return err(path, format!("{} has no JSON values", tc.kind().name())),
        })
    }

    fn seq(&mut self, element: &TypeCode, j: &Json, path: &str) -> R<Value> {
        use TCKind::*;
        let el = resolve(&self.enclosing, element, path)?.clone();
        let el = el.unalias().clone();
        macro_rules! packed {
            ($variant:ident, $ty:ty, $name:literal) => {{
                let a = items(j, path)?;
                let mut out = Vec::with_capacity(a.len());
                for (i, x) in a.iter().enumerate() {
                    out.push(int::<$ty>(x, &format!("{path}[{i}]"), $name)?);
                }
                Value::$variant(out)
            }};
        }
        Ok(match el.def() {
            TcDef::Basic(tk_octet) => Value::OctetSeq(Bytes::from(octets(j, path)?)),
            TcDef::Basic(tk_char) => match j {
                Json::String(s) => {
                    let mut b = Vec::with_capacity(s.len());
                    for c in s.chars() {
                        if c as u32 > 0xff {
                            return err(path, format!("{c:?} is not an ISO-8859-1 char"));
                        }
                        b.push(c as u32 as u8);
                    }
                    Value::CharSeq(b)
                }
                _ => {
                    let a = items(j, path)?;
                    let mut b = Vec::with_capacity(a.len());
                    for (i, x) in a.iter().enumerate() {
                        let c = one_char(x, &format!("{path}[{i}]"))?;
                        if c as u32 > 0xff {
                            return err(&format!("{path}[{i}]"), "not an ISO-8859-1 char");
                        }
                        b.push(c as u32 as u8);
                    }
                    Value::CharSeq(b)
                }
            },
            TcDef::Basic(tk_wchar) => match j {
                Json::String(s) => Value::Seq(s.chars().map(Value::WChar).collect()),
                _ => {
                    let a = items(j, path)?;
                    let mut out = Vec::with_capacity(a.len());
                    for (i, x) in a.iter().enumerate() {
                        out.push(Value::WChar(one_char(x, &format!("{path}[{i}]"))?));
                    }
                    Value::Seq(out)
                }
            },
            TcDef::Basic(tk_short) => packed!(ShortSeq, i16, "short"),
            TcDef::Basic(tk_ushort) => packed!(UShortSeq, u16, "unsigned short"),
            TcDef::Basic(tk_long) => packed!(LongSeq, i32, "long"),
            TcDef::Basic(tk_ulong) => packed!(ULongSeq, u32, "unsigned long"),
            TcDef::Basic(tk_longlong) => packed!(LongLongSeq, i64, "long long"),
            TcDef::Basic(tk_ulonglong) => packed!(ULongLongSeq, u64, "unsigned long long"),
            TcDef::Basic(tk_float) => {
                let a = items(j, path)?;
                let mut out = Vec::with_capacity(a.len());
                for (i, x) in a.iter().enumerate() {
                    out.push(float(x, &format!("{path}[{i}]"))? as f32);
                }
                Value::FloatSeq(out)
            }
            TcDef::Basic(tk_double) => {
                let a = items(j, path)?;
                let mut out = Vec::with_capacity(a.len());
                for (i, x) in a.iter().enumerate() {
                    out.push(float(x, &format!("{path}[{i}]"))?);
                }
                Value::DoubleSeq(out)
            }
            TcDef::Basic(tk_boolean) => {
                let a = items(j, path)?;
                let mut out = Vec::with_capacity(a.len());
                for (i, x) in a.iter().enumerate() {
                    match x {
                        Json::Bool(b) => out.push(*b),
                        other => {
                            return err(
                                &format!("{path}[{i}]"),
                                format!("expected a boolean, found {}", what(other)),
                            )
                        }
                    }
                }
                Value::BooleanSeq(out)
            }
            TcDef::Enum { members, .. } => {
                let a = items(j, path)?;
                let mut out = Vec::with_capacity(a.len());
                for (i, x) in a.iter().enumerate() {
                    out.push(enum_index(members, x, &format!("{path}[{i}]"))?);
                }
                Value::EnumSeq(out)
            }
            TcDef::Struct { members, .. } if !members.is_empty() => {
                let a = items(j, path)?;
                let mut rows = Vec::with_capacity(a.len());
                for (i, x) in a.iter().enumerate() {
                    match self.dec(element, x, &format!("{path}[{i}]"))? {
                        row @ Value::Struct(_) => rows.push(row),
                        other => {
                            return err(
                                path,
                                format!("row {i} decoded as {}", other.variant_name()),
                            )
                        }
                    }
                }
                Value::from_elements(element, rows)
            }
            _ => {
                let a = items(j, path)?;
                let mut out = Vec::with_capacity(a.len());
                for (i, x) in a.iter().enumerate() {
                    out.push(self.dec(element, x, &format!("{path}[{i}]"))?);
                }
                Value::Seq(out)
            }
        })
    }
}

/// A discriminator value that selects the default member: the smallest
/// non-negative value no explicit label uses (for enums, an unused
/// enumerator; for boolean, the unused one).
pub fn default_disc(
    disc_tc: &TypeCode,
    members: &[UnionMember],
    default_index: i32,
) -> Option<i64> {
    if default_index < 0 {
        return None;
    }
    let used = |v: i64| {
        members
            .iter()
            .enumerate()
            .any(|(i, m)| i as i32 != default_index && m.label == v)
    };
    let limit: i64 = match disc_tc.unalias().def() {
        TcDef::Enum { members, .. } => members.len() as i64,
        TcDef::Basic(TCKind::tk_boolean) => 2,
        _ => 1 << 16,
    };
    (0..limit).find(|&v| !used(v))
}
