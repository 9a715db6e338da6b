//! The vendor ORBs of vendors/ as data: which there are, where
//! their scripts live (`scripts/orbs/<orb>/`: `status`, `install`,
//! `build`, `start`, `client`, following docs/vendor-protocol.md) and what
//! their `status` script says. Running them for a user is the command
//! line's (`iiopbench orbs`); the interop matrix and the suite runner
//! start them from here.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::error::{bail, ensure, fail, Result};

/// The vendor ORBs we know about, in display order.
pub const ORBS: [(&str, &str); 4] = [
    ("omniorb", "omniORB 4.2 (C++), from Debian"),
    ("jacorb", "JacORB 3.9 (Java), from Maven Central"),
    ("omniorbpy", "omniORBpy (Python), from PyPI"),
    ("tao", "TAO (C++), needs ACE_ROOT/TAO_ROOT"),
];

/// `HOST:PORT` (`[::1]:0` for IPv6) as the host and port a start script
/// takes.
pub fn split_listen(addr: &str) -> crate::error::Result<(String, u16)> {
    let (host, port) = addr
        .rsplit_once(':')
        .ok_or_else(|| crate::error::fail!(Orb, "`listen` {addr:?}: expected HOST:PORT"))?;
    let port = port
        .parse()
        .map_err(|_| crate::error::fail!(Orb, "`listen` {addr:?}: bad port {port:?}"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    crate::error::ensure!(!host.is_empty(), Orb, "`listen` {addr:?}: no host");
    Ok((host.to_string(), port))
}

/// The source tree holding `scripts/orbs`: `$IIOPBENCH_ROOT`, else the
/// nearest ancestor of the working directory that has it, else the tree
/// this binary was built from.
pub fn repo_root() -> crate::error::Result<PathBuf> {
    if let Some(r) = std::env::var_os("IIOPBENCH_ROOT") {
        return Ok(PathBuf::from(r));
    }
    let has = |p: &Path| p.join("scripts/orbs").is_dir();
    if let Ok(mut d) = std::env::current_dir() {
        loop {
            if has(&d) {
                return Ok(d);
            }
            if !d.pop() {
                break;
            }
        }
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if has(&built) {
        return Ok(built.canonicalize()?);
    }
    crate::error::bail!(
        Orb,
        "cannot find iiopbench's scripts/orbs: run from the source tree or set IIOPBENCH_ROOT"
    )
}

fn check_name(name: &str) -> crate::error::Result<()> {
    crate::error::ensure!(
        ORBS.iter().any(|(n, _)| *n == name),
        Orb,
        "unknown ORB {name:?}; known: {}",
        ORBS.map(|o| o.0).join(", ")
    );
    Ok(())
}

/// The script `scripts/orbs/<orb>/<action>`, which must exist.
pub fn script(orb: &str, action: &str) -> crate::error::Result<PathBuf> {
    check_name(orb)?;
    let p = repo_root()?.join("scripts/orbs").join(orb).join(action);
    crate::error::ensure!(
        p.is_file(),
        Orb,
        "{orb} has no {action} script ({} is missing)",
        p.display()
    );
    Ok(p)
}

/// `orb`'s `start` script as a command serving on 127.0.0.1 at a free
/// port (not every vendor server accepts port 0, so one is picked here)
/// and writing its IOR to `ior_file`; stdin closed, stdout piped (where
/// it says `ready`). The caller sets stderr and spawns it.
pub fn start_command(orb: &str, ior_file: &Path) -> crate::error::Result<Command> {
    let script = script(orb, "start")?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| crate::error::fail!(Orb, "finding a free port for {orb}: {e}"))?
        .port();
    let mut cmd = Command::new(&script);
    cmd.args([
        "--host",
        "127.0.0.1",
        "--port",
        &port.to_string(),
        "--ior-file",
    ])
    .arg(ior_file)
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::piped());
    Ok(cmd)
}

/// What `status` says of one ORB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub name: String,
    pub installed: bool,
    pub built: bool,
    pub detail: String,
}

/// Parse a status script's `key=value` lines.
pub fn parse_status(name: &str, out: &str) -> Status {
    let get = |k: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(k).and_then(|r| r.strip_prefix('=')))
            .unwrap_or("")
            .trim()
            .to_string()
    };
    Status {
        name: name.to_string(),
        installed: get("installed") == "yes",
        built: get("built") == "yes",
        detail: get("detail"),
    }
}

/// Status of one ORB (a missing status script means "not available").
pub fn status(orb: &str) -> Status {
    match script(orb, "status") {
        Ok(s) => match Command::new(s).output() {
            Ok(o) => parse_status(orb, &String::from_utf8_lossy(&o.stdout)),
            Err(e) => Status {
                name: orb.into(),
                installed: false,
                built: false,
                detail: format!("status script failed: {e}"),
            },
        },
        Err(e) => Status {
            name: orb.into(),
            installed: false,
            built: false,
            detail: e.to_string(),
        },
    }
}

/// A vendor server started for a run (a suite, a sweep of several
/// servers); stopped (SIGTERM, then kill)
/// on drop.
#[derive(Debug)]
pub struct OrbServer {
    child: Child,
    pub ior_file: PathBuf,
    /// The `config KEY=VALUE` lines it printed before `ready`, as
    /// (KEY, VALUE) (docs/vendor-protocol.md): its threading among them.
    pub config: Vec<(String, String)>,
}

impl OrbServer {
    /// Start `orb`'s server, on `cpu` when given (the affinity is set
    /// before exec, so every thread the server makes inherits it).
    pub fn start(orb: &str, timeout: Duration, cpu: Option<usize>) -> Result<OrbServer> {
        let ior_file =
            std::env::temp_dir().join(format!("iiopbench-orb-{}-{orb}.ior", std::process::id()));
        let _ = std::fs::remove_file(&ior_file);
        let mut cmd = crate::orbs::start_command(orb, &ior_file)?;
        if let Some(cpu) = cpu {
            crate::placement::pin_command(&mut cmd, &[cpu])?;
        }
        let script = Path::new(cmd.get_program()).to_path_buf();
        let mut child = cmd
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| fail!(Orb, "starting {orb} ({}): {e}", script.display()))?;
        let out = child.stdout.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut config = Vec::new();
            for line in std::io::BufReader::new(out).lines() {
                let Ok(l) = line else { break };
                if let Some((k, v)) = l.strip_prefix("config ").and_then(|c| c.split_once('=')) {
                    config.push((k.to_string(), v.to_string()));
                }
                if l.trim() == "ready" {
                    let _ = tx.send(std::mem::take(&mut config));
                }
            }
        });
        let mut srv = OrbServer {
            child,
            ior_file,
            config: Vec::new(),
        };
        let t0 = Instant::now();
        loop {
            if let Ok(config) = rx.recv_timeout(Duration::from_millis(100)) {
                srv.config = config;
                break;
            }
            if let Some(st) = srv.child.try_wait()? {
                bail!(Orb, "{orb} server exited ({st}) before saying ready");
            }
            ensure!(
                t0.elapsed() < timeout,
                Orb,
                "{orb} server did not say ready within {timeout:?}"
            );
        }
        ensure!(
            srv.ior_file.is_file(),
            Orb,
            "{orb} server said ready but wrote no IOR to {}",
            srv.ior_file.display()
        );
        Ok(srv)
    }
}

impl Drop for OrbServer {
    fn drop(&mut self) {
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                let _ = std::fs::remove_file(&self.ior_file);
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.ior_file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines() {
        let s = parse_status(
            "jacorb",
            "installed=yes\nbuilt=no\ndetail=JacORB 3.9, java 17\n",
        );
        assert_eq!(
            s,
            Status {
                name: "jacorb".into(),
                installed: true,
                built: false,
                detail: "JacORB 3.9, java 17".into()
            }
        );
        assert!(!parse_status("x", "").installed);
    }

    #[test]
    fn unknown_orb_is_named() {
        let e = script("orbix", "start").unwrap_err().to_string();
        assert!(e.contains("orbix") && e.contains("jacorb"), "{e}");
    }

    #[test]
    fn finds_jacorb_scripts_in_this_tree() {
        assert!(script("jacorb", "start")
            .unwrap()
            .ends_with("scripts/orbs/jacorb/start"));
    }
}
