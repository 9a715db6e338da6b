//! One module per command: its clap flags, their conversion into the
//! engine's typed job or options (beside the flags), the run, and what is
//! printed. Every command's entry point is `pub fn run(args: &…, …) ->
//! anyhow::Result<()>`, taking the command's parsed flags and, where the
//! command writes results, the command line as typed (`main_with_args`
//! maps the result to the exit status). Commands with more to them are
//! directories (`bench/`, `agents/`, `interop/`, `lab/`, `report/`,
//! `serve/`).

pub mod agents;
pub mod bench;
pub mod call;
pub mod compare;
pub mod interop;
pub mod ior;
pub mod job;
pub mod lab;
pub mod merge;
pub mod orbs;
pub mod orbs_compare;
pub mod pcap;
pub mod proxy;
pub mod replay;
pub mod report;
pub mod serve;
pub mod soak;
pub mod suite;
