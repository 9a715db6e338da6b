//! `iiopbench interop`: conformance of one server and the ORB × ORB
//! matrix — every available client against every available server. The
//! suite, the matrix and the JSON they write are the engine's
//! (`iiopbench_engine::interop`); here are the flags and the tables
//! ([`report`]).

pub mod html;
pub mod junit;
pub mod report;

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::flags::TlsArgs;

use iiopbench_engine::interop::classify::{self, Roles};
use iiopbench_engine::interop::{self, matrix};
use iiopbench_engine::progress::{CaseSink, Progress, ProgressSink};
use iiopbench_engine::proxy::Faults;
use iiopbench_engine::results;
use iiopbench_engine::units::{parse_duration, parse_size};

/// `--timeout` when not given.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20);
/// `--max-duration` when not given.
const DEFAULT_MAX_DURATION: Duration = Duration::from_secs(120);

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
    /// ORBs in the matrix (`ours`, `omniorb`, `jacorb`, `omniorbpy`, `tao`),
    /// and servers of ours answering as told: `ours-frag64`,
    /// `ours-frag1024`, `ours-frag16k` (fragmented replies),
    /// `ours-forward` (short keys forwarded).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "ours,ours-frag64,ours-frag1024,ours-frag16k,ours-forward,omniorb,jacorb,omniorbpy",
        value_name = "NAMES"
    )]
    pub orbs: Vec<String>,
    /// Write the results as JSON (docs/results-schema.md, "interop").
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Timeout of every request our client makes [default: 20s, which
    /// calibration may raise for a slow peer up to 3x; a value given here
    /// bounds every request as given unless --raise-limits]
    /// (docs/interop.md).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, value_name = "DURATION")]
    pub timeout: Option<Duration>,
    /// Matrix: how long a vendor server may take to print `ready`.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "120s", value_name = "DURATION")]
    pub ready_timeout: Duration,
    /// Time cap of our whole suite, and in the matrix of each vendor
    /// client's whole conformance run [default: 120s, which calibration
    /// may raise for a slow peer up to 3x; a value given here stays as
    /// given unless --raise-limits].
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, value_name = "DURATION")]
    pub max_duration: Option<Duration>,
    /// Let the suite's calibration raise a --timeout or --max-duration
    /// given here for a slow peer (to at most 3x).
    #[arg(long)]
    pub raise_limits: bool,
    /// Only the summary line (and failures) on stdout.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Run through a GIOP proxy in this process that injects these faults
    /// (docs/proxy.md): `fragment=64,dribble=7`, `reorder`, `none`, …;
    /// with --matrix, one in front of every server.
    #[arg(long, value_name = "SPEC", value_parser = crate::cmd::proxy::parse_faults)]
    pub via_proxy: Option<Faults>,
    /// With --via-proxy: record what the proxy passes, both legs, as
    /// pcapng (a `.json` name keeps the `pcap` command's results instead).
    #[arg(
        long,
        value_name = "FILE",
        requires = "via_proxy",
        conflicts_with = "matrix"
    )]
    pub record: Option<PathBuf>,
    /// With --matrix --via-proxy: one recording per cell in this
    /// directory, linked from the --html page.
    #[arg(long, value_name = "DIR", requires_all = ["via_proxy", "matrix"])]
    pub record_dir: Option<PathBuf>,
    /// JUnit XML of the checks, for CI: one test case per check, skips as
    /// skipped, each failure's class (failed, peer's bug) and rule in its
    /// message; with --matrix one test suite per cell.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// With --matrix: one HTML page of client × server × GIOP version,
    /// each cell passed / failed / peer's bug / spec-legal, linked to its
    /// checks and to its bytes where recorded.
    #[arg(long, value_name = "FILE", requires = "matrix")]
    pub html: Option<PathBuf>,
    /// The server's configured maximum message size, counted as omniORB's
    /// giopMaxMsgSize and `serve --max-message-size` count it (bytes after
    /// the 12-byte GIOP header): adds checks that a request just below it
    /// is echoed and one above it, whole or in Fragments each below it,
    /// gets a system exception, MessageError or a close, never a hang,
    /// and the server goes on serving (docs/interop.md). Without it those
    /// checks are skipped.
    #[arg(long, value_parser = parse_size, value_name = "SIZE", conflicts_with = "matrix")]
    pub peer_max_message_size: Option<u64>,
}

impl InteropOpts {
    /// The suite's options in the engine.
    fn engine(&self) -> interop::InteropOpts {
        interop::InteropOpts {
            target: self.target.clone(),
            quick: self.quick,
            timeout: self.timeout.unwrap_or(DEFAULT_TIMEOUT),
            max_duration: self.max_duration.unwrap_or(DEFAULT_MAX_DURATION),
            timeout_given: self.timeout.is_some(),
            max_duration_given: self.max_duration.is_some(),
            raise_limits: self.raise_limits,
            tls: self.tls.engine(),
            progress: if self.quiet {
                Progress::none()
            } else {
                Progress::to(Lines {
                    stdout: self.matrix,
                })
            },
            via_proxy: self.via_proxy.clone(),
            record: self.record.clone(),
            peer_max_message_size: self.peer_max_message_size,
        }
    }

    /// The matrix's options in the engine.
    fn matrix(&self) -> matrix::InteropMatrixOpts {
        matrix::InteropMatrixOpts {
            suite: self.engine(),
            orbs: self.orbs.clone(),
            corbaloc: self.corbaloc,
            ready_timeout: self.ready_timeout,
            record_dir: self.record_dir.clone(),
        }
    }
}

/// News of a run, one line each: on stdout in the matrix (it is the
/// matrix's running commentary), else on stderr (stdout is the table's).
#[derive(Debug, Clone, Copy)]
struct Lines {
    stdout: bool,
}

impl ProgressSink for Lines {
    fn case(&self, _label: &str) -> Box<dyn CaseSink> {
        Box::new(NoSpinner)
    }

    fn note(&self, line: &str) {
        if self.stdout {
            outln!("{line}");
        } else {
            eprintln!("{line}");
        }
    }
}

/// Cases of an interop run are not drawn: their news lines say enough.
struct NoSpinner;

impl CaseSink for NoSpinner {
    fn done(self: Box<Self>) {}
}

/// Run the command; an error when any check (or cell) failed.
pub fn run(o: &InteropOpts, argv: &[String]) -> anyhow::Result<()> {
    if o.matrix {
        return run_matrix(o, argv);
    }
    let mut run = interop::run(&o.engine())?;
    run.results.command = argv.to_vec();
    crate::words::in_checks(&mut run.results);
    let rep = &run.report;
    // With `--json -` the JSON owns stdout; the human output goes to stderr.
    let human = if !o.quiet {
        report::suite_table(&rep.checks)
    } else {
        report::failures_only(&rep.checks)
    } + &rep.skip_lines()
        + &format!("{} ({:.1} s)\n", rep.summary(), rep.seconds);
    // The calibration note names the suite's options as the engine does.
    let human = crate::words::flags(&human);
    if o.json.as_deref().is_some_and(|p| p.as_os_str() == "-") {
        eprint!("{human}");
    } else {
        out!("{human}");
    }
    if let Some(st) = &run.proxy {
        eprintln!("{}", st.summary());
    }
    if let Some(path) = &o.json {
        results::write_atomic(path, &results::to_json(&run.results))?;
    }
    if let Some(path) = &o.junit {
        let roles = Roles {
            client_ours: true,
            server_ours: run.results.target.kind == "embedded"
                || run.results.target.orb_type.as_deref() == Some("iiopbench"),
        };
        let name = format!("interop {}", run.results.target.reference);
        let xml = junit::suite_xml(name.trim(), &rep.checks, roles, rep.seconds);
        // The checks' details and skip reasons name options as the table does.
        let xml = crate::words::flags(&xml);
        results::write_atomic(path, &xml)?;
    }
    let failed = run.failed();
    anyhow::ensure!(failed == 0, "interop: {failed} check(s) failed");
    Ok(())
}

/// Run the matrix and print it; an error when any cell failed.
fn run_matrix(o: &InteropOpts, argv: &[String]) -> anyhow::Result<()> {
    let mut m = matrix::run(&o.matrix())?;
    m.results.command = argv.to_vec();
    crate::words::in_checks(&mut m.results);
    if o.quiet {
        // Said as they happened when not quiet.
        for s in &m.skipped {
            outln!("{s}");
        }
    }
    for u in &m.unreaped {
        outln!("{u}");
    }
    outln!();
    out!("{}", report::matrix_table(&m.clients, &m.servers, &m.cells));
    for c in &m.cells {
        let quiet_skip = o.quiet && c.failures.is_empty() && c.error.is_none();
        let nothing = c.failures.is_empty()
            && c.notes.is_empty()
            && c.skipped.is_empty()
            && c.error.is_none();
        if quiet_skip || nothing {
            continue;
        }
        outln!("\n{} client x {} server: {}", c.client, c.server, c.label());
        if let Some(e) = &c.error {
            outln!("  ERROR {e}");
        }
        for f in &c.failures {
            outln!("  FAIL {f}");
        }
        if !o.quiet {
            for n in &c.notes {
                outln!("  note {}", crate::words::flags(n));
            }
        }
        if !c.skipped.is_empty() {
            outln!(
                "  skipped {} check(s): {}",
                c.skipped.len(),
                matrix::skip_summary(&c.skipped)
            );
        }
    }
    if let Some(path) = &o.json {
        results::write_atomic(path, &results::to_json(&m.results))?;
    }
    if let Some(path) = &o.junit {
        results::write_atomic(path, &junit::matrix_xml(&m.cells))?;
    }
    if let Some(path) = &o.html {
        let view = classify::matrix_view(&m.clients, &m.servers, &m.cells);
        let about = match &o.via_proxy {
            Some(f) => format!("through a proxy injecting {f} (docs/proxy.md)"),
            None => "direct, no proxy".to_string(),
        };
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        let page = html::page(&view, "iiopbench interop matrix", &about, dir);
        results::write_atomic(path, &page)?;
    }
    anyhow::ensure!(
        !m.interrupted,
        "interop matrix: interrupted; {} cell(s) ran",
        m.cells.len()
    );
    let bad = m.bad();
    anyhow::ensure!(
        bad == 0,
        "interop matrix: {bad} of {} cell(s) failed",
        m.cells.len()
    );
    Ok(())
}
