//! The drivers of `iiop-giop`'s connection state machines: the only
//! protocol crate with I/O, a clock, sockets or TLS. They move bytes and
//! time between sockets and the pure core (`iiop_giop::conn`), which
//! makes every protocol decision. IIOP over tokio TCP, TLS over either,
//! one blocking client and a thread-per-connection server.
//!
//! - [`config`]: a client's settings, the state machine's part and the
//!   drivers' (socket options, TLS, the pool);
//! - [`connection`]: a [`Connection`] is a cloneable handle to a driver
//!   (one reader task, one writer task) that owns the socket; requests
//!   are matched to replies by request id, one oneshot per twoway
//!   request.
//! - [`blocking`]: a [`BlockingConnection`] for one caller that waits for
//!   each reply in `recv` itself (wait-on-read), without a runtime.
//! - [`link`]: either connection ([`link::Link`]), and the one loop that
//!   drives a call over the routing core (`iiop_giop::conn::route`):
//!   forwards, retries, probes, locates, each as the core says.
//! - [`client`]: [`Client`], calls by reference over a pool of
//!   connections per endpoint.
//! - [`stub`]: [`Stub`], one object's calls on a connection of its own
//!   (either driver), remembering where forwards led: what the bench
//!   client's typed operations run on.
//! - [`server`]: [`serve`] runs an accept loop with one task per
//!   connection dispatching to a [`Handler`]: a synchronous fast path that
//!   writes the reply body straight into the connection's output buffer,
//!   with an asynchronous escape hatch for handlers that must wait.
//! - [`threads`]: the same server with a thread per connection.
//! - [`naming`]: CosNaming `resolve`, for `corbaname:` references.
//! - [`socket`]: socket options and the spinning `recv`/`send` every
//!   driver shares (a leaf: it knows no GIOP).
//! - [`tls`]: rustls settings from PEM files, handshake failures in one
//!   line. Every driver runs over plain TCP or TLS over TCP, as
//!   `iiop_giop::conn::endpoint` decides.
//!
//! A call through the client, from a textual reference:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use iiop_transport::{resolve_target, Client, ClientConfig};
//! use iiop_giop::Target;
//!
//! let client = Client::new(ClientConfig::default());
//! let target: Target = "corbaloc:iiop:1.2@127.0.0.1:2809/Bench".parse()?;
//! let ior = resolve_target(&client, &target).await?;
//! let body = client.call(&ior, "echo_long", |w| { w.write_i32(42); Ok(()) }).await?;
//! assert_eq!(body.reader(iiop_cdr::Options::default()).read_i32()?, 42);
//! # Ok(()) }
//! ```

#[macro_use]
mod api;
pub mod affinity;
pub mod blocking;
pub mod client;
pub mod config;
pub mod connection;
pub mod hosted;
pub mod link;
pub mod naming;
pub mod server;
pub mod socket;
pub mod stub;
pub mod threads;
pub mod tls;

pub use blocking::BlockingConnection;
pub use client::{Client, ClientConfig, ClientError, Connection, PhaseTotals, Prepared, TlsMode};
pub use naming::{resolve_name, resolve_target};
pub use server::{
    serve, serve_tls, AsyncReply, Dispatch, Handler, LocateOutcome, Outcome, RequestContext,
    ServerConfig, ServerPhases,
};
pub use stub::{Stub, Wait};
