//! `iiopbench call`: invoke one operation of any server from its IDL
//! (the DII, made practical). Arguments come as JSON (docs/json-mapping.md),
//! the request goes through `iiop_giop`'s `Client::invoke` (forwards
//! followed), and the result prints as JSON on stdout:
//! `{"return": …, "<out param>": …}`, or the exception — user exceptions by
//! name with their members, system exceptions by name, minor (hex, with
//! vendor) and completion. Exit status 0 for a normal reply, 1 otherwise.

use std::path::PathBuf;

use clap::Args;
use iiop_giop::transport::client::Client;
use iiop_giop::transport::naming::resolve_target;
use iiop_giop::{ReplyStatus, ResponseMode, Target};
use iiop_servers::run::{RunningServer, ServerOptions};

use iiopbench_engine::dynamic::{self, gen::GenSpec};

use crate::opts::{SocketArgs, TargetArgs};

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

/// Run `call`: the printed JSON, and whether the reply was NO_EXCEPTION.
pub fn call(o: &CallOpts) -> anyhow::Result<(serde_json::Value, bool)> {
    // One call through the runtime client (it follows forwards):
    // `--wait-strategy read` or `spin` is refused rather than ignored.
    o.target.waiting.engine().resolve(false, "unknown")?;
    let spec = dynamic::load_spec(&o.idl, &o.include)?;
    let found = dynamic::find_op(&spec, &o.op)?;
    let sig = &found.sig;
    let args_json = o.args.as_deref().map(dynamic::read_json_arg).transpose()?;
    let gen = o.gen.as_deref().map(GenSpec::parse).transpose()?;
    let args = dynamic::arguments(sig, args_json.as_ref(), &spec, gen.as_ref())?;
    // Without --target: our reference server (bench.idl), embedded.
    let embedded = match &o.target.target {
        Some(_) => None,
        None => Some(
            RunningServer::start(ServerOptions {
                skeleton: o.target.skeleton.skeleton(),
                threads: 1,
                ..ServerOptions::default()
            })
            .map_err(|e| anyhow::anyhow!("embedded server: {e}"))?,
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
        let client = Client::new(iiopbench_engine::target::client_config(
            &o.target.engine(),
            &o.socket.engine(),
        )?);
        let parsed = Target::load(&reference).map_err(|e| anyhow::anyhow!("--target: {e}"))?;
        let ior = resolve_target(&client, &parsed)
            .await
            .map_err(|e| anyhow::anyhow!("resolving the target: {e}"))?;
        let mode = if sig.oneway {
            ResponseMode::Oneway
        } else {
            ResponseMode::Twoway
        };
        let reply = client
            .invoke(&ior, &sig.name, mode, |w| dynamic::marshal(sig, &args, w))
            .await
            .map_err(|e| anyhow::anyhow!("{} on {}: {e}", sig.name, found.interface))?;
        let Some(reply) = reply else {
            // A oneway has no reply: a `_non_existent` after it on the same
            // connection makes sure it left (and was read) before we exit.
            client
                .invoke(&ior, "_non_existent", ResponseMode::Twoway, |_| Ok(()))
                .await
                .map_err(|e| anyhow::anyhow!("_non_existent after the oneway {}: {e}", sig.name))?;
            return Ok((serde_json::json!({"oneway": true}), true));
        };
        // Reply bodies decode with the code sets negotiated on the
        // connection the reference routes to.
        let opts = match client.route(&ior).await {
            Ok(route) => route.connection.options(),
            Err(_) => iiop_cdr::Options::default(),
        };
        let mut r = reply.body.reader(opts);
        match reply.header.status {
            ReplyStatus::NoException => Ok((dynamic::decode_reply(sig, &mut r)?, true)),
            ReplyStatus::UserException => Ok((dynamic::decode_user_exception(sig, &mut r)?, false)),
            ReplyStatus::SystemException => {
                let e = reply
                    .system_exception()
                    .map_err(|e| anyhow::anyhow!("system exception reply: {e}"))?;
                Ok((dynamic::system_exception_json(&e), false))
            }
            other => anyhow::bail!("unexpected reply status {other:?}"),
        }
    })
}

/// Run `call` and print; exit status 0 for a normal reply, 1 for an
/// exception or a failure.
pub fn run(o: &CallOpts) -> anyhow::Result<()> {
    let (j, ok) = call(o)?;
    let text = if o.compact {
        serde_json::to_string(&j)?
    } else {
        serde_json::to_string_pretty(&j)?
    };
    println!("{text}");
    anyhow::ensure!(ok, "{} raised an exception", o.op);
    Ok(())
}
