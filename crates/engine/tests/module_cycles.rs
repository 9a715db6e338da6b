//! No crate of the workspace has an import circle between its modules
//! (`scripts/module-cycles`): a module that uses another which uses it
//! back cannot be read, tested or moved on its own. Run here so that
//! `cargo test` keeps it true; the checker itself is shown to find a
//! circle it is given.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Crates whose circles are still to be broken, with the circle; they are
/// left out of the check until then (and must be taken off this list when
/// they are clean: [`listed_crates_still_have_their_circle`]).
const KNOWN: [(&str, &str); 0] = [];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn checker(crates: &[PathBuf]) -> Output {
    Command::new("python3")
        .arg(root().join("scripts/module-cycles"))
        .args(crates)
        .output()
        .expect("python3 runs scripts/module-cycles")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn no_crate_has_an_import_circle() {
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .filter(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            !KNOWN.iter().any(|(k, _)| *k == name)
        })
        .collect();
    crates.sort();
    assert!(
        crates.iter().any(|c| c.ends_with("engine")) && crates.iter().any(|c| c.ends_with("cli")),
        "the crates were found: {crates:?}"
    );
    let o = checker(&crates);
    assert!(o.status.success(), "import circles:\n{}", text(&o));
}

#[test]
fn listed_crates_still_have_their_circle() {
    for (name, _) in KNOWN {
        let o = checker(&[root().join("crates").join(name)]);
        assert_eq!(
            o.status.code(),
            Some(1),
            "crates/{name} has no circle any more: take it off KNOWN\n{}",
            text(&o)
        );
    }
}

/// A crate whose `a` uses `b` and `b` uses `a` back (through a path
/// written in code, not a `use`), and whose `c` only uses `a`.
#[test]
fn the_checker_finds_a_circle() {
    let dir = std::env::temp_dir().join(format!("module-cycles-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod a;\npub mod b;\npub mod c;\n").unwrap();
    std::fs::write(src.join("a.rs"), "use crate::b::B;\npub struct A(pub B);\n").unwrap();
    std::fs::write(
        src.join("b.rs"),
        "pub struct B;\npub fn f() -> usize { std::mem::size_of::<crate::a::A>() }\n",
    )
    .unwrap();
    std::fs::write(src.join("c.rs"), "use super::a::A;\npub type C = A;\n").unwrap();
    let o = checker(std::slice::from_ref(&dir));
    let out = text(&o);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("circle of 2 modules"), "{out}");
    assert!(!out.contains("crate::c"), "c is in no circle: {out}");
}
