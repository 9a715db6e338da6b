//! The command tree: every command and subcommand, each one's flags
//! being its own module's under [`crate::cmd`]. Nothing below imports
//! this module; [`crate::run`] dispatches on it.

use clap::{Parser, Subcommand};

/// Benchmark and interoperability tester for CORBA ORBs over IIOP.
#[derive(Debug, Parser)]
#[command(
    name = "iiopbench",
    version,
    about,
    propagate_version = true,
    after_help = crate::examples::ROOT
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a benchmark.
    #[command(subcommand, after_help = crate::examples::BENCH)]
    Bench(crate::cmd::bench::BenchCommand),
    /// Serve the benchmark interface (or the raw-TCP baseline).
    #[command(after_help = crate::examples::SERVE)]
    Serve(Box<crate::cmd::serve::ServeOpts>),
    /// Bounded endurance run: mixed traffic from many connections, then
    /// errors, server memory and latency drift.
    #[command(after_help = crate::examples::SOAK)]
    Soak(Box<crate::cmd::soak::SoakArgs>),
    /// Invoke one operation of any server from its IDL; prints the result
    /// as JSON (docs/json-mapping.md).
    #[command(after_help = crate::examples::CALL)]
    Call(Box<crate::cmd::call::CallOpts>),
    /// Vendor ORBs (omniORB, JacORB, omniORBpy, TAO): list, install, build,
    /// start their bench.idl server, run their client.
    #[command(subcommand, after_help = crate::examples::ORBS)]
    Orbs(crate::cmd::orbs::OrbsCommand),
    /// Draw results files as an HTML + Markdown report with SVG figures.
    #[command(after_help = crate::examples::REPORT)]
    Report(Box<crate::cmd::report::ReportOpts>),
    /// Compare two results files case by case (ratios and verdicts).
    #[command(after_help = crate::examples::COMPARE)]
    Compare(Box<crate::cmd::compare::CompareArgs>),
    /// Merge results files; histograms of matching cases merge losslessly.
    #[command(after_help = crate::examples::MERGE)]
    Merge(Box<crate::cmd::merge::MergeArgs>),
    /// Run a study's suite of cases (fixtures/suites/*.toml).
    #[command(after_help = crate::examples::SUITE)]
    Suite(Box<crate::cmd::suite::SuiteOpts>),
    /// Network lab (root): hosts as network namespaces joined by links with
    /// delay, loss and a rate cap; run servers and bench clients across it.
    #[command(after_help = crate::examples::LAB)]
    Lab(Box<crate::cmd::lab::LabOpts>),
    /// One bench command run by N coordinated agents (local processes, lab
    /// hosts or Kubernetes pods), merged into one result.
    #[command(subcommand, after_help = crate::examples::AGENTS)]
    Agents(crate::cmd::agents::AgentsCommand),
    /// Conformance suite against one server, or the ORB x ORB matrix.
    #[command(after_help = crate::examples::INTEROP)]
    Interop(Box<crate::cmd::interop::InteropOpts>),
    /// Look inside an object reference (like catior) or write one (like
    /// genior).
    #[command(subcommand, after_help = crate::cmd::ior::EXAMPLES)]
    Ior(crate::cmd::ior::IorCommand),
    /// Measure captured GIOP traffic (pcap/pcapng): per-operation counts,
    /// sizes, statuses, response times, conformance findings.
    #[command(after_help = crate::examples::PCAP)]
    Pcap(Box<crate::cmd::pcap::PcapOpts>),
    /// Re-send a capture's requests to another server; compare replies
    /// and response times with the captured ones.
    #[command(after_help = crate::examples::REPLAY)]
    Replay(Box<crate::cmd::replay::ReplayOpts>),
    /// Run a job given as JSON (how the network lab runs one inside a lab
    /// host).
    #[command(subcommand, hide = true, after_help = crate::examples::JOB)]
    Job(crate::cmd::job::JobCommand),
    /// A GIOP proxy in front of one server: references lead back through
    /// it; it injects faults and records what it passes.
    #[command(after_help = crate::cmd::proxy::EXAMPLES)]
    Proxy(Box<crate::cmd::proxy::ProxyOpts>),
}
