//! The flag groups several commands share (target and protocol, placement,
//! sockets, output, the workload run rule, the IDL operation), their value
//! types, and their conversion into the engine's typed option groups. A
//! leaf: it knows the engine and clap, nothing of the commands.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use iiop_bench_idl::bench::elements::{CallMode, Elem};
use iiop_giop::Version;
use iiopbench_engine::bench::closed::ServiceKind;
use iiopbench_engine::bench::stats::Dist;
use iiopbench_engine::bench::tcp_baseline::TcpPattern;
use iiopbench_engine::bench::workload::{parse_relative, RunRule};
use iiopbench_engine::dynamic::{GenSpec, IdlOp, JsonArgs};
use iiopbench_engine::options::{CpuList, OnError, Pin, PlacementOpts, Sockets};
use iiopbench_engine::target::{Order, TargetOpts, TlsOpts, WaitOpts, WaitStrategy};
use iiopbench_engine::units::{parse_duration, parse_size};

/// A GIOP version as users write it (`1.0`, `1.1`, `1.2`): the one
/// parser of `--giop` everywhere.
pub fn parse_giop(s: &str) -> Result<Version, String> {
    iiopbench_engine::target::parse_giop_version(s).map_err(|e| e.to_string())
}

/// A CPU list as taskset takes it (`0-1,3`).
pub fn parse_cpus(s: &str) -> Result<CpuList, String> {
    s.parse::<CpuList>().map_err(|e| e.to_string())
}

/// Element types as a comma list of bench.idl's tokens, or `all`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElemList(pub Vec<Elem>);

impl std::str::FromStr for ElemList {
    type Err = String;

    fn from_str(s: &str) -> Result<ElemList, String> {
        iiopbench_engine::bench::parse_types(s)
            .map(ElemList)
            .map_err(|e| e.to_string())
    }
}

/// Call modes as a comma list (`oneway,twoway,echo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeList(pub Vec<CallMode>);

impl std::str::FromStr for ModeList {
    type Err = String;

    fn from_str(s: &str) -> Result<ModeList, String> {
        iiopbench_engine::bench::parse_modes(s)
            .map(ModeList)
            .map_err(|e| e.to_string())
    }
}

/// Where the client and an embedded server run.
#[derive(Debug, Clone, Args)]
pub struct PlacementArgs {
    /// Placement of client and embedded server: `auto` (the default:
    /// when this run starts the server, client and server on two different
    /// CPUs where there are two, else both on one; a client facing a server
    /// it did not start is left where the kernel puts it), `same` (both on
    /// the first available CPU), `cross` (client on the first, server on
    /// the second) or `none` (wherever the kernel puts them).
    #[arg(long, value_enum, default_value_t = PinArg::Auto)]
    pub pin: PinArg,
    /// Pin the client to these CPUs (taskset syntax, e.g. `0` or `0-1`);
    /// overrides --pin.
    #[arg(long, value_name = "CPUS", value_parser = parse_cpus)]
    pub client_cpus: Option<CpuList>,
    /// Pin the embedded server to these CPUs; overrides --pin. With
    /// --target, where that server runs (pin it yourself): recorded, and
    /// what `--wait-strategy auto` decides by.
    #[arg(long, value_name = "CPUS", value_parser = parse_cpus)]
    pub server_cpus: Option<CpuList>,
    /// Measure every case as N independent runs, interleaved across cases
    /// (run 1 of each case, then run 2 …); the table shows mean ± 95 %
    /// interval across runs. Default 7 for throughput, latency and tcp, 1
    /// for the other commands.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: Option<u32>,
}

impl PlacementArgs {
    /// As the engine's options.
    pub fn engine(&self) -> PlacementOpts {
        PlacementOpts {
            pin: match self.pin {
                PinArg::Auto => Pin::Auto,
                PinArg::None => Pin::None,
                PinArg::Same => Pin::Same,
                PinArg::Cross => Pin::Cross,
            },
            client_cpus: self.client_cpus.clone(),
            server_cpus: self.server_cpus.clone(),
            runs: self.runs,
        }
    }
}

/// `--pin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PinArg {
    Auto,
    None,
    Same,
    Cross,
}

/// Socket options, applied the same way to both ends we control.
#[derive(Debug, Clone, Args)]
pub struct SocketArgs {
    /// TCP_NODELAY (Nagle off) on every connection.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub nodelay: bool,
    /// SO_SNDBUF in bytes (e.g. 256KiB); kernel default when absent.
    #[arg(long, value_parser = parse_size, value_name = "SIZE")]
    pub sndbuf: Option<u64>,
    /// SO_RCVBUF in bytes; kernel default when absent.
    #[arg(long, value_parser = parse_size, value_name = "SIZE")]
    pub rcvbuf: Option<u64>,
}

impl SocketArgs {
    /// As the engine's options.
    pub fn engine(&self) -> Sockets {
        Sockets {
            nodelay: self.nodelay,
            sndbuf: self.sndbuf,
            rcvbuf: self.rcvbuf,
        }
    }
}

/// Where results go.
#[derive(Debug, Clone, Default, Args)]
pub struct OutputOpts {
    /// Write the results as JSON (docs/results-schema.md); `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one CSV row per case.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write an HdrHistogram interval log (one histogram per case).
    #[arg(long, value_name = "FILE")]
    pub hlog: Option<PathBuf>,
    /// No progress and no table (errors still go to stderr).
    #[arg(long, short)]
    pub quiet: bool,
    /// Print every column in one table (the default fits 100 columns: a
    /// table per mode, the main figures only).
    #[arg(long)]
    pub wide: bool,
}

impl OutputOpts {
    /// Only a JSON file (commands whose results have no CSV or interval
    /// log of their own: agents, lab agents, lab matrix).
    pub fn json_only(json: Option<PathBuf>, quiet: bool) -> Self {
        OutputOpts {
            json,
            csv: None,
            hlog: None,
            quiet,
            wide: false,
        }
    }

    /// Whether tables for people go to stdout: not when quiet, nor when
    /// the JSON goes there (`--json -`), which must stay parseable.
    pub fn shows_tables(&self) -> bool {
        !self.quiet && self.json.as_deref() != Some(std::path::Path::new("-"))
    }
}

/// The server skeletons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SkeletonArg {
    Typed,
    Dynamic,
}

impl SkeletonArg {
    /// As the server's type.
    pub fn skeleton(self) -> iiop_bench_idl::reference::Skeleton {
        match self {
            SkeletonArg::Typed => iiop_bench_idl::reference::Skeleton::Typed,
            SkeletonArg::Dynamic => iiop_bench_idl::reference::Skeleton::Dynamic,
        }
    }
}

/// How our server waits for requests (`--server-model`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ServerModelArg {
    /// One tokio task per connection on the server's threads.
    #[default]
    Reactor,
    /// One thread per connection, blocking in recv (omniORB's default).
    Threads,
}

impl ServerModelArg {
    /// As the server's type.
    pub fn model(self) -> iiop_transport::hosted::ServerModel {
        match self {
            ServerModelArg::Reactor => iiop_transport::hosted::ServerModel::Reactor,
            ServerModelArg::Threads => iiop_transport::hosted::ServerModel::Threads,
        }
    }
}

/// Target and protocol options shared by the bench commands.
#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// The server: `IOR:…`, `corbaloc:…`, `corbaname:…`, a file holding
    /// one, or `-` for stdin. Without it, our reference server runs
    /// embedded in this process (own runtime and threads).
    #[arg(long, short, value_name = "REF")]
    pub target: Option<String>,
    /// GIOP version to speak (default: the reference's; a corbaloc
    /// without `1.2@` means 1.0, as in every ORB).
    #[arg(long, value_parser = parse_giop, value_name = "1.0|1.1|1.2")]
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
    #[arg(long, value_enum, default_value_t = ServerModelArg::Reactor)]
    pub server_model: ServerModelArg,
    /// With --server-model threads: after each message, replies too, the
    /// embedded server's connection thread polls up to this long for the
    /// next request before it blocks in recv, as `serve --spin-limit` and
    /// the raw-TCP baseline's server do: the fastest round trip, at the
    /// price of a CPU per connection while calls come.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, value_name = "DURATION")]
    pub server_spin_limit: Option<Duration>,
    /// Timeout of every call (and of connecting).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "30s", value_name = "DURATION")]
    pub timeout: Duration,
    /// Fragment our GIOP 1.2 requests above this size (for ORBs with
    /// small message limits).
    #[arg(long, value_parser = parse_size, value_name = "SIZE")]
    pub fragment_size: Option<u64>,
    /// How the client waits for replies.
    #[command(flatten)]
    pub waiting: WaitArgs,
    /// IIOP over TLS.
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Every case twice, over plain TCP and over TLS, interleaved across
    /// --runs, with a TLS/plain column: the embedded server serves both
    /// (implies --tls; no --target).
    #[arg(long)]
    pub tls_vs_plain: bool,
    /// Offer every connection for callbacks (bidirectional GIOP 1.2) and
    /// serve bench.idl's Callback object on it, over the connection
    /// itself (notify(n) answers n+1): what call_back needs. Implies
    /// --giop 1.2.
    #[arg(long)]
    pub bidir: bool,
}

impl TargetArgs {
    /// As the engine's options.
    pub fn engine(&self) -> TargetOpts {
        TargetOpts {
            target: self.target.clone(),
            giop: self.giop,
            order: self.order.order(),
            skeleton: self.skeleton.skeleton(),
            server_threads: self.server_threads,
            server_max_connections: None,
            server_model: self.server_model.model(),
            server_spin_limit: self.server_spin_limit,
            timeout: self.timeout,
            fragment_size: self.fragment_size,
            waiting: self.waiting.engine(),
            tls: self.tls.engine(),
            tls_vs_plain: self.tls_vs_plain,
            bidir: self.bidir,
        }
    }
}

/// The client's TLS settings (`--tls`, `--tls-ca`, `--tls-cert`,
/// `--tls-key`): PEM files.
#[derive(Debug, Clone, Default, Args)]
pub struct TlsArgs {
    /// TLS on every connection, also where the reference does not ask for
    /// it (a corbaloc:iiop: reference cannot; corbaloc:ssliop: and IORs
    /// with TAG_SSL_SEC_TRANS or a CSIv2 TLS mechanism do). Needs --tls-ca
    /// with --target; without, the embedded server serves TLS with a
    /// certificate made for the run.
    #[arg(long)]
    pub tls: bool,
    /// CA certificates (PEM) that verify servers. With it, every
    /// connection whose reference offers TLS uses it.
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// Our certificate chain (PEM), presented when a server asks for one.
    #[arg(long, value_name = "FILE", requires_all = ["tls_key", "tls_ca"])]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

impl TlsArgs {
    /// As the engine's options.
    pub fn engine(&self) -> TlsOpts {
        TlsOpts {
            tls: self.tls,
            tls_ca: self.tls_ca.clone(),
            tls_cert: self.tls_cert.clone(),
            tls_key: self.tls_key.clone(),
        }
    }
}

/// How a client waits for replies (`--wait-strategy`, `--spin-limit`).
#[derive(Debug, Clone, Args)]
pub struct WaitArgs {
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
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "1ms", value_name = "DURATION")]
    pub spin_limit: Duration,
}

impl WaitArgs {
    /// As the engine's options.
    pub fn engine(&self) -> WaitOpts {
        WaitOpts {
            wait_strategy: match self.wait_strategy {
                WaitArg::Auto => WaitStrategy::Auto,
                WaitArg::Read => WaitStrategy::Read,
                WaitArg::Spin => WaitStrategy::Spin,
                WaitArg::Reactor => WaitStrategy::Reactor,
            },
            spin_limit: self.spin_limit,
        }
    }
}

/// `--wait-strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WaitArg {
    Auto,
    Read,
    Spin,
    Reactor,
}

/// `--order`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OrderArg {
    Native,
    Big,
    Little,
}

impl OrderArg {
    /// As the engine's byte order.
    pub fn order(self) -> Order {
        match self {
            OrderArg::Native => Order::Native,
            OrderArg::Big => Order::Big,
            OrderArg::Little => Order::Little,
        }
    }
}

/// The flag block every measuring command (the ten benches and `soak`)
/// shares, flattened into each: sockets, placement and output.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub socket: SocketArgs,
    #[command(flatten)]
    pub placement: PlacementArgs,
    #[command(flatten)]
    pub output: OutputOpts,
    #[command(flatten)]
    pub metrics: MetricsArgs,
    /// A gate the result must pass, for CI: `p99<2ms`, `p50<=500us`,
    /// `mean<1ms`, `max<10ms`, `errors=0`, `throughput>5000/s`,
    /// `knee>20k/s` (repeatable). Latencies and throughput are checked in
    /// every case, errors over the whole run, the knee on a load sweep;
    /// the outcomes are listed after the table
    /// and written to the JSON, and a failed gate makes the exit status 3.
    #[arg(long = "threshold", value_name = "EXPR", value_parser = crate::gates::parse)]
    pub thresholds: Vec<iiopbench_engine::threshold::Threshold>,
}

/// `--metrics-listen` and `--metrics-linger`: the live metrics of a bench
/// command or of `serve`, served for Prometheus while it runs
/// (docs/metrics.md; [`crate::metrics`] starts the exporter).
#[derive(Debug, Clone, Default, Args)]
pub struct MetricsArgs {
    /// Serve live counters and latency histograms at
    /// http://HOST:PORT/metrics while this runs, in the Prometheus or
    /// OpenMetrics text format (port 0 picks a free port; the address is
    /// printed on stderr as `metrics: URL`).
    #[arg(long, value_name = "HOST:PORT")]
    pub metrics_listen: Option<String>,
    /// With --metrics-listen: keep serving this long after the run has
    /// ended, so that a last scrape sees the final counts.
    #[arg(long, value_parser = parse_duration, default_value = "0s", value_name = "DURATION", requires = "metrics_listen")]
    pub metrics_linger: Duration,
}

/// The flag block the workload benches (`closed`, `params`, `dispatch`,
/// `packing`, `balance`) share beyond [`BenchArgs`]: the target and the
/// run rule.
#[derive(Debug, Clone, Args)]
pub struct WorkloadArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub bench: BenchArgs,
}

/// Options every workload command shares: how long, the CI rule, batches,
/// seed.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Measure each case for this long (ignored with --until-ci).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "2s", value_name = "DURATION")]
    pub duration: Duration,
    /// Run each case in batches until the 95 % CI of mean response time
    /// is within ±this (e.g. `5%`), or --max-duration.
    #[arg(long, value_parser = parse_relative, value_name = "PERCENT")]
    pub until_ci: Option<f64>,
    /// Time cap per case with --until-ci.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "60s", value_name = "DURATION")]
    pub max_duration: Duration,
    /// Batch length for the batch means.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "200ms", value_name = "DURATION")]
    pub batch: Duration,
    /// Fewest batches before the CI rule may stop a run.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub min_batches: usize,
    /// Unrecorded time at the start of each case (connections warm).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "100ms", value_name = "DURATION")]
    pub warmup_duration: Duration,
    /// Seed of every random draw (think and service times).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub seed: u64,
}

impl RunArgs {
    /// As the engine's run rule.
    pub fn engine(&self) -> RunRule {
        RunRule {
            duration: self.duration,
            until_ci: self.until_ci,
            max_duration: self.max_duration,
            batch: self.batch,
            min_batches: self.min_batches,
            warmup_duration: self.warmup_duration,
            seed: self.seed,
        }
    }
}

/// The IDL options of `bench latency` / `bench throughput`.
#[derive(Debug, Clone, Args, Default)]
pub struct IdlArgs {
    /// Call an operation of this IDL file instead of bench.idl's typed
    /// operations; `--op` then names it as `Module::Interface::op`.
    #[arg(long, value_name = "FILE")]
    pub idl: Option<PathBuf>,
    /// Directory searched for `#include`d IDL files (repeatable).
    #[arg(short = 'I', long = "include", value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// Arguments (in/inout) as JSON: an object by parameter name or an
    /// array in order; `@FILE` reads it from a file. Missing ones are
    /// generated (see --gen).
    #[arg(long, value_name = "JSON")]
    pub args: Option<String>,
    /// How to generate arguments not given by --args, comma-separated
    /// `key=value`: `len=N` (sequence length, default 16), `str=N` (string
    /// length, default 8), `depth=N` (length of nested sequences, default
    /// 2), `seed=N` (default 1). Contents are deterministic.
    #[arg(long, value_name = "SPEC", default_value = "")]
    pub gen: String,
    /// Decode every reply (result and out parameters) and fail on one that
    /// does not decode (off: replies are only checked for NO_EXCEPTION).
    #[arg(long)]
    pub check_reply: bool,
}

impl IdlArgs {
    /// The IDL operation these flags and `op` (the command's `--op`) ask
    /// for: none without `--idl` (then `op` may not name an IDL
    /// operation).
    pub fn op(&self, op: Option<&str>) -> anyhow::Result<Option<IdlOp>> {
        let idl_op = op.filter(|o| o.contains("::"));
        let Some(file) = &self.idl else {
            if let Some(o) = idl_op {
                anyhow::bail!("--op {o} names an IDL operation: give the IDL with --idl FILE");
            }
            return Ok(None);
        };
        let Some(op) = idl_op else {
            anyhow::bail!("--idl needs --op Module::Interface::op");
        };
        Ok(Some(IdlOp {
            idl: file.clone(),
            include: self.include.clone(),
            op: op.to_string(),
            args: self.args.as_deref().map(idl_args).transpose()?,
            gen: GenSpec::parse(&self.gen).map_err(|e| anyhow::anyhow!("{e}"))?,
            check_reply: self.check_reply,
        }))
    }
}

/// `--args`: inline JSON, or `@FILE`.
pub fn idl_args(s: &str) -> anyhow::Result<JsonArgs> {
    Ok(match s.strip_prefix('@') {
        Some(f) => JsonArgs::File(PathBuf::from(f)),
        None => JsonArgs::Json(
            serde_json::from_str(s).map_err(|e| anyhow::anyhow!("--args is not JSON: {e}"))?,
        ),
    })
}

/// What to do when a call fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnErrorArg {
    /// End the run at the first failed call (the default).
    Stop,
    /// Count the failure by kind and go on.
    Continue,
}

impl From<OnErrorArg> for OnError {
    fn from(a: OnErrorArg) -> OnError {
        match a {
            OnErrorArg::Stop => OnError::Stop,
            OnErrorArg::Continue => OnError::Continue,
        }
    }
}

/// Fixed at the mean, or exponential with that mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DistArg {
    Fixed,
    Exp,
}

impl From<DistArg> for Dist {
    fn from(a: DistArg) -> Dist {
        match a {
            DistArg::Fixed => Dist::Fixed,
            DistArg::Exp => Dist::Exp,
        }
    }
}

/// How the server spends the service time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ServiceKindArg {
    /// Wait without using CPU (KIND_SLEEP).
    Sleep,
    /// Burn CPU (KIND_SPIN), like the study's for loop.
    Spin,
}

impl From<ServiceKindArg> for ServiceKind {
    fn from(a: ServiceKindArg) -> ServiceKind {
        match a {
            ServiceKindArg::Sleep => ServiceKind::Sleep,
            ServiceKindArg::Spin => ServiceKind::Spin,
        }
    }
}

/// `bench tcp --pattern`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PatternArg {
    /// One-way stream of frames, confirmed by the server's byte count.
    Stream,
    /// Request/reply of the same size (echo).
    Pingpong,
    /// Request of the size, an empty reply: a twoway call's round trip.
    Ack,
    /// Stream and ping-pong (echo).
    Both,
}

impl From<PatternArg> for TcpPattern {
    fn from(a: PatternArg) -> TcpPattern {
        match a {
            PatternArg::Stream => TcpPattern::Stream,
            PatternArg::Pingpong => TcpPattern::Pingpong,
            PatternArg::Ack => TcpPattern::Ack,
            PatternArg::Both => TcpPattern::Both,
        }
    }
}
