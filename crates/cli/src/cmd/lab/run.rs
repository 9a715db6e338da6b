//! `iiopbench lab run`: one lab, one server, one bench client. The run is
//! the engine's (`iiopbench_engine::lab::run`); here are the flags, the
//! executable the lab runs ([`own_exe`]), the self-check's lines
//! ([`print_reports`]) and the results file, which names the failure when
//! the run ended before the bench wrote any.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use iiopbench_engine::lab::{self, run::LabRun, Verified};
use iiopbench_engine::results;
use iiopbench_engine::units::parse_duration;

use super::ServerArg;

/// `lab run` options.
#[derive(Debug, Clone, Args)]
pub struct RunOpts {
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
    #[arg(long, value_parser = parse_duration, default_value = "120s", value_name = "DURATION")]
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

impl RunOpts {
    /// As the engine's options, with this binary as server and client.
    pub fn engine(&self) -> anyhow::Result<lab::run::RunOpts> {
        Ok(lab::run::RunOpts {
            hosts: self
                .hosts
                .split(',')
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty())
                .collect(),
            links: self.links.clone(),
            mtu: self.mtu,
            client_host: self.client_host.clone(),
            server_host: self.server_host.clone(),
            server: self.server.engine(self.port, self.ready_timeout)?,
            no_verify: self.no_verify,
            json: self.json.clone(),
            bench: self.bench.clone(),
        })
    }
}

/// The executable run as client and server: `$IIOPBENCH_EXE` (tests, which
/// run the CLI in-process) or this process's own.
pub fn own_exe() -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os("IIOPBENCH_EXE") {
        return Ok(PathBuf::from(p));
    }
    std::env::current_exe().context("finding the iiopbench executable")
}

/// Prints one line per link: configured vs measured.
pub fn print_reports(v: &Verified) {
    for r in &v.reports {
        println!(
            "lab link {}<->{}: added RTT {:.2} ms (configured {:.2}), loss {:.2}%/{:.2}% \
             (configured {:.2}%/{:.2}%), rate {}/{}, delay by {}",
            r.a,
            r.b,
            r.rtt_added_ms,
            r.rtt_configured_ms,
            r.a_to_b.loss * 100.0,
            r.b_to_a.loss * 100.0,
            r.a_to_b.configured.loss * 100.0,
            r.b_to_a.configured.loss * 100.0,
            fmt_rate(r.a_to_b.rate_bps),
            fmt_rate(r.b_to_a.rate_bps),
            serde_json::to_value(r.a_to_b.mechanisms.delay)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
        );
    }
    if !v.violations.is_empty() {
        println!("lab self-check FAILED: {}", v.violations.join("; "));
    }
}

fn fmt_rate(r: Option<f64>) -> String {
    r.map(|b| format!("{:.3} Mbit/s", b / 1e6))
        .unwrap_or_else(|| "uncapped".into())
}

/// `iiopbench lab run`: the results go to `--json` (or a `--json` among
/// the bench arguments), also when the run failed.
pub fn run(o: &RunOpts) -> anyhow::Result<()> {
    super::require_root_and_signals()?;
    let LabRun {
        results: r,
        measured,
        error,
        json,
    } = lab::run::run(&o.engine()?, &super::Printer { quiet: false })?;
    if let Some(f) = &json {
        if let Err(w) = results::write_atomic(f, &results::to_json(&r)) {
            return Err(match error {
                Some(e) if !measured => e.context(format!("also, writing {}: {w}", f.display())),
                _ => w,
            });
        }
    }
    error.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The engine's own tests check the client's command line; here, that
    /// this binary parses it.
    #[test]
    fn the_client_gets_todays_spellings_of_its_server() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let (ior, json) = (Path::new("srv.ior"), Path::new("c.json"));
        for (bench, raw) in [
            (&["tcp", "--count", "5"][..], Some("10.0.0.2:4321")),
            (&["throughput", "--baseline"][..], Some("10.0.0.2:9")),
            (&["latency"][..], None),
        ] {
            let mut full = vec![std::ffi::OsString::from("iiopbench")];
            full.extend(lab::run::client_args(&s(bench), ior, raw, json));
            if let Err(e) = <crate::opts::Cli as clap::Parser>::try_parse_from(&full) {
                panic!("{bench:?}: {}", e.render());
            }
        }
    }
}
