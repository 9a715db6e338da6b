//! `lab run`: one lab, one server, one job's client; and the pieces the
//! other lab commands reuse: parsing a link ([`parse_link`]), the lab's
//! self-measurement ([`verify`]), a server started in a host
//! ([`start_server`]) and one server + client run inside a lab
//! ([`run_job`]).
//!
//! The server (ours, or `scripts/orbs/<orb>/start`) runs in the server
//! host and is awaited until it prints `ready`; the client is a process
//! the run's [`Programs`] start in the client host, handed the job (its
//! target set to the server's IOR file) in a JSON file, which writes its
//! results to another. Its results get a `params.lab` section
//! (docs/results-schema.md).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use iiop_lab::{Impairment, Lab, LabSpec, LinkReport, LinkSpec, MeasureOptions};
use serde_json::{json, Value};

use super::{LabServer, LabSink, ServerOpts};
use crate::error::{bail, ensure, fail, Error, Result};
use crate::interrupt;
use crate::job::Job;
use crate::programs::{Programs, ServerProcess};
use crate::results::{self, Results};
use crate::run_context::RunContext;

/// `lab run`'s options.
#[derive(Debug, Clone)]
pub struct LabRunOpts {
    /// Host names, each a network namespace; at least two.
    pub hosts: Vec<String>,
    /// Links and their impairment in both directions, `A-B:IMPAIRMENT`
    /// ([`parse_link`]). With two hosts and none, one unimpaired link
    /// joins them.
    pub links: Vec<String>,
    /// MTU of every link.
    pub mtu: u32,
    /// The host the job's client runs in (`None`: the first).
    pub client_host: Option<String>,
    /// The host the server runs in (`None`: the second).
    pub server_host: Option<String>,
    /// The server.
    pub server: ServerOpts,
    /// Run even when the self-measurement is out of tolerance.
    pub no_verify: bool,
    /// The job run in the client host, against the server (the lab gives
    /// it its `target`, and its `baseline_target` when it measures raw
    /// TCP). It may not name a target of its own.
    pub job: Job,
}

/// Parses `A-B:IMPAIRMENT` against the known host names (names may hold
/// `-`: the split must leave two known hosts).
pub fn parse_link(s: &str, hosts: &[String], mtu: u32) -> Result<LinkSpec> {
    let (pair, imp) = s.split_once(':').unwrap_or((s, "none"));
    let imp: Impairment = imp
        .parse()
        .map_err(|e| Error::job(format!("link {s:?}: bad impairment: {e}")))?;
    let split = pair.match_indices('-').find_map(|(i, _)| {
        let (a, b) = (&pair[..i], &pair[i + 1..]);
        (hosts.iter().any(|h| h == a) && hosts.iter().any(|h| h == b)).then_some((a, b))
    });
    let (a, b) = split.ok_or_else(|| {
        Error::job(format!(
            "link {s:?}: expected A-B:IMPAIRMENT with A and B among the hosts ({})",
            hosts.join(", ")
        ))
    })?;
    let mut l = LinkSpec::symmetric(a, b, imp);
    l.mtu = mtu;
    Ok(l)
}

/// The lab spec of `lab run`'s options.
pub fn spec_of(o: &LabRunOpts) -> Result<LabSpec> {
    let hosts = o.hosts.clone();
    ensure!(hosts.len() >= 2, Job, "a lab needs at least two hosts");
    let mut links = o
        .links
        .iter()
        .map(|l| parse_link(l, &hosts, o.mtu))
        .collect::<Result<Vec<_>>>()?;
    if links.is_empty() {
        if hosts.len() != 2 {
            return Err(Error::job(
                "with more than two hosts, say which are linked (`links`)",
            ));
        }
        let mut l = LinkSpec::symmetric(&hosts[0], &hosts[1], Impairment::NONE);
        l.mtu = o.mtu;
        links.push(l);
    }
    lab_spec(hosts, links)
}

/// The lab of these hosts and links (the lab crate's defaults for the
/// rest), checked.
pub fn lab_spec(hosts: Vec<String>, links: Vec<LinkSpec>) -> Result<LabSpec> {
    let spec = LabSpec {
        hosts,
        links,
        ..LabSpec::pair("a", "b", Impairment::NONE)
    };
    spec.validate().map_err(Error::job)?;
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
pub fn verify(lab: &Lab, opts: &MeasureOptions, sink: &dyn LabSink) -> Result<Verified> {
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
    /// The server.
    pub server: ServerOpts,
    pub server_host: String,
    pub client_host: String,
    /// Our server's TCP_NODELAY (vendors keep their default).
    pub server_nodelay: bool,
    /// The job the client runs (its target is filled in).
    pub job: Job,
    /// Scratch directory for the job, IOR and results files.
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

/// The job the client runs: `job` against the server whose IOR is in
/// `ior_file` (a raw-TCP job has no target), with the raw-TCP server
/// `raw_tcp` as its `baseline_target` when it measures one.
pub fn client_job(job: &Job, ior_file: &Path, raw_tcp: Option<&str>) -> Job {
    let mut j = job.clone();
    if let Some(t) = j.target_mut() {
        t.target = Some(ior_file.display().to_string());
    }
    if let (Some(r), Some(b)) = (raw_tcp, j.baseline_target_mut()) {
        *b = Some(r.to_string());
    }
    j
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

/// Starts the server `p` asks for in its server host (ours through
/// `programs`), waits for its `ready` line (at most
/// `p.server.ready_timeout`) and checks that it wrote its IOR to
/// `ior_file` (and, when the job measures one, started the raw-TCP
/// server).
pub fn start_server(
    lab: &Lab,
    p: &Plan,
    ior_file: &Path,
    programs: &dyn Programs,
) -> Result<ServerProc> {
    let addr = lab.host(&p.server_host)?.addr();
    let _ = std::fs::remove_file(ior_file);
    let raw = p.job.wants_raw_tcp();
    let mut cmd = match p.server.kind {
        LabServer::Ours => programs.server(&ServerProcess {
            ior_file: Some(ior_file.to_path_buf()),
            nodelay: p.server_nodelay,
            raw_tcp: raw.then(|| format!("{addr}:0")),
            ..ServerProcess::on(format!("{addr}:0"))
        }),
        vendor if raw => bail!(
            Job,
            "the raw-TCP baseline in the lab is served by our server next to the {} one: \
             measure it in a run with our server, or give the job a `baseline_target` \
             (HOST:PORT of an `iiopbench serve --raw-tcp` you started in host {})",
            vendor.name(),
            p.server_host
        ),
        vendor => {
            let mut c = std::process::Command::new(crate::orbs::script(vendor.name(), "start")?);
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
        .map_err(|e| fail!(Local, "starting the {what}: {e}"))?;
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
        ensure!(
            !interrupt::requested(),
            Interrupted,
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
                    bail!(Target, "the {} exited ({st}) before `ready`", srv.what);
                }
                ensure!(
                    Instant::now() < deadline,
                    Target,
                    "the {} printed no `ready` within {:?} (last lines: {:?})",
                    srv.what,
                    p.server.ready_timeout,
                    last
                );
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let st = srv.child.wait()?;
                bail!(Target, "the {} exited ({st}) before `ready`", srv.what);
            }
        }
    }
    ensure!(
        ior_file.is_file(),
        Target,
        "the {} said `ready` but wrote no IOR to {}",
        srv.what,
        ior_file.display()
    );
    ensure!(
        !raw || srv.raw_tcp.is_some(),
        Target,
        "the {} said `ready` without a `config raw_tcp=` line",
        srv.what
    );
    Ok(srv)
}

/// One server + client run in `lab`: returns the client's results (partial
/// on failure, when it wrote any) and the failure, if any.
pub fn run_job(lab: &Lab, p: &Plan, programs: &dyn Programs) -> (Option<Results>, Option<Error>) {
    match run_job_inner(lab, p, programs) {
        Ok((r, err)) => (Some(r), err),
        Err(e) => (None, Some(e)),
    }
}

fn run_job_inner(lab: &Lab, p: &Plan, programs: &dyn Programs) -> Result<(Results, Option<Error>)> {
    let ior_file = p.dir.join("server.ior");
    let job_file = p.dir.join("job.json");
    let json_file = p.dir.join("client.json");
    let _ = std::fs::remove_file(&json_file);
    let server = start_server(lab, p, &ior_file, programs)?;
    let job = client_job(&p.job, &ior_file, server.raw_tcp.as_deref());
    std::fs::write(&job_file, job.to_json())
        .map_err(|e| fail!(Local, "writing {}: {e}", job_file.display()))?;
    let mut cmd = programs.job(&job_file, &json_file);
    cmd.stdin(Stdio::null());
    let mut child = lab.spawn(&p.client_host, cmd).map_err(|e| {
        fail!(
            Local,
            "starting the job's client in host {}: {e}",
            p.client_host
        )
    })?;
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
        Some(st) => Some(fail!(
            Target,
            "the job's client in host {} failed ({st})",
            p.client_host
        )),
        None => Some(Error::interrupted("interrupted")),
    };
    let err = match (err, interrupted_at) {
        (None, Some(_)) => Some(Error::interrupted("interrupted")),
        (e, _) => e,
    };
    match results::read(&json_file) {
        Ok(mut r) => {
            if let Some(e) = &err {
                r.outcome.complete = false;
                r.outcome.failure.get_or_insert_with(|| e.to_string());
            }
            Ok((r, err))
        }
        Err(e) => Err(err.unwrap_or(e)),
    }
}

/// The `params.lab` section: topology, server, and the self-measurement.
pub fn lab_section(lab: &Lab, p: &Plan, v: &Verified) -> Value {
    json!({
        "hosts": lab.hosts().iter().map(|h| json!({
            "name": h.name(), "addr": h.addr().to_string(),
        })).collect::<Vec<_>>(),
        "client_host": p.client_host,
        "server_host": p.server_host,
        "server": p.server.kind.name(),
        "server_nodelay": if p.server.kind == LabServer::Ours {
            json!(p.server_nodelay)
        } else {
            json!("orb default")
        },
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
    pub fn new() -> Result<Scratch> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let d = std::env::temp_dir().join(format!(
            "iiopbench-lab-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&d).map_err(|e| fail!(Local, "creating {}: {e}", d.display()))?;
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
    /// The client's results with `params.lab`; or, when the run ended
    /// before the client wrote any (a lab that could not be built, a
    /// failed self-check, Ctrl-C, a client that died), a skeleton of the
    /// job's kind that names the failure, with `params.lab` when the lab
    /// was up.
    pub results: Results,
    /// Whether `results` are the client's (false: the skeleton).
    pub measured: bool,
    /// What ended the run early, if anything (always set with the
    /// skeleton).
    pub error: Option<Error>,
}

/// Checks a job for a lab: it may not name a target (the lab's server is
/// its target), and it must be one the lab can run.
pub fn check_job(job: &Job) -> Result<()> {
    if job.target().is_some_and(|t| t.target.is_some()) {
        return Err(Error::job(
            "the lab supplies the job's `target` itself (the server it starts in the lab); \
             to use a remote server run the job outside the lab",
        ));
    }
    job.validate_fields().map_err(Error::from)
}

/// `lab run`: build the lab, verify it ([`LabSink::verified`] hears the
/// measurement), start the server, run the job's client, remove the lab.
/// `ctx` starts the processes ([`RunContext::programs`]) and gives the
/// results' command line. An `Err` when nothing ran (options that do not
/// make a lab, a job the lab cannot run, a lab that could not be
/// removed); every other ending is a [`LabRun`].
pub fn run(o: &LabRunOpts, ctx: &RunContext, sink: &dyn LabSink) -> Result<LabRun> {
    let programs = super::programs(ctx)?;
    let spec = spec_of(o)?;
    let client_host = o.client_host.clone().unwrap_or(spec.hosts[0].clone());
    let server_host = o.server_host.clone().unwrap_or(spec.hosts[1].clone());
    for h in [&client_host, &server_host] {
        ensure!(
            spec.hosts.contains(h),
            Job,
            "no host named {h:?} among the lab's hosts"
        );
    }
    check_job(&o.job)?;
    let mut job = o.job.clone();
    let server_nodelay = job.socket_mut().nodelay;
    let scratch = Scratch::new()?;
    let plan = Plan {
        server: o.server.clone(),
        server_host,
        client_host,
        server_nodelay,
        job,
        dir: scratch.0.clone(),
    };
    // Whatever ends the run before the client wrote results (Ctrl-C during
    // the lab's setup or self-check, a failed self-check, a client that
    // died) still leaves results that name the failure.
    let failed = |e: Error, section: Option<Value>| -> LabRun {
        let mut r = Results::new(plan.job.kind(), ctx.command.clone());
        r.job = serde_json::to_value(&plan.job).ok();
        r.outcome.complete = false;
        r.outcome.failure = Some(e.to_string());
        if let Some(s) = section {
            r.params.insert("lab".into(), s);
        }
        LabRun {
            results: r,
            measured: false,
            error: Some(e),
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
        let section = lab_section(&lab, &plan, &v);
        lab.destroy()?;
        return Ok(failed(
            Error::interrupted("interrupted while the lab was set up, before the job ran"),
            Some(section),
        ));
    }
    if !v.violations.is_empty() && !o.no_verify {
        let section = lab_section(&lab, &plan, &v);
        lab.destroy()?;
        return Ok(failed(
            fail!(
                Local,
                "lab self-check failed, not running on an untrustworthy lab: {} \
                 (`no_verify` runs anyway)",
                v.violations.join("; ")
            ),
            Some(section),
        ));
    }
    let (r, err) = run_job(&lab, &plan, programs);
    let section = lab_section(&lab, &plan, &v);
    lab.destroy()?;
    let Some(mut r) = r else {
        let e = err.unwrap_or_else(|| Error::local("the job's client wrote no results"));
        return Ok(failed(e, Some(section)));
    };
    r.params.insert("lab".into(), section);
    r.command = ctx.command.clone();
    r.target.isolation = Some(format!(
        "lab: client in netns {}, server in netns {}",
        plan.client_host, plan.server_host
    ));
    Ok(LabRun {
        results: r,
        measured: true,
        error: err,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::latency::LatencyJob;
    use crate::bench::tcp_baseline::TcpJob;
    use crate::bench::throughput::ThroughputJob;

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
    fn the_client_gets_the_servers_reference_and_raw_tcp_port() {
        let ior = Path::new("srv.ior");
        // A raw-TCP job has no target: the raw-TCP server is its target.
        let tcp = Job::Tcp(TcpJob::default());
        assert!(tcp.wants_raw_tcp());
        let Job::Tcp(t) = client_job(&tcp, ior, Some("10.0.0.2:4321")) else {
            panic!()
        };
        assert_eq!(t.baseline_target.as_deref(), Some("10.0.0.2:4321"));
        // A GIOP job: the IOR file, and the raw server only with a baseline.
        let lat = Job::Latency(LatencyJob::default());
        assert!(!lat.wants_raw_tcp());
        let Job::Latency(l) = client_job(&lat, ior, None) else {
            panic!()
        };
        assert_eq!(l.target.target.as_deref(), Some("srv.ior"));
        assert_eq!(l.baseline_target, None);
        let tp = Job::Throughput(ThroughputJob {
            baseline: true,
            ..Default::default()
        });
        assert!(tp.wants_raw_tcp());
        let Job::Throughput(t) = client_job(&tp, ior, Some("10.0.0.2:9")) else {
            panic!()
        };
        assert_eq!(
            (t.target.target.as_deref(), t.baseline_target.as_deref()),
            (Some("srv.ior"), Some("10.0.0.2:9"))
        );
        let named = Job::Throughput(ThroughputJob {
            baseline: true,
            baseline_target: Some("h:1".into()),
            ..Default::default()
        });
        assert!(!named.wants_raw_tcp());
    }

    #[test]
    fn a_job_with_a_target_of_its_own_is_refused() {
        let mut j = Job::Latency(LatencyJob::default());
        check_job(&j).unwrap();
        j.target_mut().unwrap().target = Some("x.ior".into());
        assert!(check_job(&j)
            .unwrap_err()
            .to_string()
            .contains("the lab supplies the job's `target`"));
    }
}
