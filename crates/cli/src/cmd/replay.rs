//! `iiopbench replay FILE --target REF`: re-send the requests of a capture
//! to another server and report per operation the new response times
//! beside the captured ones, and every reply that differs from the
//! captured one. The replay is the engine's (`iiopbench_engine::replay`);
//! here are the flags and the table.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use iiopbench_engine::replay::{self, parse_speed, Speed};
use iiopbench_engine::results;

use crate::flags::TlsArgs;
use crate::table::Table;

/// Options of `iiopbench replay`.
#[derive(Debug, Clone, Args)]
pub struct ReplayOpts {
    /// The capture (pcap or pcapng).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The server to replay against: `IOR:…`, `corbaloc:…`, or a file
    /// holding one. Requests to the capture's most used object key go to
    /// this reference's key; others keep their captured key.
    #[arg(long, short, value_name = "REF")]
    pub target: String,
    /// Pacing: `1x` the captured times, `2x` twice as fast, `max` no
    /// waiting (only the captured request/reply ordering).
    #[arg(long, default_value = "max", value_parser = parse_speed)]
    pub speed: Speed,
    /// Operations whose reply bodies must equal the captured ones (besides
    /// every `echo_*` operation, which bench.idl makes deterministic).
    #[arg(long, value_name = "OP", num_args = 1..)]
    pub deterministic: Vec<String>,
    /// Compare reply bodies as typed values decoded with this IDL (so
    /// that replies in another byte order or alignment compare); without
    /// it bodies compare byte for byte when order and alignment agree.
    #[arg(long, value_name = "FILE")]
    pub idl: Option<PathBuf>,
    /// The interface of the captured operations in --idl.
    #[arg(long, default_value = "Bench::Perf", value_name = "NAME")]
    pub interface: String,
    /// Per-request timeout.
    #[arg(long, allow_hyphen_values = true, default_value = "30s", value_parser = iiopbench_engine::units::parse_duration, value_name = "DURATION")]
    pub timeout: Duration,
    /// Write the results (kind `replay`) as JSON; `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No table.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub tls: TlsArgs,
}

impl ReplayOpts {
    /// As the engine's options.
    pub fn engine(&self) -> replay::ReplayOpts {
        replay::ReplayOpts {
            file: self.file.clone(),
            target: self.target.clone(),
            speed: self.speed,
            deterministic: self.deterministic.clone(),
            idl: self.idl.clone(),
            interface: self.interface.clone(),
            timeout: self.timeout,
            tls: self.tls.engine(),
            progress: crate::progress::unless_quiet(self.quiet),
        }
    }
}

/// Run `iiopbench replay`: the table unless quiet (or the JSON owns
/// stdout), the results if asked; an error when any reply differs.
pub fn run(o: &ReplayOpts, argv: &[String]) -> anyhow::Result<()> {
    let mut run = replay::run(&o.engine())?;
    run.results.command = argv.to_vec();
    if !o.quiet && o.json.as_deref() != Some(std::path::Path::new("-")) {
        out!("{}", human(o, &run));
    }
    if let Some(path) = &o.json {
        let text = results::to_json(&run.results);
        if path.as_os_str() == "-" {
            outln!("{text}");
        } else {
            results::write_atomic(path, &text)?;
        }
    }
    let total_diffs = run.total_diffs;
    if total_diffs > 0 {
        anyhow::bail!("{total_diffs} replayed request(s) differ from the capture");
    }
    Ok(())
}

/// The heading line, the table per operation and the differences.
fn human(o: &ReplayOpts, run: &replay::ReplayRun) -> String {
    let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    let locates = match run.locate_requests {
        0 => String::new(),
        n => format!(", {n} LocateRequests"),
    };
    let mut out = format!(
        "replay of {} ({} requests{locates}, {} connections) against {} at speed {}\n",
        o.file.display(),
        run.requests,
        run.connections,
        o.target,
        match o.speed {
            Speed::Max => "max".to_string(),
            Speed::Factor(f) => format!("{f}x"),
        }
    );
    let mut t = Table::new([
        "operation",
        "object key",
        "captured",
        "replayed",
        "failed",
        "cap p50 µs",
        "new p50 µs",
        "cap p99 µs",
        "new p99 µs",
        "bodies compared",
        "differing",
    ]);
    for e in &run.ops {
        t.row([
            e.operation.clone(),
            e.key.clone(),
            e.captured.to_string(),
            e.replayed.to_string(),
            e.failed.to_string(),
            f(e.captured_us(0.5)),
            f(e.replay_us(0.5)),
            f(e.captured_us(0.99)),
            f(e.replay_us(0.99)),
            format!(
                "{}{}",
                e.compared_bodies,
                if e.not_comparable > 0 {
                    format!(" ({} not comparable)", e.not_comparable)
                } else {
                    String::new()
                }
            ),
            e.differing.to_string(),
        ]);
    }
    out.push_str(&t.render());
    if run.diffs.is_empty() {
        out.push_str("replies: all as captured\n");
    } else {
        out.push_str(&format!("differences ({}):\n", run.total_diffs));
        for d in run.diffs.iter().take(50) {
            out.push_str(&format!("  {d}\n"));
        }
    }
    out
}
