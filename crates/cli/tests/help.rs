//! Every command's `--help`, walked through `clap::Command` (issue #21):
//!
//! - it ends with an `Examples:` section of two or three command lines,
//!   each of which parses with today's spellings;
//! - every option that carries one of the ideas of docs/cli.md's table is
//!   named and typed as that table says (same flag, same unit, in exactly
//!   the commands listed), and the table here and the one in docs/cli.md
//!   are the same, row for row; so are the units;
//! - a value's unit is what its parser takes: a `DURATION` takes `10s`,
//!   and an option taking `500ms` is a `DURATION`; the same for sizes and
//!   percentages.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command as Process;

use clap::{CommandFactory, Parser};
use iiopbench::opts::Cli;

/// One idea, its flag, its unit and the commands that have it. docs/cli.md
/// holds the same rows (`| idea | flag | unit | commands |`).
struct Idea {
    idea: &'static str,
    short: Option<char>,
    long: &'static str,
    /// The value name shown in `--help`, or `—` for a switch.
    unit: &'static str,
    /// Command paths, comma-separated: `bench *` is every bench command,
    /// `bench * but tcp` every one but tcp, `bench a/b` bench a and bench b.
    commands: &'static str,
}

const fn idea(
    idea: &'static str,
    short: Option<char>,
    long: &'static str,
    unit: &'static str,
    commands: &'static str,
) -> Idea {
    Idea {
        idea,
        short,
        long,
        unit,
        commands,
    }
}

const IDEAS: &[Idea] = &[
    idea(
        "The server, as an object reference",
        Some('t'),
        "target",
        "REF",
        "bench * but tcp, soak, call, suite, interop, replay, proxy",
    ),
    idea(
        "A raw-TCP baseline server",
        None,
        "baseline-target",
        "HOST:PORT",
        "bench throughput/latency/tcp",
    ),
    idea(
        "Address a server listens on",
        None,
        "listen",
        "HOST:PORT",
        "serve, orbs start, agents run, proxy",
    ),
    idea(
        "Address live metrics are served on (Prometheus)",
        None,
        "metrics-listen",
        "HOST:PORT",
        "bench *, soak, serve",
    ),
    idea(
        "Time live metrics are still served after the run",
        None,
        "metrics-linger",
        "DURATION",
        "bench *, soak, serve",
    ),
    idea(
        "A server's IOR, written to a file",
        None,
        "ior-file",
        "FILE",
        "serve, orbs start, ior make, proxy",
    ),
    idea(
        "Results file (JSON; `-` is stdout)",
        None,
        "json",
        "FILE",
        "bench *, soak, suite, merge, compare, lab run, lab suite, interop, ior decode, pcap, replay, agents run, agents slurm, lab agents, lab matrix, orbs compare",
    ),
    idea(
        "One CSV row per case",
        None,
        "csv",
        "FILE",
        "bench *, soak, pcap",
    ),
    idea(
        "HdrHistogram interval log",
        None,
        "hlog",
        "FILE",
        "bench *, soak, pcap",
    ),
    idea(
        "Report directory (HTML, Markdown, SVG)",
        None,
        "report",
        "DIR",
        "report, suite, pcap, orbs compare",
    ),
    idea(
        "No progress, no tables",
        Some('q'),
        "quiet",
        "—",
        "bench *, soak, suite, lab suite, interop, pcap, replay, agents run, agents slurm, lab agents, lab matrix, orbs compare",
    ),
    idea(
        "Every column, in one table (by default tables fit 100 columns)",
        None,
        "wide",
        "—",
        "bench *, soak, pcap",
    ),
    idea(
        "CPUs of the client",
        None,
        "client-cpus",
        "CPUS",
        "bench *, soak, orbs compare",
    ),
    idea(
        "CPUs of the server",
        None,
        "server-cpus",
        "CPUS",
        "bench *, soak, serve, orbs compare",
    ),
    idea(
        "Threads of the server",
        None,
        "server-threads",
        "N",
        "bench * but tcp, soak, call, serve",
    ),
    idea(
        "Independent runs per case",
        None,
        "runs",
        "N",
        "bench *, soak",
    ),
    idea(
        "Slices of each point, in turn with its raw-TCP baseline",
        None,
        "slices",
        "N",
        "bench throughput/latency",
    ),
    idea(
        "Timeout of every call",
        None,
        "timeout",
        "DURATION",
        "bench * but tcp, soak, call, interop, replay",
    ),
    idea(
        "Time a server may take to say `ready`",
        None,
        "ready-timeout",
        "DURATION",
        "suite, lab run, lab suite, interop, lab agents, lab matrix",
    ),
    idea(
        "Measuring time",
        None,
        "duration",
        "DURATION",
        "bench latency/closed/params/dispatch/packing/balance, soak, agents run, agents k8s, agents slurm, lab agents, lab matrix",
    ),
    idea(
        "Shortest measuring time",
        None,
        "min-duration",
        "DURATION",
        "bench throughput/tcp, orbs compare",
    ),
    idea(
        "Time cap",
        None,
        "max-duration",
        "DURATION",
        "bench throughput/latency/closed/params/dispatch/packing/balance, interop",
    ),
    idea(
        "Unmeasured calls first",
        None,
        "warmup",
        "N",
        "bench latency/tcp/sweep",
    ),
    idea(
        "Unmeasured time first",
        None,
        "warmup-duration",
        "DURATION",
        "bench closed/params/dispatch/packing/balance",
    ),
    idea(
        "Measured calls (round trips, set-ups)",
        None,
        "count",
        "N",
        "bench latency/connect/tcp/setup",
    ),
    idea(
        "Connections",
        None,
        "connections",
        "N",
        "bench latency/sweep, soak",
    ),
    idea(
        "Payload bytes per call",
        None,
        "size",
        "SIZES",
        "bench throughput/latency/tcp/sweep, orbs compare",
    ),
    idea(
        "Payload bytes per point",
        None,
        "total",
        "SIZE",
        "bench throughput/tcp, orbs compare",
    ),
    idea(
        "Socket send buffer",
        None,
        "sndbuf",
        "SIZE",
        "bench *, soak, call, serve",
    ),
    idea(
        "Socket receive buffer",
        None,
        "rcvbuf",
        "SIZE",
        "bench *, soak, call, serve",
    ),
    idea(
        "TLS on every connection",
        None,
        "tls",
        "—",
        "bench * but tcp, soak, call, interop, replay",
    ),
    idea(
        "CA certificates that verify servers (PEM)",
        None,
        "tls-ca",
        "FILE",
        "bench * but tcp, soak, call, interop, replay",
    ),
    idea(
        "Our TLS certificate chain (PEM)",
        None,
        "tls-cert",
        "FILE",
        "bench * but tcp, soak, call, interop, replay, serve",
    ),
    idea(
        "Its private key (PEM)",
        None,
        "tls-key",
        "FILE",
        "bench * but tcp, soak, call, interop, replay, serve",
    ),
    idea(
        "Every case over plain TCP and over TLS, with their ratio",
        None,
        "tls-vs-plain",
        "—",
        "bench * but tcp, soak, call",
    ),
    idea(
        "Offer connections for callbacks (bidirectional GIOP 1.2), serving bench.idl's Callback on them (`call_back` needs it)",
        None,
        "bidir",
        "—",
        "bench * but tcp, soak, call",
    ),
    idea(
        "CA certificates that verify clients (PEM)",
        None,
        "tls-client-ca",
        "FILE",
        "serve",
    ),
    idea(
        "Think time",
        None,
        "think",
        "DURATION",
        "bench closed/balance",
    ),
    idea(
        "Service time",
        None,
        "service",
        "DURATION",
        "bench closed/latency/packing/balance/sweep",
    ),
    idea(
        "Stop at this 95 % confidence interval",
        None,
        "until-ci",
        "PERCENT",
        "bench closed/params/dispatch/packing/balance",
    ),
    idea(
        "Throughput noise threshold",
        None,
        "noise",
        "PERCENT",
        "compare",
    ),
    idea(
        "Smallest latency change",
        None,
        "min-effect",
        "PERCENT",
        "compare",
    ),
    idea(
        "Results files whose spread is the noise",
        None,
        "noise-from",
        "FILE",
        "compare",
    ),
    idea(
        "A gate the result must pass (exit 3 when not)",
        None,
        "threshold",
        "EXPR",
        "bench *, soak, agents run, agents slurm",
    ),
    idea(
        "Exit 1 when B is slower anywhere",
        None,
        "fail-if-slower",
        "—",
        "compare",
    ),
    idea(
        "IDL file",
        None,
        "idl",
        "FILE",
        "bench throughput/latency, call, serve, replay, proxy",
    ),
    idea(
        "Directory of included IDL",
        Some('I'),
        "include",
        "DIR",
        "bench throughput/latency, call, serve",
    ),
    idea(
        "The reduced, smoke-test version",
        None,
        "quick",
        "—",
        "bench sweep, suite, lab suite, interop, orbs compare",
    ),
];

/// Value names and how to write them (docs/cli.md, "Units"). Options
/// whose values are a fixed list (`--pin auto|none|same|cross`) show the
/// list instead and are not here.
const UNITS: &[(&str, &str)] = &[
    ("DURATION", "a number and a unit: `500ms`, `10s`, `2m`, `1h` (also `ns`, `us`)"),
    ("SIZE", "bytes, with a unit: `64KiB`, `16MiB`, `1GiB` (also `B`, `KB`, `MB`, `GB`)"),
    ("SIZES", "a SIZE, a list `1,1KiB,64KiB` or a range `1KiB..128KiB` (doubling; `*4`, `+1KiB` steps)"),
    ("PERCENT", "a number and `%`: `5%`, `2.5%`"),
    (
        "N",
        "a plain number (a count; lists `1,2,4`, or a series `start:factor:max` such as `1000:2:64000`, where the option says so)",
    ),
    ("PORT", "a TCP port"),
    ("PID", "a process id"),
    ("FILE", "a file; `-` is stdin or stdout where the option says so"),
    ("DIR", "a directory (created when written to)"),
    ("REF", "an object reference: `IOR:…`, `corbaloc:…`, `corbaname:…`, a file holding one, `-` for stdin"),
    ("HOST:PORT", "a TCP address: `127.0.0.1:2809`, `[::1]:0`"),
    ("HOST", "a host name or address"),
    ("IMAGE", "a container image: `registry.example/iiopbench:1`"),
    ("CPUS", "CPUs in taskset syntax: `0`, `2-3`, `0,2`"),
    ("NAME", "a name: an ORB (`omniorb`), an IDL interface (`Bench::Perf`)"),
    ("NAMES", "names, comma-separated"),
    ("OP", "an operation: `ping`, or `Module::Interface::op`"),
    ("INTERFACE::OP", "an IDL operation, `Module::Interface::op`"),
    ("TYPES", "bench.idl element types, comma-separated: `octet,double`"),
    ("MODES", "modes, comma-separated"),
    ("JSON", "JSON text, or `@FILE`"),
    ("SPEC", "`key=value` pairs, comma-separated"),
    ("LABEL", "a target's label in a suite results file"),
    ("COMMAND", "a shell command"),
    (
        "ARG",
        "one word of another program's command line: `--partition=bench`",
    ),
    ("BEHAVIOUR", "`echo`, `sink`, `fixed:JSON`"),
    ("CxS", "clients x servers, comma-separated: `4x2,8x4`"),
    ("A-B:IMPAIRMENT", "a lab link: `client-server:delay=20ms,loss=2%,rate=t1`"),
    ("SPEED", "`1x`, `2x`, `0.5x` or `max`"),
    ("ORB", "an ORB name or a TAG_ORB_TYPE number"),
    ("ID", "a repository id: `IDL:Bench/Perf:1.0`"),
    ("KEY", "an object key, %-escaped"),
    ("1.0|1.1|1.2", "a GIOP version"),
    ("SERVERS", "`inproc`, `child` or `orb:NAME`"),
    ("EXPR", "a gate: a metric, `<` `<=` `>` `>=` `=`, a value: `p99<2ms`, `errors=0`, `throughput>5000/s`"),
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn docs() -> String {
    std::fs::read_to_string(repo().join("docs/cli.md")).expect("docs/cli.md")
}

/// Every command, root first, by path (`""`, `bench`, `bench latency` …).
fn commands() -> Vec<(String, clap::Command)> {
    fn walk(c: &clap::Command, path: &str, out: &mut Vec<(String, clap::Command)>) {
        out.push((path.to_string(), c.clone()));
        for s in c.get_subcommands().filter(|s| s.get_name() != "help") {
            let p = format!("{path} {}", s.get_name()).trim().to_string();
            walk(s, &p, out);
        }
    }
    let mut root = Cli::command();
    root.build();
    let mut out = Vec::new();
    walk(&root, "", &mut out);
    out
}

/// An option as `--help` shows it.
#[derive(Debug, Clone)]
struct Flag {
    long: String,
    short: Option<char>,
    /// Value name, `—` for a switch.
    unit: String,
    /// The value is one of a fixed list (shown in the help).
    listed: bool,
    help: String,
}

fn flags(c: &clap::Command) -> Vec<Flag> {
    c.get_arguments()
        .filter(|a| !a.is_positional() && !a.is_hide_set())
        .filter_map(|a| {
            let long = a.get_long()?.to_string();
            if long == "help" || long == "version" {
                return None;
            }
            let takes = a.get_action().takes_values();
            let unit = match a.get_value_names() {
                _ if !takes => "—".to_string(),
                Some(v) => v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" "),
                None => a.get_id().as_str().to_uppercase(),
            };
            Some(Flag {
                long,
                short: a.get_short(),
                listed: takes && !a.get_possible_values().is_empty(),
                unit,
                help: a
                    .get_long_help()
                    .or(a.get_help())
                    .map(|h| h.to_string())
                    .unwrap_or_default(),
            })
        })
        .collect()
}

/// Whether `iiopbench PATH --LONG=VALUE` gets past value parsing.
fn accepts(path: &str, long: &str, value: &str) -> bool {
    let mut argv = vec!["iiopbench".to_string()];
    argv.extend(path.split_whitespace().map(String::from));
    argv.push(format!("--{long}={value}"));
    match Cli::command().try_get_matches_from(argv) {
        Ok(_) => true,
        Err(e) => !matches!(
            e.kind(),
            clap::error::ErrorKind::ValueValidation | clap::error::ErrorKind::InvalidValue
        ),
    }
}

fn expand(spec: &str, all: &[String]) -> BTreeSet<String> {
    let bench: Vec<&String> = all.iter().filter(|p| p.starts_with("bench ")).collect();
    let mut out = BTreeSet::new();
    for item in spec.split(", ") {
        if let Some(rest) = item.strip_prefix("bench *") {
            let but = rest.strip_prefix(" but ").map(|b| format!("bench {b}"));
            out.extend(
                bench
                    .iter()
                    .filter(|p| Some(**p) != but.as_ref())
                    .map(|p| p.to_string()),
            );
        } else if let Some(rest) = item.strip_prefix("bench ") {
            out.extend(rest.split('/').map(|b| format!("bench {b}")));
        } else {
            out.insert(item.to_string());
        }
    }
    out
}

fn flag_text(short: Option<char>, long: &str) -> String {
    match short {
        Some(s) => format!("`-{s}`, `--{long}`"),
        None => format!("`--{long}`"),
    }
}

fn idea_row(i: &Idea) -> String {
    format!(
        "| {} | {} | {} | {} |",
        i.idea,
        flag_text(i.short, i.long),
        i.unit,
        i.commands
    )
}

fn unit_row((name, how): &(&str, &str)) -> String {
    // A `|` in a table cell is escaped, even in code (GitHub's Markdown).
    format!("| `{}` | {how} |", name.replace('|', "\\|"))
}

/// The table rows (`| …`) under the heading `## {title}` of docs/cli.md.
fn doc_rows(doc: &str, title: &str) -> Vec<String> {
    let head = format!("## {title}\n");
    let at = doc
        .find(&head)
        .unwrap_or_else(|| panic!("docs/cli.md has no `{head}`"));
    doc[at + head.len()..]
        .lines()
        .take_while(|l| !l.starts_with("## "))
        .filter(|l| l.starts_with("| ") && !l.starts_with("| Idea ") && !l.starts_with("| Unit "))
        .filter(|l| !l.starts_with("| Command "))
        .map(str::to_string)
        .collect()
}

fn same_rows(title: &str, want: Vec<String>) {
    let got = doc_rows(&docs(), title);
    let missing: Vec<_> = want.iter().filter(|r| !got.contains(r)).collect();
    let extra: Vec<_> = got.iter().filter(|r| !want.contains(r)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/cli.md `## {title}` differs from tests/help.rs:\n  missing in docs:\n    {}\n  not in the test:\n    {}\n  the rows as the test has them, to paste into docs/cli.md:\n{}",
        missing.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n    "),
        extra.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n    "),
        want.join("\n")
    );
}

#[test]
fn docs_have_the_same_tables() {
    same_rows("One name per idea", IDEAS.iter().map(idea_row).collect());
    same_rows("Units", UNITS.iter().map(unit_row).collect());
}

/// Which table flag an option means, judged from its unit and help text:
/// a synonym (say `--out FILE` "Write the results …") is caught here.
fn idea_of(f: &Flag) -> Option<&'static str> {
    let h = f.help.to_lowercase();
    let u = f.unit.as_str();
    Some(match () {
        _ if u == "REF" && f.long != "spawn-ref" => "target",
        _ if u == "HOST:PORT" && h.starts_with("address to listen on") => "listen",
        _ if u == "HOST:PORT" && h.contains("raw-tcp server") => "baseline-target",
        _ if u == "FILE" && f.help.contains("IOR") && h.contains("write") => "ior-file",
        _ if u == "FILE"
            && h.starts_with("write")
            && (h.contains("results") || h.contains("json")) =>
        {
            "json"
        }
        _ if u == "DIR" && h.contains("report") => "report",
        _ if u == "CPUS" && h.contains("client") => "client-cpus",
        _ if u == "CPUS" => "server-cpus",
        _ if u == "N" && h.contains("thread") => "server-threads",
        _ if u == "N" && h.contains("independent runs") => "runs",
        _ if f.long.contains("timeout") && h.contains("`ready`") => "ready-timeout",
        _ if f.long.contains("timeout")
            && (h.contains("every call")
                || h.contains("every request")
                || h.contains("per-request")) =>
        {
            "timeout"
        }
        _ if h.starts_with("unmeasured") || h.starts_with("unrecorded") => {
            if u == "DURATION" {
                "warmup-duration"
            } else {
                "warmup"
            }
        }
        _ => return None,
    })
}

#[test]
fn every_option_names_its_idea_as_the_table_does() {
    let cmds = commands();
    let paths: Vec<String> = cmds.iter().map(|(p, _)| p.clone()).collect();
    let mut problems = Vec::new();
    let mut shorts: BTreeMap<char, BTreeSet<String>> = BTreeMap::new();
    let mut have: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, c) in &cmds {
        for f in flags(c) {
            if let Some(s) = f.short {
                shorts.entry(s).or_default().insert(f.long.clone());
            }
            have.entry(f.long.clone()).or_default().insert(path.clone());
            if let Some(i) = IDEAS.iter().find(|i| i.long == f.long) {
                if f.unit != i.unit || f.short != i.short {
                    problems.push(format!(
                        "`{path}`: {} <{}> should be {} <{}> (docs/cli.md)",
                        flag_text(f.short, &f.long),
                        f.unit,
                        flag_text(i.short, i.long),
                        i.unit
                    ));
                }
            }
            if let Some(want) = idea_of(&f) {
                if want != f.long {
                    problems.push(format!(
                        "`{path}`: --{} looks like the idea of --{want} (docs/cli.md): name it so",
                        f.long
                    ));
                }
            }
        }
    }
    for i in IDEAS {
        let want = expand(i.commands, &paths);
        let got = have.get(i.long).cloned().unwrap_or_default();
        if want != got {
            problems.push(format!(
                "--{}: in {:?}, but docs/cli.md says {:?}",
                i.long, got, want
            ));
        }
    }
    for (s, longs) in shorts {
        if longs.len() > 1 {
            problems.push(format!("-{s} means {longs:?}: one short letter, one flag"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_value_is_written_in_a_unit_of_the_table() {
    let garbage = "%%zz%%";
    let mut problems = Vec::new();
    let mut used = BTreeSet::new();
    for (path, c) in commands() {
        for f in flags(&c) {
            if f.unit == "—" || f.listed {
                continue;
            }
            used.insert(f.unit.clone());
            let ok = |v: &str| accepts(&path, &f.long, v);
            let what = format!("`{path}` --{} <{}>", f.long, f.unit);
            if !UNITS.iter().any(|(n, _)| *n == f.unit) {
                problems.push(format!("{what}: value name not among docs/cli.md's units"));
            }
            let typed = !ok(garbage);
            let expect = |good: &[&str], bad: &[&str]| {
                good.iter().all(|v| ok(v)) && bad.iter().all(|v| !ok(v))
            };
            let fits = match f.unit.as_str() {
                "DURATION" => expect(&["10s", "500ms", "2m"], &["64KiB", "5%"]),
                "SIZE" => expect(&["64KiB", "16MiB"], &["10s", "5%"]),
                "SIZES" => expect(&["64KiB", "1KiB..128KiB", "1,1KiB"], &["10s"]),
                "PERCENT" => expect(&["5%", "2.5%"], &["5", "0.05", "10s"]),
                "N" => expect(&["7"], &["7s", "7%"]),
                "PORT" => expect(&["2809"], &["x"]),
                _ => true,
            };
            if !fits {
                problems.push(format!("{what}: its parser does not take a {}", f.unit));
            }
            if typed && f.unit != "DURATION" && ok("500ms") {
                problems.push(format!("{what}: takes a duration, so its unit is DURATION"));
            }
            if typed && !["SIZE", "SIZES"].contains(&f.unit.as_str()) && ok("64KiB") {
                problems.push(format!(
                    "{what}: takes a size, so its unit is SIZE or SIZES"
                ));
            }
            if typed && f.unit != "PERCENT" && ok("5%") && !ok("5") {
                problems.push(format!(
                    "{what}: takes a percentage, so its unit is PERCENT"
                ));
            }
        }
    }
    for (n, _) in UNITS {
        if !used.contains(*n) {
            problems.push(format!("unit {n} of docs/cli.md: no option uses it"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The lines of the `Examples:` section that ends `help`.
fn examples(help: &str) -> Option<Vec<String>> {
    let at = help.rfind("\nExamples:\n")?;
    let lines: Vec<String> = help[at + "\nExamples:\n".len()..]
        .trim_end()
        .lines()
        .map(str::to_string)
        .collect();
    lines
        .iter()
        .all(|l| l.starts_with("  iiopbench "))
        .then_some(lines)
}

/// Words of one shell command line: quotes, a trailing `# comment`, and
/// `&&`, `|`, `;`, `<`, `>` (which end a command or start a redirection)
/// as the shell takes them.
fn shell_commands(line: &str) -> Vec<Vec<String>> {
    let mut cmds = vec![Vec::new()];
    let mut word: Option<String> = None;
    let mut chars = line.chars().peekable();
    let mut skip_next_word = false;
    let push = |w: Option<String>, cmds: &mut Vec<Vec<String>>, skip: &mut bool| {
        if let Some(w) = w {
            if std::mem::take(skip) {
                return;
            }
            cmds.last_mut().unwrap().push(w);
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                let w = word.get_or_insert_with(String::new);
                for d in chars.by_ref() {
                    if d == c {
                        break;
                    }
                    w.push(d);
                }
            }
            ' ' | '\t' => push(word.take(), &mut cmds, &mut skip_next_word),
            '#' if word.is_none() => break,
            '&' | '|' | ';' => {
                push(word.take(), &mut cmds, &mut skip_next_word);
                if chars.peek() == Some(&c) {
                    chars.next();
                }
                cmds.push(Vec::new());
            }
            '<' | '>' => {
                push(word.take(), &mut cmds, &mut skip_next_word);
                skip_next_word = true;
            }
            _ => word.get_or_insert_with(String::new).push(c),
        }
    }
    push(word.take(), &mut cmds, &mut skip_next_word);
    cmds.retain(|c| !c.is_empty());
    cmds
}

#[test]
fn every_help_ends_with_examples_that_parse() {
    let mut problems = Vec::new();
    for (path, mut c) in commands() {
        let name = if path.is_empty() { "iiopbench" } else { &path };
        for (kind, help) in [
            ("--help", c.render_long_help().to_string()),
            ("-h", c.render_help().to_string()),
        ] {
            match examples(&help) {
                Some(lines) if (2..=3).contains(&lines.len()) => {}
                _ => problems.push(format!(
                    "`{name} {kind}` must end with `Examples:` and 2-3 lines `  iiopbench …`"
                )),
            }
        }
        for line in examples(&c.render_long_help().to_string()).unwrap_or_default() {
            let want = format!("iiopbench {path}");
            if !line.trim().starts_with(want.trim()) {
                problems.push(format!("`{name}`: example not of this command: {line}"));
            }
            for words in shell_commands(&line) {
                if words[0] != "iiopbench" {
                    continue;
                }
                if let Err(e) = Cli::try_parse_from(&words) {
                    let e = e.render().to_string();
                    problems.push(format!(
                        "`{name}`: example does not parse: {line}\n    {}",
                        e.lines().next().unwrap_or("")
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// ---- through the binary -------------------------------------------------

/// Run the binary in the repository root: (status, stdout, stderr).
fn iiopbench(args: &[&str]) -> (i32, String, String) {
    let out = Process::new(env!("CARGO_BIN_EXE_iiopbench"))
        .args(args)
        .current_dir(repo())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn some_examples_run_as_written() {
    let cmds = commands();
    let lines_of = |path: &str| {
        let (_, c) = cmds.iter().find(|(p, _)| p == path).unwrap();
        examples(&c.clone().render_long_help().to_string()).unwrap()
    };
    // Examples that need no server, vendor ORB, root or earlier file.
    let picks = [
        ("ior make", 0),
        ("ior decode", 2),
        ("pcap", 0),
        ("call", 0),
        ("bench connect", 0),
    ];
    for (path, i) in picks {
        let line = &lines_of(path)[i];
        let words = &shell_commands(line)[0];
        let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        let (code, out, err) = iiopbench(&args);
        assert_eq!(code, 0, "{line}\n{out}\n{err}");
        assert!(!out.trim().is_empty(), "{line}: no output");
    }
}

/// Parses one documented command line (`iiopbench …`, `sudo iiopbench …`,
/// `cargo run … -- …`); the problems found.
fn check_line(origin: &str, line: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for mut words in shell_commands(line) {
        if words[0] == "sudo" {
            words.remove(0);
        }
        if words[0] == "cargo" {
            match words.iter().position(|w| w == "--") {
                Some(i) => words.splice(..=i, ["iiopbench".to_string()]).for_each(drop),
                None => continue,
            }
        }
        if words.first().map(String::as_str) != Some("iiopbench") {
            continue;
        }
        if let Err(e) = Cli::try_parse_from(&words) {
            let e = e.render().to_string();
            problems.push(format!(
                "{origin}: does not parse: {line}\n    {}",
                e.lines().next().unwrap_or("")
            ));
        }
    }
    problems
}

#[test]
fn the_readme_tour_uses_todays_spellings() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let mut in_sh = false;
    let mut problems = Vec::new();
    let mut seen = 0;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_sh = line.starts_with("```sh");
            continue;
        }
        if in_sh && !line.starts_with('#') && line.contains("iiopbench ") {
            seen += 1;
            problems.extend(check_line("README.md", line));
        }
    }
    assert!(seen > 20, "the tour has {seen} command lines");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn suite_files_hold_jobs_this_iiopbench_runs() {
    // Study suites: every case is a typed job (loading reads every case,
    // as written and as `[quick]` leaves it, and checks it).
    let dir = repo().join("fixtures/suites");
    let mut cases = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().and_then(|x| x.to_str()) != Some("toml") {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let t: toml::Table = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        if t.contains_key("lab") {
            let s = iiopbench_engine::lab::suite::LabSuite::load(&path)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            for quick in [false, true] {
                cases += s.expand(quick).unwrap().cases.len();
            }
        } else {
            let s = iiopbench_engine::suite::StudySuite::load(&path)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            for quick in [false, true] {
                cases += s.plan(quick).unwrap().len();
            }
        }
    }
    assert!(cases > 20, "{cases} cases");
}
