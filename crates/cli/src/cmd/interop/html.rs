//! `iiopbench interop --matrix --html FILE`: the matrix as one HTML page
//! (well-formed XHTML, no scripts, no external files). Rows are clients,
//! columns servers × GIOP versions; each cell says passed, failed, peer's
//! bug, spec-legal, skipped or error (its CSS class is the engine's
//! [`Class::token`]), links to its checks listed below the table with each
//! one's class and rule, and to the bytes of the run where they were
//! recorded. A pure function of the engine's [`MatrixView`].

use std::fmt::Write as _;
use std::path::Path;

use iiopbench_engine::interop::classify::{Class, GridCell, MatrixView};

use super::junit::esc;

const STYLE: &str = "\
body{font-family:sans-serif;margin:1.5em}\
table{border-collapse:collapse}\
th,td{border:1px solid #999;padding:.25em .5em;text-align:center}\
td.passed{background:#cfc}td.failed{background:#f99}td.peer{background:#fc9}\
td.spec-legal{background:#ffc}td.skipped{background:#eee}td.error{background:#c66;color:#fff}\
td.none{color:#999}li.failed{color:#900}li.peer{color:#a50}\
.legend span{padding:0 .5em;margin-right:.5em}";

/// The id of a grid cell's section.
pub fn anchor(c: &GridCell) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect()
    };
    format!(
        "{}-x-{}-giop{}",
        clean(&c.client),
        clean(&c.server),
        clean(&c.giop)
    )
}

/// Where `recording` is, as a link from a page in `page_dir`.
fn href(recording: &Path, page_dir: Option<&Path>) -> String {
    match page_dir.and_then(|d| recording.strip_prefix(d).ok()) {
        Some(rel) => rel.display().to_string(),
        None => recording.display().to_string(),
    }
}

/// `passed 12` / `failed 2 of 14` … for a cell.
fn cell_text(c: &GridCell) -> String {
    let total = c.passed + c.failed + c.peer + c.spec_legal;
    match c.class {
        None => "—".into(),
        Some(Class::Error) => "error".into(),
        Some(Class::Passed) => format!("passed {total}"),
        Some(Class::Skipped) => format!("skipped {}", c.skipped),
        Some(Class::SpecLegal) => format!("spec-legal {} of {total}", c.spec_legal),
        Some(Class::Peer) => format!("peer's bug {} of {total}", c.peer),
        Some(Class::Failed) => format!("failed {} of {total}", c.failed),
    }
}

/// The page: `title`, a line saying how it ran (`about`), the grid, then
/// each cell's checks that did not pass. Links to recordings are made
/// relative to `page_dir` where they lie under it.
pub fn page(v: &MatrixView, title: &str, about: &str, page_dir: Option<&Path>) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head><meta charset=\"utf-8\"/><title>{t}</title><style>{STYLE}</style></head>\n<body>\n<h1>{t}</h1>\n<p class=\"about\">{}</p>\n",
        esc(about),
        t = esc(title)
    );
    o.push_str("<p class=\"legend\">");
    for c in [
        Class::Passed,
        Class::Failed,
        Class::Peer,
        Class::SpecLegal,
        Class::Skipped,
        Class::Error,
    ] {
        let _ = write!(o, "<span class=\"{}\">{}</span>", c.token(), esc(c.label()));
    }
    o.push_str(
        "</p>\n<table class=\"matrix\">\n<thead>\n<tr><th rowspan=\"2\">client \\ server</th>",
    );
    for s in &v.servers {
        let _ = write!(
            o,
            "<th class=\"server\" colspan=\"{}\">{}</th>",
            v.versions.len(),
            esc(s)
        );
    }
    o.push_str("</tr>\n<tr>");
    for _ in &v.servers {
        for g in &v.versions {
            let _ = write!(o, "<th class=\"giop\">GIOP {}</th>", esc(g));
        }
    }
    o.push_str("</tr>\n</thead>\n<tbody>\n");
    for client in &v.clients {
        let _ = write!(o, "<tr><th class=\"client\">{}</th>", esc(client));
        for server in &v.servers {
            for g in &v.versions {
                let Some(c) = v.cell(client, server, g) else {
                    continue;
                };
                let class = c.class.map_or("none", Class::token);
                let _ = write!(
                    o,
                    "<td class=\"cell {class}\" data-client=\"{}\" data-server=\"{}\" data-giop=\"{}\">",
                    esc(client),
                    esc(server),
                    esc(g)
                );
                if c.checks.is_empty() && c.error.is_none() {
                    o.push_str(&esc(&cell_text(c)));
                } else {
                    let _ = write!(o, "<a href=\"#{}\">{}</a>", anchor(c), esc(&cell_text(c)));
                }
                if let Some(r) = &c.recording {
                    let _ = write!(
                        o,
                        " <a class=\"bytes\" href=\"{}\">bytes</a>",
                        esc(&href(r, page_dir))
                    );
                }
                o.push_str("</td>");
            }
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody>\n</table>\n");
    for c in v
        .cells
        .iter()
        .filter(|c| !c.checks.is_empty() || c.error.is_some())
    {
        let _ = write!(
            o,
            "<section id=\"{}\">\n<h2>{} client × {} server, GIOP {}: {}</h2>\n<ul>\n",
            anchor(c),
            esc(&c.client),
            esc(&c.server),
            esc(&c.giop),
            esc(c.class.map_or("—", Class::label))
        );
        if let Some(e) = &c.error {
            let _ = writeln!(o, "<li class=\"error\">error: {}</li>", esc(e));
        }
        for k in &c.checks {
            let rule = k
                .classified
                .rule
                .map(|r| format!(": {r}"))
                .unwrap_or_default();
            let why = if k.classified.why.is_empty() || k.classified.class == Class::Skipped {
                String::new()
            } else {
                format!(" — {}", k.classified.why)
            };
            let _ = writeln!(
                o,
                "<li class=\"{}\">[{}{}] {}: {}{}</li>",
                k.classified.class.token(),
                esc(k.classified.class.label()),
                esc(&rule),
                esc(&k.name),
                esc(&k.detail),
                esc(&why)
            );
        }
        o.push_str("</ul>\n</section>\n");
    }
    o.push_str("</body>\n</html>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use iiopbench_engine::interop::classify::matrix_view;
    use iiopbench_engine::interop::report::Cell;
    use iiopbench_engine::interop::suite::{Check, Verdict};

    fn check(verdict: Verdict, detail: &str, giop: &str) -> Check {
        Check {
            name: format!("k {giop}"),
            verdict,
            detail: detail.into(),
            ty: String::new(),
            size: 0,
            mode: "echo".into(),
            giop: giop.into(),
            order: "big".into(),
            calls: 1,
            seconds: 0.0,
        }
    }

    /// Every client × server × version has its cell, with the class as its
    /// CSS class; links go to sections that exist and to the recording.
    #[test]
    fn the_page_has_every_cell_with_its_class() {
        let ours = Cell {
            client: "ours".into(),
            server: "omniorb".into(),
            reference_giop: "1.2".into(),
            checks: vec![
                check(Verdict::Pass, "", "1.2"),
                check(
                    Verdict::Fail,
                    "reply in GIOP 1.2 to a GIOP 1.0 request",
                    "1.0",
                ),
                check(Verdict::Note, "allowed", "1.1"),
            ],
            recording: Some("/tmp/m/rec/ours-x-omniorb.pcapng".into()),
            ..Cell::default()
        };
        let jac = Cell {
            client: "jacorb".into(),
            server: "ours".into(),
            reference_giop: "1.2".into(),
            checks: vec![check(Verdict::Fail, "MARSHAL", "")],
            ..Cell::default()
        };
        let clients = vec!["ours".to_string(), "jacorb".to_string()];
        let servers = vec!["ours".to_string(), "omniorb".to_string()];
        let v = matrix_view(&clients, &servers, &[ours, jac]);
        let html = page(
            &v,
            "interop <matrix>",
            "via none",
            Some(Path::new("/tmp/m")),
        );
        let opt = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..roxmltree::ParsingOptions::default()
        };
        let doc = roxmltree::Document::parse_with_options(&html, opt).expect("well-formed");
        let tds: Vec<_> = doc.descendants().filter(|n| n.has_tag_name("td")).collect();
        assert_eq!(tds.len(), 2 * 2 * 3);
        let class_of = |c: &str, s: &str, g: &str| {
            tds.iter()
                .find(|n| {
                    n.attribute("data-client") == Some(c)
                        && n.attribute("data-server") == Some(s)
                        && n.attribute("data-giop") == Some(g)
                })
                .and_then(|n| n.attribute("class"))
                .unwrap()
                .to_string()
        };
        assert_eq!(class_of("ours", "omniorb", "1.0"), "cell peer");
        assert_eq!(class_of("ours", "omniorb", "1.1"), "cell spec-legal");
        assert_eq!(class_of("ours", "omniorb", "1.2"), "cell passed");
        assert_eq!(class_of("jacorb", "ours", "1.2"), "cell failed");
        assert_eq!(class_of("ours", "ours", "1.0"), "cell none");
        // Every in-page link has its section; the bytes link is relative.
        let ids: Vec<&str> = doc
            .descendants()
            .filter_map(|n| n.attribute("id"))
            .collect();
        let links: Vec<&str> = doc
            .descendants()
            .filter_map(|n| n.attribute("href"))
            .collect();
        for l in &links {
            if let Some(id) = l.strip_prefix('#') {
                assert!(ids.contains(&id), "{l}");
            }
        }
        assert_eq!(
            links
                .iter()
                .filter(|l| **l == "rec/ours-x-omniorb.pcapng")
                .count(),
            3
        );
        assert!(html.contains("[peer&apos;s bug: reply-version] k 1.0"));
        assert!(html.contains("<title>interop &lt;matrix&gt;</title>"));
    }
}
