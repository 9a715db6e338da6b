//! iiopbench as a library: the command-line options and `run()` live here so
//! that tests drive the whole CLI in-process against loopback servers (as
//! oha does). `main.rs` only calls [`main_with_args`].
//!
//! Modules: [`opts`] (clap structs), one `cmd_*` module per command, and
//! the shared measurement pieces: [`hist`] (HDR histograms), [`results`]
//! (the JSON schema and exporters), [`output`] (human tables and files),
//! [`sysinfo`] / [`placement`] (host, CPU time, pinning), [`rawtcp`] (the
//! physical baseline), [`units`] (sizes, sweeps, durations).

pub mod agents;
pub mod cmd;
pub mod cmd_call;
pub mod cmd_ior;
pub mod cmd_orbs;
pub mod cmd_pcap;
pub mod cmd_replay;
pub mod cmd_serve;
pub mod deprecated;
pub mod interop;
pub mod lab;
pub mod opts;
pub mod output;
pub mod progress;
pub mod report;
pub mod suite;
pub mod table;

use clap::Parser;

use opts::{BenchCommand, Cli, Command, OrbsCommand};

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
        Command::Serve(o) => cmd_serve::run(&o),
        Command::Soak(o) => cmd::soak::run(&o),
        Command::Call(o) => cmd_call::run(&o),
        Command::Orbs(c) => orbs(c),
        Command::Report(o) => report::run(&o),
        Command::Compare(o) => cmd::compare::run(&o),
        Command::Merge(o) => cmd::merge::run(&o),
        Command::Suite(o) => suite::run(&o),
        Command::Lab(o) => lab::run(&o),
        Command::Agents(c) => agents::run(&c),
        Command::Interop(o) => interop::run(&o),
        Command::Ior(c) => cmd_ior::run(&c),
        Command::Pcap(o) => cmd_pcap::run(&o),
        Command::Replay(o) => cmd_replay::run(&o),
    };
    match outcome {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("iiopbench: {e:#}");
            1
        }
    }
}

fn orbs(c: OrbsCommand) -> anyhow::Result<()> {
    match c {
        OrbsCommand::List => cmd_orbs::list(),
        OrbsCommand::Install { name } => cmd_orbs::run_script(&name, "install", &[]),
        OrbsCommand::Build { name } => cmd_orbs::run_script(&name, "build", &[]),
        OrbsCommand::Start {
            name,
            listen,
            ior_file,
        } => {
            let (host, port) = cmd_orbs::split_listen(&listen)?;
            // The start scripts take host and port apart
            // (docs/vendor-protocol.md).
            let mut args = vec![
                "--host".to_string(),
                host,
                "--port".into(),
                port.to_string(),
            ];
            if let Some(f) = ior_file {
                args.extend(["--ior-file".into(), f.display().to_string()]);
            }
            Err(cmd_orbs::exec_script(&name, "start", &args))
        }
        OrbsCommand::Client { name, args } => Err(cmd_orbs::exec_script(&name, "client", &args)),
    }
}

/// Entry point used by `main`: rewrite deprecated spellings (one warning
/// line each on stderr), parse `args` and run; returns the exit status.
pub fn main_with_args<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let rewritten = deprecated::rewrite(args.into_iter().map(Into::into).collect());
    for w in &rewritten.warnings {
        eprintln!("{w}");
    }
    match Cli::try_parse_from(rewritten.args) {
        Ok(cli) => run(cli),
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            code
        }
    }
}
