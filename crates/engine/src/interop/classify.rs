//! Every check's outcome classified by rule where the rule is mechanical:
//! passed, failed (ours, or not known to be anyone else's), the peer's
//! bug, allowed by the spec, skipped. Pure: a check, who played client and
//! server, and nothing else in; a [`Classified`] naming the rule out. And
//! the matrix as a grid of client × server × GIOP version for the page
//! `iiopbench interop --matrix --html` draws ([`MatrixView`]).
//!
//! The rules:
//! - `reply-version`: a Reply in another GIOP version than its request's
//!   is the server's error: the peer's bug when the server is not ours, a
//!   failure when it is.
//! - `peer-marshal`: our client's echo refused with MARSHAL by a server not
//!   ours, when the payload the check sent (the suite's payloads are
//!   deterministic) encodes and decodes back exactly with our codec in that
//!   GIOP version and byte order: the bytes were valid, the refusal is the
//!   peer's. If our own decoder refuses them, it is our failure
//!   (`own-bytes-invalid`).
//! - `proxy-fault`: a failure in a run through a proxy that injected
//!   faults names them (the fault, and how often it acted): the pair did
//!   not survive that fault. It comes first: the peer did not get the
//!   bytes we sent, so no rule about whose they were applies.
//! - A note is a difference the spec allows (`spec-legal`); a skip is a
//!   skip.
//!
//! Anything else that failed is a failure: no rule says whose.

use std::collections::BTreeSet;
use std::path::PathBuf;

use bytes::BytesMut;
use iiop_bench_idl::bench::types::Payload;
use iiop_bench_idl::bench::Elem;
use iiop_cdr::{ByteOrder, Options, Reader, WCharCodeSet, Writer};
use iiop_giop::Version;
use serde::Serialize;

use super::matrix::OURS;
use super::report::Cell;
use super::suite::{Check, Verdict};

/// How a check ended, classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// Not run (the reason is the check's detail).
    Skipped,
    Passed,
    /// A difference the spec allows.
    SpecLegal,
    /// The other ORB's bug, by a mechanical rule.
    Peer,
    /// Ours, or no rule says whose.
    Failed,
    /// The client did not run to the end (matrix cells only).
    Error,
}

impl Class {
    /// `passed`, `failed`, `peer's bug`, `spec-legal`, `skipped`, `error`.
    pub fn label(self) -> &'static str {
        match self {
            Class::Skipped => "skipped",
            Class::Passed => "passed",
            Class::SpecLegal => "spec-legal",
            Class::Peer => "peer's bug",
            Class::Failed => "failed",
            Class::Error => "error",
        }
    }

    /// A name for markup (a CSS class, a JUnit failure type).
    pub fn token(self) -> &'static str {
        match self {
            Class::Skipped => "skipped",
            Class::Passed => "passed",
            Class::SpecLegal => "spec-legal",
            Class::Peer => "peer",
            Class::Failed => "failed",
            Class::Error => "error",
        }
    }
}

/// Who played which part in a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Roles {
    pub client_ours: bool,
    pub server_ours: bool,
}

/// A check's class, the rule that gave it, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Classified {
    pub class: Class,
    /// The rule's name, when one applied.
    pub rule: Option<&'static str>,
    /// One line: what the rule saw.
    pub why: String,
}

fn by(class: Class, rule: Option<&'static str>, why: impl Into<String>) -> Classified {
    Classified {
        class,
        rule,
        why: why.into(),
    }
}

/// `(reply, request)` from a detail saying `… in GIOP X to a GIOP Y …`.
fn reply_versions(detail: &str) -> Option<(Version, Version)> {
    let at = detail.find(" in GIOP ")?;
    let rest = &detail[at + " in GIOP ".len()..];
    let (reply, rest) = rest.split_once(" to a GIOP ")?;
    let request = rest.split_whitespace().next()?;
    let v = |s: &str| -> Option<Version> {
        let (a, b) = s.split_once('.')?;
        Some(Version {
            major: a.parse().ok()?,
            minor: b.parse().ok()?,
        })
    };
    Some((v(reply)?, v(request)?))
}

/// `(operation, element count)` of an echo's failure detail
/// (`echo_long 100 elements: …`).
fn echo_call(detail: &str) -> Option<(&str, usize)> {
    let mut w = detail.split_whitespace();
    let op = w.next()?;
    let n = w.next()?.parse().ok()?;
    (w.next()? == "elements:").then_some((op, n))
}

fn version_of(s: &str) -> Option<Version> {
    match s {
        "1.0" => Some(Version::V1_0),
        "1.1" => Some(Version::V1_1),
        "1.2" => Some(Version::V1_2),
        _ => None,
    }
}

/// Whether our codec reads back exactly the payload an echo check sent:
/// `Some(true)` it does, `Some(false)` it refuses or differs, `None` the
/// check is not one whose payload can be rebuilt.
pub fn own_bytes_valid(k: &Check) -> Option<bool> {
    let (op, n) = echo_call(&k.detail)?;
    let e = Elem::ALL.into_iter().find(|e| e.token() == k.ty)?;
    if op != format!("echo_{}", e.token()) {
        return None;
    }
    let version = version_of(&k.giop)?;
    let order = match k.order.as_str() {
        "big" => ByteOrder::Big,
        "little" => ByteOrder::Little,
        _ => return None,
    };
    let opts = Options {
        wchar_set: Some(WCharCodeSet::Utf16),
        wchar_rules: version.wchar_rules(),
        ..iiop_giop::context::default_options(version)
    };
    let p = Payload::generate(e, n, false);
    let mut buf = BytesMut::new();
    if p.encode(&mut Writer::new(&mut buf, order).options(opts))
        .is_err()
    {
        return Some(false);
    }
    let mut r = Reader::new(&buf, order).options(opts);
    Some(matches!(Payload::decode(e, &mut r), Ok(back) if back == p && r.remaining() == 0))
}

/// Classify one check played by `roles`.
pub fn classify(k: &Check, roles: Roles) -> Classified {
    match k.verdict {
        Verdict::Pass => return by(Class::Passed, None, ""),
        Verdict::Skip => return by(Class::Skipped, None, k.detail.clone()),
        Verdict::Note => {
            return by(
                Class::SpecLegal,
                Some("spec-legal"),
                "a difference the spec allows",
            )
        }
        Verdict::Fail => {}
    }
    // Through a proxy injecting faults the peer did not get the bytes we
    // sent: no rule about whose they were applies.
    if let Some(faults) = super::via::faults_named(&k.detail) {
        return by(
            Class::Failed,
            Some("proxy-fault"),
            format!("failed under the proxy's faults {faults}"),
        );
    }
    if let Some((reply, request)) = reply_versions(&k.detail).filter(|(a, b)| a != b) {
        return if roles.server_ours {
            by(
                Class::Failed,
                Some("reply-version"),
                format!("our server answered a GIOP {request} request in GIOP {reply}"),
            )
        } else {
            by(
                Class::Peer,
                Some("reply-version"),
                format!("the server answered a GIOP {request} request in GIOP {reply}: an answer must be in its request's version"),
            )
        };
    }
    if roles.client_ours && !roles.server_ours && k.detail.contains(": MARSHAL minor") {
        match own_bytes_valid(k) {
            Some(true) => {
                return by(
                    Class::Peer,
                    Some("peer-marshal"),
                    "MARSHAL on bytes our decoder reads back exactly",
                )
            }
            Some(false) => {
                return by(
                    Class::Failed,
                    Some("own-bytes-invalid"),
                    "MARSHAL, and our own decoder refuses what we sent",
                )
            }
            None => {}
        }
    }
    by(Class::Failed, None, "")
}

/// The worst class of `classes` (an error, then a failure, a peer's
/// bug, a spec-legal difference, a pass); `None` when there are none.
pub fn worst(classes: impl IntoIterator<Item = Class>) -> Option<Class> {
    classes.into_iter().max()
}

/// One check of a grid cell, classified.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GridCheck {
    pub name: String,
    pub detail: String,
    pub classified: Classified,
}

/// One client × server × GIOP version of the matrix.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GridCell {
    pub client: String,
    pub server: String,
    /// `1.0`, `1.1`, `1.2`.
    pub giop: String,
    /// The worst class of its checks; `None`: no check in this version.
    pub class: Option<Class>,
    pub passed: usize,
    pub failed: usize,
    pub peer: usize,
    pub spec_legal: usize,
    pub skipped: usize,
    /// Every check that did not pass, classified.
    pub checks: Vec<GridCheck>,
    /// The bytes of the client × server run, where recorded.
    pub recording: Option<PathBuf>,
    /// Why the client did not run to the end.
    pub error: Option<String>,
}

/// The matrix as a grid: rows (clients), columns (servers), GIOP versions,
/// and a cell for every combination, in that order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatrixView {
    pub clients: Vec<String>,
    pub servers: Vec<String>,
    pub versions: Vec<String>,
    pub cells: Vec<GridCell>,
}

impl MatrixView {
    /// The grid cell of `client` × `server` × `giop`.
    pub fn cell(&self, client: &str, server: &str, giop: &str) -> Option<&GridCell> {
        self.cells
            .iter()
            .find(|c| c.client == client && c.server == server && c.giop == giop)
    }
}

/// The roles of a matrix cell: ours is ours by name (`ours`, or a row
/// of ours through corbaloc).
pub fn roles_of(cell: &Cell) -> Roles {
    Roles {
        client_ours: cell.client == OURS,
        server_ours: cell.server == OURS,
    }
}

/// The grid of a matrix run: every client × server × GIOP version seen
/// (a check without a version counts in the version of the reference the
/// client was given).
pub fn matrix_view(clients: &[String], servers: &[String], cells: &[Cell]) -> MatrixView {
    let version_of = |c: &Cell, k: &Check| {
        if k.giop.is_empty() {
            c.reference_giop.clone()
        } else {
            k.giop.clone()
        }
    };
    let mut versions: BTreeSet<String> = cells
        .iter()
        .flat_map(|c| c.checks.iter().map(move |k| version_of(c, k)))
        .filter(|v| !v.is_empty())
        .collect();
    if versions.is_empty() {
        versions.insert(Version::V1_2.to_string());
    }
    let versions: Vec<String> = versions.into_iter().collect();
    let mut out = Vec::new();
    for client in clients {
        for server in servers {
            let cell = cells
                .iter()
                .find(|c| &c.client == client && &c.server == server);
            for v in &versions {
                let mut g = GridCell {
                    client: client.clone(),
                    server: server.clone(),
                    giop: v.clone(),
                    class: None,
                    passed: 0,
                    failed: 0,
                    peer: 0,
                    spec_legal: 0,
                    skipped: 0,
                    checks: Vec::new(),
                    recording: None,
                    error: None,
                };
                if let Some(c) = cell {
                    let roles = roles_of(c);
                    g.recording = c.recording.clone();
                    g.error = c.error.clone();
                    let mut classes = Vec::new();
                    for k in c.checks.iter().filter(|k| &version_of(c, k) == v) {
                        let cl = classify(k, roles);
                        match cl.class {
                            Class::Passed => g.passed += 1,
                            Class::Failed | Class::Error => g.failed += 1,
                            Class::Peer => g.peer += 1,
                            Class::SpecLegal => g.spec_legal += 1,
                            Class::Skipped => g.skipped += 1,
                        }
                        classes.push(cl.class);
                        if cl.class != Class::Passed {
                            g.checks.push(GridCheck {
                                name: k.name.clone(),
                                detail: k.detail.clone(),
                                classified: cl,
                            });
                        }
                    }
                    if c.error.is_some() {
                        classes.push(Class::Error);
                    }
                    g.class = worst(classes);
                }
                out.push(g);
            }
        }
    }
    MatrixView {
        clients: clients.to_vec(),
        servers: servers.to_vec(),
        versions,
        cells: out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(verdict: Verdict, detail: &str, ty: &str, giop: &str, order: &str) -> Check {
        Check {
            name: "k".into(),
            verdict,
            detail: detail.into(),
            ty: ty.into(),
            size: 0,
            mode: "echo".into(),
            giop: giop.into(),
            order: order.into(),
            calls: 1,
            seconds: 0.0,
        }
    }

    const OURS_CLIENT: Roles = Roles {
        client_ours: true,
        server_ours: false,
    };
    const OURS_SERVER: Roles = Roles {
        client_ours: false,
        server_ours: true,
    };

    #[test]
    fn a_higher_reply_version_is_the_servers_error() {
        let k = check(
            Verdict::Fail,
            "reply in GIOP 1.2 to a GIOP 1.0 request (the peer's error)",
            "",
            "1.0",
            "little",
        );
        let c = classify(&k, OURS_CLIENT);
        assert_eq!((c.class, c.rule), (Class::Peer, Some("reply-version")));
        assert_eq!(
            c.why,
            "the server answered a GIOP 1.0 request in GIOP 1.2: an answer must be in its request's version"
        );
        let c = classify(&k, OURS_SERVER);
        assert_eq!((c.class, c.rule), (Class::Failed, Some("reply-version")));
        // The client's own error text says the same.
        let k = check(
            Verdict::Fail,
            "ping: Reply in GIOP 1.2 to a GIOP 1.1 Request from 127.0.0.1:9 (the peer's error: …)",
            "",
            "",
            "",
        );
        assert_eq!(classify(&k, OURS_CLIENT).class, Class::Peer);
    }

    #[test]
    fn marshal_on_valid_bytes_is_the_peers() {
        let marshal = "echo_double 100 elements: MARSHAL minor 0x41540009 (OmniOrb) completed No";
        for (giop, order) in [("1.0", "big"), ("1.1", "little"), ("1.2", "big")] {
            let k = check(Verdict::Fail, marshal, "double", giop, order);
            let c = classify(&k, OURS_CLIENT);
            assert_eq!(
                (c.class, c.rule),
                (Class::Peer, Some("peer-marshal")),
                "{giop}"
            );
        }
        let k = check(
            Verdict::Fail,
            "echo_wstring 7 elements: MARSHAL minor 0x4f4d0000 (Omg) completed No",
            "wstring",
            "1.2",
            "little",
        );
        assert_eq!(classify(&k, OURS_CLIENT).class, Class::Peer);
        // Our server's MARSHAL to a vendor client is our failure, with no
        // rule; a MARSHAL on something not an echo has no rule either.
        let k = check(Verdict::Fail, marshal, "double", "1.2", "big");
        assert_eq!(classify(&k, OURS_SERVER), by(Class::Failed, None, ""));
        let k = check(
            Verdict::Fail,
            "ping: MARSHAL minor 0x0 (Omg) completed No",
            "",
            "1.2",
            "",
        );
        assert_eq!(classify(&k, OURS_CLIENT).class, Class::Failed);
        // A count the payload cannot be rebuilt from: no rule.
        let k = check(
            Verdict::Fail,
            "echo_double x elements: MARSHAL minor 0",
            "double",
            "1.2",
            "big",
        );
        assert_eq!(classify(&k, OURS_CLIENT).rule, None);
    }

    #[test]
    fn a_failure_under_injected_faults_names_them_first() {
        let k = check(
            Verdict::Fail,
            "echo_double 100 elements: MARSHAL minor 0x41540009 (OmniOrb) completed No \
             [through a proxy injecting corrupt=4@40: 1 messages corrupted]",
            "double",
            "1.2",
            "big",
        );
        let c = classify(&k, OURS_CLIENT);
        assert_eq!((c.class, c.rule), (Class::Failed, Some("proxy-fault")));
        assert_eq!(
            c.why,
            "failed under the proxy's faults corrupt=4@40: 1 messages corrupted"
        );
    }

    #[test]
    fn notes_skips_and_passes() {
        let c = classify(&check(Verdict::Note, "allowed", "", "", ""), OURS_CLIENT);
        assert_eq!(c.class, Class::SpecLegal);
        let c = classify(
            &check(Verdict::Skip, "wchar in 1.0", "", "", ""),
            OURS_CLIENT,
        );
        assert_eq!((c.class, c.why.as_str()), (Class::Skipped, "wchar in 1.0"));
        assert_eq!(
            classify(&check(Verdict::Pass, "", "", "", ""), OURS_CLIENT).class,
            Class::Passed
        );
        assert_eq!(
            worst([Class::Passed, Class::SpecLegal, Class::Peer, Class::Skipped]),
            Some(Class::Peer)
        );
        assert_eq!(worst([Class::Peer, Class::Failed]), Some(Class::Failed));
        assert_eq!(worst([]), None);
    }

    #[test]
    fn the_grid_has_every_cell_in_every_version() {
        let mut a = Cell {
            client: OURS.into(),
            server: "omniorb".into(),
            reference_giop: "1.2".into(),
            ..Cell::default()
        };
        a.checks = vec![
            check(Verdict::Pass, "", "", "", ""),
            check(
                Verdict::Fail,
                "reply in GIOP 1.2 to a GIOP 1.0 request",
                "",
                "1.0",
                "big",
            ),
            check(Verdict::Note, "allowed", "", "1.1", "big"),
        ];
        let b = Cell {
            client: "jacorb".into(),
            server: OURS.into(),
            error: Some("crashed".into()),
            reference_giop: "1.2".into(),
            ..Cell::default()
        };
        let clients = vec![OURS.to_string(), "jacorb".to_string()];
        let servers = vec![OURS.to_string(), "omniorb".to_string()];
        let v = matrix_view(&clients, &servers, &[a, b]);
        assert_eq!(v.versions, ["1.0", "1.1", "1.2"]);
        assert_eq!(v.cells.len(), 2 * 2 * 3);
        let g = |c: &str, s: &str, giop: &str| v.cell(c, s, giop).unwrap().class;
        assert_eq!(g(OURS, "omniorb", "1.0"), Some(Class::Peer));
        assert_eq!(g(OURS, "omniorb", "1.1"), Some(Class::SpecLegal));
        assert_eq!(g(OURS, "omniorb", "1.2"), Some(Class::Passed));
        assert_eq!(g("jacorb", OURS, "1.2"), Some(Class::Error));
        assert_eq!(g(OURS, OURS, "1.2"), None);
        assert_eq!(g("jacorb", "omniorb", "1.0"), None);
        let c = v.cell(OURS, "omniorb", "1.0").unwrap();
        assert_eq!((c.peer, c.checks.len()), (1, 1));
    }
}
