//! `iiopbench serve --idl FILE`: any interface through the dynamic
//! skeleton (`iiop_servers::idl_server`), with the same startup lines as
//! `iiopbench serve` (config, IOR, corbaloc, ready) and the counters at
//! shutdown.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use iiop_giop::transport::server::ServerConfig;
use iiop_idl::{DefKind, Spec};
use iiop_servers::idl_server::{Behaviour, FixedReply, IdlHandler, IdlServer, IdlServerOptions};
use iiop_servers::run::TlsServer;
use serde_json::Value as Json;

use iiopbench_engine::dynamic::{json, load_spec, read_json_arg};

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

/// The interface `--interface` names, or the only one defined.
pub fn pick_interface(spec: &Spec, name: Option<&str>) -> anyhow::Result<iiop_idl::DefId> {
    let all: Vec<(iiop_idl::DefId, String)> = spec
        .interfaces()
        .map(|(id, d)| (id, d.scoped_name.trim_start_matches("::").to_string()))
        .collect();
    match name {
        Some(n) => {
            let n = n.trim_start_matches("::");
            match spec.lookup(n) {
                Some(id) if matches!(spec.def(id).kind, DefKind::Interface(_)) => Ok(id),
                _ => anyhow::bail!(
                    "--interface {n}: no such interface (the IDL has: {})",
                    all.iter()
                        .map(|a| a.1.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        }
        None if all.len() == 1 => Ok(all[0].0),
        None => anyhow::bail!(
            "the IDL defines {} interfaces; choose one with --interface ({})",
            all.len(),
            all.iter()
                .map(|a| a.1.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Parse `--behaviour` against the interface's operations.
pub fn behaviour(s: &str, handler_ops: &IdlHandler, spec: &Spec) -> anyhow::Result<Behaviour> {
    match s.trim() {
        "echo" => Ok(Behaviour::Echo),
        "sink" => Ok(Behaviour::Sink),
        t => {
            let Some(j) = t.strip_prefix("fixed:") else {
                anyhow::bail!("--behaviour {t:?}: echo, sink or fixed:JSON");
            };
            let j = read_json_arg(j)?;
            let Json::Object(per_op) = j else {
                anyhow::bail!("--behaviour fixed: expected {{\"op\": {{\"return\": …}}}}");
            };
            let mut out = HashMap::new();
            for (op, vals) in per_op {
                let Some(sig) = handler_ops.operations().get(&op) else {
                    anyhow::bail!("--behaviour fixed: the interface has no operation {op}");
                };
                let Json::Object(vals) = vals else {
                    anyhow::bail!("--behaviour fixed: {op}: expected an object");
                };
                let mut f = FixedReply::default();
                for (k, v) in vals {
                    if k == "raise" {
                        let id = v.get("_id").and_then(Json::as_str).unwrap_or("");
                        let Some(tc) = sig
                            .raises
                            .iter()
                            .find(|t| t.id() == Some(id) || t.name() == Some(id))
                        else {
                            anyhow::bail!(
                                "--behaviour fixed: {op}.raise: {id:?} is not in its raises list"
                            );
                        };
                        let mut members = v.clone();
                        if let Json::Object(m) = &mut members {
                            m.remove("exception");
                            if tc.id() != Some(id) {
                                m.remove("_id");
                            }
                        }
                        let value = json::from_json(tc, &members, spec)
                            .map_err(|e| anyhow::anyhow!("--behaviour fixed: {op}.raise: {e}"))?;
                        f.raise = Some((tc.clone(), value));
                    } else if k == "return" {
                        f.result =
                            Some(json::from_json(&sig.result, &v, spec).map_err(|e| {
                                anyhow::anyhow!("--behaviour fixed: {op}.return: {e}")
                            })?);
                    } else {
                        let Some(p) = sig.outputs().find(|p| p.name == k) else {
                            anyhow::bail!("--behaviour fixed: {op} has no out/inout parameter {k}");
                        };
                        f.params.insert(
                            k.clone(),
                            json::from_json(&p.tc, &v, spec)
                                .map_err(|e| anyhow::anyhow!("--behaviour fixed: {op}.{k}: {e}"))?,
                        );
                    }
                }
                out.insert(op, f);
            }
            Ok(Behaviour::Fixed(out))
        }
    }
}

/// Build and start the server an `--idl` command line asks for.
pub fn start(
    o: &IdlServeOpts,
    file: &std::path::Path,
    listen: &str,
    threads: usize,
    cpus: Option<Vec<usize>>,
    config: ServerConfig,
    tls: Option<TlsServer>,
) -> anyhow::Result<(IdlServer, String)> {
    let spec = load_spec(file, &o.include)?;
    let iface = pick_interface(&spec, o.interface.as_deref())?;
    let probe =
        IdlHandler::new(&spec, iface, Behaviour::Echo).map_err(|e| anyhow::anyhow!("{e}"))?;
    let b = behaviour(&o.behaviour, &probe, &spec)?;
    let handler = IdlHandler::new(&spec, iface, b).map_err(|e| anyhow::anyhow!("{e}"))?;
    let name = spec
        .def(iface)
        .scoped_name
        .trim_start_matches("::")
        .to_string();
    let srv = IdlServer::start(
        handler,
        name.as_bytes(),
        IdlServerOptions {
            listen: listen.to_string(),
            threads,
            cpus,
            config,
            tls,
        },
    )
    .map_err(|e| anyhow::anyhow!("iiopbench serve --idl: {e}"))?;
    Ok((srv, name))
}

/// `serve --idl`: run until interrupted.
pub fn run(o: &super::ServeOpts, idl: &IdlServeOpts, file: &std::path::Path) -> anyhow::Result<()> {
    let base = crate::cmd::serve::server_options(o)?;
    let (srv, name) = start(
        idl,
        file,
        &base.listen,
        base.threads,
        base.cpus.clone(),
        base.config.clone(),
        base.tls.clone(),
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
    while !iiopbench_engine::interrupt::requested() {
        std::thread::sleep(Duration::from_millis(50));
    }
    let counters = srv.handler().counters().clone();
    srv.stop()?;
    let s = counters.snapshot();
    println!(
        "stats calls={} oneways={} bytes={}",
        s.calls, s.oneways, s.bytes
    );
    Ok(())
}
