//! `iiopbench suite FILE`: rerun a whole study. A suite file
//! (`fixtures/suites/*.toml`) lists cases, each a bench subcommand with
//! its arguments exactly as on the command line; `[quick]` says how to
//! shrink it for smoke runs. Every case runs against every target (ours
//! embedded, `--target` references, or every installed and built vendor
//! ORB with `--all-orbs`, whose servers are started and stopped here), and
//! all cases land in ONE results file of `kind: "suite"` whose cases are
//! tagged with `command`, `target` and `suite_case` (docs/results-schema.md).
//!
//! Each case runs through the ordinary CLI entry point with `--json` to a
//! temporary file, so any bench subcommand this binary has can appear in
//! a suite; one it lacks is refused before anything runs.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clap::{Args, CommandFactory, Parser};
use serde::Deserialize;

use crate::opts::Cli;
use iiopbench_engine::context::param;
use iiopbench_engine::results::{self, Results, TargetInfo};

/// `suite` options.
#[derive(Debug, Clone, Args)]
pub struct SuiteOpts {
    /// The suite file (fixtures/suites/*.toml).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Run against this server (`IOR:…`, `corbaloc:…`, a file holding
    /// one), optionally labelled `LABEL=REF`; repeat for several. Without
    /// any, our reference server runs embedded.
    #[arg(long, short, value_name = "REF")]
    pub target: Vec<String>,
    /// Run against our server and every installed and built vendor ORB
    /// (`iiopbench orbs list`), starting and stopping each one's server.
    #[arg(long, conflicts_with = "target")]
    pub all_orbs: bool,
    /// The reduced version of the suite (file's `[quick]` section).
    #[arg(long)]
    pub quick: bool,
    /// Write the combined results here (default `<suite name>.json`).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Then write a report (`iiopbench report`) into this directory.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// How long a vendor server may take to say `ready` (it may build first).
    #[arg(long, value_parser = iiopbench_engine::units::parse_duration, default_value = "300s", value_name = "DURATION")]
    pub ready_timeout: Duration,
    /// No tables from the cases.
    #[arg(long, short)]
    pub quiet: bool,
}

/// A suite file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    /// Short name, e.g. `ttcp-1996`.
    pub name: String,
    /// The study it reproduces.
    pub title: String,
    /// Which seed paper (file name prefix in /work/shared/seeds).
    #[serde(default)]
    pub seed: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(rename = "case")]
    pub cases: Vec<SuiteCase>,
    #[serde(default)]
    pub quick: Option<Quick>,
}

/// One case: a bench subcommand and its arguments.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteCase {
    /// Unique within the file; becomes `params.suite_case`.
    pub id: String,
    /// The bench subcommand: `throughput`, `latency`, `connect`, `tcp`, …
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Arguments to use instead of `args` with `--quick`.
    #[serde(default)]
    pub quick_args: Option<Vec<String>>,
    /// What the study calls it (figure / table).
    #[serde(default)]
    pub about: Option<String>,
}

/// The `[quick]` reduction.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quick {
    /// Only these case ids (all when absent).
    #[serde(default)]
    pub cases: Option<Vec<String>>,
    /// Option values replaced in every case that sets the option, e.g.
    /// `"--size" = "1KiB,4KiB"`; cases without it are left alone.
    #[serde(default)]
    pub set: BTreeMap<String, String>,
}

/// Commands that do not talk to an ORB (run once, not per target).
const NO_ORB_TARGET: [&str; 1] = ["tcp"];

/// Options the suite sets itself.
const RESERVED: [&str; 6] = ["--json", "--csv", "--hlog", "--target", "-t", "--quiet"];

impl Suite {
    /// Parse a suite file.
    pub fn load(path: &Path) -> anyhow::Result<Suite> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("reading suite {}: {e}", path.display()))?;
        if let Ok(v) = toml::from_str::<toml::Table>(&text) {
            anyhow::ensure!(
                !v.contains_key("lab"),
                "{} is a network-lab suite: run it with `iiopbench lab suite`",
                path.display()
            );
        }
        let s: Suite =
            toml::from_str(&text).map_err(|e| anyhow::anyhow!("suite {}: {e}", path.display()))?;
        let mut seen = std::collections::BTreeSet::new();
        for c in &s.cases {
            anyhow::ensure!(
                seen.insert(c.id.as_str()),
                "suite {}: case id {:?} appears twice",
                path.display(),
                c.id
            );
        }
        if let Some(q) = &s.quick {
            for id in q.cases.iter().flatten() {
                anyhow::ensure!(
                    seen.contains(id.as_str()),
                    "suite {}: [quick] names case {id:?}, which is not in the file",
                    path.display()
                );
            }
        }
        Ok(s)
    }

    /// The cases to run, with their final arguments.
    pub fn plan(&self, quick: bool) -> Vec<(SuiteCase, Vec<String>)> {
        let q = self.quick.clone().unwrap_or_default();
        self.cases
            .iter()
            .filter(|c| !quick || q.cases.as_ref().is_none_or(|ids| ids.contains(&c.id)))
            .map(|c| {
                let mut args = match (&c.quick_args, quick) {
                    (Some(a), true) => a.clone(),
                    _ => c.args.clone(),
                };
                if quick {
                    for (flag, v) in &q.set {
                        if let Some(i) = args.iter().position(|a| a == flag) {
                            if i + 1 < args.len() {
                                args[i + 1] = v.clone();
                            }
                        }
                    }
                    // A smoke run: one run per case unless the case says.
                    if !args
                        .iter()
                        .any(|a| a == "--runs" || a.starts_with("--runs="))
                    {
                        args.extend(["--runs".into(), "1".into()]);
                    }
                }
                (c.clone(), args)
            })
            .collect()
    }
}

/// The bench subcommands this binary has.
pub fn bench_commands() -> Vec<String> {
    Cli::command()
        .find_subcommand("bench")
        .map(|b| {
            b.get_subcommands()
                .map(|s| s.get_name().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Full argument vector for one case against one target.
fn argv(
    command: &str,
    args: &[String],
    target: Option<&str>,
    json: &Path,
    quiet: bool,
) -> Vec<String> {
    let mut v = vec!["iiopbench".to_string(), "bench".into(), command.into()];
    v.extend(args.iter().cloned());
    if let Some(t) = target {
        v.extend(["--target".into(), t.into()]);
    }
    v.extend(["--json".into(), json.display().to_string()]);
    if quiet {
        v.push("--quiet".into());
    }
    v
}

/// Check every case before running any: known command, no option the
/// suite sets itself, arguments that parse.
pub fn validate(file: &str, plan: &[(SuiteCase, Vec<String>)]) -> anyhow::Result<()> {
    let have = bench_commands();
    for (c, args) in plan {
        anyhow::ensure!(
            have.contains(&c.command),
            "{file}: case {:?} needs `iiopbench bench {}`, which this iiopbench does not have \
             (it has: {})",
            c.id,
            c.command,
            have.join(", ")
        );
        if let Some(a) = args.iter().find(|a| RESERVED.contains(&a.as_str())) {
            anyhow::bail!(
                "{file}: case {:?} sets {a}, which the suite sets itself (use suite's --target/--json)",
                c.id
            );
        }
        let tgt = (!NO_ORB_TARGET.contains(&c.command.as_str())).then_some("IOR:00");
        let v = argv(&c.command, args, tgt, Path::new("x.json"), true);
        let v = crate::deprecated::rewrite(v.into_iter().map(Into::into).collect());
        for w in &v.warnings {
            let w = w.strip_prefix("warning: ").unwrap_or(w);
            eprintln!("warning: {file}: case {:?}: {w}", c.id);
        }
        Cli::try_parse_from(&v.args).map_err(|e| {
            anyhow::anyhow!(
                "{file}: case {:?}: arguments do not parse: {}",
                c.id,
                e.render().to_string().lines().next().unwrap_or("")
            )
        })?;
    }
    Ok(())
}

/// Where cases run.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// Our server, embedded in each run.
    Ours,
    /// A reference given by the user.
    Ref { label: String, reference: String },
    /// A vendor ORB whose server this suite starts.
    Orb(String),
}

impl Target {
    pub fn label(&self) -> String {
        match self {
            Target::Ours => "ours".into(),
            Target::Ref { label, .. } => label.clone(),
            Target::Orb(n) => n.clone(),
        }
    }

    /// Parse `[LABEL=]REF`; the label defaults to the file's stem (or
    /// `target<i>`).
    pub fn parse(s: &str, i: usize) -> Target {
        if let Some((l, r)) = s.split_once('=') {
            if !l.is_empty() && !l.contains(':') && !l.contains('/') {
                return Target::Ref {
                    label: l.into(),
                    reference: r.into(),
                };
            }
        }
        let p = Path::new(s);
        let label = if !s.contains(':') && p.is_file() {
            p.file_stem()
                .map(|x| x.to_string_lossy().into_owned())
                .unwrap_or_else(|| format!("target{i}"))
        } else {
            format!("target{i}")
        };
        Target::Ref {
            label,
            reference: s.into(),
        }
    }
}

/// One placement for every target of a suite, so that their results can
/// be put side by side: the client on the first CPU this process may use,
/// every server it starts (ours, a vendor's, the raw-TCP one) on the
/// second (or the same, on one CPU). A case whose own arguments place
/// itself is left alone.
#[derive(Debug, Clone, Copy)]
struct SuitePlacement {
    client: usize,
    server: Option<usize>,
}

impl SuitePlacement {
    fn choose() -> SuitePlacement {
        let avail = iiopbench_engine::placement::process_cpus();
        let client = avail.first().copied().unwrap_or(0);
        SuitePlacement {
            client,
            server: Some(avail.get(1).copied().unwrap_or(client)),
        }
    }

    fn describe(&self) -> String {
        format!(
            "client CPU {}, servers started by the suite on CPU {}",
            self.client,
            self.server.map(|c| c.to_string()).unwrap_or("?".into())
        )
    }

    /// `args` with the placement added, unless they place the case
    /// themselves; `starts_server`: the case runs a server we place.
    fn args(&self, args: &[String], starts_server: bool) -> Vec<String> {
        let mut v = args.to_vec();
        let placed = args.iter().any(|a| {
            ["--pin", "--client-cpus", "--server-cpus"]
                .iter()
                .any(|p| a == p || a.starts_with(&format!("{p}=")))
        });
        if !placed {
            v.extend(["--client-cpus".into(), self.client.to_string()]);
            if let (true, Some(s)) = (starts_server, self.server) {
                v.extend(["--server-cpus".into(), s.to_string()]);
            }
        }
        v
    }
}

/// A vendor server started for the suite; stopped (SIGTERM, then kill)
/// on drop.
#[derive(Debug)]
struct OrbServer {
    child: Child,
    ior_file: PathBuf,
}

impl OrbServer {
    /// Start `orb`'s server, on `cpu` when given (the affinity is set
    /// before exec, so every thread the server makes inherits it).
    fn start(orb: &str, timeout: Duration, cpu: Option<usize>) -> anyhow::Result<OrbServer> {
        let script = iiopbench_engine::orbs::script(orb, "start")?;
        let ior_file =
            std::env::temp_dir().join(format!("iiopbench-suite-{}-{orb}.ior", std::process::id()));
        let _ = std::fs::remove_file(&ior_file);
        // Not every vendor server accepts port 0: pick a free port here.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| anyhow::anyhow!("finding a free port for {orb}: {e}"))?
            .port();
        let mut cmd = Command::new(&script);
        if let Some(cpu) = cpu {
            use std::os::unix::process::CommandExt;
            let set = iiop_servers::affinity::cpu_set(&[cpu])?;
            // SAFETY: set_current_affinity is one system call and
            // allocates nothing, so it is safe between fork and exec.
            unsafe {
                cmd.pre_exec(move || iiop_servers::affinity::set_current_affinity(&set));
            }
        }
        let mut child = cmd
            .args([
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--ior-file",
            ])
            .arg(&ior_file)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| anyhow::anyhow!("starting {orb} ({}): {e}", script.display()))?;
        let out = child.stdout.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines() {
                let Ok(l) = line else { break };
                if l.trim() == "ready" {
                    let _ = tx.send(());
                }
            }
        });
        let mut srv = OrbServer { child, ior_file };
        let t0 = Instant::now();
        loop {
            if rx.recv_timeout(Duration::from_millis(100)).is_ok() {
                break;
            }
            if let Some(st) = srv.child.try_wait()? {
                anyhow::bail!("{orb} server exited ({st}) before saying ready");
            }
            anyhow::ensure!(
                t0.elapsed() < timeout,
                "{orb} server did not say ready within {timeout:?}"
            );
        }
        anyhow::ensure!(
            srv.ior_file.is_file(),
            "{orb} server said ready but wrote no IOR to {}",
            srv.ior_file.display()
        );
        Ok(srv)
    }
}

impl Drop for OrbServer {
    fn drop(&mut self) {
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                let _ = std::fs::remove_file(&self.ior_file);
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.ior_file);
    }
}

/// Run one case against one target through the ordinary CLI; the results
/// it wrote (if any) and the exit status.
fn run_case(
    command: &str,
    args: &[String],
    target: Option<&str>,
    quiet: bool,
) -> (Option<Results>, i32) {
    let json = std::env::temp_dir().join(format!(
        "iiopbench-suite-{}-{}.json",
        std::process::id(),
        CASE_SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    // Old spellings were warned about by `validate`.
    let v = argv(command, args, target, &json, quiet);
    let v = crate::deprecated::rewrite(v.into_iter().map(Into::into).collect()).args;
    let code = match Cli::try_parse_from(&v) {
        Ok(cli) => crate::run(cli),
        Err(e) => {
            let _ = e.print();
            2
        }
    };
    let r = results::read(&json).ok();
    let _ = std::fs::remove_file(&json);
    (r, code)
}

static CASE_SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Tag `r`'s cases and fold them into the suite results.
fn absorb(out: &mut Results, r: &Results, case: &SuiteCase, target: &str) {
    for c in &r.cases {
        let mut c = c.clone();
        param(&mut c.params.extra, "command", &case.command);
        param(&mut c.params.extra, "target", target);
        param(&mut c.params.extra, "suite_case", &case.id);
        param(&mut c.params.extra, "placement", r.placement.key());
        out.cases.push(c);
    }
    for f in &r.fits {
        let mut f = f.clone();
        f.label = format!("{target} {}: {}", case.id, f.label);
        out.fits.push(f);
    }
}

/// Run the suite; the combined results and whether every case completed.
pub fn run_suite(o: &SuiteOpts) -> anyhow::Result<Results> {
    let suite = Suite::load(&o.file)?;
    let file = o.file.display().to_string();
    let plan = suite.plan(o.quick);
    anyhow::ensure!(!plan.is_empty(), "{file}: no case to run");
    validate(&file, &plan)?;
    let mut targets: Vec<Target> = o
        .target
        .iter()
        .enumerate()
        .map(|(i, t)| Target::parse(t, i + 1))
        .collect();
    if o.all_orbs {
        targets = vec![Target::Ours];
        for (name, _) in iiopbench_engine::orbs::ORBS {
            let s = iiopbench_engine::orbs::status(name);
            if s.installed && s.built {
                targets.push(Target::Orb(name.into()));
            } else if !o.quiet {
                eprintln!("suite: skipping {name} ({})", s.detail);
            }
        }
    }
    if targets.is_empty() {
        targets.push(Target::Ours);
    }
    let mut out = iiopbench_engine::context::new_results(
        "suite",
        TargetInfo::default(),
        iiopbench_engine::results::Placement::default(),
    );
    param(&mut out.params, "suite", &suite.name);
    param(&mut out.params, "title", &suite.title);
    param(&mut out.params, "file", &file);
    param(&mut out.params, "quick", o.quick);
    param(
        &mut out.params,
        "targets",
        targets.iter().map(Target::label).collect::<Vec<_>>(),
    );
    let place = SuitePlacement::choose();
    param(&mut out.params, "placement", place.describe());
    let mut target_info: BTreeMap<String, TargetInfo> = BTreeMap::new();
    let mut failures: Vec<String> = Vec::new();
    let mut first = true;
    let mut ran_once: std::collections::BTreeSet<String> = Default::default();
    for t in &targets {
        anyhow::ensure!(!iiopbench_engine::interrupt::requested(), "interrupted");
        let label = t.label();
        let (server, reference) = match t {
            Target::Ours => (None, None),
            Target::Ref { reference, .. } => (None, Some(reference.clone())),
            Target::Orb(name) => match OrbServer::start(name, o.ready_timeout, place.server) {
                Ok(s) => {
                    let r = s.ior_file.display().to_string();
                    (Some(s), Some(r))
                }
                Err(e) => {
                    failures.push(format!("target {label}: {e}"));
                    continue;
                }
            },
        };
        for (case, args) in &plan {
            if iiopbench_engine::interrupt::requested() {
                failures.push("interrupted".into());
                break;
            }
            let orbless = NO_ORB_TARGET.contains(&case.command.as_str());
            if orbless && !ran_once.insert(case.id.clone()) {
                continue;
            }
            let tlabel = if orbless {
                "raw-tcp".to_string()
            } else {
                label.clone()
            };
            if !o.quiet {
                eprintln!("suite {}: case {} on {tlabel}", suite.name, case.id);
            }
            let tref = if orbless { None } else { reference.as_deref() };
            let args = place.args(args, orbless || !matches!(t, Target::Ref { .. }));
            let (r, code) = run_case(&case.command, &args, tref, o.quiet);
            match r {
                Some(r) => {
                    if first {
                        out.host = r.host.clone();
                        out.placement = r.placement.clone();
                        first = false;
                    }
                    target_info
                        .entry(tlabel.clone())
                        .or_insert_with(|| r.target.clone());
                    absorb(&mut out, &r, case, &tlabel);
                    if !r.outcome.complete || code != 0 {
                        failures.push(format!(
                            "case {} on {tlabel}: {}",
                            case.id,
                            r.outcome.failure.as_deref().unwrap_or("failed")
                        ));
                    }
                }
                None => failures.push(format!(
                    "case {} on {tlabel}: bench {} exited with status {code} without results \
                     (its error is above)",
                    case.id, case.command
                )),
            }
        }
        drop(server);
    }
    out.target = match targets.as_slice() {
        [one] => target_info.get(&one.label()).cloned().unwrap_or_default(),
        _ => TargetInfo {
            kind: "several".into(),
            reference: targets
                .iter()
                .map(Target::label)
                .collect::<Vec<_>>()
                .join(","),
            ..Default::default()
        },
    };
    param(&mut out.params, "target_info", &target_info);
    out.outcome.complete = failures.is_empty();
    out.outcome.failure = (!failures.is_empty()).then(|| failures.join("; "));
    Ok(out)
}

/// Run `suite`: write the results, then the report if asked.
pub fn run(o: &SuiteOpts) -> anyhow::Result<()> {
    let r = run_suite(o)?;
    let name = r
        .params
        .get("suite")
        .and_then(|v| v.as_str())
        .unwrap_or("suite")
        .to_string();
    let out = o
        .json
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{name}.json")));
    results::write_atomic(&out, &results::to_json(&r))?;
    if !o.quiet {
        eprintln!(
            "suite {name}: {} cases written to {}",
            r.cases.len(),
            out.display()
        );
    }
    if let Some(dir) = &o.report {
        crate::cmd::report::write(&[(out.display().to_string(), r.clone())], dir)?;
        if !o.quiet {
            eprintln!("suite {name}: report in {}", dir.display());
        }
    }
    match &r.outcome.failure {
        Some(f) => anyhow::bail!("suite {name}: {f}"),
        None => Ok(()),
    }
}
