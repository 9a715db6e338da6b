//! Dynamic values: a value tree that encodes and decodes any IDL type given
//! its [`TypeCode`], using only [`Reader`] and [`Writer`] — the DII/DSI
//! analogue of the static serde path.
//!
//! Representation choices (they matter for speed):
//! - Sequences *and arrays* of primitive element types are stored packed
//!   (`ShortSeq(Vec<i16>)`, …, `OctetSeq(Bytes)`, `CharSeq(Vec<u8>)`) and
//!   move with one bulk copy; sequences and arrays of structs are
//!   [`Value::StructSeq`] (below), of anything else [`Value::Seq`]. The
//!   TypeCode says whether it is a sequence or an array.
//! - A struct or exception is its members in one `Vec<Value>`, in
//!   TypeCode order. A sequence or array of structs is
//!   [`Value::StructSeq`], stored by column: one packed vector per
//!   primitive member, so 64 KiB of `sequence<PerfStruct>` decodes into
//!   five vectors with no per-element allocation and no recursive call.
//! - A union is its discriminator as an `i64` (same convention as
//!   [`UnionMember::label`](crate::typecode::UnionMember)) and the selected
//!   member's value.
//! - `fixed` is a decimal string: optional `-`, digits, optional `.` and
//!   fraction digits (`"123.45"`, `"-0.50"`); decoding produces exactly
//!   `scale` fraction digits and strips leading integer zeros (keeping
//!   one). Encoding accepts fewer fraction digits (zero-padded), refuses
//!   more, and refuses more integer digits than `digits - scale`.
//! - `long double` is 16 raw octets in the stream's byte order.
//! - `char` is a Rust `char` decoded through the negotiated code set;
//!   `CharSeq` keeps the transmitted octets.
//! - An object reference is [`Value::ObjRef`] holding a boxed [`Ior`],
//!   the workspace's one IOR type (type id + raw tagged profiles, the
//!   same value `iiop-giop` decodes from a message or parses from
//!   `IOR:` text; boxed to keep `Value` at 40 bytes). Its type id is
//!   ISO 8859-1 whatever the char code set, as in any IOR.
//! - Aliases are transparent: a value of `typedef T A` is a value of `T`.
//!
//! - A valuetype or value box is [`Value::Valuetype`] where it first
//!   occurs in its stream and [`Value::ValueRef`] (its number) where it
//!   occurs again (a shared reference, or a cycle back to a value that
//!   encloses it); a null value is [`Value::Null`]. The framing (value
//!   tags, repository ids, chunks, end tags, indirections) is
//!   [`crate::valuetype`]'s; a [`ValueScope`] holds what one stream has
//!   seen, so that a value may refer to one of an earlier argument.
//!
//! Entry points: [`Value::decode`]`(&TypeCode, &mut Reader)` and
//! [`Value::encode`]`(&self, &TypeCode, &mut Writer)`, each with a scope
//! of its own; [`Value::decode_in`] and [`Value::encode_in`] share one.
//! - custom-marshalled valuetypes, native and local/abstract interfaces
//!   decode as TypeCodes only: as values they are a `TypeMismatch` error.
//!
//! Hostile input: counts are checked against the bytes left at the
//! element's minimum wire size before allocating, nesting goes through
//! `Reader::enter`, and values of types that occupy no bytes at all
//! (empty structs, arrays of them) draw on a fixed node budget of 65536
//! per decode, which also bounds their counts.

use std::collections::HashMap;

use bytes::Bytes;

use crate::error::{CdrError, Result};
use crate::ior::Ior;
use crate::prim::Primitive;
use crate::reader::Reader;
use crate::typecode::{
    read_label, write_label, StructMember, TCKind, TcDef, TypeCode, UnionMember, ValueMember,
};
use crate::valuetype::{TypeInfo, ValueReader, ValueStart, ValueWriter};
use crate::writer::Writer;

/// An `any`: a TypeCode and a value of that type.
#[derive(Debug, Clone, PartialEq)]
pub struct Any {
    pub tc: TypeCode,
    pub value: Value,
}

/// A value of some IDL type; which one is said by the TypeCode it is
/// encoded or decoded with (see the module doc for the representation).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Void,
    Short(i16),
    Long(i32),
    UShort(u16),
    ULong(u32),
    LongLong(i64),
    ULongLong(u64),
    Float(f32),
    Double(f64),
    /// 16 raw octets in the stream's byte order.
    LongDouble([u8; 16]),
    Boolean(bool),
    Char(char),
    Octet(u8),
    WChar(char),
    String(String),
    WString(String),
    /// Decimal string, see the module doc.
    Fixed(String),
    /// Index of the enumerator.
    Enum(u32),
    /// struct or exception members in TypeCode order.
    Struct(Vec<Value>),
    /// Discriminator (as `i64`) and the selected member's value.
    Union {
        disc: i64,
        value: Box<Value>,
    },
    /// sequence or array of any other element type (strings, unions,
    /// anys, nested sequences, wchar, empty structs, …), one value per
    /// element. Encoding also accepts it for struct elements (rows).
    Seq(Vec<Value>),
    /// sequence or array of structs/exceptions with at least one member,
    /// stored by column: one sequence-like value per member, each holding
    /// that member of every element — a packed vector for primitive
    /// members (`ShortSeq`, `CharSeq`, `DoubleSeq`, …), `Seq` (one value
    /// per element) for the others. A `sequence<PerfStruct>` decodes into
    /// five flat vectors. Decoding produces this; encoding also accepts
    /// `Seq` of `Struct` (rows). See [`Value::len`] and [`Value::element`].
    StructSeq(Vec<Value>),
    ShortSeq(Vec<i16>),
    UShortSeq(Vec<u16>),
    LongSeq(Vec<i32>),
    ULongSeq(Vec<u32>),
    LongLongSeq(Vec<i64>),
    ULongLongSeq(Vec<u64>),
    FloatSeq(Vec<f32>),
    DoubleSeq(Vec<f64>),
    BooleanSeq(Vec<bool>),
    /// Transmitted octets of a `char` sequence/array.
    CharSeq(Vec<u8>),
    OctetSeq(Bytes),
    /// Enumerator indices of an enum sequence/array.
    EnumSeq(Vec<u32>),
    Any(Box<Any>),
    TypeCode(TypeCode),
    ObjRef(Box<Ior>),
    /// `Principal`: its octets.
    Principal(Bytes),
    /// A valuetype or value box where it first occurs in its stream.
    Valuetype(Box<ValueObj>),
    /// A later occurrence of the value numbered `.0` in its stream
    /// ([`ValueObj::number`]): a shared reference, or a cycle back to a
    /// value that encloses it.
    ValueRef(u32),
}

/// A valuetype (or value box) instance.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueObj {
    /// Its number in the stream, which [`Value::ValueRef`] uses. Decoding
    /// numbers values from 0 in the order their tags are read (a
    /// [`ValueScope`] counts on across arguments); encoding takes the
    /// numbers as given, each once.
    pub number: u32,
    /// Repository id of the type whose state this is: the value's own, or
    /// the base a truncated value was cut down to.
    pub type_id: String,
    /// The state members, those of the root base first; a box's one value.
    pub state: Vec<Value>,
}

/// What one stream (a message body) has seen of valuetypes, for the
/// dynamic codec: values and repository ids read or written (so that an
/// indirection may point back into an earlier argument), the types a
/// value may have beyond its formal type, and choices for writing.
#[derive(Debug, Default, Clone)]
pub struct ValueScope {
    pub reader: ValueReader,
    pub writer: ValueWriter,
    /// Value and value box TypeCodes by repository id: the types a value
    /// read may have besides its formal type, and those a
    /// [`ValueObj::type_id`] written may name. A value of a type found
    /// nowhere is truncated to the first base its repository id list
    /// names that is known, or refused.
    pub types: HashMap<String, TypeCode>,
    /// Chunk every value written (otherwise only those that must be:
    /// truncatable ones and those inside chunked ones).
    pub chunk_all: bool,
    /// Write no type information for a value of its formal type (as
    /// omniORB does) instead of its repository id (as JacORB does).
    pub omit_formal_ids: bool,
    /// Write an exception inside an `any` as its members alone, as
    /// omniORB before 4.3 does, instead of its repository id and then
    /// its members (the common reading of the spec, which omniORB 4.3,
    /// JacORB and we follow). Decoding reads either: see
    /// [`exception_id_in_any`].
    pub bare_exceptions_in_any: bool,
}

/// Whether the exception value of an `any` of type `tc` (a `tk_except`)
/// starts at `r` with its repository id: true when the bytes there are a
/// string equal to `tc`'s id. An ORB either writes the id (the common
/// reading) or not (omniORB before 4.3); a members-only value whose
/// first member is a string equal to the exception's own repository id
/// would be misread, which no real exception does.
pub fn exception_id_in_any(tc: &TypeCode, r: &Reader<'_>) -> bool {
    let Some(id) = tc.id().filter(|_| tc.kind() == TCKind::tk_except) else {
        return false;
    };
    let mut peek = r.clone();
    // The length is checked against the bytes left before anything is
    // read; an id is at most a few hundred bytes.
    matches!(peek.read_string_bytes(), Ok(s) if s == id.as_bytes())
}

/// Skip the repository id an exception inside an `any` starts with, if
/// it has one ([`exception_id_in_any`]).
fn skip_exception_id(tc: &TypeCode, r: &mut Reader<'_>) {
    if exception_id_in_any(tc, r) {
        let _ = r.read_string_bytes();
    }
}

impl ValueScope {
    /// A fresh scope that knows the value types `tcs` hold (at any depth).
    pub fn with_types<'t>(tcs: impl IntoIterator<Item = &'t TypeCode>) -> ValueScope {
        let mut s = ValueScope::default();
        for tc in tcs {
            s.learn(tc);
        }
        s
    }

    /// Record the value and value box TypeCodes inside `tc`.
    pub fn learn(&mut self, tc: &TypeCode) {
        let mut stack = vec![tc.clone()];
        let mut seen = 0usize;
        while let Some(t) = stack.pop() {
            seen += 1;
            if seen > 100_000 {
                break;
            }
            match t.def() {
                TcDef::Value {
                    id, base, members, ..
                } => {
                    if self.types.contains_key(&**id) {
                        continue;
                    }
                    self.types.insert(id.to_string(), t.clone());
                    stack.extend(base.iter().cloned());
                    stack.extend(members.iter().map(|m| m.tc.clone()));
                }
                TcDef::ValueBox { id, content, .. } => {
                    if self.types.contains_key(&**id) {
                        continue;
                    }
                    self.types.insert(id.to_string(), t.clone());
                    stack.push(content.clone());
                }
                TcDef::Struct { members, .. } => stack.extend(members.iter().map(|m| m.tc.clone())),
                TcDef::Union { members, .. } => stack.extend(members.iter().map(|m| m.tc.clone())),
                TcDef::Sequence { element, .. } | TcDef::Array { element, .. } => {
                    stack.push(element.clone())
                }
                TcDef::Alias { content, .. } => stack.push(content.clone()),
                _ => {}
            }
        }
    }
}

/// `VM_TRUNCATABLE`: the valuetype's base is truncatable.
const VM_TRUNCATABLE: i16 = 3;
/// `VM_CUSTOM`: custom-marshalled state.
const VM_CUSTOM: i16 = 1;

/// A valuetype's chain of concrete types, the root base first.
fn value_chain(tc: &TypeCode) -> Vec<TypeCode> {
    let mut chain = vec![tc.clone()];
    let mut t = tc.clone();
    while let TcDef::Value { base: Some(b), .. } = t.def() {
        let b = b.unalias().clone();
        // Bounded: a chain longer than this is a malformed TypeCode.
        if chain.len() > 256 || !matches!(b.def(), TcDef::Value { .. }) {
            break;
        }
        chain.push(b.clone());
        t = b;
    }
    chain.reverse();
    chain
}

/// The repository ids a value of `tc` is written with when it may be
/// truncated: its own, then each base while the type below it is
/// truncatable.
fn truncatable_ids(tc: &TypeCode) -> Vec<std::sync::Arc<str>> {
    let mut chain = value_chain(tc);
    chain.reverse();
    let mut ids = Vec::new();
    for t in &chain {
        if let TcDef::Value { id, modifier, .. } = t.def() {
            ids.push(id.clone());
            if *modifier != VM_TRUNCATABLE {
                break;
            }
        }
    }
    ids
}

fn value_members(tc: &TypeCode) -> &[ValueMember] {
    match tc.def() {
        TcDef::Value { members, .. } => members,
        _ => &[],
    }
}

impl Value {
    /// The value of a sequence or array of `element` holding `items`, in
    /// the representation [`Value::decode`] produces (packed vectors for
    /// primitives, columns for structs): the inverse of
    /// [`element`](Self::element). Items of the wrong kind become defaults.
    pub fn from_elements(element: &TypeCode, items: Vec<Value>) -> Value {
        Self::pack_elements(element, items, true)
    }

    /// `columns`: whether a struct element goes by column. Only the
    /// outermost one does: the decoder keeps a struct-typed member's column
    /// as one `Struct` value per element (`Seq`).
    fn pack_elements(element: &TypeCode, items: Vec<Value>, columns: bool) -> Value {
        use TCKind::*;
        macro_rules! p {
            ($v:ident, $seq:ident) => {
                Value::$seq(
                    items
                        .into_iter()
                        .map(|x| match x {
                            Value::$v(y) => y,
                            _ => Default::default(),
                        })
                        .collect(),
                )
            };
        }
        match element.unalias().def() {
            TcDef::Basic(tk_short) => p!(Short, ShortSeq),
            TcDef::Basic(tk_ushort) => p!(UShort, UShortSeq),
            TcDef::Basic(tk_long) => p!(Long, LongSeq),
            TcDef::Basic(tk_ulong) => p!(ULong, ULongSeq),
            TcDef::Basic(tk_longlong) => p!(LongLong, LongLongSeq),
            TcDef::Basic(tk_ulonglong) => p!(ULongLong, ULongLongSeq),
            TcDef::Basic(tk_float) => p!(Float, FloatSeq),
            TcDef::Basic(tk_double) => p!(Double, DoubleSeq),
            TcDef::Basic(tk_boolean) => p!(Boolean, BooleanSeq),
            TcDef::Basic(tk_char) => Value::CharSeq(
                items
                    .into_iter()
                    .map(|x| match x {
                        Value::Char(c) => c as u32 as u8,
                        _ => 0,
                    })
                    .collect(),
            ),
            TcDef::Basic(tk_octet) => Value::OctetSeq(Bytes::from(
                items
                    .into_iter()
                    .map(|x| match x {
                        Value::Octet(c) => c,
                        _ => 0,
                    })
                    .collect::<Vec<u8>>(),
            )),
            TcDef::Enum { .. } => p!(Enum, EnumSeq),
            TcDef::Struct { members, .. } if columns && !members.is_empty() => {
                let n = items.len();
                let mut cols: Vec<Vec<Value>> =
                    (0..members.len()).map(|_| Vec::with_capacity(n)).collect();
                for it in items {
                    if let Value::Struct(vals) = it {
                        for (j, v) in vals.into_iter().enumerate() {
                            cols[j].push(v);
                        }
                    }
                }
                Value::StructSeq(
                    members
                        .iter()
                        .zip(cols)
                        .map(|(m, c)| Value::pack_elements(&m.tc, c, false))
                        .collect(),
                )
            }
            _ => Value::Seq(items),
        }
    }

    /// A short name of the variant, for errors.
    pub fn variant_name(&self) -> &'static str {
        use Value::*;
        match self {
            Null => "Null",
            Void => "Void",
            Short(_) => "Short",
            Long(_) => "Long",
            UShort(_) => "UShort",
            ULong(_) => "ULong",
            LongLong(_) => "LongLong",
            ULongLong(_) => "ULongLong",
            Float(_) => "Float",
            Double(_) => "Double",
            LongDouble(_) => "LongDouble",
            Boolean(_) => "Boolean",
            Char(_) => "Char",
            Octet(_) => "Octet",
            WChar(_) => "WChar",
            String(_) => "String",
            WString(_) => "WString",
            Fixed(_) => "Fixed",
            Enum(_) => "Enum",
            Struct(_) => "Struct",
            Union { .. } => "Union",
            Seq(_) => "Seq",
            StructSeq(_) => "StructSeq",
            ShortSeq(_) => "ShortSeq",
            UShortSeq(_) => "UShortSeq",
            LongSeq(_) => "LongSeq",
            ULongSeq(_) => "ULongSeq",
            LongLongSeq(_) => "LongLongSeq",
            ULongLongSeq(_) => "ULongLongSeq",
            FloatSeq(_) => "FloatSeq",
            DoubleSeq(_) => "DoubleSeq",
            BooleanSeq(_) => "BooleanSeq",
            CharSeq(_) => "CharSeq",
            OctetSeq(_) => "OctetSeq",
            EnumSeq(_) => "EnumSeq",
            Any(_) => "Any",
            TypeCode(_) => "TypeCode",
            ObjRef(_) => "ObjRef",
            Principal(_) => "Principal",
            Valuetype(_) => "Valuetype",
            ValueRef(_) => "ValueRef",
        }
    }

    /// Number of elements of a sequence-like value (packed vectors,
    /// `Seq`, `StructSeq`); `None` for other values.
    pub fn len(&self) -> Option<usize> {
        use Value::*;
        Some(match self {
            Seq(x) => x.len(),
            StructSeq(cols) => cols.first().and_then(Value::len).unwrap_or(0),
            ShortSeq(x) => x.len(),
            UShortSeq(x) => x.len(),
            LongSeq(x) => x.len(),
            ULongSeq(x) => x.len(),
            LongLongSeq(x) => x.len(),
            ULongLongSeq(x) => x.len(),
            FloatSeq(x) => x.len(),
            DoubleSeq(x) => x.len(),
            BooleanSeq(x) => x.len(),
            CharSeq(x) => x.len(),
            OctetSeq(x) => x.len(),
            EnumSeq(x) => x.len(),
            _ => return None,
        })
    }

    /// Whether a sequence-like value has no elements (`None` for others).
    pub fn is_empty(&self) -> Option<bool> {
        self.len().map(|n| n == 0)
    }

    /// Element `i` of a sequence-like value as a standalone value: a
    /// scalar for packed vectors (a `CharSeq` octet becomes `Char` of that
    /// ISO-8859-1 code), a `Struct` row for `StructSeq`.
    pub fn element(&self, i: usize) -> Option<Value> {
        use Value::*;
        match self {
            Seq(x) => x.get(i).cloned(),
            StructSeq(cols) => {
                if i >= self.len()? {
                    return None;
                }
                cols.iter()
                    .map(|c| c.element(i))
                    .collect::<Option<Vec<_>>>()
                    .map(Struct)
            }
            ShortSeq(x) => x.get(i).map(|&v| Short(v)),
            UShortSeq(x) => x.get(i).map(|&v| UShort(v)),
            LongSeq(x) => x.get(i).map(|&v| Long(v)),
            ULongSeq(x) => x.get(i).map(|&v| ULong(v)),
            LongLongSeq(x) => x.get(i).map(|&v| LongLong(v)),
            ULongLongSeq(x) => x.get(i).map(|&v| ULongLong(v)),
            FloatSeq(x) => x.get(i).map(|&v| Float(v)),
            DoubleSeq(x) => x.get(i).map(|&v| Double(v)),
            BooleanSeq(x) => x.get(i).map(|&v| Boolean(v)),
            CharSeq(x) => x.get(i).map(|&v| Char(v as char)),
            OctetSeq(x) => x.get(i).map(|&v| Octet(v)),
            EnumSeq(x) => x.get(i).map(|&v| Enum(v)),
            _ => None,
        }
    }

    /// Decode a value of type `tc`.
    pub fn decode(tc: &TypeCode, r: &mut Reader<'_>) -> Result<Value> {
        Value::decode_in(tc, r, &mut ValueScope::default())
    }

    /// Encode this value as type `tc`.
    pub fn encode(&self, tc: &TypeCode, w: &mut Writer<'_>) -> Result<()> {
        self.encode_in(tc, w, &mut ValueScope::default())
    }

    /// Decode a value of type `tc` in a valuetype scope shared with the
    /// other values of the same stream (the arguments of one request).
    pub fn decode_in(tc: &TypeCode, r: &mut Reader<'_>, scope: &mut ValueScope) -> Result<Value> {
        let mut ctx = Ctx {
            enclosing: Vec::new(),
            budget: EMPTY_NODE_BUDGET,
            scope,
        };
        ctx.decode(tc, r)
    }

    /// Encode this value as type `tc` in a valuetype scope shared with the
    /// other values of the same stream.
    pub fn encode_in(
        &self,
        tc: &TypeCode,
        w: &mut Writer<'_>,
        scope: &mut ValueScope,
    ) -> Result<()> {
        let mut ctx = Ctx {
            enclosing: Vec::new(),
            budget: EMPTY_NODE_BUDGET,
            scope,
        };
        ctx.encode(tc, self, w)
    }
}

/// How many values of zero-size types (empty structs and arrays of them)
/// one decode may produce: they consume no input, so the byte count
/// cannot bound them.
const EMPTY_NODE_BUDGET: u32 = 1 << 16;

/// State of one decode/encode: the enclosing recursion targets (to resolve
/// recursive placeholders), the zero-size node budget and the valuetype
/// scope.
struct Ctx<'s> {
    enclosing: Vec<TypeCode>,
    budget: u32,
    scope: &'s mut ValueScope,
}

fn mismatch(offset: usize, tc: &TypeCode, found: &Value) -> CdrError {
    CdrError::TypeMismatch {
        offset,
        expected: tc.kind().name().to_string(),
        found: found.variant_name().to_string(),
    }
}

fn unsupported(offset: usize, kind: TCKind) -> CdrError {
    CdrError::TypeMismatch {
        offset,
        expected: "a type supported as a dynamic value".into(),
        found: kind.name().into(),
    }
}

/// Packed element kinds (after stripping aliases).
#[derive(Clone, Copy)]
enum Packed {
    Short,
    UShort,
    Long,
    ULong,
    LongLong,
    ULongLong,
    Float,
    Double,
    Boolean,
    Char,
    Octet,
    Enum(u32),
}

fn packed_kind(elem: &TypeCode) -> Option<Packed> {
    use TCKind::*;
    match elem.unalias().def() {
        TcDef::Basic(k) => Some(match k {
            tk_short => Packed::Short,
            tk_ushort => Packed::UShort,
            tk_long => Packed::Long,
            tk_ulong => Packed::ULong,
            tk_longlong => Packed::LongLong,
            tk_ulonglong => Packed::ULongLong,
            tk_float => Packed::Float,
            tk_double => Packed::Double,
            tk_boolean => Packed::Boolean,
            tk_char => Packed::Char,
            tk_octet => Packed::Octet,
            _ => return None,
        }),
        TcDef::Enum { members, .. } => Some(Packed::Enum(members.len() as u32)),
        _ => None,
    }
}

fn select_member(members: &[UnionMember], default_index: i32, disc: i64) -> Option<usize> {
    members
        .iter()
        .enumerate()
        .find(|(i, m)| *i as i32 != default_index && m.label == disc)
        .map(|(i, _)| i)
        .or_else(|| (default_index >= 0).then_some(default_index as usize))
}

impl Ctx<'_> {
    fn resolve<'t>(&'t self, tc: &'t TypeCode, offset: usize) -> Result<&'t TypeCode> {
        match tc.def() {
            TcDef::Recursive { id } => self
                .enclosing
                .iter()
                .rev()
                .find(|t| t.id() == Some(&**id))
                .ok_or_else(|| CdrError::BadTypeCode {
                    offset,
                    reason: format!("recursive reference to {id} outside its enclosing type"),
                }),
            _ => Ok(tc),
        }
    }

    /// A count of elements that occupy no bytes cannot be checked against
    /// the input: each element costs one unit of the node budget instead,
    /// paid up front (so nested zero-size arrays cannot multiply).
    fn charge_count(&mut self, n: usize, offset: usize) -> Result<()> {
        if n > self.budget as usize {
            return Err(CdrError::LimitExceeded {
                offset,
                len: n as u64,
                limit: self.budget as u64,
            });
        }
        self.budget -= n as u32;
        Ok(())
    }

    fn charge_empty(&mut self, tc: &TypeCode, offset: usize) -> Result<()> {
        if tc.min_wire_size() == 0 {
            if self.budget == 0 {
                return Err(CdrError::LimitExceeded {
                    offset,
                    len: EMPTY_NODE_BUDGET as u64 + 1,
                    limit: EMPTY_NODE_BUDGET as u64,
                });
            }
            self.budget -= 1;
        }
        Ok(())
    }

    fn decode(&mut self, tc: &TypeCode, r: &mut Reader<'_>) -> Result<Value> {
        use TCKind::*;
        let pos = r.position();
        Ok(match tc.def() {
            TcDef::Basic(k) => match k {
                tk_null => Value::Null,
                tk_void => Value::Void,
                tk_short => Value::Short(r.read_i16()?),
                tk_long => Value::Long(r.read_i32()?),
                tk_ushort => Value::UShort(r.read_u16()?),
                tk_ulong => Value::ULong(r.read_u32()?),
                tk_longlong => Value::LongLong(r.read_i64()?),
                tk_ulonglong => Value::ULongLong(r.read_u64()?),
                tk_float => Value::Float(r.read_f32()?),
                tk_double => Value::Double(r.read_f64()?),
                tk_longdouble => Value::LongDouble(r.read_long_double()?),
                tk_boolean => Value::Boolean(r.read_bool()?),
                tk_char => Value::Char(r.read_char()?),
                tk_octet => Value::Octet(r.read_u8()?),
                tk_wchar => Value::WChar(r.read_wchar()?),
                tk_any => {
                    r.enter()?;
                    let atc = TypeCode::decode(r)?;
                    // The any's TypeCode is self-contained: recursion
                    // inside it never refers to our enclosing types.
                    let outer = std::mem::take(&mut self.enclosing);
                    skip_exception_id(&atc, r);
                    let value = self.decode(&atc, r);
                    self.enclosing = outer;
                    r.leave();
                    Value::Any(Box::new(Any {
                        tc: atc,
                        value: value?,
                    }))
                }
                tk_TypeCode => Value::TypeCode(TypeCode::decode(r)?),
                tk_Principal => Value::Principal(r.read_octet_bytes()?),
                other => return Err(unsupported(pos, *other)),
            },
            TcDef::String { bound } => {
                let s = r.read_string()?;
                check_bound(pos, s.chars().count(), *bound)?;
                Value::String(s)
            }
            TcDef::WString { bound } => {
                let s = r.read_wstring()?;
                check_bound(pos, s.chars().count(), *bound)?;
                Value::WString(s)
            }
            TcDef::Fixed { digits, scale } => {
                let n = (*digits as usize + 2) / 2;
                let b = r.take(n)?;
                Value::Fixed(fixed_from_bcd(b, *digits, *scale, pos)?)
            }
            TcDef::Interface { kind, .. } => match kind {
                tk_objref => Value::ObjRef(Box::new(Ior::decode(r)?)),
                other => return Err(unsupported(pos, *other)),
            },
            TcDef::Struct { members, .. } => {
                self.charge_empty(tc, pos)?;
                r.enter()?;
                let target = tc.is_recursion_target();
                if target {
                    self.enclosing.push(tc.clone());
                }
                let mut vals = Vec::with_capacity(members.len());
                for m in members {
                    vals.push(self.decode(&m.tc, r)?);
                }
                if target {
                    self.enclosing.pop();
                }
                r.leave();
                Value::Struct(vals)
            }
            TcDef::Union {
                discriminator,
                default_index,
                members,
                ..
            } => {
                r.enter()?;
                let target = tc.is_recursion_target();
                if target {
                    self.enclosing.push(tc.clone());
                }
                let dpos = r.position();
                let disc = read_label(discriminator, r)?;
                let i = select_member(members, *default_index, disc).ok_or(
                    CdrError::InvalidDiscriminator {
                        offset: dpos,
                        value: disc,
                    },
                )?;
                let value = self.decode(&members[i].tc, r)?;
                if target {
                    self.enclosing.pop();
                }
                r.leave();
                Value::Union {
                    disc,
                    value: Box::new(value),
                }
            }
            TcDef::Enum { members, .. } => {
                let v = r.read_u32()?;
                if v as usize >= members.len() {
                    return Err(CdrError::InvalidEnum {
                        offset: pos,
                        value: v,
                        count: members.len() as u32,
                    });
                }
                Value::Enum(v)
            }
            TcDef::Sequence { element, bound } => {
                if matches!(element.unalias().def(), TcDef::Basic(tk_octet)) {
                    let b = r.read_octet_bytes()?;
                    check_bound(pos, b.len(), *bound)?;
                    return Ok(Value::OctetSeq(b));
                }
                let min = self.resolve(element, pos)?.min_wire_size();
                let n = r.read_len(usize::try_from(min).unwrap_or(usize::MAX))?;
                check_bound(pos, n, *bound)?;
                if min == 0 {
                    self.charge_count(n, pos)?;
                }
                self.elements(element, n, r)?
            }
            TcDef::Array { element, length } => {
                let n = *length as usize;
                let min = self.resolve(element, pos)?.min_wire_size();
                let need = (n as u64).saturating_mul(min);
                if need > r.remaining() as u64 {
                    return Err(CdrError::Truncated {
                        offset: pos,
                        needed: usize::try_from(need).unwrap_or(usize::MAX),
                        available: r.remaining(),
                    });
                }
                if min == 0 {
                    self.charge_count(n, pos)?;
                }
                self.charge_empty(tc, pos)?;
                self.elements(element, n, r)?
            }
            TcDef::Alias { content, .. } => self.decode(content, r)?,
            TcDef::Recursive { .. } => {
                let t = self.resolve(tc, pos)?.clone();
                self.decode(&t, r)?
            }
            TcDef::ValueBox { .. } | TcDef::Value { .. } => self.decode_value(tc, r)?,
        })
    }

    /// A value where one of formal type `formal` may stand.
    fn decode_value(&mut self, formal: &TypeCode, r: &mut Reader<'_>) -> Result<Value> {
        let head = match self.scope.reader.start(r)? {
            ValueStart::Null => return Ok(Value::Null),
            ValueStart::Shared { number } => return Ok(Value::ValueRef(number)),
            ValueStart::Value(head) => head,
        };
        let (tc, truncating) = self.actual_type(formal, &head.ids, head.offset)?;
        if truncating && !head.chunked {
            return Err(CdrError::BadValue {
                offset: head.offset,
                reason:
                    "an unchunked value of a type we know only a base of (it cannot be truncated)"
                        .into(),
            });
        }
        r.enter()?;
        let mut state = Vec::new();
        match tc.def() {
            TcDef::ValueBox { content, .. } => {
                self.scope.reader.member(r, &head)?;
                state.push(self.decode(content, r)?);
            }
            _ => {
                let chain = value_chain(&tc);
                let targets = chain.iter().filter(|t| t.is_recursion_target()).count();
                self.enclosing
                    .extend(chain.iter().filter(|t| t.is_recursion_target()).cloned());
                for t in &chain {
                    if matches!(
                        t.def(),
                        TcDef::Value {
                            modifier: VM_CUSTOM,
                            ..
                        }
                    ) {
                        return Err(unsupported(head.offset, TCKind::tk_value));
                    }
                    for m in value_members(t) {
                        self.scope.reader.member(r, &head)?;
                        state.push(self.decode(&m.tc, r)?);
                    }
                }
                self.enclosing.truncate(self.enclosing.len() - targets);
            }
        }
        // No member check here: an end tag may close this value together
        // with the last value nested in it.
        self.scope.reader.end(r, &head, !truncating)?;
        r.leave();
        Ok(Value::Valuetype(Box::new(ValueObj {
            number: head.number,
            type_id: tc.id().unwrap_or_default().to_string(),
            state,
        })))
    }

    /// The type a value's state is read as, and whether that truncates
    /// it: the formal type when the header names none or names it, else
    /// the first of its repository ids that is known.
    fn actual_type(
        &self,
        formal: &TypeCode,
        ids: &TypeInfo,
        offset: usize,
    ) -> Result<(TypeCode, bool)> {
        let formal = self.resolve(formal, offset)?.unalias().clone();
        let fid = formal.id().unwrap_or_default();
        if *ids == TypeInfo::None {
            return Ok((formal, false));
        }
        let boxed = formal.kind() == TCKind::tk_value_box;
        for (i, id) in ids.ids().iter().enumerate() {
            if **id == *fid {
                return Ok((formal, i > 0));
            }
            if boxed {
                continue;
            }
            if let Some(t) = self.scope.types.get(&**id) {
                if t.kind() == TCKind::tk_value {
                    return Ok((t.clone(), i > 0));
                }
            }
        }
        let names: Vec<&str> = ids.ids().iter().map(|s| &**s).collect();
        Err(CdrError::BadValue {
            offset,
            reason: format!(
                "a value of type {} where {fid} is expected: no TypeCode for it or a base it may be truncated to",
                names.join(", ")
            ),
        })
    }

    /// `n` elements (count already checked against the bytes left).
    fn elements(&mut self, element: &TypeCode, n: usize, r: &mut Reader<'_>) -> Result<Value> {
        let pos = r.position();
        if let Some(p) = packed_kind(element) {
            return Ok(match p {
                Packed::Short => Value::ShortSeq(r.read_slice(n)?),
                Packed::UShort => Value::UShortSeq(r.read_slice(n)?),
                Packed::Long => Value::LongSeq(r.read_slice(n)?),
                Packed::ULong => Value::ULongSeq(r.read_slice(n)?),
                Packed::LongLong => Value::LongLongSeq(r.read_slice(n)?),
                Packed::ULongLong => Value::ULongLongSeq(r.read_slice(n)?),
                Packed::Float => Value::FloatSeq(r.read_slice(n)?),
                Packed::Double => Value::DoubleSeq(r.read_slice(n)?),
                Packed::Octet => Value::OctetSeq(Bytes::copy_from_slice(r.take(n)?)),
                Packed::Char => {
                    let b = r.take(n)?;
                    if r.opts().char_set == crate::CharCodeSet::Utf8 && !b.is_ascii() {
                        let i = b.iter().position(|c| !c.is_ascii()).unwrap_or(0);
                        return Err(CdrError::InvalidCodeSet {
                            offset: pos + i,
                            codeset: "UTF-8",
                        });
                    }
                    Value::CharSeq(b.to_vec())
                }
                Packed::Boolean => {
                    let b = r.take(n)?;
                    let mut out = Vec::with_capacity(n);
                    for (i, &x) in b.iter().enumerate() {
                        match x {
                            0 => out.push(false),
                            1 => out.push(true),
                            value => {
                                return Err(CdrError::InvalidBool {
                                    offset: pos + i,
                                    value,
                                })
                            }
                        }
                    }
                    Value::BooleanSeq(out)
                }
                Packed::Enum(_) if n == 0 => Value::EnumSeq(Vec::new()),
                Packed::Enum(count) => {
                    r.align(4)?;
                    let start = r.position();
                    let v: Vec<u32> = r.read_slice(n)?;
                    if let Some(i) = v.iter().position(|&x| x >= count) {
                        return Err(CdrError::InvalidEnum {
                            offset: start + 4 * i,
                            value: v[i],
                            count,
                        });
                    }
                    Value::EnumSeq(v)
                }
            });
        }
        let et = self.resolve(element.unalias(), pos)?.clone();
        if let TcDef::Struct { members, .. } = et.def() {
            if !members.is_empty() {
                return self.struct_elements(&et, members, n, r);
            }
        }
        r.enter()?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.decode(element, r)?);
        }
        r.leave();
        Ok(Value::Seq(out))
    }

    /// `n` structs by column; primitive members are read inline.
    fn struct_elements(
        &mut self,
        et: &TypeCode,
        members: &[StructMember],
        n: usize,
        r: &mut Reader<'_>,
    ) -> Result<Value> {
        let mut cols: Vec<Column> = members
            .iter()
            .map(|m| Column::new(packed_kind(&m.tc), n))
            .collect();
        // The sequence and its element structs: two levels, entered once.
        r.enter()?;
        r.enter()?;
        let target = et.is_recursion_target();
        if target {
            self.enclosing.push(et.clone());
        }
        // Fixed rows assume one alignment origin: not across GIOP 1.1
        // fragments, which restart it.
        if let Some(layout) = RowLayout::new(&cols).filter(|_| !r.is_segmented()) {
            self.fixed_rows(&layout, &mut cols, n, r)?;
            if target {
                self.enclosing.pop();
            }
            r.leave();
            r.leave();
            return Ok(Value::StructSeq(
                cols.into_iter().map(Column::finish).collect(),
            ));
        }
        let empty = et.min_wire_size() == 0;
        for _ in 0..n {
            if empty {
                self.charge_empty(et, r.position())?;
            }
            for (j, col) in cols.iter_mut().enumerate() {
                match col {
                    Column::Short(v) => v.push(r.read_i16()?),
                    Column::UShort(v) => v.push(r.read_u16()?),
                    Column::Long(v) => v.push(r.read_i32()?),
                    Column::ULong(v) => v.push(r.read_u32()?),
                    Column::LongLong(v) => v.push(r.read_i64()?),
                    Column::ULongLong(v) => v.push(r.read_u64()?),
                    Column::Float(v) => v.push(r.read_f32()?),
                    Column::Double(v) => v.push(r.read_f64()?),
                    Column::Boolean(v) => v.push(r.read_bool()?),
                    Column::Char(v) => v.push(r.read_char()? as u32 as u8),
                    Column::Octet(v) => v.push(r.read_u8()?),
                    Column::Enum(v, count) => {
                        r.align(4)?;
                        let offset = r.position();
                        let value = r.read_u32()?;
                        if value >= *count {
                            return Err(CdrError::InvalidEnum {
                                offset,
                                value,
                                count: *count,
                            });
                        }
                        v.push(value)
                    }
                    Column::Other(v) => v.push(self.decode(&members[j].tc, r)?),
                }
            }
        }
        if target {
            self.enclosing.pop();
        }
        r.leave();
        r.leave();
        Ok(Value::StructSeq(
            cols.into_iter().map(Column::finish).collect(),
        ))
    }

    /// Rows of a struct whose members are all primitives: each row is one
    /// `take` of its exact size (which depends only on the start offset
    /// modulo 8), its members read at precomputed offsets.
    fn fixed_rows(
        &mut self,
        layout: &RowLayout,
        cols: &mut [Column],
        n: usize,
        r: &mut Reader<'_>,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let order = r.order();
        let utf8 = r.opts().char_set == crate::CharCodeSet::Utf8;
        // Rows after the first all start at the same residue modulo the
        // largest member alignment (see `encode_packed_rows`), so every row
        // is found at a constant stride: one `take` for all, then one
        // tight loop per column.
        let start = r.position();
        let r0 = start % 8;
        let size0 = layout.size[r0];
        let r1 = (r0 + size0) % 8;
        let stride = layout.size[r1];
        let total = (n - 1)
            .checked_mul(stride)
            .and_then(|b| b.checked_add(size0))
            .ok_or(CdrError::Truncated {
                offset: start,
                needed: usize::MAX,
                available: r.remaining(),
            })?;
        let avail = r.remaining();
        if total > avail {
            // Name the first row that does not fit, as a row-by-row read would.
            let (offset, needed) = if avail < size0 {
                (start, size0)
            } else {
                (start + size0 + (avail - size0) / stride * stride, stride)
            };
            return Err(CdrError::Truncated {
                offset,
                needed,
                available: avail - (offset - start),
            });
        }
        let data = r.take(total)?;
        for (col, offs) in cols.iter_mut().zip(&layout.offsets) {
            let (o0, o1) = (offs[r0], size0 + offs[r1]);
            let at = |i: usize| if i == 0 { o0 } else { o1 + (i - 1) * stride };
            fn fill<T: Primitive>(
                v: &mut Vec<T>,
                data: &[u8],
                n: usize,
                at: impl Fn(usize) -> usize,
                order: crate::ByteOrder,
            ) {
                v.extend((0..n).map(|i| {
                    let o = at(i);
                    T::from_wire(&data[o..o + T::SIZE], order)
                }));
            }
            match col {
                Column::Short(v) => fill(v, data, n, at, order),
                Column::UShort(v) => fill(v, data, n, at, order),
                Column::Long(v) => fill(v, data, n, at, order),
                Column::ULong(v) => fill(v, data, n, at, order),
                Column::LongLong(v) => fill(v, data, n, at, order),
                Column::ULongLong(v) => fill(v, data, n, at, order),
                Column::Float(v) => fill(v, data, n, at, order),
                Column::Double(v) => fill(v, data, n, at, order),
                Column::Octet(v) => v.extend((0..n).map(|i| data[at(i)])),
                Column::Char(v) => {
                    v.extend((0..n).map(|i| data[at(i)]));
                    if utf8 {
                        if let Some(i) = v.iter().position(|&b| b >= 0x80) {
                            return Err(CdrError::InvalidCodeSet {
                                offset: start + at(i),
                                codeset: "UTF-8",
                            });
                        }
                    }
                }
                Column::Boolean(v) => {
                    for i in 0..n {
                        match data[at(i)] {
                            0 => v.push(false),
                            1 => v.push(true),
                            value => {
                                return Err(CdrError::InvalidBool {
                                    offset: start + at(i),
                                    value,
                                })
                            }
                        }
                    }
                }
                Column::Enum(v, count) => {
                    for i in 0..n {
                        let o = at(i);
                        let value = u32::from_wire(&data[o..o + 4], order);
                        if value >= *count {
                            return Err(CdrError::InvalidEnum {
                                offset: start + o,
                                value,
                                count: *count,
                            });
                        }
                        v.push(value)
                    }
                }
                Column::Other(_) => unreachable!("RowLayout::new refuses Other columns"),
            }
        }
        Ok(())
    }

    fn encode(&mut self, tc: &TypeCode, v: &Value, w: &mut Writer<'_>) -> Result<()> {
        use TCKind::*;
        // Inside a chunked value every piece of state goes into a chunk;
        // a nested value opens and closes its own.
        if self.scope.writer.level() > 0
            && !matches!(
                tc.def(),
                TcDef::Value { .. }
                    | TcDef::ValueBox { .. }
                    | TcDef::Struct { .. }
                    | TcDef::Alias { .. }
                    | TcDef::Recursive { .. }
            )
        {
            self.scope.writer.data(w)?;
        }
        let pos = w.position();
        match (tc.def(), v) {
            (TcDef::Basic(k), _) => match (k, v) {
                (tk_null, Value::Null) | (tk_void, Value::Void) => {}
                (tk_short, Value::Short(x)) => w.write_i16(*x),
                (tk_long, Value::Long(x)) => w.write_i32(*x),
                (tk_ushort, Value::UShort(x)) => w.write_u16(*x),
                (tk_ulong, Value::ULong(x)) => w.write_u32(*x),
                (tk_longlong, Value::LongLong(x)) => w.write_i64(*x),
                (tk_ulonglong, Value::ULongLong(x)) => w.write_u64(*x),
                (tk_float, Value::Float(x)) => w.write_f32(*x),
                (tk_double, Value::Double(x)) => w.write_f64(*x),
                (tk_longdouble, Value::LongDouble(x)) => w.write_long_double(*x),
                (tk_boolean, Value::Boolean(x)) => w.write_bool(*x),
                (tk_char, Value::Char(x)) => w.write_char(*x)?,
                (tk_octet, Value::Octet(x)) => w.write_u8(*x),
                (tk_wchar, Value::WChar(x)) => w.write_wchar(*x)?,
                (tk_any, Value::Any(a)) => {
                    a.tc.encode(w)?;
                    if a.tc.kind() == tk_except && !self.scope.bare_exceptions_in_any {
                        w.write_string(a.tc.id().unwrap_or(""))?;
                    }
                    let outer = std::mem::take(&mut self.enclosing);
                    let res = self.encode(&a.tc, &a.value, w);
                    self.enclosing = outer;
                    res?
                }
                (tk_TypeCode, Value::TypeCode(t)) => t.encode(w)?,
                (tk_Principal, Value::Principal(b)) => w.write_octet_seq(b)?,
                _ => return Err(mismatch(pos, tc, v)),
            },
            (TcDef::String { bound }, Value::String(s)) => {
                check_bound(pos, s.chars().count(), *bound)?;
                w.write_string(s)?
            }
            (TcDef::WString { bound }, Value::WString(s)) => {
                check_bound(pos, s.chars().count(), *bound)?;
                w.write_wstring(s)?
            }
            (TcDef::Fixed { digits, scale }, Value::Fixed(s)) => {
                let b = fixed_to_bcd(s, *digits, *scale)?;
                w.write_bytes(&b)
            }
            (
                TcDef::Interface {
                    kind: tk_objref, ..
                },
                Value::ObjRef(ior),
            ) => ior.encode(w)?,
            (TcDef::Struct { members, .. }, Value::Struct(vals)) => {
                if members.len() != vals.len() {
                    return Err(CdrError::TypeMismatch {
                        offset: pos,
                        expected: format!("{} members", members.len()),
                        found: format!("{} values", vals.len()),
                    });
                }
                let target = tc.is_recursion_target();
                if target {
                    self.enclosing.push(tc.clone());
                }
                for (m, x) in members.iter().zip(vals) {
                    self.encode(&m.tc, x, w)?;
                }
                if target {
                    self.enclosing.pop();
                }
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
                let i = select_member(members, *default_index, *disc).ok_or(
                    CdrError::InvalidDiscriminator {
                        offset: pos,
                        value: *disc,
                    },
                )?;
                if let TcDef::Enum { members: e, .. } = discriminator.unalias().def() {
                    if *disc < 0 || *disc >= e.len() as i64 {
                        return Err(CdrError::InvalidEnum {
                            offset: pos,
                            value: *disc as u32,
                            count: e.len() as u32,
                        });
                    }
                }
                let target = tc.is_recursion_target();
                if target {
                    self.enclosing.push(tc.clone());
                }
                write_label(discriminator, *disc, w)?;
                self.encode(&members[i].tc, value, w)?;
                if target {
                    self.enclosing.pop();
                }
            }
            (TcDef::Enum { members, .. }, Value::Enum(x)) => {
                if *x as usize >= members.len() {
                    return Err(CdrError::InvalidEnum {
                        offset: pos,
                        value: *x,
                        count: members.len() as u32,
                    });
                }
                w.write_u32(*x)
            }
            (TcDef::Sequence { element, bound }, _) => {
                let n = self.element_count(element, v, pos)?;
                check_bound(pos, n, *bound)?;
                w.write_len(n)?;
                self.encode_elements(element, v, w)?
            }
            (TcDef::Array { element, length }, _) => {
                let n = self.element_count(element, v, pos)?;
                if n != *length as usize {
                    return Err(CdrError::TypeMismatch {
                        offset: pos,
                        expected: format!("array of {length} elements"),
                        found: format!("{n} elements"),
                    });
                }
                self.encode_elements(element, v, w)?
            }
            (TcDef::Alias { content, .. }, _) => self.encode(content, v, w)?,
            (TcDef::Recursive { .. }, _) => {
                let t = self.resolve(tc, pos)?.clone();
                self.encode(&t, v, w)?
            }
            (TcDef::ValueBox { .. } | TcDef::Value { .. }, _) => self.encode_value(tc, v, w)?,
            (TcDef::Interface { kind, .. }, Value::ObjRef(_)) => {
                return Err(unsupported(pos, *kind))
            }
            _ => return Err(mismatch(pos, tc, v)),
        }
        Ok(())
    }

    /// A value (or null, or a reference to one written before) where one
    /// of formal type `formal` may stand.
    fn encode_value(&mut self, formal: &TypeCode, v: &Value, w: &mut Writer<'_>) -> Result<()> {
        let pos = w.position();
        let obj = match v {
            Value::Null => return self.scope.writer.null(w),
            Value::ValueRef(n) => {
                if self.scope.writer.shared(w, *n as u64)? {
                    return Ok(());
                }
                return Err(CdrError::TypeMismatch {
                    offset: pos,
                    expected: format!("value {n} written before its reference"),
                    found: format!("ValueRef({n})"),
                });
            }
            Value::Valuetype(obj) => obj,
            other => return Err(mismatch(pos, formal, other)),
        };
        let formal = self.resolve(formal, pos)?.unalias().clone();
        let fid = formal.id().unwrap_or_default();
        let tc = if obj.type_id.is_empty() || obj.type_id == fid {
            formal.clone()
        } else {
            match self.scope.types.get(&obj.type_id) {
                Some(t) if t.kind() == formal.kind() => t.clone(),
                _ => {
                    return Err(CdrError::TypeMismatch {
                        offset: pos,
                        expected: format!("a value of type {fid} (or of a type the scope knows)"),
                        found: obj.type_id.clone(),
                    })
                }
            }
        };
        let boxed = tc.kind() == TCKind::tk_value_box;
        let chain = if boxed { Vec::new() } else { value_chain(&tc) };
        if chain.iter().any(|t| {
            matches!(
                t.def(),
                TcDef::Value {
                    modifier: VM_CUSTOM,
                    ..
                }
            )
        }) {
            return Err(unsupported(pos, TCKind::tk_value));
        }
        let ids = if boxed {
            vec![std::sync::Arc::from(tc.id().unwrap_or_default())]
        } else {
            truncatable_ids(&tc)
        };
        let same = tc.id() == Some(fid);
        let info = if ids.len() > 1 {
            TypeInfo::List(ids.clone())
        } else if same && self.scope.omit_formal_ids {
            TypeInfo::None
        } else {
            TypeInfo::Single(ids[0].clone())
        };
        let chunked = ids.len() > 1 || self.scope.chunk_all || self.scope.writer.level() > 0;
        let want = if boxed {
            1
        } else {
            chain.iter().map(|t| value_members(t).len()).sum()
        };
        if obj.state.len() != want {
            return Err(CdrError::TypeMismatch {
                offset: pos,
                expected: format!("{want} state members of {}", tc.id().unwrap_or_default()),
                found: format!("{} values", obj.state.len()),
            });
        }
        if self.scope.writer.shared(w, obj.number as u64)? {
            return Err(CdrError::TypeMismatch {
                offset: pos,
                expected: format!("value {} once (then ValueRef)", obj.number),
                found: "a second Valuetype with its number".into(),
            });
        }
        let token = self
            .scope
            .writer
            .begin(w, Some(obj.number as u64), None, &info, chunked)?;
        if let TcDef::ValueBox { content, .. } = tc.def() {
            self.encode(content, &obj.state[0], w)?;
        } else {
            let targets = chain.iter().filter(|t| t.is_recursion_target()).count();
            self.enclosing
                .extend(chain.iter().filter(|t| t.is_recursion_target()).cloned());
            let members = chain.iter().flat_map(|t| value_members(t).iter());
            for (m, x) in members.zip(&obj.state) {
                self.encode(&m.tc, x, w)?;
            }
            self.enclosing.truncate(self.enclosing.len() - targets);
        }
        self.scope.writer.end(w, token)
    }

    /// The element count of a sequence/array value, checking that the
    /// representation fits the element type.
    fn element_count(&self, element: &TypeCode, v: &Value, pos: usize) -> Result<usize> {
        let ok = match (packed_kind(element), v) {
            (Some(Packed::Short), Value::ShortSeq(x)) => Some(x.len()),
            (Some(Packed::UShort), Value::UShortSeq(x)) => Some(x.len()),
            (Some(Packed::Long), Value::LongSeq(x)) => Some(x.len()),
            (Some(Packed::ULong), Value::ULongSeq(x)) => Some(x.len()),
            (Some(Packed::LongLong), Value::LongLongSeq(x)) => Some(x.len()),
            (Some(Packed::ULongLong), Value::ULongLongSeq(x)) => Some(x.len()),
            (Some(Packed::Float), Value::FloatSeq(x)) => Some(x.len()),
            (Some(Packed::Double), Value::DoubleSeq(x)) => Some(x.len()),
            (Some(Packed::Boolean), Value::BooleanSeq(x)) => Some(x.len()),
            (Some(Packed::Char), Value::CharSeq(x)) => Some(x.len()),
            (Some(Packed::Octet), Value::OctetSeq(x)) => Some(x.len()),
            (Some(Packed::Enum(_)), Value::EnumSeq(x)) => Some(x.len()),
            (None, Value::Seq(x)) => Some(x.len()),
            (None, Value::StructSeq(cols)) => {
                let et = self.resolve(element.unalias(), pos)?;
                match et.def() {
                    TcDef::Struct { members, .. } => {
                        struct_seq_len(members, cols).map_err(|why| CdrError::TypeMismatch {
                            offset: pos,
                            expected: format!("columns of {}", et.name().unwrap_or("a struct")),
                            found: why,
                        })?
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        ok.ok_or_else(|| CdrError::TypeMismatch {
            offset: pos,
            expected: format!("elements of {}", element.unalias().kind().name()),
            found: v.variant_name().to_string(),
        })
    }

    fn encode_elements(&mut self, element: &TypeCode, v: &Value, w: &mut Writer<'_>) -> Result<()> {
        match v {
            Value::ShortSeq(x) => w.write_slice(x),
            Value::UShortSeq(x) => w.write_slice(x),
            Value::LongSeq(x) => w.write_slice(x),
            Value::ULongSeq(x) => w.write_slice(x),
            Value::LongLongSeq(x) => w.write_slice(x),
            Value::ULongLongSeq(x) => w.write_slice(x),
            Value::FloatSeq(x) => w.write_slice(x),
            Value::DoubleSeq(x) => w.write_slice(x),
            Value::OctetSeq(x) => w.write_bytes(x),
            Value::CharSeq(x) => {
                if w.opts().char_set == crate::CharCodeSet::Utf8 && !x.is_ascii() {
                    return Err(CdrError::Unrepresentable {
                        what: "char sequence with non-ASCII octets".into(),
                        codeset: "UTF-8",
                    });
                }
                w.write_bytes(x)
            }
            Value::BooleanSeq(x) => {
                w.reserve(x.len());
                for &b in x {
                    w.write_bool(b);
                }
            }
            Value::EnumSeq(x) => {
                if let TcDef::Enum { members, .. } = element.unalias().def() {
                    if let Some(&bad) = x.iter().find(|&&e| e as usize >= members.len()) {
                        return Err(CdrError::InvalidEnum {
                            offset: w.position(),
                            value: bad,
                            count: members.len() as u32,
                        });
                    }
                }
                w.write_slice(x)
            }
            Value::Seq(x) => {
                for e in x {
                    self.encode(element, e, w)?;
                }
            }
            Value::StructSeq(cols) => {
                let et = self.resolve(element.unalias(), w.position())?.clone();
                let TcDef::Struct { members, .. } = et.def() else {
                    return Err(mismatch(w.position(), element, v));
                };
                // Shape checked by `element_count` before the length.
                let n = cols.first().and_then(Value::len).unwrap_or(0);
                let target = et.is_recursion_target();
                if !target && n > 1 && packed_columns(cols) {
                    return encode_packed_rows(cols, n, w);
                }
                if target {
                    self.enclosing.push(et.clone());
                }
                for i in 0..n {
                    for (m, col) in members.iter().zip(cols) {
                        match col {
                            Value::ShortSeq(x) => w.write_i16(x[i]),
                            Value::UShortSeq(x) => w.write_u16(x[i]),
                            Value::LongSeq(x) => w.write_i32(x[i]),
                            Value::ULongSeq(x) => w.write_u32(x[i]),
                            Value::LongLongSeq(x) => w.write_i64(x[i]),
                            Value::ULongLongSeq(x) => w.write_u64(x[i]),
                            Value::FloatSeq(x) => w.write_f32(x[i]),
                            Value::DoubleSeq(x) => w.write_f64(x[i]),
                            Value::BooleanSeq(x) => w.write_bool(x[i]),
                            Value::CharSeq(x) => w.write_char(x[i] as char)?,
                            Value::OctetSeq(x) => w.write_u8(x[i]),
                            Value::EnumSeq(x) => w.write_u32(x[i]),
                            Value::Seq(x) => self.encode(&m.tc, &x[i], w)?,
                            other => return Err(mismatch(w.position(), &m.tc, other)),
                        }
                    }
                }
                if target {
                    self.enclosing.pop();
                }
            }
            other => {
                return Err(CdrError::TypeMismatch {
                    offset: w.position(),
                    expected: "a sequence value".into(),
                    found: other.variant_name().into(),
                })
            }
        }
        Ok(())
    }
}

/// A column of a struct sequence being decoded.
enum Column {
    Short(Vec<i16>),
    UShort(Vec<u16>),
    Long(Vec<i32>),
    ULong(Vec<u32>),
    LongLong(Vec<i64>),
    ULongLong(Vec<u64>),
    Float(Vec<f32>),
    Double(Vec<f64>),
    Boolean(Vec<bool>),
    Char(Vec<u8>),
    Octet(Vec<u8>),
    Enum(Vec<u32>, u32),
    Other(Vec<Value>),
}

impl Column {
    /// `n` was checked against the bytes left at the element's minimum
    /// size, which is at least one byte per primitive member.
    fn new(p: Option<Packed>, n: usize) -> Column {
        match p {
            Some(Packed::Short) => Column::Short(Vec::with_capacity(n)),
            Some(Packed::UShort) => Column::UShort(Vec::with_capacity(n)),
            Some(Packed::Long) => Column::Long(Vec::with_capacity(n)),
            Some(Packed::ULong) => Column::ULong(Vec::with_capacity(n)),
            Some(Packed::LongLong) => Column::LongLong(Vec::with_capacity(n)),
            Some(Packed::ULongLong) => Column::ULongLong(Vec::with_capacity(n)),
            Some(Packed::Float) => Column::Float(Vec::with_capacity(n)),
            Some(Packed::Double) => Column::Double(Vec::with_capacity(n)),
            Some(Packed::Boolean) => Column::Boolean(Vec::with_capacity(n)),
            Some(Packed::Char) => Column::Char(Vec::with_capacity(n)),
            Some(Packed::Octet) => Column::Octet(Vec::with_capacity(n)),
            Some(Packed::Enum(count)) => Column::Enum(Vec::with_capacity(n), count),
            None => Column::Other(Vec::with_capacity(n)),
        }
    }

    fn finish(self) -> Value {
        match self {
            Column::Short(v) => Value::ShortSeq(v),
            Column::UShort(v) => Value::UShortSeq(v),
            Column::Long(v) => Value::LongSeq(v),
            Column::ULong(v) => Value::ULongSeq(v),
            Column::LongLong(v) => Value::LongLongSeq(v),
            Column::ULongLong(v) => Value::ULongLongSeq(v),
            Column::Float(v) => Value::FloatSeq(v),
            Column::Double(v) => Value::DoubleSeq(v),
            Column::Boolean(v) => Value::BooleanSeq(v),
            Column::Char(v) => Value::CharSeq(v),
            Column::Octet(v) => Value::OctetSeq(Bytes::from(v)),
            Column::Enum(v, _) => Value::EnumSeq(v),
            Column::Other(v) => Value::Seq(v),
        }
    }
}

/// Where each member of an all-primitive struct lies inside one element,
/// for each start offset modulo 8 (CDR alignment repeats every 8 bytes).
struct RowLayout {
    /// Bytes from an element's start (after the previous element) to its
    /// end, per start residue.
    size: [usize; 8],
    /// Per member: its offset from the element's start, per residue.
    offsets: Vec<[usize; 8]>,
}

impl RowLayout {
    /// `None` unless every column is a primitive one.
    fn new(cols: &[Column]) -> Option<RowLayout> {
        let sizes: Vec<usize> = cols
            .iter()
            .map(|c| match c {
                Column::Boolean(_) | Column::Char(_) | Column::Octet(_) => Some(1),
                Column::Short(_) | Column::UShort(_) => Some(2),
                Column::Long(_) | Column::ULong(_) | Column::Float(_) | Column::Enum(..) => Some(4),
                Column::LongLong(_) | Column::ULongLong(_) | Column::Double(_) => Some(8),
                Column::Other(_) => None,
            })
            .collect::<Option<_>>()?;
        let mut size = [0usize; 8];
        let mut offsets = vec![[0usize; 8]; cols.len()];
        for (res, total) in size.iter_mut().enumerate() {
            let mut pos = res;
            for (j, &sz) in sizes.iter().enumerate() {
                pos += pos.wrapping_neg() & (sz - 1);
                offsets[j][res] = pos - res;
                pos += sz;
            }
            *total = pos - res;
        }
        Some(RowLayout { size, offsets })
    }
}

/// Whether every column of a struct sequence is a packed primitive one
/// (booleans and enums excluded: they are validated per element).
fn packed_columns(cols: &[Value]) -> bool {
    cols.iter().all(|c| {
        matches!(
            c,
            Value::ShortSeq(_)
                | Value::UShortSeq(_)
                | Value::LongSeq(_)
                | Value::ULongSeq(_)
                | Value::LongLongSeq(_)
                | Value::ULongLongSeq(_)
                | Value::FloatSeq(_)
                | Value::DoubleSeq(_)
                | Value::OctetSeq(_)
                | Value::CharSeq(_)
        )
    })
}

/// Wire size of one element of a packed column.
fn column_size(c: &Value) -> usize {
    match c {
        Value::OctetSeq(_) | Value::CharSeq(_) => 1,
        Value::ShortSeq(_) | Value::UShortSeq(_) => 2,
        Value::LongSeq(_) | Value::ULongSeq(_) | Value::FloatSeq(_) => 4,
        _ => 8,
    }
}

/// Encode `n` rows of an all-primitive struct sequence stored by column:
/// the rows' layout depends only on their start offset modulo 8 and is the
/// same for every row after the first, so the bytes are laid out once and
/// each column is written in one tight loop at its stride.
fn encode_packed_rows(cols: &[Value], n: usize, w: &mut Writer<'_>) -> Result<()> {
    if w.opts().char_set == crate::CharCodeSet::Utf8 {
        for c in cols {
            if let Value::CharSeq(x) = c {
                if !x.is_ascii() {
                    return Err(CdrError::Unrepresentable {
                        what: "char sequence with non-ASCII octets".into(),
                        codeset: "UTF-8",
                    });
                }
            }
        }
    }
    let sizes: Vec<usize> = cols.iter().map(column_size).collect();
    // Offsets from a row's start, for a row starting at residue `res`.
    let layout = |res: usize| -> (Vec<usize>, usize) {
        let mut pos = res;
        let offs = sizes
            .iter()
            .map(|&sz| {
                pos += pos.wrapping_neg() & (sz - 1);
                let o = pos - res;
                pos += sz;
                o
            })
            .collect();
        (offs, pos - res)
    };
    let r0 = w.position() % 8;
    let (offs0, size0) = layout(r0);
    let r1 = (r0 + size0) % 8;
    let (offs1, stride) = layout(r1);
    // Every row holds its most-aligned member (alignment A) at an A-aligned
    // position and what follows it does not depend on where the row began,
    // so all rows after the first start at the same residue modulo A —
    // and the layout depends only on that residue: one stride fits them all.
    let total = size0 + (n - 1) * stride;
    let order = w.order();
    let buf = w.buffer();
    let base = buf.len();
    buf.resize(base + total, 0);
    let out = &mut buf[base..];
    for (j, c) in cols.iter().enumerate() {
        let (o0, o1) = (offs0[j], size0 + offs1[j]);
        fn put<T: Primitive>(
            out: &mut [u8],
            x: &[T],
            o0: usize,
            o1: usize,
            stride: usize,
            order: crate::ByteOrder,
        ) {
            x[0].to_wire(&mut out[o0..o0 + T::SIZE], order);
            for (i, v) in x[1..].iter().enumerate() {
                let at = o1 + i * stride;
                v.to_wire(&mut out[at..at + T::SIZE], order);
            }
        }
        match c {
            Value::ShortSeq(x) => put(out, x, o0, o1, stride, order),
            Value::UShortSeq(x) => put(out, x, o0, o1, stride, order),
            Value::LongSeq(x) => put(out, x, o0, o1, stride, order),
            Value::ULongSeq(x) => put(out, x, o0, o1, stride, order),
            Value::LongLongSeq(x) => put(out, x, o0, o1, stride, order),
            Value::ULongLongSeq(x) => put(out, x, o0, o1, stride, order),
            Value::FloatSeq(x) => put(out, x, o0, o1, stride, order),
            Value::DoubleSeq(x) => put(out, x, o0, o1, stride, order),
            Value::OctetSeq(x) => {
                out[o0] = x[0];
                for (i, &b) in x[1..].iter().enumerate() {
                    out[o1 + i * stride] = b;
                }
            }
            Value::CharSeq(x) => {
                out[o0] = x[0];
                for (i, &b) in x[1..].iter().enumerate() {
                    out[o1 + i * stride] = b;
                }
            }
            _ => unreachable!("packed_columns checked"),
        }
    }
    Ok(())
}

/// The element count of a `StructSeq`, after checking that there is one
/// column per member, each of the member's representation, all of one
/// length, enum indices in range. `Ok(None)` when it is not a struct
/// sequence of these members at all; `Err` says what is wrong.
fn struct_seq_len(
    members: &[StructMember],
    cols: &[Value],
) -> std::result::Result<Option<usize>, String> {
    if members.is_empty() || cols.len() != members.len() {
        return Err(format!(
            "{} columns for {} members",
            cols.len(),
            members.len()
        ));
    }
    let n = cols[0].len().unwrap_or(0);
    for (j, (m, c)) in members.iter().zip(cols).enumerate() {
        let fits = match (packed_kind(&m.tc), c) {
            (Some(Packed::Short), Value::ShortSeq(_))
            | (Some(Packed::UShort), Value::UShortSeq(_))
            | (Some(Packed::Long), Value::LongSeq(_))
            | (Some(Packed::ULong), Value::ULongSeq(_))
            | (Some(Packed::LongLong), Value::LongLongSeq(_))
            | (Some(Packed::ULongLong), Value::ULongLongSeq(_))
            | (Some(Packed::Float), Value::FloatSeq(_))
            | (Some(Packed::Double), Value::DoubleSeq(_))
            | (Some(Packed::Boolean), Value::BooleanSeq(_))
            | (Some(Packed::Char), Value::CharSeq(_))
            | (Some(Packed::Octet), Value::OctetSeq(_))
            | (None, Value::Seq(_)) => true,
            (Some(Packed::Enum(count)), Value::EnumSeq(x)) => x.iter().all(|&e| e < count),
            _ => false,
        };
        if !fits {
            return Err(format!(
                "column {j} ({}) for member {}",
                c.variant_name(),
                m.name
            ));
        }
        if c.len() != Some(n) {
            return Err(format!(
                "column {j} has {:?} elements, column 0 has {n}",
                c.len()
            ));
        }
    }
    Ok(Some(n))
}

fn check_bound(offset: usize, n: usize, bound: u32) -> Result<()> {
    if bound != 0 && n > bound as usize {
        return Err(CdrError::LimitExceeded {
            offset,
            len: n as u64,
            limit: bound as u64,
        });
    }
    Ok(())
}

/// Packed BCD (`(digits + 2) / 2` octets, sign in the last nibble) to the
/// decimal string of the module doc.
pub fn fixed_from_bcd(b: &[u8], digits: u16, scale: i16, offset: usize) -> Result<String> {
    let nibbles: Vec<u8> = b.iter().flat_map(|&x| [x >> 4, x & 0x0f]).collect();
    let (sign, body) = nibbles.split_last().ok_or(CdrError::Truncated {
        offset,
        needed: 1,
        available: 0,
    })?;
    let negative = match sign {
        0xD | 0xB => true,
        0xC | 0xA | 0xE | 0xF => false,
        other => {
            return Err(CdrError::TypeMismatch {
                offset: offset + b.len() - 1,
                expected: "fixed sign nibble 0xC or 0xD".into(),
                found: format!("{other:#x}"),
            })
        }
    };
    if let Some(i) = body.iter().position(|&d| d > 9) {
        return Err(CdrError::TypeMismatch {
            offset: offset + i / 2,
            expected: "a BCD digit".into(),
            found: format!("nibble {:#x}", body[i]),
        });
    }
    // An even digit count leaves a leading pad nibble.
    let ds = &body[body.len() - digits as usize..];
    let int_len = digits as usize - scale as usize;
    let (int, frac) = ds.split_at(int_len);
    let mut s = String::with_capacity(digits as usize + 2);
    if negative {
        s.push('-');
    }
    let first = int.iter().position(|&d| d != 0).unwrap_or(int.len());
    if first == int.len() {
        s.push('0');
    }
    for &d in &int[first..] {
        s.push((b'0' + d) as char);
    }
    if !frac.is_empty() {
        s.push('.');
        for &d in frac {
            s.push((b'0' + d) as char);
        }
    }
    Ok(s)
}

/// The decimal string of the module doc to packed BCD for
/// `fixed<digits, scale>`.
pub fn fixed_to_bcd(s: &str, digits: u16, scale: i16) -> Result<Vec<u8>> {
    let bad = || CdrError::Unrepresentable {
        what: format!("{s:?} as fixed<{digits},{scale}>"),
        codeset: "decimal",
    };
    let (negative, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().all(|c| c.is_ascii_digit())
        || !frac.bytes().all(|c| c.is_ascii_digit())
    {
        return Err(bad());
    }
    let int = int.trim_start_matches('0');
    let scale = scale as usize;
    let digits = digits as usize;
    if int.len() > digits - scale || frac.len() > scale {
        return Err(bad());
    }
    let mut ds: Vec<u8> = Vec::with_capacity(digits + 2);
    if digits.is_multiple_of(2) {
        ds.push(0);
    }
    ds.extend(std::iter::repeat_n(0, digits - scale - int.len()));
    ds.extend(int.bytes().map(|c| c - b'0'));
    ds.extend(frac.bytes().map(|c| c - b'0'));
    ds.extend(std::iter::repeat_n(0, scale - frac.len()));
    ds.push(if negative { 0xD } else { 0xC });
    Ok(ds.chunks_exact(2).map(|p| (p[0] << 4) | p[1]).collect())
}
