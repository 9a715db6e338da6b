//! The interop suite and matrix as results documents (`kind: "interop"` and
//! `kind: "interop-matrix"`, docs/results-schema.md): pure functions from
//! reports to [`Results`]. The tables a person reads are the command
//! line's.

use std::collections::BTreeMap;
use std::path::PathBuf;

use iiop_giop::ior::{orb_type_name, Ior};
use serde::Serialize;
use serde_json::json;

use super::suite::{Check, SuiteReport, Verdict};
use crate::results::{Case, CaseParams, Placement, Results, TargetInfo};

/// One client × server run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Cell {
    pub client: String,
    pub server: String,
    pub passed: usize,
    pub failed: usize,
    /// `name: detail` of every failed check.
    pub failures: Vec<String>,
    /// `name: detail` of every note (allowed differences).
    pub notes: Vec<String>,
    /// `name: detail` of every skipped check (the reason is the detail).
    pub skipped: Vec<String>,
    /// The client could not run to the end (timeout, crash, bad output).
    pub error: Option<String>,
    pub seconds: f64,
    /// Every check as reported (a vendor client's with its verdict only,
    /// in `reference_giop`), for classifying ([`super::classify`]).
    pub checks: Vec<Check>,
    /// The GIOP version of the reference the client was given.
    pub reference_giop: String,
    /// Where the bytes of this run were recorded (`--via-proxy` with
    /// `--record-dir`).
    pub recording: Option<PathBuf>,
}

impl Cell {
    /// Nothing failed and the run completed.
    pub fn ok(&self) -> bool {
        self.failed == 0 && self.error.is_none() && self.passed > 0
    }

    /// `pass 195/195`, `FAIL 3/169` (passed / passed + failed) or `ERROR`.
    pub fn label(&self) -> String {
        let total = self.passed + self.failed;
        if self.error.is_some() && total == 0 {
            "ERROR".into()
        } else if self.ok() {
            format!("pass {}/{total}", self.passed)
        } else {
            format!("FAIL {}/{total}", self.passed)
        }
    }
}

/// The target as the results schema describes it.
pub fn target_info(ior: &Ior, kind: &str, reference: &str) -> TargetInfo {
    let p = ior.iiop_profile();
    let short = if reference.len() > 80 {
        format!("{}…", &reference[..80])
    } else {
        reference.to_string()
    };
    TargetInfo {
        kind: kind.into(),
        reference: short,
        host: p.as_ref().map(|p| p.host.clone()).unwrap_or_default(),
        port: p.as_ref().map_or(0, |p| p.port),
        orb_type: p
            .as_ref()
            .and_then(|p| p.orb_type())
            .map(|t| orb_type_name(t).map_or_else(|| format!("0x{t:08x}"), str::to_string)),
        giop_version: p
            .as_ref()
            .map(|p| p.version.to_string())
            .unwrap_or_default(),
        code_sets: ior.code_sets().map(|(c, from)| {
            format!(
                "char 0x{:08x} wchar 0x{:08x} (from {from})",
                c.for_char.native, c.for_wchar.native
            )
        }),
        isolation: (kind == "embedded").then(|| "in-process, own runtime".to_string()),
        skeleton: (kind == "embedded").then(|| "typed".to_string()),
        server_model: (kind == "embedded").then(|| "reactor".to_string()),
        server_spin_limit_us: None,
        forwards: Vec::new(),
    }
}

/// One results case per check.
pub fn check_case(c: &Check) -> Case {
    let mut extra = BTreeMap::new();
    extra.insert("result".into(), json!(c.verdict));
    extra.insert("detail".into(), json!(c.detail));
    let mut pextra = BTreeMap::new();
    if !c.giop.is_empty() {
        pextra.insert("giop".into(), json!(c.giop));
    }
    if !c.order.is_empty() {
        pextra.insert("order".into(), json!(c.order));
    }
    Case {
        name: c.name.clone(),
        params: CaseParams {
            ty: c.ty.clone(),
            size: c.size,
            mode: c.mode.clone(),
            extra: pextra,
        },
        calls: c.calls,
        bytes: c.size,
        seconds: c.seconds,
        calls_per_sec: if c.seconds > 0.0 {
            c.calls as f64 / c.seconds
        } else {
            0.0
        },
        extra,
        ..Case::default()
    }
}

fn base(kind: &str, target: TargetInfo, started_at: &str) -> Results {
    let mut r = crate::results::Results::new(kind, Vec::new());
    r.target = target;
    r.placement = Placement::new(Vec::new(), None);
    r.started_at = started_at.into();
    r.outcome.complete = true;
    r
}

/// The suite as a results document (`kind: "interop"`).
pub fn suite_results(
    rep: &SuiteReport,
    ior: &Ior,
    kind: &str,
    reference: &str,
    started_at: &str,
    quick: bool,
) -> Results {
    let mut r = base("interop", target_info(ior, kind, reference), started_at);
    r.params.insert("quick".into(), json!(quick));
    r.params
        .insert("passed".into(), json!(rep.count(Verdict::Pass)));
    r.params
        .insert("failed".into(), json!(rep.count(Verdict::Fail)));
    r.params
        .insert("notes".into(), json!(rep.count(Verdict::Note)));
    r.params
        .insert("skipped".into(), json!(rep.count(Verdict::Skip)));
    r.params.insert(
        "skip_reasons".into(),
        json!(rep
            .skip_reasons()
            .iter()
            .map(|(n, r)| json!({"count": n, "reason": r}))
            .collect::<Vec<_>>()),
    );
    r.params.insert("seconds".into(), json!(rep.seconds));
    r.cases = rep.checks.iter().map(check_case).collect();
    let failed = rep.count(Verdict::Fail);
    if failed > 0 {
        r.outcome.failure = Some(format!("{failed} check(s) failed"));
    }
    r
}

/// A cell's callback column: how its bidirectional GIOP `call_back` through
/// the client as users run it went (a vendor client's `--mode callback`,
/// our client's driver with `--bidir`): `pass`, `fail`, `skip` (a known
/// defect, or not implemented), `None` when the client has none.
pub fn callback_verdict(c: &Cell) -> Option<&'static str> {
    let mut v = c
        .checks
        .iter()
        .filter(|k| k.mode == "callback" || k.name == super::suite::DRIVER_CHECK)
        .map(|k| k.verdict)
        .peekable();
    v.peek()?;
    let all: Vec<Verdict> = v.collect();
    Some(if all.contains(&Verdict::Fail) {
        "fail"
    } else if all.contains(&Verdict::Pass) {
        "pass"
    } else {
        "skip"
    })
}

/// The matrix as a results document (`kind: "interop-matrix"`): one case
/// per cell.
pub fn matrix_results(cells: &[Cell], skipped: &[String], started_at: &str) -> Results {
    let target = TargetInfo {
        kind: "matrix".into(),
        ..TargetInfo::default()
    };
    let mut r = base("interop-matrix", target, started_at);
    r.params.insert("skipped".into(), json!(skipped));
    r.cases = cells
        .iter()
        .map(|c| {
            let mut extra = BTreeMap::new();
            extra.insert("client".into(), json!(c.client));
            extra.insert("server".into(), json!(c.server));
            extra.insert("passed".into(), json!(c.passed));
            extra.insert("failed".into(), json!(c.failed));
            extra.insert("notes".into(), json!(c.notes.len()));
            extra.insert("error".into(), json!(c.error));
            extra.insert("failures".into(), json!(c.failures));
            extra.insert("note_list".into(), json!(c.notes));
            extra.insert("skipped".into(), json!(c.skipped.len()));
            extra.insert("skip_list".into(), json!(c.skipped));
            extra.insert("result".into(), json!(c.label()));
            extra.insert("callback".into(), json!(callback_verdict(c)));
            Case {
                name: format!("{} client x {} server", c.client, c.server),
                params: CaseParams {
                    mode: "conformance".into(),
                    ..CaseParams::default()
                },
                calls: (c.passed + c.failed) as u64,
                seconds: c.seconds,
                extra,
                ..Case::default()
            }
        })
        .collect();
    let bad = cells.iter().filter(|c| !c.ok()).count();
    if bad > 0 {
        r.outcome.failure = Some(format!("{bad} cell(s) failed"));
    }
    r
}
