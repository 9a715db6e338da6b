//! No crate of the workspace has an import circle between its modules
//! (`scripts/module-cycles`): a module that uses another which uses it
//! back cannot be read, tested or moved on its own. Run here so that
//! `cargo test` keeps it true; the checker itself is shown to find a
//! circle it is given.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
        .collect();
    crates.sort();
    assert!(
        crates.iter().any(|c| c.ends_with("engine")) && crates.iter().any(|c| c.ends_with("cli")),
        "the crates were found: {crates:?}"
    );
    let o = checker(&crates);
    assert!(o.status.success(), "import circles:\n{}", text(&o));
}

/// The checker finds a circle: a crate of two modules that use each other
/// fails, and naming both modules' parts shows the circle.
#[test]
fn the_checker_finds_a_circle_it_is_given() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("module-cycles-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"circle\"\n").unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(src.join("a.rs"), "use crate::b::B;\npub struct A(B);\n").unwrap();
    std::fs::write(
        src.join("b.rs"),
        "pub struct B;\npub fn f() -> crate::a::A { crate::a::A(B) }\n",
    )
    .unwrap();
    let o = checker(std::slice::from_ref(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "a circle was not found:\n{t}");
    assert!(t.contains("crate::a") && t.contains("crate::b"), "{t}");
}
