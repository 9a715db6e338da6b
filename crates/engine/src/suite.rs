//! Rerunning a whole study (`iiopbench suite FILE`). A suite file
//! (`fixtures/suites/*.toml`) lists cases, each a typed [`Job`] in TOML
//! (`job = { bench = "throughput", sizes = "1KiB..128KiB", … }`); `[quick]`
//! says how to shrink it for smoke runs (fewer cases, and job fields set
//! to other values wherever a case sets them). Every case runs against
//! every target (ours embedded, given references, or every installed and
//! built vendor ORB, whose servers are started and stopped here), in this
//! process, and all cases land in ONE results value of `kind: "suite"`
//! whose cases are tagged with `command` (the job's kind), `target` and
//! `suite_case` (docs/results-schema.md). Every case is checked before
//! any runs.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::error::{bail, ensure, fail, Error, Result};
use crate::job::Job;
use crate::options::CpuList;
use crate::results::{param, Results, TargetInfo};
use crate::run_context::RunContext;

/// What to run and against what.
#[derive(Debug, Clone)]
pub struct StudySuiteOpts {
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
}

impl Default for StudySuiteOpts {
    /// The command line's defaults: no file yet, our server embedded, the
    /// whole suite, 300 s for a vendor server to say `ready`.
    fn default() -> Self {
        StudySuiteOpts {
            file: PathBuf::new(),
            targets: Vec::new(),
            all_orbs: false,
            quick: false,
            ready_timeout: Duration::from_secs(300),
        }
    }
}

/// A study's suite file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudySuite {
    /// Short name, e.g. `ttcp-1996`.
    pub name: String,
    /// The study it reproduces.
    pub title: String,
    /// Which seed paper.
    #[serde(default)]
    pub seed: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(rename = "case")]
    pub cases: Vec<SuiteCase>,
    #[serde(default)]
    pub quick: Option<Quick>,
}

/// One case: an id and a job.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteCase {
    /// Unique within the file; becomes `params.suite_case`.
    pub id: String,
    /// What the study calls it (figure / table).
    #[serde(default)]
    pub about: Option<String>,
    /// The job, in its serde form (`bench` names its kind); read into a
    /// [`Job`] by [`StudySuite::plan`], after `[quick]`'s changes.
    pub job: toml::Table,
}

/// The `[quick]` reduction.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quick {
    /// Only these case ids (all when absent).
    #[serde(default)]
    pub cases: Option<Vec<String>>,
    /// Job fields given other values in every case that sets them, e.g.
    /// `{ sizes = "1KiB,4KiB", total = "256KiB" }` (a table sets the
    /// fields of a table, e.g. `run = { duration = "1s" }`); cases
    /// without the field are left alone.
    #[serde(default)]
    pub set: toml::Table,
}

/// `set`'s values in `job` wherever `job` has the field (recursively in
/// tables); the fields `set` names that `job` has not are left out.
pub fn apply_set(job: &mut toml::Table, set: &toml::Table) {
    for (k, v) in set {
        match (job.get_mut(k), v) {
            (Some(toml::Value::Table(mine)), toml::Value::Table(sub)) => apply_set(mine, sub),
            (Some(mine), v) => *mine = v.clone(),
            (None, _) => {}
        }
    }
}

/// Whether `table` has every field `set` names (recursively): a `[quick]
/// set` field no case has is a typo.
pub fn set_fields_missing(set: &toml::Table, cases: &[&toml::Table]) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in set {
        let having: Vec<&toml::Table> = cases
            .iter()
            .filter_map(|c| c.get(k))
            .filter_map(|x| x.as_table())
            .collect();
        let any = cases.iter().any(|c| c.contains_key(k));
        if !any {
            out.push(k.clone());
        } else if let toml::Value::Table(sub) = v {
            out.extend(
                set_fields_missing(sub, &having)
                    .into_iter()
                    .map(|f| format!("{k}.{f}")),
            );
        }
    }
    out
}

/// A case's job table read as a [`Job`], the error naming the case.
pub fn read_job(what: &str, table: &toml::Table) -> Result<Job> {
    let kind = table.get("bench").and_then(|v| v.as_str()).unwrap_or("");
    ensure!(
        Job::KINDS.contains(&kind),
        Job,
        "{what} needs `iiopbench bench {kind}`, which this iiopbench does not have \
         (it has: {})",
        Job::KINDS.join(", ")
    );
    toml::Value::Table(table.clone())
        .try_into::<Job>()
        .map_err(|e| fail!(Job, "{what}: {}", e.message().trim()))
}

/// Kinds that do not talk to an ORB (run once, not per target).
const NO_ORB_TARGET: [&str; 1] = ["tcp"];

impl StudySuite {
    /// Parse a suite file, and check every case (as written and as
    /// `[quick]` leaves it) before anything runs.
    pub fn load(path: &Path) -> Result<StudySuite> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| fail!(Local, "reading suite {}: {e}", path.display()))?;
        if let Ok(v) = toml::from_str::<toml::Table>(&text) {
            ensure!(
                !v.contains_key("lab"),
                Job,
                "{} is a network-lab suite: run it with `iiopbench lab suite`",
                path.display()
            );
        }
        let s: StudySuite =
            toml::from_str(&text).map_err(|e| fail!(Job, "suite {}: {e}", path.display()))?;
        let file = path.display();
        let mut seen = std::collections::BTreeSet::new();
        for c in &s.cases {
            ensure!(
                seen.insert(c.id.as_str()),
                Job,
                "suite {file}: case id {:?} appears twice",
                c.id
            );
        }
        if let Some(q) = &s.quick {
            for id in q.cases.iter().flatten() {
                ensure!(
                    seen.contains(id.as_str()),
                    Job,
                    "suite {file}: [quick] names case {id:?}, which is not in the file"
                );
            }
            let tables: Vec<&toml::Table> = s.cases.iter().map(|c| &c.job).collect();
            if let Some(f) = set_fields_missing(&q.set, &tables).first() {
                bail!(Job, "suite {file}: [quick] set {f}, which no case has");
            }
        }
        for quick in [false, true] {
            for (c, job) in s.plan_checked(&file.to_string(), quick)? {
                let what = format!("{file}: case {:?}", c.id);
                if job.target().is_some_and(|t| t.target.is_some()) {
                    bail!(
                        Job,
                        "{what} sets `target`, which the suite sets itself (use the suite's targets)"
                    );
                }
                job.validate_fields()
                    .map_err(|e| fail!(Job, "{what}: {e}"))?;
            }
        }
        Ok(s)
    }

    /// The cases to run, each with its job (`[quick]` applied when
    /// `quick`, and then one run per case unless the case says).
    pub fn plan(&self, quick: bool) -> Result<Vec<(SuiteCase, Job)>> {
        self.plan_checked("suite", quick)
    }

    fn plan_checked(&self, file: &str, quick: bool) -> Result<Vec<(SuiteCase, Job)>> {
        let q = self.quick.clone().unwrap_or_default();
        self.cases
            .iter()
            .filter(|c| !quick || q.cases.as_ref().is_none_or(|ids| ids.contains(&c.id)))
            .map(|c| {
                let mut table = c.job.clone();
                if quick {
                    apply_set(&mut table, &q.set);
                }
                let mut job = read_job(&format!("{file}: case {:?}", c.id), &table)?;
                // A smoke run: one run per case unless the case says.
                if quick && job.placement().runs.is_none() {
                    job.placement_mut().runs = Some(1);
                }
                Ok((c.clone(), job))
            })
            .collect()
    }
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

    /// `job` with the placement added, unless it places itself;
    /// `starts_server`: the case runs a server we place.
    fn place(&self, job: &mut Job, starts_server: bool) {
        if job.placement().placed() {
            return;
        }
        let p = job.placement_mut();
        p.client_cpus = CpuList::new(vec![self.client]).ok();
        if let (true, Some(s)) = (starts_server, self.server) {
            p.server_cpus = CpuList::new(vec![s]).ok();
        }
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
    fn start(orb: &str, timeout: Duration, cpu: Option<usize>) -> Result<OrbServer> {
        let ior_file =
            std::env::temp_dir().join(format!("iiopbench-suite-{}-{orb}.ior", std::process::id()));
        let _ = std::fs::remove_file(&ior_file);
        let mut cmd = crate::orbs::start_command(orb, &ior_file)?;
        if let Some(cpu) = cpu {
            use std::os::unix::process::CommandExt;
            let set = iiop_transport::affinity::cpu_set(&[cpu]).map_err(Error::local)?;
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
            .map_err(|e| fail!(Orb, "starting {orb} ({}): {e}", script.display()))?;
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
                bail!(Orb, "{orb} server exited ({st}) before saying ready");
            }
            ensure!(
                t0.elapsed() < timeout,
                Orb,
                "{orb} server did not say ready within {timeout:?}"
            );
        }
        ensure!(
            srv.ior_file.is_file(),
            Orb,
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

/// Tag `r`'s cases and fold them into the suite results.
fn absorb(out: &mut Results, r: &Results, case: &SuiteCase, kind: &str, target: &str) {
    for c in &r.cases {
        let mut c = c.clone();
        param(&mut c.params.extra, "command", kind);
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
/// load, or a case is not a job that can run. `ctx` hears which case runs
/// on which target (notes), each case's progress and each case's results
/// as it finishes ([`Progress::results`](crate::progress::Progress::results)),
/// and gives the command line recorded.
pub fn run(o: &StudySuiteOpts, ctx: &RunContext) -> Result<Results> {
    let suite = StudySuite::load(&o.file)?;
    let file = o.file.display().to_string();
    let plan = suite.plan_checked(&file, o.quick)?;
    ensure!(!plan.is_empty(), Job, "{file}: no case to run");
    let mut targets: Vec<Target> = o
        .targets
        .iter()
        .enumerate()
        .map(|(i, t)| Target::parse(t, i + 1))
        .collect();
    for t in &targets {
        if let Target::Ref { reference, .. } = t {
            crate::target::check_reference(reference)?;
        }
    }
    let progress = &ctx.progress;
    if o.all_orbs {
        targets = vec![Target::Ours];
        for (name, _) in crate::orbs::ORBS {
            let s = crate::orbs::status(name);
            if s.installed && s.built {
                targets.push(Target::Orb(name.into()));
            } else {
                progress.note(&format!("suite: skipping {name} ({})", s.detail));
            }
        }
    }
    if targets.is_empty() {
        targets.push(Target::Ours);
    }
    let mut out = Results::new("suite", ctx.command.clone());
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
    // The parts to run, for the time left: every case on every target,
    // a case that takes no target once.
    let orbless = plan
        .iter()
        .filter(|(_, j)| NO_ORB_TARGET.contains(&j.kind()))
        .count();
    let parts = (plan.len() - orbless) * targets.len() + orbless;
    let mut part = 0;
    for t in &targets {
        ensure!(!crate::interrupt::requested(), Interrupted, "interrupted");
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
        for (case, job) in &plan {
            if crate::interrupt::requested() {
                failures.push("interrupted".into());
                break;
            }
            let kind = job.kind();
            let orbless = NO_ORB_TARGET.contains(&kind);
            if orbless && !ran_once.insert(case.id.clone()) {
                continue;
            }
            let tlabel = if orbless {
                "raw-tcp".to_string()
            } else {
                label.clone()
            };
            progress.note(&format!(
                "suite {}: case {} on {tlabel}",
                suite.name, case.id
            ));
            part += 1;
            progress.stage(crate::progress::Stage::Part, part, parts);
            let mut job = job.clone();
            if let (false, Some(t)) = (orbless, job.target_mut()) {
                t.target = reference.clone();
            }
            place.place(&mut job, orbless || !matches!(t, Target::Ref { .. }));
            let (r, err) = job.run(ctx);
            progress.results(&r);
            if first {
                out.host = r.host.clone();
                out.placement = r.placement.clone();
                first = false;
            }
            target_info
                .entry(tlabel.clone())
                .or_insert_with(|| r.target.clone());
            absorb(&mut out, &r, case, kind, &tlabel);
            if !r.outcome.complete || err.is_some() {
                failures.push(format!(
                    "case {} on {tlabel}: {}",
                    case.id,
                    r.outcome
                        .failure
                        .clone()
                        .or(err.map(|e| e.to_string()))
                        .unwrap_or_else(|| "failed".into())
                ));
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

    fn suite(text: &str) -> Result<StudySuite> {
        let dir = std::env::temp_dir().join(format!(
            "iiopbench-suite-unit-{}-{}",
            std::process::id(),
            CASE_SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("s.toml");
        std::fs::write(&file, text).unwrap();
        let s = StudySuite::load(&file);
        std::fs::remove_dir_all(&dir).unwrap();
        s
    }

    static CASE_SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

    /// A suite case is a typed job in TOML; `[quick]` sets job fields
    /// where a case sets them, and one run per case.
    #[test]
    fn a_suite_case_deserializes_into_the_typed_job() {
        let s = suite(
            "name = \"s\"\ntitle = \"t\"\n\
             [[case]]\nid = \"lat\"\n\
             job = { bench = \"latency\", op = \"echo\", sizes = \"1KiB..4KiB\", count = 10 }\n",
        )
        .unwrap();
        let plan = s.plan(false).unwrap();
        let Job::Latency(l) = &plan[0].1 else {
            panic!("{:?}", plan[0].1)
        };
        assert_eq!(l.op, crate::bench::latency::LatencyOp::Echo);
        assert_eq!(l.sizes.0, [1024, 2048, 4096]);
        assert_eq!((l.count, l.warmup), (10, 1000));
        assert_eq!(l.placement.runs, None);
        let s = suite(
            "name = \"s\"\ntitle = \"t\"\n\
             [[case]]\nid = \"lat\"\njob = { bench = \"latency\", count = 10 }\n\
             [[case]]\nid = \"tp\"\njob = { bench = \"throughput\", total = \"1MiB\" }\n\
             [quick]\nset = { count = 3, total = \"64KiB\" }\n",
        )
        .unwrap();
        let q = s.plan(true).unwrap();
        let (Job::Latency(l), Job::Throughput(t)) = (&q[0].1, &q[1].1) else {
            panic!("{q:?}")
        };
        assert_eq!((l.count, t.total), (3, 64 << 10));
        assert_eq!((l.placement.runs, t.placement.runs), (Some(1), Some(1)));
    }

    #[test]
    fn bad_cases_are_refused_before_anything_runs() {
        let e = |t: &str| suite(t).unwrap_err().to_string();
        let head = "name = \"s\"\ntitle = \"t\"\n";
        assert!(e(&format!(
            "{head}[[case]]\nid = \"a\"\njob = {{ bench = \"nosuch\" }}\n"
        ))
        .contains("case \"a\" needs `iiopbench bench nosuch`"));
        assert!(e(&format!(
            "{head}[[case]]\nid = \"a\"\njob = {{ bench = \"latency\", cuont = 3 }}\n"
        ))
        .contains("cuont"));
        assert!(e(&format!(
            "{head}[[case]]\nid = \"a\"\njob = {{ bench = \"latency\", count = 0 }}\n"
        ))
        .contains("`count` must be at least 1"));
        assert!(e(&format!(
            "{head}[[case]]\nid = \"a\"\njob = {{ bench = \"latency\", target = {{ target = \"x.ior\" }} }}\n"
        ))
        .contains("sets `target`"));
        assert!(e(&format!(
            "{head}[[case]]\nid = \"a\"\njob = {{ bench = \"latency\" }}\n[quick]\nset = {{ cuont = 3 }}\n"
        ))
        .contains("[quick] set cuont, which no case has"));
    }
}
