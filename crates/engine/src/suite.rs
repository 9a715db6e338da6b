//! Rerunning a whole study (`iiopbench suite FILE`). A suite file
//! (`fixtures/suites/*.toml`) lists cases, each a bench subcommand with
//! its arguments exactly as on the command line; `[quick]` says how to
//! shrink it for smoke runs. Every case runs against every target (ours
//! embedded, given references, or every installed and built vendor ORB,
//! whose servers are started and stopped here), and all cases land in ONE
//! results value of `kind: "suite"` whose cases are tagged with `command`,
//! `target` and `suite_case` (docs/results-schema.md).
//!
//! The cases are command lines, so whoever parses command lines runs them:
//! [`run`] hands each case's argument vector (with `--json` to a temporary
//! file) to a [`CaseRunner`] — the command line's own entry point in
//! `iiopbench` — and reads back the results it wrote. Every case is
//! checked by the runner before any runs.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::context::param;
use crate::progress::Progress;
use crate::results::{self, Results, TargetInfo};

/// What to run and against what.
#[derive(Debug, Clone)]
pub struct SuiteOpts {
    /// The suite file (fixtures/suites/*.toml).
    pub file: PathBuf,
    /// Run against these servers (`IOR:…`, `corbaloc:…`, a file holding
    /// one), each optionally labelled `LABEL=REF`. None: our reference
    /// server, embedded in each case's run.
    pub targets: Vec<String>,
    /// Run against our server and every installed and built vendor ORB,
    /// starting and stopping each one's server.
    pub all_orbs: bool,
    /// The reduced version of the suite (the file's `[quick]` section).
    pub quick: bool,
    /// How long a vendor server may take to say `ready` (it may build
    /// first).
    pub ready_timeout: Duration,
    /// The cases print no tables (`--quiet` on each case).
    pub quiet: bool,
    /// Hears which case runs on which target, and vendor ORBs skipped.
    pub progress: Progress,
}

impl Default for SuiteOpts {
    /// The command line's defaults: no file yet, our server embedded, the
    /// whole suite, 300 s for a vendor server to say `ready`.
    fn default() -> Self {
        SuiteOpts {
            file: PathBuf::new(),
            targets: Vec::new(),
            all_orbs: false,
            quick: false,
            ready_timeout: Duration::from_secs(300),
            quiet: false,
            progress: Progress::none(),
        }
    }
}

/// Runs one case's command line.
pub trait CaseRunner {
    /// The bench subcommands it can run (`throughput`, `latency`, …).
    fn commands(&self) -> Vec<String>;
    /// Whether `argv` (a full command line, `iiopbench bench …`) parses;
    /// `what` names the case in messages (`FILE: case "ID"`).
    fn check(&self, what: &str, argv: &[String]) -> anyhow::Result<()>;
    /// Run `argv`, which writes its results to the `--json` file it names;
    /// the exit status.
    fn run(&self, argv: &[String]) -> i32;
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

/// Full argument vector for one case against one target.
pub fn argv(
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

/// Check every case before running any: a command `runner` has, no
/// option the suite sets itself, arguments that parse.
pub fn validate(
    file: &str,
    plan: &[(SuiteCase, Vec<String>)],
    runner: &dyn CaseRunner,
) -> anyhow::Result<()> {
    let have = runner.commands();
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
        runner.check(&format!("{file}: case {:?}", c.id), &v)?;
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
        let avail = crate::placement::process_cpus();
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
        let ior_file =
            std::env::temp_dir().join(format!("iiopbench-suite-{}-{orb}.ior", std::process::id()));
        let _ = std::fs::remove_file(&ior_file);
        let mut cmd = crate::orbs::start_command(orb, &ior_file)?;
        if let Some(cpu) = cpu {
            use std::os::unix::process::CommandExt;
            let set = iiop_transport::affinity::cpu_set(&[cpu])?;
            // SAFETY: set_current_affinity is one system call and
            // allocates nothing, so it is safe between fork and exec.
            unsafe {
                cmd.pre_exec(move || iiop_transport::affinity::set_current_affinity(&set));
            }
        }
        let script = Path::new(cmd.get_program()).to_path_buf();
        let mut child = cmd
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

/// Run one case against one target through `runner`; the results it
/// wrote (if any) and the exit status.
fn run_case(
    runner: &dyn CaseRunner,
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
    let code = runner.run(&argv(command, args, target, &json, quiet));
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

/// Run the suite; the combined results (`outcome` says whether every case
/// completed). An error only when nothing could run: the file does not
/// load, or a case does not pass [`validate`].
pub fn run(o: &SuiteOpts, runner: &dyn CaseRunner) -> anyhow::Result<Results> {
    let suite = Suite::load(&o.file)?;
    let file = o.file.display().to_string();
    let plan = suite.plan(o.quick);
    anyhow::ensure!(!plan.is_empty(), "{file}: no case to run");
    validate(&file, &plan, runner)?;
    let mut targets: Vec<Target> = o
        .targets
        .iter()
        .enumerate()
        .map(|(i, t)| Target::parse(t, i + 1))
        .collect();
    if o.all_orbs {
        targets = vec![Target::Ours];
        for (name, _) in crate::orbs::ORBS {
            let s = crate::orbs::status(name);
            if s.installed && s.built {
                targets.push(Target::Orb(name.into()));
            } else {
                o.progress
                    .note(&format!("suite: skipping {name} ({})", s.detail));
            }
        }
    }
    if targets.is_empty() {
        targets.push(Target::Ours);
    }
    let mut out = crate::context::new_results(
        "suite",
        TargetInfo::default(),
        crate::results::Placement::default(),
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
        anyhow::ensure!(!crate::interrupt::requested(), "interrupted");
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
            if crate::interrupt::requested() {
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
            o.progress.note(&format!(
                "suite {}: case {} on {tlabel}",
                suite.name, case.id
            ));
            let tref = if orbless { None } else { reference.as_deref() };
            let args = place.args(args, orbless || !matches!(t, Target::Ref { .. }));
            let (r, code) = run_case(runner, &case.command, &args, tref, o.quiet);
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Runs every case by writing one measured case into its `--json`
    /// file, and remembers the command lines.
    #[derive(Default)]
    struct Fake(Mutex<Vec<Vec<String>>>);

    impl CaseRunner for Fake {
        fn commands(&self) -> Vec<String> {
            vec!["latency".into(), "tcp".into()]
        }
        fn check(&self, _: &str, _: &[String]) -> anyhow::Result<()> {
            Ok(())
        }
        fn run(&self, argv: &[String]) -> i32 {
            self.0.lock().unwrap().push(argv.to_vec());
            let json = &argv[argv.iter().position(|a| a == "--json").unwrap() + 1];
            let mut r = crate::context::new_results(
                "latency",
                TargetInfo::default(),
                crate::results::Placement::default(),
            );
            r.outcome.complete = true;
            r.cases.push(crate::results::Case {
                name: argv[2].clone(),
                calls: 7,
                ..crate::results::Case::default()
            });
            results::write_atomic(Path::new(json), &results::to_json(&r)).unwrap();
            0
        }
    }

    #[test]
    fn every_case_runs_on_every_target_and_the_raw_tcp_case_once() {
        let dir = std::env::temp_dir().join(format!("iiopbench-suite-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("s.toml");
        std::fs::write(
            &file,
            "name = \"s\"\ntitle = \"t\"\n\
             [[case]]\nid = \"lat\"\ncommand = \"latency\"\nargs = [\"--count\", \"10\"]\n\
             [[case]]\nid = \"raw\"\ncommand = \"tcp\"\n",
        )
        .unwrap();
        let runner = Fake::default();
        let o = SuiteOpts {
            file,
            targets: vec!["a=IOR:01".into(), "b=IOR:02".into()],
            ..SuiteOpts::default()
        };
        let r = run(&o, &runner).unwrap();
        assert!(r.outcome.complete, "{:?}", r.outcome.failure);
        let tags: Vec<(String, String)> = r
            .cases
            .iter()
            .map(|c| {
                let t = |k: &str| c.params.extra[k].as_str().unwrap().to_string();
                (t("suite_case"), t("target"))
            })
            .collect();
        let want = [("lat", "a"), ("raw", "raw-tcp"), ("lat", "b")];
        assert_eq!(
            tags,
            want.map(|(a, b)| (a.to_string(), b.to_string())).to_vec()
        );
        let argvs = runner.0.lock().unwrap();
        assert_eq!(argvs.len(), 3);
        assert_eq!(
            argvs[0][..5],
            ["iiopbench", "bench", "latency", "--count", "10"]
        );
        assert!(argvs[0].windows(2).any(|w| w == ["--target", "IOR:01"]));
        assert!(!argvs[1].iter().any(|a| a == "--target"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
