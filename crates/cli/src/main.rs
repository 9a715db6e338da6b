//! `iiopbench`: parse the command line, run, exit with its status.

fn main() {
    std::process::exit(iiopbench::main_with_args(std::env::args_os()));
}
