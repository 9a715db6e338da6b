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
use iiop_giop::conn::route::version_for;
use iiop_giop::ior::{orb_type_name, Ior};
use iiop_giop::{Target, Version};
use iiop_transport::client::{Client, ClientConfig, TlsMode};
use iiop_transport::config::Callbacks;
use iiop_transport::hosted::ServerModel;
use iiop_transport::naming::resolve_target;
use serde::{Deserialize, Serialize};

use crate::error::{check, Error, JobError, Result};
use crate::options::Sockets;
use crate::placement::Cpus;
use crate::results::TargetInfo;

/// Target and protocol options shared by the jobs that talk to an ORB.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TargetOpts {
    /// The server: `IOR:…`, `corbaloc:…`, `corbaname:…`, a file holding
    /// one, or `-` for stdin. `None`: our reference server runs embedded
    /// in this process (own runtime and threads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// GIOP version to speak (default: the reference's; a corbaloc
    /// without `1.2@` means 1.0, as in every ORB). Written `"1.2"`.
    #[serde(with = "giop_form", skip_serializing_if = "Option::is_none")]
    pub giop: Option<Version>,
    /// Byte order of our requests.
    pub order: Order,
    /// Skeleton of the embedded server.
    #[serde(with = "skeleton_form")]
    pub skeleton: Skeleton,
    /// Threads of the embedded server (default: the number of server CPUs,
    /// 1 when pinned to one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_threads: Option<usize>,
    /// Connections the embedded server serves at once (default: the
    /// transport's, 1024); a connections sweep sets it to its largest
    /// step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_max_connections: Option<usize>,
    /// How the embedded server waits for requests: tokio tasks (reactor)
    /// or a thread per connection blocking in recv (threads).
    #[serde(with = "server_model_form")]
    pub server_model: ServerModel,
    /// With [`ServerModel::Threads`]: how long a connection's thread of the
    /// embedded server polls for its next request after every message,
    /// replies too, before it blocks (`serve --spin-limit`; the raw-TCP
    /// baseline's server polls so). `None`: it polls only while oneways
    /// stream in.
    #[serde(
        with = "crate::units::opt_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub server_spin_limit: Option<Duration>,
    /// Timeout of every call (and of connecting).
    #[serde(with = "crate::units::duration")]
    pub timeout: Duration,
    /// Fragment our GIOP 1.2 requests above this size (for ORBs with
    /// small message limits).
    #[serde(
        with = "crate::units::opt_size",
        skip_serializing_if = "Option::is_none"
    )]
    pub fragment_size: Option<u64>,
    /// How the client waits for replies.
    pub waiting: WaitOpts,
    /// IIOP over TLS.
    pub tls: TlsOpts,
    /// Every case both over TLS and over plain TCP, interleaved, with the
    /// TLS/plain ratio: the embedded server serves a TLS port and a plain
    /// one (implies `tls.tls`; no `target`).
    pub tls_vs_plain: bool,
    /// Offer every connection for callbacks (bidirectional GIOP 1.2) and
    /// serve bench.idl's Callback object on it (`notify(n)` answers
    /// `n + 1`): what `call_back` needs. Implies GIOP 1.2 when `giop` is
    /// not given.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub bidir: bool,
}

/// The byte order of our requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// This machine's.
    #[default]
    Native,
    Big,
    Little,
}

impl Order {
    /// As a CDR byte order.
    pub fn byte_order(self) -> ByteOrder {
        match self {
            Order::Native => ByteOrder::NATIVE,
            Order::Big => ByteOrder::Big,
            Order::Little => ByteOrder::Little,
        }
    }
}

/// A GIOP version as users write it: `1.0`, `1.1` or `1.2`.
pub fn parse_giop_version(s: &str) -> Result<Version, JobError> {
    match s.trim() {
        "1.0" => Ok(Version::V1_0),
        "1.1" => Ok(Version::V1_1),
        "1.2" => Ok(Version::V1_2),
        _ => Err(JobError::new(format!(
            "unsupported GIOP version {s:?}; use 1.0, 1.1 or 1.2"
        ))),
    }
}

mod giop_form {
    use iiop_giop::Version;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<Version>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_str(&format!("{}.{}", v.major, v.minor)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Version>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|t| super::parse_giop_version(&t))
            .transpose()
            .map_err(serde::de::Error::custom)
    }
}

mod skeleton_form {
    use iiop_bench_idl::reference::Skeleton;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(k: &Skeleton, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(k.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Skeleton, D::Error> {
        match String::deserialize(d)?.as_str() {
            "typed" => Ok(Skeleton::Typed),
            "dynamic" => Ok(Skeleton::Dynamic),
            other => Err(serde::de::Error::custom(format!(
                "skeleton {other:?}: typed or dynamic"
            ))),
        }
    }
}

mod server_model_form {
    use iiop_transport::hosted::ServerModel;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(m: &ServerModel, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(m.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ServerModel, D::Error> {
        match String::deserialize(d)?.as_str() {
            "reactor" => Ok(ServerModel::Reactor),
            "threads" => Ok(ServerModel::Threads),
            other => Err(serde::de::Error::custom(format!(
                "server model {other:?}: reactor or threads"
            ))),
        }
    }
}

/// The client's TLS settings: PEM files.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsOpts {
    /// TLS on every connection, also where the reference does not ask for
    /// it (a corbaloc:iiop: reference cannot; corbaloc:ssliop: and IORs
    /// with TAG_SSL_SEC_TRANS or a CSIv2 TLS mechanism do). Needs `ca`.
    pub tls: bool,
    /// CA certificates (PEM) that verify servers. With it, every
    /// connection whose reference offers TLS uses it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_ca: Option<std::path::PathBuf>,
    /// Our certificate chain (PEM), presented when a server asks for one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// The private key (PEM) of `tls_cert`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_key: Option<std::path::PathBuf>,
}

impl TlsOpts {
    /// The rustls client settings, when a CA was given.
    pub fn client(
        &self,
    ) -> Result<Option<std::sync::Arc<iiop_transport::tls::RustlsClientConfig>>> {
        let Some(ca) = &self.tls_ca else {
            return Ok(None);
        };
        let id = self.tls_cert.as_deref().zip(self.tls_key.as_deref());
        Ok(Some(
            iiop_transport::tls::client_config(ca, id).map_err(Error::local)?,
        ))
    }

    /// Which connections use TLS, with the settings read from the files:
    /// `tls` without `tls_ca` is an error here (the embedded server,
    /// which brings its own CA, is the caller's exception).
    pub fn mode(&self) -> Result<TlsMode> {
        Ok(match self.client()? {
            Some(c) if self.tls => TlsMode::Always(c),
            Some(c) => TlsMode::Offered(c),
            None => {
                if self.tls {
                    return Err(Error::Job(no_ca()));
                }
                TlsMode::Off
            }
        })
    }

    /// The files' consistency, before anything is read: a key needs its
    /// certificate and a certificate its key and a CA.
    pub fn validate(&self) -> Result<(), JobError> {
        check(self.tls_key.is_none() || self.tls_cert.is_some(), || {
            "`tls_key` needs `tls_cert`".into()
        })?;
        check(
            self.tls_cert.is_none() || (self.tls_key.is_some() && self.tls_ca.is_some()),
            || "`tls_cert` needs `tls_key` and `tls_ca`".into(),
        )?;
        for f in [&self.tls_ca, &self.tls_cert, &self.tls_key]
            .into_iter()
            .flatten()
        {
            readable(f)?;
        }
        Ok(())
    }
}

/// `tls` against a target with no CA to verify it.
fn no_ca() -> JobError {
    JobError::new(
        "`tls` with a `target` needs `tls_ca` (the CA that signed the server's \
         certificate); without `target` the embedded server makes its own",
    )
}

/// Whether `f` can be read; the error names it.
fn readable(f: &std::path::Path) -> Result<(), JobError> {
    std::fs::File::open(f)
        .map(drop)
        .map_err(|e| JobError::new(format!("cannot read {}: {e}", f.display())))
}

impl Default for TargetOpts {
    /// The embedded server, native byte order, 30 s timeout.
    fn default() -> Self {
        TargetOpts {
            target: None,
            giop: None,
            order: Order::Native,
            skeleton: Skeleton::Typed,
            server_threads: None,
            server_max_connections: None,
            server_model: ServerModel::Reactor,
            server_spin_limit: None,
            timeout: Duration::from_secs(30),
            fragment_size: None,
            waiting: WaitOpts::default(),
            tls: TlsOpts::default(),
            tls_vs_plain: false,
            bidir: false,
        }
    }
}

impl TargetOpts {
    /// What can be checked before anything starts: the reference reads
    /// and parses, the options fit together. `single_caller`: the job
    /// makes one call at a time on one connection (what waiting on read
    /// needs).
    pub fn validate(&self, single_caller: bool) -> Result<(), JobError> {
        check(!self.timeout.is_zero(), || {
            "`timeout` must be more than 0".into()
        })?;
        check(self.server_threads != Some(0), || {
            "`server_threads` must be at least 1".into()
        })?;
        check(self.fragment_size != Some(0), || {
            "`fragment_size` must be more than 0 bytes".into()
        })?;
        self.tls.validate()?;
        check(!self.bidir || self.giop.is_none_or(|v| v.is_12()), || {
            "`bidir` (bidirectional GIOP) needs GIOP 1.2: a BI_DIR_IIOP offer means nothing in an earlier version".into()
        })?;
        if let Some(r) = &self.target {
            check(!self.tls_vs_plain, || {
                "`tls_vs_plain` runs the embedded server twice (TLS and plain); against a `target`, \
                 run its plain and its TLS reference as two runs (docs/tls.md)"
                    .into()
            })?;
            check(self.server_spin_limit.is_none_or(|d| d.is_zero()), || {
                "`server_spin_limit` sets how the embedded server waits; with `target`, the server \
                 waits as it was started (`iiopbench serve --server-model threads --spin-limit …`)"
                    .into()
            })?;
            if self.tls.tls && self.tls.tls_ca.is_none() {
                return Err(no_ca());
            }
            check_reference(r)?;
        } else if self.server_spin_limit.is_some_and(|d| !d.is_zero()) {
            check(self.server_model == ServerModel::Threads, || {
                "`server_spin_limit` needs `server_model` threads: the reactor's threads \
                 serve many connections each and must not poll one of them"
                    .into()
            })?;
        }
        self.waiting.validate(single_caller)
    }
}

/// A reference that can be used: `IOR:` and `corbaloc:`/`corbaname:`
/// strings parse, a file exists and can be read (`-`, stdin, is read
/// when the run starts).
pub fn check_reference(r: &str) -> Result<(), JobError> {
    let t = r.trim();
    let written = ["IOR:", "ior:", "corbaloc:", "corbaname:"]
        .iter()
        .any(|p| t.starts_with(p));
    if t == "-" {
        return Ok(());
    }
    if !written {
        readable(std::path::Path::new(t))
            .map_err(|e| JobError::new(format!("`target` {}", e.message)))?;
    }
    Target::load(t)
        .map(drop)
        .map_err(|e| JobError::new(format!("`target`: {e}")))
}

/// How a client waits for replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WaitOpts {
    /// The strategy (see [`WaitStrategy`]).
    pub wait_strategy: WaitStrategy,
    /// With [`WaitStrategy::Spin`]: the longest one wait polls before it
    /// blocks in recv.
    #[serde(with = "crate::units::duration")]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
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
    /// Its name (`auto`, `read`, `spin`, `reactor`).
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
        crate::results::param(params, "wait_strategy", self.name());
        if let Some(d) = self.spin {
            crate::results::param(params, "spin_limit_us", d.as_secs_f64() * 1e6);
        }
    }
}

impl WaitOpts {
    /// Waiting on read (spinning or not) is one caller's strategy.
    pub fn validate(&self, single: bool) -> Result<(), JobError> {
        check(
            single || !matches!(self.wait_strategy, WaitStrategy::Read | WaitStrategy::Spin),
            || {
                format!(
                    "`wait_strategy` {} needs one caller making one call at a time: \
                     bench latency with one connection, one call in flight and no `rate`, \
                     or bench throughput without `breakdown`",
                    self.wait_strategy.name()
                )
            },
        )
    }

    /// The strategy for a run whose callers are `single` (one caller, one
    /// call at a time) and whose placement is `relation` (as recorded in
    /// results: `cross-cpu`, `same-cpu`, `overlapping`, `unknown`).
    pub fn resolve(&self, single: bool, relation: &str) -> Result<Waiting, JobError> {
        self.validate(single)?;
        let read = |spin: bool| Waiting {
            wait: Wait::Read,
            spin: spin.then_some(self.spin_limit),
        };
        Ok(match (self.wait_strategy, single) {
            (WaitStrategy::Auto, true) => read(relation == "cross-cpu"),
            (WaitStrategy::Read, _) => read(false),
            (WaitStrategy::Spin, _) => read(true),
            (WaitStrategy::Auto | WaitStrategy::Reactor, _) => Waiting {
                wait: Wait::Reactor,
                spin: None,
            },
        })
    }
}

/// The client configuration for these options (an error when a TLS file
/// cannot be used).
pub fn client_config(t: &TargetOpts, s: &Sockets) -> Result<ClientConfig> {
    let (send_buffer, recv_buffer) = s.buffers_u32();
    // Without a target the embedded server comes with settings of its own
    // (a CA made for the run), given to the session with it.
    let tls = match t.target {
        None if t.tls.tls_ca.is_none() || t.tls_vs_plain => TlsMode::Off,
        _ => t.tls.mode()?,
    };
    Ok(ClientConfig {
        tls,
        // Callbacks come over GIOP 1.2 connections only.
        version: t.giop.or(t.bidir.then_some(Version::V1_2)),
        callbacks: t.bidir.then(|| {
            Callbacks(std::sync::Arc::new(
                iiop_bench_idl::callback::CallbackServant::default(),
            ))
        }),
        order: t.order.byte_order(),
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
) -> Result<Resolved> {
    let Some(reference) = &t.target else {
        // `--tls`: the embedded server serves TLS only, with a CA and a
        // certificate made for this run; the client trusts that CA.
        let pki = match t.tls.tls || t.tls_vs_plain {
            true => Some(
                iiop_transport::tls::EphemeralPki::new()
                    .map_err(|e| Error::local(format!("embedded TLS server: {e}")))?,
            ),
            false => None,
        };
        let threads = t
            .server_threads
            .unwrap_or_else(|| cpus.server.as_ref().map(|c| c.len()).unwrap_or(1).max(1));
        let spin = t.server_spin_limit.filter(|d| !d.is_zero());
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
                ..iiop_transport::server::ServerConfig {
                    max_connections: t
                        .server_max_connections
                        .unwrap_or(iiop_transport::server::ServerConfig::default().max_connections),
                    ..Default::default()
                }
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
                .map_err(|e| Error::local(format!("embedded plain server: {e}")))?;
                Some((srv.refs().ior.clone(), srv))
            }
            false => None,
        };
        let srv = RunningServer::start(opts)
            .map_err(|e| Error::local(format!("embedded server: {e}")))?;
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
    let parsed = Target::load(reference).map_err(|e| Error::job(format!("`target`: {e}")))?;
    let kind = match &parsed {
        Target::Ior(_) => "ior",
        Target::Corbaloc(_) => "corbaloc",
        Target::Corbaname(_) => "corbaname",
    };
    let start = Instant::now();
    let client = Client::new(cfg.clone());
    let ior = resolve_target(&client, &parsed)
        .await
        .map_err(|e| Error::target(format!("resolving {kind} target: {e}")))?;
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
    let version = p
        .as_ref()
        .map(|p| version_for(p, t.giop))
        .or(t.giop)
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
