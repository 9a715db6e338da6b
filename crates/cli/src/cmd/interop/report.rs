//! The tables of `iiopbench interop`: the pass/fail table (failures first)
//! and the matrix grid, pure functions from the engine's reports to
//! strings (the results documents are the engine's,
//! `iiopbench_engine::interop::report`).

use iiopbench_engine::interop::report::Cell;
use iiopbench_engine::interop::suite::{Check, Verdict};

use crate::table::Table;

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
