//! Every code line of the README runs as pasted (issue 59).
//!
//! Each ```sh block of README.md runs in a fresh directory (with
//! `fixtures/` linked in, so the README's relative paths hold), line by
//! line through `bash`, with the `iiopbench` under test first on `PATH`:
//!
//! - a line ending in `&` starts a server in the background; the test
//!   waits for the `--ior-file` it names, and stops it when the block ends;
//! - a line whose `--json`/`--ior-file` output a later line reads must
//!   finish, successfully, within [`FEEDING`];
//! - any other line must succeed or still be running after [`BRIEF`] (a
//!   benchmark that runs for minutes is then interrupted: it started, took
//!   its input and measured);
//! - lines that need root (`sudo …`) are left to the lab tests; the two
//!   opening commands (`cargo run …`, `scripts/test`) are CI itself; a block
//!   using a vendor ORB runs where that ORB is built (always under CI).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a line whose output no later line reads may run.
const BRIEF: Duration = Duration::from_secs(6);
/// How long a line whose output a later line reads may take to finish.
const FEEDING: Duration = Duration::from_secs(120);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The ```sh blocks of `text`, each as its lines.
fn sh_blocks(text: &str) -> Vec<Vec<String>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in text.lines() {
        let t = line.trim_end();
        match &mut current {
            None if t == "```sh" => current = Some(Vec::new()),
            Some(lines) if t == "```" => {
                blocks.push(std::mem::take(lines));
                current = None;
            }
            Some(lines) => lines.push(t.to_string()),
            None => {}
        }
    }
    assert!(current.is_none(), "README.md: a ```sh block is not closed");
    blocks
}

/// The command part of a line: without a trailing `# comment`.
fn command_of(line: &str) -> &str {
    let mut quote = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if i > 0 && line[..i].ends_with(' ') => return line[..i].trim_end(),
            _ => {}
        }
    }
    line.trim_end()
}

/// The values of `--json` and `--ior-file` on a line: the files it writes.
fn outputs(line: &str) -> Vec<String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    words
        .windows(2)
        .filter(|w| matches!(w[0], "--json" | "--ior-file"))
        .map(|w| w[1].to_string())
        .collect()
}

struct Running {
    child: Child,
}

impl Running {
    fn start(line: &str, dir: &Path, path: &str) -> Running {
        use std::os::unix::process::CommandExt;
        let child = Command::new("bash")
            .args(["-c", line])
            .current_dir(dir)
            .env("PATH", path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("bash starts");
        Running { child }
    }

    /// The exit status within `limit`, or None if still running.
    fn wait(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let t0 = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().expect("try_wait") {
                return Some(s);
            }
            if t0.elapsed() >= limit {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn stderr(&mut self) -> String {
        use std::io::Read;
        let mut s = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut s);
        }
        s
    }

    /// Interrupt the line's process group (as Ctrl-C would), then kill it.
    fn stop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-INT", "--", &group]).status();
        if self.wait(Duration::from_secs(10)).is_none() {
            let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
            let _ = self.child.wait();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.stop();
        }
    }
}

/// Runs one block; returns how many lines ran.
fn run_block(block: &[String], dir: &Path, path: &str) -> usize {
    let lines: Vec<&str> = block
        .iter()
        .map(|l| command_of(l))
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let mut background: Vec<Running> = Vec::new();
    let mut ran = 0;
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("sudo ") || line.starts_with("cargo ") || line.starts_with("scripts/") {
            continue;
        }
        ran += 1;
        let later = lines[i + 1..].join("\n");
        if let Some(server) = line.strip_suffix('&') {
            let mut r = Running::start(server.trim_end(), dir, path);
            let files = outputs(server);
            assert!(
                !files.is_empty(),
                "README: background line names no --ior-file to wait for: {line}"
            );
            let t0 = Instant::now();
            while !files
                .iter()
                .all(|f| std::fs::metadata(dir.join(f)).is_ok_and(|m| m.len() > 0))
            {
                if let Some(s) = r.wait(Duration::from_millis(100)) {
                    panic!(
                        "README: `{line}` exited ({s}) before writing {files:?}:\n{}",
                        r.stderr()
                    );
                }
                assert!(
                    t0.elapsed() < FEEDING,
                    "README: `{line}` wrote no {files:?} within {FEEDING:?}"
                );
            }
            background.push(r);
            continue;
        }
        let feeds = outputs(line).iter().any(|f| later.contains(f.as_str()));
        let limit = if feeds { FEEDING } else { BRIEF };
        let t0 = Instant::now();
        let mut r = Running::start(line, dir, path);
        let status = r.wait(limit);
        eprintln!("{:6.1} s  {line}", t0.elapsed().as_secs_f64());
        match status {
            Some(s) => assert!(
                s.success(),
                "README: `{line}` failed ({s}):\n{}",
                r.stderr()
            ),
            None if feeds => panic!("README: `{line}` did not finish within {limit:?}"),
            None => r.stop(),
        }
    }
    ran
}

#[test]
fn every_code_line_of_the_readme_runs_as_pasted() {
    let text = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_iiopbench"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let blocks = sh_blocks(&text);
    assert!(blocks.len() >= 2, "README.md has too few ```sh blocks");
    let mut ran = 0;
    for block in &blocks {
        if block.iter().any(|l| l.contains("iiopbench orbs "))
            && !common::vendor_built(
                "every_code_line_of_the_readme_runs_as_pasted",
                "omniorb",
                true,
            )
        {
            continue;
        }
        let dir = tempdir();
        std::os::unix::fs::symlink(repo().join("fixtures"), dir.join("fixtures")).unwrap();
        ran += run_block(block, &dir, &path);
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(ran >= 10, "only {ran} README lines ran");
}

fn tempdir() -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-readme-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn comments_and_outputs_are_read_as_a_shell_would() {
    assert_eq!(command_of("iiopbench x   # a comment"), "iiopbench x");
    assert_eq!(
        command_of("iiopbench call --args '{\"s\": [1]}' # c"),
        "iiopbench call --args '{\"s\": [1]}'"
    );
    assert_eq!(command_of("iiopbench a#b"), "iiopbench a#b");
    assert_eq!(
        outputs("iiopbench serve --ior-file b.ior --json r.json"),
        ["b.ior", "r.json"]
    );
    assert_eq!(
        sh_blocks("x\n```sh\na\nb\n```\n```\nc\n```\n"),
        [["a", "b"]]
    );
}
