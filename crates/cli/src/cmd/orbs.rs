//! `iiopbench orbs`: the vendor ORBs of vendors/ — list what is
//! installed and built, install, build, start a server, run a client. Each
//! ORB is driven through its scripts in `scripts/orbs/<orb>/`
//! (`status`, `install`, `build`, `start`, `client`), which follow
//! docs/vendor-protocol.md; this module only finds and runs them.

use std::path::PathBuf;

use clap::Subcommand;
use std::process::Command;

use crate::table::Table;

use iiopbench_engine::orbs::{script, split_listen, status, ORBS};

/// `iiopbench orbs …`.
#[derive(Debug, Subcommand)]
pub enum OrbsCommand {
    /// Show each vendor ORB and whether it is installed and built here.
    #[command(after_help = crate::examples::ORBS_LIST)]
    List,
    /// Install what the ORB needs from its ecosystem's registry.
    #[command(after_help = crate::examples::ORBS_INSTALL)]
    Install { name: String },
    /// Build the ORB's bench.idl server and client.
    #[command(after_help = crate::examples::ORBS_BUILD)]
    Build { name: String },
    /// Run the ORB's server in the foreground; prints its IOR, then `ready`.
    #[command(after_help = crate::examples::ORBS_START)]
    Start {
        /// The ORB (`iiopbench orbs list`).
        name: String,
        /// Address to listen on (port 0 picks a free port).
        #[arg(long, default_value = "127.0.0.1:0", value_name = "HOST:PORT")]
        listen: String,
        /// Also write the server's IOR to this file.
        #[arg(long, value_name = "FILE")]
        ior_file: Option<PathBuf>,
    },
    /// Our client and server against the vendor ORBs' and raw TCP, side by
    /// side in one run: client vs client, server vs server, both, the
    /// physical limit, latency, buffered and coalesced oneways.
    #[command(after_help = crate::examples::ORBS_COMPARE)]
    Compare(Box<crate::cmd::orbs_compare::CompareOpts>),
    /// Run the ORB's client (arguments as docs/vendor-protocol.md says).
    #[command(after_help = crate::examples::ORBS_CLIENT)]
    Client {
        name: String,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// `orbs list`.
pub fn list() -> anyhow::Result<()> {
    let mut t =
        Table::new(["orb", "installed", "built", "what", "detail"]).left_align(&[1, 2, 3, 4]);
    for (name, what) in ORBS {
        let s = status(name);
        let yn = |b: bool| if b { "yes" } else { "no" };
        t.row([name, yn(s.installed), yn(s.built), what, &s.detail]);
    }
    out!("{}", t.render());
    Ok(())
}

/// Run an action script to completion with inherited stdio.
pub fn run_script(orb: &str, action: &str, args: &[String]) -> anyhow::Result<()> {
    let s = script(orb, action)?;
    let st = Command::new(&s)
        .args(args)
        .status()
        .map_err(|e| anyhow::anyhow!("running {}: {e}", s.display()))?;
    anyhow::ensure!(st.success(), "{orb} {action} failed ({st})");
    Ok(())
}

/// Replace this process with an action script (`start`, `client`), so a
/// signal sent to us reaches the ORB process directly.
pub fn exec_script(orb: &str, action: &str, args: &[String]) -> anyhow::Error {
    use std::os::unix::process::CommandExt;
    match script(orb, action) {
        Ok(s) => {
            let e = Command::new(&s).args(args).exec();
            anyhow::anyhow!("cannot run {}: {e}", s.display())
        }
        Err(e) => e.into(),
    }
}

/// Run `orbs …` (`argv`: the command line, which `compare` records).
pub fn run(c: &OrbsCommand, argv: &[String]) -> anyhow::Result<()> {
    match c {
        OrbsCommand::Compare(o) => crate::cmd::orbs_compare::run(o, argv),
        OrbsCommand::List => list(),
        OrbsCommand::Install { name } => run_script(name, "install", &[]),
        OrbsCommand::Build { name } => run_script(name, "build", &[]),
        OrbsCommand::Start {
            name,
            listen,
            ior_file,
        } => {
            let (host, port) = split_listen(listen)?;
            // The start scripts take host and port apart
            // (docs/vendor-protocol.md).
            let mut args = vec![
                "--host".to_string(),
                host,
                "--port".into(),
                port.to_string(),
            ];
            if let Some(f) = ior_file {
                args.extend(["--ior-file".into(), f.display().to_string()]);
            }
            Err(exec_script(name, "start", &args))
        }
        OrbsCommand::Client { name, args } => Err(exec_script(name, "client", args)),
    }
}
