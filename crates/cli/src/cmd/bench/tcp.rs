//! `iiopbench bench tcp`: its flags, and their conversion into the
//! engine's [`TcpJob`]; the measuring is
//! [`iiopbench_engine::bench::tcp_baseline`]'s.

use std::str::FromStr;
use std::time::Duration;

use clap::Args;
use iiopbench_engine::bench::tcp_baseline::TcpJob;
use iiopbench_engine::options::Sizes;
use iiopbench_engine::rawtcp::StreamWrites;
use iiopbench_engine::units::{parse_duration, parse_size};

use crate::flags::{BenchArgs, PatternArg, WaitArgs};

#[derive(Debug, Clone, Args)]
pub struct TcpArgs {
    /// A raw-TCP server (`iiopbench serve --raw-tcp`) as HOST:PORT; the
    /// embedded one when absent.
    #[arg(long, value_name = "HOST:PORT")]
    pub baseline_target: Option<String>,
    /// Which pattern to run.
    #[arg(long, value_enum, default_value_t = PatternArg::Both)]
    pub pattern: PatternArg,
    /// Payload bytes per message: a size, a list or a doubling range
    /// (`1KiB..128KiB`).
    #[arg(long, value_parser = Sizes::from_str, default_value = "1KiB..128KiB", value_name = "SIZES")]
    pub size: Sizes,
    /// Stream: bytes to send per point (at least).
    #[arg(long, value_parser = parse_size, default_value = "64MiB", value_name = "SIZE")]
    pub total: u64,
    /// Stream and ack: minimum duration per point.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "1s", value_name = "DURATION")]
    pub min_duration: Duration,
    /// Stream: how frames leave. `joined`: frames shorter than a segment
    /// go with Nagle on, so the kernel joins them into fuller segments
    /// (the fastest way: the physical limit). `separate`: TCP_NODELAY
    /// throughout, each frame in segments of its own as an ORB client
    /// that writes each oneway with TCP_NODELAY sends them (the limit for
    /// one write per call).
    #[arg(long, value_enum, default_value_t = StreamWritesArg::Joined, value_name = "HOW")]
    pub stream_writes: StreamWritesArg,
    /// Ping-pong and ack: round trips per point (ack: at least that many,
    /// and for at least --min-duration: a rate, as a stream's).
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    pub count: u64,
    /// Ping-pong and ack: unrecorded round trips first.
    #[arg(long, default_value_t = 1_000, value_name = "N")]
    pub warmup: u64,
    /// How the client waits for replies and for room to send (`reactor`
    /// does not apply).
    #[command(flatten)]
    pub waiting: WaitArgs,
    #[command(flatten)]
    pub bench: BenchArgs,
}

/// `--stream-writes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StreamWritesArg {
    /// Nagle on for frames shorter than a segment: the kernel joins them.
    Joined,
    /// TCP_NODELAY throughout: a segment per frame.
    Separate,
}

impl From<StreamWritesArg> for StreamWrites {
    fn from(a: StreamWritesArg) -> StreamWrites {
        match a {
            StreamWritesArg::Joined => StreamWrites::Joined,
            StreamWritesArg::Separate => StreamWrites::Separate,
        }
    }
}

impl TcpArgs {
    /// The job these flags describe.
    pub fn job(&self) -> TcpJob {
        TcpJob {
            baseline_target: self.baseline_target.clone(),
            pattern: self.pattern.into(),
            sizes: self.size.clone(),
            total: self.total,
            min_duration: self.min_duration,
            writes: self.stream_writes.into(),
            count: self.count,
            warmup: self.warmup,
            waiting: self.waiting.engine(),
            socket: self.bench.socket.engine(),
            placement: self.bench.placement.engine(),
        }
    }
}
