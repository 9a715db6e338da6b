//! What this machine's kernel and tools offer the lab: network namespaces,
//! veth, TUN, `tc netem`, `tc tbf`, nftables. Probed for real in a
//! throw-away namespace, so `iiopbench lab check` can say what will run
//! and which mechanism will produce delay.

use serde::Serialize;

use crate::error::Result;
use crate::netns::{self, NAME_PREFIX};
use crate::relay::open_tun;

/// The outcome of [`probe_features`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Features {
    /// `ip`, `tc`, `nft` and `ping` found on PATH.
    pub ip: bool,
    /// `tc` found.
    pub tc: bool,
    /// `nft` found.
    pub nft: bool,
    /// `ping` found (optional: only for users' own checks).
    pub ping: bool,
    /// A named network namespace could be created.
    pub netns: bool,
    /// A veth pair could be created.
    pub veth: bool,
    /// `/dev/net/tun` gave a TUN device.
    pub tun: bool,
    /// `tc qdisc add … netem` worked (kernel has sch_netem).
    pub netem: bool,
    /// `tc qdisc add … tbf` worked.
    pub tbf: bool,
    /// An nftables table with a `numgen random` rule could be loaded.
    pub nft_numgen: bool,
}

impl Features {
    /// True when a lab can be built (netem is optional: the relay stands in).
    pub fn lab_possible(&self) -> bool {
        self.ip
            && self.tc
            && self.nft
            && self.netns
            && self.veth
            && self.tun
            && self.tbf
            && self.nft_numgen
    }
}

/// Probes every feature in a temporary namespace, removed before returning.
/// Needs root.
pub fn probe_features() -> Result<Features> {
    netns::require_root()?;
    let mut f = Features {
        ip: netns::have_program("ip"),
        tc: netns::have_program("tc"),
        nft: netns::have_program("nft"),
        ping: netns::have_program("ping"),
        netns: false,
        veth: false,
        tun: false,
        netem: false,
        tbf: false,
        nft_numgen: false,
    };
    if !f.ip {
        return Ok(f);
    }
    let name = format!("{NAME_PREFIX}{}-probe", std::process::id());
    let ns = match netns::create(&name) {
        Ok(ns) => ns,
        Err(_) => return Ok(f),
    };
    f.netns = true;
    f.veth = netns::ip(&[
        "-n", &name, "link", "add", "name", "p0", "type", "veth", "peer", "name", "p1",
    ])
    .is_ok();
    if f.tc && f.veth {
        f.netem = netns::run(
            Some(&ns),
            "tc",
            &["qdisc", "add", "dev", "p0", "root", "netem", "delay", "1ms"],
            None,
        )
        .is_ok();
        f.tbf = netns::run(
            Some(&ns),
            "tc",
            &[
                "qdisc", "add", "dev", "p1", "root", "tbf", "rate", "1mbit", "burst", "3028",
                "limit", "30000",
            ],
            None,
        )
        .is_ok();
    }
    if f.nft {
        f.nft_numgen = netns::run(
            Some(&ns),
            "nft",
            &["-f", "-"],
            Some(&crate::shaping::nft_script(0.5, 0.0)),
        )
        .is_ok();
    }
    f.tun = open_tun(&ns, "probe0").is_ok();
    drop(ns);
    netns::destroy(&name)?;
    Ok(f)
}
