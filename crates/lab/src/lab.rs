//! A running lab: builds the namespaces, veth pairs, routes and
//! impairments of a [`LabSpec`], runs processes, closures and sockets inside
//! its hosts, changes impairments at run time, and removes everything when
//! dropped.
//!
//! Topology of one link `a`–`b` (k is the link's index):
//!
//! ```text
//!  host a                 middle ns "<id>-l<k>"                host b
//!  lo 10.201.0.A/32      sa 10.210.k.2  sb 10.211.k.2         lo 10.201.0.B/32
//!  l<k> 10.210.k.1 ─veth─ sa ─► [nft loss] ─► tab (TUN, relay) ─► sb ─veth─ l<k> 10.211.k.1
//!                          ◄── tba (TUN, relay) ◄─ [nft loss] ◄──┘
//!                  egress of sb: tbf (rate a→b); egress of sa: tbf (rate b→a)
//! ```
//!
//! Each host's address is a /32 on its loopback; a host reaches each linked
//! host's address through that link's middle namespace. Nothing connects to
//! the root namespace, so no packet can leave the lab.

use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde::Serialize;

use crate::error::{LabError, Result};
use crate::netns::{self, NAME_PREFIX};
use crate::relay::{open_tun, Relay, RelayCounters};
use crate::shaping::{self, Mechanisms};
use crate::spec::{DelayMechanism, Impairment, LabSpec, LinkSpec};

/// Labs created by this process so far (part of each lab's unique id).
static SEQ: AtomicU32 = AtomicU32::new(0);

/// Echo probes per link for the baseline RTT measured at creation.
const BASE_PROBES: u32 = 10;

/// Host address of host number `i` (0-based).
pub fn host_addr(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 201, (i / 250) as u8, (i % 250 + 1) as u8)
}

/// Direction of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Direction {
    /// From the link's `a` to its `b`.
    AToB,
    /// From the link's `b` to its `a`.
    BToA,
}

/// One host of a running lab.
#[derive(Debug)]
pub struct Host {
    name: String,
    ns_name: String,
    ns: File,
    addr: Ipv4Addr,
}

impl Host {
    /// The host's name from the spec.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The namespace name (`iiopb-<pid>-<n>-h-<host>`), e.g. for
    /// `ip netns exec`.
    pub fn netns(&self) -> &str {
        &self.ns_name
    }

    /// The host's address, reachable from every host linked to it.
    pub fn addr(&self) -> Ipv4Addr {
        self.addr
    }
}

#[derive(Debug)]
struct Link {
    spec: LinkSpec,
    ia: usize,
    ib: usize,
    ns_name: String,
    ns: File,
    netem: bool,
    /// Relays a→b and b→a (relay mode only).
    relays: Option<[Relay; 2]>,
    /// Median echo RTT measured before any impairment was applied.
    base_rtt: Duration,
}

/// A running lab. Drop removes everything it created: relay threads,
/// processes left in its namespaces, the namespaces (and with them every
/// veth, TUN device, route, qdisc and nftables rule).
#[derive(Debug)]
pub struct Lab {
    id: String,
    hosts: Vec<Host>,
    links: Vec<Link>,
    /// Every namespace created, in creation order.
    created: Vec<String>,
}

fn netem_available(ns: &File) -> bool {
    let ok = netns::run(
        Some(ns),
        "tc",
        &["qdisc", "add", "dev", "sa", "root", "netem", "delay", "0ms"],
        None,
    )
    .is_ok();
    if ok {
        let _ = netns::run(Some(ns), "tc", &["qdisc", "del", "dev", "sa", "root"], None);
    }
    ok
}

impl Lab {
    /// Builds the lab. Needs root and `ip`, `tc`, `nft`. On error, whatever
    /// was already created is removed before returning.
    pub fn create(spec: LabSpec) -> Result<Lab> {
        spec.validate()?;
        netns::require_root()?;
        netns::require_programs(&["ip", "tc", "nft"])?;
        let id = format!(
            "{NAME_PREFIX}{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let mut lab = Lab {
            id,
            hosts: Vec::new(),
            links: Vec::new(),
            created: Vec::new(),
        };
        // On any error below, `lab` is dropped and removes what exists.
        for (i, name) in spec.hosts.iter().enumerate() {
            lab.add_host(i, name)?;
        }
        for (k, l) in spec.links.iter().enumerate() {
            lab.add_link(k, l, spec.delay_mechanism)?;
        }
        // Baseline RTT of each bare link, then the configured impairments.
        for (k, l) in spec.links.iter().enumerate() {
            let udp_in = |host: &str| -> Result<std::net::UdpSocket> {
                let addr = lab.host(host)?.addr();
                lab.run_in(host, move || std::net::UdpSocket::bind((addr, 0)))?
                    .map_err(|e| LabError::io("binding probe socket".to_string(), e))
            };
            let samples = crate::probe::rtt_samples(
                udp_in(&l.a)?,
                udp_in(&l.b)?,
                BASE_PROBES,
                Duration::from_secs(1),
            )?;
            if samples.is_empty() {
                return Err(LabError::Probe {
                    probe: "rtt",
                    link: format!("{}<->{}", l.a, l.b),
                    detail: "the bare link answered no echo".into(),
                });
            }
            lab.links[k].base_rtt = crate::probe::median(&samples);
            lab.links[k].spec = l.clone();
            lab.apply(k, Direction::AToB)?;
            lab.apply(k, Direction::BToA)?;
        }
        Ok(lab)
    }

    fn new_ns(&mut self, name: String) -> Result<File> {
        let f = netns::create(&name)?;
        self.created.push(name);
        let ns = &f;
        for key in [
            "net/ipv6/conf/all/disable_ipv6",
            "net/ipv6/conf/default/disable_ipv6",
        ] {
            netns::sysctl(ns, key, "1")?;
        }
        let name = self.created.last().expect("just pushed").clone();
        netns::ip(&["-n", &name, "link", "set", "lo", "up"])?;
        Ok(f)
    }

    fn add_host(&mut self, i: usize, name: &str) -> Result<()> {
        let ns_name = format!("{}-h-{name}", self.id);
        let ns = self.new_ns(ns_name.clone())?;
        let addr = host_addr(i);
        netns::ip(&[
            "-n",
            &ns_name,
            "addr",
            "add",
            &format!("{addr}/32"),
            "dev",
            "lo",
        ])?;
        self.hosts.push(Host {
            name: name.to_string(),
            ns_name,
            ns,
            addr,
        });
        Ok(())
    }

    fn add_link(&mut self, k: usize, spec: &LinkSpec, mech: DelayMechanism) -> Result<()> {
        let ia = self.index(&spec.a)?;
        let ib = self.index(&spec.b)?;
        let r = format!("{}-l{k}", self.id);
        let ns = self.new_ns(r.clone())?;
        for (key, v) in [
            ("net/ipv4/ip_forward", "1"),
            ("net/ipv4/conf/all/rp_filter", "0"),
            ("net/ipv4/conf/default/rp_filter", "0"),
        ] {
            netns::sysctl(&ns, key, v)?;
        }
        let mtu = spec.mtu.to_string();
        let lname = format!("l{k}");
        let (k8, a_addr, b_addr) = (k as u8, self.hosts[ia].addr, self.hosts[ib].addr);
        for (end, host_idx, third) in [("sa", ia, 210u8), ("sb", ib, 211u8)] {
            let host_ns = self.hosts[host_idx].ns_name.clone();
            netns::ip(&[
                "-n", &r, "link", "add", "name", end, "mtu", &mtu, "type", "veth", "peer", "name",
                &lname, "netns", &host_ns,
            ])?;
            let mid = Ipv4Addr::new(10, third, k8, 2);
            let near = Ipv4Addr::new(10, third, k8, 1);
            netns::ip(&["-n", &r, "addr", "add", &format!("{mid}/24"), "dev", end])?;
            netns::ip(&["-n", &r, "link", "set", "dev", end, "up"])?;
            netns::ip(&[
                "-n",
                &host_ns,
                "addr",
                "add",
                &format!("{near}/24"),
                "dev",
                &lname,
            ])?;
            netns::ip(&[
                "-n", &host_ns, "link", "set", "dev", &lname, "mtu", &mtu, "up",
            ])?;
            let (me, peer) = if end == "sa" {
                (a_addr, b_addr)
            } else {
                (b_addr, a_addr)
            };
            netns::ip(&[
                "-n",
                &host_ns,
                "route",
                "add",
                &format!("{peer}/32"),
                "via",
                &mid.to_string(),
                "dev",
                &lname,
                "src",
                &me.to_string(),
            ])?;
            netns::ip(&[
                "-n",
                &r,
                "route",
                "add",
                &format!("{me}/32"),
                "via",
                &near.to_string(),
                "dev",
                end,
            ])?;
        }
        let netem = match mech {
            DelayMechanism::Netem => true,
            DelayMechanism::Relay => false,
            DelayMechanism::Auto => netem_available(&ns),
        };
        let relays = if netem {
            None
        } else {
            let mut rs = Vec::new();
            for (from, tun, table) in [("sa", "tab", "100"), ("sb", "tba", "101")] {
                let fd = open_tun(&ns, tun)?;
                netns::ip(&["-n", &r, "link", "set", "dev", tun, "mtu", &mtu, "up"])?;
                netns::sysctl(&ns, &format!("net/ipv4/conf/{tun}/rp_filter"), "0")?;
                netns::ip(&[
                    "-n", &r, "route", "add", "default", "dev", tun, "table", table,
                ])?;
                netns::ip(&[
                    "-n", &r, "rule", "add", "iif", from, "lookup", table, "pref", table,
                ])?;
                rs.push(Relay::start(
                    fd,
                    &format!("{k}{from}"),
                    Duration::ZERO,
                    Duration::ZERO,
                )?);
            }
            let b = rs.pop().expect("two relays");
            let a = rs.pop().expect("two relays");
            Some([a, b])
        };
        // Bare first: `create` measures the baseline, then applies `spec`.
        self.links.push(Link {
            spec: LinkSpec {
                a_to_b: Impairment::NONE,
                b_to_a: Impairment::NONE,
                ..spec.clone()
            },
            ia,
            ib,
            ns_name: r,
            ns,
            netem,
            relays,
            base_rtt: Duration::ZERO,
        });
        let idx = self.links.len() - 1;
        self.apply(idx, Direction::AToB)?;
        self.apply(idx, Direction::BToA)?;
        Ok(())
    }

    fn index(&self, host: &str) -> Result<usize> {
        self.hosts
            .iter()
            .position(|h| h.name == host)
            .ok_or_else(|| LabError::UnknownHost(host.to_string()))
    }

    /// (Re)configures the kernel side (qdiscs, nftables) and the relay of one
    /// direction of link `idx` from its spec.
    fn apply(&mut self, idx: usize, dir: Direction) -> Result<()> {
        let link = &self.links[idx];
        let (imp, egress) = match dir {
            Direction::AToB => (link.spec.a_to_b, "sb"),
            Direction::BToA => (link.spec.b_to_a, "sa"),
        };
        let ns = Some(&link.ns);
        // Replace whatever root qdisc is there; "no qdisc" is not an error.
        let _ = netns::run(ns, "tc", &["qdisc", "del", "dev", egress, "root"], None);
        let tbf = imp.rate_bps.map(|r| shaping::tbf_args(r, link.spec.mtu));
        if link.netem {
            let mut tbf_parent = vec!["root".to_string()];
            if let Some(args) = shaping::netem_args(&imp) {
                let mut cmd: Vec<String> = ["qdisc", "add", "dev", egress, "root", "handle", "1:"]
                    .map(String::from)
                    .to_vec();
                cmd.extend(args);
                run_strings(ns, "tc", &cmd)?;
                tbf_parent = vec!["parent".into(), "1:1".into(), "handle".into(), "10:".into()];
            }
            if let Some(args) = tbf {
                let mut cmd: Vec<String> =
                    ["qdisc", "add", "dev", egress].map(String::from).to_vec();
                cmd.extend(tbf_parent);
                cmd.extend(args);
                run_strings(ns, "tc", &cmd)?;
            }
        } else {
            if let Some(args) = tbf {
                let mut cmd: Vec<String> = ["qdisc", "add", "dev", egress, "root"]
                    .map(String::from)
                    .to_vec();
                cmd.extend(args);
                run_strings(ns, "tc", &cmd)?;
            }
            let script = shaping::nft_script(link.spec.a_to_b.loss, link.spec.b_to_a.loss);
            netns::run(ns, "nft", &["-f", "-"], Some(&script))?;
            if let Some(relays) = &link.relays {
                let r = &relays[if dir == Direction::AToB { 0 } else { 1 }];
                r.set(imp.delay, imp.jitter);
            }
        }
        Ok(())
    }

    fn link_index(&self, a: &str, b: &str) -> Result<(usize, Direction)> {
        for (i, l) in self.links.iter().enumerate() {
            if l.spec.a == a && l.spec.b == b {
                return Ok((i, Direction::AToB));
            }
            if l.spec.a == b && l.spec.b == a {
                return Ok((i, Direction::BToA));
            }
        }
        Err(LabError::UnknownLink(a.to_string(), b.to_string()))
    }

    /// Changes the impairment of packets travelling from host `from` to
    /// host `to` while the lab runs (packets already held keep their delay).
    pub fn set_impairment(&mut self, from: &str, to: &str, imp: Impairment) -> Result<()> {
        imp.validate(&format!("{from}->{to}"))?;
        let (idx, dir) = self.link_index(from, to)?;
        match dir {
            Direction::AToB => self.links[idx].spec.a_to_b = imp,
            Direction::BToA => self.links[idx].spec.b_to_a = imp,
        }
        self.apply(idx, dir)
    }

    /// Sets both directions between `a` and `b` to `imp`.
    pub fn set_link(&mut self, a: &str, b: &str, imp: Impairment) -> Result<()> {
        self.set_impairment(a, b, imp)?;
        self.set_impairment(b, a, imp)
    }

    /// The impairment currently configured from `from` to `to`.
    pub fn impairment(&self, from: &str, to: &str) -> Result<Impairment> {
        let (idx, dir) = self.link_index(from, to)?;
        let s = &self.links[idx].spec;
        Ok(match dir {
            Direction::AToB => s.a_to_b,
            Direction::BToA => s.b_to_a,
        })
    }

    /// Which mechanisms impair packets from `from` to `to` right now.
    pub fn mechanisms(&self, from: &str, to: &str) -> Result<Mechanisms> {
        let (idx, _) = self.link_index(from, to)?;
        Ok(Mechanisms::for_impairment(
            &self.impairment(from, to)?,
            self.links[idx].netem,
        ))
    }

    /// Counters of the relay carrying packets from `from` to `to`, or
    /// `None` when delay is made by netem.
    pub fn relay_counters(&self, from: &str, to: &str) -> Result<Option<RelayCounters>> {
        let (idx, dir) = self.link_index(from, to)?;
        Ok(self.links[idx].relays.as_ref().map(|r| {
            r[if dir == Direction::AToB { 0 } else { 1 }]
                .stats()
                .snapshot()
        }))
    }

    /// This lab's unique prefix (`iiopb-<pid>-<n>`); every namespace name
    /// starts with it.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Every namespace of this lab (hosts and link middles).
    pub fn namespaces(&self) -> &[String] {
        &self.created
    }

    /// Host `name`.
    pub fn host(&self, name: &str) -> Result<&Host> {
        self.index(name).map(|i| &self.hosts[i])
    }

    /// All hosts in spec order.
    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }

    /// The links' specs as currently configured, with the names of their
    /// middle namespaces.
    pub fn links(&self) -> Vec<(LinkSpec, &str)> {
        self.links
            .iter()
            .map(|l| (l.spec.clone(), l.ns_name.as_str()))
            .collect()
    }

    /// Makes `cmd` start inside host `host`'s namespace.
    pub fn prepare(&self, host: &str, cmd: &mut Command) -> Result<()> {
        let h = self.host(host)?;
        netns::enter_on_exec(cmd, &h.ns);
        Ok(())
    }

    /// Spawns `cmd` inside host `host`. The caller owns the child; any
    /// process still in the lab's namespaces when the lab drops is killed.
    /// For tokio, prepare a std `Command` with [`Lab::prepare`] and convert
    /// it with `tokio::process::Command::from`.
    pub fn spawn(&self, host: &str, mut cmd: Command) -> Result<Child> {
        self.prepare(host, &mut cmd)?;
        cmd.spawn()
            .map_err(|e| LabError::io(format!("spawning a process in host {host}"), e))
    }

    /// A TCP listener on `host`'s address and `port` (0: any), inside the
    /// host. Use it from any thread, or hand it to tokio with `from_std`
    /// (after `set_nonblocking(true)`).
    pub fn tcp_listener(&self, host: &str, port: u16) -> Result<TcpListener> {
        let addr = self.host(host)?.addr();
        self.run_in(host, move || TcpListener::bind((addr, port)))?
            .map_err(|e| LabError::io(format!("binding {addr}:{port} in host {host}"), e))
    }

    /// A TCP connection from inside host `from` to `to`, made within
    /// `timeout`.
    pub fn tcp_connect(&self, from: &str, to: SocketAddr, timeout: Duration) -> Result<TcpStream> {
        self.run_in(from, move || TcpStream::connect_timeout(&to, timeout))?
            .map_err(|e| LabError::io(format!("connecting from host {from} to {to}"), e))
    }

    /// Runs `f` on a thread inside host `host` and returns its result.
    /// Sockets created by `f` stay in that host for their whole life, so a
    /// caller can make a listener or a connected stream there and use it
    /// from any thread (or hand it to tokio with `from_std`).
    pub fn run_in<T: Send, F: FnOnce() -> T + Send>(&self, host: &str, f: F) -> Result<T> {
        netns::in_netns(&self.host(host)?.ns, f)
    }

    pub(crate) fn link_ends(&self, idx: usize) -> (&Host, &Host, &LinkSpec, bool) {
        let l = &self.links[idx];
        (&self.hosts[l.ia], &self.hosts[l.ib], &l.spec, l.netem)
    }

    pub(crate) fn base_rtt(&self, idx: usize) -> Duration {
        self.links[idx].base_rtt
    }

    pub(crate) fn link_count(&self) -> usize {
        self.links.len()
    }

    /// Removes everything now and reports the first failure (Drop does the
    /// same but can only ignore failures).
    pub fn destroy(mut self) -> Result<()> {
        self.teardown()
    }

    fn teardown(&mut self) -> Result<()> {
        // Stop the relays first: their threads hold TUN devices in the
        // middle namespaces.
        for l in &mut self.links {
            l.relays = None;
        }
        let mut first = Ok(());
        for name in self.created.drain(..).rev() {
            if let Err(e) = netns::destroy(&name) {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

fn run_strings(ns: Option<&File>, program: &str, args: &[String]) -> Result<String> {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    netns::run(ns, program, &refs, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_addresses() {
        assert_eq!(host_addr(0), Ipv4Addr::new(10, 201, 0, 1));
        assert_eq!(host_addr(249), Ipv4Addr::new(10, 201, 0, 250));
        assert_eq!(host_addr(250), Ipv4Addr::new(10, 201, 1, 1));
    }
}
