//! What the `lab` commands share: which server runs, the signal
//! cooperation of this process, the printer of the lab's news and
//! self-measurement, and the context a lab run is given.

use std::sync::Arc;
use std::time::Duration;

use clap::ValueEnum;
use iiopbench_engine::lab::{self, LabServer, LabSink, ServerOpts, Verified};
use iiopbench_engine::run_context::RunContext;

use crate::programs::ThisBinary;

/// Which server runs in the server host(s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ServerArg {
    /// `iiopbench serve` (our reference server).
    Ours,
    /// omniORB's bench server (`scripts/orbs/omniorb/start`).
    Omniorb,
    /// JacORB's bench server (`scripts/orbs/jacorb/start`).
    Jacorb,
}

impl ServerArg {
    /// The engine's server options: this server, `port` (a vendor's) and
    /// `ready_timeout`.
    pub fn engine(self, port: u16, ready_timeout: Duration) -> ServerOpts {
        ServerOpts {
            kind: match self {
                ServerArg::Ours => LabServer::Ours,
                ServerArg::Omniorb => LabServer::Omniorb,
                ServerArg::Jacorb => LabServer::Jacorb,
            },
            port,
            ready_timeout,
        }
    }
}

/// Installs the signal cooperation described in the module doc: the lab
/// crate's handler (SIGHUP and a fallback), then the CLI's flag handler
/// again for SIGINT/SIGTERM, and a watchdog for interrupted runs.
pub fn install_signals() -> anyhow::Result<()> {
    iiop_lab::install_cleanup_handler()?;
    iiopbench_engine::interrupt::install();
    static WATCHDOG: std::sync::Once = std::sync::Once::new();
    WATCHDOG.call_once(|| {
        let _ = std::thread::Builder::new()
            .name("lab-watchdog".into())
            .spawn(|| {
                while !iiopbench_engine::interrupt::requested() {
                    std::thread::sleep(Duration::from_millis(100));
                }
                std::thread::sleep(Duration::from_secs(15));
                eprintln!("iiopbench lab: interrupted run did not end in 15 s; removing the lab");
                iiop_lab::remove_all_labs();
                std::process::exit(130);
            });
    });
    Ok(())
}

/// Root check ([`lab::require_root`]), then the signal cooperation of
/// [`install_signals`].
pub fn require_root_and_signals() -> anyhow::Result<()> {
    lab::require_root()?;
    install_signals()
}

/// What a lab command prints while the engine runs it: the self-check's
/// lines and the headings on stdout, the news on stderr (none with
/// `quiet`).
#[derive(Debug, Clone, Copy)]
pub struct Printer {
    pub quiet: bool,
}

impl LabSink for Printer {
    fn verified(&self, v: &Verified) {
        print_reports(v);
    }

    fn heading(&self, line: &str) {
        outln!("{line}");
    }

    fn note(&self, line: &str) {
        if !self.quiet {
            eprintln!("{line}");
        }
    }
}

/// Prints one line per link: configured vs measured.
pub fn print_reports(v: &Verified) {
    for r in &v.reports {
        outln!(
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
        outln!("lab self-check FAILED: {}", v.violations.join("; "));
    }
}

fn fmt_rate(r: Option<f64>) -> String {
    r.map(|b| format!("{:.3} Mbit/s", b / 1e6))
        .unwrap_or_else(|| "uncapped".into())
}

/// The context of a lab run: `argv` recorded, this binary's programs
/// (`programs` says how its job's processes write their output).
pub fn context(argv: &[String], programs: ThisBinary) -> RunContext {
    RunContext::new()
        .with_command(argv.to_vec())
        .with_programs(Arc::new(programs))
}
