//! The drivers: the only modules with I/O or a clock. They move bytes and
//! time between sockets and the pure connection core ([`crate::conn`]),
//! which makes every protocol decision. IIOP over tokio TCP, and one
//! blocking client.
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
//! - [`blocking`]: a [`BlockingConnection`] for one caller that waits for
//!   each reply in `recv` itself (wait-on-read), without a runtime.
//! - [`naming`]: CosNaming `resolve`, for `corbaname:` references.
//! - [`tls`]: rustls settings from PEM files, handshake failures in one
//!   line. Every driver runs over plain TCP or TLS over TCP, as
//!   [`crate::conn::endpoint`] decides.
//!
//! Everything protocol-shaped is delegated to the pure layers
//! ([`crate::conn`], [`crate::message`], [`crate::codec`]).

#[macro_use]
mod api;
pub mod blocking;
pub mod client;
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
