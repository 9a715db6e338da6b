//! The proxy's sockets: a tokio runtime of its own (one worker), a
//! listener per server endpoint fronted, and per accepted client one
//! task driving a [`Relay`] between the client's socket and a new
//! connection to the server, with a reader task per socket (bounded
//! channel: a slow relay slows the reads) and a writer task per socket
//! (so a side that does not read never stops the other direction).
//! Every protocol decision is the relay's; here bytes and time move.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use iiop_giop::corbaloc::{Corbaloc, ObjAddr};
use iiop_giop::Ior;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

use super::fault::Faults;
use super::record::{now_ns, Leg, Recorder};
use super::relay::{Relay, RelayConfig, RelayStats, Side};
use super::rewrite::{rewrite_ior, Endpoints, BENCH_REFERENCE_OPS};

/// Why a proxy could not start or finish, and whose doing it was.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// The reference has no IIOP profile to front (the user's target).
    #[error("the target has no usable IIOP profile")]
    NoProfile,
    /// The target accepts only TLS, which the proxy cannot see into.
    #[error("the target accepts only TLS ({0}): a GIOP proxy cannot read TLS")]
    TlsOnly(String),
    /// Listening failed (the user's address, or the machine).
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    /// The proxy's runtime could not start.
    #[error("cannot start the proxy's runtime: {0}")]
    Runtime(std::io::Error),
    /// The recording could not be written.
    #[error("recording {path}: {reason}")]
    Record { path: PathBuf, reason: String },
}

/// What a proxy fronts and how.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// The reference fronted: its IIOP endpoints are reached through the
    /// proxy ([`Proxy::ior`] is it rewritten), and so is every endpoint a
    /// reference passed later points at.
    pub target: Ior,
    /// Where the first listener binds (`127.0.0.1:0`: a free port); the
    /// listeners made later for other endpoints bind the same address,
    /// port 0. An unspecified address is advertised as 127.0.0.1.
    pub listen: String,
    pub faults: Faults,
    /// Record every relayed connection: a pcapng file, or with a `.json`
    /// name the `pcap` command's results of it.
    pub record: Option<PathBuf>,
    /// Operations whose result is one object reference, beyond bench.idl's
    /// (e.g. from an IDL file: [`reference_ops_of_idl`]).
    pub extra_reference_ops: BTreeSet<String>,
    /// How long connecting to the server may take.
    pub connect_timeout: Duration,
    /// Largest GIOP message framed (see [`RelayConfig::max_message`]).
    pub max_message: usize,
}

impl ProxyConfig {
    /// A proxy in front of `target` on 127.0.0.1 injecting `faults`.
    pub fn new(target: Ior, faults: Faults) -> ProxyConfig {
        ProxyConfig {
            target,
            listen: "127.0.0.1:0".into(),
            faults,
            record: None,
            extra_reference_ops: BTreeSet::new(),
            connect_timeout: Duration::from_secs(5),
            max_message: 512 << 20,
        }
    }
}

/// The operations in `spec` whose result is one object reference and
/// that have no `out`/`inout` parameter: their replies' bodies are the
/// reference alone, which the proxy can rewrite.
pub fn reference_ops_of_idl(spec: &iiop_idl::Spec) -> BTreeSet<String> {
    use iiop_idl::{DefKind, Direction, Type};
    let mut out = BTreeSet::new();
    for (id, _) in spec.interfaces() {
        for op in spec.operations(id) {
            let is_ref = match spec.unalias(&op.result) {
                Type::Object => true,
                Type::Named(d) => matches!(spec.def(*d).kind, DefKind::Interface(_)),
                _ => false,
            };
            if is_ref && op.params.iter().all(|p| p.dir == Direction::In) {
                out.insert(op.name.clone());
            }
        }
    }
    out
}

/// Send buffer of the proxy's sockets when it dribbles.
const DRIBBLE_SNDBUF: usize = 8 << 20;

/// What every task of a proxy shares.
#[derive(Debug)]
struct Shared {
    relay: RelayConfig,
    connect_timeout: Duration,
    /// Ended connections' counts.
    stats: Mutex<RelayStats>,
    /// Connections whose relay runs.
    active: AtomicUsize,
    recorder: Option<Arc<Recorder>>,
    /// Server endpoint → the proxy's stand-in (host, port).
    table: Mutex<HashMap<(String, u16), (String, u16)>>,
    /// The address listeners bind and the host references advertise.
    bind_ip: std::net::IpAddr,
    advertise: String,
    handle: tokio::runtime::Handle,
    stop: watch::Receiver<bool>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The driver's [`Endpoints`]: a listener bound (and its accept loop
/// started) the first time an endpoint is asked for.
struct Table(Arc<Shared>);

impl Endpoints for Table {
    fn proxy_for(&mut self, host: &str, port: u16) -> Option<(String, u16)> {
        if port == 0 {
            return None;
        }
        let key = (host.to_string(), port);
        if let Some(v) = lock(&self.0.table).get(&key) {
            return Some(v.clone());
        }
        let l = std::net::TcpListener::bind((self.0.bind_ip, 0)).ok()?;
        l.set_nonblocking(true).ok()?;
        let local = l.local_addr().ok()?;
        let _g = self.0.handle.enter();
        let l = TcpListener::from_std(l).ok()?;
        let v = (self.0.advertise.clone(), local.port());
        lock(&self.0.table).insert(key.clone(), v.clone());
        self.0.handle.spawn(accept_loop(self.0.clone(), l, key));
        Some(v)
    }
}

/// A running proxy; dropping it stops it (as [`stop`](Self::stop) does,
/// without the recording's error).
#[derive(Debug)]
pub struct Proxy {
    shared: Arc<Shared>,
    rt: Option<tokio::runtime::Runtime>,
    stop_tx: watch::Sender<bool>,
    ior: Ior,
    addr: SocketAddr,
    record: Option<(PathBuf, PathBuf)>,
}

/// Where a recording is written while it runs: the file itself, or for
/// `.json` a pcapng beside it, analysed at the end.
fn recording_file(path: &Path) -> PathBuf {
    if path.extension().is_some_and(|e| e == "json") {
        path.with_extension("json.pcapng.part")
    } else {
        path.to_path_buf()
    }
}

impl Proxy {
    /// Start listening in front of `cfg.target`.
    pub fn start(cfg: ProxyConfig) -> Result<Proxy, ProxyError> {
        let profile = cfg.target.iiop_profile().ok_or(ProxyError::NoProfile)?;
        if profile.port == 0 {
            return Err(ProxyError::TlsOnly(format!("{}, port 0", profile.host)));
        }
        if let Some(t) = iiop_giop::ior::tls_offer(&profile).filter(|t| t.required()) {
            return Err(ProxyError::TlsOnly(format!(
                "TLS required on port {}",
                t.port
            )));
        }
        let listen = |e| ProxyError::Listen {
            addr: cfg.listen.clone(),
            source: e,
        };
        let l = std::net::TcpListener::bind(&cfg.listen).map_err(listen)?;
        l.set_nonblocking(true).map_err(listen)?;
        let addr = l.local_addr().map_err(listen)?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("iiopbench-proxy")
            .enable_all()
            .build()
            .map_err(ProxyError::Runtime)?;
        let record = cfg.record.as_ref().map(|p| (p.clone(), recording_file(p)));
        let recorder = match &record {
            Some((path, file)) => {
                let f = std::fs::File::create(file).map_err(|e| ProxyError::Record {
                    path: path.clone(),
                    reason: e.to_string(),
                })?;
                let sink = Box::new(std::io::BufWriter::with_capacity(1 << 20, f));
                Some(Recorder::new(sink).map_err(|e| ProxyError::Record {
                    path: path.clone(),
                    reason: e.to_string(),
                })?)
            }
            None => None,
        };
        let mut ops: BTreeSet<String> = BENCH_REFERENCE_OPS.iter().map(|s| s.to_string()).collect();
        ops.extend(cfg.extra_reference_ops.iter().cloned());
        let (stop_tx, stop_rx) = watch::channel(false);
        let advertise = if addr.ip().is_unspecified() {
            "127.0.0.1".to_string()
        } else {
            addr.ip().to_string()
        };
        let shared = Arc::new(Shared {
            relay: RelayConfig {
                faults: cfg.faults.clone(),
                reference_ops: Arc::new(ops),
                max_message: cfg.max_message,
            },
            connect_timeout: cfg.connect_timeout,
            stats: Mutex::new(RelayStats::default()),
            active: AtomicUsize::new(0),
            recorder,
            table: Mutex::new(HashMap::new()),
            bind_ip: addr.ip(),
            advertise: advertise.clone(),
            handle: rt.handle().clone(),
            stop: stop_rx,
        });
        let key = (profile.host.clone(), profile.port);
        lock(&shared.table).insert(key.clone(), (advertise, addr.port()));
        {
            let _g = rt.enter();
            let l = TcpListener::from_std(l).map_err(listen)?;
            rt.spawn(accept_loop(shared.clone(), l, key));
        }
        let ior = rewrite_ior(&cfg.target, &mut Table(shared.clone())).unwrap_or(cfg.target);
        Ok(Proxy {
            shared,
            rt: Some(rt),
            stop_tx,
            ior,
            addr,
            record,
        })
    }

    /// The target as clients should use it: through the proxy.
    pub fn ior(&self) -> &Ior {
        &self.ior
    }

    /// `corbaloc:iiop:V@HOST:PORT/KEY` of [`ior`](Self::ior)'s main
    /// profile, of its version.
    pub fn corbaloc(&self) -> Option<String> {
        let p = self.ior.iiop_profile()?;
        Some(
            Corbaloc {
                addresses: vec![ObjAddr::Iiop {
                    version: Some(p.version),
                    host: p.host,
                    port: Some(p.port),
                    tls: false,
                }],
                key: p.object_key,
            }
            .to_string(),
        )
    }

    /// Where the first listener listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Any reference rewritten to go through this proxy (listeners for
    /// new endpoints are started now); unchanged when it names no IIOP
    /// endpoint.
    pub fn rewrite(&self, ior: &Ior) -> Ior {
        rewrite_ior(ior, &mut Table(self.shared.clone())).unwrap_or_else(|| ior.clone())
    }

    /// Counts of the connections that have ended so far.
    pub fn stats(&self) -> RelayStats {
        lock(&self.shared.stats).clone()
    }

    /// Stop: every connection is closed (what is queued written first),
    /// the recording finished; the counts of every connection.
    pub fn stop(mut self) -> Result<RelayStats, ProxyError> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<RelayStats, ProxyError> {
        let Some(rt) = self.rt.take() else {
            return Ok(self.stats());
        };
        let _ = self.stop_tx.send(true);
        // Relays notice the stop, flush and publish their counts.
        let end = Instant::now() + Duration::from_secs(5);
        while self.shared.active.load(Ordering::SeqCst) > 0 && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5));
        }
        rt.shutdown_timeout(Duration::from_secs(1));
        let stats = self.stats();
        if let (Some(rec), Some((path, file))) = (&self.shared.recorder, &self.record) {
            let err = |reason: String| ProxyError::Record {
                path: path.clone(),
                reason,
            };
            rec.finish().map_err(|e| err(e.to_string()))?;
            if file != path {
                let r = crate::capture::analyze(std::slice::from_ref(file), 1000)
                    .and_then(|s| crate::capture::to_results(&s, std::slice::from_ref(path)))
                    .and_then(|res| {
                        crate::results::write_atomic(path, &crate::results::to_json(&res))
                    });
                let _ = std::fs::remove_file(file);
                r.map_err(|e| err(format!("{e:#}")))?;
            }
        }
        Ok(stats)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

async fn accept_loop(shared: Arc<Shared>, l: TcpListener, upstream: (String, u16)) {
    let mut stop = shared.stop.clone();
    loop {
        tokio::select! {
            r = l.accept() => match r {
                Ok((s, _)) => {
                    shared.active.fetch_add(1, Ordering::SeqCst);
                    tokio::spawn(connection(shared.clone(), s, upstream.clone()));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            _ = stop.changed() => return,
        }
    }
}

/// What a reader task tells the relay.
enum Event {
    Data(Side, Bytes),
    Eof(Side),
}

async fn read_loop(
    mut rd: OwnedReadHalf,
    side: Side,
    tx: mpsc::Sender<Event>,
    leg: Option<Arc<Leg>>,
    from_client: bool,
) {
    let mut buf = BytesMut::with_capacity(64 << 10);
    loop {
        buf.reserve(64 << 10);
        match rd.read_buf(&mut buf).await {
            Ok(n) if n > 0 => {
                let b = buf.split().freeze();
                if let Some(l) = &leg {
                    l.data(from_client, &b, now_ns());
                }
                if tx.send(Event::Data(side, b)).await.is_err() {
                    return;
                }
            }
            _ => {
                let _ = tx.send(Event::Eof(side)).await;
                return;
            }
        }
    }
}

async fn write_loop(
    mut wr: OwnedWriteHalf,
    mut rx: mpsc::UnboundedReceiver<Bytes>,
    leg: Option<Arc<Leg>>,
    from_client: bool,
) {
    while let Some(b) = rx.recv().await {
        if wr.write_all(&b).await.is_err() {
            return;
        }
        if let Some(l) = &leg {
            l.data(from_client, &b, now_ns());
        }
    }
    let _ = wr.shutdown().await;
}

/// Relay one accepted client to a new connection to `upstream`.
async fn connection(shared: Arc<Shared>, client: TcpStream, upstream: (String, u16)) {
    let mut relay = Relay::new(shared.relay.clone());
    run_connection(&shared, &mut relay, client, upstream).await;
    lock(&shared.stats).add(relay.stats());
    shared.active.fetch_sub(1, Ordering::SeqCst);
}

async fn run_connection(
    shared: &Arc<Shared>,
    relay: &mut Relay,
    client: TcpStream,
    upstream: (String, u16),
) {
    let _ = client.set_nodelay(true);
    let connect = TcpStream::connect((upstream.0.as_str(), upstream.1));
    let server = match tokio::time::timeout(shared.connect_timeout, connect).await {
        Ok(Ok(s)) => s,
        // The client sees its connection closed, as with the server down.
        _ => return,
    };
    let _ = server.set_nodelay(true);
    if shared.relay.faults.dribble.is_some() {
        // Every small write takes a whole buffer slot in the kernel: with
        // the default send buffer the writer stalls on each delayed ACK.
        for s in [&client, &server] {
            let _ = socket2::SockRef::from(s).set_send_buffer_size(DRIBBLE_SNDBUF);
        }
    }
    let ts = now_ns();
    let legs = shared.recorder.as_ref().and_then(|r| {
        let c = r.leg(client.peer_addr().ok()?, client.local_addr().ok()?, ts);
        let s = r.leg(server.local_addr().ok()?, server.peer_addr().ok()?, ts);
        Some((Arc::new(c), Arc::new(s)))
    });
    let (leg_c, leg_s) = match &legs {
        Some((c, s)) => (Some(c.clone()), Some(s.clone())),
        None => (None, None),
    };
    let (crd, cwr) = client.into_split();
    let (srd, swr) = server.into_split();
    let (ev_tx, mut ev_rx) = mpsc::channel(16);
    let readers = [
        tokio::spawn(read_loop(
            crd,
            Side::Client,
            ev_tx.clone(),
            leg_c.clone(),
            true,
        )),
        tokio::spawn(read_loop(srd, Side::Server, ev_tx, leg_s.clone(), false)),
    ];
    let (to_client, crx) = mpsc::unbounded_channel();
    let (to_server, srx) = mpsc::unbounded_channel();
    let writers = [
        tokio::spawn(write_loop(cwr, crx, leg_c, false)),
        tokio::spawn(write_loop(swr, srx, leg_s, true)),
    ];
    let mut map = Table(shared.clone());
    let mut stop = shared.stop.clone();
    loop {
        let now = Instant::now();
        while let Some(t) = relay.poll_transmit(now) {
            let _ = match t.to {
                Side::Client => to_client.send(t.bytes),
                Side::Server => to_server.send(t.bytes),
            };
        }
        if relay.is_done() {
            break;
        }
        let deadline = relay.next_deadline();
        let far = now + Duration::from_secs(3600);
        tokio::select! {
            ev = ev_rx.recv() => match ev {
                Some(Event::Data(side, b)) => relay.input(side, &b, Instant::now(), &mut map),
                Some(Event::Eof(side)) => relay.eof(side, Instant::now()),
                None => relay.eof(Side::Client, Instant::now()),
            },
            _ = tokio::time::sleep_until(deadline.unwrap_or(far).into()), if deadline.is_some() => {
                relay.timeout(Instant::now());
            }
            _ = stop.changed() => relay.eof(Side::Client, Instant::now()),
        }
    }
    drop((to_client, to_server));
    for w in writers {
        let _ = tokio::time::timeout(Duration::from_secs(10), w).await;
    }
    for r in readers {
        r.abort();
    }
    if let Some((c, s)) = legs {
        let ts = now_ns();
        c.close(ts);
        s.close(ts);
    }
}
