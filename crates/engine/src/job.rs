//! A benchmark job: one typed value that says what to measure, against
//! what, and how — every option an enum, a number, a duration or a list
//! of them, never a string to parse again. The command line turns its
//! flags into a [`Job`]; a suite file's cases are jobs; an agent is sent
//! its job over the wire; a process started inside a lab host reads its
//! job from a file. [`Job::run`] runs it; what only the running process
//! has (who hears about progress, the command line to record, an agent's
//! start gate) comes separately in a [`RunContext`].
//!
//! The serde form is tagged by `bench` and carries only what differs from
//! the defaults (`Default` of each job is the command line's):
//!
//! ```
//! use iiopbench_engine::job::Job;
//!
//! let job: Job = serde_json::from_str(
//!     r#"{"bench": "latency", "op": "echo", "types": ["long"], "sizes": "64..4KiB",
//!         "count": 1000, "placement": {"pin": "cross", "runs": 3}}"#,
//! )
//! .unwrap();
//! let Job::Latency(l) = &job else { unreachable!() };
//! assert_eq!(l.sizes.0, [64, 128, 256, 512, 1024, 2048, 4096]);
//! assert_eq!(l.warmup, 1000); // the command line's default
//! job.validate().unwrap();
//! ```

use serde::{Deserialize, Serialize};

use crate::bench::balance::{self, BalanceJob};
use crate::bench::closed::{self, ClosedJob};
use crate::bench::connect::{self, ConnectJob};
use crate::bench::dispatch::{self, DispatchJob};
use crate::bench::latency::{self, LatencyJob};
use crate::bench::packing::{self, PackingJob};
use crate::bench::params::{self, ParamsJob};
use crate::bench::session::BenchJob;
use crate::bench::setup::{self, SetupJob};
use crate::bench::sweep::SweepJob;
use crate::bench::sweep_servers;
use crate::bench::tcp_baseline::{self, TcpJob};
use crate::bench::throughput::{self, ThroughputJob};
use crate::error::{Error, JobError};
use crate::options::{PlacementOpts, Sockets};
use crate::results::Results;
use crate::run_context::RunContext;
use crate::soak::{self, SoakJob};
use crate::target::TargetOpts;

pub use crate::bench::balance::System;
pub use crate::bench::closed::ServiceKind;
pub use crate::bench::latency::LatencyOp;
pub use crate::bench::packing::PackingMode;
pub use crate::bench::replicas::Replicas;
pub use crate::bench::stats::Dist;
pub use crate::bench::sweep::{Steps, SweepMode};
pub use crate::bench::tcp_baseline::TcpPattern;
pub use crate::bench::workload::RunRule;
pub use crate::dynamic::{GenSpec, IdlOp, JsonArgs};
pub use crate::rawtcp::StreamWrites;

/// One benchmark job of any kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "bench", rename_all = "snake_case")]
pub enum Job {
    /// Typed throughput, CORBA-TTCP style (`bench throughput`).
    Throughput(ThroughputJob),
    /// Request/reply latency, closed or open loop (`bench latency`).
    Latency(LatencyJob),
    /// Connection set-up, step by step (`bench connect`).
    Connect(ConnectJob),
    /// The raw-TCP baseline alone (`bench tcp`).
    Tcp(TcpJob),
    /// A closed system of clients with think and service times
    /// (`bench closed`).
    Closed(ClosedJob),
    /// Connection set-up across server states (`bench setup`).
    Setup(SetupJob),
    /// Parameter passing three ways (`bench params`).
    Params(ParamsJob),
    /// Dispatch latency against method position (`bench dispatch`).
    Dispatch(DispatchJob),
    /// Client/method pairs packed into objects and servers
    /// (`bench packing`).
    Packing(PackingJob),
    /// Load-balancing strategies over server replicas (`bench balance`).
    Balance(BalanceJob),
    /// A bounded endurance run of mixed traffic (`soak`).
    Soak(SoakJob),
    /// Latency against rising load, to the knee (`bench sweep`).
    Sweep(SweepJob),
}

impl Job {
    /// Its kind, as results and the serde tag name it (`throughput` …).
    pub fn kind(&self) -> &'static str {
        match self {
            Job::Throughput(_) => ThroughputJob::KIND,
            Job::Latency(_) => LatencyJob::KIND,
            Job::Connect(_) => ConnectJob::KIND,
            Job::Tcp(_) => "tcp",
            Job::Closed(_) => ClosedJob::KIND,
            Job::Setup(_) => SetupJob::KIND,
            Job::Params(_) => ParamsJob::KIND,
            Job::Dispatch(_) => DispatchJob::KIND,
            Job::Packing(_) => PackingJob::KIND,
            Job::Balance(_) => BalanceJob::KIND,
            Job::Soak(_) => SoakJob::KIND,
            Job::Sweep(_) => SweepJob::KIND,
        }
    }

    /// Every kind, in the order of `bench --help`.
    pub const KINDS: [&'static str; 12] = [
        "throughput",
        "latency",
        "connect",
        "tcp",
        "closed",
        "setup",
        "params",
        "dispatch",
        "packing",
        "balance",
        "soak",
        "sweep",
    ];

    /// The default job of `kind` (one of [`KINDS`](Self::KINDS); a soak
    /// of 10 minutes), `None` for another word.
    pub fn default_of(kind: &str) -> Option<Job> {
        Some(match kind {
            "throughput" => Job::Throughput(Default::default()),
            "latency" => Job::Latency(Default::default()),
            "connect" => Job::Connect(Default::default()),
            "tcp" => Job::Tcp(Default::default()),
            "closed" => Job::Closed(Default::default()),
            "setup" => Job::Setup(Default::default()),
            "params" => Job::Params(Default::default()),
            "dispatch" => Job::Dispatch(Default::default()),
            "packing" => Job::Packing(Default::default()),
            "balance" => Job::Balance(Default::default()),
            "soak" => Job::Soak(SoakJob::new(std::time::Duration::from_secs(600))),
            "sweep" => Job::Sweep(Default::default()),
            _ => return None,
        })
    }

    /// Everything that can be checked before the job starts, in one line:
    /// counts and durations that cannot be, options that contradict each
    /// other or that the job would ignore, a target that cannot be read
    /// or parsed, files that cannot be read.
    pub fn validate(&self) -> Result<(), JobError> {
        match self {
            Job::Throughput(j) => j.validate(),
            Job::Latency(j) => j.validate(),
            Job::Connect(j) => BenchJob::validate(j),
            Job::Tcp(j) => j.validate(),
            Job::Closed(j) => BenchJob::validate(j),
            Job::Setup(j) => BenchJob::validate(j),
            Job::Params(j) => BenchJob::validate(j),
            Job::Dispatch(j) => BenchJob::validate(j),
            Job::Packing(j) => BenchJob::validate(j),
            Job::Balance(j) => BenchJob::validate(j),
            Job::Soak(j) => BenchJob::validate(j),
            Job::Sweep(j) => BenchJob::validate(j),
        }
    }

    /// [`validate`](Self::validate) without reading the target's file: for
    /// a job that will run on another host (an agent's), where the file
    /// is that host's.
    pub fn validate_fields(&self) -> Result<(), JobError> {
        match self {
            Job::Throughput(j) => j.validate_fields(),
            Job::Latency(j) => j.validate_fields(),
            Job::Connect(j) => j.validate_fields(),
            Job::Tcp(j) => j.validate(),
            Job::Closed(j) => j.validate_fields(),
            Job::Setup(j) => j.validate_fields(),
            Job::Params(j) => j.validate_fields(),
            Job::Dispatch(j) => j.validate_fields(),
            Job::Packing(j) => j.validate_fields(),
            Job::Balance(j) => j.validate_fields(),
            Job::Soak(j) => j.validate_fields(),
            Job::Sweep(j) => j.validate_fields(),
        }
    }

    /// Run the job: its results (always, holding what was measured even
    /// when the run failed; the job recorded in them) and the error that
    /// ended the run, if any. A job that does not
    /// [`validate`](Self::validate) runs nothing: its results name the
    /// problem and the error is [`Error::Job`].
    pub fn run(&self, ctx: &RunContext) -> (Results, Option<Error>) {
        match self {
            Job::Throughput(j) => throughput::run(j, ctx),
            Job::Latency(j) => latency::run(j, ctx),
            Job::Connect(j) => connect::run(j, ctx),
            Job::Tcp(j) => tcp_baseline::run(j, ctx),
            Job::Closed(j) => closed::run(j, ctx),
            Job::Setup(j) => setup::run(j, ctx),
            Job::Params(j) => params::run(j, ctx),
            Job::Dispatch(j) => dispatch::run(j, ctx),
            Job::Packing(j) => packing::run(j, ctx),
            Job::Balance(j) => balance::run(j, ctx),
            Job::Soak(j) => soak::run(j, ctx),
            Job::Sweep(j) => sweep_servers::run(j, ctx),
        }
    }

    /// The server it talks to (`None`: a raw-TCP job, which has none).
    pub fn target(&self) -> Option<&TargetOpts> {
        match self {
            Job::Throughput(j) => Some(&j.target),
            Job::Latency(j) => Some(&j.target),
            Job::Connect(j) => Some(&j.target),
            Job::Tcp(_) => None,
            Job::Closed(j) => Some(&j.target),
            Job::Setup(j) => Some(&j.target),
            Job::Params(j) => Some(&j.target),
            Job::Dispatch(j) => Some(&j.target),
            Job::Packing(j) => Some(&j.target),
            Job::Balance(j) => Some(&j.target),
            Job::Soak(j) => Some(&j.target),
            Job::Sweep(j) => Some(&j.target),
        }
    }

    /// The server it talks to, to change (`None` for a raw-TCP job).
    pub fn target_mut(&mut self) -> Option<&mut TargetOpts> {
        match self {
            Job::Throughput(j) => Some(&mut j.target),
            Job::Latency(j) => Some(&mut j.target),
            Job::Connect(j) => Some(&mut j.target),
            Job::Tcp(_) => None,
            Job::Closed(j) => Some(&mut j.target),
            Job::Setup(j) => Some(&mut j.target),
            Job::Params(j) => Some(&mut j.target),
            Job::Dispatch(j) => Some(&mut j.target),
            Job::Packing(j) => Some(&mut j.target),
            Job::Balance(j) => Some(&mut j.target),
            Job::Soak(j) => Some(&mut j.target),
            Job::Sweep(j) => Some(&mut j.target),
        }
    }

    /// Where client and server run.
    pub fn placement(&self) -> &PlacementOpts {
        match self {
            Job::Throughput(j) => &j.placement,
            Job::Latency(j) => &j.placement,
            Job::Connect(j) => &j.placement,
            Job::Tcp(j) => &j.placement,
            Job::Closed(j) => &j.placement,
            Job::Setup(j) => &j.placement,
            Job::Params(j) => &j.placement,
            Job::Dispatch(j) => &j.placement,
            Job::Packing(j) => &j.placement,
            Job::Balance(j) => &j.placement,
            Job::Soak(j) => &j.placement,
            Job::Sweep(j) => &j.placement,
        }
    }

    /// Where client and server run, to change.
    pub fn placement_mut(&mut self) -> &mut PlacementOpts {
        match self {
            Job::Throughput(j) => &mut j.placement,
            Job::Latency(j) => &mut j.placement,
            Job::Connect(j) => &mut j.placement,
            Job::Tcp(j) => &mut j.placement,
            Job::Closed(j) => &mut j.placement,
            Job::Setup(j) => &mut j.placement,
            Job::Params(j) => &mut j.placement,
            Job::Dispatch(j) => &mut j.placement,
            Job::Packing(j) => &mut j.placement,
            Job::Balance(j) => &mut j.placement,
            Job::Soak(j) => &mut j.placement,
            Job::Sweep(j) => &mut j.placement,
        }
    }

    /// Its socket options, to change.
    pub fn socket_mut(&mut self) -> &mut Sockets {
        match self {
            Job::Throughput(j) => &mut j.socket,
            Job::Latency(j) => &mut j.socket,
            Job::Connect(j) => &mut j.socket,
            Job::Tcp(j) => &mut j.socket,
            Job::Closed(j) => &mut j.socket,
            Job::Setup(j) => &mut j.socket,
            Job::Params(j) => &mut j.socket,
            Job::Dispatch(j) => &mut j.socket,
            Job::Packing(j) => &mut j.socket,
            Job::Balance(j) => &mut j.socket,
            Job::Soak(j) => &mut j.socket,
            Job::Sweep(j) => &mut j.socket,
        }
    }

    /// The raw-TCP server it measures (`tcp`) or measures its baseline
    /// against (`throughput`, `latency` with `baseline`), to change;
    /// `None` for the kinds that have none.
    pub fn baseline_target_mut(&mut self) -> Option<&mut Option<String>> {
        match self {
            Job::Throughput(j) => Some(&mut j.baseline_target),
            Job::Latency(j) => Some(&mut j.baseline_target),
            Job::Tcp(j) => Some(&mut j.baseline_target),
            _ => None,
        }
    }

    /// Whether it talks to a raw-TCP server: a `tcp` job, or a throughput
    /// or latency job with `baseline`, unless it names one in
    /// `baseline_target`.
    pub fn wants_raw_tcp(&self) -> bool {
        match self {
            Job::Tcp(j) => j.baseline_target.is_none(),
            Job::Throughput(j) => j.baseline && j.baseline_target.is_none(),
            Job::Latency(j) => j.baseline && j.baseline_target.is_none(),
            _ => false,
        }
    }

    /// The job as JSON (its serde form).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("jobs serialize") + "\n"
    }

    /// A job from JSON (its serde form); the error says what is wrong.
    pub fn from_json(text: &str) -> Result<Job, JobError> {
        serde_json::from_str(text).map_err(|e| JobError::new(format!("not a job: {e}")))
    }
}

impl From<ThroughputJob> for Job {
    fn from(j: ThroughputJob) -> Job {
        Job::Throughput(j)
    }
}

impl From<LatencyJob> for Job {
    fn from(j: LatencyJob) -> Job {
        Job::Latency(j)
    }
}

impl From<ConnectJob> for Job {
    fn from(j: ConnectJob) -> Job {
        Job::Connect(j)
    }
}

impl From<TcpJob> for Job {
    fn from(j: TcpJob) -> Job {
        Job::Tcp(j)
    }
}

impl From<ClosedJob> for Job {
    fn from(j: ClosedJob) -> Job {
        Job::Closed(j)
    }
}

impl From<SetupJob> for Job {
    fn from(j: SetupJob) -> Job {
        Job::Setup(j)
    }
}

impl From<ParamsJob> for Job {
    fn from(j: ParamsJob) -> Job {
        Job::Params(j)
    }
}

impl From<DispatchJob> for Job {
    fn from(j: DispatchJob) -> Job {
        Job::Dispatch(j)
    }
}

impl From<PackingJob> for Job {
    fn from(j: PackingJob) -> Job {
        Job::Packing(j)
    }
}

impl From<BalanceJob> for Job {
    fn from(j: BalanceJob) -> Job {
        Job::Balance(j)
    }
}

impl From<SweepJob> for Job {
    fn from(j: SweepJob) -> Job {
        Job::Sweep(j)
    }
}

impl From<SoakJob> for Job {
    fn from(j: SoakJob) -> Job {
        Job::Soak(j)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn every_kind_round_trips_through_its_serde_form() {
        for kind in Job::KINDS {
            let job = Job::default_of(kind).unwrap();
            assert_eq!(job.kind(), kind);
            let back = Job::from_json(&job.to_json()).unwrap();
            assert_eq!(back, job, "{kind}");
            // Only the tag is needed: every field has its default.
            if kind != "soak" {
                let bare = Job::from_json(&format!(r#"{{"bench": "{kind}"}}"#)).unwrap();
                assert_eq!(bare, job, "{kind}");
            }
        }
    }

    #[test]
    fn typed_values_are_read_as_users_write_them() {
        let j = Job::from_json(
            r#"{"bench": "throughput", "types": "octet,double", "modes": ["oneway"],
                "sizes": ["1KiB", 65536], "total": "64MiB", "min_duration": "0s",
                "socket": {"sndbuf": "64KiB"}, "placement": {"client_cpus": "0", "runs": 1}}"#,
        )
        .unwrap();
        let Job::Throughput(t) = &j else {
            panic!("{j:?}")
        };
        assert_eq!(t.sizes.0, [1024, 65536]);
        assert_eq!(t.total, 64 << 20);
        assert_eq!(t.min_duration, Duration::ZERO);
        assert_eq!(t.socket.sndbuf, Some(65536));
        assert_eq!(t.placement.client_cpus.as_ref().unwrap().cpus(), [0]);
        assert_eq!(t.types.len(), 2);
        // Written back as numbers, durations as typed.
        let v: serde_json::Value = serde_json::from_str(&j.to_json()).unwrap();
        assert_eq!(v["total"], 64 << 20);
        assert_eq!(v["min_duration"], "0s");
        assert_eq!(v["max_duration"], "60s");
        assert_eq!(v["bench"], "throughput");
    }

    #[test]
    fn unknown_fields_kinds_and_values_are_refused() {
        let e = |t: &str| Job::from_json(t).unwrap_err().to_string();
        assert!(e(r#"{"bench": "latency", "cuont": 5}"#).contains("cuont"));
        assert!(e(r#"{"bench": "lateny"}"#).contains("lateny"));
        assert!(e(r#"{"bench": "throughput", "types": ["quaternion"]}"#).contains("quaternion"));
        assert!(e(r#"{"bench": "throughput", "modes": ["threeway"]}"#).contains("threeway"));
        assert!(e(r#"{"bench": "latency", "duration": "-5s"}"#).contains("-5s"));
        assert!(e(r#"{"bench": "soak"}"#).contains("duration"));
    }

    #[test]
    fn invalid_jobs_are_refused_in_one_line_before_anything_starts() {
        let refused = |j: Job| j.validate().unwrap_err().to_string();
        let lat = |f: &dyn Fn(&mut LatencyJob)| {
            let mut j = LatencyJob::default();
            f(&mut j);
            Job::Latency(j)
        };
        assert_eq!(
            refused(lat(&|j| j.sizes.0 = vec![1024])),
            "`types` and `sizes` are the payload of echo and send: ping sends none"
        );
        assert_eq!(refused(lat(&|j| j.count = 0)), "`count` must be at least 1");
        assert_eq!(
            refused(lat(&|j| j.duration = Some(Duration::ZERO))),
            "`duration` must be more than 0"
        );
        assert_eq!(
            refused(lat(&|j| j.connections = 0)),
            "`connections` and `in_flight` must be at least 1"
        );
        assert_eq!(
            refused(lat(&|j| {
                j.connections = 2;
                j.target.waiting.wait_strategy = crate::target::WaitStrategy::Spin;
            })),
            "`wait_strategy` spin needs one caller making one call at a time: bench latency with \
             one connection, one call in flight and no `rate`, or bench throughput without `breakdown`"
        );
        assert!(
            refused(lat(&|j| j.target.target = Some("/nonexistent/x.ior".into())))
                .starts_with("`target` cannot read /nonexistent/x.ior")
        );
        assert!(
            refused(lat(&|j| j.target.target = Some("IOR:0123".into()))).starts_with("`target`: ")
        );
        let mut t = ThroughputJob {
            modes: vec![iiop_bench_idl::bench::elements::CallMode::Twoway],
            oneway_buffer: Some(4096),
            ..ThroughputJob::default()
        };
        assert_eq!(
            refused(Job::Throughput(t.clone())),
            "`oneway_buffer` and `coalesce_oneways` apply to oneways, and `modes` has none"
        );
        t.oneway_buffer = None;
        t.min_duration = Duration::from_secs(2);
        t.max_duration = Duration::from_secs(1);
        assert_eq!(
            refused(Job::Throughput(t)),
            "`min_duration` is longer than `max_duration`"
        );
        let mut c = ClosedJob::default();
        c.run.duration = Duration::ZERO;
        assert_eq!(refused(Job::Closed(c)), "`duration` must be more than 0");
        // Every default job is valid.
        for kind in Job::KINDS {
            Job::default_of(kind).unwrap().validate().unwrap();
        }
    }
}
