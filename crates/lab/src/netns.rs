//! Named network namespaces: create and delete them with `ip netns`, run a
//! closure on a thread that has entered one (sockets and TUN devices made
//! there stay in that namespace), prepare a `Command` to start inside one,
//! find and kill the processes left in one, and remove leftovers of labs
//! whose owner process is gone.
//!
//! Every namespace this crate creates is named `iiopb-<owner pid>-…`
//! ([`NAME_PREFIX`]) and recorded in a process-wide registry until it is
//! deleted, so a signal handler can remove them (see `crate::signal`).

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::{LabError, Result};

/// Prefix of every namespace name this crate creates.
pub const NAME_PREFIX: &str = "iiopb-";

/// Where `ip netns` keeps its bind mounts.
pub const NETNS_DIR: &str = "/run/netns";

/// Namespaces created by this process and not yet deleted.
static LIVE: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Path of a named namespace.
pub fn ns_path(name: &str) -> PathBuf {
    Path::new(NETNS_DIR).join(name)
}

/// Fails with [`LabError::NotRoot`] unless the effective uid is 0.
pub fn require_root() -> Result<()> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    if uid != 0 {
        return Err(LabError::NotRoot { uid });
    }
    Ok(())
}

/// True when `program` is an executable file in one of PATH's directories
/// (or in /sbin, /usr/sbin, which a non-login PATH may lack).
pub fn have_program(program: &str) -> bool {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"])
        .filter(|d| !d.is_empty())
        .any(|d| Path::new(d).join(program).is_file());
    found
}

/// Fails with [`LabError::MissingTool`] naming the first missing program.
pub fn require_programs(programs: &[&'static str]) -> Result<()> {
    for p in programs {
        if !have_program(p) {
            return Err(LabError::MissingTool { program: p });
        }
    }
    Ok(())
}

fn command_line(program: &str, args: &[&str]) -> String {
    let mut s = program.to_string();
    for a in args {
        s.push(' ');
        s.push_str(a);
    }
    s
}

/// Runs `program args…` to completion, optionally inside namespace `ns`
/// and with `stdin` fed to it; returns stdout, or an error with stderr.
pub fn run(ns: Option<&File>, program: &str, args: &[&str], stdin: Option<&str>) -> Result<String> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(f) = ns {
        enter_on_exec(&mut cmd, f);
    }
    let line = command_line(program, args);
    let mut child = cmd
        .spawn()
        .map_err(|e| LabError::io(format!("spawning `{line}`"), e))?;
    if let Some(text) = stdin {
        let mut w = child.stdin.take().expect("stdin was piped");
        w.write_all(text.as_bytes())
            .map_err(|e| LabError::io(format!("writing stdin of `{line}`"), e))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| LabError::io(format!("waiting for `{line}`"), e))?;
    if !out.status.success() {
        return Err(LabError::Command {
            command: line,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `ip args…` in the root namespace (use `-n NS` inside `args` to act in one).
pub fn ip(args: &[&str]) -> Result<String> {
    run(None, "ip", args, None)
}

/// Makes `cmd`, when spawned, join the namespace open as `ns` before exec.
pub fn enter_on_exec(cmd: &mut Command, ns: &File) {
    let fd = ns.as_raw_fd();
    // SAFETY: the hook only calls setns(2), which is async-signal-safe, on
    // a descriptor that stays open in the child until exec (the parent
    // holds the File across spawn).
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Runs `f` on a fresh thread that has joined namespace `ns` and returns
/// its result. Sockets and TUN devices that `f` creates belong to `ns` for
/// their whole life, whichever thread uses them afterwards.
pub fn in_netns<T, F>(ns: &File, f: F) -> Result<T>
where
    T: Send,
    F: FnOnce() -> T + Send,
{
    let fd = ns.as_raw_fd();
    std::thread::scope(|s| {
        s.spawn(move || {
            // SAFETY: setns on a valid namespace fd affects only this thread.
            if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } != 0 {
                return Err(LabError::io(
                    "setns into lab namespace",
                    std::io::Error::last_os_error(),
                ));
            }
            Ok(f())
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// Writes `value` to `/proc/sys/<key>` as seen from namespace `ns`.
pub fn sysctl(ns: &File, key: &str, value: &str) -> Result<()> {
    let path = format!("/proc/sys/{key}");
    in_netns(ns, || std::fs::write(&path, value))?
        .map_err(|e| LabError::io(format!("writing {path} in lab namespace"), e))
}

/// Creates namespace `name`, registers it, and opens it. A namespace of
/// that name not made by this process is a leftover of a dead process that
/// had the same pid (names carry the owner's pid), and is removed first.
pub fn create(name: &str) -> Result<File> {
    let ours = LIVE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains(name);
    if !ours && ns_path(name).exists() {
        destroy(name)?;
    }
    ip(&["netns", "add", name])?;
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(name.to_string());
    File::open(ns_path(name)).map_err(|e| LabError::io(format!("opening namespace {name}"), e))
}

/// Pids (other than this process) whose network namespace is `name`.
pub fn pids_in(name: &str) -> Vec<i32> {
    let Ok(target) = std::fs::metadata(ns_path(name)) else {
        return Vec::new();
    };
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids = Vec::new();
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        if let Ok(m) = std::fs::metadata(entry.path().join("ns/net")) {
            if m.dev() == target.dev() && m.ino() == target.ino() {
                pids.push(pid);
            }
        }
    }
    pids
}

/// Kills every process left in namespace `name` (SIGKILL, waits up to 2 s
/// for them to go), then deletes the namespace and unregisters it. A
/// namespace that is already gone is not an error.
pub fn destroy(name: &str) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let pids = pids_in(name);
        if pids.is_empty() || Instant::now() > deadline {
            break;
        }
        for pid in pids {
            // SAFETY: kill(2) has no memory-safety preconditions.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let res = if ns_path(name).exists() {
        ip(&["netns", "delete", name]).map(|_| ())
    } else {
        Ok(())
    };
    LIVE.lock().unwrap_or_else(|e| e.into_inner()).remove(name);
    res
}

/// Names of namespaces created by this process and not deleted yet.
pub fn live() -> Vec<String> {
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .cloned()
        .collect()
}

/// Names in /run/netns that start with `prefix`, sorted.
pub fn list(prefix: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(NETNS_DIR)
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| n.starts_with(prefix))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The pid of the process that created namespace `name`
/// (`iiopb-<pid>-…`), if the name has that form.
pub fn owner_pid(name: &str) -> Option<i32> {
    let rest = name.strip_prefix(NAME_PREFIX)?;
    rest.split('-').next()?.parse().ok()
}

fn pid_alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Removes namespaces whose name starts with `prefix` (normally
/// [`NAME_PREFIX`]) and their processes. With `include_running` false,
/// namespaces whose owner pid is still alive are kept, so a `lab clean`
/// never breaks a lab in use. Returns the names removed.
pub fn cleanup_leftovers(prefix: &str, include_running: bool) -> Result<Vec<String>> {
    let mut removed = Vec::new();
    for name in list(prefix) {
        let owner_alive = owner_pid(&name).is_some_and(pid_alive);
        if owner_alive && !include_running {
            continue;
        }
        destroy(&name)?;
        removed.push(name);
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_pid_parses_lab_names() {
        assert_eq!(owner_pid("iiopb-4242-0-h-client"), Some(4242));
        assert_eq!(owner_pid("iiopb-17-3-l0"), Some(17));
        assert_eq!(owner_pid("other-17-3"), None);
        assert_eq!(owner_pid("iiopb-x-3"), None);
    }

    #[test]
    fn command_line_joins_args() {
        assert_eq!(
            command_line("tc", &["-n", "x", "qdisc"]),
            "tc -n x qdisc".to_string()
        );
    }
}
