//! Name resolution: the IDL scoping rules used while parsing.
//!
//! A relative name `A::B` is resolved by looking its first component up
//! in the current scope, then (for an interface or valuetype) in the
//! scopes it inherits from, then in each enclosing scope out to file
//! scope; the remaining components are looked up inside what was found
//! (again including inherited scopes). A name starting with `::` starts
//! at file scope. Enumerators live in the scope that encloses their enum.

use crate::model::{DefId, DefKind, Spec};

/// Looks `name` up in `scope` (None = file scope) and, for interfaces and
/// valuetypes, in the scopes of all their bases.
pub(crate) fn lookup_in(spec: &Spec, scope: Option<DefId>, name: &str) -> Option<DefId> {
    let Some(s) = scope else {
        return spec.root_scope.get(name).copied();
    };
    if let Some(&id) = spec.def(s).scope.get(name) {
        return Some(id);
    }
    if matches!(spec.def(s).kind, DefKind::Interface(_) | DefKind::Value(_)) {
        for b in spec.all_bases(s) {
            if let Some(&id) = spec.def(b).scope.get(name) {
                return Some(id);
            }
        }
    }
    None
}

/// Resolves a scoped name seen inside the nest of scopes `scopes`
/// (outermost first).
pub(crate) fn resolve(
    spec: &Spec,
    scopes: &[DefId],
    parts: &[String],
    absolute: bool,
) -> Option<DefId> {
    let (first, rest) = parts.split_first()?;
    let mut cur = if absolute {
        lookup_in(spec, None, first)?
    } else {
        let mut found = None;
        for s in scopes.iter().rev() {
            if let Some(id) = lookup_in(spec, Some(*s), first) {
                found = Some(id);
                break;
            }
        }
        match found {
            Some(id) => id,
            None => lookup_in(spec, None, first)?,
        }
    };
    for p in rest {
        cur = lookup_in(spec, Some(cur), p)?;
    }
    Some(cur)
}
