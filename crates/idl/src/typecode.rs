//! TypeCodes: the model's types as `iiop_cdr::typecode::TypeCode`, what
//! the dynamic CDR codec (`iiop_cdr::value::Value`) needs to encode and
//! decode arguments and results of any operation.
//!
//! Named types keep their repository ids and simple names (struct,
//! exception, union, enum, alias, objref / abstract / local interface,
//! native, value box, valuetype / eventtype). Union branches become one
//! TypeCode member per label, in order, with the `default:` member's
//! position as `default_index`. Multi-dimensional arrays nest (outermost
//! dimension outside). A reference to a struct, union, exception or
//! valuetype that is still being converted (a struct holding a sequence
//! of itself) becomes a `TypeCode::recursive(id)` placeholder, which the
//! encoder turns into an indirection.

use std::collections::HashMap;

use iiop_cdr::typecode::{TCKind, TcDef, TypeCode};

use crate::model::{CaseLabel, ConstValue, DefId, DefKind, InterfaceKind, Spec, Type};
use crate::Error;

impl Spec {
    /// The TypeCode of `ty`. Fails (naming the definition's location) for
    /// a type only forward-declared and never defined, and for a
    /// definition that is not a type (e.g. a module named in a type).
    pub fn to_typecode(&self, ty: &Type) -> Result<TypeCode, Error> {
        Converter {
            spec: self,
            active: Vec::new(),
            cache: HashMap::new(),
        }
        .convert(ty)
    }

    /// The TypeCode of named definition `id` (struct, union, typedef, ...).
    pub fn def_typecode(&self, id: DefId) -> Result<TypeCode, Error> {
        self.to_typecode(&Type::Named(id))
    }
}

/// One conversion: remembers which definitions are being converted (to
/// emit recursive references) and caches closed TypeCodes.
struct Converter<'s> {
    spec: &'s Spec,
    active: Vec<DefId>,
    cache: HashMap<DefId, TypeCode>,
}

/// A union label as the `i64` the TypeCode stores.
fn label_value(spec: &Spec, v: &ConstValue) -> i64 {
    match v {
        ConstValue::Int(i) => *i as i64,
        ConstValue::Bool(b) => *b as i64,
        ConstValue::Char(c) | ConstValue::WChar(c) => *c as i64,
        ConstValue::Enum(e) => match spec.def(*e).kind {
            DefKind::Enumerator { index, .. } => index as i64,
            _ => 0,
        },
        // Not legal labels; the parser never produces them.
        ConstValue::Float(_) | ConstValue::Str(_) | ConstValue::WStr(_) | ConstValue::Fixed(_) => 0,
    }
}

impl Converter<'_> {
    fn err(&self, id: DefId, msg: String) -> Error {
        self.spec.sources.error(self.spec.def(id).loc, msg)
    }

    fn convert(&mut self, ty: &Type) -> Result<TypeCode, Error> {
        Ok(match ty {
            Type::Void => TypeCode::void(),
            Type::Short => TypeCode::short(),
            Type::Long => TypeCode::long(),
            Type::LongLong => TypeCode::longlong(),
            Type::UShort => TypeCode::ushort(),
            Type::ULong => TypeCode::ulong(),
            Type::ULongLong => TypeCode::ulonglong(),
            Type::Float => TypeCode::float(),
            Type::Double => TypeCode::double(),
            Type::LongDouble => TypeCode::longdouble(),
            Type::Char => TypeCode::char(),
            Type::WChar => TypeCode::wchar(),
            Type::Boolean => TypeCode::boolean(),
            Type::Octet => TypeCode::octet(),
            Type::Any => TypeCode::any(),
            Type::TypeCode => TypeCode::tc_typecode(),
            Type::Principal => TypeCode::principal(),
            Type::Object => TypeCode::objref("IDL:omg.org/CORBA/Object:1.0", "Object"),
            Type::ValueBase => TypeCode::value_tc(
                "IDL:omg.org/CORBA/ValueBase:1.0",
                "ValueBase",
                0,
                None,
                Vec::new(),
            ),
            Type::String(b) => TypeCode::string(b.unwrap_or(0)),
            Type::WString(b) => TypeCode::wstring(b.unwrap_or(0)),
            // The parser only admits 1 <= digits <= 31 and 0 <= scale <= digits.
            Type::Fixed(d, s) => TypeCode::fixed(*d, *s).map_err(|e| Error {
                file: "<type>".to_string(),
                line: 0,
                col: 0,
                message: format!("fixed<{d},{s}>: {e}"),
            })?,
            Type::Sequence(t, b) => TypeCode::sequence(self.convert(t)?, b.unwrap_or(0)),
            Type::Array(t, dims) => {
                let mut tc = self.convert(t)?;
                for d in dims.iter().rev() {
                    tc = TypeCode::array(tc, *d);
                }
                tc
            }
            Type::Named(id) => self.named(*id)?,
        })
    }

    fn named(&mut self, id: DefId) -> Result<TypeCode, Error> {
        if self.active.contains(&id) {
            return Ok(TypeCode::recursive(&self.spec.def(id).repo_id));
        }
        if let Some(tc) = self.cache.get(&id) {
            return Ok(tc.clone());
        }
        self.active.push(id);
        let r = self.build(id);
        self.active.pop();
        let tc = r?;
        if !tc.has_unbound_recursion() {
            self.cache.insert(id, tc.clone());
        }
        Ok(tc)
    }

    fn build(&mut self, id: DefId) -> Result<TypeCode, Error> {
        let spec = self.spec;
        let d = spec.def(id);
        let (rid, name) = (d.repo_id.as_str(), d.name.as_str());
        let incomplete = || {
            self.err(
                id,
                format!("'{}' is declared but never defined", d.scoped_name),
            )
        };
        Ok(match &d.kind {
            DefKind::Struct(s) | DefKind::Exception(s) => {
                if !s.defined {
                    return Err(incomplete());
                }
                let mut members = Vec::with_capacity(s.members.len());
                for m in &s.members {
                    members.push((m.name.as_str(), self.convert(&m.ty)?));
                }
                if matches!(d.kind, DefKind::Struct(_)) {
                    TypeCode::struct_tc(rid, name, members)
                } else {
                    TypeCode::except_tc(rid, name, members)
                }
            }
            DefKind::Union(u) => {
                if !u.defined {
                    return Err(incomplete());
                }
                let disc = self.convert(&u.discriminator)?;
                let mut default_index = -1;
                let mut members = Vec::new();
                for c in &u.cases {
                    let tc = self.convert(&c.ty)?;
                    for l in &c.labels {
                        let label = match l {
                            CaseLabel::Default => {
                                default_index = members.len() as i32;
                                0
                            }
                            CaseLabel::Value(v) => label_value(spec, v),
                        };
                        members.push((label, c.name.as_str(), tc.clone()));
                    }
                }
                TypeCode::union_tc(rid, name, disc, default_index, members)
                    .map_err(|e| self.err(id, format!("union '{}': {e}", d.scoped_name)))?
            }
            DefKind::Enum(names) => {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                TypeCode::enum_tc(rid, name, &names)
            }
            DefKind::Typedef(t) => TypeCode::alias(rid, name, self.convert(t)?),
            DefKind::Interface(i) => {
                let kind = match i.kind {
                    InterfaceKind::Plain => TCKind::tk_objref,
                    InterfaceKind::Abstract => TCKind::tk_abstract_interface,
                    InterfaceKind::Local => TCKind::tk_local_interface,
                };
                TypeCode::interface(kind, rid, name)
            }
            DefKind::Native => TypeCode::interface(TCKind::tk_native, rid, name),
            DefKind::ValueBox(t) => TypeCode::value_box(rid, name, self.convert(t)?),
            DefKind::Value(v) => {
                if !v.defined {
                    return Err(incomplete());
                }
                let modifier = if v.is_abstract {
                    2
                } else if v.custom {
                    1
                } else if v.truncatable {
                    3
                } else {
                    0
                };
                // The concrete base, if any (abstract bases are not in the TypeCode).
                let base = match v.bases.first() {
                    Some(b) if matches!(&spec.def(*b).kind, DefKind::Value(bv) if !bv.is_abstract) => {
                        Some(self.named(*b)?)
                    }
                    _ => None,
                };
                let mut members = Vec::with_capacity(v.state.len());
                for s in &v.state {
                    members.push(iiop_cdr::typecode::ValueMember {
                        name: s.name.clone(),
                        tc: self.convert(&s.ty)?,
                        visibility: s.public as i16,
                    });
                }
                let kind = if v.event {
                    TCKind::tk_event
                } else {
                    TCKind::tk_value
                };
                TypeCode::new(TcDef::Value {
                    kind,
                    id: rid.into(),
                    name: name.to_string(),
                    modifier,
                    base,
                    members,
                })
                .map_err(|e| self.err(id, format!("valuetype '{}': {e}", d.scoped_name)))?
            }
            DefKind::Module { .. }
            | DefKind::Enumerator { .. }
            | DefKind::Const { .. }
            | DefKind::Operation(_)
            | DefKind::Attribute(_) => {
                return Err(self.err(id, format!("'{}' is not a type", d.scoped_name)))
            }
        })
    }
}
