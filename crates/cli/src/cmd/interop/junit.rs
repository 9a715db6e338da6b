//! `iiopbench interop --junit FILE`: the checks as JUnit XML, which CI
//! systems read. One test case per check; a failed check is a `<failure>`
//! whose type is its class (`failed` or `peer`) and whose message starts
//! with the class and the rule that gave it; a skipped check is
//! `<skipped>` with its reason; a note (a difference the spec allows)
//! passes, saying so in `<system-out>`. A consumer counts what the text
//! output counts: tests, failures, skipped (and passes = passed + notes).
//! In the matrix, one test suite per cell; a cell whose client did not
//! run to the end has an `<error>`. Pure functions to strings.

use std::fmt::Write as _;

use iiopbench_engine::interop::classify::{classify, roles_of, Roles};
use iiopbench_engine::interop::report::Cell;
use iiopbench_engine::interop::suite::{Check, Verdict};

/// `s` escaped for XML text and attributes (characters XML 1.0 cannot
/// carry become U+FFFD).
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            '\t' | '\n' | '\r' => o.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

/// One `<testsuite>` of `checks` played by `roles`; `error`: the run did
/// not finish.
fn testsuite(
    out: &mut String,
    name: &str,
    classname: &str,
    checks: &[Check],
    roles: Roles,
    seconds: f64,
    error: Option<&str>,
) -> (usize, usize, usize, usize) {
    let count = |v: Verdict| checks.iter().filter(|c| c.verdict == v).count();
    let errors = usize::from(error.is_some());
    let (tests, failures, skipped) = (
        checks.len() + errors,
        count(Verdict::Fail),
        count(Verdict::Skip),
    );
    let _ = writeln!(
        out,
        r#"  <testsuite name="{}" tests="{tests}" failures="{failures}" errors="{errors}" skipped="{skipped}" time="{seconds:.3}">"#,
        esc(name)
    );
    for c in checks {
        let _ = write!(
            out,
            r#"    <testcase classname="{}" name="{}" time="{:.3}""#,
            esc(classname),
            esc(&c.name),
            c.seconds
        );
        let k = classify(c, roles);
        match c.verdict {
            Verdict::Pass => out.push_str("/>\n"),
            Verdict::Fail => {
                let rule = k.rule.map(|r| format!(": {r}")).unwrap_or_default();
                let why = if k.why.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", k.why)
                };
                let _ = writeln!(
                    out,
                    r#"><failure type="{}" message="[{}{rule}] {}">{}{why}</failure></testcase>"#,
                    k.class.token(),
                    esc(k.class.label()),
                    esc(&c.detail),
                    esc(&c.detail),
                    why = esc(&why),
                    rule = esc(&rule),
                );
            }
            Verdict::Skip => {
                let _ = writeln!(
                    out,
                    r#"><skipped message="{}"/></testcase>"#,
                    esc(&c.detail)
                );
            }
            Verdict::Note => {
                let _ = writeln!(
                    out,
                    "><system-out>note ({}): {}</system-out></testcase>",
                    k.class.label(),
                    esc(&c.detail)
                );
            }
        }
    }
    if let Some(e) = error {
        let _ = writeln!(
            out,
            r#"    <testcase classname="{}" name="run"><error message="{}"/></testcase>"#,
            esc(classname),
            esc(e)
        );
    }
    out.push_str("  </testsuite>\n");
    (tests, failures, errors, skipped)
}

fn document(name: &str, body: &str, totals: (usize, usize, usize, usize), seconds: f64) -> String {
    let (tests, failures, errors, skipped) = totals;
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{seconds:.3}\">\n{body}</testsuites>\n",
        esc(name)
    )
}

/// The suite of one server as JUnit XML: one test suite named `name`.
pub fn suite_xml(name: &str, checks: &[Check], roles: Roles, seconds: f64) -> String {
    let mut body = String::new();
    let totals = testsuite(&mut body, name, "interop", checks, roles, seconds, None);
    document("iiopbench interop", &body, totals, seconds)
}

/// The matrix as JUnit XML: one test suite per cell.
pub fn matrix_xml(cells: &[Cell]) -> String {
    let mut body = String::new();
    let mut t = (0, 0, 0, 0);
    let mut seconds = 0.0;
    for c in cells {
        let name = format!("{} client x {} server", c.client, c.server);
        let classname = format!("interop.{}.{}", c.client, c.server);
        let r = testsuite(
            &mut body,
            &name,
            &classname,
            &c.checks,
            roles_of(c),
            c.seconds,
            c.error.as_deref(),
        );
        t = (t.0 + r.0, t.1 + r.1, t.2 + r.2, t.3 + r.3);
        seconds += c.seconds;
    }
    document("iiopbench interop matrix", &body, t, seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, verdict: Verdict, detail: &str) -> Check {
        Check {
            name: name.into(),
            verdict,
            detail: detail.into(),
            ty: String::new(),
            size: 0,
            mode: "twoway".into(),
            giop: "1.0".into(),
            order: "little".into(),
            calls: 1,
            seconds: 0.25,
        }
    }

    #[test]
    fn every_verdict_has_its_element() {
        let checks = [
            check("a <b>", Verdict::Pass, ""),
            check(
                "v",
                Verdict::Fail,
                "reply in GIOP 1.2 to a GIOP 1.0 request & more",
            ),
            check("s", Verdict::Skip, "wchar in \"1.0\""),
            check("n", Verdict::Note, "allowed"),
            check("f", Verdict::Fail, "broken\u{1}"),
        ];
        let roles = Roles {
            client_ours: true,
            server_ours: false,
        };
        let x = suite_xml("ours x omniorb", &checks, roles, 1.5);
        let want = [
            r#"<?xml version="1.0" encoding="UTF-8"?>"#,
            r#"<testsuites name="iiopbench interop" tests="5" failures="2" errors="0" skipped="1" time="1.500">"#,
            r#"  <testsuite name="ours x omniorb" tests="5" failures="2" errors="0" skipped="1" time="1.500">"#,
            r#"    <testcase classname="interop" name="a &lt;b&gt;" time="0.250"/>"#,
            r#"    <testcase classname="interop" name="v" time="0.250"><failure type="peer" message="[peer&apos;s bug: reply-version] reply in GIOP 1.2 to a GIOP 1.0 request &amp; more">reply in GIOP 1.2 to a GIOP 1.0 request &amp; more (the server answered a GIOP 1.0 request in GIOP 1.2: an answer must be in its request&apos;s version)</failure></testcase>"#,
            r#"    <testcase classname="interop" name="s" time="0.250"><skipped message="wchar in &quot;1.0&quot;"/></testcase>"#,
            r#"    <testcase classname="interop" name="n" time="0.250"><system-out>note (spec-legal): allowed</system-out></testcase>"#,
            "    <testcase classname=\"interop\" name=\"f\" time=\"0.250\"><failure type=\"failed\" message=\"[failed] broken\u{fffd}\">broken\u{fffd}</failure></testcase>",
            "  </testsuite>",
            "</testsuites>",
        ];
        assert_eq!(x, want.join("\n") + "\n");
    }

    #[test]
    fn a_cell_that_did_not_run_is_an_error() {
        let cell = Cell {
            client: "jacorb".into(),
            server: "ours".into(),
            error: Some("timed out".into()),
            ..Cell::default()
        };
        let x = matrix_xml(&[cell]);
        assert!(x.contains(r#"<testsuites name="iiopbench interop matrix" tests="1" failures="0" errors="1" skipped="0""#), "{x}");
        assert!(x.contains(r#"<testcase classname="interop.jacorb.ours" name="run"><error message="timed out"/></testcase>"#), "{x}");
    }
}
