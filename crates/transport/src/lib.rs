//! The drivers of `iiop-giop`'s connection state machines: the only
//! protocol crate with I/O, a clock, sockets or TLS. They move bytes and
//! time between sockets and the pure core (`iiop_giop::conn`), which
//! makes every protocol decision. IIOP over tokio TCP, TLS over either,
//! one blocking client and a thread-per-connection server.
//!
//! - [`config`]: a client's settings, the state machine's part and the
//!   drivers' (socket options, TLS, the pool);
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
//! - [`threads`]: the same server with a thread per connection.
//! - [`blocking`]: a [`BlockingConnection`] for one caller that waits for
//!   each reply in `recv` itself (wait-on-read), without a runtime.
//! - [`naming`]: CosNaming `resolve`, for `corbaname:` references.
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
pub mod hosted;
pub mod naming;
pub mod server;
pub mod threads;
pub mod tls;

use std::time::Instant;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt};

/// `read_buf`, calling `on_read` with the start of the poll that read
/// bytes (phase timing: the first poll usually finds nothing and parks;
/// the one after the wake-up reads). Without `on_read`, a plain read.
pub(crate) async fn read_timed<R: AsyncRead + Unpin>(
    rd: &mut R,
    buf: &mut BytesMut,
    limit: usize,
    on_read: Option<&mut (dyn FnMut(Instant) + Send)>,
) -> std::io::Result<usize> {
    let mut buf = bytes::BufMut::limit(buf, limit);
    let Some(on_read) = on_read else {
        return rd.read_buf(&mut buf).await;
    };
    let mut read = std::pin::pin!(rd.read_buf(&mut buf));
    std::future::poll_fn(|cx| {
        let t0 = Instant::now();
        let r = std::future::Future::poll(read.as_mut(), cx);
        if matches!(r, std::task::Poll::Ready(Ok(n)) if n > 0) {
            on_read(t0);
        }
        r
    })
    .await
}

pub use blocking::BlockingConnection;
pub use client::{Client, ClientConfig, ClientError, Connection, PhaseTotals, Prepared, TlsMode};
pub use naming::{resolve_name, resolve_target};
pub use server::{
    serve, serve_tls, AsyncReply, Dispatch, Handler, LocateOutcome, Outcome, RequestContext,
    ServerConfig, ServerPhases,
};
