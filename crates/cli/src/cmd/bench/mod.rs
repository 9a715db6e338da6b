//! `iiopbench bench <kind>`: one module per benchmark with its flags and
//! their conversion into the engine's typed job; here the subcommands,
//! the run every bench shares (the job run by the engine, the results
//! shown and written), and the parser that turns a bench command line
//! given after `--` (to `agents run`, `lab run` …) into a job.

pub mod balance;
pub mod closed;
pub mod connect;
pub mod dispatch;
pub mod latency;
pub mod packing;
pub mod params;
pub mod setup;
pub mod tcp;
pub mod throughput;

use std::path::Path;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use iiopbench_engine::job::Job;
use iiopbench_engine::run_context::RunContext;

use crate::examples;
use crate::flags::{BenchArgs, OutputOpts};
use crate::programs::ThisBinary;

/// The benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Typed throughput, CORBA-TTCP style (oneway / twoway / echo).
    #[command(after_help = examples::BENCH_THROUGHPUT)]
    Throughput(Box<throughput::ThroughputArgs>),
    /// Request/reply latency (closed loop, or open loop at a fixed rate).
    #[command(after_help = examples::BENCH_LATENCY)]
    Latency(Box<latency::LatencyArgs>),
    /// Connection set-up cost, step by step, over fresh connections.
    #[command(after_help = examples::BENCH_CONNECT)]
    Connect(Box<connect::ConnectArgs>),
    /// The physical baseline: the same sizes and patterns over plain TCP
    /// with a 12-byte frame header and no marshalling.
    #[command(after_help = examples::BENCH_TCP)]
    Tcp(Box<tcp::TcpArgs>),
    /// Closed system of C clients {invoke; think Z} with service time S:
    /// response time R, throughput X, Little's law, intervals.
    #[command(after_help = examples::BENCH_CLOSED)]
    Closed(Box<closed::ClosedArgs>),
    /// Connection set-up T across server states: running, started on
    /// demand (--spawn), in-process.
    #[command(after_help = examples::BENCH_SETUP)]
    Setup(Box<setup::SetupArgs>),
    /// Parameter passing: sequence<CD> vs char+double sequences in one or
    /// two calls.
    #[command(after_help = examples::BENCH_PARAMS)]
    Params(Box<params::ParamsArgs>),
    /// Dispatch latency vs method position; one object with 50 methods vs
    /// 50 objects.
    #[command(after_help = examples::BENCH_DISPATCH)]
    Dispatch(Box<dispatch::DispatchArgs>),
    /// Packing N client/method pairs: one object, N objects, N servers.
    #[command(after_help = examples::BENCH_PACKING)]
    Packing(Box<packing::PackingArgs>),
    /// Load balancing strategies 1-5 over S replicas with C clients.
    #[command(after_help = examples::BENCH_BALANCE)]
    Balance(Box<balance::BalanceArgs>),
}

impl BenchCommand {
    /// The job the flags describe.
    pub fn job(&self) -> anyhow::Result<Job> {
        Ok(match self {
            BenchCommand::Throughput(a) => Job::Throughput(a.job()?),
            BenchCommand::Latency(a) => Job::Latency(a.job()?),
            BenchCommand::Connect(a) => Job::Connect(a.job()),
            BenchCommand::Tcp(a) => Job::Tcp(a.job()),
            BenchCommand::Closed(a) => Job::Closed(a.job()),
            BenchCommand::Setup(a) => Job::Setup(a.job()),
            BenchCommand::Params(a) => Job::Params(a.job()),
            BenchCommand::Dispatch(a) => Job::Dispatch(a.job()),
            BenchCommand::Packing(a) => Job::Packing(a.job()),
            BenchCommand::Balance(a) => Job::Balance(a.job()),
        })
    }

    /// The flags every bench shares (sockets, placement, output).
    pub fn bench(&self) -> &BenchArgs {
        match self {
            BenchCommand::Throughput(a) => &a.bench,
            BenchCommand::Latency(a) => &a.bench,
            BenchCommand::Connect(a) => &a.bench,
            BenchCommand::Tcp(a) => &a.bench,
            BenchCommand::Closed(a) => &a.workload.bench,
            BenchCommand::Setup(a) => &a.bench,
            BenchCommand::Params(a) => &a.workload.bench,
            BenchCommand::Dispatch(a) => &a.workload.bench,
            BenchCommand::Packing(a) => &a.workload.bench,
            BenchCommand::Balance(a) => &a.workload.bench,
        }
    }

    /// Our server binary for child servers (`--server-exe`).
    fn server_exe(&self) -> Option<&Path> {
        match self {
            BenchCommand::Packing(a) => a.server_exe.as_deref(),
            BenchCommand::Balance(a) => a.server_exe.as_deref(),
            _ => None,
        }
    }
}

/// Run a job as this command line does: progress on the terminal unless
/// `quiet`, `argv` recorded, our own programs for processes; then show
/// and write what was measured (also when the run failed half-way; a job
/// that does not validate runs nothing, and then only its error is
/// shown) and make its error the command's outcome.
pub fn run_job(
    job: &Job,
    output: &OutputOpts,
    argv: &[String],
    programs: ThisBinary,
) -> anyhow::Result<()> {
    let ctx = RunContext::new()
        .with_progress(crate::progress::for_output(output))
        .with_command(argv.to_vec())
        .with_programs(Arc::new(programs));
    let (r, err) = job.run(&ctx);
    crate::output::finish(r, output, err)
}

/// Run `bench <kind>`.
pub fn run(c: &BenchCommand, argv: &[String]) -> anyhow::Result<()> {
    let job = c.job()?;
    let programs = ThisBinary::new()?.with_exe(c.server_exe());
    run_job(&job, &c.bench().output, argv, programs)
}

/// A bench command line on its own: `bench <kind> …`.
#[derive(Debug, Parser)]
#[command(name = "iiopbench", no_binary_name = true)]
struct Line {
    #[command(subcommand)]
    line: Words,
}

#[derive(Debug, Subcommand)]
enum Words {
    #[command(subcommand)]
    Bench(BenchCommand),
}

/// The job, and the output flags, of a bench command line given as words
/// (`bench latency --target REF …`; the leading `bench` may be left out).
/// The error is one line: clap's first.
pub fn parse_words(words: &[String]) -> Result<(Job, OutputOpts), String> {
    let mut argv: Vec<String> = Vec::with_capacity(words.len() + 1);
    if words.first().map(String::as_str) != Some("bench") {
        argv.push("bench".into());
    }
    argv.extend(words.iter().cloned());
    if argv.len() < 2 || argv[1].starts_with('-') {
        return Err(
            "give a bench command: `bench latency …`, `bench throughput …`, `bench connect …`"
                .into(),
        );
    }
    let line = Line::try_parse_from(&argv).map_err(|e| {
        e.to_string()
            .lines()
            .next()
            .unwrap_or("unparsable")
            .trim_start_matches("error: ")
            .to_string()
    })?;
    let Words::Bench(b) = line.line;
    let job = b.job().map_err(|e| e.to_string())?;
    Ok((job, b.bench().output.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn a_bench_line_becomes_its_job_and_output() {
        let (job, out) = parse_words(&words(
            "bench closed --target x.ior --clients 2 --json o.json",
        ))
        .unwrap();
        let Job::Closed(c) = &job else {
            panic!("{job:?}")
        };
        assert_eq!(c.clients, 2);
        assert_eq!(c.target.target.as_deref(), Some("x.ior"));
        assert_eq!(out.json.as_deref(), Some(Path::new("o.json")));
        let (job, _) = parse_words(&words("latency --count 5")).unwrap();
        assert_eq!(job.kind(), "latency");
        assert_eq!(
            parse_words(&words("bench latency --bogus")).unwrap_err(),
            "unexpected argument '--bogus' found"
        );
        assert!(parse_words(&words("--count 3")).is_err());
        assert_eq!(
            parse_words(&words("bench latency --op X::op")).unwrap_err(),
            "--op X::op names an IDL operation: give the IDL with --idl FILE"
        );
    }
}
