//! `iiopbench lab run`: one lab, one server, one bench client. Also the
//! pieces `lab suite` reuses: parsing `--link`, building and verifying the
//! lab ([`verify`]), and one server + client run inside it ([`run_bench`]).
//!
//! The server (our `iiopbench serve`, or `scripts/orbs/<orb>/start`) runs
//! in the server host and is awaited until it prints `ready`; the client is
//! this same binary (`$IIOPBENCH_EXE`, else the running executable) run as
//! `bench <kind> <args> --target <IOR file> --json <tmp>` in the client
//! host. Its results file gets a `params.lab` section (docs/results-schema.md).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use iiop_lab::{Impairment, Lab, LabSpec, LinkReport, LinkSpec, MeasureOptions};
use serde_json::{json, Value};

use iiopbench_engine::interrupt;
use iiopbench_engine::results::{self, Results};
use iiopbench_engine::units::parse_duration;

/// Which server runs in the server host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ServerKind {
    /// `iiopbench serve` (our reference server).
    Ours,
    /// omniORB's bench server (`scripts/orbs/omniorb/start`).
    Omniorb,
    /// JacORB's bench server (`scripts/orbs/jacorb/start`).
    Jacorb,
}

impl ServerKind {
    /// The name used in results and `scripts/orbs/<name>`.
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Ours => "ours",
            ServerKind::Omniorb => "omniorb",
            ServerKind::Jacorb => "jacorb",
        }
    }
}

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
    #[arg(long, value_enum, default_value_t = ServerKind::Ours)]
    pub server: ServerKind,
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

/// Parses `A-B:IMPAIRMENT` against the known host names (names may hold
/// `-`: the split must leave two known hosts).
pub fn parse_link(s: &str, hosts: &[String], mtu: u32) -> anyhow::Result<LinkSpec> {
    let (pair, imp) = s.split_once(':').unwrap_or((s, "none"));
    let imp: Impairment = imp
        .parse()
        .with_context(|| format!("--link {s:?}: bad impairment"))?;
    let split = pair.match_indices('-').find_map(|(i, _)| {
        let (a, b) = (&pair[..i], &pair[i + 1..]);
        (hosts.iter().any(|h| h == a) && hosts.iter().any(|h| h == b)).then_some((a, b))
    });
    let (a, b) = split.ok_or_else(|| {
        anyhow::anyhow!(
            "--link {s:?}: expected A-B:IMPAIRMENT with A and B among the hosts ({})",
            hosts.join(", ")
        )
    })?;
    let mut l = LinkSpec::symmetric(a, b, imp);
    l.mtu = mtu;
    Ok(l)
}

/// The lab spec of `lab run`'s options.
pub fn spec_of(o: &RunOpts) -> anyhow::Result<LabSpec> {
    let hosts: Vec<String> = o
        .hosts
        .split(',')
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .collect();
    anyhow::ensure!(hosts.len() >= 2, "--hosts needs at least two names");
    let mut links = o
        .links
        .iter()
        .map(|l| parse_link(l, &hosts, o.mtu))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if links.is_empty() {
        anyhow::ensure!(
            hosts.len() == 2,
            "with more than two hosts, say which are linked with --link"
        );
        let mut l = LinkSpec::symmetric(&hosts[0], &hosts[1], Impairment::NONE);
        l.mtu = o.mtu;
        links.push(l);
    }
    let spec = LabSpec {
        hosts,
        links,
        ..LabSpec::pair("a", "b", Impairment::NONE)
    };
    spec.validate()?;
    Ok(spec)
}

/// The self-measurement of a lab and whether it passed.
#[derive(Debug, Clone)]
pub struct Verified {
    pub reports: Vec<LinkReport>,
    pub violations: Vec<String>,
}

impl Verified {
    /// As the `params.lab.links` JSON (configured, measured, mechanisms).
    pub fn to_json(&self) -> Value {
        json!({
            "self_check": if self.violations.is_empty() { "passed" } else { "failed" },
            "violations": self.violations,
            "links": self.reports,
        })
    }
}

/// Measures every link; a failed tolerance is measured once more (the loss
/// estimate is statistical) before it counts.
pub fn verify(lab: &Lab, opts: &MeasureOptions) -> anyhow::Result<Verified> {
    let mut reports = lab.measure(opts)?;
    let mut violations: Vec<String> = reports.iter().flat_map(LinkReport::violations).collect();
    if !violations.is_empty() && !interrupt::requested() {
        eprintln!(
            "lab: self-check out of tolerance ({}); measuring again",
            violations.join("; ")
        );
        reports = lab.measure(opts)?;
        violations = reports.iter().flat_map(LinkReport::violations).collect();
    }
    Ok(Verified {
        reports,
        violations,
    })
}

/// The executable run as client and server: `$IIOPBENCH_EXE` (tests, which
/// run the CLI in-process) or this process's own.
pub fn own_exe() -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os("IIOPBENCH_EXE") {
        return Ok(PathBuf::from(p));
    }
    std::env::current_exe().context("finding the iiopbench executable")
}

/// Where a run's server and client go, and what they are.
#[derive(Debug, Clone)]
pub struct Plan {
    pub server: ServerKind,
    pub server_host: String,
    pub client_host: String,
    /// Vendor server port.
    pub port: u16,
    /// Our server's TCP_NODELAY (vendors keep their default).
    pub server_nodelay: bool,
    pub ready_timeout: Duration,
    /// Bench arguments, starting with the kind (`latency …`) or `bench`.
    pub bench: Vec<String>,
    /// Scratch directory for IOR and results files.
    pub dir: PathBuf,
}

/// A server running in a lab host; killed on drop.
#[derive(Debug)]
pub(crate) struct ServerProc {
    child: Child,
    what: String,
    /// The raw-TCP baseline server it also runs (`config raw_tcp=…`).
    raw_tcp: Option<String>,
}

/// Whether the bench in `bench` (its kind first) talks to a raw-TCP
/// server: `bench tcp`, or a GIOP bench with `--baseline`, unless the user
/// named one with `--baseline-target`.
pub fn wants_raw_tcp(bench: &[String]) -> bool {
    let has = |flag: &str| {
        bench
            .iter()
            .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
    };
    let kind = bench.first().map(String::as_str);
    (kind == Some("tcp") || has("--baseline")) && !has("--baseline-target")
}

/// The bench client's command line after the user's arguments: the
/// server it measures and the results file. `bench tcp` measures the raw-TCP
/// server (`--baseline-target HOST:PORT`; it has no `--target`), the GIOP
/// benches the server's IOR (`--target FILE`), plus `--baseline-target`
/// when they measure a baseline.
pub fn client_args(
    bench: &[String],
    ior_file: &Path,
    raw_tcp: Option<&str>,
    json_file: &Path,
) -> Vec<std::ffi::OsString> {
    let mut a: Vec<std::ffi::OsString> = vec!["bench".into()];
    a.extend(bench.iter().map(Into::into));
    if bench.first().map(String::as_str) != Some("tcp") {
        a.extend(["--target".into(), ior_file.as_os_str().to_owned()]);
    }
    if let Some(r) = raw_tcp {
        a.extend(["--baseline-target".into(), r.into()]);
    }
    a.extend(["--json".into(), json_file.as_os_str().to_owned()]);
    a
}

impl ServerProc {
    /// SIGTERM (servers print their stats and exit), then SIGKILL after 3 s.
    pub(crate) fn stop(mut self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(3) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

pub(crate) fn start_server(lab: &Lab, p: &Plan, ior_file: &Path) -> anyhow::Result<ServerProc> {
    let addr = lab.host(&p.server_host)?.addr();
    let _ = std::fs::remove_file(ior_file);
    let raw = wants_raw_tcp(&p.bench);
    let mut cmd = match p.server {
        ServerKind::Ours => {
            let mut c = Command::new(own_exe()?);
            c.args(["serve", "--listen", &format!("{addr}:0"), "--ior-file"])
                .arg(ior_file)
                .args(["--nodelay", if p.server_nodelay { "true" } else { "false" }]);
            if raw {
                c.args(["--raw-tcp", &format!("{addr}:0")]);
            }
            c
        }
        vendor if raw => anyhow::bail!(
            "the raw-TCP baseline in the lab is served by our server next to the {} one: \
             measure it in a run with --server ours, or give --baseline-target HOST:PORT \
             of an `iiopbench serve --raw-tcp` you started in host {}",
            vendor.name(),
            p.server_host
        ),
        vendor => {
            let mut c = Command::new(iiopbench_engine::orbs::script(vendor.name(), "start")?);
            c.args([
                "--host",
                &addr.to_string(),
                "--port",
                &p.port.to_string(),
                "--ior-file",
            ])
            .arg(ior_file);
            c
        }
    };
    cmd.stdin(Stdio::null()).stdout(Stdio::piped());
    let what = format!("{} server in host {}", p.server.name(), p.server_host);
    let mut child = lab
        .spawn(&p.server_host, cmd)
        .with_context(|| format!("starting the {what}"))?;
    let stdout = child.stdout.take().expect("piped stdout");
    let mut srv = ServerProc {
        child,
        what,
        raw_tcp: None,
    };
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                // Keep draining so the server never blocks on a full pipe.
                continue;
            }
        }
    });
    let deadline = Instant::now() + p.ready_timeout;
    let mut last = Vec::<String>::new();
    loop {
        anyhow::ensure!(
            !interrupt::requested(),
            "interrupted while waiting for the {}",
            srv.what
        );
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) if line.trim() == "ready" => break,
            Ok(line) if line.starts_with("config raw_tcp=") => {
                srv.raw_tcp = Some(line.trim()["config raw_tcp=".len()..].to_string());
            }
            Ok(line) => {
                last.push(line);
                if last.len() > 5 {
                    last.remove(0);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Ok(Some(st)) = srv.child.try_wait() {
                    anyhow::bail!("the {} exited ({st}) before `ready`", srv.what);
                }
                anyhow::ensure!(
                    Instant::now() < deadline,
                    "the {} printed no `ready` within {:?} (last lines: {:?})",
                    srv.what,
                    p.ready_timeout,
                    last
                );
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let st = srv.child.wait()?;
                anyhow::bail!("the {} exited ({st}) before `ready`", srv.what);
            }
        }
    }
    anyhow::ensure!(
        ior_file.is_file(),
        "the {} said `ready` but wrote no IOR to {}",
        srv.what,
        ior_file.display()
    );
    anyhow::ensure!(
        !raw || srv.raw_tcp.is_some(),
        "the {} said `ready` without a `config raw_tcp=` line",
        srv.what
    );
    Ok(srv)
}

/// Splits the user's bench arguments: the `bench` prefix is optional, a
/// `--json FILE` among them is taken out (returned), `--target` is refused.
pub fn bench_args(args: &[String]) -> anyhow::Result<(Vec<String>, Option<PathBuf>)> {
    let mut out = Vec::new();
    let mut json = None;
    let mut it = args.iter();
    if args.first().map(String::as_str) == Some("bench") {
        it.next();
    }
    while let Some(a) = it.next() {
        if a == "--json" {
            let v = it
                .next()
                .ok_or_else(|| anyhow::anyhow!("--json needs a file"))?;
            json = Some(PathBuf::from(v));
        } else if let Some(v) = a.strip_prefix("--json=") {
            json = Some(PathBuf::from(v));
        } else if a == "--target" || a.starts_with("--target=") || a == "-t" {
            anyhow::bail!(
                "lab run supplies --target itself (the server it starts in the lab); \
                 to use a remote server drop `lab run … --`"
            );
        } else {
            out.push(a.clone());
        }
    }
    anyhow::ensure!(
        !out.is_empty() && !out[0].starts_with('-'),
        "after `--` give a bench command: `bench latency …`, `bench throughput …`, `bench connect …`"
    );
    Ok((out, json))
}

/// One server + client run in `lab`: returns the client's results (partial
/// on failure, when it wrote any) and the failure, if any.
pub fn run_bench(lab: &Lab, p: &Plan) -> (Option<Results>, Option<anyhow::Error>) {
    match run_bench_inner(lab, p) {
        Ok((r, err)) => (Some(r), err),
        Err(e) => (None, Some(e)),
    }
}

fn run_bench_inner(lab: &Lab, p: &Plan) -> anyhow::Result<(Results, Option<anyhow::Error>)> {
    let ior_file = p.dir.join("server.ior");
    let json_file = p.dir.join("client.json");
    let _ = std::fs::remove_file(&json_file);
    let server = start_server(lab, p, &ior_file)?;
    let mut cmd = Command::new(own_exe()?);
    cmd.args(client_args(
        &p.bench,
        &ior_file,
        server.raw_tcp.as_deref(),
        &json_file,
    ))
    .stdin(Stdio::null());
    let mut child = lab
        .spawn(&p.client_host, cmd)
        .with_context(|| format!("starting the bench client in host {}", p.client_host))?;
    let mut interrupted_at: Option<Instant> = None;
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break Some(st);
        }
        if interrupt::requested() {
            let t = *interrupted_at.get_or_insert_with(|| {
                if let Ok(pid) = i32::try_from(child.id()) {
                    // SAFETY: signalling our own child so it writes partial results.
                    unsafe { libc::kill(pid, libc::SIGINT) };
                }
                Instant::now()
            });
            if t.elapsed() > Duration::from_secs(5) {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    server.stop();
    let err = match status {
        Some(st) if st.success() => None,
        Some(st) => Some(anyhow::anyhow!(
            "the bench client in host {} failed ({st})",
            p.client_host
        )),
        None => Some(anyhow::anyhow!("interrupted")),
    };
    let err = match (err, interrupted_at) {
        (None, Some(_)) => Some(anyhow::anyhow!("interrupted")),
        (e, _) => e,
    };
    match results::read(&json_file) {
        Ok(mut r) => {
            if let Some(e) = &err {
                r.outcome.complete = false;
                r.outcome.failure.get_or_insert_with(|| format!("{e:#}"));
            }
            Ok((r, err))
        }
        Err(e) => Err(err.unwrap_or(e)),
    }
}

/// The `params.lab` section: topology, server, and the self-measurement.
pub fn lab_section(lab: &Lab, p: &Plan, v: &Verified, client_command: &[String]) -> Value {
    json!({
        "hosts": lab.hosts().iter().map(|h| json!({
            "name": h.name(), "addr": h.addr().to_string(),
        })).collect::<Vec<_>>(),
        "client_host": p.client_host,
        "server_host": p.server_host,
        "server": p.server.name(),
        "server_nodelay": if p.server == ServerKind::Ours {
            json!(p.server_nodelay)
        } else {
            json!("orb default")
        },
        "client_command": client_command,
        "self_check": if v.violations.is_empty() { "passed" } else { "failed" },
        "violations": v.violations,
        "links": v.reports,
    })
}

/// A scratch directory removed on drop.
#[derive(Debug)]
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// `$TMPDIR/iiopbench-lab-<pid>-<n>`.
    pub fn new() -> anyhow::Result<Scratch> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let d = std::env::temp_dir().join(format!(
            "iiopbench-lab-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
        Ok(Scratch(d))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
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

/// `iiopbench lab run`.
pub fn run(o: &RunOpts) -> anyhow::Result<()> {
    require_root_and_signals()?;
    let spec = spec_of(o)?;
    let client_host = o.client_host.clone().unwrap_or(spec.hosts[0].clone());
    let server_host = o.server_host.clone().unwrap_or(spec.hosts[1].clone());
    for h in [&client_host, &server_host] {
        anyhow::ensure!(spec.hosts.contains(h), "no host named {h:?} in --hosts");
    }
    let (bench, json_in_args) = bench_args(&o.bench)?;
    let out_file = o.json.clone().or(json_in_args);
    let server_nodelay = !bench_nagle(&bench);
    let scratch = Scratch::new()?;
    let plan = Plan {
        server: o.server,
        server_host,
        client_host,
        port: o.port,
        server_nodelay,
        ready_timeout: o.ready_timeout,
        bench,
        dir: scratch.0.clone(),
    };
    // Whatever ends the run before the bench wrote results (Ctrl-C during
    // the lab's setup or self-check, a failed self-check, a client that
    // died) still leaves a results file that names the failure.
    let failed = |e: anyhow::Error, section: Option<Value>| -> anyhow::Error {
        if let Some(f) = &out_file {
            let kind = plan.bench.first().map_or("lab-run", String::as_str);
            let mut r = iiopbench_engine::context::new_results(
                kind,
                Default::default(),
                Default::default(),
            );
            r.command = std::env::args().collect();
            r.outcome.complete = false;
            r.outcome.failure = Some(format!("{e:#}"));
            if let Some(s) = section {
                r.params.insert("lab".into(), s);
            }
            if let Err(w) = results::write_atomic(f, &results::to_json(&r)) {
                return e.context(format!("also, writing {}: {w}", f.display()));
            }
        }
        e
    };
    let lab = Lab::create(spec).map_err(|e| failed(e.into(), None))?;
    let v = verify(&lab, &MeasureOptions::default()).map_err(|e| failed(e, None))?;
    print_reports(&v);
    if interrupt::requested() {
        let section = lab_section(&lab, &plan, &v, &plan.bench);
        lab.destroy()?;
        return Err(failed(
            anyhow::anyhow!("interrupted while the lab was set up, before the bench ran"),
            Some(section),
        ));
    }
    if !v.violations.is_empty() && !o.no_verify {
        let section = lab_section(&lab, &plan, &v, &plan.bench);
        lab.destroy()?;
        return Err(failed(
            anyhow::anyhow!(
                "lab self-check failed, not running on an untrustworthy lab: {} \
                 (--no-verify runs anyway)",
                v.violations.join("; ")
            ),
            Some(section),
        ));
    }
    let (r, err) = run_bench(&lab, &plan);
    let section = lab_section(&lab, &plan, &v, &plan.bench);
    lab.destroy()?;
    let Some(mut r) = r else {
        let e = err.unwrap_or_else(|| anyhow::anyhow!("the bench wrote no results"));
        return Err(failed(e, Some(section)));
    };
    r.params.insert("lab".into(), section);
    r.command = std::env::args().collect();
    r.target.isolation = Some(format!(
        "lab: client in netns {}, server in netns {}",
        plan.client_host, plan.server_host
    ));
    if let Some(f) = &out_file {
        results::write_atomic(f, &results::to_json(&r))?;
    }
    match err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Whether the bench arguments turn Nagle on (`--nodelay false`), which
/// our server then mirrors.
pub fn bench_nagle(args: &[String]) -> bool {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--nodelay" {
            return it.next().map(String::as_str) == Some("false");
        }
        if a == "--nodelay=false" {
            return true;
        }
    }
    false
}

/// Root check, then the signal cooperation of [`super::install_signals`].
pub fn require_root_and_signals() -> anyhow::Result<()> {
    super::require_root()?;
    super::install_signals()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts() -> Vec<String> {
        vec!["client".into(), "web-server".into(), "c".into()]
    }

    #[test]
    fn link_parsing_handles_hyphenated_names() {
        let l = parse_link(
            "client-web-server:delay=40ms,loss=2%,rate=t1",
            &hosts(),
            1400,
        )
        .unwrap();
        assert_eq!((l.a.as_str(), l.b.as_str()), ("client", "web-server"));
        assert_eq!(l.a_to_b.delay, Duration::from_millis(40));
        assert_eq!(l.b_to_a.loss, 0.02);
        assert_eq!(l.a_to_b.rate_bps, Some(iiop_lab::T1_BPS));
        assert_eq!(l.mtu, 1400);
        let none = parse_link("c-client", &hosts(), 1500).unwrap();
        assert!(none.a_to_b.is_none());
        let e = parse_link("client-nobody:none", &hosts(), 1500).unwrap_err();
        assert!(e.to_string().contains("among the hosts"), "{e}");
        assert!(parse_link("client-c:loss=200%", &hosts(), 1500).is_err());
    }

    #[test]
    fn bench_args_take_json_and_refuse_target() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let (a, j) = bench_args(&s(&[
            "bench", "latency", "--json", "o.json", "--count", "5",
        ]))
        .unwrap();
        assert_eq!(a, s(&["latency", "--count", "5"]));
        assert_eq!(j, Some(PathBuf::from("o.json")));
        let (a, j) = bench_args(&s(&["throughput", "--json=x"])).unwrap();
        assert_eq!((a, j), (s(&["throughput"]), Some(PathBuf::from("x"))));
        assert!(bench_args(&s(&["latency", "--target", "f"])).is_err());
        assert!(bench_args(&s(&["--count", "3"])).is_err());
        assert!(bench_nagle(&s(&["latency", "--nodelay", "false"])));
        assert!(!bench_nagle(&s(&["latency", "--nodelay", "true"])));
        assert!(!bench_nagle(&s(&["latency"])));
    }

    #[test]
    fn the_client_gets_todays_spellings_of_its_server() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let (ior, json) = (Path::new("srv.ior"), Path::new("c.json"));
        let line = |bench: &[&str], raw: Option<&str>| {
            client_args(&s(bench), ior, raw, json)
                .into_iter()
                .map(|a| a.into_string().unwrap())
                .collect::<Vec<_>>()
        };
        // bench tcp has no --target: the raw-TCP server is its target.
        assert!(wants_raw_tcp(&s(&["tcp", "--count", "5"])));
        let tcp = line(&["tcp", "--count", "5"], Some("10.0.0.2:4321"));
        assert_eq!(
            tcp,
            s(&[
                "bench",
                "tcp",
                "--count",
                "5",
                "--baseline-target",
                "10.0.0.2:4321",
                "--json",
                "c.json"
            ])
        );
        // A GIOP bench: the IOR, and the raw server only with --baseline.
        assert!(!wants_raw_tcp(&s(&["latency"])));
        assert!(wants_raw_tcp(&s(&["throughput", "--baseline"])));
        assert!(!wants_raw_tcp(&s(&[
            "throughput",
            "--baseline",
            "--baseline-target",
            "h:1"
        ])));
        assert_eq!(
            line(&["latency"], None),
            s(&["bench", "latency", "--target", "srv.ior", "--json", "c.json"])
        );
        let with_baseline = line(&["throughput", "--baseline"], Some("10.0.0.2:9"));
        assert!(with_baseline.ends_with(&s(&[
            "--target",
            "srv.ior",
            "--baseline-target",
            "10.0.0.2:9",
            "--json",
            "c.json"
        ])));
        // None of them is an old spelling the client would warn about.
        for args in [tcp, with_baseline] {
            let mut full = vec!["iiopbench".to_string()];
            full.extend(args);
            let rw = crate::deprecated::rewrite(full.into_iter().map(Into::into).collect());
            assert!(rw.warnings.is_empty(), "{:?}", rw.warnings);
        }
    }
}
