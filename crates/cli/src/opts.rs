//! Command-line options, parsed into typed structs before anything runs.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use iiop_cdr::ByteOrder;
use iiop_giop::Version;
use iiopbench_engine::bench::closed::ServiceKind;
use iiopbench_engine::bench::stats::Dist;
use iiopbench_engine::bench::workload::{parse_relative, RunOpts};
use iiopbench_engine::bench::OnError;
use iiopbench_engine::dynamic::IdlOpts;
use iiopbench_engine::options::{Pin, PlacementOpts, Sockets};
use iiopbench_engine::results::Results;
use iiopbench_engine::target::{TargetOpts, TlsOpts, WaitOpts, WaitStrategy};
use iiopbench_engine::tcp::TcpPattern;
use iiopbench_engine::units::{parse_duration, parse_size};

/// The examples every `--help` ends with (two or three real command lines
/// each; tests/help.rs parses every one of them).
pub mod examples {
    pub const ROOT: &str = "\
Examples:
  iiopbench bench latency --op echo --size 64..64KiB*4 --json lat.json   # against our embedded server
  iiopbench serve --listen 127.0.0.1:2809 --ior-file bench.ior
  iiopbench bench throughput --target bench.ior --size 1KiB..128KiB --baseline";

    pub const BENCH: &str = "\
Examples:
  iiopbench bench throughput --size 1KiB..128KiB --baseline
  iiopbench bench latency --target bench.ior --count 10000 --json lat.json
  iiopbench bench closed --clients 8 --think 5ms --service 2ms --until-ci 5%";

    pub const BENCH_THROUGHPUT: &str = "\
Examples:
  iiopbench bench throughput --type octet,double --size 1KiB..64KiB --mode oneway,twoway
  iiopbench bench throughput --size 64KiB --baseline --pin cross --json tp.json   # + --tls-vs-plain: also over TLS
  iiopbench bench throughput --target bench.ior --total 64MiB --min-duration 500ms --timeout 10s";

    pub const BENCH_LATENCY: &str = "\
Examples:
  iiopbench bench latency --op echo --type long --size 64..64KiB*4 --warmup 1000
  iiopbench bench latency --tls-vs-plain --baseline --op echo --size 64B,4KiB --pin cross   # plain and TLS side by side
  iiopbench bench latency --idl fixtures/idl/bench.idl --op Bench::Perf::echo_long --gen len=1000";

    pub const BENCH_CONNECT: &str = "\
Examples:
  iiopbench bench connect --count 500
  iiopbench bench connect --target bench.ior --count 200 --pause 10ms --json connect.json
  iiopbench bench connect --target tls.ior --tls-ca ca.pem --count 200   # + the TLS handshake step";

    pub const BENCH_TCP: &str = "\
Examples:
  iiopbench bench tcp --size 1KiB..128KiB
  iiopbench bench tcp --pattern pingpong --size 1,1KiB --count 10000 --warmup 1000
  iiopbench bench tcp --baseline-target 10.0.0.2:5555 --total 256MiB   # `serve --raw-tcp 0.0.0.0:5555` there";

    pub const BENCH_CLOSED: &str = "\
Examples:
  iiopbench bench closed --clients 8 --think 5ms --service 2ms --until-ci 5%
  iiopbench bench closed --clients 4 --think 500ms --think-dist exp --service 10ms --duration 30s --warmup-duration 1s";

    pub const BENCH_SETUP: &str = "\
Examples:
  iiopbench bench setup --count 50
  iiopbench bench setup --spawn 'iiopbench serve --listen 127.0.0.1:{port}' --spawn-count 5 --spawn-timeout 30s";

    pub const BENCH_PARAMS: &str = "\
Examples:
  iiopbench bench params --elements 1,100,10000 --until-ci 5%
  iiopbench bench params --target bench.ior --duration 5s --json params.json";

    pub const BENCH_DISPATCH: &str = "\
Examples:
  iiopbench bench dispatch --points 6 --until-ci 5%
  iiopbench bench dispatch --no-500 --duration 1s";

    pub const BENCH_PACKING: &str = "\
Examples:
  iiopbench bench packing --pairs 1,2,4,8 --until-ci 5%
  iiopbench bench packing --servers child --service 1ms --duration 2s";

    pub const BENCH_BALANCE: &str = "\
Examples:
  iiopbench bench balance --systems 4x2 --service 10ms,40ms --think 50ms --strategies 1,3,5
  iiopbench bench balance --until-ci 5% --max-duration 2m --json balance.json";

    pub const SERVE: &str = "\
Examples:
  iiopbench serve --listen 127.0.0.1:2809 --ior-file bench.ior
  iiopbench serve --tls-cert server.pem --tls-key server.key --tls-client-ca ca.pem --ior-file tls.ior
  iiopbench serve --idl fixtures/idl/bench.idl --interface Bench::Perf --behaviour sink --ior-file sink.ior";

    pub const SOAK: &str = "\
Examples:
  iiopbench soak --duration 10m --connections 32 --json soak.json
  iiopbench soak --target bench.ior --server-pid 4242 --duration 1h --interval 5m";

    pub const CALL: &str = "\
Examples:
  iiopbench call --idl fixtures/idl/bench.idl --op Bench::Perf::echo_long --args '{\"s\": [1, 2, 3]}'
  iiopbench call --idl my.idl --target my.ior --op Mod::Iface::op --gen len=4 --compact";

    pub const ORBS: &str = "\
Examples:
  iiopbench orbs list
  iiopbench orbs install omniorb && iiopbench orbs build omniorb
  iiopbench orbs start omniorb --ior-file omni.ior";

    pub const ORBS_LIST: &str = "\
Examples:
  iiopbench orbs list
  iiopbench orbs list | grep tao";

    pub const ORBS_INSTALL: &str = "\
Examples:
  iiopbench orbs install omniorb
  iiopbench orbs install jacorb   # from Maven Central";

    pub const ORBS_BUILD: &str = "\
Examples:
  iiopbench orbs build omniorb
  iiopbench orbs build tao        # with ACE_ROOT set (docs/tao.md)";

    pub const ORBS_START: &str = "\
Examples:
  iiopbench orbs start omniorb --ior-file omni.ior
  iiopbench orbs start jacorb --listen 0.0.0.0:2809 --ior-file jacorb.ior";

    pub const ORBS_CLIENT: &str = "\
Examples:
  iiopbench orbs client omniorb --target bench.ior --mode latency --op ping --count 1000
  iiopbench orbs client jacorb --target bench.ior --mode conformance";

    pub const REPORT: &str = "\
Examples:
  iiopbench report lat.json --report site/
  iiopbench report before.json after.json --report before-after/";

    pub const COMPARE: &str = "\
Examples:
  iiopbench compare before.json after.json
  iiopbench compare before.json after.json --noise-from rerun1.json rerun2.json rerun3.json
  iiopbench compare main.json pr.json --fail-if-slower --json verdicts.json   # a CI regression guard";

    pub const MERGE: &str = "\
Examples:
  iiopbench merge a.json b.json --json all.json
  iiopbench merge host1.json host2.json host3.json --json hosts.json";

    pub const SUITE: &str = "\
Examples:
  iiopbench suite fixtures/suites/ttcp-1996.toml --quick --json ttcp.json --report ttcp-report/
  iiopbench suite fixtures/suites/babar-1998.toml --all-orbs --json babar.json
  iiopbench suite fixtures/suites/aton-2001.toml --target omni=omni.ior --target ours=bench.ior";

    pub const LAB: &str = "\
Examples:
  iiopbench lab check                     # as root, as every lab command
  iiopbench lab run --link client-server:delay=40ms,loss=2%,rate=t1 -- bench latency --op echo --size 1..64KiB*4
  iiopbench lab suite fixtures/suites/network-2003.toml --quick --json n2003.json";

    pub const LAB_CHECK: &str = "\
Examples:
  iiopbench lab check
  iiopbench lab check && iiopbench lab run -- bench latency --count 1000";

    pub const LAB_CLEAN: &str = "\
Examples:
  iiopbench lab clean
  iiopbench lab clean --all       # also labs of runs still going";

    pub const LAB_RUN: &str = "\
Between real hosts: run `iiopbench serve --listen <its address>:0 --ior-file srv.ior` (or \
`iiopbench orbs start <orb> --listen <addr>:0 --ior-file srv.ior`) on the server machine, and \
on the client machine the same bench command without `lab run … --`, plus `--target srv.ior`.

Examples:
  iiopbench lab run --link client-server:delay=40ms,loss=2%,rate=t1 -- bench latency --op echo --size 1..64KiB*4
  iiopbench lab run --server omniorb --link client-server:delay=20ms -- bench throughput --size 64KiB --json wan.json
  iiopbench lab run --hosts c,r,s --server-host s --link c-r:delay=5ms --link r-s:rate=10mbit -- bench connect --count 100";

    pub const LAB_AGENTS: &str = "\
Examples:
  iiopbench lab agents --agents 4 --duration 5s --json lab4.json -- bench latency --op echo --size 1KiB
  iiopbench lab agents --agents 2 --server omniorb --link agent1-server:delay=20ms -- bench closed --clients 4";

    pub const LAB_MATRIX: &str = "\
Examples:
  iiopbench lab matrix --client-hosts 2 --server-hosts 2 --agents 1 --duration 5s --json aton.json -- bench latency --op echo --size 1KiB
  iiopbench lab matrix --client-hosts 3 --server-hosts 2 --agents 2 --link client2-server1:delay=20ms -- bench throughput --op send --sizes 64KiB
  iiopbench lab matrix --client-hosts 2 --server-hosts 2 --agents 1 --server omniorb -- bench latency";

    pub const LAB_SUITE: &str = "\
Examples:
  iiopbench lab suite fixtures/suites/network-2003.toml --quick --json n2003.json
  iiopbench lab suite fixtures/suites/network-2003.toml --server omniorb --ready-timeout 5m --json n2003-omni.json";

    pub const AGENTS: &str = "\
Examples:
  iiopbench agents run --agents 4 --local --duration 10s --json all.json -- bench latency --target bench.ior
  iiopbench agents run --agents 8 --listen 0.0.0.0:7070 -- bench closed --target corbaloc::srv:2809/Bench --clients 4
  iiopbench agents join --coordinator coord-host:7070";

    pub const AGENTS_RUN: &str = "\
Examples:
  iiopbench agents run --agents 4 --local --duration 10s --json all.json -- bench latency --target bench.ior
  iiopbench agents run --agents 8 --listen 0.0.0.0:7070 --register-timeout 2m -- bench throughput --target bench.ior --size 64KiB
  iiopbench agents run --agents 2 --local -- bench latency --target bench.ior --idl fixtures/idl/bench.idl --op Bench::Perf::echo_long --gen len=100";

    pub const AGENTS_JOIN: &str = "\
Examples:
  iiopbench agents join --coordinator coord-host:7070
  iiopbench agents join --coordinator 10.0.0.1:7070 --id 3 --name rack2-host7";

    pub const AGENTS_K8S: &str = "\
Examples:
  iiopbench agents k8s --agents 4 --image registry.example/iiopbench:1 -- bench latency --target corbaloc::bench-server:2809/Bench > run.json
  iiopbench agents k8s --agents 16 --image registry.example/iiopbench:1 --namespace bench --duration 60s -- bench closed --target corbaname::ns-host:2809#Bench --clients 8";

    pub const INTEROP: &str = "\
Examples:
  iiopbench interop --quick                                 # our own server, in-process
  iiopbench interop --target omni.ior --json interop.json
  iiopbench interop --matrix --corbaloc --orbs ours,omniorb,jacorb --ready-timeout 5m";

    pub const PCAP: &str = "\
Examples:
  iiopbench pcap fixtures/giop/jacorb/pcap/large.pcap
  iiopbench pcap session.pcapng --json cap.json --report cap-report/ --show-findings 50";

    pub const REPLAY: &str = "\
Examples:
  iiopbench replay fixtures/giop/jacorb/pcap/oneway.pcap --target bench.ior
  iiopbench replay session.pcapng --target new.ior --speed 1x --idl fixtures/idl/bench.idl --json replay.json";
}

/// Benchmark and interoperability tester for CORBA ORBs over IIOP.
#[derive(Debug, Parser)]
#[command(
    name = "iiopbench",
    version,
    about,
    propagate_version = true,
    after_help = examples::ROOT
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a benchmark.
    #[command(subcommand, after_help = examples::BENCH)]
    Bench(BenchCommand),
    /// Serve the benchmark interface (or the raw-TCP baseline).
    #[command(after_help = examples::SERVE)]
    Serve(Box<crate::cmd::serve::ServeOpts>),
    /// Bounded endurance run: mixed traffic from many connections, then
    /// errors, server memory and latency drift.
    #[command(after_help = examples::SOAK)]
    Soak(Box<crate::cmd::soak::SoakArgs>),
    /// Invoke one operation of any server from its IDL; prints the result
    /// as JSON (docs/json-mapping.md).
    #[command(after_help = examples::CALL)]
    Call(Box<crate::cmd::call::CallOpts>),
    /// Vendor ORBs (omniORB, JacORB, omniORBpy, TAO): list, install, build,
    /// start their bench.idl server, run their client.
    #[command(subcommand, after_help = examples::ORBS)]
    Orbs(OrbsCommand),
    /// Draw results files as an HTML + Markdown report with SVG figures.
    #[command(after_help = examples::REPORT)]
    Report(Box<crate::cmd::report::ReportOpts>),
    /// Compare two results files case by case (ratios and verdicts).
    #[command(after_help = examples::COMPARE)]
    Compare(Box<crate::cmd::compare::CompareArgs>),
    /// Merge results files; histograms of matching cases merge losslessly.
    #[command(after_help = examples::MERGE)]
    Merge(Box<crate::cmd::merge::MergeArgs>),
    /// Run a study's suite of cases (fixtures/suites/*.toml).
    #[command(after_help = examples::SUITE)]
    Suite(Box<crate::cmd::suite::SuiteOpts>),
    /// Network lab (root): hosts as network namespaces joined by links with
    /// delay, loss and a rate cap; run servers and bench clients across it.
    #[command(after_help = examples::LAB)]
    Lab(Box<crate::cmd::lab::LabOpts>),
    /// One bench command run by N coordinated agents (local processes, lab
    /// hosts or Kubernetes pods), merged into one result.
    #[command(subcommand, after_help = examples::AGENTS)]
    Agents(crate::cmd::agents::AgentsCommand),
    /// Conformance suite against one server, or the ORB x ORB matrix.
    #[command(after_help = examples::INTEROP)]
    Interop(crate::cmd::interop::InteropOpts),
    /// Look inside an object reference (like catior) or write one (like
    /// genior).
    #[command(subcommand, after_help = crate::cmd::ior::EXAMPLES)]
    Ior(crate::cmd::ior::IorCommand),
    /// Measure captured GIOP traffic (pcap/pcapng): per-operation counts,
    /// sizes, statuses, response times, conformance findings.
    #[command(after_help = examples::PCAP)]
    Pcap(Box<crate::cmd::pcap::PcapOpts>),
    /// Re-send a capture's requests to another server; compare replies
    /// and response times with the captured ones.
    #[command(after_help = examples::REPLAY)]
    Replay(Box<crate::cmd::replay::ReplayOpts>),
}

#[derive(Debug, Subcommand)]
pub enum OrbsCommand {
    /// Show each vendor ORB and whether it is installed and built here.
    #[command(after_help = examples::ORBS_LIST)]
    List,
    /// Install what the ORB needs from its ecosystem's registry.
    #[command(after_help = examples::ORBS_INSTALL)]
    Install { name: String },
    /// Build the ORB's bench.idl server and client.
    #[command(after_help = examples::ORBS_BUILD)]
    Build { name: String },
    /// Run the ORB's server in the foreground; prints its IOR, then `ready`.
    #[command(after_help = examples::ORBS_START)]
    Start {
        /// The ORB (`iiopbench orbs list`).
        name: String,
        /// Address to listen on (port 0 picks a free port).
        #[arg(long, default_value = "127.0.0.1:0", value_name = "HOST:PORT")]
        listen: String,
        /// Also write the server's IOR to this file.
        #[arg(long, value_name = "FILE")]
        ior_file: Option<PathBuf>,
    },
    /// Run the ORB's client (arguments as docs/vendor-protocol.md says).
    #[command(after_help = examples::ORBS_CLIENT)]
    Client {
        name: String,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Typed throughput, CORBA-TTCP style (oneway / twoway / echo).
    #[command(after_help = examples::BENCH_THROUGHPUT)]
    Throughput(Box<crate::cmd::bench_throughput::ThroughputArgs>),
    /// Request/reply latency (closed loop, or open loop at a fixed rate).
    #[command(after_help = examples::BENCH_LATENCY)]
    Latency(Box<crate::cmd::bench_latency::LatencyArgs>),
    /// Connection set-up cost, step by step, over fresh connections.
    #[command(after_help = examples::BENCH_CONNECT)]
    Connect(Box<crate::cmd::bench_connect::ConnectArgs>),
    /// The physical baseline: the same sizes and patterns over plain TCP
    /// with a 12-byte frame header and no marshalling (E4.3).
    #[command(after_help = examples::BENCH_TCP)]
    Tcp(Box<crate::cmd::bench_tcp::TcpArgs>),
    /// Closed system of C clients {invoke; think Z} with service time S:
    /// R, X, Little's law, CIs (seed 001).
    #[command(after_help = examples::BENCH_CLOSED)]
    Closed(Box<crate::cmd::bench_closed::ClosedArgs>),
    /// Connection set-up T across server states: running, started on
    /// demand (--spawn), in-process (E1.1).
    #[command(after_help = examples::BENCH_SETUP)]
    Setup(Box<crate::cmd::bench_setup::SetupArgs>),
    /// Parameter passing: sequence<CD> vs char+double sequences in one or
    /// two calls (E1.2).
    #[command(after_help = examples::BENCH_PARAMS)]
    Params(Box<crate::cmd::bench_params::ParamsArgs>),
    /// Dispatch latency vs method position; one object with 50 methods vs
    /// 50 objects (E1.3).
    #[command(after_help = examples::BENCH_DISPATCH)]
    Dispatch(Box<crate::cmd::bench_dispatch::DispatchArgs>),
    /// Packing N client/method pairs: one object, N objects, N servers (E1.4).
    #[command(after_help = examples::BENCH_PACKING)]
    Packing(Box<crate::cmd::bench_packing::PackingArgs>),
    /// Load balancing strategies 1-5 over S replicas with C clients (E1.5).
    #[command(after_help = examples::BENCH_BALANCE)]
    Balance(Box<crate::cmd::bench_balance::BalanceArgs>),
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
    #[arg(long, value_name = "CPUS")]
    pub client_cpus: Option<String>,
    /// Pin the embedded server to these CPUs; overrides --pin. With
    /// --target, where that server runs (pin it yourself): recorded, and
    /// what `--wait-strategy auto` decides by.
    #[arg(long, value_name = "CPUS")]
    pub server_cpus: Option<String>,
    /// Measure every case as N independent runs, interleaved across cases
    /// (run 1 of each case, then run 2 …); the table shows mean ± 95 %
    /// interval across runs. Default 7 for throughput, latency and tcp, 1
    /// for the other commands.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: Option<u32>,
}

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

/// Where results go.
#[derive(Debug, Clone, Args)]
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
    #[arg(long, value_enum, default_value_t = ServerModelArg::Reactor)]
    pub server_model: ServerModelArg,
    /// With --server-model threads: after each message, replies too, the
    /// embedded server's connection thread polls up to this long for the
    /// next request before it blocks in recv, as `serve --spin-limit` and
    /// the raw-TCP baseline's server do: the fastest round trip, at the
    /// price of a CPU per connection while calls come.
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub server_spin_limit: Option<Duration>,
    /// Timeout of every call (and of connecting).
    #[arg(long, value_parser = parse_duration, default_value = "30s", value_name = "DURATION")]
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
            server_model: self.server_model.model(),
            server_spin_limit: self.server_spin_limit,
            timeout: self.timeout,
            fragment_size: self.fragment_size,
            waiting: self.waiting.engine(),
            tls: self.tls.engine(),
            tls_vs_plain: self.tls_vs_plain,
            gate: None,
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
    #[arg(long, value_parser = parse_duration, default_value = "1ms", value_name = "DURATION")]
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
}

/// [`BenchArgs`] as the engine's option values, for a bench's options
/// struct.
#[derive(Debug, Clone)]
pub struct BenchParts {
    pub socket: Sockets,
    pub placement: PlacementOpts,
    pub progress: iiopbench_engine::progress::Progress,
}

impl BenchArgs {
    /// As the engine's options.
    pub fn engine(&self) -> BenchParts {
        BenchParts {
            socket: self.socket.engine(),
            placement: self.placement.engine(),
            progress: crate::progress::for_output(&self.output),
        }
    }

    /// Emit what a run measured (also when it failed half-way) and make
    /// its error the command's outcome.
    pub fn finish(&self, (r, err): (Results, Option<anyhow::Error>)) -> anyhow::Result<()> {
        crate::output::finish(&r, &self.output, err)
    }

    /// [`finish`](Self::finish), then for people the experiment's own
    /// summary and the target's resolution time.
    pub fn finish_with(
        &self,
        (r, err): (Results, Option<anyhow::Error>),
        summary: impl Fn(&Results) -> String,
    ) -> anyhow::Result<()> {
        crate::output::finish_workload(&r, &self.output, err, summary)
    }
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
    #[arg(long, value_parser = parse_duration, default_value = "2s", value_name = "DURATION")]
    pub duration: Duration,
    /// Run each case in batches until the 95 % CI of mean response time
    /// is within ±this (e.g. `5%`), or --max-duration.
    #[arg(long, value_parser = parse_relative, value_name = "PERCENT")]
    pub until_ci: Option<f64>,
    /// Time cap per case with --until-ci.
    #[arg(long, value_parser = parse_duration, default_value = "60s", value_name = "DURATION")]
    pub max_duration: Duration,
    /// Batch length for the batch means.
    #[arg(long, value_parser = parse_duration, default_value = "200ms", value_name = "DURATION")]
    pub batch: Duration,
    /// Fewest batches before the CI rule may stop a run.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub min_batches: usize,
    /// Unrecorded time at the start of each case (connections warm).
    #[arg(long, value_parser = parse_duration, default_value = "100ms", value_name = "DURATION")]
    pub warmup_duration: Duration,
    /// Seed of every random draw (think and service times).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub seed: u64,
}

impl RunArgs {
    /// As the engine's options.
    pub fn engine(&self) -> RunOpts {
        RunOpts {
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
    /// As the engine's options.
    pub fn engine(&self) -> IdlOpts {
        IdlOpts {
            idl: self.idl.clone(),
            include: self.include.clone(),
            args: self.args.clone(),
            gen: self.gen.clone(),
            check_reply: self.check_reply,
        }
    }
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
