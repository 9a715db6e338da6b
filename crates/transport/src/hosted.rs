//! A server on a tokio runtime and threads of its own (optionally
//! pinned), so that a server embedded in a benchmark process shares
//! nothing with the measuring client but the kernel: the reactor (a task
//! per connection) or a thread per connection, over TCP or TLS.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::oneshot;

use crate::server::{serve, serve_tls, Handler, ServerConfig};
use crate::threads::{serve_threads, Polling, StopFlag, ThreadsConfig};
use crate::tls::RustlsServerConfig;

/// Thread-name prefix of a hosted server's threads (as /proc shows it:
/// names are cut to 15 bytes), by which their CPU time is told apart
/// from the client's in the same process.
pub const SERVER_THREAD_PREFIX: &str = "iiopbench-serv";

/// How the server waits for requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServerModel {
    /// One tokio task per connection on the runtime's threads: many
    /// connections on few threads.
    #[default]
    Reactor,
    /// One thread per connection, blocking in `recv` (omniORB's default
    /// model): no event loop between a request and its handler.
    Threads,
}

impl ServerModel {
    /// The name users give it (`reactor`, `threads`).
    pub fn name(self) -> &'static str {
        match self {
            ServerModel::Reactor => "reactor",
            ServerModel::Threads => "threads",
        }
    }

    /// Whether its connections may poll for the next request after each
    /// reply (`flag`, the option that asks, names it in the refusal): a
    /// thread per connection may; the reactor's threads serve many
    /// connections each and must not poll one of them.
    pub fn may_poll(self, flag: &str) -> Result<(), String> {
        match self {
            ServerModel::Threads => Ok(()),
            ServerModel::Reactor => Err(format!(
                "{flag} needs --server-model threads: the reactor's threads \
                 serve many connections each and must not poll one of them"
            )),
        }
    }
}

/// How a [`ServerThread`] serves its connections.
#[derive(Debug, Clone, Default)]
pub struct Serving {
    /// Task per connection, or thread per connection.
    pub model: ServerModel,
    /// when a connection's thread polls for its next bytes before it blocks (thread per connection only).
    pub polling: Polling,
    /// TLS only, with this configuration.
    pub tls: Option<Arc<RustlsServerConfig>>,
}

/// A TLS server's settings.
#[derive(Debug, Clone)]
pub struct TlsServer {
    /// Certificate, key, client verification
    /// ([`server_config`](iiop_transport::tls::server_config)).
    pub config: Arc<RustlsServerConfig>,
    /// Whether clients must present a certificate (the IORs then require
    /// EstablishTrustInClient).
    pub client_certificates: bool,
}

/// A GIOP server on a tokio runtime and threads of its own (optionally
/// pinned), bound before `spawn` returns; stopped gracefully — in-flight
/// requests finish — by [`ServerThread::stop`] or on drop. Our reference
/// server and the IDL-driven server both run on it.
#[derive(Debug)]
pub struct ServerThread {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<std::io::Result<()>>>,
}

impl ServerThread {
    /// Bind `listen` and serve `handler` on `threads` runtime threads
    /// (named [`SERVER_THREAD_PREFIX`] so their CPU is attributed to the
    /// server), each pinned to `cpus` when given.
    pub fn spawn<H: Handler>(
        handler: Arc<H>,
        listen: &str,
        threads: usize,
        cpus: Option<Vec<usize>>,
        config: ServerConfig,
    ) -> std::io::Result<ServerThread> {
        Self::spawn_model(handler, listen, threads, cpus, config, Serving::default())
    }

    /// [`spawn`](Self::spawn) served as `how` says. With
    /// [`ServerModel::Threads`] each connection gets a thread of its own
    /// (named and pinned like the runtime's), and `threads` runtime
    /// threads run the handler's asynchronous calls. With `tls` it serves
    /// TLS only.
    pub fn spawn_model<H: Handler>(
        handler: Arc<H>,
        listen: &str,
        threads: usize,
        cpus: Option<Vec<usize>>,
        config: ServerConfig,
        how: Serving,
    ) -> std::io::Result<ServerThread> {
        let Serving {
            model,
            polling,
            tls,
        } = how;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<std::io::Result<SocketAddr>>();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let listen = listen.to_string();
        let thread = std::thread::Builder::new()
            .name(SERVER_THREAD_PREFIX.into())
            .spawn(move || -> std::io::Result<()> {
                if let Some(c) = &cpus {
                    crate::affinity::pin_current_thread(c)?;
                }
                // Thread per connection: the runtime runs only the
                // asynchronous calls, on worker threads of its own.
                let mut b = if threads <= 1 && model == ServerModel::Reactor {
                    tokio::runtime::Builder::new_current_thread()
                } else {
                    let mut b = tokio::runtime::Builder::new_multi_thread();
                    b.worker_threads(threads.max(1));
                    b
                };
                let pin = Arc::new(move || {
                    if let Some(c) = &cpus {
                        let _ = crate::affinity::pin_current_thread(c);
                    }
                });
                let on_start = pin.clone();
                let rt = b
                    .enable_all()
                    .thread_name(SERVER_THREAD_PREFIX)
                    .on_thread_start(move || on_start())
                    .build()?;
                if model == ServerModel::Threads {
                    let listener = match std::net::TcpListener::bind(&listen) {
                        Ok(l) => l,
                        Err(e) => {
                            let msg = format!("cannot listen on {listen}: {e}");
                            let _ = ready_tx.send(Err(std::io::Error::new(e.kind(), msg)));
                            return Ok(());
                        }
                    };
                    let _ = ready_tx.send(listener.local_addr());
                    let stop = Arc::new(StopFlag::new()?);
                    let flag = stop.clone();
                    rt.spawn(async move {
                        let _ = stop_rx.await;
                        flag.stop();
                    });
                    let threads = ThreadsConfig {
                        thread_name: SERVER_THREAD_PREFIX.into(),
                        on_thread_start: pin,
                        runtime: rt.handle().clone(),
                        polling,
                        tls,
                    };
                    return serve_threads(listener, handler, config, threads, stop);
                }
                rt.block_on(async move {
                    let listener = match tokio::net::TcpListener::bind(&listen).await {
                        Ok(l) => l,
                        Err(e) => {
                            let msg = format!("cannot listen on {listen}: {e}");
                            let _ = ready_tx.send(Err(std::io::Error::new(e.kind(), msg)));
                            return Ok(());
                        }
                    };
                    let _ = ready_tx.send(listener.local_addr());
                    let stopped = async {
                        let _ = stop_rx.await;
                    };
                    match tls {
                        Some(t) => serve_tls(listener, handler, config, t, stopped).await,
                        None => serve(listener, handler, config, stopped).await,
                    }
                })
            })?;
        match ready_rx.recv() {
            Ok(Ok(addr)) => Ok(ServerThread {
                addr,
                stop: Some(stop_tx),
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => Err(match thread.join() {
                Ok(Err(e)) => e,
                _ => std::io::Error::other("server thread died while starting"),
            }),
        }
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stop accepting, let in-flight requests finish, join the threads
    /// (idempotent).
    pub fn stop(&mut self) -> std::io::Result<()> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        match self.thread.take().map(JoinHandle::join) {
            None | Some(Ok(Ok(()))) => Ok(()),
            Some(Ok(Err(e))) => Err(e),
            Some(Err(_)) => Err(std::io::Error::other("server thread panicked")),
        }
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}
