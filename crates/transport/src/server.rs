//! The IIOP server: [`serve`] accepts connections (at most
//! `max_connections`), runs one task per connection, and dispatches each
//! Request to a [`Handler`].
//!
//! The fast path is synchronous: the connection task writes the Reply
//! header into its output buffer, the handler writes the body right after
//! it through a [`Writer`](iiop_cdr::Writer), and all replies produced
//! from one read are written with one call. A handler that must wait (sleep, I/O) returns
//! [`Dispatch::Async`] with a future; up to `max_in_flight` of those run
//! concurrently per connection, and their replies are written as they
//! finish.
//!
//! SYNC_WITH_SERVER requests are answered like twoways, after the handler
//! ran (with whatever body it wrote, empty for a oneway operation).
//! Malformed input gets a MessageError and the connection is closed.
//!
//! This module is the driver: sockets, tasks, time. The connection's
//! protocol decisions (framing and limits, dispatch, MessageError, the
//! timeouts, CloseConnection) are the pure [`ServerConn`]'s.
//!
//! Limits (all in [`ServerConfig`]): connections at once, asynchronous
//! requests in flight per connection (reading pauses at the limit), the
//! declared size of one message and of fragments being reassembled
//! (checked on the 12-byte header, before any body byte is buffered; room
//! is never reserved for a declared size — the buffer grows only as bytes
//! arrive, so announcing a large message costs nothing), the idle timeout
//! (no message, nothing in flight: CloseConnection) and the read timeout
//! (a message that has started must be complete within it, else the
//! connection is closed without a word: the defence against slow clients).
//! Shutdown (the future given to [`serve`]) stops accepting and reading,
//! lets in-flight requests finish, then sends CloseConnection.
//!
//! [`serve_tls`] is the same server over TLS: each accepted connection's
//! task first runs the handshake, within
//! [`ServerConfig::handshake_timeout`] (a client that stops mid-handshake
//! loses its slot then), then serves GIOP over the TLS stream exactly as
//! over TCP — the same limits, the same answers to malformed input.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch, Semaphore};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

pub use crate::config::ServerConfig;
pub use iiop_giop::conn::server::{
    arguments_end_body, handle_builtin, AsyncReply, CallBack, ConnectionSummary, Dispatch, Handler,
    LocateOutcome, NoCallBack, Outcome, RequestContext, ServerConnConfig, ServerPhases,
};
use iiop_giop::conn::server::{AsyncCall, AsyncTicket, Ending, ServerConn};

/// Accept connections on `listener` and serve them with `handler` until
/// `shutdown` completes; then stop accepting, let every connection finish
/// its in-flight requests and close, and return.
pub async fn serve<H: Handler>(
    listener: TcpListener,
    handler: Arc<H>,
    cfg: ServerConfig,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    serve_with(listener, handler, cfg, None, shutdown).await
}

/// [`serve`] over TLS with these settings
/// ([`server_config`](super::tls::server_config)).
pub async fn serve_tls<H: Handler>(
    listener: TcpListener,
    handler: Arc<H>,
    cfg: ServerConfig,
    tls: Arc<rustls::ServerConfig>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    serve_with(
        listener,
        handler,
        cfg,
        Some(TlsAcceptor::from(tls)),
        shutdown,
    )
    .await
}

async fn serve_with<H: Handler>(
    listener: TcpListener,
    handler: Arc<H>,
    cfg: ServerConfig,
    tls: Option<TlsAcceptor>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let conn_cfg = Arc::new(cfg.conn());
    set_buffers(socket2::SockRef::from(&listener), &cfg)?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let slots = Arc::new(Semaphore::new(cfg.max_connections.max(1)));
    let mut tasks = JoinSet::new();
    let mut next_conn = 0u64;
    tokio::pin!(shutdown);
    loop {
        while tasks.try_join_next().is_some() {}
        let permit = tokio::select! {
            _ = &mut shutdown => break,
            p = slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let (stream, peer) = tokio::select! {
            _ = &mut shutdown => break,
            r = listener.accept() => match r {
                Ok((s, peer)) => {
                    next_conn += 1;
                    (s, peer)
                }
                Err(_) => {
                    // EMFILE and friends: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(cfg.nodelay);
        let _ = set_buffers(socket2::SockRef::from(&stream), &cfg);
        let (h, c, rx) = (handler.clone(), conn_cfg.clone(), stop_rx.clone());
        let conn = ConnTask::new(h, c, cfg.handshake_timeout, next_conn, Some(peer));
        // The handshake runs in the connection's own task, never in this
        // accept loop: a slow or stalled client delays no other accept.
        match tls.clone() {
            None => tasks.spawn(async move {
                conn.run(stream, rx).await;
                drop(permit);
            }),
            Some(acceptor) => tasks.spawn(async move {
                let limit = conn.handshake_timeout;
                match tokio::time::timeout(limit, acceptor.accept(stream)).await {
                    Ok(Ok(stream)) => conn.run(stream, rx).await,
                    // A failed or stalled handshake: the connection is
                    // dropped (closed), the handler hears of it as of any
                    // other, and its slot is freed.
                    _ => conn.closed(),
                }
                drop(permit);
            }),
        };
    }
    let _ = stop_tx.send(true);
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// Apply [`ServerConfig::send_buffer`] and [`ServerConfig::recv_buffer`].
pub(super) fn set_buffers(s: socket2::SockRef<'_>, cfg: &ServerConfig) -> std::io::Result<()> {
    if let Some(n) = cfg.send_buffer {
        s.set_send_buffer_size(n as usize)?;
    }
    if let Some(n) = cfg.recv_buffer {
        s.set_recv_buffer_size(n as usize)?;
    }
    Ok(())
}

/// One connection's task: moves bytes, asynchronous replies and time
/// between the socket and the connection's [`ServerConn`].
struct ConnTask<H> {
    handler: Arc<H>,
    conn: ServerConn,
    done_tx: mpsc::UnboundedSender<(AsyncTicket, AsyncReply)>,
    done_rx: mpsc::UnboundedReceiver<(AsyncTicket, AsyncReply)>,
    /// Phase totals, when timed (the driver times reads and writes).
    phases: Option<Arc<ServerPhases>>,
    opened: Instant,
    /// [`ServerConfig::handshake_timeout`].
    handshake_timeout: Duration,
}

impl<H: Handler> ConnTask<H> {
    fn new(
        handler: Arc<H>,
        cfg: Arc<ServerConnConfig>,
        handshake_timeout: Duration,
        id: u64,
        peer: Option<std::net::SocketAddr>,
    ) -> Self {
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        ConnTask {
            handler,
            handshake_timeout,
            phases: cfg.phases.clone(),
            conn: ServerConn::new(cfg, id, peer, Some(Instant::now)),
            done_tx,
            done_rx,
            opened: Instant::now(),
        }
    }

    async fn run<S: AsyncRead + AsyncWrite + Unpin>(
        mut self,
        stream: S,
        stop: watch::Receiver<bool>,
    ) {
        let phases = self.phases.clone();
        self.serve_connection(stream, stop, phases.as_deref()).await;
        self.closed();
    }

    /// Tell the handler the connection is over.
    fn closed(&self) {
        let mut summary = self.conn.summary().clone();
        summary.seconds = self.opened.elapsed().as_secs_f64();
        self.handler.connection_closed(&summary);
    }

    async fn serve_connection<S: AsyncRead + AsyncWrite + Unpin>(
        &mut self,
        mut stream: S,
        mut stop: watch::Receiver<bool>,
        phases: Option<&ServerPhases>,
    ) {
        if *stop.borrow_and_update() {
            self.conn.shutdown();
        }
        // One future for the connection's life (a new `changed()` per
        // message would register a waiter per request).
        let stopping = async move {
            while !*stop.borrow_and_update() {
                if stop.changed().await.is_err() {
                    break;
                }
            }
        };
        tokio::pin!(stopping);
        loop {
            // Handle what is buffered (also after async replies freed room).
            let (handler, tx) = (&*self.handler, &self.done_tx);
            self.conn.process(handler, &mut |call: AsyncCall| {
                spawn_async(call, tx.clone())
            });
            if !self.conn.output().is_empty() {
                let t = phases.map(|_| Instant::now());
                // (A TCP stream's flush does nothing; a TLS stream's sends
                // the records.)
                if stream.write_all(self.conn.output()).await.is_err()
                    || stream.flush().await.is_err()
                {
                    return;
                }
                if let (Some(p), Some(t)) = (phases, t) {
                    ServerPhases::add(&p.write_ns, t, Instant::now());
                }
                self.conn.sent();
            }
            if self.conn.is_done() {
                break;
            }
            let deadline = self
                .conn
                .next_deadline(Instant::now)
                .map(tokio::time::Instant::from_std);
            let can_read = self.conn.can_read();
            let limit = self.conn.read_limit();
            let closing = self.conn.is_closing();
            // Replies come back on the channel only for calls in flight:
            // without any, polling it would register a waker per message.
            let awaiting = self.conn.in_flight() > 0;
            let mut on_read =
                phases.map(|p| move |t0| ServerPhases::add(&p.read_ns, t0, Instant::now()));
            let on_read = on_read
                .as_mut()
                .map(|f| f as &mut (dyn FnMut(Instant) + Send));
            let conn = &mut self.conn;
            tokio::select! {
                // Fixed order, cheapest and most urgent first (and no
                // random number per message).
                biased;
                _ = &mut stopping, if !closing => conn.shutdown(),
                Some((ticket, reply)) = self.done_rx.recv(), if awaiting => {
                    conn.finish_async(ticket, reply);
                    while let Ok((ticket, reply)) = self.done_rx.try_recv() {
                        conn.finish_async(ticket, reply);
                    }
                }
                r = crate::socket::read_timed(&mut stream, conn.read_buf(), limit, on_read), if can_read => match r {
                    Ok(0) | Err(_) => conn.on_eof(),
                    Ok(n) => conn.received(n),
                },
                _ = sleep_until_opt(deadline), if deadline.is_some() => {
                    conn.on_timeout(Instant::now());
                }
            }
        }
        match self.conn.ending() {
            Ending::Abort => {
                let _ = stream.shutdown().await;
            }
            Ending::Close(last) => {
                let _ = stream.write_all(&last).await;
                let _ = stream.flush().await;
                let _ = stream.shutdown().await;
            }
            Ending::Quiet => {}
        }
    }
}

/// Run an asynchronous handler call on the runtime; its reply (INTERNAL
/// if it panicked) goes back to the connection's task.
fn spawn_async(call: AsyncCall, tx: mpsc::UnboundedSender<(AsyncTicket, AsyncReply)>) {
    let AsyncCall { ticket, future } = call;
    let task = tokio::spawn(future);
    tokio::spawn(async move {
        let reply = task.await.unwrap_or_else(|_| AsyncReply::handler_failed());
        let _ = tx.send((ticket, reply));
    });
}

async fn sleep_until_opt(t: Option<tokio::time::Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_buffers_reach_accepted_connections() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let default = socket2::SockRef::from(&l).recv_buffer_size().unwrap();
        let want = 3 * default;
        let cfg = ServerConfig {
            send_buffer: Some(want as u32),
            recv_buffer: Some(want as u32),
            ..ServerConfig::default()
        };
        set_buffers(socket2::SockRef::from(&l), &cfg).unwrap();
        let _c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (a, _) = l.accept().unwrap();
        let a = socket2::SockRef::from(&a);
        // Linux doubles what it is given (bookkeeping); capped by rmem_max.
        let cap = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(usize::MAX);
        assert!(
            a.recv_buffer_size().unwrap() >= want.min(cap),
            "inherited from the listener"
        );
        assert_ne!(a.recv_buffer_size().unwrap(), default);
    }
}
