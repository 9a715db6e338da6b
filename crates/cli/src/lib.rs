//! iiopbench as a library: the command-line options and `run()` live here so
//! that tests drive the whole CLI in-process against loopback servers (as
//! oha does). `main.rs` only calls [`main_with_args`].
//!
//! This crate is argument parsing and printing only; what measures is the
//! `iiopbench_engine` library, driven with typed jobs. Modules, top down:
//! [`opts`] (the command tree), [`cmd`] (one module per command: its
//! flags, their conversion into the engine's job or options, the run,
//! what is printed); below them [`flags`] (the flag groups commands
//! share), [`output`] / [`table`] (tables and results files),
//! [`progress`] (the terminal spinner), [`stdout`] (printing that a
//! closed pipe ends quietly), [`words`] (the engine's words for
//! options as flags), [`programs`] (this binary started as a server, an
//! agent or a job's process) and [`examples`] (the `--help` examples).
//! This file dispatches.

#[macro_use]
pub mod stdout;

pub mod cmd;
pub mod examples;
pub mod flags;
pub mod gates;
pub mod metrics;
pub mod opts;
pub mod output;
pub mod programs;
pub mod progress;
pub mod table;
pub mod words;

use clap::Parser;

use opts::{Cli, Command};

/// Run a parsed command line (`argv`, as typed, is what results record);
/// returns the exit status. Benchmarks that fail half-way still write
/// what they measured, then name the failure in one line on stderr and
/// return 1; a run whose result fails a `--threshold` returns
/// [`gates::EXIT_STATUS`].
pub fn run(cli: Cli, argv: &[String]) -> i32 {
    iiopbench_engine::interrupt::install();
    let outcome = match cli.command {
        Command::Bench(c) => cmd::bench::run(&c, argv),
        Command::Serve(o) => cmd::serve::run(&o),
        Command::Soak(o) => cmd::soak::run(&o, argv),
        Command::Call(o) => cmd::call::run(&o),
        Command::Orbs(c) => cmd::orbs::run(&c, argv),
        Command::Report(o) => cmd::report::run(&o),
        Command::Compare(o) => cmd::compare::run(&o),
        Command::Merge(o) => cmd::merge::run(&o),
        Command::Suite(o) => cmd::suite::run(&o, argv),
        Command::Lab(o) => cmd::lab::run(&o, argv),
        Command::Agents(c) => cmd::agents::run(&c, argv),
        Command::Interop(o) => cmd::interop::run(&o, argv),
        Command::Ior(c) => cmd::ior::run(&c),
        Command::Pcap(o) => cmd::pcap::run(&o, argv),
        Command::Replay(o) => cmd::replay::run(&o, argv),
        Command::Job(c) => cmd::job::run(&c, argv),
        Command::Proxy(o) => cmd::proxy::run(&o),
    };
    let status = gates::exit_status(&outcome);
    if let Err(e) = outcome {
        eprintln!("iiopbench: {}", words::flags(&error_line(&e)));
    }
    status
}

/// An error and its causes in one line, as `{:#}` writes them, but a
/// cause whose text its error already says (an error that prints its
/// source and also names it as its source) only once.
pub fn error_line(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

/// clap's error in one line: its text up to the first blank line (the
/// usage and tips after it dropped), without the `error: ` prefix.
fn usage_error_line(e: &clap::Error) -> String {
    let text = e.to_string();
    let first: Vec<&str> = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    first.join(" ").trim_start_matches("error: ").to_string()
}

/// Entry point used by `main`: parse `args` and run; returns the exit
/// status.
pub fn main_with_args<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    let argv: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    match Cli::try_parse_from(args) {
        Ok(cli) => run(cli, &argv),
        Err(e) => {
            if !e.use_stderr() {
                // --help, --version: clap's text on stdout.
                let _ = e.print();
                return 0;
            }
            if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                // A command without its subcommand: its help.
                let _ = e.print();
                return 2;
            }
            eprintln!("iiopbench: {} (--help for usage)", usage_error_line(&e));
            2
        }
    }
}
