//! CORBA TypeCodes (CORBA 3.x Part 2, "TypeCode" in the CDR chapter): a
//! Rust model of every `TCKind`, builders, comparison, sizing helpers, and
//! the exact CDR encoding — empty, simple and complex (encapsulated)
//! parameter lists and **indirection** (`0xffffffff` + a `long` offset
//! relative to the offset field itself) for recursive and repeated
//! TypeCodes.
//!
//! A [`TypeCode`] is an `Arc`, so clones are cheap. Recursion is modelled
//! without reference cycles, the way `ORB::create_recursive_tc` does it: a
//! recursive reference is a [`TcDef::Recursive`] placeholder naming the
//! repository id of an *enclosing* struct/union/valuetype/exception. The
//! decoder produces one for every indirection that points at a TypeCode
//! still being decoded; the encoder turns it back into an indirection to
//! that enclosing TypeCode; [`Value`](crate::value::Value) resolves it
//! while walking the enclosing type.
//!
//! Decoding tracks every TypeCode start it has seen by its address in the
//! outermost buffer (encapsulations are sub-slices of it), so an
//! indirection may point out of the current encapsulation into an
//! enclosing one, but only backwards, and only at the exact start of an
//! earlier or enclosing TypeCode of the same outermost TypeCode. Anything
//! else (forward, self, out of range, mid-TypeCode) is
//! [`CdrError::BadTypeCode`]. Error offsets are translated back to
//! offsets of the outermost reader.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use crate::error::{CdrError, Result};
use crate::reader::Reader;
use crate::writer::Writer;

/// The `TCKind` enumeration, with its wire values.
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum TCKind {
    tk_null = 0,
    tk_void = 1,
    tk_short = 2,
    tk_long = 3,
    tk_ushort = 4,
    tk_ulong = 5,
    tk_float = 6,
    tk_double = 7,
    tk_boolean = 8,
    tk_char = 9,
    tk_octet = 10,
    tk_any = 11,
    tk_TypeCode = 12,
    tk_Principal = 13,
    tk_objref = 14,
    tk_struct = 15,
    tk_union = 16,
    tk_enum = 17,
    tk_string = 18,
    tk_sequence = 19,
    tk_array = 20,
    tk_alias = 21,
    tk_except = 22,
    tk_longlong = 23,
    tk_ulonglong = 24,
    tk_longdouble = 25,
    tk_wchar = 26,
    tk_wstring = 27,
    tk_fixed = 28,
    tk_value = 29,
    tk_value_box = 30,
    tk_native = 31,
    tk_abstract_interface = 32,
    tk_local_interface = 33,
    tk_component = 34,
    tk_home = 35,
    tk_event = 36,
}

/// The wire value announcing an indirection instead of a `TCKind`.
pub const INDIRECTION: u32 = 0xffff_ffff;

impl TCKind {
    /// From the wire value; `None` for unknown kinds (and for
    /// [`INDIRECTION`], which is not a kind).
    pub fn from_u32(v: u32) -> Option<TCKind> {
        use TCKind::*;
        const ALL: [TCKind; 37] = [
            tk_null,
            tk_void,
            tk_short,
            tk_long,
            tk_ushort,
            tk_ulong,
            tk_float,
            tk_double,
            tk_boolean,
            tk_char,
            tk_octet,
            tk_any,
            tk_TypeCode,
            tk_Principal,
            tk_objref,
            tk_struct,
            tk_union,
            tk_enum,
            tk_string,
            tk_sequence,
            tk_array,
            tk_alias,
            tk_except,
            tk_longlong,
            tk_ulonglong,
            tk_longdouble,
            tk_wchar,
            tk_wstring,
            tk_fixed,
            tk_value,
            tk_value_box,
            tk_native,
            tk_abstract_interface,
            tk_local_interface,
            tk_component,
            tk_home,
            tk_event,
        ];
        ALL.get(v as usize).copied()
    }

    /// Kinds with an empty parameter list (the "basic" TypeCodes).
    pub fn is_basic(self) -> bool {
        use TCKind::*;
        matches!(
            self,
            tk_null
                | tk_void
                | tk_short
                | tk_long
                | tk_ushort
                | tk_ulong
                | tk_float
                | tk_double
                | tk_boolean
                | tk_char
                | tk_octet
                | tk_any
                | tk_TypeCode
                | tk_Principal
                | tk_longlong
                | tk_ulonglong
                | tk_longdouble
                | tk_wchar
        )
    }

    /// Kinds whose parameters are `(repository id, name)` only.
    pub fn is_interface_like(self) -> bool {
        use TCKind::*;
        matches!(
            self,
            tk_objref
                | tk_native
                | tk_abstract_interface
                | tk_local_interface
                | tk_component
                | tk_home
        )
    }

    /// The IDL-ish name used in errors (`"tk_struct"`).
    pub fn name(self) -> &'static str {
        use TCKind::*;
        match self {
            tk_null => "tk_null",
            tk_void => "tk_void",
            tk_short => "tk_short",
            tk_long => "tk_long",
            tk_ushort => "tk_ushort",
            tk_ulong => "tk_ulong",
            tk_float => "tk_float",
            tk_double => "tk_double",
            tk_boolean => "tk_boolean",
            tk_char => "tk_char",
            tk_octet => "tk_octet",
            tk_any => "tk_any",
            tk_TypeCode => "tk_TypeCode",
            tk_Principal => "tk_Principal",
            tk_objref => "tk_objref",
            tk_struct => "tk_struct",
            tk_union => "tk_union",
            tk_enum => "tk_enum",
            tk_string => "tk_string",
            tk_sequence => "tk_sequence",
            tk_array => "tk_array",
            tk_alias => "tk_alias",
            tk_except => "tk_except",
            tk_longlong => "tk_longlong",
            tk_ulonglong => "tk_ulonglong",
            tk_longdouble => "tk_longdouble",
            tk_wchar => "tk_wchar",
            tk_wstring => "tk_wstring",
            tk_fixed => "tk_fixed",
            tk_value => "tk_value",
            tk_value_box => "tk_value_box",
            tk_native => "tk_native",
            tk_abstract_interface => "tk_abstract_interface",
            tk_local_interface => "tk_local_interface",
            tk_component => "tk_component",
            tk_home => "tk_home",
            tk_event => "tk_event",
        }
    }
}

/// A struct or exception member.
#[derive(Debug, Clone)]
pub struct StructMember {
    pub name: String,
    pub tc: TypeCode,
}

/// A union member. `label` is the case label as an `i64`: the integer
/// value for integer discriminators (`unsigned long long` reinterpreted
/// bit for bit), 0/1 for boolean, the code point for char and wchar, the
/// index for enums. The default member's label is meaningless (on the wire
/// it is the octet 0).
#[derive(Debug, Clone)]
pub struct UnionMember {
    pub label: i64,
    pub name: String,
    pub tc: TypeCode,
}

/// A valuetype / eventtype state member.
#[derive(Debug, Clone)]
pub struct ValueMember {
    pub name: String,
    pub tc: TypeCode,
    /// `PRIVATE_MEMBER` 0, `PUBLIC_MEMBER` 1.
    pub visibility: i16,
}

/// What a TypeCode says: its kind and parameters.
#[derive(Debug, Clone)]
pub enum TcDef {
    /// Every kind with an empty parameter list (see [`TCKind::is_basic`]).
    Basic(TCKind),
    /// `string<bound>`; bound 0 means unbounded.
    String { bound: u32 },
    /// `wstring<bound>`, bound in characters; 0 means unbounded.
    WString { bound: u32 },
    /// `fixed<digits, scale>`.
    Fixed { digits: u16, scale: i16 },
    /// objref, native, abstract_interface, local_interface, component,
    /// home: a repository id and a name.
    Interface {
        kind: TCKind,
        id: Arc<str>,
        name: String,
    },
    /// struct (`kind` tk_struct) or exception (tk_except).
    Struct {
        kind: TCKind,
        id: Arc<str>,
        name: String,
        members: Vec<StructMember>,
    },
    /// union; `default_index` is -1 when there is no default member.
    Union {
        id: Arc<str>,
        name: String,
        discriminator: TypeCode,
        default_index: i32,
        members: Vec<UnionMember>,
    },
    /// enum with its member names.
    Enum {
        id: Arc<str>,
        name: String,
        members: Vec<String>,
    },
    /// `sequence<element, bound>`; bound 0 means unbounded.
    Sequence { element: TypeCode, bound: u32 },
    /// `element[length]` (multi-dimensional arrays nest).
    Array { element: TypeCode, length: u32 },
    /// typedef.
    Alias {
        id: Arc<str>,
        name: String,
        content: TypeCode,
    },
    /// valuetype box.
    ValueBox {
        id: Arc<str>,
        name: String,
        content: TypeCode,
    },
    /// valuetype (`kind` tk_value) or eventtype (tk_event). `base` is the
    /// concrete base (tk_null on the wire when absent).
    Value {
        kind: TCKind,
        id: Arc<str>,
        name: String,
        modifier: i16,
        base: Option<TypeCode>,
        members: Vec<ValueMember>,
    },
    /// A reference to the enclosing struct/union/valuetype/exception with
    /// this repository id (a recursive TypeCode). Not a kind of its own:
    /// [`TypeCode::kind`] reports `tk_struct` for it (the usual target),
    /// but use [`TypeCode::is_recursive_ref`] to tell.
    Recursive { id: Arc<str> },
}

/// Per-node facts computed once at construction, so that walks that would
/// be exponential over a shared (DAG) TypeCode are never needed.
#[derive(Debug)]
struct Meta {
    /// Fewest bytes a value of this type can occupy (no padding counted).
    min_size: u64,
    /// For fixed-size types: for each start offset modulo 8, how many
    /// bytes a value occupies including its leading padding.
    layout: Option<[u64; 8]>,
    /// Repository ids of `Recursive` placeholders inside that no node of
    /// this TypeCode binds (non-empty only inside a recursive type).
    free: Vec<Arc<str>>,
    /// Whether a `Recursive` placeholder inside refers to this node.
    rec_target: bool,
}

#[derive(Debug)]
struct Inner {
    def: TcDef,
    meta: Meta,
}

/// A CORBA TypeCode: an immutable, cheaply clonable (`Arc`) description of
/// an IDL type. `PartialEq` is [`TypeCode::equal`].
#[derive(Clone)]
pub struct TypeCode(Arc<Inner>);

impl fmt::Debug for TypeCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.def.fmt(f)
    }
}

impl PartialEq for TypeCode {
    fn eq(&self, other: &Self) -> bool {
        self.equal(other)
    }
}

fn pad(pos: u64, align: u64) -> u64 {
    pos.wrapping_neg() & (align - 1)
}

fn prim_layout(size: u64, align: u64) -> [u64; 8] {
    let mut t = [0u64; 8];
    for (r, slot) in t.iter_mut().enumerate() {
        *slot = pad(r as u64, align) + size;
    }
    t
}

/// Bytes occupied by `n` consecutive values with per-residue table `t`,
/// starting at residue `r0`. At most 8 residues exist, so the walk finds a
/// cycle within 9 steps and extrapolates.
fn repeat_layout(t: &[u64; 8], r0: usize, n: u64) -> u64 {
    let mut seen: [Option<(u64, u64)>; 8] = [None; 8];
    let mut total = 0u64;
    let mut r = r0;
    let mut k = 0u64;
    while k < n {
        if let Some((k0, total0)) = seen[r] {
            let cycle_len = k - k0;
            let cycle_sum = total - total0;
            let cycles = (n - k) / cycle_len;
            total = total.saturating_add(cycles.saturating_mul(cycle_sum));
            k += cycles * cycle_len;
            // Finish the remainder step by step.
            while k < n {
                total = total.saturating_add(t[r]);
                r = (r + t[r] as usize) % 8;
                k += 1;
            }
            return total;
        }
        seen[r] = Some((k, total));
        total = total.saturating_add(t[r]);
        r = ((r as u64 + t[r]) % 8) as usize;
        k += 1;
    }
    total
}

fn union_free(into: &mut Vec<Arc<str>>, from: &[Arc<str>]) {
    for id in from {
        if !into.iter().any(|x| x == id) {
            into.push(id.clone());
        }
    }
}

fn compute_meta(def: &TcDef) -> Meta {
    use TCKind::*;
    let mut free: Vec<Arc<str>> = Vec::new();
    let mut own_id: Option<&Arc<str>> = None;
    let (min_size, layout) = match def {
        TcDef::Basic(k) => match k {
            tk_short | tk_ushort => (2, Some(prim_layout(2, 2))),
            tk_long | tk_ulong | tk_float => (4, Some(prim_layout(4, 4))),
            tk_longlong | tk_ulonglong | tk_double => (8, Some(prim_layout(8, 8))),
            tk_longdouble => (16, Some(prim_layout(16, 8))),
            tk_boolean | tk_char | tk_octet => (1, Some(prim_layout(1, 1))),
            tk_wchar => (2, None),
            // A TypeCode is at least its kind; Principal a length.
            tk_any | tk_TypeCode | tk_Principal => (4, None),
            _ => (0, None),
        },
        TcDef::String { .. } => (5, None),
        TcDef::WString { .. } => (4, None),
        TcDef::Fixed { digits, .. } => {
            let n = (*digits as u64 + 2) / 2;
            (n, Some(prim_layout(n, 1)))
        }
        // Nil IOR: type id "" (5 bytes) + pad + profile count.
        TcDef::Interface { kind, .. } => (if *kind == tk_objref { 8 } else { 0 }, None),
        TcDef::Struct { id, members, .. } => {
            own_id = Some(id);
            let mut min = 0u64;
            let mut layout = Some([0u64; 8]);
            for m in members {
                let mm = &m.tc.0.meta;
                union_free(&mut free, &mm.free);
                min = min.saturating_add(mm.min_size);
                layout = match (layout, mm.layout) {
                    (Some(mut acc), Some(ml)) => {
                        for (r, slot) in acc.iter_mut().enumerate() {
                            let pos = r as u64 + *slot;
                            *slot = slot.saturating_add(ml[(pos % 8) as usize]);
                        }
                        Some(acc)
                    }
                    _ => None,
                };
            }
            (min, layout)
        }
        TcDef::Union {
            id,
            discriminator,
            default_index,
            members,
            ..
        } => {
            own_id = Some(id);
            let dm = &discriminator.0.meta;
            union_free(&mut free, &dm.free);
            let mut branch_min: Option<u64> = None;
            for m in members {
                union_free(&mut free, &m.tc.0.meta.free);
                let s = m.tc.0.meta.min_size;
                branch_min = Some(branch_min.map_or(s, |b| b.min(s)));
            }
            // Without a default, a discriminator may also select nothing
            // only if labels leave values uncovered; count 0 to be safe.
            let branch = if *default_index >= 0 {
                branch_min.unwrap_or(0)
            } else {
                0
            };
            (dm.min_size.saturating_add(branch), None)
        }
        TcDef::Enum { .. } => (4, Some(prim_layout(4, 4))),
        TcDef::Sequence { element, .. } => {
            union_free(&mut free, &element.0.meta.free);
            (4, None)
        }
        TcDef::Array { element, length } => {
            let em = &element.0.meta;
            union_free(&mut free, &em.free);
            let layout = em.layout.map(|t| {
                let mut out = [0u64; 8];
                for (r, slot) in out.iter_mut().enumerate() {
                    *slot = repeat_layout(&t, r, *length as u64);
                }
                out
            });
            (em.min_size.saturating_mul(*length as u64), layout)
        }
        TcDef::Alias { content, .. } => {
            let cm = &content.0.meta;
            union_free(&mut free, &cm.free);
            (cm.min_size, cm.layout)
        }
        TcDef::ValueBox { content, .. } => {
            union_free(&mut free, &content.0.meta.free);
            (4, None)
        }
        TcDef::Value {
            id, base, members, ..
        } => {
            own_id = Some(id);
            if let Some(b) = base {
                union_free(&mut free, &b.0.meta.free);
            }
            for m in members {
                union_free(&mut free, &m.tc.0.meta.free);
            }
            (4, None)
        }
        TcDef::Recursive { id } => {
            free.push(id.clone());
            (0, None)
        }
    };
    let mut rec_target = false;
    if let Some(id) = own_id {
        if let Some(i) = free.iter().position(|x| x == id) {
            free.swap_remove(i);
            rec_target = true;
        }
    }
    Meta {
        min_size,
        layout,
        free,
        rec_target,
    }
}

fn bad(offset: usize, reason: impl Into<String>) -> CdrError {
    CdrError::BadTypeCode {
        offset,
        reason: reason.into(),
    }
}

impl TypeCode {
    /// Wrap a definition. Checks the invariants the encoder and the value
    /// codec rely on (default index in range, labels only for legal
    /// discriminator types, fixed digits 1..=31 and 0 <= scale <= digits).
    pub fn new(def: TcDef) -> Result<TypeCode> {
        match &def {
            TcDef::Union {
                discriminator,
                default_index,
                members,
                ..
            } => {
                if !is_legal_discriminator(discriminator) {
                    return Err(bad(
                        0,
                        format!(
                            "{} is not a legal union discriminator type",
                            discriminator.kind().name()
                        ),
                    ));
                }
                if *default_index < -1 || *default_index >= members.len() as i32 {
                    return Err(bad(
                        0,
                        format!(
                            "default index {default_index} outside -1..{}",
                            members.len()
                        ),
                    ));
                }
            }
            TcDef::Fixed { digits, scale }
                if *digits == 0 || *digits > 31 || *scale < 0 || *scale as i32 > *digits as i32 =>
            {
                return Err(bad(0, format!("fixed<{digits},{scale}> is not legal")));
            }
            TcDef::Basic(k) if !k.is_basic() => {
                return Err(bad(0, format!("{} has parameters", k.name())));
            }
            TcDef::Interface { kind, .. } if !kind.is_interface_like() => {
                return Err(bad(0, format!("{} is not an interface kind", kind.name())));
            }
            TcDef::Struct { kind, .. }
                if !matches!(kind, TCKind::tk_struct | TCKind::tk_except) =>
            {
                return Err(bad(0, format!("{} is not struct or except", kind.name())));
            }
            TcDef::Value { kind, .. } if !matches!(kind, TCKind::tk_value | TCKind::tk_event) => {
                return Err(bad(0, format!("{} is not value or event", kind.name())));
            }
            _ => {}
        }
        Ok(Self::from_def(def))
    }

    fn from_def(def: TcDef) -> TypeCode {
        let meta = compute_meta(&def);
        TypeCode(Arc::new(Inner { def, meta }))
    }

    /// A TypeCode with an empty parameter list. Panics if `kind` has
    /// parameters (a programming error, not input).
    pub fn basic(kind: TCKind) -> TypeCode {
        assert!(kind.is_basic(), "{} has parameters", kind.name());
        Self::from_def(TcDef::Basic(kind))
    }
    /// tk_null
    pub fn null() -> TypeCode {
        Self::basic(TCKind::tk_null)
    }
    /// tk_void
    pub fn void() -> TypeCode {
        Self::basic(TCKind::tk_void)
    }
    /// tk_short
    pub fn short() -> TypeCode {
        Self::basic(TCKind::tk_short)
    }
    /// tk_long
    pub fn long() -> TypeCode {
        Self::basic(TCKind::tk_long)
    }
    /// tk_ushort
    pub fn ushort() -> TypeCode {
        Self::basic(TCKind::tk_ushort)
    }
    /// tk_ulong
    pub fn ulong() -> TypeCode {
        Self::basic(TCKind::tk_ulong)
    }
    /// tk_longlong
    pub fn longlong() -> TypeCode {
        Self::basic(TCKind::tk_longlong)
    }
    /// tk_ulonglong
    pub fn ulonglong() -> TypeCode {
        Self::basic(TCKind::tk_ulonglong)
    }
    /// tk_float
    pub fn float() -> TypeCode {
        Self::basic(TCKind::tk_float)
    }
    /// tk_double
    pub fn double() -> TypeCode {
        Self::basic(TCKind::tk_double)
    }
    /// tk_longdouble
    pub fn longdouble() -> TypeCode {
        Self::basic(TCKind::tk_longdouble)
    }
    /// tk_boolean
    pub fn boolean() -> TypeCode {
        Self::basic(TCKind::tk_boolean)
    }
    /// tk_char
    pub fn char() -> TypeCode {
        Self::basic(TCKind::tk_char)
    }
    /// tk_wchar
    pub fn wchar() -> TypeCode {
        Self::basic(TCKind::tk_wchar)
    }
    /// tk_octet
    pub fn octet() -> TypeCode {
        Self::basic(TCKind::tk_octet)
    }
    /// tk_any
    pub fn any() -> TypeCode {
        Self::basic(TCKind::tk_any)
    }
    /// tk_TypeCode
    pub fn tc_typecode() -> TypeCode {
        Self::basic(TCKind::tk_TypeCode)
    }
    /// tk_Principal
    pub fn principal() -> TypeCode {
        Self::basic(TCKind::tk_Principal)
    }
    /// `string<bound>` (0 = unbounded).
    pub fn string(bound: u32) -> TypeCode {
        Self::from_def(TcDef::String { bound })
    }
    /// `wstring<bound>` (0 = unbounded).
    pub fn wstring(bound: u32) -> TypeCode {
        Self::from_def(TcDef::WString { bound })
    }
    /// `fixed<digits, scale>`; errors unless 1 <= digits <= 31 and
    /// 0 <= scale <= digits.
    pub fn fixed(digits: u16, scale: i16) -> Result<TypeCode> {
        Self::new(TcDef::Fixed { digits, scale })
    }
    /// `sequence<element, bound>` (0 = unbounded).
    pub fn sequence(element: TypeCode, bound: u32) -> TypeCode {
        Self::from_def(TcDef::Sequence { element, bound })
    }
    /// `element[length]`.
    pub fn array(element: TypeCode, length: u32) -> TypeCode {
        Self::from_def(TcDef::Array { element, length })
    }
    /// `typedef content name;`
    pub fn alias(id: &str, name: &str, content: TypeCode) -> TypeCode {
        Self::from_def(TcDef::Alias {
            id: id.into(),
            name: name.into(),
            content,
        })
    }
    /// An interface reference type.
    pub fn objref(id: &str, name: &str) -> TypeCode {
        Self::interface(TCKind::tk_objref, id, name)
    }
    /// objref, native, abstract_interface, local_interface, component or
    /// home. Panics for other kinds (a programming error).
    pub fn interface(kind: TCKind, id: &str, name: &str) -> TypeCode {
        assert!(
            kind.is_interface_like(),
            "{} is not interface-like",
            kind.name()
        );
        Self::from_def(TcDef::Interface {
            kind,
            id: id.into(),
            name: name.into(),
        })
    }
    /// A struct from `(member name, member type)` pairs.
    pub fn struct_tc(id: &str, name: &str, members: Vec<(&str, TypeCode)>) -> TypeCode {
        Self::from_def(TcDef::Struct {
            kind: TCKind::tk_struct,
            id: id.into(),
            name: name.into(),
            members: members
                .into_iter()
                .map(|(n, tc)| StructMember { name: n.into(), tc })
                .collect(),
        })
    }
    /// An exception from `(member name, member type)` pairs.
    pub fn except_tc(id: &str, name: &str, members: Vec<(&str, TypeCode)>) -> TypeCode {
        Self::from_def(TcDef::Struct {
            kind: TCKind::tk_except,
            id: id.into(),
            name: name.into(),
            members: members
                .into_iter()
                .map(|(n, tc)| StructMember { name: n.into(), tc })
                .collect(),
        })
    }
    /// A union from `(label, member name, member type)`; `default_index`
    /// is the position of the default member or -1. Errors for an illegal
    /// discriminator type or an out-of-range default index.
    pub fn union_tc(
        id: &str,
        name: &str,
        discriminator: TypeCode,
        default_index: i32,
        members: Vec<(i64, &str, TypeCode)>,
    ) -> Result<TypeCode> {
        Self::new(TcDef::Union {
            id: id.into(),
            name: name.into(),
            discriminator,
            default_index,
            members: members
                .into_iter()
                .map(|(label, n, tc)| UnionMember {
                    label,
                    name: n.into(),
                    tc,
                })
                .collect(),
        })
    }
    /// An enum from its member names.
    pub fn enum_tc(id: &str, name: &str, members: &[&str]) -> TypeCode {
        Self::from_def(TcDef::Enum {
            id: id.into(),
            name: name.into(),
            members: members.iter().map(|s| s.to_string()).collect(),
        })
    }
    /// A value box.
    pub fn value_box(id: &str, name: &str, content: TypeCode) -> TypeCode {
        Self::from_def(TcDef::ValueBox {
            id: id.into(),
            name: name.into(),
            content,
        })
    }
    /// A valuetype (`VM_NONE` 0, `VM_CUSTOM` 1, `VM_ABSTRACT` 2,
    /// `VM_TRUNCATABLE` 3) with members `(name, type, visibility)`.
    pub fn value_tc(
        id: &str,
        name: &str,
        modifier: i16,
        base: Option<TypeCode>,
        members: Vec<(&str, TypeCode, i16)>,
    ) -> TypeCode {
        Self::from_def(TcDef::Value {
            kind: TCKind::tk_value,
            id: id.into(),
            name: name.into(),
            modifier,
            base,
            members: members
                .into_iter()
                .map(|(n, tc, visibility)| ValueMember {
                    name: n.into(),
                    tc,
                    visibility,
                })
                .collect(),
        })
    }
    /// A placeholder for the enclosing struct/union/valuetype/exception
    /// with repository id `id` (what `ORB::create_recursive_tc` returns).
    pub fn recursive(id: &str) -> TypeCode {
        Self::from_def(TcDef::Recursive { id: id.into() })
    }

    /// The definition, for matching on parameters.
    pub fn def(&self) -> &TcDef {
        &self.0.def
    }

    /// Whether this is a [`TcDef::Recursive`] placeholder.
    pub fn is_recursive_ref(&self) -> bool {
        matches!(self.0.def, TcDef::Recursive { .. })
    }

    /// Whether a recursive placeholder inside refers to this TypeCode.
    pub fn is_recursion_target(&self) -> bool {
        self.0.meta.rec_target
    }

    /// Whether this TypeCode still contains placeholders whose target is
    /// not inside it (only true for fragments of a recursive type).
    pub fn has_unbound_recursion(&self) -> bool {
        !self.0.meta.free.is_empty()
    }

    /// The kind. A recursive placeholder reports `tk_struct`.
    pub fn kind(&self) -> TCKind {
        match &self.0.def {
            TcDef::Basic(k) => *k,
            TcDef::String { .. } => TCKind::tk_string,
            TcDef::WString { .. } => TCKind::tk_wstring,
            TcDef::Fixed { .. } => TCKind::tk_fixed,
            TcDef::Interface { kind, .. } => *kind,
            TcDef::Struct { kind, .. } => *kind,
            TcDef::Union { .. } => TCKind::tk_union,
            TcDef::Enum { .. } => TCKind::tk_enum,
            TcDef::Sequence { .. } => TCKind::tk_sequence,
            TcDef::Array { .. } => TCKind::tk_array,
            TcDef::Alias { .. } => TCKind::tk_alias,
            TcDef::ValueBox { .. } => TCKind::tk_value_box,
            TcDef::Value { kind, .. } => *kind,
            TcDef::Recursive { .. } => TCKind::tk_struct,
        }
    }

    /// Repository id, for the kinds that have one.
    pub fn id(&self) -> Option<&str> {
        match &self.0.def {
            TcDef::Interface { id, .. }
            | TcDef::Struct { id, .. }
            | TcDef::Union { id, .. }
            | TcDef::Enum { id, .. }
            | TcDef::Alias { id, .. }
            | TcDef::ValueBox { id, .. }
            | TcDef::Value { id, .. }
            | TcDef::Recursive { id } => Some(id),
            _ => None,
        }
    }

    /// Name, for the kinds that have one.
    pub fn name(&self) -> Option<&str> {
        match &self.0.def {
            TcDef::Interface { name, .. }
            | TcDef::Struct { name, .. }
            | TcDef::Union { name, .. }
            | TcDef::Enum { name, .. }
            | TcDef::Alias { name, .. }
            | TcDef::ValueBox { name, .. }
            | TcDef::Value { name, .. } => Some(name),
            _ => None,
        }
    }

    /// Element/content type of sequence, array, alias and value box.
    pub fn content_type(&self) -> Option<&TypeCode> {
        match &self.0.def {
            TcDef::Sequence { element, .. } | TcDef::Array { element, .. } => Some(element),
            TcDef::Alias { content, .. } | TcDef::ValueBox { content, .. } => Some(content),
            _ => None,
        }
    }

    /// Bound of string/wstring/sequence, length of an array.
    pub fn length(&self) -> Option<u32> {
        match &self.0.def {
            TcDef::String { bound } | TcDef::WString { bound } => Some(*bound),
            TcDef::Sequence { bound, .. } => Some(*bound),
            TcDef::Array { length, .. } => Some(*length),
            _ => None,
        }
    }

    /// Number of members of struct, except, union, enum, value.
    pub fn member_count(&self) -> Option<usize> {
        match &self.0.def {
            TcDef::Struct { members, .. } => Some(members.len()),
            TcDef::Union { members, .. } => Some(members.len()),
            TcDef::Enum { members, .. } => Some(members.len()),
            TcDef::Value { members, .. } => Some(members.len()),
            _ => None,
        }
    }

    /// Name of member `i`.
    pub fn member_name(&self, i: usize) -> Option<&str> {
        match &self.0.def {
            TcDef::Struct { members, .. } => members.get(i).map(|m| m.name.as_str()),
            TcDef::Union { members, .. } => members.get(i).map(|m| m.name.as_str()),
            TcDef::Enum { members, .. } => members.get(i).map(|m| m.as_str()),
            TcDef::Value { members, .. } => members.get(i).map(|m| m.name.as_str()),
            _ => None,
        }
    }

    /// Type of member `i`.
    pub fn member_type(&self, i: usize) -> Option<&TypeCode> {
        match &self.0.def {
            TcDef::Struct { members, .. } => members.get(i).map(|m| &m.tc),
            TcDef::Union { members, .. } => members.get(i).map(|m| &m.tc),
            TcDef::Value { members, .. } => members.get(i).map(|m| &m.tc),
            _ => None,
        }
    }

    /// Label of union member `i` (see [`UnionMember::label`]).
    pub fn member_label(&self, i: usize) -> Option<i64> {
        match &self.0.def {
            TcDef::Union { members, .. } => members.get(i).map(|m| m.label),
            _ => None,
        }
    }

    /// A union's discriminator type.
    pub fn discriminator_type(&self) -> Option<&TypeCode> {
        match &self.0.def {
            TcDef::Union { discriminator, .. } => Some(discriminator),
            _ => None,
        }
    }

    /// A union's default member index (-1 when none).
    pub fn default_index(&self) -> Option<i32> {
        match &self.0.def {
            TcDef::Union { default_index, .. } => Some(*default_index),
            _ => None,
        }
    }

    /// `(digits, scale)` of a fixed type.
    pub fn fixed_digits_scale(&self) -> Option<(u16, i16)> {
        match &self.0.def {
            TcDef::Fixed { digits, scale } => Some((*digits, *scale)),
            _ => None,
        }
    }

    /// This TypeCode with every outer alias removed.
    pub fn unalias(&self) -> &TypeCode {
        let mut t = self;
        while let TcDef::Alias { content, .. } = &t.0.def {
            t = content;
        }
        t
    }

    /// The fewest bytes a value of this type occupies on the wire (no
    /// padding counted). Decoders use it to refuse element counts that
    /// the bytes left cannot hold.
    pub fn min_wire_size(&self) -> u64 {
        self.0.meta.min_size
    }

    /// The steady-state distance between consecutive elements of a
    /// `sequence` of this type, for fixed-size types (primitives except
    /// wchar, enums, fixed, and structs/arrays of those); `None` for
    /// variable-size types. Padding inside and between elements counts:
    /// struct {short s; char c; long l; octet o; double d} → 24,
    /// struct {char c; double d} → 16. `None` too in the (theoretical)
    /// case where consecutive elements do not settle on one distance.
    pub fn wire_stride(&self) -> Option<u64> {
        let t = self.0.meta.layout?;
        // A sequence body starts right after its u32 length.
        let mut r = 4usize;
        let mut strides = [0u64; 16];
        for s in strides.iter_mut() {
            *s = t[r];
            r = ((r as u64 + t[r]) % 8) as usize;
        }
        let last = strides[15];
        strides[8..].iter().all(|&s| s == last).then_some(last)
    }

    /// Bytes a fixed-size value occupies when it starts at stream offset
    /// `pos` (leading padding included); `None` for variable-size types.
    pub fn fixed_size_at(&self, pos: usize) -> Option<u64> {
        self.0.meta.layout.map(|t| t[pos % 8])
    }

    /// Exact equality (`TypeCode::equal`): same kinds, parameters, ids and
    /// names throughout, aliases included.
    pub fn equal(&self, other: &TypeCode) -> bool {
        Cmp {
            strict: true,
            memo: HashSet::new(),
        }
        .eq(self, other)
    }

    /// `TypeCode::equivalent`: aliases are stripped at every level; where
    /// both sides have non-empty repository ids those decide, otherwise
    /// the structure is compared ignoring names.
    pub fn equivalent(&self, other: &TypeCode) -> bool {
        Cmp {
            strict: false,
            memo: HashSet::new(),
        }
        .eq(self, other)
    }
}

fn is_legal_discriminator(tc: &TypeCode) -> bool {
    use TCKind::*;
    matches!(
        tc.unalias().kind(),
        tk_short
            | tk_long
            | tk_ushort
            | tk_ulong
            | tk_longlong
            | tk_ulonglong
            | tk_char
            | tk_boolean
            | tk_wchar
            | tk_enum
    ) && !tc.unalias().is_recursive_ref()
}

/// Comparison with a memo of node pairs already found equal, so that
/// TypeCodes sharing sub-TypeCodes (repeated indirections) compare in time
/// linear in their distinct nodes.
struct Cmp {
    strict: bool,
    memo: HashSet<(usize, usize)>,
}

impl Cmp {
    fn eq(&mut self, a: &TypeCode, b: &TypeCode) -> bool {
        let (a, b) = if self.strict {
            (a, b)
        } else {
            (a.unalias(), b.unalias())
        };
        if Arc::ptr_eq(&a.0, &b.0) {
            return true;
        }
        let key = (
            Arc::as_ptr(&a.0) as *const u8 as usize,
            Arc::as_ptr(&b.0) as *const u8 as usize,
        );
        if self.memo.contains(&key) {
            return true;
        }
        let r = self.eq_nodes(a, b);
        if r {
            self.memo.insert(key);
        }
        r
    }

    /// For id-carrying kinds: `Some(answer)` when ids decide.
    fn ids(&self, ida: &str, idb: &str, na: &str, nb: &str) -> Option<bool> {
        if self.strict {
            if ida != idb || na != nb {
                return Some(false);
            }
            None
        } else if !ida.is_empty() && !idb.is_empty() {
            Some(ida == idb)
        } else {
            None
        }
    }

    fn names(&self, a: &str, b: &str) -> bool {
        !self.strict || a == b
    }

    fn eq_nodes(&mut self, a: &TypeCode, b: &TypeCode) -> bool {
        use TcDef::*;
        match (&a.0.def, &b.0.def) {
            (Basic(x), Basic(y)) => x == y,
            (String { bound: x }, String { bound: y }) => x == y,
            (WString { bound: x }, WString { bound: y }) => x == y,
            (
                Fixed {
                    digits: d1,
                    scale: s1,
                },
                Fixed {
                    digits: d2,
                    scale: s2,
                },
            ) => d1 == d2 && s1 == s2,
            (
                Interface {
                    kind: k1,
                    id: i1,
                    name: n1,
                },
                Interface {
                    kind: k2,
                    id: i2,
                    name: n2,
                },
            ) => k1 == k2 && self.ids(i1, i2, n1, n2).unwrap_or(true),
            (
                Struct {
                    kind: k1,
                    id: i1,
                    name: n1,
                    members: m1,
                },
                Struct {
                    kind: k2,
                    id: i2,
                    name: n2,
                    members: m2,
                },
            ) => {
                if k1 != k2 {
                    return false;
                }
                if let Some(r) = self.ids(i1, i2, n1, n2) {
                    return r;
                }
                m1.len() == m2.len()
                    && m1
                        .iter()
                        .zip(m2)
                        .all(|(x, y)| self.names(&x.name, &y.name) && self.eq(&x.tc, &y.tc))
            }
            (
                Union {
                    id: i1,
                    name: n1,
                    discriminator: d1,
                    default_index: x1,
                    members: m1,
                },
                Union {
                    id: i2,
                    name: n2,
                    discriminator: d2,
                    default_index: x2,
                    members: m2,
                },
            ) => {
                if let Some(r) = self.ids(i1, i2, n1, n2) {
                    return r;
                }
                x1 == x2
                    && m1.len() == m2.len()
                    && self.eq(d1, d2)
                    && m1.iter().zip(m2).enumerate().all(|(i, (x, y))| {
                        (i as i32 == *x1 || x.label == y.label)
                            && self.names(&x.name, &y.name)
                            && self.eq(&x.tc, &y.tc)
                    })
            }
            (
                Enum {
                    id: i1,
                    name: n1,
                    members: m1,
                },
                Enum {
                    id: i2,
                    name: n2,
                    members: m2,
                },
            ) => {
                if let Some(r) = self.ids(i1, i2, n1, n2) {
                    return r;
                }
                m1.len() == m2.len() && m1.iter().zip(m2).all(|(x, y)| self.names(x, y))
            }
            (
                Sequence {
                    element: e1,
                    bound: b1,
                },
                Sequence {
                    element: e2,
                    bound: b2,
                },
            ) => b1 == b2 && self.eq(e1, e2),
            (
                Array {
                    element: e1,
                    length: l1,
                },
                Array {
                    element: e2,
                    length: l2,
                },
            ) => l1 == l2 && self.eq(e1, e2),
            (
                Alias {
                    id: i1,
                    name: n1,
                    content: c1,
                },
                Alias {
                    id: i2,
                    name: n2,
                    content: c2,
                },
            ) => i1 == i2 && n1 == n2 && self.eq(c1, c2),
            (
                ValueBox {
                    id: i1,
                    name: n1,
                    content: c1,
                },
                ValueBox {
                    id: i2,
                    name: n2,
                    content: c2,
                },
            ) => {
                if let Some(r) = self.ids(i1, i2, n1, n2) {
                    return r;
                }
                self.eq(c1, c2)
            }
            (
                Value {
                    kind: k1,
                    id: i1,
                    name: n1,
                    modifier: o1,
                    base: b1,
                    members: m1,
                },
                Value {
                    kind: k2,
                    id: i2,
                    name: n2,
                    modifier: o2,
                    base: b2,
                    members: m2,
                },
            ) => {
                if k1 != k2 {
                    return false;
                }
                if let Some(r) = self.ids(i1, i2, n1, n2) {
                    return r;
                }
                let bases = match (b1, b2) {
                    (None, None) => true,
                    (Some(x), Some(y)) => self.eq(x, y),
                    _ => false,
                };
                o1 == o2
                    && bases
                    && m1.len() == m2.len()
                    && m1.iter().zip(m2).all(|(x, y)| {
                        x.visibility == y.visibility
                            && self.names(&x.name, &y.name)
                            && self.eq(&x.tc, &y.tc)
                    })
            }
            (Recursive { id: i1 }, Recursive { id: i2 }) => i1 == i2,
            _ => false,
        }
    }
}

// ---------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------

enum Slot {
    /// Being decoded; the repository id once read (struct, union, value,
    /// event, except — the kinds recursion may go through).
    InProgress(Option<Arc<str>>),
    Done(TypeCode),
}

/// Decoding state for one outermost TypeCode: every TypeCode start seen
/// so far, by address in the outermost buffer, in increasing order.
struct TcDecoder {
    /// Address of the outermost TypeCode's first byte: indirections may
    /// not point before it.
    floor: usize,
    starts: Vec<(usize, Slot)>,
}

fn addr(r: &Reader<'_>) -> usize {
    r.rest().as_ptr() as usize
}

/// Move an error found inside an encapsulation to outer offsets.
pub(crate) fn shift_err(e: CdrError, by: usize) -> CdrError {
    use CdrError::*;
    match e {
        Truncated {
            offset,
            needed,
            available,
        } => Truncated {
            offset: offset + by,
            needed,
            available,
        },
        LimitExceeded { offset, len, limit } => LimitExceeded {
            offset: offset + by,
            len,
            limit,
        },
        DepthExceeded { offset, limit } => DepthExceeded {
            offset: offset + by,
            limit,
        },
        InvalidBool { offset, value } => InvalidBool {
            offset: offset + by,
            value,
        },
        StringNotTerminated { offset } => StringNotTerminated {
            offset: offset + by,
        },
        EmptyString { offset } => EmptyString {
            offset: offset + by,
        },
        InvalidCodeSet { offset, codeset } => InvalidCodeSet {
            offset: offset + by,
            codeset,
        },
        WcharNotNegotiated { offset } => WcharNotNegotiated {
            offset: offset + by,
        },
        InvalidEnum {
            offset,
            value,
            count,
        } => InvalidEnum {
            offset: offset + by,
            value,
            count,
        },
        InvalidDiscriminator { offset, value } => InvalidDiscriminator {
            offset: offset + by,
            value,
        },
        InvalidByteOrder { offset, value } => InvalidByteOrder {
            offset: offset + by,
            value,
        },
        BadTypeCode { offset, reason } => BadTypeCode {
            offset: offset + by,
            reason,
        },
        BadValue { offset, reason } => BadValue {
            offset: offset + by,
            reason,
        },
        TypeMismatch {
            offset,
            expected,
            found,
        } => TypeMismatch {
            offset: offset + by,
            expected,
            found,
        },
        TrailingData { offset, remaining } => TrailingData {
            offset: offset + by,
            remaining,
        },
        other => other,
    }
}

/// Minimum wire bytes of one member entry, used to refuse member counts
/// the encapsulation cannot hold: a name (4 + NUL) and a TypeCode kind.
const MIN_MEMBER: usize = 9;

impl TcDecoder {
    fn decode(&mut self, r: &mut Reader<'_>) -> Result<TypeCode> {
        r.align(4)?;
        let start = addr(r);
        let start_pos = r.position();
        let raw = r.read_u32()?;
        if raw == INDIRECTION {
            return self.indirection(r);
        }
        let kind = TCKind::from_u32(raw)
            .ok_or_else(|| bad(start_pos, format!("unknown TCKind {raw:#x}")))?;
        let slot = self.starts.len();
        self.starts.push((start, Slot::InProgress(None)));
        // Nesting is counted by `read_encapsulation`, one level per
        // complex TypeCode.
        let tc = self.decode_body(kind, r)?;
        self.starts[slot].1 = Slot::Done(tc.clone());
        Ok(tc)
    }

    fn indirection(&mut self, r: &mut Reader<'_>) -> Result<TypeCode> {
        let field_pos = r.position();
        let field = addr(r);
        let off = r.read_i32()?;
        if off >= -4 {
            return Err(bad(
                field_pos,
                format!("indirection offset {off} does not point backwards to an earlier TypeCode"),
            ));
        }
        let target = field as i64 + off as i64;
        if target < self.floor as i64 {
            return Err(bad(
                field_pos,
                format!("indirection offset {off} points outside the outermost TypeCode"),
            ));
        }
        let target = target as usize;
        let i = self
            .starts
            .binary_search_by_key(&target, |(a, _)| *a)
            .map_err(|_| {
                bad(
                    field_pos,
                    format!("indirection offset {off} does not point at the start of a TypeCode"),
                )
            })?;
        match &self.starts[i].1 {
            Slot::Done(tc) if tc.has_unbound_recursion() => {
                let tc = tc.clone();
                self.rebind(&tc, field_pos, off)
            }
            Slot::Done(tc) => Ok(tc.clone()),
            Slot::InProgress(Some(id)) if !id.is_empty() => Ok(TypeCode::recursive(id)),
            Slot::InProgress(_) => Err(bad(
                field_pos,
                format!(
                    "indirection offset {off} points at an enclosing TypeCode that cannot be recursive"
                ),
            )),
        }
    }

    /// A repeated TypeCode taken from inside a recursive one (omniORB
    /// sends `NodeSeq b` of `struct Outer { Node a; NodeSeq b; }` as an
    /// indirection into `Node`): its placeholders must now name a type
    /// that encloses the new position, or be replaced by the finished
    /// recursive TypeCode they referred to.
    fn rebind(&self, tc: &TypeCode, field_pos: usize, off: i32) -> Result<TypeCode> {
        let mut out = tc.clone();
        for id in tc.0.meta.free.clone() {
            let enclosing = self
                .starts
                .iter()
                .any(|(_, s)| matches!(s, Slot::InProgress(Some(x)) if *x == id));
            if enclosing {
                continue;
            }
            let target = self.starts.iter().rev().find_map(|(_, s)| match s {
                Slot::Done(t) if t.id() == Some(&*id) && t.is_recursion_target() => Some(t.clone()),
                _ => None,
            });
            let Some(target) = target else {
                return Err(bad(
                    field_pos,
                    format!("indirection offset {off} refers to a recursive reference to {id} outside its type"),
                ));
            };
            out = substitute(&out, &id, &target, &mut HashMap::new());
        }
        Ok(out)
    }

    fn set_id(&mut self, slot_addr: usize, id: &Arc<str>) {
        if let Ok(i) = self.starts.binary_search_by_key(&slot_addr, |(a, _)| *a) {
            self.starts[i].1 = Slot::InProgress(Some(id.clone()));
        }
    }

    fn decode_body(&mut self, kind: TCKind, r: &mut Reader<'_>) -> Result<TypeCode> {
        use TCKind::*;
        if kind.is_basic() {
            return Ok(TypeCode::from_def(TcDef::Basic(kind)));
        }
        let pos = r.position();
        match kind {
            tk_string => Ok(TypeCode::string(r.read_u32()?)),
            tk_wstring => Ok(TypeCode::wstring(r.read_u32()?)),
            tk_fixed => {
                let digits = r.read_u16()?;
                let scale = r.read_i16()?;
                TypeCode::fixed(digits, scale)
                    .map_err(|_| bad(pos, format!("fixed<{digits},{scale}> is not legal")))
            }
            _ => {
                // Complex: an encapsulation. Its TCKind address was pushed
                // last; remember it to record the repository id.
                let slot_addr = self.starts.last().map(|(a, _)| *a).unwrap_or(0);
                r.align(4)?;
                let origin = r.position() + 4;
                // A depth error comes from the new encapsulation reader,
                // in its offsets; the others are in ours.
                let mut e = r.read_encapsulation().map_err(|err| match err {
                    CdrError::DepthExceeded { .. } => shift_err(err, origin),
                    other => other,
                })?;
                let tc = self
                    .complex(kind, slot_addr, &mut e)
                    .and_then(|tc| e.expect_end().map(|_| tc))
                    .map_err(|err| shift_err(err, origin))?;
                Ok(tc)
            }
        }
    }

    fn complex(&mut self, kind: TCKind, slot_addr: usize, e: &mut Reader<'_>) -> Result<TypeCode> {
        use TCKind::*;
        let pos = e.position();
        let def = match kind {
            k if k.is_interface_like() => {
                let id: Arc<str> = e.read_string()?.into();
                let name = e.read_string()?;
                TcDef::Interface { kind: k, id, name }
            }
            tk_struct | tk_except => {
                let id: Arc<str> = e.read_string()?.into();
                self.set_id(slot_addr, &id);
                let name = e.read_string()?;
                let n = e.read_len(MIN_MEMBER)?;
                let mut members = Vec::with_capacity(n);
                for _ in 0..n {
                    let name = e.read_string()?;
                    let tc = self.decode(e)?;
                    members.push(StructMember { name, tc });
                }
                TcDef::Struct {
                    kind,
                    id,
                    name,
                    members,
                }
            }
            tk_union => {
                let id: Arc<str> = e.read_string()?.into();
                self.set_id(slot_addr, &id);
                let name = e.read_string()?;
                let dpos = e.position();
                let discriminator = self.decode(e)?;
                if !is_legal_discriminator(&discriminator) {
                    return Err(bad(
                        dpos,
                        format!(
                            "{} is not a legal union discriminator type",
                            discriminator.unalias().kind().name()
                        ),
                    ));
                }
                let ipos = e.position();
                let default_index = e.read_i32()?;
                let n = e.read_len(MIN_MEMBER + 1)?;
                if default_index < -1 || default_index >= n as i32 {
                    return Err(bad(
                        ipos,
                        format!("default index {default_index} outside -1..{n}"),
                    ));
                }
                let mut members = Vec::with_capacity(n);
                for i in 0..n {
                    let label = if i as i32 == default_index {
                        e.read_u8()?;
                        0
                    } else {
                        read_label(&discriminator, e)?
                    };
                    let name = e.read_string()?;
                    let tc = self.decode(e)?;
                    members.push(UnionMember { label, name, tc });
                }
                TcDef::Union {
                    id,
                    name,
                    discriminator,
                    default_index,
                    members,
                }
            }
            tk_enum => {
                let id: Arc<str> = e.read_string()?.into();
                let name = e.read_string()?;
                let n = e.read_len(5)?;
                let mut members = Vec::with_capacity(n);
                for _ in 0..n {
                    members.push(e.read_string()?);
                }
                TcDef::Enum { id, name, members }
            }
            tk_sequence | tk_array => {
                let element = self.decode(e)?;
                let n = e.read_u32()?;
                if kind == tk_sequence {
                    TcDef::Sequence { element, bound: n }
                } else {
                    if n == 0 {
                        return Err(bad(pos, "array of length 0"));
                    }
                    TcDef::Array { element, length: n }
                }
            }
            tk_alias | tk_value_box => {
                let id: Arc<str> = e.read_string()?.into();
                let name = e.read_string()?;
                let content = self.decode(e)?;
                if kind == tk_alias {
                    TcDef::Alias { id, name, content }
                } else {
                    TcDef::ValueBox { id, name, content }
                }
            }
            tk_value | tk_event => {
                let id: Arc<str> = e.read_string()?.into();
                self.set_id(slot_addr, &id);
                let name = e.read_string()?;
                let modifier = e.read_i16()?;
                let base = self.decode(e)?;
                let base = (base.kind() != tk_null || base.is_recursive_ref()).then_some(base);
                let n = e.read_len(MIN_MEMBER + 2)?;
                let mut members = Vec::with_capacity(n);
                for _ in 0..n {
                    let name = e.read_string()?;
                    let tc = self.decode(e)?;
                    let visibility = e.read_i16()?;
                    members.push(ValueMember {
                        name,
                        tc,
                        visibility,
                    });
                }
                TcDef::Value {
                    kind,
                    id,
                    name,
                    modifier,
                    base,
                    members,
                }
            }
            other => return Err(bad(pos, format!("{} cannot be decoded here", other.name()))),
        };
        Ok(TypeCode::from_def(def))
    }
}

/// `tc` with every placeholder for `id` that it leaves unbound replaced
/// by `target`. Shared nodes are rebuilt once (memo by address), so the
/// work is linear in the distinct nodes.
fn substitute(
    tc: &TypeCode,
    id: &Arc<str>,
    target: &TypeCode,
    memo: &mut HashMap<usize, TypeCode>,
) -> TypeCode {
    if !tc.0.meta.free.iter().any(|x| x == id) {
        return tc.clone();
    }
    let key = Arc::as_ptr(&tc.0) as *const u8 as usize;
    if let Some(done) = memo.get(&key) {
        return done.clone();
    }
    let mut sub = |t: &TypeCode| substitute(t, id, target, memo);
    let def = match &tc.0.def {
        TcDef::Recursive { .. } => return target.clone(),
        TcDef::Struct {
            kind,
            id: sid,
            name,
            members,
        } => TcDef::Struct {
            kind: *kind,
            id: sid.clone(),
            name: name.clone(),
            members: members
                .iter()
                .map(|m| StructMember {
                    name: m.name.clone(),
                    tc: sub(&m.tc),
                })
                .collect(),
        },
        TcDef::Union {
            id: uid,
            name,
            discriminator,
            default_index,
            members,
        } => TcDef::Union {
            id: uid.clone(),
            name: name.clone(),
            discriminator: discriminator.clone(),
            default_index: *default_index,
            members: members
                .iter()
                .map(|m| UnionMember {
                    label: m.label,
                    name: m.name.clone(),
                    tc: sub(&m.tc),
                })
                .collect(),
        },
        TcDef::Sequence { element, bound } => TcDef::Sequence {
            element: sub(element),
            bound: *bound,
        },
        TcDef::Array { element, length } => TcDef::Array {
            element: sub(element),
            length: *length,
        },
        TcDef::Alias {
            id: aid,
            name,
            content,
        } => TcDef::Alias {
            id: aid.clone(),
            name: name.clone(),
            content: sub(content),
        },
        TcDef::ValueBox {
            id: vid,
            name,
            content,
        } => TcDef::ValueBox {
            id: vid.clone(),
            name: name.clone(),
            content: sub(content),
        },
        TcDef::Value {
            kind,
            id: vid,
            name,
            modifier,
            base,
            members,
        } => TcDef::Value {
            kind: *kind,
            id: vid.clone(),
            name: name.clone(),
            modifier: *modifier,
            base: base.as_ref().map(&mut sub),
            members: members
                .iter()
                .map(|m| ValueMember {
                    name: m.name.clone(),
                    tc: sub(&m.tc),
                    visibility: m.visibility,
                })
                .collect(),
        },
        // No children: nothing can be unbound inside.
        other => other.clone(),
    };
    let out = TypeCode::from_def(def);
    memo.insert(key, out.clone());
    out
}

/// Read a union case label of the discriminator's type as an `i64`.
pub(crate) fn read_label(disc: &TypeCode, r: &mut Reader<'_>) -> Result<i64> {
    use TCKind::*;
    let d = disc.unalias();
    let pos = r.position();
    Ok(match d.kind() {
        tk_short => r.read_i16()? as i64,
        tk_long => r.read_i32()? as i64,
        tk_ushort => r.read_u16()? as i64,
        tk_ulong => r.read_u32()? as i64,
        tk_longlong => r.read_i64()?,
        tk_ulonglong => r.read_u64()? as i64,
        tk_char => r.read_char()? as i64,
        tk_wchar => r.read_wchar()? as i64,
        tk_boolean => r.read_bool()? as i64,
        tk_enum => {
            let v = r.read_u32()?;
            let count = d.member_count().unwrap_or(0) as u32;
            if v >= count {
                return Err(CdrError::InvalidEnum {
                    offset: pos,
                    value: v,
                    count,
                });
            }
            v as i64
        }
        other => {
            return Err(bad(
                pos,
                format!("{} is not a legal union discriminator type", other.name()),
            ))
        }
    })
}

/// Write a union case label of the discriminator's type.
pub(crate) fn write_label(disc: &TypeCode, label: i64, w: &mut Writer<'_>) -> Result<()> {
    use TCKind::*;
    let d = disc.unalias();
    let out_of_range = |w: &Writer<'_>| CdrError::TypeMismatch {
        offset: w.position(),
        expected: format!("a {} label", d.kind().name()),
        found: label.to_string(),
    };
    match d.kind() {
        tk_short => w.write_i16(i16::try_from(label).map_err(|_| out_of_range(w))?),
        tk_long => w.write_i32(i32::try_from(label).map_err(|_| out_of_range(w))?),
        tk_ushort => w.write_u16(u16::try_from(label).map_err(|_| out_of_range(w))?),
        tk_ulong | tk_enum => w.write_u32(u32::try_from(label).map_err(|_| out_of_range(w))?),
        tk_longlong => w.write_i64(label),
        tk_ulonglong => w.write_u64(label as u64),
        tk_boolean => match label {
            0 | 1 => w.write_bool(label == 1),
            _ => return Err(out_of_range(w)),
        },
        tk_char => {
            let c = u32::try_from(label)
                .ok()
                .and_then(char::from_u32)
                .ok_or_else(|| out_of_range(w))?;
            w.write_char(c)?
        }
        tk_wchar => {
            let c = u32::try_from(label)
                .ok()
                .and_then(char::from_u32)
                .ok_or_else(|| out_of_range(w))?;
            w.write_wchar(c)?
        }
        _ => return Err(out_of_range(w)),
    }
    Ok(())
}

// ---------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------

/// Encoding state for one outermost TypeCode.
#[derive(Default)]
struct TcEncoder {
    /// Complex TypeCodes already written in full, by node address, with
    /// the buffer index of their TCKind: a repeat becomes an indirection.
    done: HashMap<usize, usize>,
    /// Enclosing struct/union/value/except being written: (id, index).
    enclosing: Vec<(Arc<str>, usize)>,
}

fn write_indirection(w: &mut Writer<'_>, target: usize) -> Result<()> {
    w.write_u32(INDIRECTION);
    let field = w.buf_len();
    let off = target as i64 - field as i64;
    let off = i32::try_from(off).map_err(|_| CdrError::LimitExceeded {
        offset: w.position(),
        len: off.unsigned_abs(),
        limit: i32::MAX as u64,
    })?;
    w.write_i32(off);
    Ok(())
}

impl TcEncoder {
    fn encode(&mut self, tc: &TypeCode, w: &mut Writer<'_>) -> Result<()> {
        let def = &tc.0.def;
        if let TcDef::Recursive { id } = def {
            let target = self
                .enclosing
                .iter()
                .rev()
                .find(|(x, _)| x == id)
                .map(|(_, at)| *at)
                .ok_or_else(|| {
                    bad(
                        w.position(),
                        format!("recursive reference to {id} outside any enclosing TypeCode with that id"),
                    )
                })?;
            return write_indirection(w, target);
        }
        let key = Arc::as_ptr(&tc.0) as *const u8 as usize;
        let complex = !matches!(
            def,
            TcDef::Basic(_) | TcDef::String { .. } | TcDef::WString { .. } | TcDef::Fixed { .. }
        );
        if complex {
            if let Some(&at) = self.done.get(&key) {
                return write_indirection(w, at);
            }
        }
        w.align(4);
        let at = w.buf_len();
        w.write_u32(tc.kind() as u32);
        match def {
            TcDef::Basic(_) => {}
            TcDef::String { bound } | TcDef::WString { bound } => w.write_u32(*bound),
            TcDef::Fixed { digits, scale } => {
                w.write_u16(*digits);
                w.write_i16(*scale);
            }
            _ => {
                let pushed = match def {
                    TcDef::Struct { id, .. }
                    | TcDef::Union { id, .. }
                    | TcDef::Value { id, .. } => {
                        self.enclosing.push((id.clone(), at));
                        true
                    }
                    _ => false,
                };
                let order = w.order();
                w.write_encapsulation(order, |e| self.complex(def, e))?;
                if pushed {
                    self.enclosing.pop();
                }
                self.done.insert(key, at);
            }
        }
        Ok(())
    }

    fn complex(&mut self, def: &TcDef, e: &mut Writer<'_>) -> Result<()> {
        match def {
            TcDef::Interface { id, name, .. } => {
                e.write_string(id)?;
                e.write_string(name)?;
            }
            TcDef::Struct {
                id, name, members, ..
            } => {
                e.write_string(id)?;
                e.write_string(name)?;
                e.write_len(members.len())?;
                for m in members {
                    e.write_string(&m.name)?;
                    self.encode(&m.tc, e)?;
                }
            }
            TcDef::Union {
                id,
                name,
                discriminator,
                default_index,
                members,
            } => {
                e.write_string(id)?;
                e.write_string(name)?;
                self.encode(discriminator, e)?;
                e.write_i32(*default_index);
                e.write_len(members.len())?;
                for (i, m) in members.iter().enumerate() {
                    if i as i32 == *default_index {
                        e.write_u8(0);
                    } else {
                        write_label(discriminator, m.label, e)?;
                    }
                    e.write_string(&m.name)?;
                    self.encode(&m.tc, e)?;
                }
            }
            TcDef::Enum { id, name, members } => {
                e.write_string(id)?;
                e.write_string(name)?;
                e.write_len(members.len())?;
                for m in members {
                    e.write_string(m)?;
                }
            }
            TcDef::Sequence { element, bound } => {
                self.encode(element, e)?;
                e.write_u32(*bound);
            }
            TcDef::Array { element, length } => {
                self.encode(element, e)?;
                e.write_u32(*length);
            }
            TcDef::Alias { id, name, content } | TcDef::ValueBox { id, name, content } => {
                e.write_string(id)?;
                e.write_string(name)?;
                self.encode(content, e)?;
            }
            TcDef::Value {
                id,
                name,
                modifier,
                base,
                members,
                ..
            } => {
                e.write_string(id)?;
                e.write_string(name)?;
                e.write_i16(*modifier);
                match base {
                    Some(b) => self.encode(b, e)?,
                    None => e.write_u32(TCKind::tk_null as u32),
                }
                e.write_len(members.len())?;
                for m in members {
                    e.write_string(&m.name)?;
                    self.encode(&m.tc, e)?;
                    e.write_i16(m.visibility);
                }
            }
            TcDef::Basic(_)
            | TcDef::String { .. }
            | TcDef::WString { .. }
            | TcDef::Fixed { .. }
            | TcDef::Recursive { .. } => unreachable!("not a complex TypeCode"),
        }
        Ok(())
    }
}

impl TypeCode {
    /// Decode one TypeCode (an outermost one: indirections inside may
    /// point only into it). Nesting counts against the reader's depth
    /// limit; member counts are checked against the bytes left.
    pub fn decode(r: &mut Reader<'_>) -> Result<TypeCode> {
        r.align(4)?;
        let mut d = TcDecoder {
            floor: addr(r),
            starts: Vec::new(),
        };
        d.decode(r)
    }

    /// Encode this TypeCode. Recursive placeholders become indirections to
    /// the enclosing TypeCode; a complex sub-TypeCode shared (same `Arc`)
    /// by several members is written once and then referenced by
    /// indirection, so a shared structure never blows up exponentially.
    pub fn encode(&self, w: &mut Writer<'_>) -> Result<()> {
        TcEncoder::default().encode(self, w)
    }
}
