//! iiopbench as a library: the command-line options and `run()` live here so
//! that tests drive the whole CLI in-process against loopback servers (as
//! oha does). `main.rs` only calls [`main_with_args`].
//!
//! This crate is argument parsing and printing only; what measures is the
//! `iiopbench_engine` library. Modules: [`opts`] (the command tree and the
//! flags every command shares, with their conversion into the engine's
//! plain options), [`cmd`] (one module per command, all with the same
//! `run` signature), [`output`] / [`table`]
//! (human tables and results files), [`progress`] (the terminal spinner).

pub mod cmd;
pub mod opts;
pub mod output;
pub mod progress;
pub mod table;

use clap::Parser;

use opts::{BenchCommand, Cli, Command};

/// Run a parsed command line; returns the exit status. Benchmarks that
/// fail half-way still write what they measured, then name the failure
/// in one line on stderr and return 1.
pub fn run(cli: Cli) -> i32 {
    iiopbench_engine::interrupt::install();
    let outcome = match cli.command {
        Command::Bench(BenchCommand::Throughput(o)) => cmd::bench_throughput::run(&o),
        Command::Bench(BenchCommand::Latency(o)) => cmd::bench_latency::run(&o),
        Command::Bench(BenchCommand::Connect(o)) => cmd::bench_connect::run(&o),
        Command::Bench(BenchCommand::Tcp(o)) => cmd::bench_tcp::run(&o),
        Command::Bench(BenchCommand::Closed(o)) => cmd::bench_closed::run(&o),
        Command::Bench(BenchCommand::Setup(o)) => cmd::bench_setup::run(&o),
        Command::Bench(BenchCommand::Params(o)) => cmd::bench_params::run(&o),
        Command::Bench(BenchCommand::Dispatch(o)) => cmd::bench_dispatch::run(&o),
        Command::Bench(BenchCommand::Packing(o)) => cmd::bench_packing::run(&o),
        Command::Bench(BenchCommand::Balance(o)) => cmd::bench_balance::run(&o),
        Command::Serve(o) => cmd::serve::run(&o),
        Command::Soak(o) => cmd::soak::run(&o),
        Command::Call(o) => cmd::call::run(&o),
        Command::Orbs(c) => cmd::orbs::run(&c),
        Command::Report(o) => cmd::report::run(&o),
        Command::Compare(o) => cmd::compare::run(&o),
        Command::Merge(o) => cmd::merge::run(&o),
        Command::Suite(o) => cmd::suite::run(&o),
        Command::Lab(o) => cmd::lab::run(&o),
        Command::Agents(c) => cmd::agents::run(&c),
        Command::Interop(o) => cmd::interop::run(&o),
        Command::Ior(c) => cmd::ior::run(&c),
        Command::Pcap(o) => cmd::pcap::run(&o),
        Command::Replay(o) => cmd::replay::run(&o),
    };
    match outcome {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("iiopbench: {e:#}");
            1
        }
    }
}

/// Entry point used by `main`: parse `args` and run; returns the exit
/// status.
pub fn main_with_args<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    match Cli::try_parse_from(args) {
        Ok(cli) => run(cli),
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            code
        }
    }
}
