//! What a benchmark talks to: a reference given by the user (IOR string,
//! `corbaloc:`, `corbaname:`, a file holding one, or `-` for stdin), or —
//! with no `--target` — our reference server embedded in this process on a
//! runtime and threads of its own (pinned with `--server-cpus`). Also the
//! client configuration every bench command shares.

use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use iiop_cdr::ByteOrder;
use iiop_giop::ior::{orb_type_name, Ior};
use iiop_giop::transport::client::{Client, ClientConfig};
use iiop_giop::transport::naming::resolve_target;
use iiop_giop::{Target, Version};
use iiop_servers::client::Wait;
use iiop_servers::run::{RunningServer, ServerOptions};

use crate::opts::{SkeletonArg, SocketArgs};
use crate::placement::Cpus;
use crate::results::TargetInfo;
use crate::units::parse_duration;

/// Target and protocol options shared by the bench commands.
#[derive(Debug, Clone, Args)]
pub struct TargetOpts {
    /// The server: `IOR:…`, `corbaloc:…`, `corbaname:…`, a file holding
    /// one, or `-` for stdin. Without it, our reference server runs
    /// embedded in this process (own runtime and threads).
    #[arg(long, short, value_name = "REF")]
    pub target: Option<String>,
    /// GIOP version to speak (default: the reference's; a corbaloc
    /// without `1.2@` means 1.0, as in every ORB).
    #[arg(long, value_parser = parse_version, value_name = "1.0|1.1|1.2")]
    pub giop: Option<Version>,
    /// Byte order of our requests.
    #[arg(long, value_enum, default_value_t = OrderArg::Native)]
    pub order: OrderArg,
    /// Skeleton of the embedded server.
    #[arg(long, value_enum, default_value_t = SkeletonArg::Typed)]
    pub skeleton: SkeletonArg,
    /// Threads of the embedded server (default: the number of server CPUs,
    /// 1 when pinned to one).
    #[arg(long, value_name = "N")]
    pub server_threads: Option<usize>,
    /// How the embedded server waits for requests: tokio tasks (reactor)
    /// or a thread per connection blocking in recv (threads).
    #[arg(long, value_enum, default_value_t = crate::opts::ServerModelArg::Reactor)]
    pub server_model: crate::opts::ServerModelArg,
    /// Timeout of every call (and of connecting).
    #[arg(long, value_parser = parse_duration, default_value = "30s", value_name = "DURATION")]
    pub timeout: Duration,
    /// Fragment our GIOP 1.2 requests above this size (for ORBs with
    /// small message limits).
    #[arg(long, value_parser = crate::units::parse_size, value_name = "SIZE")]
    pub fragment_size: Option<u64>,
    /// Phase timing (E0.5, `--breakdown`): the client times its calls, and
    /// an embedded server adds its phases here. Not a flag of its own.
    #[arg(skip)]
    pub phases: Option<std::sync::Arc<iiop_giop::transport::ServerPhases>>,
    /// How the client waits for replies.
    #[command(flatten)]
    pub waiting: WaitOpts,
    /// Set by commands whose run is one caller making one call at a time
    /// (what `--wait-strategy read` needs). Not a flag of its own.
    #[arg(skip)]
    pub single_caller: bool,
    /// IIOP over TLS.
    #[command(flatten)]
    pub tls: TlsOpts,
}

/// The client's TLS settings (`--tls`, `--tls-ca`, `--tls-cert`,
/// `--tls-key`): PEM files.
#[derive(Debug, Clone, Default, Args)]
pub struct TlsOpts {
    /// TLS on every connection, also where the reference does not ask for
    /// it (a corbaloc:iiop: reference cannot; corbaloc:ssliop: and IORs
    /// with TAG_SSL_SEC_TRANS or a CSIv2 TLS mechanism do). Needs --tls-ca.
    #[arg(long, requires = "tls_ca")]
    pub tls: bool,
    /// CA certificates (PEM) that verify servers. With it, every
    /// connection whose reference offers TLS uses it.
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<std::path::PathBuf>,
    /// Our certificate chain (PEM), presented when a server asks for one.
    #[arg(long, value_name = "FILE", requires_all = ["tls_key", "tls_ca"])]
    pub tls_cert: Option<std::path::PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
}

impl TlsOpts {
    /// The rustls client settings, when a CA was given.
    pub fn client(
        &self,
    ) -> anyhow::Result<Option<std::sync::Arc<iiop_giop::transport::tls::RustlsClientConfig>>> {
        let Some(ca) = &self.tls_ca else {
            return Ok(None);
        };
        let id = self.tls_cert.as_deref().zip(self.tls_key.as_deref());
        Ok(Some(iiop_giop::transport::tls::client_config(ca, id)?))
    }
}

/// How a client waits for replies (`--wait-strategy`, `--spin-limit`).
#[derive(Debug, Clone, Args)]
pub struct WaitOpts {
    /// How the client waits for replies: `read` blocks the calling thread
    /// in recv, one call at a time (one system call and one wake-up less
    /// per reply than an event loop, like omniORB's and TAO's wait-on-read
    /// clients); `spin` is `read` that first polls without blocking for
    /// up to --spin-limit, for a reply or for room to send (no wake-up at
    /// all: for a client with a CPU of its own); `reactor` waits on the async runtime (any number of calls
    /// in flight); `auto` is `spin` where one caller makes one call at a
    /// time and the placement keeps client and server on different CPUs
    /// (--pin cross, or --client-cpus and --server-cpus apart), `read`
    /// where one caller does so otherwise (latency with one connection,
    /// one call in flight and no --rate; throughput without --breakdown),
    /// `reactor` elsewhere.
    #[arg(long, value_enum, default_value_t = WaitArg::Auto, value_name = "WAIT")]
    pub wait_strategy: WaitArg,
    /// With `spin`: the longest one wait polls before it blocks in recv
    /// (at most the 1/16 of --timeout the client looks at deadlines by).
    #[arg(long, value_parser = parse_duration, default_value = "1ms", value_name = "DURATION")]
    pub spin_limit: Duration,
}

/// `--wait-strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WaitArg {
    Auto,
    Read,
    Spin,
    Reactor,
}

/// A resolved `--wait-strategy`: how connections wait, and for how long
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
            (WaitArg::Auto, true) => Ok(read(relation == "cross-cpu")),
            (WaitArg::Read, true) => Ok(read(false)),
            (WaitArg::Spin, true) => Ok(read(true)),
            (WaitArg::Auto | WaitArg::Reactor, _) => Ok(Waiting {
                wait: Wait::Reactor,
                spin: None,
            }),
            (WaitArg::Read | WaitArg::Spin, false) => anyhow::bail!(
                "--wait-strategy {} needs one caller making one call at a time: \
                 bench latency with one connection, one call in flight and no --rate, \
                 or bench throughput without --breakdown",
                self.wait_strategy
                    .to_possible_value()
                    .expect("no variant is skipped")
                    .get_name()
            ),
        }
    }
}

impl TargetOpts {
    /// The wait strategy this run uses, the placement being `relation`.
    pub fn wait(&self, relation: &str) -> anyhow::Result<Waiting> {
        self.waiting.resolve(self.single_caller, relation)
    }
}

/// `--order`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OrderArg {
    Native,
    Big,
    Little,
}

impl OrderArg {
    /// As a CDR byte order.
    pub fn order(self) -> ByteOrder {
        match self {
            OrderArg::Native => ByteOrder::NATIVE,
            OrderArg::Big => ByteOrder::Big,
            OrderArg::Little => ByteOrder::Little,
        }
    }
}

fn parse_version(s: &str) -> Result<Version, String> {
    match s {
        "1.0" => Ok(Version::V1_0),
        "1.1" => Ok(Version::V1_1),
        "1.2" => Ok(Version::V1_2),
        _ => Err(format!(
            "unsupported GIOP version {s:?}; use 1.0, 1.1 or 1.2"
        )),
    }
}

/// The client configuration for these options (an error when a TLS file
/// cannot be used).
pub fn client_config(t: &TargetOpts, s: &SocketArgs) -> anyhow::Result<ClientConfig> {
    Ok(ClientConfig {
        tls: t.tls.client()?,
        tls_always: t.tls.tls,
        version: t.giop,
        order: t.order.order(),
        nodelay: s.nodelay,
        send_buffer: s.sndbuf.map(|v| v.min(u32::MAX as u64) as u32),
        recv_buffer: s.rcvbuf.map(|v| v.min(u32::MAX as u64) as u32),
        connect_timeout: t.timeout,
        request_timeout: Some(t.timeout),
        fragment_size: t.fragment_size.map(|v| v as usize),
        phase_timing: t.phases.is_some(),
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
}

/// Resolve the target (starting the embedded server if none was given).
pub async fn resolve(t: &TargetOpts, s: &SocketArgs, cpus: &Cpus) -> anyhow::Result<Resolved> {
    let Some(reference) = &t.target else {
        if t.tls.tls {
            anyhow::bail!(
                "--tls needs a --target: the embedded server has no certificate (run `iiopbench \
                 serve --tls-cert FILE --tls-key FILE` and give its IOR)"
            );
        }
        let threads = t
            .server_threads
            .unwrap_or_else(|| cpus.server.as_ref().map(|c| c.len()).unwrap_or(1).max(1));
        let opts = ServerOptions {
            skeleton: t.skeleton.skeleton(),
            model: t.server_model.model(),
            // Thread per connection with a CPU apart: poll while oneways
            // stream in, as the raw-TCP baseline's server does.
            stream_spin: cpus.apart().then_some(crate::rawtcp::STREAM_SPIN),
            threads,
            cpus: Some(cpus.server_or_all()),
            config: iiop_giop::transport::server::ServerConfig {
                nodelay: s.nodelay,
                send_buffer: s.sndbuf.map(|v| v.min(u32::MAX as u64) as u32),
                recv_buffer: s.rcvbuf.map(|v| v.min(u32::MAX as u64) as u32),
                phases: t.phases.clone(),
                ..Default::default()
            },
            ..ServerOptions::default()
        };
        let srv =
            RunningServer::start(opts).map_err(|e| anyhow::anyhow!("embedded server: {e}"))?;
        let ior = srv.refs().ior.clone();
        let mut info = describe(&ior, "embedded", "embedded", t);
        let model = match t.server_model.model() {
            iiop_servers::run::ServerModel::Reactor => format!(
                "own tokio runtime, {threads} thread{}",
                if threads == 1 { "" } else { "s" }
            ),
            iiop_servers::run::ServerModel::Threads => "a thread per connection".to_string(),
        };
        info.isolation = Some(format!(
            "embedded in this process: {model}, CPUs {}",
            cpus.server
                .as_deref()
                .map(crate::sysinfo::format_cpu_list)
                .unwrap_or_else(|| "unpinned".into())
        ));
        info.skeleton = Some(t.skeleton.skeleton().name().into());
        info.server_model = Some(t.server_model.model().name().into());
        return Ok(Resolved {
            ior,
            info,
            embedded: Some(srv),
            resolve_seconds: 0.0,
        });
    };
    let parsed = Target::load(reference).map_err(|e| anyhow::anyhow!("--target: {e}"))?;
    let kind = match &parsed {
        Target::Ior(_) => "ior",
        Target::Corbaloc(_) => "corbaloc",
        Target::Corbaname(_) => "corbaname",
    };
    let start = Instant::now();
    let client = Client::new(client_config(t, s)?);
    let ior = resolve_target(&client, &parsed)
        .await
        .map_err(|e| anyhow::anyhow!("resolving {kind} target: {e}"))?;
    let resolve_seconds = start.elapsed().as_secs_f64();
    Ok(Resolved {
        info: describe(&ior, kind, &shorten(reference), t),
        ior,
        embedded: None,
        resolve_seconds,
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
