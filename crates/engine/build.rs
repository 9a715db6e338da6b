//! Records the git commit the binary was built from, for the results'
//! `tool.git_commit` field ("unknown" outside a git checkout).

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    // GIT_OPTIONAL_LOCKS=0: `git status` must not refresh the index as it
    // reads it. A refresh rewrites .git/index, which this script watches,
    // so the next cargo command would run it again and rebuild the engine
    // and everything above it (on a fresh clone, the second command).
    let dirty = Command::new("git")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    let v = if dirty {
        format!("{commit}-dirty")
    } else {
        commit
    };
    println!("cargo:rustc-env=IIOPBENCH_GIT_COMMIT={v}");
    println!("cargo:rerun-if-changed=../../.git/HEAD");
    println!("cargo:rerun-if-changed=../../.git/index");
}
