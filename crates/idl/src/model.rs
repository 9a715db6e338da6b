//! Model: the typed result of parsing, what callers use to invoke and
//! serve interfaces dynamically.
//!
//! A [`Spec`] owns every definition in an arena ([`Def`], addressed by
//! [`DefId`]); types refer to named definitions by id, so recursive types
//! (a struct holding a sequence of itself) are plain data. Each definition
//! knows its scoped name (`::Bench::Perf`) and repository id
//! (`IDL:Bench/Perf:1.0`, after `#pragma prefix` / `version` / `ID` and
//! `typeprefix` / `typeid`). [`Spec::operations`] flattens an interface's
//! operations, inherited ones first, with attributes as `_get_x` /
//! `_set_x` operations: the table a DII client or DSI server dispatches on.

use std::collections::HashMap;

use crate::error::{Loc, Note, SourceMap};

/// Index of a definition in [`Spec::defs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DefId(pub u32);

/// An IDL type as used in a declaration.
#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    /// `void` (operation results only).
    Void,
    /// `short`.
    Short,
    /// `long`.
    Long,
    /// `long long`.
    LongLong,
    /// `unsigned short`.
    UShort,
    /// `unsigned long`.
    ULong,
    /// `unsigned long long`.
    ULongLong,
    /// `float`.
    Float,
    /// `double`.
    Double,
    /// `long double`.
    LongDouble,
    /// `char`.
    Char,
    /// `wchar`.
    WChar,
    /// `boolean`.
    Boolean,
    /// `octet`.
    Octet,
    /// `any`.
    Any,
    /// `Object` (`CORBA::Object`).
    Object,
    /// `TypeCode` (`CORBA::TypeCode`).
    TypeCode,
    /// `ValueBase` (`CORBA::ValueBase`).
    ValueBase,
    /// `CORBA::Principal` (GIOP 1.0 era).
    Principal,
    /// `string` or `string<bound>`.
    String(Option<u32>),
    /// `wstring` or `wstring<bound>`.
    WString(Option<u32>),
    /// `fixed<digits, scale>`.
    Fixed(u16, i16),
    /// `sequence<T>` or `sequence<T, bound>`.
    Sequence(Box<Type>, Option<u32>),
    /// An array declarator: element type and dimensions, outermost first.
    Array(Box<Type>, Vec<u32>),
    /// A named type: struct, union, enum, typedef, interface, valuetype,
    /// value box, native, exception.
    Named(DefId),
}

/// The value of a constant (or of a union case label).
#[derive(Debug, Clone, PartialEq)]
pub enum ConstValue {
    /// Any integer type (and octet).
    Int(i128),
    /// `float` / `double` / `long double`.
    Float(f64),
    /// `char` (code point).
    Char(u32),
    /// `wchar`.
    WChar(u32),
    /// `string`.
    Str(String),
    /// `wstring`.
    WStr(String),
    /// `boolean`.
    Bool(bool),
    /// An enumerator (its definition).
    Enum(DefId),
    /// A fixed-point literal, digits as written.
    Fixed(String),
}

/// One definition: where it is, what it is called, and its contents.
#[derive(Debug, Clone)]
pub struct Def {
    /// Simple name.
    pub name: String,
    /// Absolute scoped name, e.g. `::Bench::Perf`.
    pub scoped_name: String,
    /// Repository id.
    pub repo_id: String,
    /// Enclosing definition (None at file scope).
    pub parent: Option<DefId>,
    /// Where it was (last) declared.
    pub loc: Loc,
    /// What it is.
    pub kind: DefKind,
    /// Names declared inside this definition's scope.
    pub(crate) scope: HashMap<String, DefId>,
}

/// What a definition is.
#[derive(Debug, Clone)]
pub enum DefKind {
    /// A module (all reopenings merged).
    Module {
        /// Definitions in declaration order.
        contents: Vec<DefId>,
    },
    /// An interface.
    Interface(Interface),
    /// A struct.
    Struct(Struct),
    /// An exception (members like a struct).
    Exception(Struct),
    /// A union.
    Union(Union),
    /// An enum.
    Enum(Vec<String>),
    /// One enumerator of enum `of`, with its ordinal.
    Enumerator {
        /// The enum.
        of: DefId,
        /// Ordinal value.
        index: u32,
    },
    /// A typedef declarator (array declarators give an [`Type::Array`]).
    Typedef(Type),
    /// A constant.
    Const {
        /// Declared type.
        ty: Type,
        /// Value, already converted to the type.
        value: ConstValue,
    },
    /// `native N;`.
    Native,
    /// A valuetype or eventtype.
    Value(ValueDef),
    /// `valuetype B T;`.
    ValueBox(Type),
    /// An operation of an interface or valuetype.
    Operation(Operation),
    /// An attribute.
    Attribute(Attribute),
}

/// Interface flavour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterfaceKind {
    /// Ordinary (unconstrained) interface.
    Plain,
    /// `abstract interface`.
    Abstract,
    /// `local interface`.
    Local,
}

/// An interface.
#[derive(Debug, Clone)]
pub struct Interface {
    /// Plain, abstract or local.
    pub kind: InterfaceKind,
    /// Direct bases in declaration order.
    pub bases: Vec<DefId>,
    /// Exports in declaration order (operations, attributes, types, ...).
    pub contents: Vec<DefId>,
    /// False while only forward-declared.
    pub defined: bool,
}

/// A struct or exception member.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// Member name.
    pub name: String,
    /// Member type (arrays as [`Type::Array`]).
    pub ty: Type,
}

/// A struct or exception body.
#[derive(Debug, Clone)]
pub struct Struct {
    /// Members in order.
    pub members: Vec<Member>,
    /// False while only forward-declared.
    pub defined: bool,
}

/// A union case label.
#[derive(Debug, Clone, PartialEq)]
pub enum CaseLabel {
    /// `default:`.
    Default,
    /// `case v:`, converted to the discriminator type.
    Value(ConstValue),
}

/// One branch of a union.
#[derive(Debug, Clone, PartialEq)]
pub struct UnionCase {
    /// Its labels (several `case` lines may share a branch).
    pub labels: Vec<CaseLabel>,
    /// Member name.
    pub name: String,
    /// Member type.
    pub ty: Type,
}

/// A union.
#[derive(Debug, Clone)]
pub struct Union {
    /// Discriminator type as written (may be a typedef).
    pub discriminator: Type,
    /// Branches in order.
    pub cases: Vec<UnionCase>,
    /// False while only forward-declared.
    pub defined: bool,
}

/// Parameter passing mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `in`.
    In,
    /// `out`.
    Out,
    /// `inout`.
    InOut,
}

/// An operation parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// Passing mode.
    pub dir: Direction,
    /// Name.
    pub name: String,
    /// Type.
    pub ty: Type,
}

/// An operation (declared, or an attribute accessor).
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    /// Operation name as sent on the wire (`_get_x` for accessors).
    pub name: String,
    /// `oneway`.
    pub oneway: bool,
    /// Result type ([`Type::Void`] for none).
    pub result: Type,
    /// Parameters in order.
    pub params: Vec<Param>,
    /// Exceptions it may raise.
    pub raises: Vec<DefId>,
    /// Context clause names.
    pub contexts: Vec<String>,
    /// The interface (or valuetype) that declares it.
    pub defined_in: DefId,
}

/// An attribute.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    /// `readonly`.
    pub readonly: bool,
    /// Type.
    pub ty: Type,
    /// `raises` (readonly) or `getraises`.
    pub get_raises: Vec<DefId>,
    /// `setraises`.
    pub set_raises: Vec<DefId>,
}

/// A state member of a valuetype.
#[derive(Debug, Clone, PartialEq)]
pub struct StateMember {
    /// `public` (else `private`).
    pub public: bool,
    /// Name.
    pub name: String,
    /// Type.
    pub ty: Type,
}

/// A valuetype or eventtype.
#[derive(Debug, Clone)]
pub struct ValueDef {
    /// `abstract valuetype`.
    pub is_abstract: bool,
    /// `custom valuetype`.
    pub custom: bool,
    /// Declared with `eventtype`.
    pub event: bool,
    /// The first base was marked `truncatable`.
    pub truncatable: bool,
    /// Base valuetypes.
    pub bases: Vec<DefId>,
    /// `supports` interfaces.
    pub supports: Vec<DefId>,
    /// State members in order.
    pub state: Vec<StateMember>,
    /// Factory (initializer) names in order.
    pub factories: Vec<String>,
    /// Other contents (operations, attributes, types).
    pub contents: Vec<DefId>,
    /// False while only forward-declared.
    pub defined: bool,
}

/// A parsed specification: every definition of the main file and the
/// files it includes.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    /// All definitions; [`DefId`] indexes this.
    pub defs: Vec<Def>,
    /// Top-level definitions in declaration order (a reopened module once).
    pub root: Vec<DefId>,
    /// Files read.
    pub sources: SourceMap,
    /// Remarks: ignored pragmas, skipped constructs.
    pub notes: Vec<Note>,
    pub(crate) root_scope: HashMap<String, DefId>,
}

impl Spec {
    /// The definition `id`.
    pub fn def(&self, id: DefId) -> &Def {
        &self.defs[id.0 as usize]
    }

    /// Looks up an absolute scoped name (`Bench::Perf` or `::Bench::Perf`).
    pub fn lookup(&self, scoped: &str) -> Option<DefId> {
        let mut parts = scoped.trim_start_matches("::").split("::");
        let mut cur = *self.root_scope.get(parts.next()?)?;
        for p in parts {
            cur = *self.def(cur).scope.get(p)?;
        }
        Some(cur)
    }

    /// Finds the definition with repository id `repo_id` (e.g. the type id
    /// of an IOR, `IDL:Bench/Perf:1.0`).
    pub fn lookup_repo_id(&self, repo_id: &str) -> Option<DefId> {
        self.iter()
            .filter(|(_, d)| {
                !matches!(
                    d.kind,
                    DefKind::Enumerator { .. } | DefKind::Operation(_) | DefKind::Attribute(_)
                )
            })
            .find(|(_, d)| d.repo_id == repo_id)
            .map(|(id, _)| id)
    }

    /// Every definition with its id, in creation order.
    pub fn iter(&self) -> impl Iterator<Item = (DefId, &Def)> {
        self.defs
            .iter()
            .enumerate()
            .map(|(i, d)| (DefId(i as u32), d))
    }

    /// Follows typedefs until a non-alias type.
    pub fn unalias<'a>(&'a self, mut ty: &'a Type) -> &'a Type {
        let mut guard = 0;
        while let Type::Named(id) = ty {
            match &self.def(*id).kind {
                DefKind::Typedef(t) if guard < 1000 => {
                    ty = t;
                    guard += 1;
                }
                _ => break,
            }
        }
        ty
    }

    /// All bases of an interface or valuetype, transitively, each once,
    /// depth-first in declaration order (bases before the types deriving
    /// from them).
    pub fn all_bases(&self, id: DefId) -> Vec<DefId> {
        let mut out = Vec::new();
        self.collect_bases(id, &mut out, 0);
        out
    }

    fn collect_bases(&self, id: DefId, out: &mut Vec<DefId>, depth: usize) {
        if depth > 256 {
            return;
        }
        let bases = match &self.def(id).kind {
            DefKind::Interface(i) => i.bases.clone(),
            DefKind::Value(v) => v.bases.iter().chain(v.supports.iter()).copied().collect(),
            _ => Vec::new(),
        };
        for b in bases {
            self.collect_bases(b, out, depth + 1);
            if !out.contains(&b) {
                out.push(b);
            }
        }
    }

    /// The operations of interface (or valuetype) `id` a client may
    /// invoke: inherited ones first (bases depth-first, each base once),
    /// then its own, each in declaration order; an attribute gives
    /// `_get_name` and, unless readonly, `_set_name`.
    pub fn operations(&self, id: DefId) -> Vec<Operation> {
        let mut out = Vec::new();
        for b in self.all_bases(id).into_iter().chain(std::iter::once(id)) {
            self.own_operations(b, &mut out);
        }
        out
    }

    fn own_operations(&self, id: DefId, out: &mut Vec<Operation>) {
        let contents = match &self.def(id).kind {
            DefKind::Interface(i) => &i.contents,
            DefKind::Value(v) => &v.contents,
            _ => return,
        };
        for &c in contents {
            let d = self.def(c);
            match &d.kind {
                DefKind::Operation(op) => out.push(op.clone()),
                DefKind::Attribute(a) => {
                    out.push(Operation {
                        name: format!("_get_{}", d.name),
                        oneway: false,
                        result: a.ty.clone(),
                        params: Vec::new(),
                        raises: a.get_raises.clone(),
                        contexts: Vec::new(),
                        defined_in: id,
                    });
                    if !a.readonly {
                        out.push(Operation {
                            name: format!("_set_{}", d.name),
                            oneway: false,
                            result: Type::Void,
                            params: vec![Param {
                                dir: Direction::In,
                                name: "value".to_string(),
                                ty: a.ty.clone(),
                            }],
                            raises: a.set_raises.clone(),
                            contexts: Vec::new(),
                            defined_in: id,
                        });
                    }
                }
                _ => {}
            }
        }
    }

    /// Finds operation `op` (or an accessor such as `_get_x`) of the
    /// interface with scoped name `iface`, searching inherited operations.
    pub fn find_operation(&self, iface: &str, op: &str) -> Option<Operation> {
        let id = self.lookup(iface)?;
        self.operations(id).into_iter().find(|o| o.name == op)
    }

    /// Every interface definition (defined, not only forward-declared).
    pub fn interfaces(&self) -> impl Iterator<Item = (DefId, &Def)> {
        self.iter()
            .filter(|(_, d)| matches!(&d.kind, DefKind::Interface(i) if i.defined))
    }

    /// Renders a type the way IDL writes it, named types by absolute
    /// scoped name: `sequence<::Bench::PerfStruct>`, `string<10>`,
    /// `long[3][4]`.
    pub fn type_name(&self, ty: &Type) -> String {
        match ty {
            Type::Void => "void".into(),
            Type::Short => "short".into(),
            Type::Long => "long".into(),
            Type::LongLong => "long long".into(),
            Type::UShort => "unsigned short".into(),
            Type::ULong => "unsigned long".into(),
            Type::ULongLong => "unsigned long long".into(),
            Type::Float => "float".into(),
            Type::Double => "double".into(),
            Type::LongDouble => "long double".into(),
            Type::Char => "char".into(),
            Type::WChar => "wchar".into(),
            Type::Boolean => "boolean".into(),
            Type::Octet => "octet".into(),
            Type::Any => "any".into(),
            Type::Object => "Object".into(),
            Type::TypeCode => "TypeCode".into(),
            Type::ValueBase => "ValueBase".into(),
            Type::Principal => "Principal".into(),
            Type::String(None) => "string".into(),
            Type::String(Some(b)) => format!("string<{b}>"),
            Type::WString(None) => "wstring".into(),
            Type::WString(Some(b)) => format!("wstring<{b}>"),
            Type::Fixed(d, s) => format!("fixed<{d},{s}>"),
            Type::Sequence(t, None) => format!("sequence<{}>", self.type_name(t)),
            Type::Sequence(t, Some(b)) => format!("sequence<{},{b}>", self.type_name(t)),
            Type::Array(t, dims) => {
                let mut s = self.type_name(t);
                for d in dims {
                    s.push_str(&format!("[{d}]"));
                }
                s
            }
            Type::Named(id) => self.def(*id).scoped_name.clone(),
        }
    }
}
