//! `lab run`: one lab, one server, one bench client; and the pieces the
//! other lab commands reuse: parsing a link ([`parse_link`]), the lab's
//! self-measurement ([`verify`]), a server started in a host
//! ([`start_server`]) and one server + client run inside a lab
//! ([`run_bench`]).
//!
//! The server (our `iiopbench serve`, or `scripts/orbs/<orb>/start`) runs
//! in the server host and is awaited until it prints `ready`; the client is
//! the iiopbench executable (`exe`) run as `bench <kind> <args> --target
//! <IOR file> --json <tmp>` in the client host. Its results get a
//! `params.lab` section (docs/results-schema.md).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use iiop_lab::{Impairment, Lab, LabSpec, LinkReport, LinkSpec, MeasureOptions};
use serde_json::{json, Value};

use super::{LabSink, ServerKind, ServerOpts};
use crate::interrupt;
use crate::results::{self, Results};

/// `lab run`'s options.
#[derive(Debug, Clone)]
pub struct RunOpts {
    /// Host names, each a network namespace; at least two.
    pub hosts: Vec<String>,
    /// Links and their impairment in both directions, `A-B:IMPAIRMENT`
    /// ([`parse_link`]). With two hosts and none, one unimpaired link
    /// joins them.
    pub links: Vec<String>,
    /// MTU of every link.
    pub mtu: u32,
    /// The host the bench client runs in (`None`: the first).
    pub client_host: Option<String>,
    /// The host the server runs in (`None`: the second).
    pub server_host: Option<String>,
    /// The server and the executable.
    pub server: ServerOpts,
    /// Run even when the self-measurement is out of tolerance.
    pub no_verify: bool,
    /// Where the results go (else a `--json` among the bench arguments);
    /// passed back in [`LabRun::json`].
    pub json: Option<PathBuf>,
    /// The bench command run in the client host: `bench latency --count
    /// 1000 …` (the `bench` is optional; `--target` and `--json` are
    /// added, `--baseline-target` for `bench tcp` and `--baseline`).
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
    let hosts = o.hosts.clone();
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
    lab_spec(hosts, links)
}

/// The lab of these hosts and links (the lab crate's defaults for the
/// rest), checked.
pub fn lab_spec(hosts: Vec<String>, links: Vec<LinkSpec>) -> anyhow::Result<LabSpec> {
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
/// estimate is statistical) before it counts, and `sink` hears of it.
pub fn verify(lab: &Lab, opts: &MeasureOptions, sink: &dyn LabSink) -> anyhow::Result<Verified> {
    let mut reports = lab.measure(opts)?;
    let mut violations: Vec<String> = reports.iter().flat_map(LinkReport::violations).collect();
    if !violations.is_empty() && !interrupt::requested() {
        sink.note(&format!(
            "lab: self-check out of tolerance ({}); measuring again",
            violations.join("; ")
        ));
        reports = lab.measure(opts)?;
        violations = reports.iter().flat_map(LinkReport::violations).collect();
    }
    Ok(Verified {
        reports,
        violations,
    })
}

/// Where a run's server and client go, and what they are.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The server and the executable.
    pub server: ServerOpts,
    pub server_host: String,
    pub client_host: String,
    /// Our server's TCP_NODELAY (vendors keep their default).
    pub server_nodelay: bool,
    /// Bench arguments, starting with the kind (`latency …`) or `bench`.
    pub bench: Vec<String>,
    /// Scratch directory for IOR and results files.
    pub dir: PathBuf,
}

/// A server running in a lab host; killed on drop.
#[derive(Debug)]
pub struct ServerProc {
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
    pub fn stop(mut self) {
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

/// Starts the server `p` asks for in its server host, waits for its
/// `ready` line (at most `p.server.ready_timeout`) and checks that it wrote its
/// IOR to `ior_file` (and, when the bench measures one, started the
/// raw-TCP server).
pub fn start_server(lab: &Lab, p: &Plan, ior_file: &Path) -> anyhow::Result<ServerProc> {
    let addr = lab.host(&p.server_host)?.addr();
    let _ = std::fs::remove_file(ior_file);
    let raw = wants_raw_tcp(&p.bench);
    let mut cmd = match p.server.kind {
        ServerKind::Ours => {
            let mut c = Command::new(&p.server.exe);
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
            let mut c = Command::new(crate::orbs::script(vendor.name(), "start")?);
            c.args([
                "--host",
                &addr.to_string(),
                "--port",
                &p.server.port.to_string(),
                "--ior-file",
            ])
            .arg(ior_file);
            c
        }
    };
    cmd.stdin(Stdio::null()).stdout(Stdio::piped());
    let what = format!("{} server in host {}", p.server.kind.name(), p.server_host);
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
    let deadline = Instant::now() + p.server.ready_timeout;
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
                    p.server.ready_timeout,
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
    let mut cmd = Command::new(&p.server.exe);
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
        "server": p.server.kind.name(),
        "server_nodelay": if p.server.kind == ServerKind::Ours {
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

/// How a `lab run` ended.
#[derive(Debug)]
pub struct LabRun {
    /// The bench client's results with `params.lab`; or, when the run
    /// ended before the client wrote any (a lab that could not be built,
    /// a failed self-check, Ctrl-C, a client that died), a skeleton of the
    /// bench's kind that names the failure, with `params.lab` when the lab
    /// was up.
    pub results: Results,
    /// Whether `results` are the client's (false: the skeleton).
    pub measured: bool,
    /// What ended the run early, if anything (always set with the
    /// skeleton).
    pub error: Option<anyhow::Error>,
    /// Where the results go: [`RunOpts::json`], else a `--json` among the
    /// bench arguments.
    pub json: Option<PathBuf>,
}

/// `lab run`: build the lab, verify it ([`LabSink::verified`] hears the
/// measurement), start the server, run the bench client, remove the lab.
/// An `Err` when nothing ran (options that do not make a lab or a bench
/// command, a lab that could not be removed); every other ending is a
/// [`LabRun`].
pub fn run(o: &RunOpts, sink: &dyn LabSink) -> anyhow::Result<LabRun> {
    let spec = spec_of(o)?;
    let client_host = o.client_host.clone().unwrap_or(spec.hosts[0].clone());
    let server_host = o.server_host.clone().unwrap_or(spec.hosts[1].clone());
    for h in [&client_host, &server_host] {
        anyhow::ensure!(spec.hosts.contains(h), "no host named {h:?} in --hosts");
    }
    let (bench, json_in_args) = bench_args(&o.bench)?;
    let json = o.json.clone().or(json_in_args);
    let server_nodelay = !bench_nagle(&bench);
    let scratch = Scratch::new()?;
    let plan = Plan {
        server: o.server.clone(),
        server_host,
        client_host,
        server_nodelay,
        bench,
        dir: scratch.0.clone(),
    };
    // Whatever ends the run before the bench wrote results (Ctrl-C during
    // the lab's setup or self-check, a failed self-check, a client that
    // died) still leaves results that name the failure.
    let failed = |e: anyhow::Error, section: Option<Value>| -> LabRun {
        let kind = plan.bench.first().map_or("lab-run", String::as_str);
        let mut r = crate::context::new_results(kind, Default::default(), Default::default());
        r.command = std::env::args().collect();
        r.outcome.complete = false;
        r.outcome.failure = Some(format!("{e:#}"));
        if let Some(s) = section {
            r.params.insert("lab".into(), s);
        }
        LabRun {
            results: r,
            measured: false,
            error: Some(e),
            json: json.clone(),
        }
    };
    let lab = match Lab::create(spec) {
        Ok(lab) => lab,
        Err(e) => return Ok(failed(e.into(), None)),
    };
    let v = match verify(&lab, &MeasureOptions::default(), sink) {
        Ok(v) => v,
        Err(e) => return Ok(failed(e, None)),
    };
    sink.verified(&v);
    if interrupt::requested() {
        let section = lab_section(&lab, &plan, &v, &plan.bench);
        lab.destroy()?;
        return Ok(failed(
            anyhow::anyhow!("interrupted while the lab was set up, before the bench ran"),
            Some(section),
        ));
    }
    if !v.violations.is_empty() && !o.no_verify {
        let section = lab_section(&lab, &plan, &v, &plan.bench);
        lab.destroy()?;
        return Ok(failed(
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
        return Ok(failed(e, Some(section)));
    };
    r.params.insert("lab".into(), section);
    r.command = std::env::args().collect();
    r.target.isolation = Some(format!(
        "lab: client in netns {}, server in netns {}",
        plan.client_host, plan.server_host
    ));
    Ok(LabRun {
        results: r,
        measured: true,
        error: err,
        json,
    })
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
    }
}
