//! Resolving a job's placement (`pin`, `client_cpus`, `server_cpus`) into
//! CPU lists, pinning the client, and recording where everything ran.

use crate::error::{ensure, Error, Result};
use crate::options::{Pin, PlacementOpts};
use crate::results::Placement;
use crate::sysinfo::{current_affinity, pin_current_thread};

/// The CPUs this process may use, as it started: the main thread's
/// affinity, read once (a client thread pinned by an earlier run in the
/// same process, a suite's or a test's, does not shrink it).
pub fn process_cpus() -> Vec<usize> {
    static CPUS: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();
    CPUS.get_or_init(|| {
        // SAFETY: getpid has no preconditions.
        let main = iiop_transport::affinity::affinity_of(unsafe { libc::getpid() });
        if main.is_empty() {
            current_affinity()
        } else {
            main
        }
    })
    .clone()
}

/// Start `cmd` on `cpus`: the affinity is set between fork and exec, so
/// every thread and process it makes inherits it (as `taskset -c`).
pub fn pin_command(cmd: &mut std::process::Command, cpus: &[usize]) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let set = iiop_transport::affinity::cpu_set(cpus).map_err(Error::local)?;
    // SAFETY: set_current_affinity is one system call and allocates
    // nothing, so it is safe between fork and exec.
    unsafe {
        cmd.pre_exec(move || iiop_transport::affinity::set_current_affinity(&set));
    }
    Ok(())
}

/// Gives the client thread its affinity back on drop.
#[derive(Debug)]
pub struct PinGuard(Vec<usize>);

impl Drop for PinGuard {
    fn drop(&mut self) {
        if !self.0.is_empty() {
            let _ = pin_current_thread(&self.0);
        }
    }
}

/// Resolved CPU lists; `None` means "not pinned".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cpus {
    pub client: Option<Vec<usize>>,
    pub server: Option<Vec<usize>>,
    /// Every CPU the process could use before anything was pinned.
    pub all: Vec<usize>,
    /// How the placement was chosen, as the results record it: `auto`
    /// (this run chose it), `pin same`, `pin cross`, `cpus` (given as
    /// lists), `none` (left to the kernel).
    pub chosen: String,
}

impl Cpus {
    /// From the options, checking the CPUs exist on this machine.
    /// `starts_server`: this run starts the server (embedded, or a vendor
    /// server it launches), so `pin` auto places both sides.
    pub fn resolve(o: &PlacementOpts, starts_server: bool) -> Result<Cpus> {
        let avail = process_cpus();
        let first = avail.first().copied().unwrap_or(0);
        let second = avail.get(1).copied();
        let (mut client, mut server, mut chosen) = match o.pin {
            Pin::None => (None, None, "none"),
            // A CPU list for either side means the user places: `auto`
            // then leaves the other side to the kernel, as before.
            Pin::Auto if !starts_server || o.client_cpus.is_some() || o.server_cpus.is_some() => {
                (None, None, "none")
            }
            Pin::Auto => match second {
                Some(s) => (Some(vec![first]), Some(vec![s]), "auto"),
                None => (Some(vec![first]), Some(vec![first]), "auto"),
            },
            Pin::Same => (Some(vec![first]), Some(vec![first]), "pin same"),
            Pin::Cross => {
                let s = second.ok_or_else(|| {
                    Error::local(format!(
                        "`pin` cross needs two CPUs, and this process may use only CPU {first}"
                    ))
                })?;
                (Some(vec![first]), Some(vec![s]), "pin cross")
            }
        };
        if let Some(c) = &o.client_cpus {
            client = Some(c.cpus().to_vec());
            chosen = "cpus";
        }
        if let Some(s) = &o.server_cpus {
            server = Some(s.cpus().to_vec());
            chosen = "cpus";
        }

        for cpu in client.iter().flatten() {
            ensure!(
                avail.contains(cpu),
                Local,
                "CPU {cpu} is not available to this process (available: {})",
                crate::sysinfo::format_cpu_list(&avail)
            );
        }
        // The server's may lie outside this process's own affinity (e.g.
        // under `taskset -c 0`, an external server on CPU 1): they only
        // have to exist.
        let online = crate::sysinfo::online_cpus().unwrap_or_else(|| avail.clone());
        for cpu in server.iter().flatten() {
            ensure!(
                online.contains(cpu) || avail.contains(cpu),
                Local,
                "CPU {cpu} is not online on this machine (online: {})",
                crate::sysinfo::format_cpu_list(&online)
            );
        }
        Ok(Cpus {
            client,
            server,
            all: avail,
            chosen: chosen.to_string(),
        })
    }

    /// Client and server run on CPUs they do not share, so a server
    /// thread may poll instead of sleeping without slowing the client. An
    /// unpinned client runs where the process may (`taskset -c 0` with
    /// `--server-cpus 1`: apart).
    pub fn apart(&self) -> bool {
        match (self.client.as_ref().unwrap_or(&self.all), &self.server) {
            (c, Some(s)) => !c.is_empty() && c.iter().all(|cpu| !s.contains(cpu)),
            _ => false,
        }
    }

    /// The CPUs an embedded server should run on: as pinned, or all of
    /// them (not the client's, which it would otherwise inherit).
    pub fn server_or_all(&self) -> Vec<usize> {
        self.server.clone().unwrap_or_else(|| self.all.clone())
    }

    /// Pin the calling (client) thread; call before creating client
    /// threads. The thread gets its affinity back when the guard drops,
    /// so a suite that runs case after case on one thread places each as
    /// its own options say.
    pub fn pin_client(&self) -> Result<PinGuard> {
        let before = current_affinity();
        if let Some(c) = &self.client {
            pin_current_thread(c)?;
        }
        Ok(PinGuard(before))
    }

    /// The record for the results: unpinned sides get the affinity they
    /// actually have (inherited from the process), so nothing is unknown
    /// when we started both sides.
    pub fn record(&self, server_known: bool) -> Placement {
        let all = self.all.clone();
        let client = self.client.clone().unwrap_or_else(|| all.clone());
        let server = if server_known {
            Some(self.server.clone().unwrap_or(all))
        } else {
            self.server.clone()
        };
        let mut p = Placement::new(client, server);
        p.chosen = self.chosen.clone();
        p
    }
}

/// A client and the servers a run starts kept apart: the client on the
/// first CPU this process may use, servers on the second (the first again
/// on a one-CPU machine).
pub fn apart() -> (usize, Option<usize>) {
    let avail = process_cpus();
    let client = avail.first().copied().unwrap_or(0);
    (client, Some(avail.get(1).copied().unwrap_or(client)))
}

/// What [`apart`] chose, for the results.
pub fn describe_apart(client: usize, server: Option<usize>) -> String {
    format!(
        "client CPU {client}, servers started by the run on CPU {}",
        server.map(|c| c.to_string()).unwrap_or("?".into())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpus(client: Option<&[usize]>, server: Option<&[usize]>, all: &[usize]) -> Cpus {
        Cpus {
            client: client.map(<[usize]>::to_vec),
            server: server.map(<[usize]>::to_vec),
            all: all.to_vec(),
            chosen: String::new(),
        }
    }

    #[test]
    fn apart_when_the_client_cannot_run_where_the_server_does() {
        assert!(cpus(Some(&[0]), Some(&[1]), &[0, 1]).apart());
        assert!(!cpus(Some(&[0]), Some(&[0]), &[0, 1]).apart());
        // Unpinned: wherever the process may run.
        assert!(!cpus(None, Some(&[1]), &[0, 1]).apart());
        assert!(cpus(None, Some(&[1]), &[0]).apart(), "taskset -c 0");
        assert!(!cpus(None, None, &[0]).apart());
        assert!(!cpus(Some(&[0]), None, &[0, 1]).apart());
    }
}
