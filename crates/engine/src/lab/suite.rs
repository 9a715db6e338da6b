//! `lab suite`: a suite file lists network conditions (the impairment of
//! the client–server link) and cases, each a typed job; every case runs
//! under every condition in one lab (re-impaired with `set_link` and
//! re-verified per condition), and one results file holds every case,
//! tagged with its condition in `params` (`condition`, `delay_ms`,
//! `loss`, `rate_bps`, `nagle`, `suite_case`, `kind`, and `bench_params`:
//! the run's own top-level `params`).
//!
//! The format (`fixtures/suites/network-2003.toml` is the example and
//! documents it too):
//!
//! ```toml
//! name = "network-2003"
//! [lab]                       # topology: two hosts, one link
//! client = "client"           # host names (defaults shown)
//! server = "server"
//! mtu = 1500
//! [[lab.conditions]]          # one per network condition
//! name = "d40-l2"
//! link = "delay=40ms,loss=2%,rate=t1"   # both directions, `lab run --link` syntax
//! [[cases]]                   # one per job, under every condition
//! name = "pingpong"
//! job = { bench = "latency", op = "echo", sizes = [1, 65536], count = 1000 }
//! nagle = false               # true: TCP_NODELAY off on client and our server
//! [quick]                     # the --quick reduction
//! conditions = ["d40-l2"]     # subset of conditions (all when absent)
//! cases = ["pingpong"]        # subset of cases (all when absent)
//! set = { count = 20 }        # job fields set wherever a case sets them
//! ```

use std::path::Path;

use iiop_lab::{Impairment, Lab, LabSpec, LinkSpec, MeasureOptions};
use serde::Deserialize;
use serde_json::{json, Value};

use super::run::{self, Plan};
use super::{LabSink, ServerOpts};
use crate::error::{bail, ensure, fail, Result};
use crate::interrupt;
use crate::job::Job;
use crate::results::{Outcome, Results};
use crate::run_context::RunContext;

/// `lab suite`'s options besides the suite and its plan.
#[derive(Debug, Clone)]
pub struct LabSuiteOpts {
    /// The server.
    pub server: ServerOpts,
    /// Run conditions whose self-check fails anyway (marked in the results).
    pub no_verify: bool,
}

/// A network-lab suite file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabSuite {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    pub lab: SuiteLab,
    pub cases: Vec<LabCase>,
    #[serde(default)]
    pub quick: Option<Quick>,
}

/// The `[lab]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteLab {
    #[serde(default = "default_client")]
    pub client: String,
    #[serde(default = "default_server")]
    pub server: String,
    #[serde(default = "default_mtu")]
    pub mtu: u32,
    pub conditions: Vec<Condition>,
}

fn default_client() -> String {
    "client".into()
}
fn default_server() -> String {
    "server".into()
}
fn default_mtu() -> u32 {
    1500
}

/// One network condition.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    pub name: String,
    /// Impairment of both directions (`delay=…,loss=…,rate=…`).
    pub link: String,
}

/// One job, run under every condition.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabCase {
    pub name: String,
    /// The job, in its serde form (`bench` names its kind; no target:
    /// the lab's server is its target).
    pub job: toml::Table,
    /// Nagle on: TCP_NODELAY off on the client and on our server.
    #[serde(default)]
    pub nagle: bool,
}

/// The `[quick]` reduction.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quick {
    #[serde(default)]
    pub conditions: Option<Vec<String>>,
    #[serde(default)]
    pub cases: Option<Vec<String>>,
    /// Job fields given other values wherever a case sets them (as a
    /// study suite's `[quick] set`).
    #[serde(default)]
    pub set: toml::Table,
}

/// One case as it runs: its name, its job, and whether Nagle is on.
#[derive(Debug, Clone)]
pub struct PlannedCase {
    pub name: String,
    pub job: Job,
    pub nagle: bool,
}

/// What a suite run does: conditions with parsed impairments, and cases
/// with their final jobs.
#[derive(Debug, Clone)]
pub struct Expanded {
    pub conditions: Vec<(String, Impairment)>,
    pub cases: Vec<PlannedCase>,
    /// Whether this is the suite's `[quick]` reduction.
    pub quick: bool,
}

impl LabSuite {
    /// Reads and checks a suite file.
    pub fn load(path: &Path) -> Result<LabSuite> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| fail!(Local, "reading suite {}: {e}", path.display()))?;
        LabSuite::parse(&text).map_err(|e| e.context(format!("suite {}", path.display())))
    }

    /// Parses and checks a suite file's text: every case, as written and
    /// as `[quick]` leaves it, is a job the lab can run.
    pub fn parse(text: &str) -> Result<LabSuite> {
        let s: LabSuite = toml::from_str(text).map_err(|e| fail!(Job, "{e}"))?;
        ensure!(!s.lab.conditions.is_empty(), Job, "suite has no conditions");
        ensure!(!s.cases.is_empty(), Job, "suite has no cases");
        ensure!(
            s.lab.client != s.lab.server,
            Job,
            "client and server hosts must differ"
        );
        if let Some(q) = &s.quick {
            let tables: Vec<&toml::Table> = s.cases.iter().map(|c| &c.job).collect();
            if let Some(f) = crate::suite::set_fields_missing(&q.set, &tables).first() {
                bail!(Job, "[quick] set {f}, which no case has");
            }
        }
        for c in &s.cases {
            let what = format!("case {:?}", c.name);
            run::check_job(&crate::suite::read_job(&what, &c.job)?)
                .map_err(|e| e.context(&what))?;
        }
        Ok(s)
    }

    /// The conditions and cases to run (the `[quick]` reduction applied).
    pub fn expand(&self, quick: bool) -> Result<Expanded> {
        let q = if quick {
            self.quick
                .clone()
                .ok_or_else(|| fail!(Job, "suite {} has no [quick] table", self.name))?
        } else {
            Quick::default()
        };
        let mut conditions = Vec::new();
        for c in &self.lab.conditions {
            if q.conditions.as_ref().is_some_and(|l| !l.contains(&c.name)) {
                continue;
            }
            let imp: Impairment = c
                .link
                .parse()
                .map_err(|e| fail!(Job, "condition {}: link {:?}: {e}", c.name, c.link))?;
            conditions.push((c.name.clone(), imp));
        }
        for (what, names, known) in [
            (
                "condition",
                &q.conditions,
                self.lab
                    .conditions
                    .iter()
                    .map(|c| &c.name)
                    .collect::<Vec<_>>(),
            ),
            (
                "case",
                &q.cases,
                self.cases.iter().map(|c| &c.name).collect::<Vec<_>>(),
            ),
        ] {
            for n in names.iter().flatten() {
                ensure!(
                    known.contains(&n),
                    Job,
                    "[quick] names unknown {what} {n:?}"
                );
            }
        }
        let mut cases = Vec::new();
        for c in &self.cases {
            if q.cases.as_ref().is_some_and(|l| !l.contains(&c.name)) {
                continue;
            }
            let mut table = c.job.clone();
            crate::suite::apply_set(&mut table, &q.set);
            let mut job = crate::suite::read_job(&format!("case {:?}", c.name), &table)?;
            // A smoke run: one run per case unless the case says.
            if quick && job.placement().runs.is_none() {
                job.placement_mut().runs = Some(1);
            }
            if c.nagle {
                job.socket_mut().nodelay = false;
            }
            run::check_job(&job).map_err(|e| e.context(format!("case {:?}", c.name)))?;
            cases.push(PlannedCase {
                name: c.name.clone(),
                job,
                nagle: c.nagle,
            });
        }
        Ok(Expanded {
            conditions,
            cases,
            quick,
        })
    }
}

/// `lab suite`: every case of `plan` under every condition in one lab
/// (re-impaired and re-verified per condition), one results value of kind
/// `lab-suite` (incomplete, naming the first failure, when a condition or
/// case failed). `sink` hears each condition and case as a heading, the
/// self-measurements, and the failures as notes. An `Err` when the lab
/// could not be built or removed, or no case left any results.
pub fn run(
    suite: &LabSuite,
    plan: &Expanded,
    o: &LabSuiteOpts,
    ctx: &RunContext,
    sink: &dyn LabSink,
) -> Result<Results> {
    let programs = super::programs(ctx)?;
    let (c, s) = (suite.lab.client.clone(), suite.lab.server.clone());
    let mk = |imp: Impairment| {
        let mut l = LinkSpec::symmetric(&c, &s, imp);
        l.mtu = suite.lab.mtu;
        LabSpec {
            hosts: vec![c.clone(), s.clone()],
            links: vec![l],
            ..LabSpec::pair("a", "b", Impairment::NONE)
        }
    };
    let mut lab = Lab::create(mk(plan.conditions[0].1))?;
    let scratch = run::Scratch::new()?;
    let mut merged: Option<Results> = None;
    let mut cond_sections = Vec::new();
    let mut failure: Option<String> = None;
    let mut complete = true;
    let mut first = true;
    'conds: for (cname, imp) in &plan.conditions {
        if interrupt::requested() {
            failure.get_or_insert("interrupted".into());
            complete = false;
            break;
        }
        sink.heading(&format!("== condition {cname}: {imp}"));
        // A condition the lab cannot set up or measure is recorded and
        // skipped; the results of the others are still written.
        let set = if first {
            Ok(())
        } else {
            lab.set_link(&c, &s, *imp)
                .map_err(crate::error::Error::from)
        };
        first = false;
        let v = match set.and_then(|()| run::verify(&lab, &MeasureOptions::default(), sink)) {
            Ok(v) => v,
            Err(e) => {
                sink.note(&format!("lab suite: condition {cname}: {e:#}"));
                complete = false;
                failure.get_or_insert(format!("condition {cname}: {e:#}"));
                cond_sections.push(
                    json!({ "name": cname, "link": imp.to_string(), "error": format!("{e:#}") }),
                );
                continue;
            }
        };
        sink.verified(&v);
        let mut section = json!({ "name": cname, "link": imp.to_string() });
        merge_obj(&mut section, v.to_json());
        cond_sections.push(section);
        if !v.violations.is_empty() && !o.no_verify {
            complete = false;
            failure.get_or_insert(format!(
                "condition {cname}: self-check failed: {}",
                v.violations.join("; ")
            ));
            continue;
        }
        for case in &plan.cases {
            let (case_name, nagle) = (&case.name, case.nagle);
            if interrupt::requested() {
                failure.get_or_insert("interrupted".into());
                complete = false;
                break 'conds;
            }
            sink.heading(&format!(
                "-- {cname} / {case_name}: bench {}",
                case.job.kind()
            ));
            let p = Plan {
                server: o.server.clone(),
                server_host: s.clone(),
                client_host: c.clone(),
                server_nodelay: !nagle,
                job: case.job.clone(),
                dir: scratch.0.clone(),
            };
            let (r, err) = run::run_job(&lab, &p, programs);
            if let Some(e) = &err {
                complete = false;
                sink.note(&format!("lab suite: {cname} / {case_name}: {e:#}"));
                failure.get_or_insert(format!("{cname} / {case_name}: {e:#}"));
            }
            if let Some(r) = r {
                let tags = [
                    ("condition", json!(cname)),
                    ("suite_case", json!(case_name)),
                    ("delay_ms", json!(imp.delay.as_secs_f64() * 1000.0)),
                    ("jitter_ms", json!(imp.jitter.as_secs_f64() * 1000.0)),
                    ("loss", json!(imp.loss)),
                    ("rate_bps", json!(imp.rate_bps)),
                    ("nagle", json!(nagle)),
                    ("kind", json!(r.kind)),
                    ("bench_params", json!(r.params)),
                ];
                super::add_tagged(&mut merged, r, &format!("{cname} {case_name}"), &tags);
            }
        }
    }
    lab.destroy()?;
    let Some(mut r) = merged else {
        bail!(
            Target,
            "suite {} produced no results: {}",
            suite.name,
            failure.unwrap_or_default()
        );
    };
    r.kind = "lab-suite".into();
    r.command = ctx.command.clone();
    r.job = None;
    // Per-run parameters live in each case's `bench_params`.
    r.params.clear();
    r.target.isolation = Some(format!("lab: client in netns {c}, server in netns {s}"));
    r.params.insert(
        "lab".into(),
        json!({
            "suite": suite.name,
            "quick": plan.quick,
            "server": o.server.kind.name(),
            "client_host": c,
            "server_host": s,
            "conditions": cond_sections,
        }),
    );
    r.outcome = Outcome {
        complete: complete && r.outcome.complete,
        failure: failure.or(r.outcome.failure.clone()),
    };
    Ok(r)
}

fn merge_obj(into: &mut Value, from: Value) {
    if let (Some(a), Value::Object(b)) = (into.as_object_mut(), from) {
        a.extend(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/suites/network-2003.toml"
    );

    #[test]
    fn network_2003_parses_and_reduces() {
        let s = LabSuite::parse(&std::fs::read_to_string(FILE).unwrap()).unwrap();
        assert_eq!(s.name, "network-2003");
        let full = s.expand(false).unwrap();
        // 4 delays x 5 loss levels.
        assert_eq!(full.conditions.len(), 20);
        let d300 = full.conditions.iter().find(|c| c.0 == "d300-l8").unwrap().1;
        assert_eq!(d300.delay, std::time::Duration::from_millis(300));
        assert_eq!(d300.loss, 0.08);
        assert_eq!(d300.rate_bps, Some(iiop_lab::T1_BPS));
        assert!(full
            .conditions
            .iter()
            .all(|c| c.1.rate_bps == Some(iiop_lab::T1_BPS)));
        let count = |e: &Expanded| match &e.cases.iter().find(|c| c.name == "pingpong").unwrap().job
        {
            Job::Latency(l) => l.count,
            other => panic!("{other:?}"),
        };
        assert_eq!(count(&full), 1000);
        let nagle = full
            .cases
            .iter()
            .find(|c| c.nagle)
            .expect("a Nagle-on case");
        let Job::Latency(l) = &nagle.job else {
            panic!()
        };
        assert!(!l.socket.nodelay);
        let quick = s.expand(true).unwrap();
        assert!(quick.conditions.len() < full.conditions.len());
        assert_ne!(count(&quick), 1000);
    }

    #[test]
    fn set_replaces_only_present_fields() {
        let mut job: toml::Table = toml::from_str("bench = \"latency\"\ncount = 1000\n").unwrap();
        let set: toml::Table = toml::from_str("count = 5\nwarmup = 3\n").unwrap();
        crate::suite::apply_set(&mut job, &set);
        assert_eq!(job["count"].as_integer(), Some(5));
        assert!(!job.contains_key("warmup"));
        let mut nested: toml::Table =
            toml::from_str("bench = \"closed\"\nrun = { duration = \"5s\" }\n").unwrap();
        let set: toml::Table = toml::from_str("run = { duration = \"1s\", seed = 2 }\n").unwrap();
        crate::suite::apply_set(&mut nested, &set);
        assert_eq!(nested["run"]["duration"].as_str(), Some("1s"));
        assert!(nested["run"].get("seed").is_none());
    }

    #[test]
    fn bad_suites_are_refused() {
        assert!(LabSuite::parse("name = \"x\"\ncases = []\n[lab]\nconditions = []\n").is_err());
        let unknown_quick = r#"
name = "x"
[lab]
conditions = [{ name = "a", link = "delay=5ms" }]
[[cases]]
name = "p"
job = { bench = "latency" }
[quick]
conditions = ["zz"]
"#;
        let s = LabSuite::parse(unknown_quick).unwrap();
        let e = s.expand(true).unwrap_err();
        assert!(e.to_string().contains("unknown condition \"zz\""), "{e}");
        let bad_link = unknown_quick.replace("delay=5ms", "delay=5parsecs");
        assert!(LabSuite::parse(&bad_link).unwrap().expand(false).is_err());
        let targeted = unknown_quick.replace(
            "{ bench = \"latency\" }",
            "{ bench = \"latency\", target = { target = \"x.ior\" } }",
        );
        assert!(LabSuite::parse(&targeted)
            .unwrap_err()
            .to_string()
            .contains("supplies the job's `target`"));
    }
}
