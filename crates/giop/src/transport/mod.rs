//! The only module with I/O: IIOP over tokio TCP.
//!
//! - [`client`]: a [`Connection`] is a cloneable handle to a driver (one
//!   reader task, one writer task) that owns the socket; requests are
//!   matched to replies by request id, one oneshot per twoway request.
//!   [`Client`] adds a pool of connections per endpoint, code set
//!   negotiation from the IOR, and LOCATION_FORWARD / OBJECT_FORWARD
//!   following.
//! - [`server`]: [`serve`] runs an accept loop with one task per
//!   connection dispatching to a [`Handler`]: a synchronous fast path that
//!   writes the reply body straight into the connection's output buffer,
//!   with an asynchronous escape hatch for handlers that must wait.
//! - [`naming`]: CosNaming `resolve`, for `corbaname:` references.
//!
//! Everything protocol-shaped is delegated to the pure layer
//! ([`crate::message`], [`crate::codec`]).

pub mod client;
pub mod naming;
pub mod server;

pub use client::{Client, ClientConfig, ClientError, Connection, PhaseTotals, Prepared};
pub use naming::{resolve_name, resolve_target};
pub use server::{
    serve, AsyncReply, Dispatch, Handler, LocateOutcome, Outcome, RequestContext, ServerConfig,
    ServerPhases,
};
