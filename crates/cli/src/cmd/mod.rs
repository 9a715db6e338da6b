//! One module per command: its clap flags, their conversion into the
//! engine's plain options, the run, and what is printed. Every module has
//! `pub fn run(args: &…Args) -> anyhow::Result<()>`.

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
pub mod compare;
pub mod merge;
pub mod serve_idl;
pub mod soak;
