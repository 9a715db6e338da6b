//! The measurement engine of iiopbench: everything that measures, and the
//! one results value it measures into, callable without a command line.
//! The `iiopbench` binary parses its flags into these plain option
//! structs, calls the same functions, and prints what comes back; a test
//! harness, an agent of a distributed run or a user's own program does the
//! same without clap.
//!
//! A benchmark is a function from options to a [`results::Results`] value
//! (always returned, holding what was measured even when the run failed)
//! and the error that ended the run, if any:
//!
//! ```
//! use std::time::Duration;
//! use iiopbench_engine::bench::throughput::{self, ThroughputOpts};
//! use iiopbench_engine::options::{PlacementOpts, Sizes};
//!
//! // bench.idl's `send_octet` oneways of 1 KiB to our reference server,
//! // started in this process on 127.0.0.1 port 0 (no `target`), until
//! // 256 KiB are sent; one run instead of seven.
//! let opts = ThroughputOpts {
//!     types: "octet".into(),
//!     mode: "oneway".into(),
//!     size: Sizes(vec![1024]),
//!     total: 256 * 1024,
//!     min_duration: Duration::ZERO,
//!     placement: PlacementOpts {
//!         runs: Some(1),
//!         ..PlacementOpts::default()
//!     },
//!     ..ThroughputOpts::default()
//! };
//! let (results, err) = throughput::run(&opts);
//! assert!(err.is_none(), "{err:?}");
//! let case = &results.cases[0];
//! assert_eq!((case.calls, case.bytes), (256, 256 * 1024));
//! println!("{}: {:.0} Mbit/s", case.name, case.throughput_mbps);
//! // `results::to_json(&results)` is a results file (docs/results-schema.md).
//! ```
//!
//! Modules, top to bottom:
//! - the benchmarks: [`bench`](mod@bench) (GIOP throughput, latency, connect, and the
//!   closed-system workloads of seed 001 on [`bench::workload`]), [`tcp`]
//!   (the raw-TCP baseline, E4.3), [`soak`] (endurance), [`dynamic`]
//!   (any operation of any IDL, values as JSON), [`interop`] (the
//!   conformance suite and the ORB × ORB matrix, with [`orbs`], the vendor
//!   ORBs' scripts), [`suite`] (a whole study's cases), [`capture`] and
//!   [`replay`] (captured traffic measured, and sent again);
//! - distributed runs: [`agents`] (one bench run by N coordinated agents:
//!   the coordinator, the agent, their results merged) and [`lab`] (the
//!   benchmarks across an emulated network of namespaces: `lab run`,
//!   `lab suite`, `lab agents`, `lab matrix`);
//! - what every benchmark shares: [`options`] (placement, sockets, sizes),
//!   [`target`] (the reference, or our server embedded in this process),
//!   [`placement`] (pinning), [`progress`] (who hears about cases),
//!   [`interrupt`] (Ctrl-C as a flag the loops poll), [`gate`] (the start
//!   gate of an agent run), [`metrics`] (live counters and histograms for
//!   Prometheus while a run or a server runs);
//! - what a run records: [`results`] (the schema of docs/results-schema.md,
//!   read and written), [`hist`] (HDR histograms), [`runs`] (repeated runs
//!   folded into intervals), [`noise`] / [`procnet`] / [`sysinfo`] (the
//!   machine around the run), [`context`] (a results skeleton);
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
pub mod context;
pub mod dynamic;
pub mod gate;
pub mod hist;
pub mod interop;
pub mod interrupt;
pub mod lab;
pub mod merge;
pub mod metrics;
pub mod noise;
pub mod options;
pub mod orbs;
pub mod placement;
pub mod procnet;
pub mod progress;
pub mod rawtcp;
pub mod replay;
pub mod report;
pub mod results;
pub mod runs;
pub mod soak;
pub mod suite;
pub mod sysinfo;
pub mod target;
pub mod tcp;
pub mod tls_vs_plain;
pub mod units;
