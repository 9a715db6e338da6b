//! `iiopbench call`: invoke one operation of any server from its IDL
//! (the DII, made practical). The call is the engine's
//! (`iiopbench_engine::dynamic::call`); here are the flags, and the reply
//! printed as JSON on stdout: `{"return": …, "<out param>": …}`, or the
//! exception. Exit status 0 for a normal reply, 1 otherwise.

use std::path::PathBuf;

use clap::Args;
use iiopbench_engine::dynamic::call;

use crate::flags::{SocketArgs, TargetArgs};

/// `call` options.
#[derive(Debug, Clone, Args)]
pub struct CallOpts {
    /// The IDL file declaring the operation.
    #[arg(long, value_name = "FILE")]
    pub idl: PathBuf,
    /// Directory searched for `#include`d IDL files (repeatable).
    #[arg(short = 'I', long = "include", value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// The operation, `Module::Interface::op` (attributes: `_get_x`).
    #[arg(long, value_name = "INTERFACE::OP")]
    pub op: String,
    /// In/inout arguments as JSON: an object by parameter name or an
    /// array in order; `@FILE` reads a file. Default: none.
    #[arg(long, value_name = "JSON")]
    pub args: Option<String>,
    /// Generate the arguments not given (see `bench latency --gen`);
    /// without it every in/inout parameter must be in --args.
    #[arg(long, value_name = "SPEC")]
    pub gen: Option<String>,
    /// Print the JSON on one line instead of pretty-printed.
    #[arg(long)]
    pub compact: bool,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub socket: SocketArgs,
}

impl CallOpts {
    /// As the engine's options (`--args` read as JSON, `--gen` parsed).
    pub fn engine(&self) -> anyhow::Result<call::CallOpts> {
        Ok(call::CallOpts {
            idl: self.idl.clone(),
            include: self.include.clone(),
            op: self.op.clone(),
            args: self
                .args
                .as_deref()
                .map(crate::flags::idl_args)
                .transpose()?,
            gen: self
                .gen
                .as_deref()
                .map(iiopbench_engine::dynamic::GenSpec::parse)
                .transpose()
                .map_err(|e| anyhow::anyhow!("{e}"))?,
            target: self.target.engine(),
            socket: self.socket.engine(),
        })
    }
}

/// Run `call` and print; exit status 0 for a normal reply, 1 for an
/// exception or a failure.
pub fn run(o: &CallOpts) -> anyhow::Result<()> {
    let (j, ok) = call::call(&o.engine()?)?;
    let text = if o.compact {
        serde_json::to_string(&j)?
    } else {
        serde_json::to_string_pretty(&j)?
    };
    outln!("{text}");
    anyhow::ensure!(ok, "{} raised an exception", o.op);
    Ok(())
}
