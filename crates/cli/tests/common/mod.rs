//! What a CLI test does when something it needs is missing (a vendor ORB,
//! a Debian tool, root): under CI a failure naming what and how to
//! install it; elsewhere a `SKIP <test>: <reason>` line on stderr, also
//! appended to `$IIOPBENCH_SKIP_LOG`, which scripts/test lists grouped by
//! reason. Each test binary uses part of this.
#![allow(dead_code)]

pub mod agents;

/// Puts the calling thread in the real-time class (SCHED_FIFO at
/// `priority`); threads it starts afterwards inherit the class. Timing
/// tests use it so that a build beside them does not make them wait
/// milliseconds for a CPU at each wake-up.
pub fn realtime(priority: i32) -> std::io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: sets this thread's (tid 0 = caller) policy from a valid param.
    match unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// Whether CI is set (`CI=true`, `1`, or any value but `false`/`0`).
pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.as_str(), "" | "false" | "0"))
}

/// `test` cannot run for `reason`: panics under CI, else says so.
pub fn skip_or_fail(test: &str, reason: &str) {
    assert!(!ci(), "{test}: CI is set but {reason}");
    skip(test, reason);
}

/// `test` is skipped for `reason`, CI or not (an optional prerequisite).
pub fn skip(test: &str, reason: &str) {
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

/// Whether `orb`'s programs are installed and built here; when not,
/// [`skip_or_fail`] (`required`) or [`skip`].
pub fn vendor_built(test: &str, orb: &str, required: bool) -> bool {
    let s = iiopbench_engine::orbs::status(orb);
    if s.installed && s.built {
        return true;
    }
    let reason = format!(
        "{orb} is not built here ({}); run scripts/orbs/{orb}/install and scripts/orbs/{orb}/build",
        s.detail
    );
    if required {
        skip_or_fail(test, &reason);
    } else {
        skip(test, &reason);
    }
    false
}

/// A child process stopped and reaped on drop: SIGTERM first, so that a
/// vendor server removes its temporary files (the TLS key files the
/// omniORB and JacORB servers write) as it exits; SIGKILL when it has not
/// exited within 5 s.
pub struct Proc(pub std::process::Child);

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(pid) = libc::pid_t::try_from(self.0.id()) {
            // SAFETY: kill(2) with our own child's pid and a valid signal.
            unsafe { libc::kill(pid, libc::SIGTERM) };
            let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while std::time::Instant::now() < end {
                if let Ok(Some(_)) = self.0.try_wait() {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start a server that prints `ready` and wait for it (at most 120 s).
pub fn start(mut cmd: std::process::Command) -> Proc {
    use std::io::BufRead;
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("server starts");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if line.trim() == "ready" {
                let _ = tx.send(());
            }
        }
    });
    let p = Proc(child);
    rx.recv_timeout(std::time::Duration::from_secs(120))
        .expect("server printed ready within 120 s");
    p
}

/// Start `orb`'s bench server (scripts/orbs/ORB/start) on a free port of
/// 127.0.0.1, its IOR written to `ior_file`, and wait for it.
pub fn vendor_server(orb: &str, ior_file: &std::path::Path) -> Proc {
    vendor_server_with(orb, ior_file, &[])
}

/// [`vendor_server`] with `extra` arguments for the server (its ORB's
/// options, e.g. `-ORB…` for omniORB).
pub fn vendor_server_with(orb: &str, ior_file: &std::path::Path, extra: &[&str]) -> Proc {
    start(vendor_command(orb, ior_file, extra))
}

/// The command [`vendor_server_with`] runs, for a caller that adds to
/// it (an environment variable such as JacORB's `JAVA_OPTS`) before
/// [`start`].
pub fn vendor_command(
    orb: &str,
    ior_file: &std::path::Path,
    extra: &[&str],
) -> std::process::Command {
    // Not every vendor server accepts port 0: take a free port first.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
        .to_string();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut c = std::process::Command::new(root.join(format!("scripts/orbs/{orb}/start")));
    c.args(["--host", "127.0.0.1", "--port", &port, "--ior-file"])
        .arg(ior_file)
        .args(extra);
    c
}

/// Our server started as `iiopbench serve --server-threads 2 ARGS` would,
/// in this process (127.0.0.1, a free port unless ARGS say otherwise).
pub fn serve_in_process(args: &[&str]) -> iiop_bench_idl::run::RunningServer {
    use clap::Parser;
    let mut v = vec!["iiopbench", "serve", "--server-threads", "2"];
    v.extend_from_slice(args);
    let iiopbench::opts::Command::Serve(o) =
        iiopbench::opts::Cli::try_parse_from(v).unwrap().command
    else {
        unreachable!("serve command")
    };
    iiop_bench_idl::run::RunningServer::start(iiopbench::cmd::serve::server_options(&o).unwrap())
        .unwrap()
}

/// What [`iiopbench_bounded`] saw: the exit code (None: killed by a
/// signal), standard output and error, and how long the run took.
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub took: std::time::Duration,
}

/// Runs this package's `iiopbench` with `args` (standard input closed),
/// killing it and failing the test when it still runs after `limit`.
/// Standard output and error are read while it runs, so a chatty run
/// cannot stall on a full pipe and be taken for a hang.
pub fn iiopbench_bounded(args: &[&str], limit: std::time::Duration) -> Ran {
    use std::io::Read;
    use std::process::Stdio;
    let t = std::time::Instant::now();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_iiopbench"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("iiopbench runs");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("iiopbench {args:?} still running after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    Ran {
        code: status.code(),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
        took: t.elapsed(),
    }
}
