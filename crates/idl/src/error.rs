//! Source positions and the one error type of the front end.
//!
//! Every diagnostic carries the file, 1-based line and 1-based column of
//! the token that caused it, and prints like a compiler:
//! `path/to/file.idl:12:5: expected ';', found 'interface'`.

use std::fmt;
use std::path::PathBuf;

/// A position in a source file: an index into the file table of the
/// [`SourceMap`], and 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Loc {
    /// Index into [`SourceMap::files`].
    pub file: u32,
    /// 1-based line.
    pub line: u32,
    /// 1-based column (in characters).
    pub col: u32,
}

/// The files read while parsing one specification, in the order they
/// were first opened (the main file is index 0).
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    /// Paths as they were opened (the main file as given, included files
    /// as found on the search path).
    pub files: Vec<PathBuf>,
}

impl SourceMap {
    /// Registers a file and returns its index.
    pub fn add(&mut self, path: PathBuf) -> u32 {
        self.files.push(path);
        (self.files.len() - 1) as u32
    }

    /// The path of file `index`, or `<unknown>`.
    pub fn path(&self, index: u32) -> String {
        self.files
            .get(index as usize)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "<unknown>".to_string())
    }

    /// Renders a location as `file:line:col`.
    pub fn render(&self, loc: Loc) -> String {
        format!("{}:{}:{}", self.path(loc.file), loc.line, loc.col)
    }

    /// Builds an [`Error`] at `loc`.
    pub fn error(&self, loc: Loc, message: impl Into<String>) -> Error {
        Error {
            file: self.path(loc.file),
            line: loc.line,
            col: loc.col,
            message: message.into(),
        }
    }
}

/// A fatal error in the IDL input (or an include file that cannot be
/// read): where it is and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Error {
    /// File the error is in.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
    /// What is wrong, e.g. `expected ';', found 'interface'`.
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.col, self.message
        )
    }
}

/// A non-fatal remark: an ignored pragma, a skipped construct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// `file:line:col` of the construct.
    pub at: String,
    /// What was ignored or skipped and why.
    pub message: String,
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: note: {}", self.at, self.message)
    }
}
