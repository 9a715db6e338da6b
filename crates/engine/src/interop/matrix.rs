//! The ORB × ORB interop matrix (`iiopbench interop --matrix`): every available server (ours in-process,
//! vendors through `scripts/orbs/<orb>/start`) against every available
//! client (our suite in-process, vendors through `scripts/orbs/<orb>/client
//! --mode conformance`, and `--mode callback` for those with bench.idl's
//! CALLBACKS: [`CALLBACK_CLIENTS`]). Vendor processes run in their own process group,
//! bounded by timeouts, and are stopped (SIGTERM, then SIGKILL) and reaped
//! on every path, errors and panics included, by [`Child`]'s drop.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use iiop_bench_idl::reference::Forwarding;
use iiop_bench_idl::run::{RunningServer, ServerOptions};
use iiop_transport::server::ServerConfig;

use super::report::{self, Cell};
use super::suite::{self, InteropSuite, Verdict};
use super::{embedded_server_with, runtime, via, InteropOpts};
use crate::orbs;
use crate::progress::Progress;
use crate::results::Results;

/// The name of our own ORB in the matrix.
pub const OURS: &str = "ours";

/// Our server told to answer as ORBs are answered in the field: more
/// server columns (no client rows), each against every client as is.
/// Name, what it does.
pub const OURS_VARIANTS: [(&str, &str); 4] = [
    (
        "ours-frag64",
        "splits every GIOP 1.2 reply over 64 bytes into Fragments (exception replies too)",
    ),
    (
        "ours-frag1024",
        "splits every GIOP 1.2 reply over 1024 bytes into Fragments",
    ),
    (
        "ours-frag16k",
        "splits every GIOP 1.2 reply over 16 KiB into Fragments",
    ),
    (
        "ours-forward",
        "answers the short keys (corbaloc .../Bench) with LOCATION_FORWARD and OBJECT_FORWARD to its long key",
    ),
];

/// The server options of `ours` or one of [`OURS_VARIANTS`]; `None` for
/// any other name.
pub fn ours_server(name: &str) -> Option<ServerOptions> {
    let mut o = ServerOptions::default();
    let frag = |n: usize| ServerConfig {
        fragment_size: Some(n),
        ..ServerConfig::default()
    };
    match name {
        OURS => {}
        "ours-frag64" => o.config = frag(64),
        "ours-frag1024" => o.config = frag(1024),
        "ours-frag16k" => o.config = frag(16 << 10),
        "ours-forward" => {
            o.forwarding = Some(Forwarding {
                permanent: false,
                to: None,
            })
        }
        _ => return None,
    }
    Some(o)
}

/// A child process in its own process group, killed and reaped on drop.
#[derive(Debug)]
pub struct Child {
    inner: std::process::Child,
    what: String,
}

impl Child {
    /// Spawn `cmd` as the leader of a new process group.
    pub fn spawn(mut cmd: Command, what: &str) -> crate::error::Result<Child> {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
        let inner = cmd
            .spawn()
            .map_err(|e| crate::error::fail!(Orb, "cannot start {what}: {e}"))?;
        Ok(Child {
            inner,
            what: what.to_string(),
        })
    }

    /// Send `sig` to the whole process group (a start script and the
    /// server it runs alike).
    pub fn signal(&self, sig: i32) {
        let pid = self.inner.id() as i32;
        // SAFETY: kill(2) with a negative pid signals our child's process
        // group, which we created with process_group(0); no memory involved.
        unsafe {
            libc::kill(-pid, sig);
        }
    }

    /// Wait until the process exits or `limit` passes.
    pub fn wait_for(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let end = Instant::now() + limit;
        loop {
            match self.inner.try_wait() {
                Ok(Some(s)) => return Some(s),
                Ok(None) if Instant::now() < end && !crate::interrupt::requested() => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => return None,
            }
        }
    }

    /// SIGTERM the group (continued first, should it be paused), give it
    /// 5 s, then SIGKILL; reap.
    pub fn stop(&mut self) -> Option<std::process::ExitStatus> {
        if let Ok(Some(s)) = self.inner.try_wait() {
            self.signal(libc::SIGKILL); // stray grandchildren, if any
            return Some(s);
        }
        self.signal(libc::SIGTERM);
        self.signal(libc::SIGCONT);
        let s = self.wait_for(Duration::from_secs(5));
        self.signal(libc::SIGKILL);
        match s {
            Some(s) => Some(s),
            None => self.inner.wait().ok(),
        }
    }

    /// Stop the group (SIGSTOP): it takes no CPU until [`resume`](Self::resume).
    pub fn pause(&self) {
        self.signal(libc::SIGSTOP);
    }

    /// Continue a group stopped by [`pause`](Self::pause).
    pub fn resume(&self) {
        self.signal(libc::SIGCONT);
    }

    /// Its process id (the group's leader).
    pub fn pid(&self) -> u32 {
        self.inner.id()
    }

    /// What this process is.
    pub fn what(&self) -> &str {
        &self.what
    }

    /// Its standard output, when piped and not taken yet.
    pub fn take_stdout(&mut self) -> Option<std::process::ChildStdout> {
        self.inner.stdout.take()
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A server under test: ours in-process or a vendor's process.
#[derive(Debug)]
pub enum Server {
    Ours(RunningServer),
    Vendor(Child),
}

/// The last `lines` lines of a log, joined by ` | `.
pub(crate) fn tail(path: &Path, lines: usize) -> String {
    let s = std::fs::read_to_string(path).unwrap_or_default();
    let v: Vec<&str> = s.lines().collect();
    v[v.len().saturating_sub(lines)..].join(" | ")
}

/// Start `orb`'s server; returns it and the file holding its IOR.
/// The server's `config` lines go to `progress` as notes.
pub fn start_server(
    orb: &str,
    dir: &Path,
    timeout: Duration,
    progress: &Progress,
) -> crate::error::Result<(Server, PathBuf)> {
    let ior_file = dir.join(format!("{orb}.ior"));
    if let Some(opts) = ours_server(orb) {
        let s = embedded_server_with(opts)?;
        crate::results::write_atomic(&ior_file, &format!("{}\n", s.refs().ior))?;
        return Ok((Server::Ours(s), ior_file));
    }
    let log = dir.join(format!("{orb}-server.log"));
    let mut cmd = orbs::start_command(orb, &ior_file)?;
    cmd.stderr(std::fs::File::create(&log)?);
    let child = start_ready(
        cmd,
        &format!("{orb} server"),
        &ior_file,
        &log,
        timeout,
        progress,
    )?;
    Ok((Server::Vendor(child), ior_file))
}

/// Spawn `cmd` (stdout piped) in a process group of its own and wait
/// until it prints `ready` and `ior_file` exists; its `config` lines go to
/// `progress` as notes. `what` names it in errors, which quote the end of
/// `log` (where its stderr goes).
pub fn start_ready(
    cmd: Command,
    what: &str,
    ior_file: &Path,
    log: &Path,
    timeout: Duration,
    progress: &Progress,
) -> crate::error::Result<Child> {
    let mut child = Child::spawn(cmd, what)?;
    let out = child
        .take_stdout()
        .ok_or_else(|| crate::error::fail!(Orb, "{what}: no stdout"))?;
    let (tx, rx) = mpsc::channel::<String>();
    // Reads (and keeps draining) the server's stdout until it exits.
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(l) = line else { break };
            let _ = tx.send(l);
        }
    });
    let end = Instant::now() + timeout;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left.min(Duration::from_millis(200))) {
            Ok(l) if l.trim() == "ready" => break,
            Ok(l) if l.starts_with("config ") => progress.note(&format!("  {l}")),
            Ok(_) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let st = child.stop();
                crate::error::bail!(
                    Orb,
                    "{what} exited before `ready` ({st:?}); stderr: {}",
                    tail(log, 5)
                );
            }
            Err(mpsc::RecvTimeoutError::Timeout) if crate::interrupt::requested() => {
                crate::error::bail!(Orb, "{what}: interrupted while starting");
            }
            Err(mpsc::RecvTimeoutError::Timeout) if left.is_zero() => {
                crate::error::bail!(
                    Orb,
                    "{what} did not print `ready` within {timeout:?}; stderr: {}",
                    tail(log, 5)
                );
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
    crate::error::ensure!(
        ior_file.is_file(),
        Orb,
        "{what} said ready but wrote no {}",
        ior_file.display()
    );
    Ok(child)
}

/// `N: reason; M: reason` from `name: reason` lines.
pub fn skip_summary(lines: &[String]) -> String {
    let mut by: Vec<(usize, &str)> = Vec::new();
    for l in lines {
        let reason = l.split_once(": ").map_or(l.as_str(), |(_, r)| r);
        match by.iter_mut().find(|(_, r)| *r == reason) {
            Some((n, _)) => *n += 1,
            None => by.push((1, reason)),
        }
    }
    by.iter()
        .map(|(n, r)| format!("{n}: {r}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Our suite against the server whose IOR is in `ior_file`.
pub fn run_ours(rt: &tokio::runtime::Runtime, o: &InteropOpts, ior_file: &Path) -> Cell {
    let t0 = Instant::now();
    let mut cell = Cell {
        client: OURS.into(),
        ..Cell::default()
    };
    let ior = match suite::load_target(&ior_file.display().to_string()) {
        Ok(i) => i,
        Err(e) => {
            cell.error = Some(e.to_string());
            return cell;
        }
    };
    match InteropSuite::new(ior, o.suite_options()) {
        Ok(s) => {
            let rep = rt.block_on(s.run());
            cell.checks = rep.checks.clone();
            for c in &rep.checks {
                let line = format!("{}: {}", c.name, c.detail);
                match c.verdict {
                    Verdict::Pass => cell.passed += 1,
                    Verdict::Fail => {
                        cell.failed += 1;
                        cell.failures.push(line);
                    }
                    Verdict::Note => cell.notes.push(line),
                    Verdict::Skip => cell.skipped.push(line),
                }
            }
        }
        Err(e) => cell.error = Some(e.to_string()),
    }
    cell.seconds = t0.elapsed().as_secs_f64();
    cell
}

/// What a vendor client's conformance JSON says (docs/vendor-protocol.md).
#[derive(Debug, serde::Deserialize)]
struct VendorReport {
    #[serde(default)]
    checks: Vec<VendorCheck>,
    passed: usize,
    failed: usize,
    /// Checks not run: neither passed nor failed.
    #[serde(default)]
    skipped: Vec<VendorSkip>,
}

/// A skipped check: its name and the reason (a bare name from clients
/// built before skips carried their reason).
#[derive(Debug, serde::Deserialize)]
#[serde(untagged)]
enum VendorSkip {
    Named {
        name: String,
        #[serde(default)]
        detail: String,
    },
    Bare(String),
}

impl VendorSkip {
    /// `name: reason`, as the matrix lists skips.
    fn line(&self) -> String {
        match self {
            VendorSkip::Named { name, detail } if !detail.is_empty() => format!("{name}: {detail}"),
            VendorSkip::Named { name, .. } | VendorSkip::Bare(name) => name.clone(),
        }
    }
}

#[derive(Debug, serde::Deserialize)]
struct VendorCheck {
    name: String,
    pass: bool,
    #[serde(default)]
    detail: String,
}

/// A vendor client's checks as the suite's (name, verdict, detail; its
/// skips with their reasons).
fn vendor_checks(r: &VendorReport, mode: &str) -> Vec<super::suite::Check> {
    let check = |name: &str, verdict, detail: &str| super::suite::Check {
        name: name.to_string(),
        verdict,
        detail: detail.to_string(),
        ty: String::new(),
        size: 0,
        mode: mode.into(),
        giop: String::new(),
        order: String::new(),
        calls: 1,
        seconds: 0.0,
    };
    let run = r.checks.iter().map(|c| {
        let v = if c.pass { Verdict::Pass } else { Verdict::Fail };
        check(&c.name, v, &c.detail)
    });
    let skipped = r.skipped.iter().map(|s| match s {
        VendorSkip::Named { name, detail } => check(name, Verdict::Skip, detail),
        VendorSkip::Bare(name) => check(name, Verdict::Skip, ""),
    });
    run.chain(skipped).collect()
}

/// Fill `cell` from a vendor client's stdout (its last non-empty line is
/// the conformance JSON; `mode`: the client's `--mode`).
pub fn parse_vendor_output(cell: &mut Cell, stdout: &str, mode: &str) {
    let Some(last) = stdout.lines().rev().find(|l| !l.trim().is_empty()) else {
        cell.error = Some("the client printed nothing".into());
        return;
    };
    match serde_json::from_str::<VendorReport>(last) {
        Ok(r) => {
            cell.passed = r.passed;
            cell.failed = r.failed;
            cell.failures = r
                .checks
                .iter()
                .filter(|c| !c.pass)
                .map(|c| format!("{}: {}", c.name, c.detail))
                .collect();
            cell.skipped = r.skipped.iter().map(VendorSkip::line).collect();
            cell.checks = vendor_checks(&r, mode);
            let listed = r.checks.iter().filter(|c| !c.pass).count();
            if listed != r.failed {
                cell.notes.push(format!(
                    "the client's JSON says failed={} but lists {listed} failed checks",
                    r.failed
                ));
            }
        }
        Err(e) => {
            let short: String = last.chars().take(200).collect();
            cell.error = Some(format!(
                "last line is not the conformance JSON ({e}): {short}"
            ));
        }
    }
}

/// `orb`'s client in `--mode MODE` (`conformance`, `callback`) against
/// `ior_file`. `target` is the IOR file's path or a corbaloc URL;
/// `label` names the client in the matrix.
pub fn run_vendor_client(
    orb: &str,
    (label, mode): (&str, &str),
    server: &str,
    target: &str,
    dir: &Path,
    timeout: Duration,
) -> Cell {
    let t0 = Instant::now();
    let mut cell = Cell {
        client: label.into(),
        server: server.into(),
        ..Cell::default()
    };
    let r = (|| -> crate::error::Result<(String, Option<std::process::ExitStatus>)> {
        let script = orbs::script(orb, "client")?;
        let log = dir.join(format!("{orb}-client-{mode}-vs-{server}.log"));
        let mut cmd = Command::new(&script);
        cmd.arg("--target")
            .arg(target)
            .args(["--mode", mode])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log)?);
        let mut child = Child::spawn(cmd, &format!("{orb} client"))?;
        let mut out = child
            .take_stdout()
            .ok_or_else(|| crate::error::fail!(Orb, "{orb} client: no stdout"))?;
        let reader = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = out.read_to_string(&mut s);
            s
        });
        let st = child.wait_for(timeout);
        if st.is_none() {
            child.stop();
            let _ = reader.join();
            crate::error::ensure!(
                !crate::interrupt::requested(),
                Orb,
                "{orb} client: interrupted"
            );
            crate::error::bail!(
                Orb,
                "{orb} client did not finish within {timeout:?}; stderr: {}",
                tail(&log, 3)
            );
        }
        child.stop();
        let text = reader.join().unwrap_or_default();
        if text.trim().is_empty() {
            crate::error::bail!(
                Orb,
                "{orb} client printed nothing ({st:?}); stderr: {}",
                tail(&log, 3)
            );
        }
        Ok((text, st))
    })();
    match r {
        Ok((text, st)) => {
            parse_vendor_output(&mut cell, &text, mode);
            if let Some(s) = st {
                if !s.success() && cell.failed == 0 && cell.error.is_none() {
                    cell.error = Some(format!("exit status {s} with no failed check"));
                }
            }
        }
        Err(e) => cell.error = Some(e.to_string()),
    }
    cell.seconds = t0.elapsed().as_secs_f64();
    cell
}

/// Vendor clients with a `--mode callback`: a Callback object of theirs
/// offered for bidirectional GIOP, passed to `call_back`, which the
/// server must call back over their own connection (TAO's through
/// libTAO_BiDirGIOP and a POA with the BiDir policy).
pub const CALLBACK_CLIENTS: [&str; 3] = ["omniorb", "jacorb", "tao"];

/// How long a vendor client's callback run may take: its start-up (a
/// JVM's too) and one call; a server that cannot call back makes it hang
/// that long, so it is not the per-request timeout.
fn callback_bound(o: &InteropOpts) -> Duration {
    Duration::from_secs(10).min(o.max_duration)
}

/// Whether `server`'s bench server reads each connection with one thread,
/// which waits in `call_back` and so never reads the callback's reply
/// (omniORB's, started as the matrix starts it).
fn one_thread_per_connection(server: &str) -> bool {
    server == "omniorb"
}

/// Count a vendor client's callback run `cb` in its conformance cell:
/// its checks (mode `callback`) beside the others. A run that did not
/// finish against a server with one thread per connection is that
/// server's known defect, a skip that names it; any other error is a
/// failed `call_back`.
pub fn add_callback(cell: &mut Cell, cb: Cell, server: &str) {
    let check = |verdict, detail: String| super::suite::Check {
        name: "call_back".into(),
        verdict,
        detail,
        ty: String::new(),
        size: 0,
        mode: "callback".into(),
        giop: "1.2".into(),
        order: String::new(),
        calls: 1,
        seconds: cb.seconds,
    };
    match &cb.error {
        Some(e) if one_thread_per_connection(server) && e.contains("did not finish within") => {
            let detail = format!("known defect: {}; seen: {e}", suite::OMNIORB_BIDIR);
            cell.skipped.push(format!("call_back (callback): {detail}"));
            cell.checks.push(check(Verdict::Skip, detail));
        }
        Some(e) => {
            cell.failed += 1;
            cell.failures.push(format!("call_back (callback): {e}"));
            cell.checks.push(check(Verdict::Fail, e.clone()));
        }
        None => {
            cell.passed += cb.passed;
            cell.failed += cb.failed;
            let tag = |l: &String| match l.split_once(": ") {
                Some((name, rest)) => format!("{name} (callback): {rest}"),
                None => format!("{l} (callback)"),
            };
            cell.failures.extend(cb.failures.iter().map(tag));
            cell.skipped.extend(cb.skipped.iter().map(tag));
            cell.notes.extend(cb.notes);
            cell.checks.extend(cb.checks);
        }
    }
    cell.seconds += cb.seconds;
}

/// The GIOP version of the reference `client` is given: the IIOP
/// profile's in `ior_file`, 1.0 for a row through a plain corbaloc URL.
fn reference_giop(ior_file: &Path, client: &str) -> String {
    if client.ends_with(CORBALOC_SUFFIX) {
        return iiop_giop::Version::V1_0.to_string();
    }
    suite::load_target(&ior_file.display().to_string())
        .ok()
        .and_then(|i| i.iiop_profile())
        .map(|p| p.version.min(iiop_giop::Version::V1_2).to_string())
        .unwrap_or_default()
}

/// Suffix of a vendor client row driven through a plain corbaloc URL.
pub const CORBALOC_SUFFIX: &str = "@corbaloc";

/// `corbaloc:iiop:HOST:PORT/Bench` (no `1.2@`: GIOP 1.0, no code sets) for
/// the server whose IOR is in `ior_file`.
pub fn corbaloc_of(ior_file: &Path) -> crate::error::Result<String> {
    let ior = suite::load_target(&ior_file.display().to_string())?;
    let p = suite::profile(&ior)?;
    Ok(format!("corbaloc:iiop:{}:{}/Bench", p.host, p.port))
}

/// Which ORBs can serve and which can be clients, and why others cannot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Availability {
    pub servers: Vec<String>,
    pub clients: Vec<String>,
    /// One line per skipped role.
    pub skipped: Vec<String>,
}

/// Decide from `orbs::status` (the `orbs list` logic).
pub fn availability(orbs: &[String]) -> crate::error::Result<Availability> {
    let mut a = Availability::default();
    for orb in orbs {
        if orb == OURS {
            a.servers.push(orb.clone());
            a.clients.push(orb.clone());
            continue;
        }
        if ours_server(orb).is_some() {
            a.servers.push(orb.clone());
            continue;
        }
        crate::error::ensure!(
            orbs::ORBS.iter().any(|(n, _)| n == orb),
            Orb,
            "unknown ORB {orb:?}; known: ours, {}, {}",
            OURS_VARIANTS.map(|o| o.0).join(", "),
            orbs::ORBS.map(|o| o.0).join(", ")
        );
        let st = orbs::status(orb);
        if !st.installed || !st.built {
            a.skipped.push(format!(
                "{orb}: skipped (installed={}, built={}): {}",
                if st.installed { "yes" } else { "no" },
                if st.built { "yes" } else { "no" },
                st.detail
            ));
            continue;
        }
        a.servers.push(orb.clone());
        if orb == "omniorbpy" {
            a.skipped
                .push("omniorbpy client: none (omniORBpy provides a server only)".into());
        } else {
            a.clients.push(orb.clone());
        }
    }
    Ok(a)
}

/// What to run in the matrix.
#[derive(Debug, Clone)]
pub struct InteropMatrixOpts {
    /// Our suite's settings (its `target` is not used: every server of
    /// the matrix is started here); `max_duration` also caps each vendor
    /// client's whole conformance run.
    pub suite: InteropOpts,
    /// ORBs in the matrix (`ours`, `omniorb`, `jacorb`, `omniorbpy`, `tao`;
    /// servers only: [`OURS_VARIANTS`]).
    pub orbs: Vec<String>,
    /// Also run each vendor client through a plain
    /// `corbaloc:iiop:HOST:PORT/Bench`, as extra rows `<orb>@corbaloc`.
    pub corbaloc: bool,
    /// How long a vendor server may take to print `ready`.
    pub ready_timeout: Duration,
    /// With `suite.via_proxy`: one recording per cell in this directory.
    pub record_dir: Option<PathBuf>,
}

impl Default for InteropMatrixOpts {
    fn default() -> Self {
        InteropMatrixOpts {
            suite: InteropOpts::default(),
            orbs: std::iter::once(OURS)
                .chain(OURS_VARIANTS.map(|v| v.0))
                .chain(["omniorb", "jacorb", "omniorbpy"])
                .map(String::from)
                .collect(),
            corbaloc: false,
            ready_timeout: Duration::from_secs(120),
            record_dir: None,
        }
    }
}

/// What a matrix run found.
#[derive(Debug, Clone)]
pub struct MatrixRun {
    /// The rows, in order.
    pub clients: Vec<String>,
    /// The columns that were tried, in order.
    pub servers: Vec<String>,
    pub cells: Vec<Cell>,
    /// Roles skipped, and servers that did not start, one line each.
    pub skipped: Vec<String>,
    /// Vendor processes that could not be reaped, one line each.
    pub unreaped: Vec<String>,
    /// Ctrl-C stopped the run before every cell ran.
    pub interrupted: bool,
    /// The matrix as a results document (`kind: "interop-matrix"`).
    pub results: Results,
}

impl MatrixRun {
    /// Cells that failed or did not run to the end.
    pub fn bad(&self) -> usize {
        self.cells.iter().filter(|c| !c.ok()).count()
    }
}

/// Run the matrix. News (skipped roles, servers starting, each cell's
/// label as it ends) goes to `o.suite.progress` as notes.
pub fn run(o: &InteropMatrixOpts) -> crate::error::Result<MatrixRun> {
    let started_at = crate::results::now_rfc3339();
    let progress = &o.suite.progress;
    let mut a = availability(&o.orbs)?;
    if o.corbaloc {
        let extra: Vec<String> = a
            .clients
            .iter()
            .filter(|c| *c != OURS)
            .map(|c| format!("{c}{CORBALOC_SUFFIX}"))
            .collect();
        a.clients.extend(extra);
    }
    for s in &a.skipped {
        progress.note(s);
    }
    let dir = std::env::temp_dir().join(format!("iiopbench-interop-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let rt = runtime()?;
    let (ready, timeout) = (o.ready_timeout, o.suite.max_duration);
    let mut cells = Vec::new();
    let mut skipped = a.skipped.clone();
    let mut unreaped = Vec::new();
    let mut servers_run = Vec::new();
    for server in &a.servers {
        if crate::interrupt::requested() {
            break;
        }
        progress.note(&format!("starting {server} server …"));
        let (srv, ior_file) = match start_server(server, &dir, ready, progress) {
            Ok(x) => x,
            Err(e) => {
                let line = format!("{server} server: not started: {e:#}");
                progress.note(&line);
                skipped.push(line);
                for client in &a.clients {
                    cells.push(Cell {
                        client: client.clone(),
                        server: server.clone(),
                        error: Some(format!("server did not start: {e}")),
                        ..Cell::default()
                    });
                }
                servers_run.push(server.clone());
                continue;
            }
        };
        servers_run.push(server.clone());
        for client in &a.clients {
            if crate::interrupt::requested() {
                break;
            }
            let case = progress.case(&format!("{client} client x {server} server"));
            let front = via::CellTarget::start(
                o.suite.via_proxy.as_ref(),
                o.record_dir.as_deref(),
                &ior_file,
                client,
                server,
                &dir,
            );
            let front = match front {
                Ok(f) => f,
                Err(e) => {
                    case.done();
                    cells.push(Cell {
                        client: client.clone(),
                        server: server.clone(),
                        error: Some(format!("proxy: {e:#}")),
                        ..Cell::default()
                    });
                    continue;
                }
            };
            let ior_file = front.ior_file().to_path_buf();
            let mut cell = if client == OURS {
                run_ours(&rt, &o.suite, &ior_file)
            } else if let Some(orb) = client.strip_suffix(CORBALOC_SUFFIX) {
                match corbaloc_of(&ior_file) {
                    Ok(url) => {
                        let row = (client.as_str(), "conformance");
                        run_vendor_client(orb, row, server, &url, &dir, timeout)
                    }
                    Err(e) => Cell {
                        client: client.clone(),
                        error: Some(e.to_string()),
                        ..Cell::default()
                    },
                }
            } else {
                let target = ior_file.display().to_string();
                let row = (client.as_str(), "conformance");
                let mut cell = run_vendor_client(client, row, server, &target, &dir, timeout);
                if CALLBACK_CLIENTS.contains(&client.as_str()) {
                    let bound = callback_bound(&o.suite);
                    let row = (client.as_str(), "callback");
                    let cb = run_vendor_client(client, row, server, &target, &dir, bound);
                    add_callback(&mut cell, cb, server);
                }
                cell
            };
            case.done();
            cell.server = server.clone();
            cell.reference_giop = reference_giop(&ior_file, client);
            match front.finish(&mut cell) {
                Ok(Some(st)) => progress.note(&format!("  {}", st.summary())),
                Ok(None) => {}
                Err(e) => progress.note(&format!("  {e:#}")),
            }
            progress.note(&format!(
                "  {client} client x {server} server: {} ({:.1} s)",
                cell.label(),
                cell.seconds
            ));
            cells.push(cell);
        }
        match srv {
            Server::Ours(s) => drop(s),
            Server::Vendor(mut c) => {
                if c.stop().is_none() {
                    unreaped.push(format!("{}: could not be reaped", c.what()));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let results = report::matrix_results(&cells, &skipped, &started_at);
    Ok(MatrixRun {
        clients: a.clients,
        servers: servers_run,
        cells,
        skipped,
        unreaped,
        interrupted: crate::interrupt::requested(),
        results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vendor_json_is_parsed() {
        let mut c = Cell::default();
        parse_vendor_output(
            &mut c,
            "config x\n{\"orb\":\"o\",\"mode\":\"conformance\",\"checks\":[{\"name\":\"ping\",\"pass\":true,\"detail\":\"\"},{\"name\":\"echo_wchar 7\",\"pass\":false,\"detail\":\"MARSHAL\"}],\"passed\":1,\"failed\":1}\n\n",
            "conformance",
        );
        assert_eq!((c.passed, c.failed), (1, 1));
        assert_eq!(c.failures, vec!["echo_wchar 7: MARSHAL".to_string()]);
        assert_eq!(c.label(), "FAIL 1/2");
        // Skips are neither passes nor failures, with their reasons (the
        // C++ and Java clients' form; a bare name from older builds).
        let mut s = Cell::default();
        parse_vendor_output(
            &mut s,
            r#"{"orb":"o","mode":"conformance","checks":[{"name":"ping","pass":true,"detail":""}],"passed":1,"failed":0,"skipped":[{"name":"echo_wchar[0]","detail":"wchar needs the server's code sets"},"dispatch50_m00_m49"]}"#,
            "conformance",
        );
        assert_eq!((s.passed, s.failed), (1, 0));
        assert_eq!(
            s.skipped,
            [
                "echo_wchar[0]: wchar needs the server's code sets",
                "dispatch50_m00_m49"
            ]
        );
        assert_eq!(s.label(), "pass 1/1");
        let mut d = Cell::default();
        parse_vendor_output(&mut d, "Segmentation fault\n", "conformance");
        assert!(d.error.as_deref().unwrap().contains("Segmentation fault"));
        assert_eq!(d.label(), "ERROR");
    }

    /// A conformance cell of 10 passes, for the callback run to join.
    fn conformance_cell() -> Cell {
        Cell {
            passed: 10,
            ..Cell::default()
        }
    }

    #[test]
    fn a_callback_run_counts_in_its_cell() {
        let mut ok = Cell::default();
        parse_vendor_output(
            &mut ok,
            r#"{"orb":"o","mode":"callback","checks":[{"name":"call_back","pass":true,"detail":"ok"}],"passed":1,"failed":0,"skipped":[]}"#,
            "callback",
        );
        let mut c = conformance_cell();
        add_callback(&mut c, ok, "jacorb");
        assert_eq!(
            (c.passed, c.failed, c.label().as_str()),
            (11, 0, "pass 11/11")
        );
        assert_eq!(c.checks.last().map(|k| k.mode.as_str()), Some("callback"));
        // A failed call_back fails the cell, named as the callback's.
        let mut bad = Cell::default();
        parse_vendor_output(
            &mut bad,
            r#"{"orb":"o","mode":"callback","checks":[{"name":"call_back","pass":false,"detail":"NO_PERMISSION"}],"passed":0,"failed":1}"#,
            "callback",
        );
        let mut c = conformance_cell();
        add_callback(&mut c, bad, "ours");
        assert_eq!((c.passed, c.failed), (10, 1));
        assert_eq!(c.failures, ["call_back (callback): NO_PERMISSION"]);
    }

    #[test]
    fn a_hung_callback_is_omniorbs_known_defect_only() {
        let hung = || Cell {
            error: Some("omniorb client did not finish within 25s; stderr: ".into()),
            ..Cell::default()
        };
        let mut c = conformance_cell();
        add_callback(&mut c, hung(), "omniorb");
        assert_eq!((c.passed, c.failed, c.ok()), (10, 0, true));
        assert_eq!(c.skipped.len(), 1);
        assert!(c.skipped[0].starts_with("call_back (callback): known defect: omniORB"));
        assert_eq!(c.checks[0].verdict, Verdict::Skip);
        // The same hang against another server is a failure.
        let mut c = conformance_cell();
        add_callback(&mut c, hung(), "jacorb");
        assert_eq!((c.passed, c.failed, c.ok()), (10, 1, false));
        assert_eq!(c.checks[0].verdict, Verdict::Fail);
    }

    #[test]
    fn child_is_killed_on_drop() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let c = Child::spawn(cmd, "sleep").unwrap();
        let pid = c.inner.id() as i32;
        let t = Instant::now();
        drop(c);
        assert!(t.elapsed() < Duration::from_secs(6));
        // SAFETY: signal 0 only checks whether the (reaped) pid exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0;
        assert!(!alive, "child {pid} still exists after drop");
    }

    #[test]
    fn unknown_orb_is_rejected() {
        let e = availability(&["orbix".into()]).unwrap_err().to_string();
        assert!(e.contains("orbix") && e.contains("jacorb"), "{e}");
    }

    #[test]
    fn our_server_variants_are_servers_that_answer_as_told() {
        let names: Vec<String> = OURS_VARIANTS.map(|v| v.0.to_string()).to_vec();
        let a = availability(&names).unwrap();
        assert_eq!(a.servers, names);
        assert!(a.clients.is_empty(), "{:?}", a.clients);
        let frag = |n: &str| ours_server(n).unwrap().config.fragment_size;
        assert_eq!(frag("ours"), None);
        assert_eq!(frag("ours-frag64"), Some(64));
        assert_eq!(frag("ours-frag1024"), Some(1024));
        assert_eq!(frag("ours-frag16k"), Some(16384));
        assert!(ours_server("ours-forward").unwrap().forwarding.is_some());
        assert!(ours_server("ours").unwrap().forwarding.is_none());
        assert!(ours_server("ours-frag7").is_none());
    }
}
