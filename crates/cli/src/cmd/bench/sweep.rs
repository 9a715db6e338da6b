//! `iiopbench bench sweep`: its flags, and their conversion into the
//! engine's [`SweepJob`]; the measuring is
//! [`iiopbench_engine::bench::sweep`]'s.

use std::str::FromStr;
use std::time::Duration;

use clap::{ArgGroup, Args};
use iiopbench_engine::bench::latency::LatencyOp;
use iiopbench_engine::bench::sweep::{Steps, SweepJob, SweepMode};
use iiopbench_engine::options::Sizes;
use iiopbench_engine::units::{parse_duration, parse_percent};

use crate::flags::{BenchArgs, ElemList, ServiceKindArg, TargetArgs};

/// `--op` of a sweep: bench.idl's ping, echo, send or call_back.
fn parse_op(s: &str) -> Result<LatencyOp, String> {
    match s {
        "ping" => Ok(LatencyOp::Ping),
        "echo" => Ok(LatencyOp::Echo),
        "send" => Ok(LatencyOp::Send),
        "call_back" => Ok(LatencyOp::CallBack),
        other => Err(format!("{other:?}: ping, echo, send or call_back")),
    }
}

/// A share written as a percentage (`95%`).
fn parse_share(s: &str) -> Result<f64, String> {
    parse_percent(s)
        .map(|p| p / 100.0)
        .map_err(|e| e.to_string())
}

/// `bench sweep` flags.
#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("mode").args(["open", "clients", "connections"])))]
pub struct SweepArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Open loop at rising rates (calls/s): a comma list, or
    /// start:factor:max (`1000:2:64000`). The default mode.
    #[arg(long, value_parser = Steps::from_str, value_name = "N")]
    pub open: Option<Steps>,
    /// Closed loop at rising client counts (each client a connection with
    /// one call in flight): a comma list, or start:factor:max.
    #[arg(long, value_parser = Steps::from_str, value_name = "N")]
    pub clients: Option<Steps>,
    /// Rising numbers of connections held open, --rate calls/s spread
    /// over them: a comma list, or start:factor:max.
    #[arg(long, value_parser = Steps::from_str, value_name = "N")]
    pub connections: Option<Steps>,
    /// The operation: ping, echo, send, or call_back (with --bidir: the
    /// server calls our Callback back over our connection).
    #[arg(long, default_value = "ping", value_parser = parse_op, value_name = "OP")]
    pub op: LatencyOp,
    /// Call `work` with this service time instead of --op: a server
    /// whose capacity is known (with spin, one thread serves 1/S calls/s).
    #[arg(long, value_parser = parse_duration, default_value = "0s", value_name = "DURATION")]
    pub service: Duration,
    /// How the server spends --service.
    #[arg(long, value_enum, default_value_t = ServiceKindArg::Spin)]
    pub service_kind: ServiceKindArg,
    /// Element type for echo/send (one bench.idl token).
    #[arg(long = "type", value_parser = ElemList::from_str, default_value = "octet", value_name = "TYPES")]
    pub types: ElemList,
    /// Payload bytes per call for echo/send (one size).
    #[arg(long, value_parser = Sizes::from_str, default_value = "0", value_name = "SIZES")]
    pub size: Sizes,
    /// How long each step measures [default: 2s; 1s with --quick].
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub step_duration: Option<Duration>,
    /// Unmeasured calls before each step [default: 200; 100 with --quick].
    #[arg(long, value_name = "N")]
    pub warmup: Option<u64>,
    /// Open mode: spread the calls over this many connections.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub spread: usize,
    /// Connections mode: calls/s through the held connections.
    #[arg(long, default_value_t = 1000.0, value_name = "N")]
    pub rate: f64,
    /// Stop after the first step whose p99 exceeds this; the knee is the
    /// highest load within it.
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub p99_bound: Option<Duration>,
    /// Stop after a step that achieved less than this share of the
    /// offered rate.
    #[arg(long, value_parser = parse_share, default_value = "95%", value_name = "PERCENT")]
    pub min_achieved: f64,
    /// First measure the generator's own ceiling: the same sweep against
    /// our embedded server (a server that does no work), continued past
    /// the top step until the generator gives out; every step above half
    /// of it is marked.
    #[arg(long)]
    pub ceiling: bool,
    /// Measure every step again over raw TCP, right after it: the same
    /// loop, connections and rate, against a raw server where the swept
    /// server runs. Each row shows what raw TCP achieved (a clients sweep)
    /// or its p99 (open and connections sweeps), and the JSON ours over it.
    #[arg(long)]
    pub baseline: bool,
    /// Sweep each of these servers in one run, with the same client and
    /// placement, comma-separated: ours (ours:reactor), ours:threads,
    /// omniorb, jacorb, tao (vendor servers not built here are skipped).
    /// Writes every server's steps and knee, and ours over the best
    /// vendor's.
    #[arg(long, value_delimiter = ',', value_name = "SERVERS")]
    pub servers: Vec<String>,
    /// With --servers: sweep each server this many times, in an order that
    /// rotates from round to round.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub rounds: u32,
    /// Short steps (1s, 100 warm-up calls): a sweep in well under a
    /// minute.
    #[arg(long)]
    pub quick: bool,
    #[command(flatten)]
    pub bench: BenchArgs,
}

impl SweepArgs {
    /// The job these flags describe.
    pub fn job(&self) -> SweepJob {
        let d = SweepJob::default();
        let (mode, steps) = match (&self.open, &self.clients, &self.connections) {
            (_, Some(s), _) => (SweepMode::Clients, s.clone()),
            (_, _, Some(s)) => (SweepMode::Connections, s.clone()),
            (Some(s), _, _) => (SweepMode::Open, s.clone()),
            _ => (SweepMode::Open, d.steps.clone()),
        };
        let quick = |q: u64, full: u64| if self.quick { q } else { full };
        SweepJob {
            target: self.target.engine(),
            op: self.op,
            service: self.service,
            service_kind: self.service_kind.into(),
            types: self.types.0.clone(),
            sizes: self.size.clone(),
            mode,
            steps,
            step_duration: self
                .step_duration
                .unwrap_or(Duration::from_secs(quick(1, 2))),
            warmup: self.warmup.unwrap_or(quick(100, d.warmup)),
            spread: self.spread,
            rate: self.rate,
            p99_bound: self.p99_bound,
            min_achieved: self.min_achieved,
            ceiling: self.ceiling,
            baseline: self.baseline,
            servers: self.servers.clone(),
            rounds: self.rounds,
            every_step: false,
            socket: self.bench.socket.engine(),
            placement: self.bench.placement.engine(),
        }
    }
}
