//! Output of `iiopbench interop`: the pass/fail table (failures first), the
//! matrix grid, and both as the results schema (`kind: "interop"` and
//! `kind: "interop-matrix"`), pure functions from reports to strings.

use std::collections::BTreeMap;

use iiop_giop::ior::{orb_type_name, Ior};
use serde_json::json;

use super::matrix::Cell;
use super::suite::{Check, SuiteReport, Verdict};
use crate::table::Table;
use iiopbench_engine::results::{Case, CaseParams, Placement, Results, TargetInfo};

fn order_key(v: Verdict) -> u8 {
    match v {
        Verdict::Fail => 0,
        Verdict::Note => 1,
        Verdict::Skip => 2,
        Verdict::Pass => 3,
    }
}

/// One row per check (check, result, detail); failures first, then notes,
/// then passes, each group in run order.
pub fn suite_table(checks: &[Check]) -> String {
    let mut sorted: Vec<&Check> = checks.iter().collect();
    sorted.sort_by_key(|c| order_key(c.verdict));
    let mut t = Table::new(["check", "result", "detail"]).left_align(&[1, 2]);
    for c in sorted {
        t.row([c.name.as_str(), c.verdict.label(), &c.detail]);
    }
    t.render()
}

/// Only the failed checks (for `--quiet`), empty when none failed.
pub fn failures_only(checks: &[Check]) -> String {
    let bad: Vec<Check> = checks
        .iter()
        .filter(|c| c.verdict == Verdict::Fail)
        .cloned()
        .collect();
    if bad.is_empty() {
        String::new()
    } else {
        suite_table(&bad)
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
    let mut r =
        iiopbench_engine::context::new_results(kind, target, Placement::new(Vec::new(), None));
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

/// The grid: rows = client ORB, columns = server ORB.
pub fn matrix_table(clients: &[String], servers: &[String], cells: &[Cell]) -> String {
    let mut t =
        Table::new(std::iter::once("client \\ server".to_string()).chain(servers.iter().cloned()))
            .left_align(&(1..=servers.len()).collect::<Vec<_>>());
    for c in clients {
        let mut row = vec![c.clone()];
        for s in servers {
            let cell = cells
                .iter()
                .find(|x| &x.client == c && &x.server == s)
                .map_or_else(|| "-".to_string(), Cell::label);
            row.push(cell);
        }
        t.row(row);
    }
    t.render()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, v: Verdict) -> Check {
        Check {
            name: name.into(),
            verdict: v,
            detail: format!("d-{name}"),
            ty: String::new(),
            size: 0,
            mode: "echo".into(),
            giop: String::new(),
            order: String::new(),
            calls: 0,
            seconds: 0.0,
        }
    }

    #[test]
    fn failures_come_first() {
        let t = suite_table(&[
            check("a", Verdict::Pass),
            check("b", Verdict::Note),
            check("c", Verdict::Fail),
        ]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 5, "{t}");
        assert!(
            lines[2].starts_with("c  ") && lines[2].contains("FAIL"),
            "{t}"
        );
        assert!(
            lines[3].starts_with("b  ") && lines[3].contains("note"),
            "{t}"
        );
        assert!(
            lines[4].starts_with("a  ") && lines[4].contains("pass"),
            "{t}"
        );
        assert_eq!(failures_only(&[check("a", Verdict::Pass)]), "");
    }

    #[test]
    fn matrix_grid() {
        let cells = vec![
            Cell {
                client: "ours".into(),
                server: "jacorb".into(),
                passed: 3,
                failed: 1,
                ..Cell::default()
            },
            Cell {
                client: "ours".into(),
                server: "ours".into(),
                passed: 4,
                ..Cell::default()
            },
        ];
        let t = matrix_table(&["ours".into()], &["ours".into(), "jacorb".into()], &cells);
        let row = t.lines().nth(2).unwrap();
        assert!(row.contains("pass 4/4") && row.contains("FAIL 3/4"), "{t}");
        assert!(row.find("pass 4/4") < row.find("FAIL 3/4"), "{t}");
    }
}
