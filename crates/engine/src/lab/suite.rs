//! `lab suite`: a suite file lists network conditions (the
//! impairment of the client–server link) and bench cases; every case runs
//! under every condition in one lab (re-impaired with `set_link` and
//! re-verified per condition), and one results file holds every case,
//! tagged with its condition in `params` (`condition`, `delay_ms`, `loss`,
//! `rate_bps`, `nagle`, `suite_case`, `kind`, and `bench_params`: the
//! run's own top-level `params`).
//!
//! The format (a plain TOML list; `fixtures/suites/network-2003.toml` is
//! the example and documents it too):
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
//! [[cases]]                   # one per bench run, under every condition
//! name = "pingpong"
//! command = "latency"         # bench sub-command
//! args = ["--op", "echo", "--size", "1,64KiB", "--count", "1000"]
//! nagle = false               # true: TCP_NODELAY off on client and our server
//! [quick]                     # the --quick reduction
//! conditions = ["d40-l2"]     # subset of conditions (all when absent)
//! cases = ["pingpong"]        # subset of cases (all when absent)
//! set = { "--count" = "20" }  # option values replaced in every case's args
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context as _;
use iiop_lab::{Impairment, Lab, LabSpec, LinkSpec, MeasureOptions};
use serde::Deserialize;
use serde_json::{json, Value};

use super::run::{self, Plan};
use super::{LabSink, ServerOpts};
use crate::interrupt;
use crate::results::{Outcome, Results};

/// `lab suite`'s options besides the suite and its plan.
#[derive(Debug, Clone)]
pub struct SuiteOpts {
    /// The server and the executable.
    pub server: ServerOpts,
    /// Run conditions whose self-check fails anyway (marked in the results).
    pub no_verify: bool,
}

/// A suite file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    pub lab: SuiteLab,
    pub cases: Vec<SuiteCase>,
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

/// One bench run.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteCase {
    pub name: String,
    /// `latency`, `throughput`, `connect`.
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Nagle on: `--nodelay false` on the client and on our server.
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
    #[serde(default)]
    pub set: BTreeMap<String, String>,
}

/// What a suite run does: conditions with parsed impairments, and cases
/// with their final argument lists.
#[derive(Debug, Clone)]
pub struct Expanded {
    pub conditions: Vec<(String, Impairment)>,
    pub cases: Vec<(String, Vec<String>, bool)>,
    /// Whether this is the suite's `[quick]` reduction.
    pub quick: bool,
}

impl Suite {
    /// Reads and checks a suite file.
    pub fn load(path: &Path) -> anyhow::Result<Suite> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading suite {}", path.display()))?;
        Suite::parse(&text).with_context(|| format!("suite {}", path.display()))
    }

    /// Parses and checks a suite file's text.
    pub fn parse(text: &str) -> anyhow::Result<Suite> {
        let s: Suite = toml::from_str(text)?;
        anyhow::ensure!(!s.lab.conditions.is_empty(), "suite has no conditions");
        anyhow::ensure!(!s.cases.is_empty(), "suite has no cases");
        anyhow::ensure!(
            s.lab.client != s.lab.server,
            "client and server hosts must differ"
        );
        Ok(s)
    }

    /// The conditions and cases to run (the `[quick]` reduction applied).
    pub fn expand(&self, quick: bool) -> anyhow::Result<Expanded> {
        let q = if quick {
            self.quick
                .clone()
                .ok_or_else(|| anyhow::anyhow!("suite {} has no [quick] table", self.name))?
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
                .with_context(|| format!("condition {}: link {:?}", c.name, c.link))?;
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
                anyhow::ensure!(known.contains(&n), "[quick] names unknown {what} {n:?}");
            }
        }
        let mut cases = Vec::new();
        for c in &self.cases {
            if q.cases.as_ref().is_some_and(|l| !l.contains(&c.name)) {
                continue;
            }
            let mut args = vec![c.command.clone()];
            args.extend(apply_set(&c.args, &q.set));
            // A smoke run: one run per case unless the case says.
            if quick
                && !args
                    .iter()
                    .any(|a| a == "--runs" || a.starts_with("--runs="))
            {
                args.extend(["--runs".into(), "1".into()]);
            }
            if c.nagle {
                args.extend(["--nodelay".into(), "false".into()]);
            }
            cases.push((c.name.clone(), args, c.nagle));
        }
        Ok(Expanded {
            conditions,
            cases,
            quick,
        })
    }
}

/// Replaces the value after each option named in `set` (options absent
/// from `args` are left absent: a reduction never adds an option a case
/// did not have).
pub fn apply_set(args: &[String], set: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = args.to_vec();
    let mut i = 0;
    while i + 1 < out.len() {
        if let Some(v) = set.get(&out[i]) {
            out[i + 1] = v.clone();
            i += 2;
        } else {
            i += 1;
        }
    }
    out
}

/// `lab suite`: every case of `plan` under every condition in one lab
/// (re-impaired and re-verified per condition), one results value of kind
/// `lab-suite` (incomplete, naming the first failure, when a condition or
/// case failed). `sink` hears each condition and case as a heading, the
/// self-measurements, and the failures as notes. An `Err` when the lab
/// could not be built or removed, or no case left any results.
pub fn run(
    suite: &Suite,
    plan: &Expanded,
    o: &SuiteOpts,
    sink: &dyn LabSink,
) -> anyhow::Result<Results> {
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
            lab.set_link(&c, &s, *imp).map_err(anyhow::Error::from)
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
        for (case_name, args, nagle) in &plan.cases {
            if interrupt::requested() {
                failure.get_or_insert("interrupted".into());
                complete = false;
                break 'conds;
            }
            sink.heading(&format!(
                "-- {cname} / {case_name}: bench {}",
                args.join(" ")
            ));
            let p = Plan {
                server: o.server.clone(),
                server_host: s.clone(),
                client_host: c.clone(),
                server_nodelay: !*nagle,
                bench: args.clone(),
                dir: scratch.0.clone(),
            };
            let (r, err) = run::run_bench(&lab, &p);
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
        anyhow::bail!(
            "suite {} produced no results: {}",
            suite.name,
            failure.unwrap_or_default()
        );
    };
    r.kind = "lab-suite".into();
    r.command = std::env::args().collect();
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
        let s = Suite::parse(&std::fs::read_to_string(FILE).unwrap()).unwrap();
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
        let pp = full.cases.iter().find(|c| c.0 == "pingpong").unwrap();
        let count = pp.1.iter().position(|a| a == "--count").unwrap();
        assert_eq!(pp.1[count + 1], "1000");
        assert!(full.cases.iter().any(|c| c.2), "a Nagle-on case");
        let quick = s.expand(true).unwrap();
        assert!(quick.conditions.len() < full.conditions.len());
        let qpp = quick.cases.iter().find(|c| c.0 == "pingpong").unwrap();
        let count = qpp.1.iter().position(|a| a == "--count").unwrap();
        assert_ne!(qpp.1[count + 1], "1000");
    }

    #[test]
    fn set_replaces_only_present_options() {
        let set: BTreeMap<String, String> = [("--count".to_string(), "5".to_string())]
            .into_iter()
            .collect();
        let a = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            apply_set(&a(&["--op", "echo", "--count", "1000"]), &set),
            a(&["--op", "echo", "--count", "5"])
        );
        assert_eq!(apply_set(&a(&["--op", "ping"]), &set), a(&["--op", "ping"]));
    }

    #[test]
    fn bad_suites_are_refused() {
        assert!(Suite::parse("name = \"x\"\ncases = []\n[lab]\nconditions = []\n").is_err());
        let unknown_quick = r#"
name = "x"
[lab]
conditions = [{ name = "a", link = "delay=5ms" }]
[[cases]]
name = "p"
command = "latency"
[quick]
conditions = ["zz"]
"#;
        let s = Suite::parse(unknown_quick).unwrap();
        let e = s.expand(true).unwrap_err();
        assert!(e.to_string().contains("unknown condition \"zz\""), "{e}");
        let bad_link = unknown_quick.replace("delay=5ms", "delay=5parsecs");
        assert!(Suite::parse(&bad_link).unwrap().expand(false).is_err());
    }
}
