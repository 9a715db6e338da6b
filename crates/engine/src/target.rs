//! What a benchmark talks to: a reference given by the user (IOR string,
//! `corbaloc:`, `corbaname:`, a file holding one, or `-` for stdin), or —
//! with no `--target` — our reference server embedded in this process on a
//! runtime and threads of its own (pinned with `--server-cpus`). Also the
//! client configuration every bench command shares.

use std::time::{Duration, Instant};

use iiop_bench_idl::client::Wait;
use iiop_bench_idl::reference::Skeleton;
use iiop_bench_idl::run::{RunningServer, ServerOptions};
use iiop_cdr::ByteOrder;
use iiop_giop::ior::{orb_type_name, Ior};
use iiop_giop::{Target, Version};
use iiop_transport::client::{Client, ClientConfig, TlsMode};
use iiop_transport::hosted::ServerModel;
use iiop_transport::naming::resolve_target;

use crate::options::Sockets;
use crate::placement::Cpus;
use crate::results::TargetInfo;

/// Target and protocol options shared by the bench commands.
#[derive(Debug, Clone)]
pub struct TargetOpts {
    /// The server: `IOR:…`, `corbaloc:…`, `corbaname:…`, a file holding
    /// one, or `-` for stdin. `None`: our reference server runs embedded
    /// in this process (own runtime and threads).
    pub target: Option<String>,
    /// GIOP version to speak (default: the reference's; a corbaloc
    /// without `1.2@` means 1.0, as in every ORB).
    pub giop: Option<Version>,
    /// Byte order of our requests.
    pub order: ByteOrder,
    /// Skeleton of the embedded server.
    pub skeleton: Skeleton,
    /// Threads of the embedded server (default: the number of server CPUs,
    /// 1 when pinned to one).
    pub server_threads: Option<usize>,
    /// How the embedded server waits for requests: tokio tasks (reactor)
    /// or a thread per connection blocking in recv (threads).
    pub server_model: ServerModel,
    /// With [`ServerModel::Threads`]: how long a connection's thread of the
    /// embedded server polls for its next request after every message,
    /// replies too, before it blocks (`serve --spin-limit`; the raw-TCP
    /// baseline's server polls so). `None`: it polls only while oneways
    /// stream in.
    pub server_spin_limit: Option<Duration>,
    /// Timeout of every call (and of connecting).
    pub timeout: Duration,
    /// Fragment our GIOP 1.2 requests above this size (for ORBs with
    /// small message limits).
    pub fragment_size: Option<u64>,
    /// How the client waits for replies.
    pub waiting: WaitOpts,
    /// IIOP over TLS.
    pub tls: TlsOpts,
    /// Every case both over TLS and over plain TCP, interleaved, with the
    /// TLS/plain ratio: the embedded server serves a TLS port and a plain
    /// one (implies `tls.tls`; no `target`).
    pub tls_vs_plain: bool,
    /// An agent run's start gate: cases start at their agent-wide slots,
    /// and the target is shared (its counters are left alone). `None`
    /// outside an agent run.
    pub gate: Option<crate::gate::Gate>,
}

/// The client's TLS settings: PEM files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOpts {
    /// TLS on every connection, also where the reference does not ask for
    /// it (a corbaloc:iiop: reference cannot; corbaloc:ssliop: and IORs
    /// with TAG_SSL_SEC_TRANS or a CSIv2 TLS mechanism do). Needs `ca`.
    pub tls: bool,
    /// CA certificates (PEM) that verify servers. With it, every
    /// connection whose reference offers TLS uses it.
    pub tls_ca: Option<std::path::PathBuf>,
    /// Our certificate chain (PEM), presented when a server asks for one.
    pub tls_cert: Option<std::path::PathBuf>,
    /// The private key (PEM) of `tls_cert`.
    pub tls_key: Option<std::path::PathBuf>,
}

impl TlsOpts {
    /// The rustls client settings, when a CA was given.
    pub fn client(
        &self,
    ) -> anyhow::Result<Option<std::sync::Arc<iiop_transport::tls::RustlsClientConfig>>> {
        let Some(ca) = &self.tls_ca else {
            return Ok(None);
        };
        let id = self.tls_cert.as_deref().zip(self.tls_key.as_deref());
        Ok(Some(iiop_transport::tls::client_config(ca, id)?))
    }

    /// Which connections use TLS, with the settings read from the files:
    /// `--tls` without `--tls-ca` is an error here (the embedded server,
    /// which brings its own CA, is the caller's exception).
    pub fn mode(&self) -> anyhow::Result<TlsMode> {
        Ok(match self.client()? {
            Some(c) if self.tls => TlsMode::Always(c),
            Some(c) => TlsMode::Offered(c),
            None => {
                anyhow::ensure!(
                    !self.tls,
                    "--tls with a --target needs --tls-ca (the CA that signed the server's \
                     certificate); without --target the embedded server makes its own"
                );
                TlsMode::Off
            }
        })
    }
}

impl Default for TargetOpts {
    /// The embedded server, native byte order, 30 s timeout.
    fn default() -> Self {
        TargetOpts {
            target: None,
            giop: None,
            order: ByteOrder::NATIVE,
            skeleton: Skeleton::Typed,
            server_threads: None,
            server_model: ServerModel::Reactor,
            server_spin_limit: None,
            timeout: Duration::from_secs(30),
            fragment_size: None,
            waiting: WaitOpts::default(),
            tls: TlsOpts::default(),
            tls_vs_plain: false,
            gate: None,
        }
    }
}

/// How a client waits for replies (`--wait-strategy`, `--spin-limit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitOpts {
    /// The strategy (see [`WaitStrategy`]).
    pub wait_strategy: WaitStrategy,
    /// With [`WaitStrategy::Spin`]: the longest one wait polls before it
    /// blocks in recv.
    pub spin_limit: Duration,
}

impl Default for WaitOpts {
    fn default() -> Self {
        WaitOpts {
            wait_strategy: WaitStrategy::Auto,
            spin_limit: Duration::from_millis(1),
        }
    }
}

/// How the client waits for replies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WaitStrategy {
    /// `Spin` where one caller makes one call at a time and client and
    /// server are on different CPUs, `Read` where one caller does so
    /// otherwise, `Reactor` elsewhere.
    #[default]
    Auto,
    /// Block the calling thread in recv, one call at a time.
    Read,
    /// `Read` that first polls without blocking for up to the spin limit.
    Spin,
    /// Wait on the async runtime (any number of calls in flight).
    Reactor,
}

impl WaitStrategy {
    /// Its command-line name.
    pub fn name(self) -> &'static str {
        match self {
            WaitStrategy::Auto => "auto",
            WaitStrategy::Read => "read",
            WaitStrategy::Spin => "spin",
            WaitStrategy::Reactor => "reactor",
        }
    }
}

/// A resolved wait strategy: how connections wait, and for how long
/// a wait on read polls first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waiting {
    pub wait: Wait,
    /// `Some` with [`Wait::Read`]: spin this long before blocking.
    pub spin: Option<Duration>,
}

impl Waiting {
    /// Its name in results (`params.wait_strategy`).
    pub fn name(&self) -> &'static str {
        match (self.wait, self.spin) {
            (Wait::Reactor, _) => "reactor",
            (Wait::Read, None) => "read",
            (Wait::Read, Some(_)) => "spin",
        }
    }

    /// Record it in results' params: `wait_strategy`, and `spin_limit_us`
    /// when spinning.
    pub fn record(&self, params: &mut std::collections::BTreeMap<String, serde_json::Value>) {
        crate::context::param(params, "wait_strategy", self.name());
        if let Some(d) = self.spin {
            crate::context::param(params, "spin_limit_us", d.as_secs_f64() * 1e6);
        }
    }
}

impl WaitOpts {
    /// The strategy for a run whose callers are `single` (one caller, one
    /// call at a time) and whose placement is `relation` (as recorded in
    /// results: `cross-cpu`, `same-cpu`, `overlapping`, `unknown`).
    pub fn resolve(&self, single: bool, relation: &str) -> anyhow::Result<Waiting> {
        let read = |spin: bool| Waiting {
            wait: Wait::Read,
            spin: spin.then_some(self.spin_limit),
        };
        match (self.wait_strategy, single) {
            (WaitStrategy::Auto, true) => Ok(read(relation == "cross-cpu")),
            (WaitStrategy::Read, true) => Ok(read(false)),
            (WaitStrategy::Spin, true) => Ok(read(true)),
            (WaitStrategy::Auto | WaitStrategy::Reactor, _) => Ok(Waiting {
                wait: Wait::Reactor,
                spin: None,
            }),
            (WaitStrategy::Read | WaitStrategy::Spin, false) => anyhow::bail!(
                "--wait-strategy {} needs one caller making one call at a time: \
                 bench latency with one connection, one call in flight and no --rate, \
                 or bench throughput without --breakdown",
                self.wait_strategy.name()
            ),
        }
    }
}

/// The client configuration for these options (an error when a TLS file
/// cannot be used).
pub fn client_config(t: &TargetOpts, s: &Sockets) -> anyhow::Result<ClientConfig> {
    let (send_buffer, recv_buffer) = s.buffers_u32();
    anyhow::ensure!(
        !t.tls_vs_plain || t.target.is_none(),
        "--tls-vs-plain runs the embedded server twice (TLS and plain); against a --target, \
         run its plain and its TLS reference as two runs (docs/tls.md)"
    );
    // Without --target the embedded server comes with settings of its own
    // (a CA made for the run), given to the session with it.
    let tls = match t.target {
        None if t.tls.tls_ca.is_none() || t.tls_vs_plain => TlsMode::Off,
        _ => t.tls.mode()?,
    };
    Ok(ClientConfig {
        tls,
        version: t.giop,
        order: t.order,
        nodelay: s.nodelay,
        send_buffer,
        recv_buffer,
        connect_timeout: t.timeout,
        request_timeout: Some(t.timeout),
        fragment_size: t.fragment_size.map(|v| v as usize),
        ..ClientConfig::default()
    })
}

/// A resolved target.
#[derive(Debug)]
pub struct Resolved {
    pub ior: Ior,
    pub info: TargetInfo,
    /// Our server, when embedded (stopped on drop).
    pub embedded: Option<RunningServer>,
    /// Time spent turning the reference into an IOR (naming lookups).
    pub resolve_seconds: f64,
    /// The client settings that trust the embedded server's certificate,
    /// made in memory with it (`--tls` and no `--target`).
    pub tls_client: Option<std::sync::Arc<iiop_transport::tls::RustlsClientConfig>>,
    /// `--tls-vs-plain`: the same server on a plain port (its IOR), for
    /// the plain half of every case.
    pub plain: Option<(Ior, RunningServer)>,
}

/// Resolve the target (starting the embedded server if none was given;
/// `phases`: where that server adds up its phase timings, E0.5). `cfg`
/// ([`client_config`]) is the client configuration of the run: naming
/// lookups use the same TLS settings as the benchmark.
pub async fn resolve(
    t: &TargetOpts,
    cfg: &ClientConfig,
    s: &Sockets,
    cpus: &Cpus,
    phases: Option<std::sync::Arc<iiop_transport::ServerPhases>>,
) -> anyhow::Result<Resolved> {
    let Some(reference) = &t.target else {
        // `--tls`: the embedded server serves TLS only, with a CA and a
        // certificate made for this run; the client trusts that CA.
        let pki = match t.tls.tls || t.tls_vs_plain {
            true => Some(
                iiop_transport::tls::EphemeralPki::new()
                    .map_err(|e| anyhow::anyhow!("embedded TLS server: {e}"))?,
            ),
            false => None,
        };
        let threads = t
            .server_threads
            .unwrap_or_else(|| cpus.server.as_ref().map(|c| c.len()).unwrap_or(1).max(1));
        let spin = t.server_spin_limit.filter(|d| !d.is_zero());
        if spin.is_some() {
            t.server_model
                .may_poll("--server-spin-limit")
                .map_err(anyhow::Error::msg)?;
        }
        let opts = ServerOptions {
            skeleton: t.skeleton,
            model: t.server_model,
            // Thread per connection with a CPU apart: poll while oneways
            // stream in, as the raw-TCP baseline's server does. After
            // replies only when asked (--server-spin-limit): between one
            // client's calls a thread that polls holds a CPU its other
            // connections may need, though it is the fastest round trip
            // (the raw baseline's server polls so).
            polling: match spin {
                Some(limit) => iiop_transport::threads::Polling::after_each_message(Some(limit)),
                None => iiop_transport::threads::Polling::streams(
                    cpus.apart().then_some(crate::rawtcp::SERVER_SPIN),
                ),
            },
            threads,
            cpus: Some(cpus.server_or_all()),
            config: iiop_transport::server::ServerConfig {
                nodelay: s.nodelay,
                send_buffer: s.buffers_u32().0,
                recv_buffer: s.buffers_u32().1,
                phases,
                ..Default::default()
            },
            tls: pki.as_ref().map(|p| iiop_transport::hosted::TlsServer {
                config: p.server.clone(),
                client_certificates: false,
            }),
            ..ServerOptions::default()
        };
        let plain = match t.tls_vs_plain {
            true => {
                let srv = RunningServer::start(ServerOptions {
                    tls: None,
                    ..opts.clone()
                })
                .map_err(|e| anyhow::anyhow!("embedded plain server: {e}"))?;
                Some((srv.refs().ior.clone(), srv))
            }
            false => None,
        };
        let srv =
            RunningServer::start(opts).map_err(|e| anyhow::anyhow!("embedded server: {e}"))?;
        let ior = srv.refs().ior.clone();
        let mut info = describe(&ior, "embedded", "embedded", t);
        let model = match t.server_model {
            ServerModel::Reactor => format!(
                "own tokio runtime, {threads} thread{}",
                if threads == 1 { "" } else { "s" }
            ),
            ServerModel::Threads => match spin {
                Some(d) => format!(
                    "a thread per connection, polling up to {d:?} for the next request after each message"
                ),
                None => "a thread per connection".to_string(),
            },
        };
        info.isolation = Some(format!(
            "embedded in this process: {model}{}, CPUs {}",
            match (&pki, &plain) {
                (Some(_), None) => ", TLS only (a certificate made for this run)",
                (Some(_), Some(_)) => {
                    ", TLS (a certificate made for this run) and, for the plain half of each case, the same server on a plain port"
                }
                _ => "",
            },
            cpus.server
                .as_deref()
                .map(crate::sysinfo::format_cpu_list)
                .unwrap_or_else(|| "unpinned".into())
        ));
        info.skeleton = Some(t.skeleton.name().into());
        info.server_model = Some(t.server_model.name().into());
        info.server_spin_limit_us = spin.map(|d| d.as_secs_f64() * 1e6);
        return Ok(Resolved {
            ior,
            info,
            embedded: Some(srv),
            resolve_seconds: 0.0,
            tls_client: pki.map(|p| p.client),
            plain,
        });
    };
    anyhow::ensure!(
        t.server_spin_limit.is_none_or(|d| d.is_zero()),
        "--server-spin-limit sets how the embedded server waits; with --target, the server waits as it was started (`iiopbench serve --server-model threads --spin-limit …`)"
    );
    let parsed = Target::load(reference).map_err(|e| anyhow::anyhow!("--target: {e}"))?;
    let kind = match &parsed {
        Target::Ior(_) => "ior",
        Target::Corbaloc(_) => "corbaloc",
        Target::Corbaname(_) => "corbaname",
    };
    let start = Instant::now();
    let client = Client::new(cfg.clone());
    let ior = resolve_target(&client, &parsed)
        .await
        .map_err(|e| anyhow::anyhow!("resolving {kind} target: {e}"))?;
    let resolve_seconds = start.elapsed().as_secs_f64();
    Ok(Resolved {
        info: describe(&ior, kind, &shorten(reference), t),
        ior,
        embedded: None,
        resolve_seconds,
        tls_client: None,
        plain: None,
    })
}

fn shorten(r: &str) -> String {
    let r = r.trim();
    if r.len() > 80 {
        format!("{}…", &r[..77])
    } else {
        r.to_string()
    }
}

/// The results' description of a target IOR.
pub fn describe(ior: &Ior, kind: &str, reference: &str, t: &TargetOpts) -> TargetInfo {
    let p = ior.iiop_profile();
    let version = t
        .giop
        .or_else(|| {
            p.as_ref().map(|p| Version {
                major: 1,
                minor: p.version.minor.min(2),
            })
        })
        .map(|v| format!("{}.{}", v.major, v.minor))
        .unwrap_or_default();
    TargetInfo {
        kind: kind.into(),
        reference: reference.into(),
        host: p.as_ref().map(|p| p.host.clone()).unwrap_or_default(),
        port: p.as_ref().map(|p| p.port).unwrap_or(0),
        orb_type: p.as_ref().and_then(|p| p.orb_type()).map(|t| {
            orb_type_name(t)
                .map(str::to_string)
                .unwrap_or_else(|| format!("{t:#010x}"))
        }),
        giop_version: version,
        code_sets: ior.code_sets().map(|(cs, from)| {
            let at = match from {
                iiop_giop::ior::CodeSetsSource::IiopProfile => "",
                iiop_giop::ior::CodeSetsSource::MultipleComponents => {
                    " (from TAG_MULTIPLE_COMPONENTS profile)"
                }
            };
            format!(
                "char {}, wchar {}{at}",
                code_set_list(&cs.for_char),
                code_set_list(&cs.for_wchar)
            )
        }),
        isolation: None,
        skeleton: None,
        server_model: None,
        server_spin_limit_us: None,
        forwards: Vec::new(),
    }
}

/// `native (+conversion, …)` with registry names where known.
fn code_set_list(c: &iiop_giop::context::CodeSetComponent) -> String {
    let name = |id: u32| {
        iiop_giop::ior::code_set_name(id)
            .map(str::to_string)
            .unwrap_or_else(|| format!("{id:#010x}"))
    };
    let mut s = name(c.native);
    if !c.conversion.is_empty() {
        s.push_str(&format!(
            " (+{})",
            c.conversion
                .iter()
                .map(|&i| name(i))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    s
}

/// Whether the client reaches `ior`'s object over TLS with `cfg` (the
/// decision of [`endpoint_for`](iiop_giop::conn::endpoint::endpoint_for)
/// on its IIOP profile).
pub fn over_tls(ior: &Ior, cfg: &ClientConfig) -> bool {
    ior.iiop_profile().is_some_and(|p| {
        iiop_giop::conn::endpoint::endpoint_for(&p, cfg.tls.wanted()).is_ok_and(|e| e.tls)
    })
}
