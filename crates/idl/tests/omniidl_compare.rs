//! Compares our model with omniidl's: for `fixtures/idl/bench.idl`, our
//! own corpus and every omniORB IDL file, a small omniidl back end
//! (`omniidl_dump/idldump.py`) prints each declaration's scoped name and
//! repository id, members with types, constants, union cases and
//! operations; our [`common::dump`] prints the same from the `Spec`, and
//! the two sets must be equal. Files omniidl rejects we must reject too.
//! Skipped (`SKIP <test>: <reason>`) only when omniidl is not installed,
//! and then a failure under `CI=true`.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn omniidl_dump(file: &Path, includes: &[PathBuf]) -> Result<BTreeSet<String>, String> {
    let mut cmd = Command::new("omniidl");
    cmd.arg("-p")
        .arg(crate_dir().join("tests/omniidl_dump"))
        .arg("-bidldump");
    for i in includes {
        cmd.arg(format!("-I{}", i.display()));
    }
    let out = cmd.arg(file).output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).to_string());
    }
    Ok(String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect())
}

fn have_omniidl() -> bool {
    Command::new("omniidl")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A prerequisite of `test` is missing. Under `CI=true` (or `1`) that is a
/// failure; elsewhere prints `SKIP <test>: <reason>` and appends that line
/// to the file named by `IIOPBENCH_SKIP_LOG` when set (scripts/test lists
/// them).
fn skip_or_fail(test: &str, reason: &str) {
    if matches!(std::env::var("CI").as_deref(), Ok("true" | "1")) {
        panic!("CI is set but {reason}");
    }
    let line = format!("SKIP {test}: {reason}");
    eprintln!("{line}");
    if let Some(log) = std::env::var_os("IIOPBENCH_SKIP_LOG") {
        use std::io::Write;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log);
        let _ = file.and_then(|mut f| writeln!(f, "{line}"));
    }
}

fn compare(file: &Path, opts: &iiop_idl::Options) -> Result<usize, String> {
    let theirs = omniidl_dump(file, &opts.include_dirs);
    let ours = iiop_idl::parse_file(file, opts);
    match (theirs, ours) {
        (Ok(t), Ok(spec)) => {
            let o = dump(&spec);
            if t == o {
                return Ok(t.len());
            }
            let only_t: Vec<_> = t.difference(&o).take(15).cloned().collect();
            let only_o: Vec<_> = o.difference(&t).take(15).cloned().collect();
            Err(format!(
                "{}: differs\n  only omniidl:\n    {}\n  only ours:\n    {}",
                file.display(),
                only_t.join("\n    "),
                only_o.join("\n    ")
            ))
        }
        (Err(_), Err(_)) => Ok(0),
        (Ok(_), Err(e)) => Err(format!("{}: omniidl accepts, we fail: {e}", file.display())),
        (Err(e), Ok(_)) => Err(format!(
            "{}: we accept, omniidl fails: {}",
            file.display(),
            e.lines().next().unwrap_or("")
        )),
    }
}

#[test]
fn repository_ids_and_members_agree_with_omniidl() {
    if !have_omniidl() {
        skip_or_fail(
            "repository_ids_and_members_agree_with_omniidl",
            "omniidl is not on PATH \
             (run scripts/install-deps or scripts/orbs/omniorb/install: Debian's omniidl)",
        );
        return;
    }
    let mut files = vec![bench_idl()];
    files.extend(idl_files(&crate_dir().join("../../fixtures/idl/corpus")));
    let local = iiop_idl::Options::default();
    let mut failures = Vec::new();
    let mut facts = 0;
    for f in &files {
        match compare(f, &local) {
            Ok(n) => facts += n,
            Err(e) => failures.push(e),
        }
    }
    let opts = omni_opts();
    let omni = idl_files(Path::new(OMNI));
    for f in &omni {
        match compare(f, &opts) {
            Ok(n) => facts += n,
            Err(e) => failures.push(e),
        }
    }
    println!(
        "compared {facts} facts over {} files",
        files.len() + omni.len()
    );
    assert!(
        failures.is_empty(),
        "{} files differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(facts > 12_000, "only {facts} facts compared");
}
