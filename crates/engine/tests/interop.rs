//! Black-box: the interop conformance suite driven through the engine's
//! public API, the way a harness does it without clap — our reference
//! server embedded in the process, the quick suite, exact counts asserted
//! on the report and on the results document built from it.

mod common;

use std::time::{Duration, Instant};

use iiop_bench_idl::bench::Elem;
use iiopbench_engine::interop::{self, suite::Verdict, InteropOpts};
use iiopbench_engine::progress::Progress;

use common::Log;

#[test]
fn quick_suite_against_the_embedded_server_passes_every_check_it_runs() {
    let log = Log::default();
    let opts = InteropOpts {
        quick: true,
        max_duration: Duration::from_secs(60),
        progress: Progress::to(log.clone()),
        ..InteropOpts::default()
    };
    let t = Instant::now();
    let run = interop::run(&opts).expect("suite runs");
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());

    let rep = &run.report;
    assert_eq!(run.failed(), 0, "{:#?}", rep.checks);
    // The quick suite's echo checks: 5 sets (GIOP 1.2 LE and BE, 1.1 LE,
    // 1.0 LE, 1.2 LE fragmented) × every element type, less wchar and
    // wstring in GIOP 1.0, which are skipped with their reason.
    let echo = |v: Verdict| {
        rep.checks
            .iter()
            .filter(|c| c.name.starts_with("echo ") && c.name.contains(" GIOP ") && c.verdict == v)
            .count()
    };
    assert_eq!(Elem::ALL.len(), 26);
    assert_eq!(echo(Verdict::Skip), 2);
    assert_eq!(echo(Verdict::Pass), 5 * 26 - 2);
    // The 14 checks of the server's maximum message size are skipped
    // without `peer_max_message_size`.
    assert_eq!(
        rep.skip_reasons(),
        [
            (
                14,
                "the server's maximum message size is not known: give the limit it is \
                 configured with as `peer_max_message_size`"
                    .to_string()
            ),
            (2, "wchar/wstring are illegal in GIOP 1.0".to_string()),
            (
                1,
                "the server answers OBJECT_HERE for the short key `Bench`: it does not forward it \
                 (`serve --forward-keys` does)"
                    .to_string()
            )
        ]
    );
    // Everything else that passes: 27 checks of locate, exceptions,
    // `_is_a`, counters, references, large payloads, and the reply's
    // version and byte order per unfragmented set; the 17 valuetype
    // checks; the 26 any and user-exception checks; 27 field checks (the
    // 28th, a LocateRequest forward, is skipped: this server does not
    // forward); and the 3 bidirectional GIOP checks.
    let values = rep
        .checks
        .iter()
        .filter(|c| c.name.starts_with("value: "))
        .map(|c| c.verdict)
        .collect::<Vec<_>>();
    assert_eq!(values, [Verdict::Pass; 17]);
    // The 26 any and user-exception checks, and the 2 field checks of a
    // user exception reply (one per byte order), each a pass.
    let anys = rep
        .checks
        .iter()
        .filter(|c| c.name.starts_with("any: ") || c.name.starts_with("user exception"))
        .map(|c| c.verdict)
        .collect::<Vec<_>>();
    assert_eq!(anys, [Verdict::Pass; 28]);
    assert_eq!(rep.count(Verdict::Pass), 234);
    assert_eq!(rep.count(Verdict::Note), 5);

    // The results document says the same.
    let r = &run.results;
    assert_eq!(r.kind, "interop");
    assert_eq!(r.target.kind, "embedded");
    assert_eq!(r.params["passed"], 234);
    assert_eq!(r.params["failed"], 0);
    assert_eq!(r.params["quick"], true);
    assert_eq!(r.cases.len(), rep.checks.len());
    let passed_cases = r
        .cases
        .iter()
        .filter(|c| c.extra["result"] == "pass")
        .count();
    assert_eq!(passed_cases, 234);
    assert!(r.outcome.complete && r.outcome.failure.is_none());

    let seen = log.0.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(
        seen[0].starts_with(
            "note no target: testing our own server, started in-process on 127.0.0.1:"
        ),
        "{seen:?}"
    );
    assert_eq!(seen[1..], ["start interop suite", "done interop suite"]);
}
