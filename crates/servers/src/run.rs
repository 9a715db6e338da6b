//! Running our reference server: on a tokio runtime of its own (its own
//! threads, optionally pinned), so that when it is embedded in a benchmark
//! process it shares nothing with the measuring client but the kernel.

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use iiop_giop::transport::server::{serve, ServerConfig};
use tokio::sync::oneshot;

use crate::bench::counters::Stats;
use crate::reference::{BenchHandler, References, Skeleton};

/// How to run the server.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// `host:port` to bind (port 0 picks a free one).
    pub listen: String,
    pub skeleton: Skeleton,
    /// Runtime worker threads (at least 1).
    pub threads: usize,
    /// Pin every server thread to these CPUs.
    pub cpus: Option<Vec<usize>>,
    pub config: ServerConfig,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            listen: "127.0.0.1:0".into(),
            skeleton: Skeleton::Typed,
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            cpus: None,
            config: ServerConfig::default(),
        }
    }
}

/// A server running on its own threads; stopped (gracefully: in-flight
/// requests finish) by [`RunningServer::stop`] or on drop.
#[derive(Debug)]
pub struct RunningServer {
    refs: References,
    handler: Arc<BenchHandler>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<std::io::Result<()>>>,
}

impl RunningServer {
    /// Bind and start serving; returns once the listener is bound.
    pub fn start(opts: ServerOptions) -> std::io::Result<RunningServer> {
        let handler = Arc::new(BenchHandler::new(opts.skeleton));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<std::io::Result<SocketAddr>>();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let h = handler.clone();
        let thread = std::thread::Builder::new()
            .name("iiopbench-server".into())
            .spawn(move || -> std::io::Result<()> {
                let cpus = opts.cpus.clone();
                if let Some(c) = &cpus {
                    crate::affinity::pin_current_thread(c)?;
                }
                let mut b = if opts.threads <= 1 {
                    tokio::runtime::Builder::new_current_thread()
                } else {
                    let mut b = tokio::runtime::Builder::new_multi_thread();
                    b.worker_threads(opts.threads);
                    b
                };
                let rt = b
                    .enable_all()
                    .thread_name("iiopbench-server")
                    .on_thread_start(move || {
                        if let Some(c) = &cpus {
                            let _ = crate::affinity::pin_current_thread(c);
                        }
                    })
                    .build()?;
                rt.block_on(async move {
                    let listener = match tokio::net::TcpListener::bind(&opts.listen).await {
                        Ok(l) => l,
                        Err(e) => {
                            let msg = format!("cannot listen on {}: {e}", opts.listen);
                            let _ = ready_tx.send(Err(std::io::Error::new(e.kind(), msg)));
                            return Ok(());
                        }
                    };
                    let _ = ready_tx.send(listener.local_addr());
                    serve(listener, h, opts.config, async {
                        let _ = stop_rx.await;
                    })
                    .await
                })
            })?;
        let addr = match ready_rx.recv() {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => {
                let r = thread.join();
                return Err(match r {
                    Ok(Err(e)) => e,
                    _ => std::io::Error::other("server thread died while starting"),
                });
            }
        };
        let refs = References::new(&handler, addr);
        Ok(RunningServer {
            refs,
            handler,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// IORs and corbaloc URLs.
    pub fn refs(&self) -> &References {
        &self.refs
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.refs.addr
    }

    /// The handler (counters, skeleton).
    pub fn handler(&self) -> &Arc<BenchHandler> {
        &self.handler
    }

    /// Counters now.
    pub fn stats(&self) -> Stats {
        self.handler.counters().snapshot()
    }

    /// Stop accepting, let in-flight requests finish, join the threads.
    pub fn stop(mut self) -> std::io::Result<Stats> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> std::io::Result<Stats> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            match t.join() {
                Ok(r) => r?,
                Err(_) => return Err(std::io::Error::other("server thread panicked")),
            }
        }
        Ok(self.stats())
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}
