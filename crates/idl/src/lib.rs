//! `iiop-idl`: an OMG IDL front end.
//!
//! Reads `.idl` files (with `#include`, conditionals and pragmas) and
//! produces a typed model — every module, interface, operation, type and
//! constant with its scoped name and repository id — so that iiopbench can
//! invoke and serve any interface from its IDL without generated code.
//!
//! Modules, in pipeline order:
//! - [`lexer`]: text to tokens with file:line:column positions.
//! - [`preprocess`]: `#include`, `#if…`, `#define`, pragmas passed on.
//! - `parser` (private): recursive descent building the model, with
//!   constant evaluation and repository ids.
//! - `resolve` (private): the IDL name lookup rules.
//! - [`model`]: the result, [`Spec`], with [`Spec::operations`] and
//!   [`Spec::find_operation`].
//! - [`typecode`]: [`Spec::to_typecode`], the model's types as
//!   `iiop_cdr` TypeCodes for the dynamic codec.
//!
//! What is modelled: modules (reopened modules merge), interfaces
//! (abstract, local, multiple inheritance, forward declarations),
//! operations (oneway, in/out/inout, raises, context), attributes (as
//! `_get_`/`_set_` operations, with raises/getraises/setraises), structs,
//! unions, enums, exceptions, typedefs (arrays included), constants with
//! evaluated values, native, valuetypes and eventtypes (state members,
//! factories, operations), value boxes, `#pragma prefix/version/ID`,
//! `typeprefix`/`typeid`. Skipped with a [`Note`]: CCM `component`,
//! `home`, `porttype`, `connector`, and `import`. Unknown pragmas are
//! ignored with a note.
//!
//! ```no_run
//! let opts = iiop_idl::Options { include_dirs: vec!["/usr/share/idl/omniORB".into()], ..Default::default() };
//! let spec = iiop_idl::parse_file("fixtures/idl/bench.idl", &opts).unwrap();
//! let op = spec.find_operation("Bench::Perf", "echo_long").unwrap();
//! assert_eq!(spec.type_name(&op.result), "::Bench::LongSeq");
//! ```

mod error;
pub mod lexer;
pub mod model;
mod parser;
pub mod preprocess;
mod resolve;
pub mod typecode;

use std::path::{Path, PathBuf};

pub use error::{Error, Loc, Note, SourceMap};
pub use model::*;

use lexer::{Tok, Token};
use preprocess::{Item, Preprocessor};

/// Parse options: the equivalent of an IDL compiler's `-I` and `-D`.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Directories searched for `#include` files, in order.
    pub include_dirs: Vec<PathBuf>,
    /// Macros predefined as by `-DNAME` or `-DNAME=value`.
    pub defines: Vec<String>,
}

/// Parses the IDL file at `path` and everything it includes.
pub fn parse_file(path: impl AsRef<Path>, opts: &Options) -> Result<Spec, Error> {
    let pp = Preprocessor::new(&opts.include_dirs, &opts.defines)?;
    let (items, sources, notes) = pp.run_file(path.as_ref())?;
    finish(items, sources, notes)
}

/// Parses IDL `text` as if read from a file named `name` (quoted includes
/// are looked up relative to `name`'s directory, then the search path).
pub fn parse_str(name: &str, text: &str, opts: &Options) -> Result<Spec, Error> {
    let pp = Preprocessor::new(&opts.include_dirs, &opts.defines)?;
    let (items, sources, notes) = pp.run_text(PathBuf::from(name), text)?;
    finish(items, sources, notes)
}

fn finish(mut items: Vec<Item>, sources: SourceMap, notes: Vec<Note>) -> Result<Spec, Error> {
    let end = items
        .iter()
        .rev()
        .find_map(|i| match i {
            Item::Token(t) => Some(t.loc),
            _ => None,
        })
        .unwrap_or(Loc {
            file: 1,
            line: 1,
            col: 1,
        });
    items.push(Item::Token(Token {
        tok: Tok::Eof,
        loc: end,
    }));
    let spec = Spec {
        sources,
        notes,
        ..Spec::default()
    };
    parser::Parser::new(items, spec).parse()
}
