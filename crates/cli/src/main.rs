//! `iiopbench`: the command line.

use clap::Parser;

/// Benchmark and interoperability tester for CORBA ORBs over IIOP.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {}

fn main() {
    let _ = Cli::parse();
}
