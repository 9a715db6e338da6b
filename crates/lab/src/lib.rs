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
//! * `measure` — self-measurement probes and [`LinkReport`].
//! * `netns` — namespace plumbing, process cleanup, leftovers.
//! * `signal` — cleanup on SIGINT/SIGTERM/SIGHUP.
//! * `features` — what the kernel offers ([`probe_features`]).
//! * `error` — [`LabError`].

pub mod error;
pub mod features;
pub mod lab;
pub mod measure;
pub mod netns;
pub mod relay;
pub mod shaping;
pub mod signal;
pub mod spec;

pub use error::{LabError, Result};
pub use features::{probe_features, Features};
pub use lab::{Direction, Host, Lab};
pub use measure::{DirectionReport, LinkReport, MeasureOptions};
pub use netns::{cleanup_leftovers, NAME_PREFIX};
pub use shaping::{Mechanism, Mechanisms};
pub use signal::install_cleanup_handler;
pub use spec::{DelayMechanism, Impairment, LabSpec, LinkSpec, T1_BPS};
