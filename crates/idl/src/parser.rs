//! Parser: recursive descent over the preprocessed token stream, building
//! the [`Spec`] directly.
//!
//! IDL requires a name to be declared before it is used, so names are
//! resolved as they are parsed (see the `resolve` module) and every type in
//! the model is already bound to its definition. Constant expressions are
//! evaluated here with the spec's typing (integers in 64-bit signed or
//! unsigned range, floats in double, `~` relative to the target width) and
//! converted to the declared type with a range check. Repository ids are
//! computed when a definition is declared from the prefix in force
//! (`#pragma prefix`, `typeprefix`), then adjusted by `#pragma version`,
//! `#pragma ID` and `typeid`. Components, homes, porttypes, connectors and
//! `import` are skipped with a [`Note`](crate::Note) naming the construct
//! and its location.

use std::collections::HashMap;

use crate::error::{Loc, Note};
use crate::lexer::{Tok, Token};
use crate::model::*;
use crate::preprocess::Item;
use crate::resolve::resolve;
use crate::Error;

/// Words that can never be identifiers.
const KEYWORDS: &[&str] = &[
    "abstract",
    "any",
    "attribute",
    "boolean",
    "case",
    "char",
    "const",
    "context",
    "custom",
    "default",
    "double",
    "enum",
    "exception",
    "FALSE",
    "fixed",
    "float",
    "in",
    "inout",
    "interface",
    "local",
    "long",
    "module",
    "native",
    "Object",
    "octet",
    "oneway",
    "out",
    "private",
    "public",
    "raises",
    "readonly",
    "sequence",
    "short",
    "string",
    "struct",
    "supports",
    "switch",
    "TRUE",
    "truncatable",
    "typedef",
    "unsigned",
    "union",
    "ValueBase",
    "valuetype",
    "void",
    "wchar",
    "wstring",
];

/// Where a definition appears.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Module,
    Interface,
    Value,
}

pub(crate) struct Parser {
    items: Vec<Item>,
    pos: usize,
    pub(crate) spec: Spec,
    /// Enclosing definitions, outermost first.
    scopes: Vec<DefId>,
    /// Prefix in force per scope/file level: the `#pragma prefix` (or
    /// `typeprefix`) followed by the names of the scopes entered since.
    prefixes: Vec<String>,
    typeprefixes: HashMap<DefId, String>,
    /// Current nesting of definitions, types and expressions.
    depth: usize,
}

/// Deepest nesting of definitions, types or parenthesized expressions
/// accepted (real IDL stays far below; the limit keeps hostile input
/// from exhausting the stack).
const MAX_NESTING: usize = 64;

fn is_kw(t: &Tok, kw: &str) -> bool {
    matches!(t, Tok::Ident(s) if s == kw)
}

impl Parser {
    pub(crate) fn new(items: Vec<Item>, spec: Spec) -> Self {
        Parser {
            items,
            pos: 0,
            spec,
            scopes: Vec::new(),
            prefixes: vec![String::new()],
            typeprefixes: HashMap::new(),
            depth: 0,
        }
    }

    /// Parses the whole stream.
    pub(crate) fn parse(mut self) -> Result<Spec, Error> {
        loop {
            self.sync()?;
            if self.tok().tok == Tok::Eof {
                return Ok(self.spec);
            }
            self.definition(Ctx::Module)?;
        }
    }

    // ---- token access -------------------------------------------------

    /// Handles pragmas and file boundaries up to the next token.
    fn sync(&mut self) -> Result<(), Error> {
        loop {
            match &self.items[self.pos] {
                Item::Token(_) => return Ok(()),
                Item::Pragma(text, loc) => {
                    let (text, loc) = (text.clone(), *loc);
                    self.pos += 1;
                    self.pragma(&text, loc)?;
                }
                Item::EnterFile(_) => {
                    self.pos += 1;
                    self.prefixes.push(String::new());
                }
                Item::LeaveFile(_) => {
                    self.pos += 1;
                    if self.prefixes.len() > 1 {
                        self.prefixes.pop();
                    }
                }
            }
        }
    }

    /// The current token (call [`Self::sync`] first).
    fn tok(&self) -> &Token {
        match &self.items[self.pos] {
            Item::Token(t) => t,
            _ => unreachable!("sync() stops at a token"),
        }
    }

    fn look(&mut self) -> Result<Tok, Error> {
        self.sync()?;
        Ok(self.tok().tok.clone())
    }

    fn loc(&mut self) -> Result<Loc, Error> {
        self.sync()?;
        Ok(self.tok().loc)
    }

    /// The `n`-th token after the current one, without processing pragmas.
    fn look_ahead(&self, n: usize) -> Tok {
        let mut seen = 0;
        for it in &self.items[self.pos..] {
            if let Item::Token(t) = it {
                if seen == n || t.tok == Tok::Eof {
                    return t.tok.clone();
                }
                seen += 1;
            }
        }
        Tok::Eof
    }

    fn bump(&mut self) -> Result<Token, Error> {
        self.sync()?;
        let t = self.tok().clone();
        if t.tok != Tok::Eof {
            self.pos += 1;
        }
        Ok(t)
    }

    fn err_at(&self, loc: Loc, msg: impl Into<String>) -> Error {
        self.spec.sources.error(loc, msg)
    }

    fn expected(&mut self, what: &str) -> Error {
        match self.sync() {
            Ok(()) => {
                let t = self.tok().clone();
                self.err_at(
                    t.loc,
                    format!("expected {what}, found {}", t.tok.describe()),
                )
            }
            Err(e) => e,
        }
    }

    fn eat_punct(&mut self, p: &str) -> Result<bool, Error> {
        if matches!(self.look()?, Tok::Punct(q) if q == p) {
            self.bump()?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    fn expect_punct(&mut self, p: &str) -> Result<Loc, Error> {
        let loc = self.loc()?;
        if self.eat_punct(p)? {
            Ok(loc)
        } else {
            Err(self.expected(&format!("'{p}'")))
        }
    }

    /// Expects `>`, splitting a `>>` token (`sequence<sequence<long>>`).
    fn expect_close_angle(&mut self) -> Result<(), Error> {
        self.sync()?;
        if let Item::Token(t) = &mut self.items[self.pos] {
            if t.tok == Tok::Punct(">>") {
                t.tok = Tok::Punct(">");
                t.loc.col += 1;
                return Ok(());
            }
        }
        self.expect_punct(">").map(|_| ())
    }

    fn eat_kw(&mut self, kw: &str) -> Result<bool, Error> {
        if is_kw(&self.look()?, kw) {
            self.bump()?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    fn expect_kw(&mut self, kw: &str) -> Result<(), Error> {
        if self.eat_kw(kw)? {
            Ok(())
        } else {
            Err(self.expected(&format!("'{kw}'")))
        }
    }

    fn ident(&mut self) -> Result<(String, Loc), Error> {
        let t = self.bump()?;
        match t.tok {
            Tok::Ident(s) if !KEYWORDS.contains(&s.as_str()) => Ok((s, t.loc)),
            Tok::EscIdent(s) => Ok((s, t.loc)),
            other => Err(self.err_at(
                t.loc,
                format!("expected an identifier, found {}", other.describe()),
            )),
        }
    }

    fn note(&mut self, loc: Loc, message: String) {
        let at = self.spec.sources.render(loc);
        self.spec.notes.push(Note { at, message });
    }

    // ---- scopes, declarations, repository ids ---------------------------

    fn cur_scope(&self) -> Option<DefId> {
        self.scopes.last().copied()
    }

    fn prefix(&self) -> &str {
        self.prefixes.last().map(String::as_str).unwrap_or("")
    }

    fn enter(&mut self, id: DefId) {
        let name = self.spec.def(id).name.clone();
        let p = match self.typeprefixes.get(&id) {
            Some(tp) => tp.clone(),
            None if self.prefix().is_empty() => name,
            None => format!("{}/{}", self.prefix(), name),
        };
        self.scopes.push(id);
        self.prefixes.push(p);
    }

    fn leave(&mut self) {
        self.scopes.pop();
        self.prefixes.pop();
    }

    /// Whether `old` is a forward declaration (or the same kind of
    /// construct) that `new` may complete or repeat.
    fn compatible(old: &DefKind, new: &DefKind) -> Option<bool> {
        // Some(true): new completes old; Some(false): new repeats a forward.
        let (od, nd) = match (old, new) {
            (DefKind::Module { .. }, DefKind::Module { .. }) => return Some(false),
            (DefKind::Interface(a), DefKind::Interface(b)) => (a.defined, b.defined),
            (DefKind::Struct(a), DefKind::Struct(b)) => (a.defined, b.defined),
            (DefKind::Union(a), DefKind::Union(b)) => (a.defined, b.defined),
            (DefKind::Value(a), DefKind::Value(b)) => (a.defined, b.defined),
            _ => return None,
        };
        match (od, nd) {
            (_, false) => Some(false),
            (false, true) => Some(true),
            (true, true) => None,
        }
    }

    /// Declares `name` in the current scope. `listed`: record it in the
    /// enclosing module/interface/valuetype contents.
    fn declare(
        &mut self,
        name: &str,
        loc: Loc,
        kind: DefKind,
        listed: bool,
    ) -> Result<DefId, Error> {
        let scope = self.cur_scope();
        let existing = match scope {
            None => self.spec.root_scope.get(name).copied(),
            Some(s) => self.spec.def(s).scope.get(name).copied(),
        };
        if let Some(old) = existing {
            let od = self.spec.def(old);
            return match Self::compatible(&od.kind, &kind) {
                Some(true) => {
                    let d = &mut self.spec.defs[old.0 as usize];
                    d.kind = kind;
                    d.loc = loc;
                    Ok(old)
                }
                Some(false) => Ok(old),
                None => {
                    let prev = self.spec.sources.render(od.loc);
                    Err(self.err_at(
                        loc,
                        format!("'{name}' redefined (previous declaration at {prev})"),
                    ))
                }
            };
        }
        let map = match scope {
            None => &self.spec.root_scope,
            Some(s) => &self.spec.def(s).scope,
        };
        if let Some((other, &oid)) = map.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)) {
            let prev = self.spec.sources.render(self.spec.def(oid).loc);
            return Err(self.err_at(
                loc,
                format!("'{name}' collides with '{other}' declared at {prev} (IDL identifiers differing only in case clash)"),
            ));
        }
        let scoped_name = match scope {
            None => format!("::{name}"),
            Some(s) => format!("{}::{name}", self.spec.def(s).scoped_name),
        };
        let repo_id = if self.prefix().is_empty() {
            format!("IDL:{name}:1.0")
        } else {
            format!("IDL:{}/{name}:1.0", self.prefix())
        };
        let id = DefId(self.spec.defs.len() as u32);
        self.spec.defs.push(Def {
            name: name.to_string(),
            scoped_name,
            repo_id,
            parent: scope,
            loc,
            kind,
            scope: HashMap::new(),
        });
        match scope {
            None => {
                self.spec.root_scope.insert(name.to_string(), id);
                if listed {
                    self.spec.root.push(id);
                }
            }
            Some(s) => {
                let p = &mut self.spec.defs[s.0 as usize];
                p.scope.insert(name.to_string(), id);
                if listed {
                    match &mut p.kind {
                        DefKind::Module { contents } => contents.push(id),
                        DefKind::Interface(i) => i.contents.push(id),
                        DefKind::Value(v) => v.contents.push(id),
                        _ => {}
                    }
                }
            }
        }
        Ok(id)
    }

    fn scoped_name(&mut self) -> Result<(Vec<String>, bool, Loc), Error> {
        let loc = self.loc()?;
        let absolute = self.eat_punct("::")?;
        let mut parts = vec![self.ident()?.0];
        while matches!(self.look()?, Tok::Punct("::")) {
            self.bump()?;
            parts.push(self.ident()?.0);
        }
        Ok((parts, absolute, loc))
    }

    fn resolve_name(&self, parts: &[String], absolute: bool, loc: Loc) -> Result<DefId, Error> {
        resolve(&self.spec, &self.scopes, parts, absolute).ok_or_else(|| {
            let p = if absolute { "::" } else { "" };
            self.err_at(loc, format!("'{p}{}' is not declared", parts.join("::")))
        })
    }

    fn scoped_def(&mut self) -> Result<(DefId, Loc), Error> {
        let (parts, abs, loc) = self.scoped_name()?;
        Ok((self.resolve_name(&parts, abs, loc)?, loc))
    }

    /// A scoped name that must denote an interface (possibly via typedef).
    fn interface_name(&mut self, what: &str) -> Result<DefId, Error> {
        let (parts, abs, loc) = self.scoped_name()?;
        let id = self.resolve_name(&parts, abs, loc)?;
        let ty = Type::Named(id);
        let target = match self.spec.unalias(&ty) {
            Type::Named(t) => *t,
            _ => id,
        };
        match &self.spec.def(target).kind {
            DefKind::Interface(i) if i.defined => Ok(target),
            DefKind::Interface(_) => Err(self.err_at(
                loc,
                format!("{what}: '{}' is only forward-declared", parts.join("::")),
            )),
            _ => Err(self.err_at(
                loc,
                format!("{what}: '{}' is not an interface", parts.join("::")),
            )),
        }
    }

    fn value_name(&mut self) -> Result<DefId, Error> {
        let (id, loc) = self.scoped_def()?;
        match &self.spec.def(id).kind {
            DefKind::Value(v) if v.defined => Ok(id),
            DefKind::Value(_) => Err(self.err_at(
                loc,
                format!(
                    "base valuetype '{}' is only forward-declared",
                    self.spec.def(id).scoped_name
                ),
            )),
            _ => Err(self.err_at(
                loc,
                format!("'{}' is not a valuetype", self.spec.def(id).scoped_name),
            )),
        }
    }

    fn exception_list(&mut self) -> Result<Vec<DefId>, Error> {
        self.expect_punct("(")?;
        let mut out = Vec::new();
        loop {
            let (id, loc) = self.scoped_def()?;
            if !matches!(self.spec.def(id).kind, DefKind::Exception(_)) {
                return Err(self.err_at(
                    loc,
                    format!("'{}' is not an exception", self.spec.def(id).scoped_name),
                ));
            }
            out.push(id);
            if !self.eat_punct(",")? {
                break;
            }
        }
        self.expect_punct(")")?;
        Ok(out)
    }

    // ---- pragmas --------------------------------------------------------

    fn pragma(&mut self, text: &str, loc: Loc) -> Result<(), Error> {
        let text = text.trim();
        let (word, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        let rest = rest.trim();
        let quoted = |s: &str| -> Option<String> {
            let s = s.trim();
            let inner = s.strip_prefix('"')?;
            let end = inner.find('"')?;
            Some(inner[..end].to_string())
        };
        match word {
            "prefix" => {
                let p = quoted(rest)
                    .ok_or_else(|| self.err_at(loc, "expected a string after #pragma prefix"))?;
                if let Some(top) = self.prefixes.last_mut() {
                    *top = p;
                }
            }
            "version" => {
                let mut w = rest.split_whitespace();
                let (Some(name), Some(ver)) = (w.next(), w.next()) else {
                    return Err(self.err_at(loc, "expected '#pragma version NAME MAJOR.MINOR'"));
                };
                let valid = ver
                    .split_once('.')
                    .is_some_and(|(a, b)| a.parse::<u16>().is_ok() && b.parse::<u16>().is_ok());
                if !valid {
                    return Err(self.err_at(loc, format!("bad version '{ver}' in #pragma version")));
                }
                let id = self.pragma_target(name, loc)?;
                let d = &mut self.spec.defs[id.0 as usize];
                if let Some(base) = d.repo_id.strip_prefix("IDL:") {
                    if let Some(cut) = base.rfind(':') {
                        d.repo_id = format!("IDL:{}:{ver}", &base[..cut]);
                    }
                }
            }
            "ID" => {
                let name = rest.split_whitespace().next().unwrap_or("");
                let value = quoted(&rest[name.len()..])
                    .ok_or_else(|| self.err_at(loc, "expected '#pragma ID NAME \"id\"'"))?;
                let id = self.pragma_target(name, loc)?;
                self.spec.defs[id.0 as usize].repo_id = value;
            }
            other => self.note(loc, format!("ignored #pragma {other}")),
        }
        Ok(())
    }

    fn pragma_target(&self, name: &str, loc: Loc) -> Result<DefId, Error> {
        let absolute = name.starts_with("::");
        let parts: Vec<String> = name
            .trim_start_matches("::")
            .split("::")
            .map(str::to_string)
            .collect();
        self.resolve_name(&parts, absolute, loc)
    }

    // ---- definitions ----------------------------------------------------

    /// Runs `f` one nesting level deeper, failing beyond [`MAX_NESTING`].
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, Error>) -> Result<T, Error> {
        if self.depth >= MAX_NESTING {
            let loc = self.loc()?;
            return Err(self.err_at(loc, format!("nesting deeper than {MAX_NESTING} levels")));
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    fn definition(&mut self, ctx: Ctx) -> Result<(), Error> {
        self.nested(|p| p.definition_inner(ctx))
    }

    fn definition_inner(&mut self, ctx: Ctx) -> Result<(), Error> {
        let t = self.look()?;
        let loc = self.loc()?;
        let kw = match &t {
            Tok::Ident(s) => s.as_str(),
            _ if ctx != Ctx::Module => return self.operation(),
            _ => return Err(self.expected("a definition")),
        };
        match kw {
            "module" if ctx == Ctx::Module => self.module(),
            "interface" => self.interface(InterfaceKind::Plain),
            "abstract" | "local" | "custom" => {
                let next = self.look_ahead(1);
                if is_kw(&next, "interface") {
                    self.bump()?;
                    let k = if kw == "abstract" {
                        InterfaceKind::Abstract
                    } else {
                        InterfaceKind::Local
                    };
                    if kw == "custom" {
                        return Err(self.err_at(loc, "expected 'valuetype' after 'custom'"));
                    }
                    self.interface(k)
                } else if is_kw(&next, "valuetype") || is_kw(&next, "eventtype") {
                    self.valuetype()
                } else {
                    self.bump()?;
                    Err(self.expected("'interface', 'valuetype' or 'eventtype'"))
                }
            }
            "valuetype" | "eventtype" => self.valuetype(),
            "typedef" => {
                self.bump()?;
                let ty = self.type_spec()?;
                for (name, loc, dims) in self.declarators()? {
                    let t = if dims.is_empty() {
                        ty.clone()
                    } else {
                        Type::Array(Box::new(ty.clone()), dims)
                    };
                    self.declare(&name, loc, DefKind::Typedef(t), true)?;
                }
                self.expect_punct(";").map(|_| ())
            }
            "struct" => {
                self.struct_type(true)?;
                self.expect_punct(";").map(|_| ())
            }
            "union" => {
                self.union_type(true)?;
                self.expect_punct(";").map(|_| ())
            }
            "enum" => {
                self.enum_type()?;
                self.expect_punct(";").map(|_| ())
            }
            "native" => {
                self.bump()?;
                let (name, loc) = self.ident()?;
                self.declare(&name, loc, DefKind::Native, true)?;
                self.expect_punct(";").map(|_| ())
            }
            "const" => self.const_decl(),
            "exception" => self.exception(),
            // `typeid` / `typeprefix` are CORBA 3 keywords; IDL written
            // before them may use the words as type names (`typeid f();`),
            // so they are keywords only when followed by a name and a string.
            "typeid" | "typeprefix"
                if !matches!(
                    self.look_ahead(1),
                    Tok::Ident(_) | Tok::EscIdent(_) | Tok::Punct("::")
                ) || matches!(self.look_ahead(2), Tok::Str(_) | Tok::Punct("::")) =>
            {
                self.bump()?;
                let (id, _) = self.scoped_def()?;
                let sloc = self.loc()?;
                let Tok::Str(s) = self.bump()?.tok else {
                    return Err(
                        self.err_at(sloc, format!("expected a string literal after {kw} NAME"))
                    );
                };
                if kw == "typeid" {
                    self.spec.defs[id.0 as usize].repo_id = s;
                } else {
                    if self.cur_scope() == Some(id) {
                        if let Some(top) = self.prefixes.last_mut() {
                            *top = s.clone();
                        }
                    }
                    self.typeprefixes.insert(id, s);
                }
                self.expect_punct(";").map(|_| ())
            }
            "import" if ctx == Ctx::Module => {
                self.bump()?;
                while !matches!(self.look()?, Tok::Punct(";") | Tok::Eof) {
                    self.bump()?;
                }
                self.note(
                    loc,
                    "skipped import declaration (imports are not supported; use #include)"
                        .to_string(),
                );
                self.expect_punct(";").map(|_| ())
            }
            "component" | "home" | "porttype" | "connector" if ctx == Ctx::Module => {
                self.skip_construct(kw, loc)
            }
            "attribute" | "readonly" if ctx != Ctx::Module => self.attribute(),
            "public" | "private" if ctx == Ctx::Value => self.state_member(),
            "factory" if ctx == Ctx::Value => self.factory(),
            _ if ctx != Ctx::Module => self.operation(),
            _ => Err(self.expected("a definition")),
        }
    }

    /// Skips a CCM construct (component, home, porttype, connector),
    /// recording a note.
    fn skip_construct(&mut self, kw: &str, loc: Loc) -> Result<(), Error> {
        self.bump()?;
        let name = match self.look()? {
            Tok::Ident(s) | Tok::EscIdent(s) => s,
            _ => String::new(),
        };
        let mut depth = 0usize;
        loop {
            let t = self.bump()?;
            match t.tok {
                Tok::Punct("{") => depth += 1,
                Tok::Punct("}") => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        self.expect_punct(";")?;
                        break;
                    }
                }
                Tok::Punct(";") if depth == 0 => break,
                Tok::Eof => return Err(self.err_at(loc, format!("unterminated {kw} '{name}'"))),
                _ => {}
            }
        }
        self.note(
            loc,
            format!("skipped {kw} '{name}' (CCM constructs are not modelled)"),
        );
        Ok(())
    }

    fn module(&mut self) -> Result<(), Error> {
        self.expect_kw("module")?;
        let (name, loc) = self.ident()?;
        let id = self.declare(
            &name,
            loc,
            DefKind::Module {
                contents: Vec::new(),
            },
            true,
        )?;
        if !matches!(self.spec.def(id).kind, DefKind::Module { .. }) {
            return Err(self.err_at(loc, format!("'{name}' is not a module")));
        }
        self.expect_punct("{")?;
        self.enter(id);
        while !self.eat_punct("}")? {
            if self.look()? == Tok::Eof {
                return Err(self.expected("'}'"));
            }
            self.definition(Ctx::Module)?;
        }
        self.leave();
        self.expect_punct(";").map(|_| ())
    }

    fn interface(&mut self, kind: InterfaceKind) -> Result<(), Error> {
        self.expect_kw("interface")?;
        let (name, loc) = self.ident()?;
        if self.eat_punct(";")? {
            let fwd = Interface {
                kind,
                bases: Vec::new(),
                contents: Vec::new(),
                defined: false,
            };
            self.declare(&name, loc, DefKind::Interface(fwd), true)?;
            return Ok(());
        }
        let mut bases = Vec::new();
        if self.eat_punct(":")? {
            loop {
                let b = self.interface_name("base interface")?;
                bases.push(b);
                if !self.eat_punct(",")? {
                    break;
                }
            }
        }
        self.expect_punct("{")?;
        let def = Interface {
            kind,
            bases,
            contents: Vec::new(),
            defined: true,
        };
        let id = self.declare(&name, loc, DefKind::Interface(def), true)?;
        self.enter(id);
        while !self.eat_punct("}")? {
            if self.look()? == Tok::Eof {
                return Err(self.expected("'}'"));
            }
            self.definition(Ctx::Interface)?;
        }
        self.leave();
        self.expect_punct(";").map(|_| ())
    }

    fn valuetype(&mut self) -> Result<(), Error> {
        let is_abstract = self.eat_kw("abstract")?;
        let custom = self.eat_kw("custom")?;
        let event = if self.eat_kw("eventtype")? {
            true
        } else {
            self.expect_kw("valuetype")?;
            false
        };
        let (name, loc) = self.ident()?;
        let mut v = ValueDef {
            is_abstract,
            custom,
            event,
            truncatable: false,
            bases: Vec::new(),
            supports: Vec::new(),
            state: Vec::new(),
            factories: Vec::new(),
            contents: Vec::new(),
            defined: false,
        };
        if self.eat_punct(";")? {
            self.declare(&name, loc, DefKind::Value(v), true)?;
            return Ok(());
        }
        let t = self.look()?;
        if !matches!(t, Tok::Punct(":") | Tok::Punct("{")) && !is_kw(&t, "supports") {
            // Value box.
            if is_abstract || custom || event {
                return Err(self.expected("':', 'supports' or '{'"));
            }
            let ty = self.type_spec()?;
            self.declare(&name, loc, DefKind::ValueBox(ty), true)?;
            return self.expect_punct(";").map(|_| ());
        }
        if self.eat_punct(":")? {
            v.truncatable = self.eat_kw("truncatable")?;
            loop {
                v.bases.push(self.value_name()?);
                if !self.eat_punct(",")? {
                    break;
                }
            }
        }
        if self.eat_kw("supports")? {
            loop {
                v.supports.push(self.interface_name("supported interface")?);
                if !self.eat_punct(",")? {
                    break;
                }
            }
        }
        self.expect_punct("{")?;
        v.defined = true;
        let id = self.declare(&name, loc, DefKind::Value(v), true)?;
        self.enter(id);
        while !self.eat_punct("}")? {
            if self.look()? == Tok::Eof {
                return Err(self.expected("'}'"));
            }
            self.definition(Ctx::Value)?;
        }
        self.leave();
        self.expect_punct(";").map(|_| ())
    }

    fn state_member(&mut self) -> Result<(), Error> {
        let public = self.eat_kw("public")?;
        if !public {
            self.expect_kw("private")?;
        }
        let ty = self.type_spec()?;
        let decls = self.declarators()?;
        self.expect_punct(";")?;
        let Some(vid) = self.cur_scope() else {
            return Err(self.expected("a definition"));
        };
        let mut members = Vec::new();
        for (name, _, dims) in decls {
            let t = if dims.is_empty() {
                ty.clone()
            } else {
                Type::Array(Box::new(ty.clone()), dims)
            };
            members.push(StateMember {
                public,
                name,
                ty: t,
            });
        }
        if let DefKind::Value(v) = &mut self.spec.defs[vid.0 as usize].kind {
            v.state.extend(members);
        }
        Ok(())
    }

    fn factory(&mut self) -> Result<(), Error> {
        self.expect_kw("factory")?;
        let (name, _) = self.ident()?;
        self.expect_punct("(")?;
        if !self.eat_punct(")")? {
            loop {
                self.expect_kw("in")?;
                self.param_type()?;
                self.ident()?;
                if !self.eat_punct(",")? {
                    break;
                }
            }
            self.expect_punct(")")?;
        }
        if self.eat_kw("raises")? {
            self.exception_list()?;
        }
        self.expect_punct(";")?;
        if let Some(vid) = self.cur_scope() {
            if let DefKind::Value(v) = &mut self.spec.defs[vid.0 as usize].kind {
                v.factories.push(name);
            }
        }
        Ok(())
    }

    fn attribute(&mut self) -> Result<(), Error> {
        let readonly = self.eat_kw("readonly")?;
        self.expect_kw("attribute")?;
        let ty = self.param_type()?;
        let mut names = vec![self.ident()?];
        while self.eat_punct(",")? {
            names.push(self.ident()?);
        }
        let mut get_raises = Vec::new();
        let mut set_raises = Vec::new();
        if readonly && self.eat_kw("raises")? {
            get_raises = self.exception_list()?;
        } else {
            if self.eat_kw("getraises")? {
                get_raises = self.exception_list()?;
            }
            if !readonly && self.eat_kw("setraises")? {
                set_raises = self.exception_list()?;
            }
        }
        self.expect_punct(";")?;
        for (name, loc) in names {
            let a = Attribute {
                readonly,
                ty: ty.clone(),
                get_raises: get_raises.clone(),
                set_raises: set_raises.clone(),
            };
            self.declare(&name, loc, DefKind::Attribute(a), true)?;
        }
        Ok(())
    }

    fn operation(&mut self) -> Result<(), Error> {
        let oneway = self.eat_kw("oneway")?;
        let result = if self.eat_kw("void")? {
            Type::Void
        } else {
            self.param_type()?
        };
        let (name, loc) = self.ident()?;
        self.expect_punct("(")?;
        let mut params = Vec::new();
        if !self.eat_punct(")")? {
            loop {
                let dir = if self.eat_kw("in")? {
                    Direction::In
                } else if self.eat_kw("out")? {
                    Direction::Out
                } else if self.eat_kw("inout")? {
                    Direction::InOut
                } else {
                    return Err(self.expected("'in', 'out' or 'inout'"));
                };
                let ty = self.param_type()?;
                let (pname, _) = self.ident()?;
                params.push(Param {
                    dir,
                    name: pname,
                    ty,
                });
                if !self.eat_punct(",")? {
                    break;
                }
            }
            self.expect_punct(")")?;
        }
        let raises = if self.eat_kw("raises")? {
            self.exception_list()?
        } else {
            Vec::new()
        };
        let mut contexts = Vec::new();
        if self.eat_kw("context")? {
            self.expect_punct("(")?;
            loop {
                let sloc = self.loc()?;
                match self.bump()?.tok {
                    Tok::Str(s) => contexts.push(s),
                    other => {
                        return Err(self.err_at(
                            sloc,
                            format!("expected a string literal, found {}", other.describe()),
                        ))
                    }
                }
                if !self.eat_punct(",")? {
                    break;
                }
            }
            self.expect_punct(")")?;
        }
        self.expect_punct(";")?;
        let Some(defined_in) = self.cur_scope() else {
            return Err(self.err_at(loc, "operation outside an interface"));
        };
        if oneway
            && (result != Type::Void
                || params.iter().any(|p| p.dir != Direction::In)
                || !raises.is_empty())
        {
            return Err(self.err_at(loc, format!("oneway operation '{name}' must return void, take only in parameters and raise nothing")));
        }
        let op = Operation {
            name: name.clone(),
            oneway,
            result,
            params,
            raises,
            contexts,
            defined_in,
        };
        self.declare(&name, loc, DefKind::Operation(op), true)?;
        Ok(())
    }

    fn exception(&mut self) -> Result<(), Error> {
        self.expect_kw("exception")?;
        let (name, loc) = self.ident()?;
        self.expect_punct("{")?;
        let id = self.declare(
            &name,
            loc,
            DefKind::Exception(Struct {
                members: Vec::new(),
                defined: true,
            }),
            true,
        )?;
        self.enter(id);
        let members = self.members(true)?;
        self.leave();
        self.spec.defs[id.0 as usize].kind = DefKind::Exception(Struct {
            members,
            defined: true,
        });
        self.expect_punct(";").map(|_| ())
    }

    /// Member list up to and including `}`.
    fn members(&mut self, allow_empty: bool) -> Result<Vec<Member>, Error> {
        let mut out = Vec::new();
        let open = self.loc()?;
        while !self.eat_punct("}")? {
            if self.look()? == Tok::Eof {
                return Err(self.expected("'}'"));
            }
            let ty = self.type_spec()?;
            for (name, loc, dims) in self.declarators()? {
                if out.iter().any(|m: &Member| m.name == name) {
                    return Err(self.err_at(loc, format!("duplicate member '{name}'")));
                }
                let t = if dims.is_empty() {
                    ty.clone()
                } else {
                    Type::Array(Box::new(ty.clone()), dims)
                };
                out.push(Member { name, ty: t });
            }
            self.expect_punct(";")?;
        }
        if out.is_empty() && !allow_empty {
            return Err(self.err_at(open, "a struct needs at least one member"));
        }
        Ok(out)
    }

    fn struct_type(&mut self, allow_forward: bool) -> Result<DefId, Error> {
        self.expect_kw("struct")?;
        let (name, loc) = self.ident()?;
        if allow_forward && matches!(self.look()?, Tok::Punct(";")) {
            return self.declare(
                &name,
                loc,
                DefKind::Struct(Struct {
                    members: Vec::new(),
                    defined: false,
                }),
                true,
            );
        }
        self.expect_punct("{")?;
        let id = self.declare(
            &name,
            loc,
            DefKind::Struct(Struct {
                members: Vec::new(),
                defined: true,
            }),
            true,
        )?;
        self.enter(id);
        let members = self.members(false)?;
        self.leave();
        self.spec.defs[id.0 as usize].kind = DefKind::Struct(Struct {
            members,
            defined: true,
        });
        Ok(id)
    }

    fn union_type(&mut self, allow_forward: bool) -> Result<DefId, Error> {
        self.expect_kw("union")?;
        let (name, loc) = self.ident()?;
        if allow_forward && matches!(self.look()?, Tok::Punct(";")) {
            let u = Union {
                discriminator: Type::Long,
                cases: Vec::new(),
                defined: false,
            };
            return self.declare(&name, loc, DefKind::Union(u), true);
        }
        self.expect_kw("switch")?;
        self.expect_punct("(")?;
        // Declared before the discriminator: an enum defined in the
        // switch belongs to the union's scope.
        let u = Union {
            discriminator: Type::Long,
            cases: Vec::new(),
            defined: true,
        };
        let id = self.declare(&name, loc, DefKind::Union(u), true)?;
        self.enter(id);
        let dloc = self.loc()?;
        let disc = if is_kw(&self.look()?, "enum") {
            Type::Named(self.enum_type()?)
        } else {
            self.simple_type()?
        };
        let ok = match self.spec.unalias(&disc) {
            Type::Short
            | Type::Long
            | Type::LongLong
            | Type::UShort
            | Type::ULong
            | Type::ULongLong => true,
            Type::Char | Type::WChar | Type::Boolean => true,
            Type::Named(id) => matches!(self.spec.def(*id).kind, DefKind::Enum(_)),
            _ => false,
        };
        if !ok {
            return Err(self.err_at(
                dloc,
                format!(
                    "'{}' cannot be a union discriminator",
                    self.spec.type_name(&disc)
                ),
            ));
        }
        self.expect_punct(")")?;
        self.expect_punct("{")?;
        let mut cases: Vec<UnionCase> = Vec::new();
        let mut seen_default = false;
        while !self.eat_punct("}")? {
            let mut labels = Vec::new();
            loop {
                let lloc = self.loc()?;
                if self.eat_kw("case")? {
                    let v = self.const_expr(&disc)?;
                    let dup = cases
                        .iter()
                        .flat_map(|c| &c.labels)
                        .chain(labels.iter())
                        .any(|l| *l == CaseLabel::Value(v.clone()));
                    if dup {
                        return Err(self.err_at(lloc, "duplicate case label"));
                    }
                    labels.push(CaseLabel::Value(v));
                } else if self.eat_kw("default")? {
                    if seen_default {
                        return Err(self.err_at(lloc, "second default label"));
                    }
                    seen_default = true;
                    labels.push(CaseLabel::Default);
                } else if labels.is_empty() {
                    return Err(self.expected("'case', 'default' or '}'"));
                } else {
                    break;
                }
                self.expect_punct(":")?;
            }
            let ty = self.type_spec()?;
            let (mname, mloc) = self.ident()?;
            let dims = self.array_dims()?;
            self.expect_punct(";")?;
            if cases.iter().any(|c| c.name == mname) {
                return Err(self.err_at(mloc, format!("duplicate union member '{mname}'")));
            }
            let ty = if dims.is_empty() {
                ty
            } else {
                Type::Array(Box::new(ty), dims)
            };
            cases.push(UnionCase {
                labels,
                name: mname,
                ty,
            });
        }
        self.leave();
        if cases.is_empty() {
            return Err(self.err_at(loc, format!("union '{name}' has no cases")));
        }
        self.spec.defs[id.0 as usize].kind = DefKind::Union(Union {
            discriminator: disc,
            cases,
            defined: true,
        });
        Ok(id)
    }

    fn enum_type(&mut self) -> Result<DefId, Error> {
        self.expect_kw("enum")?;
        let (name, loc) = self.ident()?;
        self.expect_punct("{")?;
        let mut names = Vec::new();
        loop {
            names.push(self.ident()?);
            if !self.eat_punct(",")? {
                break;
            }
        }
        self.expect_punct("}")?;
        let id = self.declare(
            &name,
            loc,
            DefKind::Enum(names.iter().map(|n| n.0.clone()).collect()),
            true,
        )?;
        for (i, (n, l)) in names.into_iter().enumerate() {
            self.declare(
                &n,
                l,
                DefKind::Enumerator {
                    of: id,
                    index: i as u32,
                },
                false,
            )?;
        }
        Ok(id)
    }

    fn declarators(&mut self) -> Result<Vec<(String, Loc, Vec<u32>)>, Error> {
        let mut out = Vec::new();
        loop {
            let (name, loc) = self.ident()?;
            let dims = self.array_dims()?;
            out.push((name, loc, dims));
            if !self.eat_punct(",")? {
                return Ok(out);
            }
        }
    }

    fn array_dims(&mut self) -> Result<Vec<u32>, Error> {
        let mut dims = Vec::new();
        while self.eat_punct("[")? {
            dims.push(self.positive_int()?);
            self.expect_punct("]")?;
        }
        Ok(dims)
    }

    // ---- types ----------------------------------------------------------

    /// A type in a declaration: constructed types (struct, union, enum)
    /// declared in place are allowed.
    fn type_spec(&mut self) -> Result<Type, Error> {
        let t = self.look()?;
        if is_kw(&t, "struct") {
            return Ok(Type::Named(self.struct_type(false)?));
        }
        if is_kw(&t, "union") {
            return Ok(Type::Named(self.union_type(false)?));
        }
        if is_kw(&t, "enum") {
            return Ok(Type::Named(self.enum_type()?));
        }
        self.simple_type()
    }

    /// A parameter, result or attribute type.
    fn param_type(&mut self) -> Result<Type, Error> {
        self.simple_type()
    }

    fn simple_type(&mut self) -> Result<Type, Error> {
        self.nested(|p| p.simple_type_inner())
    }

    fn simple_type_inner(&mut self) -> Result<Type, Error> {
        let t = self.look()?;
        let kw = match &t {
            Tok::Ident(s) if KEYWORDS.contains(&s.as_str()) => s.clone(),
            Tok::Ident(_) | Tok::EscIdent(_) | Tok::Punct("::") => return self.named_type(),
            _ => return Err(self.expected("a type")),
        };
        self.bump()?;
        Ok(match kw.as_str() {
            "short" => Type::Short,
            "long" => {
                if self.eat_kw("long")? {
                    Type::LongLong
                } else if self.eat_kw("double")? {
                    Type::LongDouble
                } else {
                    Type::Long
                }
            }
            "unsigned" => {
                if self.eat_kw("short")? {
                    Type::UShort
                } else if self.eat_kw("long")? {
                    if self.eat_kw("long")? {
                        Type::ULongLong
                    } else {
                        Type::ULong
                    }
                } else {
                    return Err(self.expected("'short' or 'long' after 'unsigned'"));
                }
            }
            "float" => Type::Float,
            "double" => Type::Double,
            "char" => Type::Char,
            "wchar" => Type::WChar,
            "boolean" => Type::Boolean,
            "octet" => Type::Octet,
            "any" => Type::Any,
            "Object" => Type::Object,
            "ValueBase" => Type::ValueBase,
            "string" | "wstring" => {
                let bound = if self.eat_punct("<")? {
                    let b = self.positive_int()?;
                    self.expect_close_angle()?;
                    Some(b)
                } else {
                    None
                };
                if kw == "string" {
                    Type::String(bound)
                } else {
                    Type::WString(bound)
                }
            }
            "sequence" => {
                self.expect_punct("<")?;
                let elem = self.simple_type()?;
                let bound = if self.eat_punct(",")? {
                    Some(self.positive_int()?)
                } else {
                    None
                };
                self.expect_close_angle()?;
                Type::Sequence(Box::new(elem), bound)
            }
            "fixed" => {
                let floc = self.loc()?;
                if !self.eat_punct("<")? {
                    return Err(self.err_at(
                        floc,
                        "'fixed' without <digits, scale> is only allowed in constant declarations",
                    ));
                }
                let d = self.positive_int()?;
                self.expect_punct(",")?;
                let sloc = self.loc()?;
                let s = self.const_expr(&Type::Short)?;
                self.expect_close_angle()?;
                let ConstValue::Int(s) = s else {
                    return Err(self.err_at(sloc, "fixed scale must be an integer"));
                };
                if d > 31 || s < 0 || s > d as i128 {
                    return Err(self.err_at(
                        floc,
                        format!(
                            "invalid fixed<{d},{s}>: need digits <= 31 and 0 <= scale <= digits"
                        ),
                    ));
                }
                Type::Fixed(d as u16, s as i16)
            }
            other => {
                self.pos -= 1;
                return Err(self.expected(&format!("a type (not keyword '{other}')")));
            }
        })
    }

    fn named_type(&mut self) -> Result<Type, Error> {
        let (parts, abs, loc) = self.scoped_name()?;
        match resolve(&self.spec, &self.scopes, &parts, abs) {
            Some(id) => {
                let d = self.spec.def(id);
                match &d.kind {
                    DefKind::Struct(_)
                    | DefKind::Union(_)
                    | DefKind::Enum(_)
                    | DefKind::Typedef(_)
                    | DefKind::Interface(_)
                    | DefKind::Value(_)
                    | DefKind::ValueBox(_)
                    | DefKind::Native
                    | DefKind::Exception(_) => Ok(Type::Named(id)),
                    _ => Err(self.err_at(loc, format!("'{}' is not a type", d.scoped_name))),
                }
            }
            None => {
                let builtin = match parts
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .as_slice()
                {
                    ["TypeCode"] | ["CORBA", "TypeCode"] => Some(Type::TypeCode),
                    ["CORBA", "Object"] => Some(Type::Object),
                    ["CORBA", "ValueBase"] => Some(Type::ValueBase),
                    ["Principal"] | ["CORBA", "Principal"] => Some(Type::Principal),
                    _ => None,
                };
                builtin.ok_or_else(|| self.resolve_name(&parts, abs, loc).unwrap_err())
            }
        }
    }

    // ---- constant expressions ---------------------------------------------

    fn const_decl(&mut self) -> Result<(), Error> {
        self.expect_kw("const")?;
        let ty = self.const_type()?;
        let (name, loc) = self.ident()?;
        self.expect_punct("=")?;
        let value = self.const_expr(&ty)?;
        self.declare(&name, loc, DefKind::Const { ty, value }, true)?;
        self.expect_punct(";").map(|_| ())
    }

    fn const_type(&mut self) -> Result<Type, Error> {
        let loc = self.loc()?;
        if is_kw(&self.look()?, "fixed") && !matches!(self.look_ahead(1), Tok::Punct("<")) {
            self.bump()?;
            return Ok(Type::Fixed(0, 0));
        }
        let ty = self.simple_type()?;
        let ok = match self.spec.unalias(&ty) {
            Type::Sequence(..)
            | Type::Any
            | Type::Object
            | Type::TypeCode
            | Type::ValueBase
            | Type::Void
            | Type::Principal
            | Type::Array(..) => false,
            Type::Named(id) => matches!(self.spec.def(*id).kind, DefKind::Enum(_)),
            _ => true,
        };
        if !ok {
            return Err(self.err_at(
                loc,
                format!(
                    "'{}' is not a valid constant type",
                    self.spec.type_name(&ty)
                ),
            ));
        }
        Ok(ty)
    }

    fn positive_int(&mut self) -> Result<u32, Error> {
        let loc = self.loc()?;
        match self.const_expr(&Type::ULong)? {
            ConstValue::Int(v) if v > 0 && v <= u32::MAX as i128 => Ok(v as u32),
            _ => Err(self.err_at(loc, "expected a positive integer constant")),
        }
    }

    /// Parses and evaluates a constant expression, converting the result
    /// to `target`.
    fn const_expr(&mut self, target: &Type) -> Result<ConstValue, Error> {
        let loc = self.loc()?;
        let t = self.spec.unalias(target).clone();
        let v = self.or_expr(&t)?;
        self.coerce(v, &t, loc)
    }

    fn coerce(&self, v: ConstValue, t: &Type, loc: Loc) -> Result<ConstValue, Error> {
        let range = |lo: i128, hi: i128, name: &str| -> Result<ConstValue, Error> {
            match v {
                ConstValue::Int(x) if x >= lo && x <= hi => Ok(ConstValue::Int(x)),
                ConstValue::Int(x) => {
                    Err(self.err_at(loc, format!("value {x} out of range for {name}")))
                }
                _ => Err(self.err_at(loc, format!("expected an integer value for {name}"))),
            }
        };
        match t {
            Type::Short => range(i16::MIN as i128, i16::MAX as i128, "short"),
            Type::UShort => range(0, u16::MAX as i128, "unsigned short"),
            Type::Long => range(i32::MIN as i128, i32::MAX as i128, "long"),
            Type::ULong => range(0, u32::MAX as i128, "unsigned long"),
            Type::LongLong => range(i64::MIN as i128, i64::MAX as i128, "long long"),
            Type::ULongLong => range(0, u64::MAX as i128, "unsigned long long"),
            Type::Octet => range(0, 255, "octet"),
            Type::Float | Type::Double | Type::LongDouble => {
                let f = match v {
                    ConstValue::Float(f) => f,
                    // The spec forbids mixing: `const double d = 2;` is an error.
                    _ => return Err(self.err_at(loc, "expected a floating-point value")),
                };
                if *t == Type::Float {
                    if f.is_finite() && (f as f32).is_infinite() {
                        return Err(self.err_at(loc, format!("value {f} out of range for float")));
                    }
                    Ok(ConstValue::Float(f as f32 as f64))
                } else {
                    Ok(ConstValue::Float(f))
                }
            }
            Type::Char => match v {
                ConstValue::Char(c) if c <= 255 => Ok(ConstValue::Char(c)),
                _ => Err(self.err_at(loc, "expected a character literal")),
            },
            Type::WChar => match v {
                ConstValue::Char(c) | ConstValue::WChar(c) => Ok(ConstValue::WChar(c)),
                _ => Err(self.err_at(loc, "expected a wide character literal")),
            },
            Type::Boolean => match v {
                ConstValue::Bool(b) => Ok(ConstValue::Bool(b)),
                _ => Err(self.err_at(loc, "expected TRUE or FALSE")),
            },
            Type::String(bound) => match v {
                ConstValue::Str(s) => {
                    if bound.is_some_and(|b| s.chars().count() > b as usize) {
                        return Err(self.err_at(loc, "string constant longer than its bound"));
                    }
                    Ok(ConstValue::Str(s))
                }
                _ => Err(self.err_at(loc, "expected a string literal")),
            },
            Type::WString(bound) => match v {
                ConstValue::Str(s) | ConstValue::WStr(s) => {
                    if bound.is_some_and(|b| s.chars().count() > b as usize) {
                        return Err(self.err_at(loc, "wstring constant longer than its bound"));
                    }
                    Ok(ConstValue::WStr(s))
                }
                _ => Err(self.err_at(loc, "expected a wide string literal")),
            },
            Type::Fixed(..) => match v {
                ConstValue::Fixed(s) => Ok(ConstValue::Fixed(s)),
                ConstValue::Int(i) => Ok(ConstValue::Fixed(i.to_string())),
                _ => Err(self.err_at(loc, "expected a fixed-point value")),
            },
            Type::Named(eid) => match v {
                ConstValue::Enum(e) if matches!(self.spec.def(e).kind, DefKind::Enumerator { of, .. } if of == *eid) => {
                    Ok(ConstValue::Enum(e))
                }
                _ => Err(self.err_at(
                    loc,
                    format!(
                        "expected an enumerator of {}",
                        self.spec.def(*eid).scoped_name
                    ),
                )),
            },
            other => Err(self.err_at(
                loc,
                format!("'{}' is not a constant type", self.spec.type_name(other)),
            )),
        }
    }

    fn int_op(
        &self,
        loc: Loc,
        op: &str,
        a: ConstValue,
        b: ConstValue,
    ) -> Result<ConstValue, Error> {
        use ConstValue::*;
        let overflow = || self.err_at(loc, format!("overflow in constant expression ('{op}')"));
        let check = |v: Option<i128>| -> Result<ConstValue, Error> {
            match v {
                Some(v) if v >= i64::MIN as i128 && v <= u64::MAX as i128 => Ok(Int(v)),
                _ => Err(overflow()),
            }
        };
        match (a, b) {
            (Int(x), Int(y)) => match op {
                "|" => Ok(Int(x | y)),
                "^" => Ok(Int(x ^ y)),
                "&" => Ok(Int(x & y)),
                "<<" | ">>" => {
                    if !(0..64).contains(&y) {
                        return Err(self.err_at(loc, format!("shift count {y} out of range 0..63")));
                    }
                    if op == "<<" {
                        check(x.checked_mul(1i128 << y))
                    } else {
                        Ok(Int(x >> y))
                    }
                }
                "+" => check(x.checked_add(y)),
                "-" => check(x.checked_sub(y)),
                "*" => check(x.checked_mul(y)),
                "/" | "%" => {
                    if y == 0 {
                        return Err(self.err_at(loc, "division by zero in constant expression"));
                    }
                    check(if op == "/" {
                        x.checked_div(y)
                    } else {
                        x.checked_rem(y)
                    })
                }
                _ => Err(overflow()),
            },
            (x, y) => {
                if matches!((&x, &y), (Int(_), Float(_)) | (Float(_), Int(_))) {
                    return Err(self.err_at(
                        loc,
                        format!("operator '{op}' mixes integer and floating-point operands"),
                    ));
                }
                let f = |v: &ConstValue| match v {
                    Float(f) => Some(*f),
                    _ => None,
                };
                match (f(&x), f(&y), op) {
                    (Some(p), Some(q), "+") => Ok(Float(p + q)),
                    (Some(p), Some(q), "-") => Ok(Float(p - q)),
                    (Some(p), Some(q), "*") => Ok(Float(p * q)),
                    (Some(p), Some(q), "/") => {
                        if q == 0.0 {
                            return Err(self.err_at(loc, "division by zero in constant expression"));
                        }
                        Ok(Float(p / q))
                    }
                    (Some(_), Some(_), _) => Err(self.err_at(loc, format!("operator '{op}' needs integer operands"))),
                    _ => Err(self.err_at(loc, format!("operator '{op}' is not defined for these operands (fixed-point, character, string and boolean arithmetic is not supported)"))),
                }
            }
        }
    }

    fn binary_level(&mut self, t: &Type, level: usize) -> Result<ConstValue, Error> {
        const LEVELS: &[&[&str]] = &[
            &["|"],
            &["^"],
            &["&"],
            &["<<", ">>"],
            &["+", "-"],
            &["*", "/", "%"],
        ];
        if level == LEVELS.len() {
            return self.unary_expr(t);
        }
        let mut lhs = self.binary_level(t, level + 1)?;
        loop {
            let op = match self.look()? {
                Tok::Punct(p) if LEVELS[level].contains(&p) => p,
                _ => return Ok(lhs),
            };
            let loc = self.loc()?;
            self.bump()?;
            let rhs = self.binary_level(t, level + 1)?;
            lhs = self.int_op(loc, op, lhs, rhs)?;
        }
    }

    fn or_expr(&mut self, t: &Type) -> Result<ConstValue, Error> {
        self.nested(|p| p.binary_level(t, 0))
    }

    fn unary_expr(&mut self, t: &Type) -> Result<ConstValue, Error> {
        let loc = self.loc()?;
        match self.look()? {
            Tok::Punct("-") => {
                self.bump()?;
                match self.primary(t)? {
                    ConstValue::Int(i) => Ok(ConstValue::Int(-i)),
                    ConstValue::Float(f) => Ok(ConstValue::Float(-f)),
                    ConstValue::Fixed(s) => Ok(ConstValue::Fixed(format!("-{s}"))),
                    _ => Err(self.err_at(loc, "unary '-' needs a number")),
                }
            }
            Tok::Punct("+") => {
                self.bump()?;
                self.primary(t)
            }
            Tok::Punct("~") => {
                self.bump()?;
                match self.primary(t)? {
                    ConstValue::Int(i) => {
                        // CORBA 3.0 7.4.2: short and octet expressions are
                        // evaluated as long / unsigned long; the complement
                        // of an unsigned value is (2^32-1 or 2^64-1) - value,
                        // of a signed one -(value+1).
                        let bits = match t {
                            Type::Octet | Type::UShort | Type::ULong => Some(32),
                            Type::ULongLong => Some(64),
                            _ => None,
                        };
                        Ok(ConstValue::Int(match bits {
                            Some(b) => ((1i128 << b) - 1) ^ i,
                            None => !i,
                        }))
                    }
                    _ => Err(self.err_at(loc, "unary '~' needs an integer")),
                }
            }
            _ => self.primary(t),
        }
    }

    fn primary(&mut self, t: &Type) -> Result<ConstValue, Error> {
        let tok = self.look()?;
        let loc = self.loc()?;
        match tok {
            Tok::Punct("(") => {
                self.bump()?;
                let v = self.or_expr(t)?;
                self.expect_punct(")")?;
                Ok(v)
            }
            Tok::Int(v) => {
                self.bump()?;
                if v > u64::MAX as u128 {
                    return Err(self.err_at(loc, "integer literal too large"));
                }
                Ok(ConstValue::Int(v as i128))
            }
            Tok::Float(f) => {
                self.bump()?;
                Ok(ConstValue::Float(f))
            }
            Tok::Fixed(s) => {
                self.bump()?;
                Ok(ConstValue::Fixed(s))
            }
            Tok::Char(c) => {
                self.bump()?;
                Ok(ConstValue::Char(c))
            }
            Tok::WChar(c) => {
                self.bump()?;
                Ok(ConstValue::WChar(c))
            }
            Tok::Str(_) | Tok::WStr(_) => {
                let wide = matches!(tok, Tok::WStr(_));
                let mut s = String::new();
                loop {
                    match self.look()? {
                        Tok::Str(p) if !wide => s.push_str(&p),
                        Tok::WStr(p) if wide => s.push_str(&p),
                        _ => break,
                    }
                    self.bump()?;
                }
                Ok(if wide {
                    ConstValue::WStr(s)
                } else {
                    ConstValue::Str(s)
                })
            }
            Tok::Ident(ref k) if k == "TRUE" || k == "FALSE" => {
                self.bump()?;
                Ok(ConstValue::Bool(k == "TRUE"))
            }
            Tok::Ident(_) | Tok::EscIdent(_) | Tok::Punct("::") => {
                let (id, loc) = self.scoped_def()?;
                let d = self.spec.def(id);
                match &d.kind {
                    DefKind::Const { value, .. } => Ok(value.clone()),
                    DefKind::Enumerator { .. } => Ok(ConstValue::Enum(id)),
                    _ => Err(self.err_at(
                        loc,
                        format!("'{}' is not a constant or enumerator", d.scoped_name),
                    )),
                }
            }
            _ => Err(self.expected("a constant expression")),
        }
    }
}
