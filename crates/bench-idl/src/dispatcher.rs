//! The central dispatcher of seed 001's load-balancing strategy 5
//! (bench.idl `interface Dispatcher { Perf next(); }`, object key
//! `Dispatcher`): a GIOP object that hands out the references of S server
//! replicas in round-robin order. It runs as a server of its own (own
//! thread, current-thread runtime, own port), so the replicas can be any
//! ORB's; only iiopbench provides it (vendor servers need not).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use iiop_cdr::{Reader, Writer};
use iiop_giop::exception::{Completion, VMCID_IIOPBENCH};
use iiop_giop::ior::Ior;
use iiop_giop::SystemException;
use iiop_transport::server::{
    arguments_end_body, handle_builtin, serve, Dispatch, Handler, LocateOutcome, Outcome,
    RequestContext, ServerConfig,
};
use tokio::sync::oneshot;

/// Repository id of the dispatcher interface.
pub const DISPATCHER_ID: &str = "IDL:Bench/Dispatcher:1.0";
/// Object key of the dispatcher.
pub const DISPATCHER_KEY: &[u8] = b"Dispatcher";

/// Round-robin over the replicas' references.
#[derive(Debug)]
pub struct DispatcherHandler {
    replicas: Vec<Ior>,
    next: AtomicUsize,
    handed_out: AtomicUsize,
}

impl DispatcherHandler {
    /// A dispatcher over `replicas` (at least one).
    pub fn new(replicas: Vec<Ior>) -> DispatcherHandler {
        assert!(!replicas.is_empty(), "a dispatcher needs a replica");
        DispatcherHandler {
            replicas,
            next: AtomicUsize::new(0),
            handed_out: AtomicUsize::new(0),
        }
    }

    /// References handed out so far.
    pub fn handed_out(&self) -> usize {
        self.handed_out.load(Ordering::Relaxed)
    }
}

impl Handler for DispatcherHandler {
    fn handle(
        &self,
        ctx: &RequestContext<'_>,
        body: &mut Reader<'_>,
        reply: &mut Writer<'_>,
    ) -> Dispatch {
        if ctx.object_key != DISPATCHER_KEY {
            return Dispatch::Done(Outcome::System(SystemException::unknown_object()));
        }
        if let Some(d) = handle_builtin(ctx, body, reply, &[DISPATCHER_ID]) {
            return d;
        }
        if ctx.operation != "next" {
            return Dispatch::Done(Outcome::System(SystemException::unknown_operation()));
        }
        if !arguments_end_body(body) {
            return Dispatch::Done(Outcome::System(SystemException::marshal(
                iiop_giop::exception::MINOR_MARSHAL_BAD_BODY,
                Completion::No,
            )));
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.replicas.len();
        match self.replicas[i].encode(reply) {
            Ok(()) => {
                self.handed_out.fetch_add(1, Ordering::Relaxed);
                Dispatch::Done(Outcome::Reply)
            }
            Err(_) => Dispatch::Done(Outcome::System(SystemException::internal(
                VMCID_IIOPBENCH | 5,
                Completion::No,
            ))),
        }
    }

    fn locate(&self, object_key: &[u8]) -> LocateOutcome {
        if object_key == DISPATCHER_KEY {
            LocateOutcome::Here
        } else {
            LocateOutcome::Unknown
        }
    }
}

/// A dispatcher serving on its own thread; stopped on drop.
#[derive(Debug)]
pub struct RunningDispatcher {
    pub ior: Ior,
    pub addr: SocketAddr,
    handler: Arc<DispatcherHandler>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl RunningDispatcher {
    /// Bind `listen` (port 0: any) and serve round-robin over `replicas`.
    pub fn start(listen: &str, replicas: Vec<Ior>) -> std::io::Result<RunningDispatcher> {
        if replicas.is_empty() {
            return Err(std::io::Error::other(
                "a dispatcher needs at least one replica",
            ));
        }
        let handler = Arc::new(DispatcherHandler::new(replicas));
        let h = handler.clone();
        let listen = listen.to_string();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<std::io::Result<SocketAddr>>();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("iiopbench-dispatcher".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                rt.block_on(async move {
                    let l = match tokio::net::TcpListener::bind(&listen).await {
                        Ok(l) => l,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready_tx.send(l.local_addr());
                    let _ = serve(l, h, ServerConfig::default(), async {
                        let _ = stop_rx.await;
                    })
                    .await;
                });
            })?;
        let addr = ready_rx
            .recv()
            .map_err(|_| std::io::Error::other("dispatcher thread died while starting"))??;
        let ior = Ior::builder(DISPATCHER_ID)
            .iiop(
                &addr.ip().to_string(),
                addr.port(),
                DISPATCHER_KEY.to_vec(),
                &[],
            )
            .build();
        Ok(RunningDispatcher {
            ior,
            addr,
            handler,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// References handed out so far.
    pub fn handed_out(&self) -> usize {
        self.handler.handed_out()
    }
}

impl Drop for RunningDispatcher {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
