//! `iiopbench orbs compare`: our client and server against the vendor
//! ORBs' and raw TCP, side by side in one run. The run is the engine's
//! (`iiopbench_engine::orbs_compare`); here are the flags, a short summary
//! of the ratios on stdout, and the files written (results, and a report
//! through `iiopbench report`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};

use iiopbench_engine::options::{CpuList, Sizes};
use iiopbench_engine::orbs_compare::{self, IdleServers, OrbsCompareJob, OurServer};
use iiopbench_engine::results::{self, Results};
use iiopbench_engine::run_context::RunContext;
use iiopbench_engine::units::{parse_duration, parse_percent, parse_size};

use crate::flags::{parse_cpus, ElemList, ModeList};

/// `orbs compare` options; unset ones take the `--quick` or full run's.
#[derive(Debug, Clone, Args)]
pub struct CompareOpts {
    /// The short run: octet and char at 1 KiB and 64 KiB, 2 rounds, 8 MiB
    /// and 0.2 s per run.
    #[arg(long)]
    pub quick: bool,
    /// Servers to measure, where installed (`ours` and `iiopbench orbs
    /// list`'s names), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "ours,omniorb,jacorb,tao")]
    pub servers: Vec<String>,
    /// Element types (default: octet,double,long,perfstruct,char).
    #[arg(long = "type", value_parser = <ElemList as std::str::FromStr>::from_str, value_name = "TYPES")]
    pub types: Option<ElemList>,
    /// Payload sizes (default: 1KiB,8KiB,64KiB,128KiB).
    #[arg(long = "size", value_parser = <Sizes as std::str::FromStr>::from_str, value_name = "SIZES")]
    pub sizes: Option<Sizes>,
    /// oneway, twoway or both.
    #[arg(long = "mode", value_parser = <ModeList as std::str::FromStr>::from_str, value_name = "MODES")]
    pub modes: Option<ModeList>,
    /// Rounds per point.
    #[arg(long, value_name = "N")]
    pub reps: Option<u32>,
    /// Rounds at most for a point whose pairs' rounds spread more than
    /// --spread-limit (default: twice --reps for the full run).
    #[arg(long, value_name = "N")]
    pub max_reps: Option<u32>,
    /// A pair's (max - min) / median of its rounds above which a point
    /// gets more rounds (default 30%).
    #[arg(long, value_parser = parse_percent, value_name = "PERCENT")]
    pub spread_limit: Option<f64>,
    /// Payload bytes per run (at least).
    #[arg(long, value_parser = parse_size, value_name = "SIZE")]
    pub total: Option<u64>,
    /// Each run lasts at least this long.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, value_name = "DURATION")]
    pub min_duration: Option<Duration>,
    /// Where every server runs (taskset syntax; default: the second CPU).
    #[arg(long, value_parser = parse_cpus, value_name = "CPUS")]
    pub server_cpus: Option<CpuList>,
    /// Where every client runs (default: the first CPU).
    #[arg(long, value_parser = parse_cpus, value_name = "CPUS")]
    pub client_cpus: Option<CpuList>,
    /// Servers not being measured: paused (SIGSTOP) or left running.
    #[arg(long, value_enum, default_value_t = IdleArg::Pause)]
    pub idle_servers: IdleArg,
    /// Section 6's buffering client's write size (0: leave section 6 out).
    #[arg(long, value_parser = parse_size, default_value = "64KiB", value_name = "SIZE")]
    pub oneway_buffer: u64,
    /// Leave out section 7 (our client coalescing oneways).
    #[arg(long)]
    pub no_coalesced: bool,
    /// How our server runs (auto: a thread per connection that polls 1 ms
    /// after each message when the server CPUs are apart from the
    /// client's, else the reactor).
    #[arg(long, value_enum, default_value_t = OurServerArg::Auto)]
    pub our_server: OurServerArg,
    /// Write the results here (docs/results-schema.md; kind `orbs`).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Then write the report (`iiopbench report`) into this directory.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// No progress lines.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `--idle-servers`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum IdleArg {
    Pause,
    Run,
}

/// `--our-server`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum OurServerArg {
    Auto,
    Reactor,
    ThreadsSpin,
}

impl CompareOpts {
    /// As the engine's job.
    pub fn job(&self) -> OrbsCompareJob {
        let base = if self.quick {
            OrbsCompareJob::quick()
        } else {
            OrbsCompareJob::default()
        };
        let reps = self.reps.unwrap_or(base.reps);
        OrbsCompareJob {
            servers: self.servers.clone(),
            types: self.types.clone().map_or(base.types, |t| t.0),
            sizes: self.sizes.clone().unwrap_or(base.sizes),
            modes: self.modes.clone().map_or(base.modes, |m| m.0),
            reps,
            max_reps: self.max_reps.unwrap_or(if self.reps.is_some() {
                reps.max(base.max_reps * reps / base.reps)
            } else {
                base.max_reps
            }),
            spread_limit: self.spread_limit.map_or(base.spread_limit, |p| p / 100.0),
            total: self.total.unwrap_or(base.total),
            min_duration: self.min_duration.unwrap_or(base.min_duration),
            server_cpus: self.server_cpus.clone(),
            client_cpus: self.client_cpus.clone(),
            idle_servers: match self.idle_servers {
                IdleArg::Pause => IdleServers::Pause,
                IdleArg::Run => IdleServers::Run,
            },
            oneway_buffer: (self.oneway_buffer > 0).then_some(self.oneway_buffer),
            coalesced: !self.no_coalesced,
            our_server: match self.our_server {
                OurServerArg::Auto => OurServer::Auto,
                OurServerArg::Reactor => OurServer::Reactor,
                OurServerArg::ThreadsSpin => OurServer::ThreadsSpin,
            },
            ..base
        }
    }
}

/// The summary printed when the run ends: per section, each ratio on a
/// line (median [range]).
pub fn summary(r: &Results) -> String {
    let mut s = String::new();
    for sec in iiopbench_engine::report::comparison_sections(r) {
        s.push_str(&format!("{}: {}\n", sec.title, sec.what));
        for row in &sec.rows {
            s.push_str(&format!(
                "  {}: {} [{}], {}\n",
                row[0],
                row[3].trim_end_matches(" (lower is better)"),
                row[4],
                row[1]
            ));
        }
    }
    if let Some(q) = &r.quality {
        for w in &q.warnings {
            s.push_str(&format!("warning: {w}\n"));
        }
    }
    s
}

/// Run `orbs compare`.
pub fn run(o: &CompareOpts, argv: &[String]) -> anyhow::Result<()> {
    let job = o.job();
    job.validate()?;
    let ctx = RunContext::new()
        .with_progress(crate::progress::unless_quiet(o.quiet))
        .with_command(argv.to_vec())
        .with_programs(Arc::new(crate::programs::ThisBinary::new()?));
    let (r, err) = orbs_compare::run(&job, &ctx);
    if let Some(f) = &o.json {
        results::write_atomic(f, &results::to_json(&r))?;
    }
    if let Some(dir) = &o.report {
        let name = o
            .json
            .as_ref()
            .map_or("orbs-compare".into(), |p| p.display().to_string());
        crate::cmd::report::write(&[(name, r.clone())], dir)?;
        if !o.quiet {
            eprintln!(
                "orbs compare: report in {}",
                dir.join("index.html").display()
            );
        }
    }
    out!("{}", summary(&r));
    match err {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}
