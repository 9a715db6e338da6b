//! Starting bench.idl servers on this host for the experiments that need
//! several (packing's N servers, balance's S replicas) or time a start
//! (setup's `spawn`): ours in this process (own runtime and thread),
//! ours as child processes (started by the caller's
//! [`Programs`](crate::programs::Programs)), a vendor's through
//! `scripts/orbs/<orb>/start`, or any shell command that prints an IOR
//! (docs/vendor-protocol.md: the IOR alone on a line, then `ready`).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use iiop_bench_idl::run::{RunningServer, ServerOptions};
use iiop_giop::ior::Ior;

use crate::error::{bail, ensure, fail, Error, JobError, Result};
use crate::programs::{Programs, ServerProcess};

/// Which servers an experiment starts. Its serde form is its name:
/// `inproc`, `child` or `orb:NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replicas {
    /// Ours, in this process, one thread each.
    InProcess,
    /// Ours, as processes (the run's [`Programs`] start them).
    Child,
    /// A vendor ORB's server via `scripts/orbs/<name>/start`.
    Orb(String),
}

impl serde::Serialize for Replicas {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Replicas {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Replicas, D::Error> {
        let s = <String as serde::Deserialize>::deserialize(d)?;
        parse_kind(&s).map_err(serde::de::Error::custom)
    }
}

impl Replicas {
    /// Name for the results.
    pub fn name(&self) -> String {
        match self {
            Replicas::InProcess => "inproc".into(),
            Replicas::Child => "child".into(),
            Replicas::Orb(n) => format!("orb:{n}"),
        }
    }
}

/// `inproc`, `child` or `orb:NAME`.
pub fn parse_kind(s: &str) -> Result<Replicas, JobError> {
    match s {
        "inproc" => Ok(Replicas::InProcess),
        "child" => Ok(Replicas::Child),
        _ => match s.strip_prefix("orb:") {
            Some(n) if !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric()) => {
                Ok(Replicas::Orb(n.into()))
            }
            _ => Err(JobError::new(format!(
                "{s:?}: use inproc, child or orb:NAME"
            ))),
        },
    }
}

/// A server started for an experiment; stopped on drop.
#[derive(Debug)]
pub enum Started {
    InProcess(RunningServer),
    Process(ChildServer),
}

impl Started {
    /// Its main object's reference.
    pub fn ior(&self) -> Ior {
        match self {
            Started::InProcess(s) => s.refs().ior.clone(),
            Started::Process(c) => c.ior.clone(),
        }
    }
}

/// A child process serving bench.idl.
#[derive(Debug)]
pub struct ChildServer {
    pub process: ChildProcess,
    pub ior: Ior,
    /// From spawn to the IOR line.
    pub started_in: Duration,
}

/// A child process we started: SIGTERM, then wait (kill after 5 s) on drop.
#[derive(Debug)]
pub struct ChildProcess {
    pub child: Child,
}

/// Spawn `cmd` with its stdout discarded.
pub fn spawn_quiet(mut cmd: Command, what: &str) -> Result<ChildProcess> {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| fail!(Local, "starting {what}: {e}"))?;
    Ok(ChildProcess { child })
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the pid of a child we spawned and still own.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let end = Instant::now() + Duration::from_secs(5);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where `scripts/orbs/<orb>/start` is: under the current directory or one
/// of its parents, else under this source tree.
pub fn orb_script(orb: &str) -> Result<PathBuf> {
    let rel = PathBuf::from("scripts/orbs").join(orb).join("start");
    let mut dir = std::env::current_dir().ok();
    while let Some(d) = dir {
        if d.join(&rel).is_file() {
            return Ok(d.join(&rel));
        }
        dir = d.parent().map(|p| p.to_path_buf());
    }
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(&rel);
    ensure!(
        src.is_file(),
        Orb,
        "no {} under the current directory or {}",
        rel.display(),
        env!("CARGO_MANIFEST_DIR")
    );
    Ok(src)
}

/// A free loopback port (bound, then released).
pub fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// Spawn `cmd` (stdout piped) and wait up to `timeout` for the IOR line.
pub fn spawn_reading_ior(mut cmd: Command, what: &str, timeout: Duration) -> Result<ChildServer> {
    let t0 = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| fail!(Local, "starting {what}: {e}"))?;
    let out = child.stdout.take().expect("piped");
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        // Keep reading to the end so the child never blocks on a full pipe.
        let mut sent = false;
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let l = line.trim();
            if !sent && l.starts_with("IOR:") {
                let _ = tx.send(l.to_string());
                sent = true;
            }
        }
    });
    let line = match rx.recv_timeout(timeout) {
        Ok(l) => l,
        Err(_) => {
            let _ = child.kill();
            let status = child.wait().ok();
            bail!(
                Local,
                "{what} printed no IOR line within {:?} (exit status: {:?})",
                timeout,
                status
            );
        }
    };
    let started_in = t0.elapsed();
    let process = ChildProcess { child };
    let ior = line
        .parse::<Ior>()
        .map_err(|e| fail!(Local, "{what} printed an IOR that does not parse: {e}"))?;
    Ok(ChildServer {
        process,
        ior,
        started_in,
    })
}

/// Start `n` servers of `kind` (`programs`: how to start ours as
/// processes, for `child`).
pub fn start(kind: &Replicas, n: usize, programs: Option<&dyn Programs>) -> Result<Vec<Started>> {
    let mut v = Vec::with_capacity(n);
    for i in 0..n {
        let s = match kind {
            Replicas::InProcess => Started::InProcess(
                RunningServer::start(ServerOptions {
                    threads: 1,
                    ..ServerOptions::default()
                })
                .map_err(|e| fail!(Local, "in-process server {i}: {e}"))?,
            ),
            Replicas::Child => {
                let p = programs.ok_or_else(|| {
                    Error::job(
                        "`servers` child starts our server as processes: \
                         this run has no way to start them (RunContext::programs)",
                    )
                })?;
                let c = p.server(&ServerProcess {
                    threads: Some(1),
                    ..ServerProcess::on("127.0.0.1:0")
                });
                let what = format!("server {i} ({})", c.get_program().to_string_lossy());
                Started::Process(spawn_reading_ior(c, &what, Duration::from_secs(30))?)
            }
            Replicas::Orb(orb) => {
                let script = orb_script(orb)?;
                let port = free_port()?;
                let mut c = Command::new(&script);
                c.args(["--host", "127.0.0.1", "--port", &port.to_string()]);
                Started::Process(spawn_reading_ior(
                    c,
                    &format!("{orb} server {i}"),
                    Duration::from_secs(120),
                )?)
            }
        };
        v.push(s);
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse() {
        assert_eq!(parse_kind("inproc"), Ok(Replicas::InProcess));
        assert_eq!(parse_kind("child"), Ok(Replicas::Child));
        assert_eq!(
            parse_kind("orb:omniorb"),
            Ok(Replicas::Orb("omniorb".into()))
        );
        assert!(parse_kind("orb:../x").is_err());
        assert!(parse_kind("vendor").is_err());
        assert_eq!(Replicas::Orb("tao".into()).name(), "orb:tao");
        assert_eq!(
            serde_json::from_str::<Replicas>("\"orb:jacorb\"").unwrap(),
            Replicas::Orb("jacorb".into())
        );
        assert_eq!(
            serde_json::to_string(&Replicas::Child).unwrap(),
            "\"child\""
        );
    }
}
