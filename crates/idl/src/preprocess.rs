//! Preprocessor: files to one token stream, the way `cpp` feeds an IDL
//! compiler.
//!
//! Supports `#include "x"` (the including file's directory first, then
//! the search path) and `#include <x>` (search path only), conditional
//! compilation (`#if`, `#ifdef`, `#ifndef`, `#elif`, `#else`, `#endif`
//! with `defined(...)` and C integer expressions), object-like `#define`
//! / `#undef` expanded in the IDL text, `#error`, `#warning` and `#line`
//! (ignored). `#pragma` lines are passed to the parser as [`Item::Pragma`]
//! at their place in the stream, and the stream marks where each included
//! file starts and ends ([`Item::EnterFile`] / [`Item::LeaveFile`]),
//! because `#pragma prefix` is scoped to the file it appears in.
//! Every token keeps the location it was read from.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::error::{Loc, Note, SourceMap};
use crate::lexer::{lex, Tok, Token};
use crate::Error;

/// How deep `#include` may nest before we assume a cycle.
const MAX_INCLUDE_DEPTH: usize = 64;
/// How deep macro expansion may nest.
const MAX_EXPANSION_DEPTH: usize = 64;

/// One element of the preprocessed stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// An IDL token.
    Token(Token),
    /// A `#pragma` line: the text after `pragma`.
    Pragma(String, Loc),
    /// An included file starts here.
    EnterFile(Loc),
    /// The included file that started last ends here.
    LeaveFile(Loc),
}

#[derive(Debug, Clone)]
enum Macro {
    Object(Vec<Tok>),
    Function,
}

#[derive(Debug)]
struct Cond {
    /// Whether the enclosing region is active.
    parent_active: bool,
    /// Whether some branch of this conditional has been taken.
    taken: bool,
    /// Whether the current branch is active.
    active: bool,
    /// Whether `#else` was seen.
    seen_else: bool,
    loc: Loc,
}

/// Runs the preprocessor over `main` and everything it includes.
#[derive(Debug)]
pub struct Preprocessor<'a> {
    include_dirs: &'a [PathBuf],
    macros: HashMap<String, Macro>,
    /// Files read, for locations.
    pub sources: SourceMap,
    /// Remarks (ignored directives).
    pub notes: Vec<Note>,
    out: Vec<Item>,
}

impl<'a> Preprocessor<'a> {
    /// A preprocessor with the `-I` directories and `-D` definitions
    /// (`NAME` or `NAME=value`).
    pub fn new(include_dirs: &'a [PathBuf], defines: &[String]) -> Result<Self, Error> {
        let mut pp = Preprocessor {
            include_dirs,
            macros: HashMap::new(),
            sources: SourceMap::default(),
            notes: Vec::new(),
            out: Vec::new(),
        };
        let cmdline = pp.sources.add(PathBuf::from("<command line>"));
        for d in defines {
            let (name, value) = d.split_once('=').unwrap_or((d.as_str(), "1"));
            let toks = lex(value, cmdline, 1, 1, false, &pp.sources)?;
            pp.macros.insert(
                name.to_string(),
                Macro::Object(
                    toks.into_iter()
                        .map(|t| t.tok)
                        .filter(|t| *t != Tok::Eof)
                        .collect(),
                ),
            );
        }
        Ok(pp)
    }

    /// Preprocesses the file at `path`.
    pub fn run_file(self, path: &Path) -> Result<(Vec<Item>, SourceMap, Vec<Note>), Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error {
            file: path.display().to_string(),
            line: 0,
            col: 0,
            message: format!("cannot read: {e}"),
        })?;
        self.run_text(path.to_path_buf(), &text)
    }

    /// Preprocesses `text` as if read from `path`.
    pub fn run_text(
        mut self,
        path: PathBuf,
        text: &str,
    ) -> Result<(Vec<Item>, SourceMap, Vec<Note>), Error> {
        let file = self.sources.add(path);
        self.file(file, text, 0)?;
        Ok((self.out, self.sources, self.notes))
    }

    fn file(&mut self, file: u32, text: &str, depth: usize) -> Result<(), Error> {
        let toks = lex(text, file, 1, 1, true, &self.sources)?;
        let mut conds: Vec<Cond> = Vec::new();
        for t in toks {
            let active = conds.last().is_none_or(|c| c.active);
            match t.tok {
                Tok::Eof => {
                    if let Some(c) = conds.last() {
                        return Err(self
                            .sources
                            .error(c.loc, "unterminated conditional directive"));
                    }
                    return Ok(());
                }
                Tok::Directive {
                    name,
                    rest,
                    rest_loc,
                } => self.directive(&mut conds, active, t.loc, &name, &rest, rest_loc, depth)?,
                _ if !active => {}
                _ => self.expand(t, &mut Vec::new(), 0)?,
            }
        }
        Ok(())
    }

    /// Pushes `t`, replacing a defined macro name by its expansion.
    fn expand(&mut self, t: Token, hide: &mut Vec<String>, depth: usize) -> Result<(), Error> {
        if let Tok::Ident(name) = &t.tok {
            if !hide.contains(name) {
                match self.macros.get(name) {
                    Some(Macro::Object(body)) => {
                        if depth > MAX_EXPANSION_DEPTH {
                            return Err(self.sources.error(t.loc, "macro expansion too deep"));
                        }
                        let body = body.clone();
                        hide.push(name.clone());
                        for b in body {
                            self.expand(Token { tok: b, loc: t.loc }, hide, depth + 1)?;
                        }
                        hide.pop();
                        return Ok(());
                    }
                    Some(Macro::Function) => {
                        return Err(self.sources.error(
                            t.loc,
                            format!("function-like macro '{name}' is not supported"),
                        ))
                    }
                    None => {}
                }
            }
        }
        self.out.push(Item::Token(t));
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn directive(
        &mut self,
        conds: &mut Vec<Cond>,
        active: bool,
        loc: Loc,
        name: &str,
        rest: &str,
        rest_loc: Loc,
        depth: usize,
    ) -> Result<(), Error> {
        match name {
            "ifdef" | "ifndef" | "if" => {
                let value = if !active {
                    false
                } else if name == "if" {
                    self.eval_if(rest, rest_loc)?
                } else {
                    let id = rest.split_whitespace().next().ok_or_else(|| {
                        self.sources
                            .error(rest_loc, format!("#{name} without a macro name"))
                    })?;
                    self.macros.contains_key(id) == (name == "ifdef")
                };
                conds.push(Cond {
                    parent_active: active,
                    taken: value,
                    active: value,
                    seen_else: false,
                    loc,
                });
            }
            "elif" => {
                let Some(c) = conds.last() else {
                    return Err(self.sources.error(loc, "#elif without #if"));
                };
                if c.seen_else {
                    return Err(self.sources.error(loc, "#elif after #else"));
                }
                let value = if c.parent_active && !c.taken {
                    self.eval_if(rest, rest_loc)?
                } else {
                    false
                };
                let c = conds.last_mut().expect("checked above");
                c.active = value;
                c.taken |= value;
            }
            "else" => {
                let Some(c) = conds.last_mut() else {
                    return Err(self.sources.error(loc, "#else without #if"));
                };
                if c.seen_else {
                    return Err(self.sources.error(loc, "second #else"));
                }
                c.seen_else = true;
                c.active = c.parent_active && !c.taken;
                c.taken = true;
            }
            "endif" => {
                if conds.pop().is_none() {
                    return Err(self.sources.error(loc, "#endif without #if"));
                }
            }
            _ if !active => {}
            "define" => self.define(rest, rest_loc)?,
            "undef" => {
                if let Some(id) = rest.split_whitespace().next() {
                    self.macros.remove(id);
                }
            }
            "include" => self.include(loc, rest, rest_loc, depth)?,
            "pragma" => self.out.push(Item::Pragma(rest.to_string(), loc)),
            "error" => return Err(self.sources.error(loc, format!("#error {rest}"))),
            "warning" | "line" | "ident" | "" => self.notes.push(Note {
                at: self.sources.render(loc),
                message: format!("ignored #{name} {rest}"),
            }),
            other => {
                return Err(self
                    .sources
                    .error(loc, format!("unknown preprocessor directive #{other}")))
            }
        }
        Ok(())
    }

    fn define(&mut self, rest: &str, rest_loc: Loc) -> Result<(), Error> {
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            return Err(self.sources.error(rest_loc, "#define without a macro name"));
        }
        let after = &rest[name.len()..];
        if after.starts_with('(') {
            self.macros.insert(name, Macro::Function);
            return Ok(());
        }
        let body_loc = Loc {
            col: rest_loc.col + name.len() as u32,
            ..rest_loc
        };
        let toks = lex(
            after,
            body_loc.file,
            body_loc.line,
            body_loc.col,
            false,
            &self.sources,
        )?;
        let body = toks
            .into_iter()
            .map(|t| t.tok)
            .filter(|t| *t != Tok::Eof)
            .collect();
        self.macros.insert(name, Macro::Object(body));
        Ok(())
    }

    fn include(&mut self, loc: Loc, rest: &str, rest_loc: Loc, depth: usize) -> Result<(), Error> {
        let rest = rest.trim();
        let (name, quoted) = if let Some(r) = rest.strip_prefix('"') {
            (r.split('"').next().filter(|_| r.contains('"')), true)
        } else if let Some(r) = rest.strip_prefix('<') {
            (r.split('>').next().filter(|_| r.contains('>')), false)
        } else {
            (None, false)
        };
        let Some(name) = name else {
            return Err(self.sources.error(
                rest_loc,
                format!("expected \"file\" or <file> after #include, found '{rest}'"),
            ));
        };
        if depth >= MAX_INCLUDE_DEPTH {
            return Err(self
                .sources
                .error(loc, "#include nested too deeply (cycle?)"));
        }
        let mut candidates = Vec::new();
        if quoted {
            let current = PathBuf::from(self.sources.path(loc.file));
            if let Some(dir) = current.parent() {
                candidates.push(dir.join(name));
            }
        }
        for d in self.include_dirs {
            candidates.push(d.join(name));
        }
        let Some(path) = candidates.into_iter().find(|p| p.is_file()) else {
            return Err(self.sources.error(
                rest_loc,
                format!(
                    "cannot find include file {name} (search path: {:?})",
                    self.include_dirs
                ),
            ));
        };
        let text = std::fs::read_to_string(&path).map_err(|e| {
            self.sources
                .error(rest_loc, format!("cannot read {}: {e}", path.display()))
        })?;
        let file = self.sources.add(path);
        let start = Loc {
            file,
            line: 1,
            col: 1,
        };
        self.out.push(Item::EnterFile(start));
        self.file(file, &text, depth + 1)?;
        self.out.push(Item::LeaveFile(loc));
        Ok(())
    }

    /// Evaluates a `#if` / `#elif` condition.
    fn eval_if(&mut self, rest: &str, rest_loc: Loc) -> Result<bool, Error> {
        let toks = lex(
            rest,
            rest_loc.file,
            rest_loc.line,
            rest_loc.col,
            false,
            &self.sources,
        )?;
        // Replace defined(X) / defined X first, then expand macros.
        let mut pre = Vec::new();
        let mut i = 0;
        while i < toks.len() {
            if toks[i].tok == Tok::Ident("defined".into()) {
                let (name_at, close) = if toks.get(i + 1).map(|t| &t.tok) == Some(&Tok::Punct("("))
                {
                    (i + 2, true)
                } else {
                    (i + 1, false)
                };
                let Some(Tok::Ident(name)) = toks.get(name_at).map(|t| &t.tok) else {
                    return Err(self
                        .sources
                        .error(toks[i].loc, "defined without a macro name"));
                };
                let v = self.macros.contains_key(name) as u128;
                pre.push(Token {
                    tok: Tok::Int(v),
                    loc: toks[i].loc,
                });
                i = name_at + 1;
                if close {
                    if toks.get(i).map(|t| &t.tok) != Some(&Tok::Punct(")")) {
                        return Err(self.sources.error(
                            toks[i.min(toks.len() - 1)].loc,
                            "expected ')' after defined(NAME",
                        ));
                    }
                    i += 1;
                }
            } else {
                pre.push(toks[i].clone());
                i += 1;
            }
        }
        let saved = std::mem::take(&mut self.out);
        for t in pre {
            self.expand(t, &mut Vec::new(), 0)?;
        }
        let expanded = std::mem::replace(&mut self.out, saved);
        let mut toks: Vec<Token> = expanded
            .into_iter()
            .filter_map(|i| match i {
                Item::Token(t) => Some(t),
                _ => None,
            })
            .map(|t| match t.tok {
                // Identifiers left after expansion count as 0, like cpp.
                Tok::Ident(_) | Tok::EscIdent(_) => Token {
                    tok: Tok::Int(0),
                    loc: t.loc,
                },
                _ => t,
            })
            .collect();
        if toks.last().map(|t| &t.tok) != Some(&Tok::Eof) {
            toks.push(Token {
                tok: Tok::Eof,
                loc: rest_loc,
            });
        }
        let mut ev = IfEval {
            toks: &toks,
            pos: 0,
            sources: &self.sources,
            depth: 0,
        };
        let v = ev.ternary()?;
        if ev.toks[ev.pos].tok != Tok::Eof {
            return Err(self.sources.error(
                ev.toks[ev.pos].loc,
                format!(
                    "expected end of #if expression, found {}",
                    ev.toks[ev.pos].tok.describe()
                ),
            ));
        }
        Ok(v != 0)
    }
}

/// Integer evaluation of `#if` expressions (C precedence).
struct IfEval<'t> {
    toks: &'t [Token],
    pos: usize,
    sources: &'t SourceMap,
    /// Nesting of unary operators and parentheses.
    depth: usize,
}

impl IfEval<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].tok
    }

    fn ternary(&mut self) -> Result<i128, Error> {
        let c = self.binary(0)?;
        if *self.peek() == Tok::Punct("?") {
            self.pos += 1;
            let a = self.ternary()?;
            self.expect(":")?;
            let b = self.ternary()?;
            return Ok(if c != 0 { a } else { b });
        }
        Ok(c)
    }

    fn expect(&mut self, p: &'static str) -> Result<(), Error> {
        if *self.peek() == Tok::Punct(p) {
            self.pos += 1;
            Ok(())
        } else {
            let t = &self.toks[self.pos];
            Err(self
                .sources
                .error(t.loc, format!("expected '{p}', found {}", t.tok.describe())))
        }
    }

    fn binary(&mut self, min_prec: u8) -> Result<i128, Error> {
        let mut lhs = self.unary()?;
        while let Tok::Punct(op) = self.peek() {
            let op = *op;
            let prec = match op {
                "||" => 1,
                "&&" => 2,
                "|" => 3,
                "^" => 4,
                "&" => 5,
                "==" | "!=" => 6,
                "<" | ">" | "<=" | ">=" => 7,
                "<<" | ">>" => 8,
                "+" | "-" => 9,
                "*" | "/" | "%" => 10,
                _ => break,
            };
            if prec < min_prec.max(1) {
                break;
            }
            let loc = self.toks[self.pos].loc;
            self.pos += 1;
            let rhs = self.binary(prec + 1)?;
            lhs = match op {
                "||" => ((lhs != 0) || (rhs != 0)) as i128,
                "&&" => ((lhs != 0) && (rhs != 0)) as i128,
                "|" => lhs | rhs,
                "^" => lhs ^ rhs,
                "&" => lhs & rhs,
                "==" => (lhs == rhs) as i128,
                "!=" => (lhs != rhs) as i128,
                "<" => (lhs < rhs) as i128,
                ">" => (lhs > rhs) as i128,
                "<=" => (lhs <= rhs) as i128,
                ">=" => (lhs >= rhs) as i128,
                "<<" => lhs.checked_shl(rhs.clamp(0, 127) as u32).unwrap_or(0),
                ">>" => lhs.checked_shr(rhs.clamp(0, 127) as u32).unwrap_or(0),
                "+" => lhs.wrapping_add(rhs),
                "-" => lhs.wrapping_sub(rhs),
                "*" => lhs.wrapping_mul(rhs),
                "/" | "%" => {
                    if rhs == 0 {
                        return Err(self.sources.error(loc, "division by zero in #if"));
                    }
                    if op == "/" {
                        lhs / rhs
                    } else {
                        lhs % rhs
                    }
                }
                _ => unreachable!("operator list above"),
            };
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<i128, Error> {
        if self.depth >= MAX_EXPANSION_DEPTH {
            let loc = self.toks[self.pos].loc;
            return Err(self.sources.error(loc, "#if expression nested too deeply"));
        }
        self.depth += 1;
        let r = self.unary_inner();
        self.depth -= 1;
        r
    }

    fn unary_inner(&mut self) -> Result<i128, Error> {
        let t = self.toks[self.pos].clone();
        self.pos += 1;
        match t.tok {
            Tok::Punct("!") => Ok((self.unary()? == 0) as i128),
            Tok::Punct("~") => Ok(!self.unary()?),
            Tok::Punct("-") => Ok(self.unary()?.wrapping_neg()),
            Tok::Punct("+") => self.unary(),
            Tok::Punct("(") => {
                let v = self.ternary()?;
                self.expect(")")?;
                Ok(v)
            }
            Tok::Int(v) => Ok(v as i128),
            Tok::Char(v) => Ok(v as i128),
            other => Err(self.sources.error(
                t.loc,
                format!(
                    "expected an integer expression in #if, found {}",
                    other.describe()
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Vec<Tok> {
        let pp = Preprocessor::new(&[], &["FROMCMD=7".to_string()]).unwrap();
        let (items, _, _) = pp.run_text("t.idl".into(), text).unwrap();
        items
            .into_iter()
            .filter_map(|i| match i {
                Item::Token(t) => Some(t.tok),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn conditionals_and_macros() {
        let t = run(
            "#define A 3\n#define B (A + 1)\n#if defined(A) && B == 4\nx B\n#elif 1\ny\n#else\nz\n#endif\n\
             #ifndef A\nw\n#else\nv FROMCMD\n#endif\n#if 0\n#if 1\nq\n#endif\n#elif defined B\nr\n#endif\n",
        );
        assert_eq!(
            t,
            vec![
                Tok::Ident("x".into()),
                Tok::Punct("("),
                Tok::Int(3),
                Tok::Punct("+"),
                Tok::Int(1),
                Tok::Punct(")"),
                Tok::Ident("v".into()),
                Tok::Int(7),
                Tok::Ident("r".into()),
            ]
        );
    }

    #[test]
    fn unterminated_if_is_an_error() {
        let pp = Preprocessor::new(&[], &[]).unwrap();
        let e = pp.run_text("t.idl".into(), "a\n#ifdef X\nb\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.idl:2:1: unterminated conditional directive"
        );
    }

    #[test]
    fn missing_include_is_an_error() {
        let pp = Preprocessor::new(&[], &[]).unwrap();
        let e = pp
            .run_text("t.idl".into(), "\n#include <nothere.idl>\n")
            .unwrap_err();
        assert_eq!(e.line, 2);
        assert!(
            e.message
                .starts_with("cannot find include file nothere.idl"),
            "{e}"
        );
    }
}
