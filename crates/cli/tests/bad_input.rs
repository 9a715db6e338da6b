//! Black-box: bad input is refused before anything starts — nothing on
//! stdout (no header, no empty table), one line on stderr, said once, a
//! failing status — and a standard output closed by its reader (`… |
//! head -1`) ends the command quietly, without a panic.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Run the binary with `args`; (status code, stdout, stderr), within
/// `limit` (killed beyond it).
fn run(args: &[&str], limit: Duration) -> (Option<i32>, String, String) {
    let r = common::iiopbench_bounded(args, limit);
    (r.code, r.stdout, r.stderr)
}

/// `args` are refused: a failing status, nothing on stdout, one line on
/// stderr that says `expect` and does not repeat itself.
fn refused(args: &[&str], expect: &str) {
    // Nothing starts, so the answer is at once (the budget is for a
    // loaded machine, far below any bench run's length).
    let (code, out, err) = run(args, Duration::from_secs(20));
    assert!(
        matches!(code, Some(c) if c != 0),
        "{args:?} exited {code:?}"
    );
    assert_eq!(out, "", "{args:?} printed on stdout; stderr: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: not one line:\n{err}");
    let line = lines[0];
    assert!(line.starts_with("iiopbench: "), "{args:?}: {line}");
    assert!(line.contains(expect), "{args:?}: no {expect:?} in\n{line}");
    assert!(!line.contains("panicked"), "{line}");
    // Said once: no clause of it comes twice.
    for part in line.split(": ").filter(|p| p.len() > 12) {
        assert_eq!(
            line.matches(part).count(),
            1,
            "{args:?} repeats {part:?}:\n{line}"
        );
    }
}

#[test]
fn unknown_types_modes_and_ops_are_refused() {
    refused(
        &["bench", "throughput", "--type", "foo"],
        "unknown element type \"foo\"",
    );
    refused(
        &["bench", "throughput", "--mode", "threeway"],
        "unknown mode \"threeway\"",
    );
    refused(
        &["bench", "latency", "--op", "frobnicate"],
        "\"frobnicate\"",
    );
    refused(&["bench", "latency", "--type", "nosuch"], "\"nosuch\"");
}

#[test]
fn options_the_op_ignores_are_refused() {
    refused(
        &["bench", "latency", "--size", "10GiB"],
        "--size are the payload of echo and send: ping sends none",
    );
}

#[test]
fn zero_counts_and_durations_are_refused() {
    for kind in ["latency", "connect", "tcp", "setup"] {
        refused(
            &["bench", kind, "--count", "0"],
            "--count must be at least 1",
        );
    }
    refused(
        &["bench", "latency", "--duration", "0s"],
        "--duration must be more than 0",
    );
    refused(
        &["bench", "params", "--duration", "0s"],
        "--duration must be more than 0",
    );
}

#[test]
fn negative_durations_are_called_negative() {
    for args in [
        &["bench", "latency", "--duration", "-5s"][..],
        &["soak", "--duration", "-5s"],
        &["bench", "throughput", "--min-duration", "-1ms"],
    ] {
        refused(args, "the duration is negative");
    }
    // Not taken for a flag: clap's word for that would be this.
    let (_, _, err) = run(
        &["bench", "latency", "--duration", "-5s"],
        Duration::from_secs(20),
    );
    assert!(!err.contains("unexpected argument"), "{err}");
}

#[test]
fn an_unreadable_target_is_refused_without_a_table() {
    let missing = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-bad-{}.ior", std::process::id()));
    let m = missing.to_str().unwrap();
    for kind in ["latency", "throughput", "connect", "closed"] {
        refused(&["bench", kind, "--target", m], "cannot read");
    }
    // A file that holds no reference.
    let junk = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-junk-{}.ior", std::process::id()));
    std::fs::write(&junk, "not a reference\n").unwrap();
    refused(
        &["bench", "latency", "--target", junk.to_str().unwrap()],
        "is not IOR:, corbaloc: or corbaname:",
    );
    std::fs::remove_file(&junk).unwrap();
}

#[test]
fn a_bad_ior_is_told_once() {
    refused(&["ior", "decode", "IOR:0123"], "IOR type id");
}

#[test]
fn usage_errors_are_one_line() {
    refused(
        &["bench", "latency", "--bogus"],
        "unexpected argument '--bogus'",
    );
    refused(&["soak"], "--duration");
}

/// Run `args` with stdout a pipe whose reader has left before the
/// command writes (as `… | head -1` leaves after its line): the command
/// must end by itself, quietly: no panic, nothing on stderr, status 0.
fn closed_before_it_writes(args: &[&str]) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_iiopbench"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("iiopbench runs");
    drop(child.stdout.take());
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("{args:?} did not end within 60 s of its reader leaving");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert_eq!(err, "", "{args:?}");
    assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
}

#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    // A bench table, written well after the reader left (the run takes
    // longer than the drop).
    let json = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-pipe-{}.json", std::process::id()));
    closed_before_it_writes(&[
        "bench",
        "latency",
        "--op",
        "echo",
        "--size",
        "1,64",
        "--count",
        "200",
        "--warmup",
        "20",
        "--runs",
        "1",
        "--json",
        json.to_str().unwrap(),
    ]);
    // The command went on to write its results file.
    let text = std::fs::read_to_string(&json).expect("results written");
    std::fs::remove_file(&json).unwrap();
    assert!(text.contains("\"cases\""), "{text}");
    // Lines printed one at a time, by a command without a table.
    closed_before_it_writes(&["ior", "decode", "corbaloc::127.0.0.1:2809/NameService"]);
    // The help, printed by the argument parser.
    closed_before_it_writes(&["bench", "throughput", "--help"]);
}
