//! A GIOP-aware proxy between any client and any server (`iiopbench
//! proxy`, `iiopbench interop --via-proxy`): it listens, connects each
//! client to the server it fronts, points the object references it passes
//! back at itself (so the client keeps coming back through it), and
//! injects faults on the way: re-fragmenting, dribbling bytes, delaying
//! or reordering replies, stripping the CodeSets context, CloseConnection
//! or MessageError after N messages, a duplicated or corrupted message;
//! and it records everything it passes. docs/proxy.md is the user's
//! side of it.
//!
//! - [`fault`]: the faults, a typed value parsed from one line;
//! - [`rewrite`]: what the proxy changes inside a message (pure);
//! - [`relay`]: one connection as a pure state machine (bytes and `now`
//!   in, writes and the next deadline out);
//! - [`record`]: the recording, both legs of every connection as TCP in
//!   pcapng;
//! - [`driver`]: sockets and tasks around the relays ([`Proxy`]).

pub mod driver;
pub mod fault;
pub mod record;
pub mod relay;
pub mod rewrite;

pub use driver::{reference_ops_of_idl, Proxy, ProxyConfig, ProxyError};
pub use fault::{FaultSpecError, Faults};
pub use relay::RelayStats;
