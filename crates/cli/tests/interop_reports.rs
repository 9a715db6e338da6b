//! The results of `iiopbench interop` that CI reads, black-box (the built
//! binary against its embedded server, through an in-process proxy that
//! corrupts one reply per connection, so there are failures to report):
//! - `--junit` is JUnit XML as CI consumers read it (testsuites, testsuite,
//!   testcase, failure, skipped), its counts those of the text output and
//!   of the JSON results, each failure typed and classified;
//! - `--matrix --html` is one well-formed page with a cell for every
//!   client × server × GIOP version, a failed cell linked to its checks and
//!   each cell to its recorded bytes.

use std::path::{Path, PathBuf};
use std::process::Command;

use roxmltree::{Document, Node};

fn dir(test: &str) -> PathBuf {
    let d = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "iiopbench-interop-reports-{}-{test}",
        std::process::id()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run the binary: exit code and standard output.
fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_iiopbench"))
        .args(args)
        .output()
        .expect("iiopbench runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn attr_n(n: Node, name: &str) -> usize {
    n.attribute(name)
        .unwrap_or_else(|| panic!("<{}> has no {name}", n.tag_name().name()))
        .parse()
        .unwrap_or_else(|e| panic!("<{}> {name}: {e}", n.tag_name().name()))
}

/// What a JUnit consumer counts, read the way one reads it: the document
/// checked against the JUnit schema's shape on the way.
#[derive(Debug, Default, PartialEq)]
struct JUnit {
    tests: usize,
    failures: usize,
    errors: usize,
    skipped: usize,
    passes: usize,
    suites: usize,
    /// `message` of every `<failure>`.
    messages: Vec<String>,
}

fn read_junit(xml: &str) -> JUnit {
    let doc = Document::parse(xml).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let mut j = JUnit::default();
    for suite in root.children().filter(Node::is_element) {
        assert_eq!(suite.tag_name().name(), "testsuite");
        assert!(suite.attribute("name").is_some_and(|n| !n.is_empty()));
        suite.attribute("time").unwrap().parse::<f64>().unwrap();
        let mut counted = JUnit::default();
        for case in suite.children().filter(Node::is_element) {
            assert_eq!(case.tag_name().name(), "testcase");
            assert!(case.attribute("name").is_some_and(|n| !n.is_empty()));
            assert!(case.attribute("classname").is_some());
            counted.tests += 1;
            let kids: Vec<Node> = case.children().filter(Node::is_element).collect();
            let outcome: Vec<&str> = kids
                .iter()
                .map(|k| k.tag_name().name())
                .filter(|t| *t != "system-out")
                .collect();
            assert!(outcome.len() <= 1, "{outcome:?}");
            match outcome.first() {
                None => counted.passes += 1,
                Some(&"failure") => {
                    counted.failures += 1;
                    let f = kids.iter().find(|k| k.has_tag_name("failure")).unwrap();
                    assert!(matches!(f.attribute("type"), Some("failed" | "peer")));
                    counted
                        .messages
                        .push(f.attribute("message").unwrap().to_string());
                }
                Some(&"skipped") => counted.skipped += 1,
                Some(&"error") => counted.errors += 1,
                Some(other) => panic!("unexpected <{other}> in a testcase"),
            }
        }
        // Each suite's attributes agree with its test cases.
        assert_eq!(attr_n(suite, "tests"), counted.tests);
        assert_eq!(attr_n(suite, "failures"), counted.failures);
        assert_eq!(attr_n(suite, "errors"), counted.errors);
        assert_eq!(attr_n(suite, "skipped"), counted.skipped);
        j.tests += counted.tests;
        j.failures += counted.failures;
        j.errors += counted.errors;
        j.skipped += counted.skipped;
        j.passes += counted.passes;
        j.messages.extend(counted.messages);
        j.suites += 1;
    }
    // And the document's totals with its suites'.
    assert_eq!(attr_n(root, "tests"), j.tests);
    assert_eq!(attr_n(root, "failures"), j.failures);
    assert_eq!(attr_n(root, "errors"), j.errors);
    assert_eq!(attr_n(root, "skipped"), j.skipped);
    j
}

/// `(passed, failed, notes, skipped)` of the text output's last line
/// (`234 passed, 2 failed, 5 notes, 4 skipped (0.6 s)`).
fn text_counts(out: &str) -> (usize, usize, usize, usize) {
    let last = out
        .lines()
        .rev()
        .find(|l| l.contains(" passed, "))
        .unwrap_or_else(|| panic!("no counts in {out}"));
    let n = |what: &str| -> usize {
        last.split(", ")
            .find_map(|p| {
                let mut w = p.split_whitespace();
                let n = w.next()?;
                (w.next()? == what).then(|| n.parse().unwrap())
            })
            .unwrap_or_else(|| panic!("no {what} in {last}"))
    };
    (n("passed"), n("failed"), n("notes"), n("skipped"))
}

#[test]
fn junit_is_read_with_the_counts_of_the_text_output() {
    let d = dir("junit");
    let (xml, json) = (d.join("out.xml"), d.join("out.json"));
    let (code, out) = run(&[
        "interop",
        "--via-proxy",
        "corrupt=4@40",
        "--junit",
        s(&xml),
        "--json",
        s(&json),
    ]);
    assert_eq!(code, 1, "{out}");
    let (passed, failed, notes, skipped) = text_counts(&out);
    assert!(
        failed > 0 && skipped > 0 && notes > 0 && passed > 100,
        "{out}"
    );
    let j = read_junit(&std::fs::read_to_string(&xml).unwrap());
    assert_eq!(j.suites, 1);
    assert_eq!(j.tests, passed + failed + notes + skipped);
    assert_eq!((j.failures, j.skipped, j.errors), (failed, skipped, 0));
    assert_eq!(j.passes, passed + notes);
    for m in &j.messages {
        assert!(
            m.starts_with("[failed: proxy-fault] ")
                && m.contains("[through a proxy injecting corrupt=4@40: "),
            "{m}"
        );
    }
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for (k, n) in [
        ("passed", passed),
        ("failed", failed),
        ("notes", notes),
        ("skipped", skipped),
    ] {
        assert_eq!(r["params"][k], n, "{k}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn matrix_html_has_every_cell_linked_to_its_checks_and_bytes() {
    let d = dir("html");
    let (page, xml) = (d.join("matrix.html"), d.join("matrix.xml"));
    let rec = d.join("bytes");
    let (code, out) = run(&[
        "interop",
        "--matrix",
        "--orbs",
        "ours",
        "--via-proxy",
        "corrupt=4@40",
        "--record-dir",
        s(&rec),
        "--html",
        s(&page),
        "--junit",
        s(&xml),
    ]);
    assert_eq!(code, 1, "{out}");
    let html = std::fs::read_to_string(&page).unwrap();
    let opt = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = Document::parse_with_options(&html, opt).expect("the page is well-formed");
    assert!(!html.contains("<script"));
    let cells: Vec<Node> = doc
        .descendants()
        .filter(|n| n.has_tag_name("td") && n.attribute("data-giop").is_some())
        .collect();
    // ours × ours in GIOP 1.0, 1.1 and 1.2.
    let versions: Vec<&str> = cells
        .iter()
        .map(|c| c.attribute("data-giop").unwrap())
        .collect();
    assert_eq!(versions, ["1.0", "1.1", "1.2"]);
    let ids: Vec<&str> = doc
        .descendants()
        .filter_map(|n| n.attribute("id"))
        .collect();
    for c in &cells {
        assert_eq!(c.attribute("data-client"), Some("ours"));
        let class = c.attribute("class").unwrap();
        assert!(
            [
                "passed",
                "failed",
                "peer",
                "spec-legal",
                "skipped",
                "error",
                "none"
            ]
            .iter()
            .any(|t| class.split(' ').any(|w| w == *t)),
            "{class}"
        );
        for a in c.children().filter(|n| n.has_tag_name("a")) {
            let href = a.attribute("href").unwrap();
            match href.strip_prefix('#') {
                // A link to the cell's section.
                Some(id) => assert!(ids.contains(&id), "{href}"),
                // The bytes: a pcapng file the page reaches.
                None => {
                    let f = d.join(href);
                    assert!(f.is_file(), "{href}");
                    assert!(href.ends_with(".pcapng"), "{href}");
                }
            }
        }
    }
    // The corrupted replies fail in GIOP 1.2, named in the cell's section.
    let failed = cells
        .iter()
        .find(|c| c.attribute("class") == Some("cell failed"))
        .expect("a failed cell");
    assert_eq!(failed.attribute("data-giop"), Some("1.2"));
    let section = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("ours-x-ours-giop1-2"))
        .unwrap();
    let items: Vec<String> = section
        .descendants()
        .filter(|n| n.has_tag_name("li") && n.attribute("class") == Some("failed"))
        .map(|n| n.text().unwrap_or("").to_string())
        .collect();
    assert!(!items.is_empty());
    for i in &items {
        assert!(i.starts_with("[failed: proxy-fault] "), "{i}");
    }
    // The same run as JUnit: one suite for the one cell, its failures
    // those of the page.
    let j = read_junit(&std::fs::read_to_string(&xml).unwrap());
    assert_eq!(j.suites, 1);
    assert_eq!(j.failures, items.len());
    let _ = std::fs::remove_dir_all(&d);
}
