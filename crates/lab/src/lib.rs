//! iiop-lab: a network lab on one Linux machine. Hosts are network
//! namespaces joined by veth links through a middle namespace per link,
//! where each direction is impaired (delay and jitter, random loss, a rate
//! cap, the MTU) with the kernel's tools (`tc netem`, `tc tbf`, nftables)
//! or, where the kernel has no netem, this crate's TUN delay relay. Real
//! kernel TCP runs end to end. The lab measures itself ([`Lab::measure`])
//! so its figures can be checked against the configuration, and removes
//! everything it made when dropped, on a signal
//! ([`install_cleanup_handler`]) or later ([`cleanup_leftovers`]).
//!
//! Modules:
//! * `spec` — what to build ([`LabSpec`], [`LinkSpec`], [`Impairment`]).
//! * `lab` — the running lab ([`Lab`]): create, run processes, closures and
//!   sockets in hosts, change impairments, tear down.
//! * `shaping` — the tc/nft configuration text, pure and unit-tested.
//! * `relay` — the TUN delay relay threads.
//! * `probe` — UDP echo round trips between two hosts (creation and
//!   self-measurement share them).
//! * `measure` — self-measurement probes and [`LinkReport`].
//! * `netns` — namespace plumbing, process cleanup, leftovers.
//! * `signal` — cleanup on SIGINT/SIGTERM/SIGHUP.
//! * `features` — what the kernel offers ([`probe_features`]).
//! * `error` — [`LabError`].
//!
//! ```no_run
//! use iiop_lab::{Impairment, Lab, LabSpec, MeasureOptions, T1_BPS};
//! use std::time::Duration;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! iiop_lab::install_cleanup_handler()?; // Ctrl-C removes the lab
//! let imp = Impairment {
//!     delay: Duration::from_millis(150),
//!     jitter: Duration::ZERO,
//!     loss: 0.02,
//!     rate_bps: Some(T1_BPS),
//! };
//! let mut lab = Lab::create(LabSpec::pair("client", "server", imp))?;
//! for r in lab.measure(&MeasureOptions::default())? {
//!     assert!(r.violations().is_empty(), "{:?}", r.violations());
//! }
//! let server = lab.host("server")?.addr();
//! let mut cmd = std::process::Command::new("ping");
//! cmd.args(["-c", "3", &server.to_string()]);
//! let _status = lab.spawn("client", cmd)?.wait()?;
//! let listener = lab.tcp_listener("server", 0)?;
//! let _stream = lab.tcp_connect("client", listener.local_addr()?, Duration::from_secs(5))?;
//! lab.set_link("client", "server", Impairment::NONE)?;
//! lab.destroy()?;
//! # Ok(())
//! # }
//! ```

pub mod error;
pub mod features;
pub mod lab;
pub mod measure;
pub mod netns;
pub mod probe;
pub mod relay;
pub mod shaping;
pub mod signal;
pub mod spec;

pub use error::{LabError, Result};
pub use features::{probe_features, Features};
pub use lab::{Direction, Host, Lab};
pub use measure::{DirectionReport, LinkReport, MeasureOptions};
pub use netns::{cleanup_leftovers, NAME_PREFIX};
pub use relay::RelayCounters;
pub use shaping::{Mechanism, Mechanisms};
pub use signal::{install_cleanup_handler, remove_all_labs};
pub use spec::{DelayMechanism, Impairment, LabSpec, LinkSpec, T1_BPS};
