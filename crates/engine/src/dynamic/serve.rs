//! Serving any interface of an IDL file through the dynamic skeleton
//! ([`super::server`]), as `iiopbench serve --idl` does: the
//! interface chosen, the replies' behaviour (`echo`, `sink`, or fixed
//! replies given as JSON, docs/json-mapping.md) checked against its
//! operations, and the server started.

use std::collections::HashMap;
use std::path::PathBuf;

use super::server::{Behaviour, FixedReply, IdlHandler, IdlServer, IdlServerOptions};
use iiop_idl::{DefKind, Spec};
use serde_json::Value as Json;

use super::{json, load_spec};

/// `fixed:`'s JSON: inline, or `@FILE` read from a file.
fn read_json_arg(s: &str) -> crate::error::Result<Json> {
    let text = match s.strip_prefix('@') {
        Some(f) => std::fs::read_to_string(f)
            .map_err(|e| crate::error::fail!(Job, "`behaviour` fixed: reading {f}: {e}"))?,
        None => s.to_string(),
    };
    serde_json::from_str(&text)
        .map_err(|e| crate::error::fail!(Job, "`behaviour` fixed: not JSON: {e}"))
}

/// Which interface of which IDL file to serve, and how it answers.
#[derive(Debug, Clone)]
pub struct IdlServeOpts {
    /// The IDL file.
    pub idl: PathBuf,
    /// Directories searched for `#include`d IDL files.
    pub include: Vec<PathBuf>,
    /// The interface (`Module::Interface`); `None` when the IDL defines
    /// only one.
    pub interface: Option<String>,
    /// `echo` (outputs copied from inputs of the same type, else
    /// defaults), `sink` (defaults), or `fixed:JSON` / `fixed:@FILE` with
    /// `{"op": {"return": …, "<out param>": …}}`.
    pub behaviour: String,
}

/// The interface `interface` names, or the only one defined.
pub fn pick_interface(spec: &Spec, name: Option<&str>) -> crate::error::Result<iiop_idl::DefId> {
    let all: Vec<(iiop_idl::DefId, String)> = spec
        .interfaces()
        .map(|(id, d)| (id, d.scoped_name.trim_start_matches("::").to_string()))
        .collect();
    match name {
        Some(n) => {
            let n = n.trim_start_matches("::");
            match spec.lookup(n) {
                Some(id) if matches!(spec.def(id).kind, DefKind::Interface(_)) => Ok(id),
                _ => crate::error::bail!(
                    Job,
                    "`interface` {n}: no such interface (the IDL has: {})",
                    all.iter()
                        .map(|a| a.1.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        }
        None if all.len() == 1 => Ok(all[0].0),
        None => crate::error::bail!(
            Job,
            "the IDL defines {} interfaces; choose one with `interface` ({})",
            all.len(),
            all.iter()
                .map(|a| a.1.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Parse a `behaviour` against the interface's operations.
pub fn behaviour(
    s: &str,
    handler_ops: &IdlHandler,
    spec: &Spec,
) -> crate::error::Result<Behaviour> {
    match s.trim() {
        "echo" => Ok(Behaviour::Echo),
        "sink" => Ok(Behaviour::Sink),
        t => {
            let Some(j) = t.strip_prefix("fixed:") else {
                crate::error::bail!(Job, "`behaviour` {t:?}: echo, sink or fixed:JSON");
            };
            let j = read_json_arg(j)?;
            let Json::Object(per_op) = j else {
                crate::error::bail!(
                    Job,
                    "`behaviour` fixed: expected {{\"op\": {{\"return\": …}}}}"
                );
            };
            let mut out = HashMap::new();
            for (op, vals) in per_op {
                let Some(sig) = handler_ops.operations().get(&op) else {
                    crate::error::bail!(
                        Job,
                        "`behaviour` fixed: the interface has no operation {op}"
                    );
                };
                let Json::Object(vals) = vals else {
                    crate::error::bail!(Job, "`behaviour` fixed: {op}: expected an object");
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
                            crate::error::bail!(
                                Job,
                                "`behaviour` fixed: {op}.raise: {id:?} is not in its raises list"
                            );
                        };
                        let mut members = v.clone();
                        if let Json::Object(m) = &mut members {
                            m.remove("exception");
                            if tc.id() != Some(id) {
                                m.remove("_id");
                            }
                        }
                        let value = json::from_json(tc, &members, spec).map_err(|e| {
                            crate::error::fail!(Job, "`behaviour` fixed: {op}.raise: {e}")
                        })?;
                        f.raise = Some((tc.clone(), value));
                    } else if k == "return" {
                        f.result = Some(json::from_json(&sig.result, &v, spec).map_err(|e| {
                            crate::error::fail!(Job, "`behaviour` fixed: {op}.return: {e}")
                        })?);
                    } else {
                        let Some(p) = sig.outputs().find(|p| p.name == k) else {
                            crate::error::bail!(
                                Job,
                                "`behaviour` fixed: {op} has no out/inout parameter {k}"
                            );
                        };
                        f.params.insert(
                            k.clone(),
                            json::from_json(&p.tc, &v, spec).map_err(|e| {
                                crate::error::fail!(Job, "`behaviour` fixed: {op}.{k}: {e}")
                            })?,
                        );
                    }
                }
                out.insert(op, f);
            }
            Ok(Behaviour::Fixed(out))
        }
    }
}

/// Build the server `o` asks for and start it as `server` says: the
/// server, and the interface's name (`Module::Interface`), which is also
/// its object key.
pub fn start(
    o: &IdlServeOpts,
    server: IdlServerOptions,
) -> crate::error::Result<(IdlServer, String)> {
    let spec = load_spec(&o.idl, &o.include)?;
    let iface = pick_interface(&spec, o.interface.as_deref())?;
    let probe = IdlHandler::new(&spec, iface, Behaviour::Echo)
        .map_err(|e| crate::error::fail!(Job, "{e}"))?;
    let b = behaviour(&o.behaviour, &probe, &spec)?;
    let handler = IdlHandler::new(&spec, iface, b).map_err(|e| crate::error::fail!(Job, "{e}"))?;
    let name = spec
        .def(iface)
        .scoped_name
        .trim_start_matches("::")
        .to_string();
    let srv = IdlServer::start(handler, name.as_bytes(), server)
        .map_err(|e| crate::error::fail!(Local, "serving the IDL: {e}"))?;
    Ok((srv, name))
}
