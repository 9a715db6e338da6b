//! `iiopbench serve --idl FILE`: any interface through the dynamic
//! skeleton, with the same startup lines as `iiopbench serve` (config,
//! IOR, corbaloc, ready) and the counters at shutdown. Building the server
//! is the engine's (`iiopbench_engine::dynamic::serve`); here are the
//! flags and those lines.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use iiopbench_engine::dynamic::server::IdlServerOptions;

use iiopbench_engine::dynamic::serve;

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

/// `serve --idl`: run until interrupted.
pub fn run(o: &super::ServeOpts, idl: &IdlServeOpts, file: &std::path::Path) -> anyhow::Result<()> {
    let base = crate::cmd::serve::server_options(o)?;
    let (srv, name) = serve::start(
        &serve::IdlServeOpts {
            idl: file.to_path_buf(),
            include: idl.include.clone(),
            interface: idl.interface.clone(),
            behaviour: idl.behaviour.clone(),
        },
        IdlServerOptions {
            listen: base.listen.clone(),
            threads: base.threads,
            cpus: base.cpus.clone(),
            config: base.config.clone(),
            tls: base.tls.clone(),
            model: base.model,
            polling: base.polling,
        },
    )?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "config orb=iiopbench {}", env!("CARGO_PKG_VERSION"))?;
    writeln!(out, "config skeleton=idl")?;
    writeln!(out, "config interface={name}")?;
    writeln!(
        out,
        "config behaviour={}",
        idl.behaviour.split(':').next().unwrap_or("")
    )?;
    writeln!(out, "config threads={}", base.threads)?;
    super::print_model(&mut out, &base)?;
    super::print_tls(&mut out, base.tls.as_ref())?;
    let ior = srv.ior().to_string();
    if let Some(f) = &o.ior_file {
        iiopbench_engine::results::write_atomic(f, &format!("{ior}\n"))?;
    }
    writeln!(out, "{ior}")?;
    let addr = srv.addr();
    let scheme = if base.tls.is_some() { "ssliop" } else { "iiop" };
    writeln!(
        out,
        "corbaloc {name} corbaloc:{scheme}:1.2@{}:{}/{name}",
        addr.ip(),
        addr.port()
    )?;
    writeln!(out, "ready")?;
    out.flush()?;
    drop(out);
    iiopbench_engine::interrupt::wait();
    let counters = srv.handler().counters().clone();
    srv.stop()?;
    let s = counters.snapshot();
    println!(
        "stats calls={} oneways={} bytes={}",
        s.calls, s.oneways, s.bytes
    );
    Ok(())
}
