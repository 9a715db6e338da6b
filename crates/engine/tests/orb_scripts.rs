//! The shell scripts under scripts/ that `iiopbench orbs` and the test
//! runner read: `scripts/orbs/tao/status` agrees with itself run after
//! run (TAO is not installed here: it runs against a fake ACE+TAO tree
//! whose `ldd` writes more than a pipe holds, after its match), and no
//! script pipes into `grep -q` under `set -o pipefail` (grep leaves at the
//! first match, the writer dies of SIGPIPE, and pipefail fails the
//! pipeline: `codesets=no` in 7 of 30 runs, seen in the field).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use iiopbench_engine::orbs::{parse_status, repo_root};

fn write(path: &Path, text: &str, executable: bool) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    if executable {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// A tree with a copy of scripts/orbs/tao/{status,common.sh}, a built
/// bench-server (any executable), an ACE_ROOT with TAO's version header,
/// and an `ldd` that lists libTAO_Codeset first, then (after a pause that
/// lets a `grep -q` reading it leave) 5 000 more libraries: 300 KB, more
/// than a pipe holds.
fn fake_tao_tree(root: &Path) -> PathBuf {
    let repo = repo_root().unwrap();
    for f in ["status", "common.sh"] {
        let text = std::fs::read_to_string(repo.join("scripts/orbs/tao").join(f)).unwrap();
        write(&root.join("scripts/orbs/tao").join(f), &text, true);
    }
    write(
        &root.join("target/vendor/tao/bench-server"),
        "#!/bin/sh\nexit 0\n",
        true,
    );
    let ace = root.join("ACE_wrappers");
    std::fs::create_dir_all(ace.join("ace")).unwrap();
    write(
        &ace.join("TAO/tao/Version.h"),
        "#define TAO_VERSION \"2.2.1\"\n",
        false,
    );
    write(
        &root.join("bin/ldd"),
        "#!/usr/bin/env bash\n\
         printf '\\tlibTAO_Codeset.so.2.2.1 => /opt/ace/lib/libTAO_Codeset.so.2.2.1 (0x0)\\n'\n\
         sleep 0.05\n\
         for ((i = 0; i < 5000; i++)); do\n\
         \x20 printf '\\tlibpadding%d.so => /opt/ace/lib/libpadding%d.so (0x0)\\n' \"$i\" \"$i\"\n\
         done\n",
        true,
    );
    ace
}

#[test]
fn tao_status_agrees_with_itself_in_30_runs() {
    let root = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-tao-status-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let ace = fake_tao_tree(&root);
    let path = format!(
        "{}:{}",
        root.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut codesets = Vec::new();
    for _ in 0..30 {
        let out = Command::new("bash")
            .arg(root.join("scripts/orbs/tao/status"))
            .env("PATH", &path)
            .env("ACE_ROOT", &ace)
            .env_remove("TAO_ROOT")
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let s = parse_status("tao", &text);
        assert!(s.installed && s.built, "{text}");
        codesets.push(text.lines().any(|l| l == "codesets=yes"));
        if !codesets.last().unwrap() {
            eprintln!("codesets=no in run {}: {text}", codesets.len());
        }
    }
    let _ = std::fs::remove_dir_all(&root);
    let yes = codesets.iter().filter(|&&c| c).count();
    assert_eq!(yes, 30, "codesets=yes in {yes} of 30 runs");
}

/// Every file under `dir` (recursively) that is a shell script.
fn shell_scripts(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            shell_scripts(&p, out);
        } else if std::fs::read_to_string(&p).is_ok_and(|t| {
            t.starts_with("#!/usr/bin/env bash")
                || t.starts_with("#!/bin/bash")
                || t.starts_with("#!/bin/sh")
                || t.starts_with("# shellcheck shell=bash")
        }) {
            out.push(p);
        }
    }
}

/// A `| grep -q` (or `-qx`, `-Eq` …) on one line: a pipe (not `||`)
/// into grep with a short option holding `q`. Comment lines are not code.
fn pipes_into_grep_q(line: &str) -> bool {
    let code = line.trim_start();
    if code.starts_with('#') {
        return false;
    }
    code.replace("||", "  ").split('|').skip(1).any(|after| {
        let mut words = after.split_whitespace();
        words.next() == Some("grep")
            && words.any(|w| w.starts_with('-') && !w.starts_with("--") && w.contains('q'))
    })
}

#[test]
fn no_script_pipes_into_grep_q() {
    assert!(pipes_into_grep_q(
        "if ldd \"$bin\" 2>/dev/null | grep -q 'x'; then"
    ));
    assert!(pipes_into_grep_q("a | grep -Eqx y || b"));
    assert!(!pipes_into_grep_q("grep -q x file || y"));
    assert!(!pipes_into_grep_q("if grep -q x <<<\"$v\"; then"));
    assert!(!pipes_into_grep_q("# a | grep -q in a comment"));
    assert!(!pipes_into_grep_q("a || grep -q x file"));
    let mut scripts = Vec::new();
    shell_scripts(&repo_root().unwrap().join("scripts"), &mut scripts);
    assert!(scripts.len() > 20, "{scripts:?}");
    let found: Vec<String> = scripts
        .iter()
        .flat_map(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            text.lines()
                .enumerate()
                .filter(|(_, l)| pipes_into_grep_q(l))
                .map(|(i, l)| format!("{}:{}: {}", p.display(), i + 1, l.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        found.is_empty(),
        "`| grep -q` fails under pipefail when grep leaves early; capture the output first:\n{}",
        found.join("\n")
    );
}
