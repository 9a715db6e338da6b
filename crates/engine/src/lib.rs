//! The measurement engine of iiopbench: everything that measures, and the
//! one results value it measures into, callable without a command line.
//! A benchmark is a [`job::Job`]: one typed value (enums, numbers,
//! durations) that the `iiopbench` binary builds from its flags, a suite
//! file holds, an agent receives over the wire. [`Job::run`](job::Job::run)
//! returns a [`results::Results`] value (always, holding what was
//! measured even when the run failed) and the error that ended the run,
//! if any, an [`Error`] that says whose fault it was:
//!
//! ```
//! use std::time::Duration;
//! use iiopbench_engine::bench::throughput::ThroughputJob;
//! use iiopbench_engine::job::Job;
//! use iiopbench_engine::options::{PlacementOpts, Sizes};
//! use iiopbench_engine::run_context::RunContext;
//! use iiop_bench_idl::bench::elements::{CallMode, Elem};
//!
//! // bench.idl's `send_octet` oneways of 1 KiB to our reference server,
//! // started in this process on 127.0.0.1 port 0 (no `target`), until
//! // 256 KiB are sent; one run instead of seven.
//! let job = Job::Throughput(ThroughputJob {
//!     types: vec![Elem::Octet],
//!     modes: vec![CallMode::Oneway],
//!     sizes: Sizes(vec![1024]),
//!     total: 256 * 1024,
//!     min_duration: Duration::ZERO,
//!     placement: PlacementOpts {
//!         runs: Some(1),
//!         ..PlacementOpts::default()
//!     },
//!     ..ThroughputJob::default()
//! });
//! let (results, err) = job.run(&RunContext::default());
//! assert!(err.is_none(), "{err:?}");
//! let case = &results.cases[0];
//! assert_eq!((case.calls, case.bytes), (256, 256 * 1024));
//! println!("{}: {:.0} Mbit/s", case.name, case.throughput_mbps);
//! // `results::to_json(&results)` is a results file (docs/results-schema.md).
//! ```
//!
//! Modules, top to bottom:
//! - jobs and how they run: [`job`] (the [`Job`](job::Job) of every
//!   kind), [`run_context`] (what a run needs besides its job),
//!   [`programs`] (iiopbench's own programs, started by the caller);
//! - the benchmarks: [`bench`](mod@bench) (GIOP throughput, latency,
//!   connect, the raw-TCP baseline, and the closed-system workloads on
//!   [`bench::workload`]), [`soak`] (endurance), [`dynamic`]
//!   (any operation of any IDL, values as JSON), [`interop`] (the
//!   conformance suite and the ORB × ORB matrix, with [`orbs`], the vendor
//!   ORBs' scripts), [`orbs_compare`] (ours against the vendor ORBs, side
//!   by side: client, server, both, raw TCP), [`suite`] (a whole study's cases), [`capture`] and
//!   [`replay`] (captured traffic measured, and sent again), [`proxy`]
//!   (a fault-injecting GIOP proxy between any client and server);
//! - distributed runs: [`agents`] (one job run by N coordinated agents:
//!   the coordinator, the agent, their results merged) and [`lab`] (jobs
//!   across an emulated network of namespaces: `lab run`, `lab suite`,
//!   `lab agents`, `lab matrix`);
//! - what every benchmark shares: [`options`] (placement, sockets, sizes),
//!   [`target`] (the reference, or our server embedded in this process),
//!   [`placement`] (pinning), [`progress`] (who hears about cases),
//!   [`interrupt`] (Ctrl-C as a flag the loops poll), [`gate`] (the start
//!   gate of an agent run), [`error`] (who failed), [`metrics`] (live
//!   counters and histograms for Prometheus while a run or a server runs),
//!   [`threshold`] (the gates a result must pass, for CI);
//! - what a run records: [`results`] (the schema of
//!   docs/results-schema.md, read and written), [`hist`] (HDR
//!   histograms), [`runs`] (repeated runs folded into intervals),
//!   [`noise`] / [`procnet`] / [`sysinfo`] (the machine around the run);
//! - what is done with results afterwards: [`merge`], [`compare`] and
//!   [`report`] (data; printing and drawing are the command line's);
//! - [`rawtcp`] (the raw-TCP client and server) and [`units`] (sizes,
//!   sweeps, durations, percentages as users type them).
//!
//! docs/engine.md says how to drive it from your own harness.

pub mod agents;
pub mod bench;
pub mod capture;
pub mod compare;
pub mod dynamic;
pub mod error;
pub mod gate;
pub mod hist;
pub mod interop;
pub mod interrupt;
pub mod job;
pub mod lab;
pub mod merge;
pub mod metrics;
pub mod noise;
pub mod options;
pub mod orbs;
pub mod orbs_compare;
pub mod placement;
pub mod procnet;
pub mod programs;
pub mod progress;
pub mod proxy;
pub mod rawloop;
pub mod rawtcp;
pub mod replay;
pub mod report;
pub mod results;
pub mod run_context;
pub mod runs;
pub mod soak;
pub mod suite;
pub mod sysinfo;
pub mod target;
pub mod threshold;
pub mod tls_vs_plain;
pub mod units;

pub use error::{Error, JobError};

/// docs/engine.md's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/engine.md")]
pub struct EngineGuide;
