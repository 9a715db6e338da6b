//! `iiopbench proxy`: a GIOP-aware proxy in front of one server, which
//! any client can use through the IOR it prints: it points the references
//! it passes back at itself and injects the faults `--fault` names
//! (docs/proxy.md); `--record` keeps both legs of every connection. The
//! proxy is the engine's (`iiopbench_engine::proxy`); here are the flags
//! and the lines printed.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use iiopbench_engine::interop::suite::load_target;
use iiopbench_engine::proxy::{reference_ops_of_idl, Faults, Proxy, ProxyConfig};

/// `iiopbench proxy --help`'s examples.
pub const EXAMPLES: &str = "\
Examples:
  iiopbench proxy --target omni.ior --fault fragment=64,dribble=7 --ior-file via.ior
  iiopbench proxy --target corbaloc:iiop:1.2@127.0.0.1:2809/Bench --fault reorder,delay=5ms --record via.pcapng
  iiopbench proxy --target jacorb.ior --listen 127.0.0.1:3000 --fault close-after=10 --record via.json";

/// Parse `--fault` (one line naming what is wrong with a bad spec).
pub fn parse_faults(s: &str) -> Result<Faults, String> {
    s.parse()
        .map_err(|e: iiopbench_engine::proxy::FaultSpecError| e.to_string())
}

/// Options of `iiopbench proxy`.
#[derive(Debug, Clone, Args)]
pub struct ProxyOpts {
    /// The server to front: `IOR:…`, `corbaloc:…`, a file holding one, or
    /// `-` for standard input.
    #[arg(long, short, value_name = "REF")]
    pub target: String,
    /// Address to listen on (port 0 picks a free port); listeners for the
    /// other endpoints references lead to bind the same address.
    #[arg(long, default_value = "127.0.0.1:0", value_name = "HOST:PORT")]
    pub listen: String,
    /// Faults to inject, e.g. `fragment=64,dribble=7,delay=5ms,reorder,
    /// strip-codesets,close-after=10,message-error-after=10,duplicate=3,
    /// corrupt=5@17`, or `none` (docs/proxy.md).
    #[arg(long, default_value = "none", value_name = "SPEC", value_parser = parse_faults)]
    pub fault: Faults,
    /// Record every message passed, both legs of every connection, as
    /// TCP in a pcapng file; a `.json` name keeps the `pcap` command's
    /// results of it instead.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Also write the IOR through the proxy to this file.
    #[arg(long, value_name = "FILE")]
    pub ior_file: Option<PathBuf>,
    /// IDL file: replies of its operations whose result is one object
    /// reference are rewritten too (bench.idl's are known without it).
    #[arg(long, value_name = "FILE")]
    pub idl: Option<PathBuf>,
}

/// Run until interrupted; then the counts.
pub fn run(o: &ProxyOpts) -> anyhow::Result<()> {
    let target = load_target(&o.target)?;
    let mut cfg = ProxyConfig::new(target, o.fault.clone());
    cfg.listen = o.listen.clone();
    cfg.record = o.record.clone();
    if let Some(idl) = &o.idl {
        let spec = iiop_idl::parse_file(idl, &iiop_idl::Options::default())
            .map_err(|e| anyhow::anyhow!("{}: {e}", idl.display()))?;
        cfg.extra_reference_ops = reference_ops_of_idl(&spec);
    }
    let upstream = cfg
        .target
        .iiop_profile()
        .map(|p| format!("{}:{}", p.host, p.port))
        .unwrap_or_default();
    let p = Proxy::start(cfg).map_err(|e| anyhow::anyhow!("iiopbench proxy: {e}"))?;
    let ior = p.ior().to_string();
    if let Some(f) = &o.ior_file {
        iiopbench_engine::results::write_atomic(f, &format!("{ior}\n"))?;
    }
    let mut out = crate::stdout::Stdout;
    writeln!(out, "config proxy={} target={upstream}", p.addr())?;
    writeln!(out, "config faults={}", o.fault)?;
    if let Some(r) = &o.record {
        writeln!(out, "config record={}", r.display())?;
    }
    writeln!(out, "{ior}")?;
    if let Some(url) = p.corbaloc() {
        writeln!(out, "corbaloc {url}")?;
    }
    writeln!(out, "ready")?;
    out.flush()?;
    iiopbench_engine::interrupt::wait();
    let st = p
        .stop()
        .map_err(|e| anyhow::anyhow!("iiopbench proxy: {e}"))?;
    outln!("{}", st.summary());
    Ok(())
}
