//! Black-box: the engine driven the way a user's harness drives it —
//! typed jobs, no clap, our reference server embedded in the process on
//! 127.0.0.1 port 0 — with exact counts and bytes asserted on the
//! returned `Results`.

mod common;

use std::time::Duration;

use iiop_bench_idl::bench::elements::{CallMode, Elem};
use iiopbench_engine::bench::latency::{LatencyJob, LatencyOp};
use iiopbench_engine::bench::throughput::ThroughputJob;
use iiopbench_engine::hist::Latency;
use iiopbench_engine::job::Job;
use iiopbench_engine::options::{Pin, PlacementOpts, Sizes};
use iiopbench_engine::progress::Progress;
use iiopbench_engine::results::{self, Results};
use iiopbench_engine::run_context::RunContext;

use common::Log;

/// One run, unpinned: the test shares its machine.
fn once() -> PlacementOpts {
    PlacementOpts {
        pin: Pin::None,
        runs: Some(1),
        ..PlacementOpts::default()
    }
}

fn histogram(r: &Results, case: usize) -> Latency {
    let b64 = r.cases[case].histogram.as_deref().expect("a histogram");
    Latency::from_base64(b64).expect("a valid histogram")
}

#[test]
fn a_throughput_case_counts_every_call_and_byte() {
    let log = Log::default();
    let job = Job::Throughput(ThroughputJob {
        types: vec![Elem::Octet],
        modes: vec![CallMode::Oneway, CallMode::Twoway],
        sizes: Sizes(vec![1024]),
        total: 64 * 1024,
        min_duration: Duration::ZERO,
        max_duration: Duration::from_secs(20),
        placement: once(),
        ..ThroughputJob::default()
    });
    let ctx = RunContext::new().with_progress(Progress::to(log.clone()));
    let (r, err) = job.run(&ctx);
    assert!(err.is_none(), "{err:?}");
    assert!(r.outcome.complete);
    assert_eq!(r.kind, "throughput");
    assert_eq!(r.target.kind, "embedded");
    assert_eq!(r.target.host, "127.0.0.1");
    let names: Vec<&str> = r.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["oneway octet 1KiB", "twoway octet 1KiB"]);
    for c in &r.cases {
        // 64 KiB of 1 KiB calls: exactly 64 calls, every byte counted by
        // the client and decoded by the server.
        assert_eq!(c.calls, 64, "{}", c.name);
        assert_eq!(c.bytes, 64 * 1024, "{}", c.name);
        assert_eq!(c.extra["server_bytes"], 64 * 1024, "{}", c.name);
        assert!(c.errors.is_empty(), "{}: {:?}", c.name, c.errors);
    }
    // Twoway calls are timed one by one: a sample per call.
    assert!(r.cases[0].histogram.is_none());
    assert_eq!(histogram(&r, 1).len(), 64);
    assert_eq!(
        *log.0.lock().unwrap(),
        [
            "start oneway octet 1KiB",
            "done oneway octet 1KiB",
            "start twoway octet 1KiB",
            "done twoway octet 1KiB"
        ]
    );
    // The value is what a results file holds, byte for byte, and the job
    // it records is the job that ran.
    let back: Results = serde_json::from_str(&results::to_json(&r)).unwrap();
    assert_eq!(results::to_json(&back), results::to_json(&r));
    let recorded: Job = serde_json::from_value(r.job.clone().expect("the job")).unwrap();
    assert_eq!(recorded, job);
}

#[test]
fn a_latency_case_has_a_sample_per_measured_call() {
    let job = Job::Latency(LatencyJob {
        op: LatencyOp::Echo,
        types: vec![Elem::Long],
        sizes: Sizes(vec![64]),
        count: 300,
        warmup: 20,
        placement: once(),
        ..LatencyJob::default()
    });
    let (r, err) = job.run(&RunContext::default());
    assert!(err.is_none(), "{err:?}");
    assert_eq!(r.cases.len(), 1);
    let c = &r.cases[0];
    assert_eq!(c.name, "echo long 64B");
    assert_eq!(c.calls, 300);
    let h = histogram(&r, 0);
    assert_eq!(h.len(), 300);
    let l = c.latency_us.as_ref().expect("a latency summary");
    assert!(l.p50 > 0.0 && l.p50 <= l.p99, "{l:?}");
}

#[test]
fn a_bad_job_is_refused_with_results_that_say_so() {
    // An unknown type cannot even be written in a job.
    let e = Job::from_json(r#"{"bench": "throughput", "types": ["quaternion"]}"#).unwrap_err();
    assert!(e.to_string().contains("quaternion"), "{e}");
    // A job that cannot run is refused before anything starts, its
    // results naming the field at fault.
    let job = Job::Throughput(ThroughputJob {
        slices: 0,
        placement: once(),
        ..ThroughputJob::default()
    });
    let (r, err) = job.run(&RunContext::default());
    let err = err.expect("zero slices are refused");
    assert!(err.is_job(), "{err:?}");
    assert_eq!(err.to_string(), "`slices` must be at least 1");
    assert!(!r.outcome.complete);
    assert!(r.cases.is_empty());
    assert_eq!(
        r.outcome.failure.as_deref(),
        Some("`slices` must be at least 1")
    );
    assert_eq!(r.kind, "throughput");
}
