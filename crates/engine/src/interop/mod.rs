//! Interop conformance: our client's suite against one bench.idl server
//! ([`suite`], its `any` and user-exception checks in [`anys`], its
//! valuetype checks in [`values`]), the ORB × ORB matrix of every available client against
//! every available server ([`matrix`]), and both as results documents
//! ([`report`]; docs/results-schema.md, section "interop"); either through
//! a fault-injecting proxy ([`via`]); every outcome classified by rule
//! ([`classify`]). The tables a person reads are the command line's
//! (`iiopbench interop`).

pub mod anys;
pub mod check;
pub mod classify;
pub mod matrix;
pub mod report;
pub mod suite;
pub mod values;
pub mod via;

use std::time::Duration;

use std::path::PathBuf;

use iiop_bench_idl::run::{RunningServer, ServerOptions};
use iiop_giop::ior::Ior;

use crate::progress::Progress;
use crate::proxy::{Faults, RelayStats};
use crate::results::Results;
use crate::target::TlsOpts;
use suite::{InteropSuite, InteropSuiteOptions, SuiteReport, Verdict};

/// What the suite runs against and how (`iiopbench interop` without
/// `--matrix`).
#[derive(Debug, Clone)]
pub struct InteropOpts {
    /// The server to test: `IOR:…`, `corbaloc:…`, a file holding one, or
    /// `-` for standard input. `None`: our own server, started in this
    /// process on 127.0.0.1.
    pub target: Option<String>,
    /// Fewer sizes and versions (a smoke test).
    pub quick: bool,
    /// Timeout of every request our client makes (calibration may raise
    /// it for a slow peer: [`suite::SuitePlan::from_rate`]).
    pub timeout: Duration,
    /// Time cap of our whole suite (in the matrix also of each vendor
    /// client's whole conformance run).
    pub max_duration: Duration,
    /// The user gave `timeout`: it bounds every request as given, unless
    /// `raise_limits`.
    pub timeout_given: bool,
    /// The user gave `max_duration`: likewise for the suite's time cap.
    pub max_duration_given: bool,
    /// Let calibration raise limits the user gave.
    pub raise_limits: bool,
    /// The client's TLS settings, to reach a server that offers or demands
    /// TLS.
    pub tls: TlsOpts,
    /// Hears the news of the run (which server is tested, the matrix's
    /// cells as they end).
    pub progress: Progress,
    /// Run through a proxy in this process injecting these faults
    /// (docs/proxy.md); in the matrix one in front of every server.
    pub via_proxy: Option<Faults>,
    /// The suite alone: the proxy records what it passes here (pcapng,
    /// or the `pcap` command's JSON for a `.json` name).
    pub record: Option<PathBuf>,
    /// The suite alone: the server's configured maximum message size
    /// (bytes after the GIOP header), to check what it does with
    /// requests just below and above it; `None` skips those checks.
    pub peer_max_message_size: Option<u64>,
}

impl Default for InteropOpts {
    /// The command line's defaults: 20 s per request, 120 s in all.
    fn default() -> Self {
        InteropOpts {
            target: None,
            quick: false,
            timeout: Duration::from_secs(20),
            max_duration: Duration::from_secs(120),
            timeout_given: false,
            max_duration_given: false,
            raise_limits: false,
            tls: TlsOpts::default(),
            progress: Progress::none(),
            via_proxy: None,
            record: None,
            peer_max_message_size: None,
        }
    }
}

impl InteropOpts {
    /// The suite's own settings (at least 1 ms per request and 1 s in all).
    pub fn suite_options(&self) -> InteropSuiteOptions {
        InteropSuiteOptions {
            quick: self.quick,
            request_timeout: self.timeout.max(Duration::from_millis(1)),
            time_limit: self.max_duration.max(Duration::from_secs(1)),
            timeout_given: self.timeout_given,
            time_limit_given: self.max_duration_given,
            raise_limits: self.raise_limits,
            tls: self.tls.clone(),
            peer_max_message_size: self.peer_max_message_size,
        }
    }
}

/// A multi-thread runtime (two workers) for the client side.
pub fn runtime() -> crate::error::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

/// Our server in-process, on 127.0.0.1 and a free port, two threads.
pub fn embedded_server() -> crate::error::Result<RunningServer> {
    embedded_server_with(ServerOptions::default())
}

/// [`embedded_server`] with `opts`' server behaviour (fragmented replies,
/// forwards), on 127.0.0.1 and a free port, two threads.
pub fn embedded_server_with(opts: ServerOptions) -> crate::error::Result<RunningServer> {
    RunningServer::start(ServerOptions {
        listen: "127.0.0.1:0".into(),
        threads: 2,
        ..opts
    })
    .map_err(|e| crate::error::fail!(Local, "starting the embedded server: {e}"))
}

/// What one suite run found.
#[derive(Debug, Clone)]
pub struct SuiteRun {
    /// Every check with its verdict.
    pub report: SuiteReport,
    /// The server's reference as resolved.
    pub ior: Ior,
    /// The suite as a results document (`kind: "interop"`).
    pub results: Results,
    /// What the proxy did, when the suite ran through one.
    pub proxy: Option<RelayStats>,
}

impl SuiteRun {
    /// Checks that failed.
    pub fn failed(&self) -> usize {
        self.report.count(Verdict::Fail)
    }
}

/// Run the suite against `o.target` (or our embedded server).
pub fn run(o: &InteropOpts) -> crate::error::Result<SuiteRun> {
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
            o.progress.note(&format!(
                "no target: testing our own server, started in-process on {}",
                s.addr()
            ));
            (Some(s), ior, "embedded", String::new())
        }
    };
    let started_at = crate::results::now_rfc3339();
    let proxy = match &o.via_proxy {
        Some(f) => {
            let p = via::front(&ior, f, o.record.clone())?;
            o.progress
                .note(&format!("through a proxy on {} (faults: {f})", p.addr()));
            Some(p)
        }
        None => None,
    };
    let tested = proxy
        .as_ref()
        .map_or_else(|| ior.clone(), |p| p.ior().clone());
    let suite = InteropSuite::new(tested, o.suite_options())?;
    let case = o.progress.case("interop suite");
    let mut report = rt.block_on(suite.run());
    case.done();
    let proxy = proxy
        .map(|p| p.stop())
        .transpose()
        .map_err(|e| crate::error::Error::local(format!("the proxy: {e}")))?;
    if let (Some(f), Some(st)) = (&o.via_proxy, &proxy) {
        via::name_faults(&mut report.checks, f, st);
    }
    drop(server);
    let mut results = report::suite_results(&report, &ior, kind, &reference, &started_at, o.quick);
    if let (Some(f), Some(st)) = (&o.via_proxy, &proxy) {
        results
            .params
            .insert("via_proxy".into(), serde_json::json!(f.to_string()));
        results.params.insert("proxy".into(), serde_json::json!(st));
    }
    Ok(SuiteRun {
        report,
        ior,
        results,
        proxy,
    })
}
