//! The engine is a library for harnesses and agents: nothing of the
//! command line may creep into its normal dependency tree (issue #21's
//! "the engine crate builds and is used without clap"), nor anyhow.

use std::process::Command;

#[test]
fn neither_clap_nor_terminal_output_is_a_normal_dependency() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "--offline",
            "-p",
            "iiopbench-engine",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .output()
        .expect("running cargo tree");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    // The listing is real: it holds the engine and what it measures with.
    for needed in ["iiopbench-engine", "iiop-giop", "hdrhistogram", "tokio"] {
        assert!(names.contains(&needed), "{needed} missing from:\n{text}");
    }
    // The lab and agents crates are in this tree too, so this holds for
    // them. anyhow: the engine's errors are its own (`Error`, who failed).
    for banned in [
        "clap",
        "clap_builder",
        "clap_derive",
        "indicatif",
        "iiopbench",
        "anyhow",
    ] {
        assert!(
            !names.contains(&banned),
            "{banned} is a normal dependency of the engine:\n{text}"
        );
    }
}
