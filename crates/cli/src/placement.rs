//! Resolving `--pin`, `--client-cpus` and `--server-cpus` into CPU lists,
//! pinning the client, and recording where everything ran.

use crate::opts::{Pin, PlacementOpts};
use crate::results::Placement;
use crate::sysinfo::{current_affinity, parse_cpu_list, pin_current_thread};

/// Resolved CPU lists; `None` means "not pinned".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cpus {
    pub client: Option<Vec<usize>>,
    pub server: Option<Vec<usize>>,
    /// Every CPU the process could use before anything was pinned.
    pub all: Vec<usize>,
}

impl Cpus {
    /// From the options, checking the CPUs exist on this machine.
    pub fn resolve(o: &PlacementOpts) -> anyhow::Result<Cpus> {
        let (mut client, mut server) = match o.pin {
            Pin::None => (None, None),
            Pin::Same => (Some(vec![0]), Some(vec![0])),
            Pin::Cross => (Some(vec![0]), Some(vec![1])),
        };
        if let Some(c) = &o.client_cpus {
            client = Some(parse_cpu_list(c)?);
        }
        if let Some(s) = &o.server_cpus {
            server = Some(parse_cpu_list(s)?);
        }
        let avail = current_affinity();
        for cpu in client.iter().flatten() {
            anyhow::ensure!(
                avail.contains(cpu),
                "CPU {cpu} is not available to this process (available: {})",
                crate::sysinfo::format_cpu_list(&avail)
            );
        }
        // The server's may lie outside this process's own affinity (e.g.
        // under `taskset -c 0`, an external server on CPU 1): they only
        // have to exist.
        let online = crate::sysinfo::online_cpus().unwrap_or_else(|| avail.clone());
        for cpu in server.iter().flatten() {
            anyhow::ensure!(
                online.contains(cpu) || avail.contains(cpu),
                "CPU {cpu} is not online on this machine (online: {})",
                crate::sysinfo::format_cpu_list(&online)
            );
        }
        Ok(Cpus {
            client,
            server,
            all: avail,
        })
    }

    /// The CPUs an embedded server should run on: as pinned, or all of
    /// them (not the client's, which it would otherwise inherit).
    pub fn server_or_all(&self) -> Vec<usize> {
        self.server.clone().unwrap_or_else(|| self.all.clone())
    }

    /// Pin the calling (client) thread; call before creating client threads.
    pub fn pin_client(&self) -> anyhow::Result<()> {
        if let Some(c) = &self.client {
            pin_current_thread(c)?;
        }
        Ok(())
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
        Placement::new(client, server)
    }
}
