//! `iiopbench lab run`: one lab, one server, one job's client. The run is
//! the engine's (`iiopbench_engine::lab::run`); here are the flags, the
//! bench command line after `--` turned into the job (its output flags
//! passed on to the job's process), and the results file, which names the
//! failure when the run ended before the job wrote any.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use iiopbench_engine::lab::{self, run::LabRun};
use iiopbench_engine::results;
use iiopbench_engine::units::parse_duration;

use super::common::{self, ServerArg};
use crate::programs::ThisBinary;

/// `lab run` options.
#[derive(Debug, Clone, Args)]
pub struct LabRunArgs {
    /// Host names, comma-separated (each becomes a network namespace).
    #[arg(long, default_value = "client,server", value_name = "NAMES")]
    pub hosts: String,
    /// A link and its impairment in both directions:
    /// `A-B:delay=20ms,jitter=2ms,loss=2%,rate=10mbit|t1` (`A-B:none` or
    /// `A-B` for none). Repeatable. With two hosts and no --link, one
    /// unimpaired link joins them.
    #[arg(long = "link", value_name = "A-B:IMPAIRMENT")]
    pub links: Vec<String>,
    /// MTU of every link.
    #[arg(long, default_value_t = 1500, value_name = "N")]
    pub mtu: u32,
    /// The host the bench client runs in (default: the first).
    #[arg(long, value_name = "HOST")]
    pub client_host: Option<String>,
    /// The host the server runs in (default: the second).
    #[arg(long, value_name = "HOST")]
    pub server_host: Option<String>,
    /// Which server to run.
    #[arg(long, value_enum, default_value_t = ServerArg::Ours)]
    pub server: ServerArg,
    /// Port of a vendor server (ours picks a free one).
    #[arg(long, default_value_t = 2809, value_name = "PORT")]
    pub port: u16,
    /// How long to wait for the server's `ready` line.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "120s", value_name = "DURATION")]
    pub ready_timeout: Duration,
    /// Record the self-measurement but run even when it is out of tolerance.
    #[arg(long)]
    pub no_verify: bool,
    /// Write the combined results here (also taken from a `--json` among
    /// the bench arguments).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// The bench command run in the client host, after `--`:
    /// `bench latency --count 1000 …` (`--target` and `--json` are added;
    /// `--baseline-target` for `bench tcp` and `--baseline`).
    #[arg(last = true, required = true, value_name = "BENCH ARGS")]
    pub bench: Vec<String>,
}

/// The output flags of the bench command line its process gets besides
/// its `--json` (which the lab names): `--quiet`, `--csv`, `--hlog`.
pub fn job_output(o: &crate::flags::OutputOpts) -> Vec<String> {
    let mut a = Vec::new();
    if o.quiet {
        a.push("--quiet".to_string());
    }
    for (flag, f) in [("--csv", &o.csv), ("--hlog", &o.hlog)] {
        if let Some(f) = f {
            a.extend([flag.to_string(), f.display().to_string()]);
        }
    }
    a
}

/// `iiopbench lab run`: the results go to `--json` (or a `--json` among
/// the bench arguments), also when the run failed.
pub fn run(o: &LabRunArgs, argv: &[String]) -> anyhow::Result<()> {
    let (job, bench) = crate::cmd::bench::parse_words(&o.bench).map_err(anyhow::Error::msg)?;
    anyhow::ensure!(
        bench.metrics.metrics_listen.is_none(),
        "lab run serves no --metrics-listen (the client runs inside a lab host)"
    );
    let output = bench.output;
    common::require_root_and_signals()?;
    let opts = lab::run::LabRunOpts {
        hosts: o
            .hosts
            .split(',')
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .collect(),
        links: o.links.clone(),
        mtu: o.mtu,
        client_host: o.client_host.clone(),
        server_host: o.server_host.clone(),
        server: o.server.engine(o.port, o.ready_timeout),
        no_verify: o.no_verify,
        job,
    };
    let programs = ThisBinary {
        job_output: job_output(&output),
        ..ThisBinary::new()?
    };
    let LabRun {
        results: mut r,
        measured,
        error,
    } = lab::run::run(
        &opts,
        &common::context(argv, programs),
        &common::Printer { quiet: false },
    )?;
    crate::words::in_results(&mut r);
    let checked = r.check(&bench.thresholds);
    let error = error.map(|e| anyhow::anyhow!(crate::words::flags(&e.to_string())));
    if let Some(f) = o.json.as_ref().or(output.json.as_ref()) {
        if let Err(w) = results::write_atomic(f, &results::to_json(&r)) {
            return Err(match error {
                Some(e) if !measured => e.context(format!("also, writing {}: {w}", f.display())),
                _ => w.into(),
            });
        }
    }
    let verdict = crate::gates::verdict(&checked, true);
    error.map_or(verdict, Err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use iiopbench_engine::programs::{Programs, ServerProcess};
    use std::path::Path;

    /// The processes the lab starts run this binary's own command lines:
    /// every one parses.
    #[test]
    fn the_lab_starts_this_binarys_own_command_lines() {
        let p = ThisBinary {
            exe: "iiopbench".into(),
            connect_timeout: Duration::from_secs(30),
            job_output: job_output(&crate::flags::OutputOpts {
                quiet: true,
                csv: Some("c.csv".into()),
                ..Default::default()
            }),
        };
        let server = ServerProcess {
            ior_file: Some("srv.ior".into()),
            nodelay: false,
            raw_tcp: Some("10.0.0.2:0".into()),
            threads: Some(1),
            spin_limit: Some(Duration::from_millis(1)),
            ..ServerProcess::on("10.0.0.2:0")
        };
        for cmd in [
            p.server(&server),
            p.agent("10.0.0.2:7070", "agent0"),
            p.job(Path::new("job.json"), Path::new("c.json")),
        ] {
            let mut argv = vec![std::ffi::OsString::from("iiopbench")];
            argv.extend(cmd.get_args().map(|a| a.to_os_string()));
            if let Err(e) = <crate::opts::Cli as clap::Parser>::try_parse_from(&argv) {
                panic!("{argv:?}: {}", e.render());
            }
        }
    }
}
