//! Lexer: IDL source text to tokens with file:line:column positions.
//!
//! Handles `//` and `/* */` comments, identifiers (an escaped identifier
//! `_name` is returned without its underscore and marked so it never
//! matches a keyword), integer literals (decimal, octal, hex), floating
//! and fixed-point (`1.5d`) literals, character and string literals with
//! all IDL escapes, wide literals (`L'x'`, `L"x"`) and punctuation.
//! A `#` first on a line starts a preprocessor directive: the lexer
//! returns the directive name and the raw rest of the logical line
//! (backslash-newline joined), which the preprocessor interprets.

use crate::error::{Loc, SourceMap};
use crate::Error;

/// One lexical token.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// An identifier or keyword.
    Ident(String),
    /// An escaped identifier (`_interface`), without the underscore; never a keyword.
    EscIdent(String),
    /// An integer literal.
    Int(u128),
    /// A floating-point literal.
    Float(f64),
    /// A fixed-point literal (`123.45d`), digits as written without the suffix.
    Fixed(String),
    /// A character literal (code point).
    Char(u32),
    /// A wide character literal.
    WChar(u32),
    /// A string literal (escapes resolved).
    Str(String),
    /// A wide string literal.
    WStr(String),
    /// Punctuation or operator.
    Punct(&'static str),
    /// A preprocessor directive: its name (`include`, `pragma`, ...) and
    /// the raw rest of the line, with the location where the rest starts.
    Directive {
        /// Directive name, e.g. `ifndef`.
        name: String,
        /// The rest of the logical line.
        rest: String,
        /// Where `rest` starts.
        rest_loc: Loc,
    },
    /// End of input.
    Eof,
}

impl Tok {
    /// How the token reads in a diagnostic.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("'{s}'"),
            Tok::EscIdent(s) => format!("'_{s}'"),
            Tok::Int(v) => format!("integer {v}"),
            Tok::Float(v) => format!("number {v}"),
            Tok::Fixed(v) => format!("fixed-point literal {v}d"),
            Tok::Char(_) | Tok::WChar(_) => "character literal".to_string(),
            Tok::Str(_) | Tok::WStr(_) => "string literal".to_string(),
            Tok::Punct(p) => format!("'{p}'"),
            Tok::Directive { name, .. } => format!("'#{name}'"),
            Tok::Eof => "end of file".to_string(),
        }
    }
}

/// A token and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// Where it starts.
    pub loc: Loc,
}

const PUNCTS: &[&str] = &[
    "::", "<<", ">>", "&&", "||", "==", "!=", "<=", ">=", ";", "{", "}", "(", ")", "<", ">", ",",
    ":", "=", "+", "-", "*", "/", "%", "~", "|", "^", "&", "[", "]", "!", "?", "#",
];

/// Splits `text` (file `file`, starting at `line`:`col`) into tokens, the
/// last being [`Tok::Eof`]. `directives` is false when lexing the rest of
/// a directive line (a `#` there is punctuation).
pub fn lex(
    text: &str,
    file: u32,
    line: u32,
    col: u32,
    directives: bool,
    sources: &SourceMap,
) -> Result<Vec<Token>, Error> {
    let mut lx = Lexer {
        chars: text.chars().collect(),
        pos: 0,
        loc: Loc { file, line, col },
        at_line_start: true,
        sources,
    };
    let mut out = Vec::new();
    loop {
        let t = lx.next_token(directives)?;
        let eof = t.tok == Tok::Eof;
        out.push(t);
        if eof {
            return Ok(out);
        }
    }
}

struct Lexer<'a> {
    chars: Vec<char>,
    pos: usize,
    loc: Loc,
    at_line_start: bool,
    sources: &'a SourceMap,
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.get(self.pos).copied()?;
        self.pos += 1;
        if c == '\n' {
            self.loc.line += 1;
            self.loc.col = 1;
            self.at_line_start = true;
        } else {
            self.loc.col += 1;
        }
        Some(c)
    }

    fn err(&self, loc: Loc, msg: impl Into<String>) -> Error {
        self.sources.error(loc, msg)
    }

    /// Skips whitespace and comments.
    fn skip_trivia(&mut self) -> Result<(), Error> {
        loop {
            match (self.peek(0), self.peek(1)) {
                (Some(c), _) if c.is_whitespace() => {
                    self.bump();
                }
                (Some('\\'), Some('\n')) => {
                    self.bump();
                    self.bump();
                }
                (Some('/'), Some('/')) => {
                    while let Some(c) = self.peek(0) {
                        if c == '\n' {
                            break;
                        }
                        self.bump();
                    }
                }
                (Some('/'), Some('*')) => {
                    let start = self.loc;
                    self.bump();
                    self.bump();
                    loop {
                        match (self.peek(0), self.peek(1)) {
                            (Some('*'), Some('/')) => {
                                self.bump();
                                self.bump();
                                break;
                            }
                            (Some(_), _) => {
                                self.bump();
                            }
                            (None, _) => return Err(self.err(start, "unterminated comment")),
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn next_token(&mut self, directives: bool) -> Result<Token, Error> {
        self.skip_trivia()?;
        let loc = self.loc;
        let Some(c) = self.peek(0) else {
            return Ok(Token { tok: Tok::Eof, loc });
        };
        if c == '#' && directives && self.at_line_start {
            return self.directive(loc);
        }
        self.at_line_start = false;
        let tok = if c == 'L' && matches!(self.peek(1), Some('\'') | Some('"')) {
            self.bump();
            if self.peek(0) == Some('\'') {
                Tok::WChar(self.char_lit()?)
            } else {
                Tok::WStr(self.string_lit()?)
            }
        } else if c.is_ascii_alphabetic() || c == '_' {
            let mut s = String::new();
            while let Some(c) = self.peek(0) {
                if c.is_ascii_alphanumeric() || c == '_' {
                    s.push(c);
                    self.bump();
                } else {
                    break;
                }
            }
            match s.strip_prefix('_') {
                // Escaping is an IDL notion; directive lines keep names as written.
                Some(rest) if !rest.is_empty() && directives => Tok::EscIdent(rest.to_string()),
                _ => Tok::Ident(s),
            }
        } else if c.is_ascii_digit()
            || (c == '.' && self.peek(1).is_some_and(|d| d.is_ascii_digit()))
        {
            self.number(loc)?
        } else if c == '\'' {
            Tok::Char(self.char_lit()?)
        } else if c == '"' {
            Tok::Str(self.string_lit()?)
        } else {
            let mut found = None;
            for p in PUNCTS {
                let pc: Vec<char> = p.chars().collect();
                if pc
                    .iter()
                    .enumerate()
                    .all(|(i, ch)| self.peek(i) == Some(*ch))
                {
                    found = Some(*p);
                    break;
                }
            }
            match found {
                Some(p) => {
                    for _ in 0..p.len() {
                        self.bump();
                    }
                    Tok::Punct(p)
                }
                None => return Err(self.err(loc, format!("unexpected character {c:?}"))),
            }
        };
        Ok(Token { tok, loc })
    }

    fn directive(&mut self, loc: Loc) -> Result<Token, Error> {
        self.bump(); // '#'
        while matches!(self.peek(0), Some(' ') | Some('\t')) {
            self.bump();
        }
        let mut name = String::new();
        while let Some(c) = self.peek(0) {
            if c.is_ascii_alphanumeric() || c == '_' {
                name.push(c);
                self.bump();
            } else {
                break;
            }
        }
        while matches!(self.peek(0), Some(' ') | Some('\t')) {
            self.bump();
        }
        let rest_loc = self.loc;
        let mut rest = String::new();
        while let Some(c) = self.peek(0) {
            if c == '\n' {
                break;
            }
            if c == '\\' && self.peek(1) == Some('\n') {
                self.bump();
                self.bump();
                rest.push(' ');
                continue;
            }
            if c == '\\' && self.peek(1) == Some('\r') && self.peek(2) == Some('\n') {
                self.bump();
                self.bump();
                self.bump();
                rest.push(' ');
                continue;
            }
            // A block comment that starts on the directive line may span lines.
            if c == '/' && self.peek(1) == Some('*') {
                let start = self.loc;
                self.bump();
                self.bump();
                loop {
                    match (self.peek(0), self.peek(1)) {
                        (Some('*'), Some('/')) => {
                            self.bump();
                            self.bump();
                            break;
                        }
                        (Some(_), _) => {
                            self.bump();
                        }
                        (None, _) => return Err(self.err(start, "unterminated comment")),
                    }
                }
                rest.push(' ');
                continue;
            }
            if c == '/' && self.peek(1) == Some('/') {
                while self.peek(0).is_some_and(|c| c != '\n') {
                    self.bump();
                }
                break;
            }
            rest.push(c);
            self.bump();
        }
        let rest = rest.trim_end().trim_end_matches('\r').to_string();
        Ok(Token {
            tok: Tok::Directive {
                name,
                rest,
                rest_loc,
            },
            loc,
        })
    }

    fn number(&mut self, loc: Loc) -> Result<Tok, Error> {
        let mut s = String::new();
        if self.peek(0) == Some('0') && matches!(self.peek(1), Some('x') | Some('X')) {
            self.bump();
            self.bump();
            while let Some(c) = self.peek(0) {
                if c.is_ascii_hexdigit() {
                    s.push(c);
                    self.bump();
                } else {
                    break;
                }
            }
            return u128::from_str_radix(&s, 16)
                .map(Tok::Int)
                .map_err(|_| self.err(loc, format!("bad hexadecimal literal 0x{s}")));
        }
        let mut is_float = false;
        while let Some(c) = self.peek(0) {
            if c.is_ascii_digit() {
                s.push(c);
                self.bump();
            } else if c == '.' && !is_float {
                is_float = true;
                s.push(c);
                self.bump();
            } else {
                break;
            }
        }
        if matches!(self.peek(0), Some('d') | Some('D')) {
            self.bump();
            return Ok(Tok::Fixed(s));
        }
        if matches!(self.peek(0), Some('e') | Some('E')) {
            is_float = true;
            s.push('e');
            self.bump();
            if let Some(c @ ('+' | '-')) = self.peek(0) {
                s.push(c);
                self.bump();
            }
            let before = s.len();
            while let Some(c) = self.peek(0) {
                if c.is_ascii_digit() {
                    s.push(c);
                    self.bump();
                } else {
                    break;
                }
            }
            if s.len() == before {
                return Err(self.err(loc, format!("exponent without digits in {s}")));
            }
        }
        if matches!(self.peek(0), Some('f') | Some('F')) && is_float {
            // Tolerated C habit.
            self.bump();
        }
        if is_float {
            return s
                .parse::<f64>()
                .map(Tok::Float)
                .map_err(|_| self.err(loc, format!("bad floating-point literal {s}")));
        }
        let (digits, radix) = if s.len() > 1 && s.starts_with('0') {
            (&s[1..], 8)
        } else {
            (&s[..], 10)
        };
        u128::from_str_radix(digits, radix)
            .map(Tok::Int)
            .map_err(|_| self.err(loc, format!("bad integer literal {s}")))
    }

    fn escape(&mut self) -> Result<u32, Error> {
        let loc = self.loc;
        self.bump(); // backslash
        let Some(c) = self.bump() else {
            return Err(self.err(loc, "escape at end of file"));
        };
        let v = match c {
            'n' => 10,
            't' => 9,
            'v' => 11,
            'b' => 8,
            'r' => 13,
            'f' => 12,
            'a' => 7,
            '\\' => 92,
            '?' => 63,
            '\'' => 39,
            '"' => 34,
            '0'..='7' => {
                let mut v = c.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match self.peek(0).and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            self.bump();
                        }
                        None => break,
                    }
                }
                v
            }
            'x' | 'u' => {
                let max = if c == 'x' { 2 } else { 4 };
                let mut v = 0;
                let mut n = 0;
                while n < max {
                    match self.peek(0).and_then(|d| d.to_digit(16)) {
                        Some(d) => {
                            v = v * 16 + d;
                            self.bump();
                            n += 1;
                        }
                        None => break,
                    }
                }
                if n == 0 {
                    return Err(self.err(loc, format!("\\{c} escape without hex digits")));
                }
                v
            }
            other => return Err(self.err(loc, format!("unknown escape \\{other}"))),
        };
        Ok(v)
    }

    fn char_lit(&mut self) -> Result<u32, Error> {
        let loc = self.loc;
        self.bump(); // '
        let v = match self.peek(0) {
            Some('\\') => self.escape()?,
            Some('\'') | Some('\n') | None => {
                return Err(self.err(loc, "empty or unterminated character literal"))
            }
            Some(c) => {
                self.bump();
                c as u32
            }
        };
        if self.peek(0) != Some('\'') {
            return Err(self.err(loc, "unterminated character literal"));
        }
        self.bump();
        Ok(v)
    }

    fn string_lit(&mut self) -> Result<String, Error> {
        let loc = self.loc;
        self.bump(); // "
        let mut s = String::new();
        loop {
            match self.peek(0) {
                Some('"') => {
                    self.bump();
                    return Ok(s);
                }
                Some('\\') => {
                    let v = self.escape()?;
                    if v == 0 {
                        return Err(self.err(loc, "string literal contains a NUL character"));
                    }
                    s.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                }
                Some('\n') | None => return Err(self.err(loc, "unterminated string literal")),
                Some(c) => {
                    s.push(c);
                    self.bump();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        let sm = SourceMap::default();
        lex(s, 0, 1, 1, true, &sm)
            .unwrap()
            .into_iter()
            .map(|t| t.tok)
            .collect()
    }

    #[test]
    fn literals_and_punct() {
        assert_eq!(
            toks("x 0x1F 017 12 1.5e2 2.5d 'a' '\\n' L'b' \"a\\tb\" :: << _long"),
            vec![
                Tok::Ident("x".into()),
                Tok::Int(31),
                Tok::Int(15),
                Tok::Int(12),
                Tok::Float(150.0),
                Tok::Fixed("2.5".into()),
                Tok::Char(97),
                Tok::Char(10),
                Tok::WChar(98),
                Tok::Str("a\tb".into()),
                Tok::Punct("::"),
                Tok::Punct("<<"),
                Tok::EscIdent("long".into()),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn directives_and_positions() {
        let sm = SourceMap::default();
        let t = lex(
            "/* c\n */ a\n  #define X \\\n 5 // c\nb",
            0,
            1,
            1,
            true,
            &sm,
        )
        .unwrap();
        assert_eq!(
            t[0].loc,
            Loc {
                file: 0,
                line: 2,
                col: 5
            }
        );
        assert_eq!(
            t[1].tok,
            Tok::Directive {
                name: "define".into(),
                rest: "X   5".into(),
                rest_loc: Loc {
                    file: 0,
                    line: 3,
                    col: 11
                }
            }
        );
        assert_eq!(
            t[2].loc,
            Loc {
                file: 0,
                line: 5,
                col: 1
            }
        );
    }

    #[test]
    fn errors_have_positions() {
        let sm = SourceMap {
            files: vec!["a.idl".into()],
        };
        let e = lex("x\n  \"abc", 0, 1, 1, true, &sm).unwrap_err();
        assert_eq!(e.to_string(), "a.idl:2:3: unterminated string literal");
    }
}
