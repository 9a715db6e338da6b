//! One module per command: its clap flags, their conversion into the
//! engine's plain options, the run, and what is printed. Every command's
//! entry point is `pub fn run(args: &…) -> anyhow::Result<()>`, taking the
//! command's parsed flags (`main_with_args` maps the result to the exit
//! status). Commands with more to them are directories (`interop/`,
//! `lab/`, `report/`, `serve/`).

pub mod agents;
pub mod bench_balance;
pub mod bench_closed;
pub mod bench_connect;
pub mod bench_dispatch;
pub mod bench_latency;
pub mod bench_packing;
pub mod bench_params;
pub mod bench_setup;
pub mod bench_tcp;
pub mod bench_throughput;
pub mod call;
pub mod compare;
pub mod interop;
pub mod ior;
pub mod lab;
pub mod merge;
pub mod orbs;
pub mod pcap;
pub mod proxy;
pub mod replay;
pub mod report;
pub mod serve;
pub mod soak;
pub mod suite;
