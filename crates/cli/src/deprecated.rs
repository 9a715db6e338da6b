//! Old spellings of options, accepted for one release (issue #21): before
//! clap sees the command line, [`rewrite`] turns each old spelling into
//! today's and returns one warning line for it. The table is [`RULES`];
//! docs/cli.md lists the same rows ("Deprecated spellings") and
//! tests/help.rs checks that every rule names a command that exists, an
//! old spelling that command no longer has and a new one it has.
//!
//! Only the tokens of the command's own options are looked at: the rewrite
//! stops at `--` (what follows belongs to another command, e.g. the bench
//! arguments of `lab run`, which that command warns about itself), and
//! commands without rules (`orbs client`) are passed through untouched.

use std::ffi::OsString;

/// How an old spelling becomes today's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fix {
    /// The same value under a new name.
    Rename(&'static str),
    /// A value in plain seconds under a new name: `20` becomes `20s`; a
    /// value with a unit passes as it is.
    RenameSeconds(&'static str),
    /// A bare number of seconds (`120`) meant what these options mean
    /// today: each gets `120s`. A value with a unit is today's option of
    /// the same name and is left alone.
    BareSeconds(&'static [&'static str]),
    /// A bare number of percent (`10`) becomes `10%`, same name.
    BarePercent,
    /// A bare fraction (`0.05`) becomes a percentage (`5%`), same name.
    BareFraction,
    /// `--host H` / `--port P` become one `--listen H:P`.
    ListenHost,
    ListenPort,
    /// A switch that now takes a file: `--json` alone becomes `--json -`
    /// (standard output), recognised by the positional argument it
    /// would otherwise swallow.
    SwitchToStdout,
}

/// One old spelling of one command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// The command path, e.g. `bench tcp`.
    pub command: &'static str,
    /// The old option, e.g. `--out` or `-o`.
    pub old: &'static str,
    pub fix: Fix,
}

const fn rule(command: &'static str, old: &'static str, fix: Fix) -> Rule {
    Rule { command, old, fix }
}

/// The bench commands whose `--warmup` was a duration and whose
/// `--until-ci` took a fraction.
const WORKLOADS: [&str; 5] = [
    "bench closed",
    "bench params",
    "bench dispatch",
    "bench packing",
    "bench balance",
];

/// Every deprecated spelling (docs/cli.md has the same table).
pub const RULES: &[Rule] = &[
    // Results files are `--json FILE` everywhere.
    rule("suite", "--out", Fix::Rename("--json")),
    rule("merge", "--output", Fix::Rename("--json")),
    rule("merge", "-o", Fix::Rename("--json")),
    rule("ior decode", "--json", Fix::SwitchToStdout),
    // Reports are `--report DIR` everywhere.
    rule("report", "--out", Fix::Rename("--report")),
    rule("report", "-o", Fix::Rename("--report")),
    // A written IOR is `--ior-file FILE` everywhere.
    rule("ior make", "--output", Fix::Rename("--ior-file")),
    rule("ior make", "-o", Fix::Rename("--ior-file")),
    // Timeouts are durations; `--timeout` is the per-call one everywhere,
    // `--ready-timeout` the one for a server to come up.
    rule(
        "interop",
        "--timeout",
        Fix::BareSeconds(&["--ready-timeout", "--max-duration"]),
    ),
    rule(
        "interop",
        "--request-timeout",
        Fix::RenameSeconds("--timeout"),
    ),
    rule("suite", "--orb-timeout", Fix::Rename("--ready-timeout")),
    // Percentages are written `5%`.
    rule("compare", "--noise", Fix::BarePercent),
    rule("compare", "--min-effect", Fix::BarePercent),
    rule(WORKLOADS[0], "--until-ci", Fix::BareFraction),
    rule(WORKLOADS[1], "--until-ci", Fix::BareFraction),
    rule(WORKLOADS[2], "--until-ci", Fix::BareFraction),
    rule(WORKLOADS[3], "--until-ci", Fix::BareFraction),
    rule(WORKLOADS[4], "--until-ci", Fix::BareFraction),
    // `--warmup` is a number of calls; a warm-up time is
    // `--warmup-duration`.
    rule(WORKLOADS[0], "--warmup", Fix::Rename("--warmup-duration")),
    rule(WORKLOADS[1], "--warmup", Fix::Rename("--warmup-duration")),
    rule(WORKLOADS[2], "--warmup", Fix::Rename("--warmup-duration")),
    rule(WORKLOADS[3], "--warmup", Fix::Rename("--warmup-duration")),
    rule(WORKLOADS[4], "--warmup", Fix::Rename("--warmup-duration")),
    // CPUs and threads of a server are `--server-cpus` / `--server-threads`.
    rule("serve", "--cpus", Fix::Rename("--server-cpus")),
    rule("serve", "--threads", Fix::Rename("--server-threads")),
    // A listen address is `--listen HOST:PORT`.
    rule("orbs start", "--host", Fix::ListenHost),
    rule("orbs start", "--port", Fix::ListenPort),
    // `--target` is an object reference; a raw-TCP server is
    // `--baseline-target HOST:PORT`.
    rule("bench tcp", "--target", Fix::Rename("--baseline-target")),
    // `--runs` is a count; compare's noise files are `--noise-from`.
    rule("compare", "--runs", Fix::Rename("--noise-from")),
];

/// Commands with subcommands of their own.
const GROUPS: [&str; 4] = ["bench", "orbs", "lab", "ior"];

/// A command line with today's spellings, and one `warning: …` line per
/// old spelling found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewritten {
    pub args: Vec<OsString>,
    pub warnings: Vec<String>,
}

/// The command path of `args` (program name first), and how many tokens
/// it took.
fn command_path(args: &[OsString]) -> (String, usize) {
    let word = |i: usize| {
        args.get(i)
            .and_then(|a| a.to_str())
            .filter(|a| !a.starts_with('-'))
    };
    match word(1) {
        Some(top) if GROUPS.contains(&top) => match word(2) {
            Some(sub) => (format!("{top} {sub}"), 3),
            None => (top.to_string(), 2),
        },
        Some(top) => (top.to_string(), 2),
        None => (String::new(), 1),
    }
}

/// Rewrite the old spellings in `args` (program name first): the
/// [`RULES`], then bare numbers given to options that take a duration or
/// a size ([`bare_units`]).
pub fn rewrite(args: Vec<OsString>) -> Rewritten {
    let mut r = rewrite_rules(args);
    let (command, start) = command_path(&r.args);
    r.args = bare_units(&command, start, r.args, &mut r.warnings);
    r
}

/// The value names of the options whose bare numbers are deprecated:
/// a duration (`--duration 10` is `10s`) and a size (`--total 1024` is
/// `1KiB`). A list of sizes (`SIZES`) counts when every element is a bare
/// number (`1024,65536`); a sweep never does.
const UNIT_VALUES: [&str; 3] = ["DURATION", "SIZE", "SIZES"];

/// Bare numbers given to `command`'s duration and size options (the
/// tokens from `start` to a `--`) get their unit — seconds, bytes — with
/// one warning each. Zero, the same in every unit, passes as it is.
pub fn bare_units(
    command: &str,
    start: usize,
    args: Vec<OsString>,
    warnings: &mut Vec<String>,
) -> Vec<OsString> {
    let units = unit_options(command);
    if units.is_empty() {
        return args;
    }
    let end = args[start.min(args.len())..]
        .iter()
        .position(|a| a == "--")
        .map_or(args.len(), |i| start + i);
    let mut out = args;
    let mut i = start;
    while i < end {
        let Some(t) = out[i].to_str().map(str::to_string) else {
            i += 1;
            continue;
        };
        let (name, inline) = match t.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (t.clone(), None),
        };
        let Some((_, value_name)) = units.iter().find(|(l, _)| *l == name) else {
            i += 1;
            continue;
        };
        let (value, at) = match inline {
            Some(v) => (v, None),
            None => match out.get(i + 1).and_then(|v| v.to_str()) {
                Some(v) if i + 1 < end => (v.to_string(), Some(i + 1)),
                _ => break,
            },
        };
        let fixed = if value_name == "DURATION" {
            is_bare_nonzero(&value).then(|| format!("{value}s"))
        } else {
            bare_sizes(&value)
        };
        if let Some(fixed) = fixed {
            let what = if value_name == "DURATION" {
                "seconds"
            } else {
                "bytes"
            };
            warnings.push(format!(
                "warning: `{name} {value}` ({what}, no unit) is deprecated for `{command}`; use `{name} {fixed}`"
            ));
            match at {
                Some(j) => out[j] = fixed.into(),
                None => out[i] = format!("{name}={fixed}").into(),
            }
        }
        i += if at.is_some() { 2 } else { 1 };
    }
    out
}

/// `command`'s long options that take a duration or a size, with the
/// value name (`DURATION`, `SIZE`, `SIZES`), from the command tree itself.
fn unit_options(command: &str) -> Vec<(String, String)> {
    use clap::CommandFactory;
    let root = crate::opts::Cli::command();
    let mut cmd = &root;
    for word in command.split_whitespace() {
        match cmd.find_subcommand(word) {
            Some(c) => cmd = c,
            None => return Vec::new(),
        }
    }
    if command.is_empty() {
        return Vec::new();
    }
    cmd.get_arguments()
        .filter_map(|a| {
            let long = a.get_long()?;
            let names = a.get_value_names()?;
            let v = names.first()?.as_str();
            UNIT_VALUES
                .contains(&v)
                .then(|| (format!("--{long}"), v.to_string()))
        })
        .collect()
}

/// The [`RULES`] applied to `args`.
fn rewrite_rules(args: Vec<OsString>) -> Rewritten {
    let (command, start) = command_path(&args);
    let rules: Vec<&Rule> = RULES.iter().filter(|r| r.command == command).collect();
    if rules.is_empty() || args.len() <= start {
        return Rewritten {
            args,
            warnings: Vec::new(),
        };
    }
    let end = args[start..]
        .iter()
        .position(|a| a == "--")
        .map_or(args.len(), |i| start + i);
    let mut out: Vec<OsString> = args[..start].to_vec();
    let mut warnings = Vec::new();
    let toks = &args[start..end];
    let mut listen: Option<(usize, Option<String>, Option<String>)> = None;
    let mut i = 0;
    while i < toks.len() {
        let Some(t) = toks[i].to_str() else {
            out.push(toks[i].clone());
            i += 1;
            continue;
        };
        let Some((r, inline)) = rules.iter().find_map(|r| matches(r.old, t).map(|v| (r, v))) else {
            out.push(toks[i].clone());
            i += 1;
            continue;
        };
        let (cmd, old) = (r.command, r.old);
        if r.fix == Fix::SwitchToStdout {
            if inline.is_none() && is_switch(toks, i) {
                warnings.push(format!(
                    "warning: `{old}` without a file is deprecated for `{cmd}`; use `{old} -`"
                ));
                out.extend([old.into(), "-".into()]);
            } else {
                out.push(toks[i].clone());
            }
            i += 1;
            continue;
        }
        // The option's value: inline (`--out=F`), else the next token.
        let (value, used) = match (inline, toks.get(i + 1).and_then(|v| v.to_str())) {
            (Some(v), _) => (v.to_string(), 1),
            (None, Some(v)) => (v.to_string(), 2),
            // No value: clap will say so.
            (None, None) => {
                out.push(toks[i].clone());
                i += 1;
                continue;
            }
        };
        match r.fix {
            Fix::Rename(new) => {
                warnings.push(format!(
                    "warning: `{old}` is deprecated for `{cmd}`; use `{new}`"
                ));
                out.push(new.into());
                out.push(value.into());
            }
            Fix::RenameSeconds(new) => {
                let v = if is_bare_number(&value) {
                    format!("{value}s")
                } else {
                    value.clone()
                };
                warnings.push(format!(
                    "warning: `{old} {value}` is deprecated for `{cmd}`; use `{new} {v}`"
                ));
                out.push(new.into());
                out.push(v.into());
            }
            Fix::BareSeconds(news) if is_bare_number(&value) => {
                let use_ = news
                    .iter()
                    .map(|n| format!("{n} {value}s"))
                    .collect::<Vec<_>>()
                    .join(" ");
                warnings.push(format!(
                    "warning: `{old} {value}` (seconds) is deprecated for `{cmd}`; use `{use_}`"
                ));
                for n in news {
                    out.push((*n).into());
                    out.push(format!("{value}s").into());
                }
            }
            Fix::BarePercent if is_bare_number(&value) => {
                warnings.push(format!(
                    "warning: `{old} {value}` is deprecated for `{cmd}`; use `{old} {value}%`"
                ));
                out.push(old.into());
                out.push(format!("{value}%").into());
            }
            Fix::BareFraction if is_bare_number(&value) => {
                let pct = value
                    .parse::<f64>()
                    .map(|f| format!("{}%", (f * 100.0 * 1e6).round() / 1e6))
                    .unwrap_or_else(|_| format!("{value}%"));
                warnings.push(format!(
                    "warning: `{old} {value}` is deprecated for `{cmd}`; use `{old} {pct}`"
                ));
                out.push(old.into());
                out.push(pct.into());
            }
            Fix::ListenHost | Fix::ListenPort => {
                let at = out.len();
                let l = listen.get_or_insert((at, None, None));
                if r.fix == Fix::ListenHost {
                    l.1 = Some(value);
                } else {
                    l.2 = Some(value);
                }
            }
            // A value with a unit: today's option of the same name.
            Fix::BareSeconds(_) | Fix::BarePercent | Fix::BareFraction => {
                out.extend(toks[i..i + used].iter().cloned());
            }
            Fix::SwitchToStdout => unreachable!("handled above"),
        }
        i += used;
    }
    if let Some((at, host, port)) = listen {
        let cmd = rules[0].command;
        let old = [
            host.as_ref().map(|h| format!("--host {h}")),
            port.as_ref().map(|p| format!("--port {p}")),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
        let host = host.unwrap_or_else(|| "127.0.0.1".into());
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]")
        } else {
            host
        };
        let addr = format!("{host}:{}", port.unwrap_or_else(|| "0".into()));
        let verb = if old.matches("--").count() > 1 {
            "are"
        } else {
            "is"
        };
        warnings.push(format!(
            "warning: `{old}` {verb} deprecated for `{cmd}`; use `--listen {addr}`"
        ));
        out.splice(at..at, ["--listen".into(), addr.into()]);
    }
    out.extend(args[end..].iter().cloned());
    Rewritten {
        args: out,
        warnings,
    }
}

/// Whether token `t` is option `old`: `Some(None)` as a word of its own,
/// `Some(Some(v))` with an inline value (`--out=F`, `-oF`, `-o=F`).
fn matches<'a>(old: &str, t: &'a str) -> Option<Option<&'a str>> {
    if t == old {
        return Some(None);
    }
    let rest = t.strip_prefix(old)?;
    if let Some(v) = rest.strip_prefix('=') {
        return Some(Some(v));
    }
    // `-oFILE`: a short option glued to its value.
    (!old.starts_with("--") && !rest.is_empty()).then_some(Some(rest))
}

/// A plain number other than zero (zero is the same in every unit).
fn is_bare_nonzero(v: &str) -> bool {
    is_bare_number(v) && v.parse::<f64>().is_ok_and(|v| v != 0.0)
}

/// A size, or a comma list of sizes, given as bare numbers of bytes
/// (`1024`, `1024,65536`), with each element's unit (`1KiB,64KiB`); `None`
/// when there is nothing to convert: zero alone, a sweep, or a list where
/// some element already has its unit (today's spelling).
fn bare_sizes(value: &str) -> Option<String> {
    let parts: Vec<&str> = value.split(',').collect();
    if !parts.iter().all(|p| is_bare_number(p)) || !parts.iter().any(|p| is_bare_nonzero(p)) {
        return None;
    }
    parts
        .iter()
        .map(|p| match p.parse::<u64>().ok()? {
            0 => Some("0".to_string()),
            n => Some(iiopbench_engine::units::format_size(n)),
        })
        .collect::<Option<Vec<_>>>()
        .map(|v| v.join(","))
}

/// A plain number (`120`, `0.05`), no unit.
fn is_bare_number(v: &str) -> bool {
    !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.') && v.parse::<f64>().is_ok()
}

/// Whether the option at `toks[i]` is used as a switch (the old form):
/// it ends the line, or the token after it is the only positional
/// argument there is (taking it as the option's value would leave none).
fn is_switch(toks: &[OsString], i: usize) -> bool {
    let Some(next) = toks.get(i + 1).and_then(|t| t.to_str()) else {
        return true;
    };
    if next.starts_with('-') && next != "-" {
        return true;
    }
    let positional = |t: &OsString| t.to_str().is_none_or(|t| t == "-" || !t.starts_with('-'));
    !toks
        .iter()
        .enumerate()
        .any(|(j, t)| j != i && j != i + 1 && positional(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rw(line: &str) -> (String, Vec<String>) {
        let args = std::iter::once("iiopbench")
            .chain(line.split_whitespace())
            .map(OsString::from)
            .collect();
        let r = rewrite(args);
        let s = r.args[1..]
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        (s, r.warnings)
    }

    #[test]
    fn bare_durations_and_sizes_get_their_unit_and_a_warning() {
        let (a, w) = rw("bench latency --duration 10 --size 1024 --count 5 --timeout 2.5");
        assert_eq!(
            a,
            "bench latency --duration 10s --size 1KiB --count 5 --timeout 2.5s"
        );
        assert_eq!(
            w,
            [
                "warning: `--duration 10` (seconds, no unit) is deprecated for `bench latency`; use `--duration 10s`",
                "warning: `--size 1024` (bytes, no unit) is deprecated for `bench latency`; use `--size 1KiB`",
                "warning: `--timeout 2.5` (seconds, no unit) is deprecated for `bench latency`; use `--timeout 2.5s`",
            ]
        );
        assert_eq!(
            rw("bench throughput --total=1000").0,
            "bench throughput --total=1000B"
        );
        assert_eq!(rw("serve --idle-timeout 30").0, "serve --idle-timeout 30s");
        // A rule's rewrite comes first: interop's bare --timeout is the
        // ready timeout and the run's cap, once.
        let (a, w) = rw("interop --timeout 60");
        assert_eq!(a, "interop --ready-timeout 60s --max-duration 60s");
        assert_eq!(w.len(), 1, "{w:?}");
        // A list of bare sizes: each element gets its unit, one warning.
        let (a, w) = rw("bench throughput --size 1024,65536,0 --total 1MiB");
        assert_eq!(a, "bench throughput --size 1KiB,64KiB,0 --total 1MiB");
        assert_eq!(
            w,
            ["warning: `--size 1024,65536,0` (bytes, no unit) is deprecated for `bench throughput`; use `--size 1KiB,64KiB,0`"]
        );
        assert_eq!(
            rw("bench tcp --size=100,2048").0,
            "bench tcp --size=100B,2KiB"
        );
        // Zero, units, lists with units and sweeps, counts: today's
        // spellings.
        for line in [
            "bench connect --pause 0 --count 10",
            "bench latency --size 1,1KiB --duration 2s",
            "bench tcp --size 1..64KiB*4 --total 64MiB",
            "bench closed --think 5ms --clients 8",
        ] {
            let (a, w) = rw(line);
            assert_eq!(a, line);
            assert!(w.is_empty(), "{line}: {w:?}");
        }
        // After `--` the arguments are another command's (lab run's bench).
        let (a, w) = rw("lab run --ready-timeout 30 -- bench latency --duration 2");
        assert_eq!(
            a,
            "lab run --ready-timeout 30s -- bench latency --duration 2"
        );
        assert_eq!(w.len(), 1, "{w:?}");
    }

    #[test]
    fn renames_keep_the_value_and_warn_once() {
        let (a, w) = rw("suite s.toml --out r.json --quick");
        assert_eq!(a, "suite s.toml --json r.json --quick");
        assert_eq!(
            w,
            ["warning: `--out` is deprecated for `suite`; use `--json`"]
        );
        assert_eq!(
            rw("merge a.json b.json -o all.json").0,
            "merge a.json b.json --json all.json"
        );
        assert_eq!(
            rw("merge a.json -oall.json").0,
            "merge a.json --json all.json"
        );
        assert_eq!(rw("merge a.json --output=x").0, "merge a.json --json x");
        assert_eq!(rw("report r.json -o site").0, "report r.json --report site");
        assert_eq!(
            rw("serve --cpus 1 --threads 2").0,
            "serve --server-cpus 1 --server-threads 2"
        );
        assert_eq!(
            rw("bench tcp --target h:1 --size 1KiB").0,
            "bench tcp --baseline-target h:1 --size 1KiB"
        );
        assert_eq!(
            rw("compare a b --runs r1 r2").0,
            "compare a b --noise-from r1 r2"
        );
        assert_eq!(
            rw("bench closed --warmup 1s").0,
            "bench closed --warmup-duration 1s"
        );
    }

    #[test]
    fn todays_spellings_pass_untouched() {
        for line in [
            "bench latency --warmup 100 --timeout 5s --target x",
            "bench tcp --baseline-target h:1",
            "suite s.toml --json r.json",
            "compare a b --noise 10% --min-effect 5%",
            "interop --timeout 10s --ready-timeout 2m",
            "bench closed --until-ci 5% --warmup-duration 1s",
            "orbs client omniorb --port 1 --host x --timeout 3",
            "orbs start omniorb --listen 127.0.0.1:0",
            "ior decode --json out.json ref.ior",
            "ior decode --json - -",
            "ior decode ref.ior",
            "bench runs --out x",
        ] {
            let (a, w) = rw(line);
            assert_eq!(a, line);
            assert!(w.is_empty(), "{line}: {w:?}");
        }
    }

    #[test]
    fn other_commands_arguments_after_double_dash_are_theirs() {
        let line = "lab run -- bench closed --warmup 1s";
        assert_eq!(rw(line).0, line);
        let (a, w) = rw("suite s.toml --out r.json -- --out");
        assert_eq!(a, "suite s.toml --json r.json -- --out");
        assert_eq!(w.len(), 1);
    }

    #[test]
    fn plain_seconds_become_durations() {
        let (a, w) = rw("interop --timeout 120 --request-timeout 20 --quick");
        assert_eq!(
            a,
            "interop --ready-timeout 120s --max-duration 120s --timeout 20s --quick"
        );
        assert_eq!(
            w,
            [
                "warning: `--timeout 120` (seconds) is deprecated for `interop`; \
                 use `--ready-timeout 120s --max-duration 120s`",
                "warning: `--request-timeout 20` is deprecated for `interop`; use `--timeout 20s`",
            ]
        );
        assert_eq!(
            rw("interop --timeout=90").0,
            "interop --ready-timeout 90s --max-duration 90s"
        );
        assert_eq!(rw("interop --request-timeout 2s").0, "interop --timeout 2s");
        assert_eq!(
            rw("suite s.toml --orb-timeout 60s").0,
            "suite s.toml --ready-timeout 60s"
        );
    }

    #[test]
    fn bare_percentages_get_their_sign() {
        let (a, w) = rw("compare a b --noise 10 --min-effect 2.5");
        assert_eq!(a, "compare a b --noise 10% --min-effect 2.5%");
        assert_eq!(
            w[0],
            "warning: `--noise 10` is deprecated for `compare`; use `--noise 10%`"
        );
        let (a, w) = rw("bench params --until-ci 0.05");
        assert_eq!(a, "bench params --until-ci 5%");
        assert_eq!(
            w,
            ["warning: `--until-ci 0.05` is deprecated for `bench params`; use `--until-ci 5%`"]
        );
        assert_eq!(
            rw("bench closed --until-ci 0.025").0,
            "bench closed --until-ci 2.5%"
        );
    }

    #[test]
    fn host_and_port_become_one_listen_address() {
        let (a, w) = rw("orbs start omniorb --host 0.0.0.0 --port 2809 --ior-file o.ior");
        assert_eq!(
            a,
            "orbs start omniorb --listen 0.0.0.0:2809 --ior-file o.ior"
        );
        assert_eq!(
            w,
            [
                "warning: `--host 0.0.0.0 --port 2809` are deprecated for `orbs start`; \
              use `--listen 0.0.0.0:2809`"
            ]
        );
        let (a, w) = rw("orbs start jacorb --ior-file j.ior --port 5000");
        assert_eq!(
            a,
            "orbs start jacorb --ior-file j.ior --listen 127.0.0.1:5000"
        );
        assert_eq!(
            w,
            ["warning: `--port 5000` is deprecated for `orbs start`; use `--listen 127.0.0.1:5000`"]
        );
        assert_eq!(
            rw("orbs start tao --host ::1").0,
            "orbs start tao --listen [::1]:0"
        );
    }

    #[test]
    fn a_json_switch_becomes_json_to_stdout() {
        let w = ["warning: `--json` without a file is deprecated for `ior decode`; use `--json -`"];
        assert_eq!(
            rw("ior decode --json omni.ior"),
            (
                "ior decode --json - omni.ior".into(),
                w.map(String::from).to_vec()
            )
        );
        assert_eq!(
            rw("ior decode omni.ior --json").0,
            "ior decode omni.ior --json -"
        );
        assert_eq!(rw("ior decode --json -").0, "ior decode --json - -");
        assert_eq!(
            rw("ior decode --json --help").0,
            "ior decode --json - --help"
        );
    }
}
