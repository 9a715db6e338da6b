//! One operation of any server invoked from its IDL (`iiopbench call`: the
//! DII, made practical). Arguments come as JSON (docs/json-mapping.md),
//! the request goes through `iiop_giop`'s `Client::invoke` (forwards
//! followed), and the reply comes back as JSON: `{"return": …, "<out
//! param>": …}`, or the exception — user exceptions by name with their
//! members, system exceptions by name, minor (hex, with vendor) and
//! completion.

use std::path::PathBuf;

use iiop_bench_idl::bench::ops::CALLBACK_ID;
use iiop_bench_idl::callback::CALLBACK_KEY;
use iiop_bench_idl::run::{RunningServer, ServerOptions};
use iiop_giop::{ReplyStatus, ResponseMode, Target};
use iiop_transport::client::Client;
use iiop_transport::naming::resolve_target;

use super::gen::GenSpec;
use super::JsonArgs;
use crate::error::{bail, fail, Error, Result};
use crate::options::Sockets;
use crate::target::TargetOpts;

/// What to call, with what, on which server.
#[derive(Debug, Clone, Default)]
pub struct CallOpts {
    /// The IDL file declaring the operation.
    pub idl: PathBuf,
    /// Directories searched for `#include`d IDL files.
    pub include: Vec<PathBuf>,
    /// The operation, `Module::Interface::op` (attributes: `_get_x`).
    pub op: String,
    /// In/inout arguments as JSON: an object by parameter name or an
    /// array in order. `None`: none.
    pub args: Option<JsonArgs>,
    /// Generate the arguments not given; `None`: every in/inout parameter
    /// must be in `args`.
    pub gen: Option<GenSpec>,
    /// The server (`target: None`: our reference server, bench.idl,
    /// embedded in this process) and how to reach it.
    pub target: TargetOpts,
    pub socket: Sockets,
}

/// Invoke the operation: the reply as JSON, and whether it was
/// NO_EXCEPTION (a user or system exception is a reply too, as JSON).
pub fn call(o: &CallOpts) -> Result<(serde_json::Value, bool)> {
    // One call through the runtime client (it follows forwards): waiting
    // on read or spinning is refused rather than ignored.
    o.target.validate(false)?;
    let spec = super::load_spec(&o.idl, &o.include)?;
    let found = super::find_op(&spec, &o.op)?;
    let sig = &found.sig;
    let args_json = o.args.as_ref().map(JsonArgs::value).transpose()?;
    if let Some(g) = &o.gen {
        g.validate()?;
    }
    // With callbacks offered, object references not given are ours (the
    // reference needs the connection: filled in once it is open).
    let callbacks = o
        .target
        .bidir
        .then(|| callback_params(sig, args_json.as_ref()));
    let given = match &callbacks {
        None => Some(super::arguments(
            sig,
            args_json.as_ref(),
            &spec,
            o.gen.as_ref(),
        )?),
        Some(_) => None,
    };
    // Without a target: our reference server (bench.idl), embedded.
    let embedded = match &o.target.target {
        Some(_) => None,
        None => Some(
            RunningServer::start(ServerOptions {
                skeleton: o.target.skeleton,
                threads: 1,
                ..ServerOptions::default()
            })
            .map_err(|e| fail!(Local, "embedded server: {e}"))?,
        ),
    };
    let reference = match &embedded {
        Some(srv) => srv.refs().ior.to_string(),
        None => o.target.target.clone().unwrap_or_default(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let client = Client::new(crate::target::client_config(&o.target, &o.socket)?);
        let parsed = Target::load(&reference).map_err(|e| Error::job(format!("`target`: {e}")))?;
        let ior = resolve_target(&client, &parsed)
            .await
            .map_err(|e| fail!(Target, "resolving the target: {e}"))?;
        let args = match (given, &callbacks) {
            (Some(args), _) => args,
            (None, None) => Vec::new(),
            (None, Some(names)) => {
                // The pooled connection the call goes on, offered for
                // callbacks: our Callback's reference names it.
                let route = client
                    .route(&ior)
                    .await
                    .map_err(|e| fail!(Target, "connecting to the target: {e}"))?;
                let cb = route
                    .connection
                    .callback_reference(CALLBACK_ID, CALLBACK_KEY)
                    .ok_or_else(|| fail!(Local, "the connection was not offered for callbacks"))?;
                let filled = with_callbacks(sig, args_json, names, &cb.to_string())?;
                super::arguments(sig, Some(&filled), &spec, o.gen.as_ref())?
            }
        };
        let mode = if sig.oneway {
            ResponseMode::Oneway
        } else {
            ResponseMode::Twoway
        };
        let (reply, opts) = client
            .invoke_reading(&ior, &sig.name, mode, |w| super::marshal(sig, &args, w))
            .await
            .map_err(|e| fail!(Target, "{} on {}: {e}", sig.name, found.interface))?;
        let Some(reply) = reply else {
            // A oneway has no reply: a `_non_existent` after it on the same
            // connection makes sure it left (and was read) before we exit.
            client
                .invoke(&ior, "_non_existent", ResponseMode::Twoway, |_| Ok(()))
                .await
                .map_err(|e| fail!(Target, "_non_existent after the oneway {}: {e}", sig.name))?;
            return Ok((serde_json::json!({"oneway": true}), true));
        };
        // The reply reads with the code sets negotiated on the connection
        // that carried it (after a forward, not the one `ior` routes to).
        let mut r = reply.body.reader(opts);
        match reply.header.status {
            ReplyStatus::NoException => Ok((super::decode_reply(sig, &mut r)?, true)),
            ReplyStatus::UserException => Ok((super::decode_user_exception(sig, &mut r)?, false)),
            ReplyStatus::SystemException => {
                let e = reply
                    .system_exception()
                    .map_err(|e| fail!(Target, "system exception reply: {e}"))?;
                Ok((super::system_exception_json(&e), false))
            }
            other => bail!(Target, "unexpected reply status {other:?}"),
        }
    })
}

/// The in/inout parameters of `sig` that are object references and that
/// `args` does not give: with callbacks offered, our Callback object.
fn callback_params(sig: &super::server::OpSig, args: Option<&serde_json::Value>) -> Vec<String> {
    let inputs: Vec<_> = sig.inputs().collect();
    inputs
        .iter()
        .enumerate()
        .filter(|(_, p)| p.tc.unalias().kind().is_interface_like())
        .filter(|&(i, p)| match args {
            None | Some(serde_json::Value::Null) => true,
            Some(serde_json::Value::Object(o)) => !o.contains_key(&p.name),
            Some(serde_json::Value::Array(a)) => i >= a.len(),
            // One value for the one parameter.
            Some(_) => inputs.len() > 1,
        })
        .map(|(_, p)| p.name.clone())
        .collect()
}

/// `args` as an object by parameter name, with `ior` (our Callback
/// object's reference) for each parameter in `names`.
fn with_callbacks(
    sig: &super::server::OpSig,
    args: Option<serde_json::Value>,
    names: &[String],
    ior: &str,
) -> Result<serde_json::Value> {
    let inputs: Vec<_> = sig.inputs().collect();
    let mut m = match args {
        None | Some(serde_json::Value::Null) => serde_json::Map::new(),
        Some(serde_json::Value::Object(o)) => o,
        Some(serde_json::Value::Array(a)) => inputs
            .iter()
            .zip(a)
            .map(|(p, v)| (p.name.clone(), v))
            .collect(),
        Some(v) if names.is_empty() => return Ok(v),
        Some(v) => match inputs.first() {
            Some(p) if inputs.len() == 1 => [(p.name.clone(), v)].into_iter().collect(),
            _ => bail!(
                Job,
                "`args`: an object by parameter name or an array in order"
            ),
        },
    };
    for n in names {
        m.insert(n.clone(), serde_json::Value::String(ior.to_string()));
    }
    Ok(serde_json::Value::Object(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callbacks_fill_the_object_references_not_given() {
        let spec = crate::dynamic::load_spec(
            std::path::Path::new(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../fixtures/idl/bench.idl"
            )),
            &[],
        )
        .unwrap();
        let found = crate::dynamic::find_op(&spec, "Bench::Perf::call_back").unwrap();
        let sig = &found.sig;
        let n = serde_json::json!({"n": 41});
        let names = callback_params(sig, Some(&n));
        assert_eq!(names, ["cb"]);
        let filled = with_callbacks(sig, Some(n), &names, "IOR:00").unwrap();
        assert_eq!(filled, serde_json::json!({"n": 41, "cb": "IOR:00"}));
        // Given in order, or by name: nothing to fill.
        let given = serde_json::json!(["IOR:01", 41]);
        assert!(callback_params(sig, Some(&given)).is_empty());
        let filled = with_callbacks(sig, Some(given), &[], "IOR:00").unwrap();
        assert_eq!(filled, serde_json::json!({"cb": "IOR:01", "n": 41}));
        assert_eq!(callback_params(sig, None), ["cb"]);
    }
}
