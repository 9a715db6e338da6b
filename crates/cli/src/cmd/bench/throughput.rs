//! `iiopbench bench throughput`: its flags, and their conversion into the
//! engine's [`ThroughputJob`]; the measuring is
//! [`iiopbench_engine::bench::throughput`]'s.

use std::str::FromStr;
use std::time::Duration;

use clap::Args;
use iiopbench_engine::bench::throughput::ThroughputJob;
use iiopbench_engine::options::Sizes;
use iiopbench_engine::units::{parse_duration, parse_size};

use crate::flags::{BenchArgs, ElemList, IdlArgs, ModeList, OnErrorArg, TargetArgs};

/// `bench throughput` flags.
#[derive(Debug, Clone, Args)]
pub struct ThroughputArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Element types (bench.idl tokens), comma-separated, or `all`.
    #[arg(
        long = "type",
        value_parser = ElemList::from_str,
        default_value = "octet,double,perfstruct",
        value_name = "TYPES"
    )]
    pub types: ElemList,
    /// Payload bytes per call: a size, a list, or a doubling range
    /// (`1KiB..128KiB`).
    #[arg(long, value_parser = Sizes::from_str, default_value = "1KiB,64KiB", value_name = "SIZES")]
    pub size: Sizes,
    /// Return styles, comma-separated: oneway, twoway (void), echo.
    #[arg(long, value_parser = ModeList::from_str, default_value = "oneway,twoway", value_name = "MODES")]
    pub mode: ModeList,
    /// Payload bytes to send per point in each run (at least).
    #[arg(long, value_parser = parse_size, default_value = "16MiB", value_name = "SIZE")]
    pub total: u64,
    /// Minimum duration of each point in each run (16 MiB crosses loopback
    /// in ~10 ms).
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "200ms", value_name = "DURATION")]
    pub min_duration: Duration,
    /// Maximum duration of each point, whatever was sent.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "60s", value_name = "DURATION")]
    pub max_duration: Duration,
    /// Measure each point of a run as N slices, taken in turn with the
    /// other types of the same mode and size and with their raw-TCP
    /// baseline (every other round in reverse order), so that a change of
    /// the machine's speed during a run moves them all alike; 1 measures
    /// each point in one go.
    #[arg(long, default_value_t = 16, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub slices: u32,
    /// Marshal each request once and resend it with only the request id
    /// patched: what marshalling costs per call.
    #[arg(long)]
    pub reuse_request: bool,
    /// Build requests from run-time TypeCodes (Values) instead of compiled
    /// serde types (as CORBA's dynamic invocation interface does).
    #[arg(long)]
    pub dynamic: bool,
    /// Buffer oneways, as CORBA Messaging's SYNC_NONE with TAO's
    /// BUFFER_MESSAGE_BYTES constraint: queue each oneway, and write the
    /// queue (one system call) once it holds SIZE bytes; each slice's
    /// get_stats() flushes the rest. Off by default: every oneway is
    /// written when it is made (SYNC_WITH_TRANSPORT), as omniORB's and
    /// TAO's clients do unless told otherwise.
    #[arg(long, value_parser = parse_size, value_name = "SIZE")]
    pub oneway_buffer: Option<u64>,
    /// Write each oneway when it is made (SYNC_WITH_TRANSPORT), with
    /// Nagle's algorithm on while only oneways go out: the kernel joins
    /// the oneways made while earlier ones wait for their ACK into full
    /// segments, as iperf3's and TTCP's streams are joined (one system
    /// call per call, not one TCP segment per call). A call that waits
    /// for an answer, get_stats() among them, turns TCP_NODELAY back on
    /// first, which pushes what is held: no answer waits for a delayed
    /// ACK, unlike `--nodelay false`. Oneways of a TCP segment or more go
    /// at once, as without it (joining gains them nothing). Off by
    /// default.
    #[arg(long)]
    pub coalesce_oneways: bool,
    /// Measure marshal / transport / demarshal time per call; costs
    /// one extra copy per call, so off by default.
    #[arg(long)]
    pub breakdown: bool,
    /// Also measure raw TCP at the same sizes in this run and print ratios:
    /// "vs tcp" to raw TCP that writes and waits as our client and server
    /// do (oneways a segment each with TCP_NODELAY, or as
    /// --coalesce-oneways / --oneway-buffer write them; round trips whose
    /// server waits as ours does), and a limit line per mode and size with
    /// the fastest raw stream or round trip (frames joined by the kernel,
    /// a server that polls) and the ratio to it.
    #[arg(long)]
    pub baseline: bool,
    /// Raw-TCP server for --baseline with a remote target
    /// (`iiopbench serve --raw-tcp` on the target host).
    #[arg(long, value_name = "HOST:PORT")]
    pub baseline_target: Option<String>,
    /// Stop at the first failed call, or count failures and go on.
    #[arg(long, value_enum, default_value_t = OnErrorArg::Stop)]
    pub on_error: OnErrorArg,
    #[command(flatten)]
    pub bench: BenchArgs,
    #[command(flatten)]
    pub idl: IdlArgs,
    /// With --idl: the operation, `Module::Interface::op`.
    #[arg(long, value_name = "INTERFACE::OP", requires = "idl")]
    pub op: Option<String>,
}

impl ThroughputArgs {
    /// The job these flags describe.
    pub fn job(&self) -> anyhow::Result<ThroughputJob> {
        Ok(ThroughputJob {
            target: self.target.engine(),
            types: self.types.0.clone(),
            sizes: self.size.clone(),
            modes: self.mode.0.clone(),
            total: self.total,
            min_duration: self.min_duration,
            max_duration: self.max_duration,
            slices: self.slices,
            reuse_request: self.reuse_request,
            dynamic: self.dynamic,
            // `--oneway-buffer 0` writes each oneway when made.
            oneway_buffer: self.oneway_buffer.filter(|&n| n > 0),
            coalesce_oneways: self.coalesce_oneways,
            breakdown: self.breakdown,
            baseline: self.baseline,
            baseline_target: self.baseline_target.clone(),
            on_error: self.on_error.into(),
            socket: self.bench.socket.engine(),
            placement: self.bench.placement.engine(),
            idl: self.idl.op(self.op.as_deref())?,
        })
    }
}
