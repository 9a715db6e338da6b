//! `iiopbench bench latency`: its flags, and their conversion into the
//! engine's [`LatencyJob`]; the measuring is
//! [`iiopbench_engine::bench::latency`]'s.

use std::str::FromStr;
use std::time::Duration;

use clap::Args;
use iiopbench_engine::bench::latency::{LatencyJob, LatencyOp};
use iiopbench_engine::bench::loops::DEFAULT_MAX_OUTSTANDING;
use iiopbench_engine::options::Sizes;
use iiopbench_engine::units::parse_duration;

use crate::flags::{BenchArgs, ElemList, IdlArgs, OnErrorArg, ServiceKindArg, TargetArgs};

/// `--op`: one of bench.idl's, or an IDL operation with `--idl`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpArg {
    Bench(LatencyOp),
    /// `Module::Interface::op`.
    Idl(String),
}

/// `ping`, `echo`, `send`, `call_back`, or `Module::Interface::op` (with
/// `--idl`).
pub fn parse_op(s: &str) -> Result<OpArg, String> {
    match s {
        "ping" => Ok(OpArg::Bench(LatencyOp::Ping)),
        "echo" => Ok(OpArg::Bench(LatencyOp::Echo)),
        "send" => Ok(OpArg::Bench(LatencyOp::Send)),
        "call_back" => Ok(OpArg::Bench(LatencyOp::CallBack)),
        q if q.contains("::") => Ok(OpArg::Idl(q.to_string())),
        other => Err(format!(
            "{other:?}: ping, echo, send, call_back, or Module::Interface::op with --idl"
        )),
    }
}

/// `bench latency` flags.
#[derive(Debug, Clone, Args)]
pub struct LatencyArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// The operation: ping, echo, send, call_back (with --bidir: the
    /// server calls our Callback back over our connection before it
    /// answers), or with --idl an operation of that file as
    /// `Module::Interface::op`.
    #[arg(long, default_value = "ping", value_parser = parse_op, value_name = "OP")]
    pub op: OpArg,
    /// Element types for echo/send (bench.idl tokens), comma-separated.
    #[arg(long = "type", value_parser = ElemList::from_str, default_value = "octet", value_name = "TYPES")]
    pub types: ElemList,
    /// Payload bytes per call for echo/send: a size, list or sweep.
    #[arg(long, value_parser = Sizes::from_str, default_value = "0", value_name = "SIZES")]
    pub size: Sizes,
    /// Measured calls per point.
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    pub count: u64,
    /// Measure for this long per point instead of --count calls.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, value_name = "DURATION")]
    pub duration: Option<Duration>,
    /// Time cap per point: a point that has not made its --count calls by
    /// then ends with what it measured, marked and warned about, and the
    /// run goes on.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, value_name = "DURATION")]
    pub max_duration: Option<Duration>,
    /// Unmeasured calls first (per point).
    #[arg(long, default_value_t = 1_000, value_name = "N")]
    pub warmup: u64,
    /// Connections (closed loop: each with --in-flight callers).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub connections: usize,
    /// Calls in flight per connection (closed loop).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub in_flight: usize,
    /// Open loop at this many calls per second (latency from the intended
    /// send time).
    #[arg(long, value_name = "N")]
    pub rate: Option<f64>,
    /// With --rate: at most N calls outstanding; a call due beyond them is
    /// counted as an `overload` error instead of sent. The generator's
    /// memory follows the calls outstanding, so N bounds it.
    #[arg(long, default_value_t = DEFAULT_MAX_OUTSTANDING, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_outstanding: usize,
    /// Call `work` with this service time instead of --op: a server that
    /// holds each call this long keeps --connections x --in-flight calls
    /// in flight (or rate x service with --rate). Serve with enough
    /// `serve --max-in-flight` per connection, and give a small --warmup:
    /// each warm-up call takes the service time.
    #[arg(long, value_parser = parse_duration, default_value = "0s", value_name = "DURATION")]
    pub service: Duration,
    /// How the server spends --service.
    #[arg(long, value_enum, default_value_t = ServiceKindArg::Sleep)]
    pub service_kind: ServiceKindArg,
    /// Also measure raw-TCP ping-pong at the same sizes and print ratios.
    #[arg(long)]
    pub baseline: bool,
    /// Raw-TCP server for --baseline with a remote target.
    #[arg(long, value_name = "HOST:PORT")]
    pub baseline_target: Option<String>,
    /// With --baseline on one connection with one call in flight: measure
    /// each point as N slices taken in turn with its raw-TCP baseline
    /// (every other round in reverse order), so that a change of the
    /// machine's speed during a point moves both alike; 1 measures the
    /// baseline after the points.
    #[arg(long, default_value_t = 16, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub slices: u32,
    /// Stop at the first failed call, or count failures and go on.
    #[arg(long, value_enum, default_value_t = OnErrorArg::Stop)]
    pub on_error: OnErrorArg,
    #[command(flatten)]
    pub bench: BenchArgs,
    #[command(flatten)]
    pub idl: IdlArgs,
}

impl LatencyArgs {
    /// The job these flags describe.
    pub fn job(&self) -> anyhow::Result<LatencyJob> {
        let (op, idl_op) = match &self.op {
            OpArg::Bench(op) => (*op, None),
            OpArg::Idl(q) => (LatencyOp::Ping, Some(q.as_str())),
        };
        Ok(LatencyJob {
            target: self.target.engine(),
            op,
            types: self.types.0.clone(),
            sizes: self.size.clone(),
            count: self.count,
            duration: self.duration,
            max_duration: self.max_duration,
            warmup: self.warmup,
            connections: self.connections,
            in_flight: self.in_flight,
            rate: self.rate,
            max_outstanding: self.max_outstanding,
            service: self.service,
            service_kind: self.service_kind.into(),
            baseline: self.baseline,
            baseline_target: self.baseline_target.clone(),
            slices: self.slices,
            on_error: self.on_error.into(),
            socket: self.bench.socket.engine(),
            placement: self.bench.placement.engine(),
            idl: self.idl.op(idl_op)?,
        })
    }
}
