//! The `--idl` flags of `iiopbench serve`: any interface through the
//! dynamic skeleton (the run and its startup lines are `serve`'s; building
//! the server is the engine's, `iiopbench_engine::dynamic::serve`).

use std::path::PathBuf;

use clap::Args;

/// The `--idl` options of `serve`.
#[derive(Debug, Clone, Args, Default)]
pub struct IdlServeOpts {
    /// Serve an interface of this IDL file through the dynamic skeleton
    /// instead of bench.idl.
    #[arg(long, value_name = "FILE")]
    pub idl: Option<PathBuf>,
    /// Directory searched for `#include`d IDL files (repeatable).
    #[arg(short = 'I', long = "include", value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// The interface to serve (`Module::Interface`); needed when the IDL
    /// defines more than one.
    #[arg(long, value_name = "NAME")]
    pub interface: Option<String>,
    /// `echo` (outputs copied from inputs of the same type, else
    /// defaults), `sink` (defaults), or `fixed:JSON` / `fixed:@FILE` with
    /// `{"op": {"return": …, "<out param>": …}}`.
    #[arg(long, default_value = "echo", value_name = "BEHAVIOUR")]
    pub behaviour: String,
}
