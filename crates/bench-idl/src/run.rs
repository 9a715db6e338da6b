//! Running our reference server on a [`ServerThread`]: its own runtime
//! and threads (optionally pinned), so that when it is embedded in a
//! benchmark process it shares nothing with the measuring client but the
//! kernel.

use std::net::SocketAddr;
use std::sync::Arc;

use iiop_giop::ior::CodeSetsSource;
use iiop_transport::hosted::{ServerModel, ServerThread, Serving, TlsServer};
use iiop_transport::server::ServerConfig;
use iiop_transport::threads::Polling;

use crate::bench::counters::Stats;
use crate::reference::{BenchHandler, Forwarding, References, Skeleton};

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
    /// Answer the short keys with forwards (TAO IORTable style).
    pub forwarding: Option<Forwarding>,
    /// Where the IORs carry TAG_CODE_SETS (default: the IIOP profile).
    pub code_sets_in: CodeSetsSource,
    /// Task per connection on the runtime, or thread per connection.
    pub model: ServerModel,
    /// Thread per connection only: when a connection's thread polls for
    /// its next bytes before it blocks (for a server with a CPU of its
    /// own; default: never).
    pub polling: Polling,
    /// Serve TLS only (its IORs then say so: TAG_SSL_SEC_TRANS).
    pub tls: Option<TlsServer>,
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
            forwarding: None,
            code_sets_in: CodeSetsSource::IiopProfile,
            model: ServerModel::default(),
            polling: Polling::default(),
            tls: None,
        }
    }
}

/// Our reference server running on a [`ServerThread`].
#[derive(Debug)]
pub struct RunningServer {
    refs: References,
    handler: Arc<BenchHandler>,
    server: ServerThread,
}

impl RunningServer {
    /// Bind and start serving; returns once the listener is bound.
    pub fn start(opts: ServerOptions) -> std::io::Result<RunningServer> {
        let handler = Arc::new(
            BenchHandler::new(opts.skeleton)
                .with_forwarding(opts.forwarding)
                .with_code_sets_in(opts.code_sets_in)
                .with_tls(opts.tls.as_ref().map(|t| t.client_certificates)),
        );
        let server = ServerThread::spawn_model(
            handler.clone(),
            &opts.listen,
            opts.threads,
            opts.cpus,
            opts.config,
            Serving {
                model: opts.model,
                polling: opts.polling,
                tls: opts.tls.map(|t| t.config),
            },
        )?;
        let refs = References::new(&handler, server.addr());
        Ok(RunningServer {
            refs,
            handler,
            server,
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
        self.server.stop()?;
        Ok(self.stats())
    }
}
