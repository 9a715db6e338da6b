//! `iiopbench interop`: conformance of one server ([`suite`]) and the
//! ORB × ORB matrix ([`matrix`]) — every available client against every
//! available server — with their human tables and the JSON they write
//! ([`report`]; `docs/results-schema.md`, section "interop").

pub mod matrix;
pub mod report;
pub mod suite;

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use iiop_servers::run::{RunningServer, ServerOptions};

use suite::{Suite, SuiteOptions, Verdict};

use iiopbench_engine::units::parse_duration;

/// `iiopbench interop` options.
#[derive(Debug, Clone, Args)]
pub struct InteropOpts {
    /// The server to test: `IOR:…`, `corbaloc:…`, a file holding one, or
    /// `-` for standard input. Without it, our own server is started
    /// in-process on 127.0.0.1 and tested.
    #[arg(long, short, value_name = "REF", conflicts_with = "matrix")]
    pub target: Option<String>,
    /// Fewer sizes and versions (a smoke test).
    #[arg(long)]
    pub quick: bool,
    /// Run every available client against every available server.
    #[arg(long)]
    pub matrix: bool,
    /// Matrix: also run each vendor client through a plain
    /// `corbaloc:iiop:HOST:PORT/Bench` (GIOP 1.0, no code set negotiation),
    /// as extra rows `<orb>@corbaloc`.
    #[arg(long, requires = "matrix")]
    pub corbaloc: bool,
    /// ORBs in the matrix (`ours`, `omniorb`, `jacorb`, `omniorbpy`, `tao`).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "ours,omniorb,jacorb,omniorbpy",
        value_name = "NAMES"
    )]
    pub orbs: Vec<String>,
    /// Write the results as JSON (docs/results-schema.md, "interop").
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Timeout of every request our client makes (raised for a slow peer,
    /// docs/interop.md).
    #[arg(long, value_parser = parse_duration, default_value = "20s", value_name = "DURATION")]
    pub timeout: Duration,
    /// Matrix: how long a vendor server may take to print `ready`.
    #[arg(long, value_parser = parse_duration, default_value = "120s", value_name = "DURATION")]
    pub ready_timeout: Duration,
    /// Time cap of our whole suite, and in the matrix of each vendor
    /// client's whole conformance run.
    #[arg(long, value_parser = parse_duration, default_value = "120s", value_name = "DURATION")]
    pub max_duration: Duration,
    /// Only the summary line (and failures) on stdout.
    #[arg(long, short)]
    pub quiet: bool,
}

impl InteropOpts {
    fn suite_options(&self) -> SuiteOptions {
        SuiteOptions {
            quick: self.quick,
            request_timeout: self.timeout.max(Duration::from_millis(1)),
            time_limit: self.max_duration.max(Duration::from_secs(1)),
        }
    }
}

/// A current-thread runtime for the client side.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

/// Our server in-process, on 127.0.0.1 and a free port, two threads.
pub fn embedded_server() -> anyhow::Result<RunningServer> {
    RunningServer::start(ServerOptions {
        listen: "127.0.0.1:0".into(),
        threads: 2,
        ..ServerOptions::default()
    })
    .map_err(|e| anyhow::anyhow!("starting the embedded server: {e}"))
}

/// Run the command; an error when any check (or cell) failed.
pub fn run(o: &InteropOpts) -> anyhow::Result<()> {
    if o.matrix {
        return matrix::run(o);
    }
    let rt = runtime()?;
    let (server, ior, kind, reference) = match &o.target {
        Some(t) => {
            let ior = suite::load_target(t)?;
            let kind = if t.starts_with("corbaloc:") {
                "corbaloc"
            } else {
                "ior"
            };
            (None, ior, kind, t.clone())
        }
        None => {
            let s = embedded_server()?;
            let ior = s.refs().ior.clone();
            if !o.quiet {
                eprintln!(
                    "no --target: testing our own server, started in-process on {}",
                    s.addr()
                );
            }
            (Some(s), ior, "embedded", String::new())
        }
    };
    let started_at = iiopbench_engine::results::now_rfc3339();
    let suite = Suite::new(ior.clone(), o.suite_options())?;
    let rep = rt.block_on(suite.run());
    drop(server);
    // With `--json -` the JSON owns stdout; the human output goes to stderr.
    let human = if !o.quiet {
        report::suite_table(&rep.checks)
    } else {
        report::failures_only(&rep.checks)
    } + &rep.skip_lines()
        + &format!("{} ({:.1} s)\n", rep.summary(), rep.seconds);
    if o.json.as_deref().is_some_and(|p| p.as_os_str() == "-") {
        eprint!("{human}");
    } else {
        print!("{human}");
    }
    if let Some(path) = &o.json {
        let r = report::suite_results(&rep, &ior, kind, &reference, &started_at, o.quick);
        iiopbench_engine::results::write_atomic(path, &iiopbench_engine::results::to_json(&r))?;
    }
    let failed = rep.count(Verdict::Fail);
    anyhow::ensure!(failed == 0, "interop: {failed} check(s) failed");
    Ok(())
}
