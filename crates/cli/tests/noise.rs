//! Black-box: a measurement says when the machine was busy with other
//! work, and says nothing when it was not. One test in its own binary, so
//! no other test of this crate runs beside it; the background load is a
//! real CPU hog in another process.

use std::process::{Child, Command};
use std::time::Duration;

use iiopbench_engine::noise::NoiseMeter;
use serde_json::Value;

mod common;

const BUSY: &str = "the machine was busy with other work";

fn run_json(name: &str, args: &[&str]) -> (i32, Value, String) {
    let json = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-{}-{name}", std::process::id()));
    let bin = env!("CARGO_BIN_EXE_iiopbench");
    let out = Command::new(bin)
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .expect("iiopbench runs");
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("results written")).unwrap();
    let _ = std::fs::remove_file(&json);
    (
        out.status.code().unwrap_or(-1),
        v,
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Spinning shells, killed on drop whatever happens.
struct Hogs(Vec<Child>);

impl Hogs {
    fn start(n: usize) -> Hogs {
        Hogs(
            (0..n)
                .map(|_| {
                    Command::new("sh")
                        .args(["-c", "while :; do :; done"])
                        .spawn()
                        .expect("sh runs")
                })
                .collect(),
        )
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn busy_warnings(v: &Value) -> Vec<String> {
    v["quality"]["warnings"]
        .as_array()
        .expect("quality.warnings")
        .iter()
        .filter_map(|w| w.as_str())
        .filter(|w| w.contains(BUSY))
        .map(str::to_string)
        .collect()
}

/// Wait (at most `limit`) for a moment when the machine is quiet: less
/// than a fifth of a CPU busy over 300 ms. Whether one came.
fn wait_for_quiet(limit: Duration) -> bool {
    let t0 = std::time::Instant::now();
    while t0.elapsed() < limit {
        // The engine's own meter: background is what is not ours, and
        // this test process sleeps meanwhile.
        let m = NoiseMeter::start(&[]);
        std::thread::sleep(Duration::from_millis(300));
        if m.finish().background_cpus < 0.2 {
            return true;
        }
    }
    false
}

/// Each run measures for a second, whatever the machine does: /proc/stat
/// counts 10 ms ticks, so a second holds the meter's rounding to a few
/// hundredths of a CPU, far below the quarter CPU the warning stands for.
/// (A number of calls instead would take a minute beside two CPU hogs,
/// each call waiting its turn behind them twice.)
const ARGS: [&str; 10] = [
    "bench",
    "latency",
    "--op",
    "ping",
    "--duration",
    "1s",
    "--warmup",
    "200",
    "--runs",
    "2",
];

#[test]
fn a_cpu_hog_beside_the_run_is_reported_and_a_quiet_machine_is_not() {
    let args: Vec<&str> = ARGS.to_vec();
    // Quiet: no warning. A shared machine (a build beside the tests) has
    // other work much of the time; each attempt first waits for a quiet
    // moment, and one clean run out of three shows the warning is not
    // always on.
    let background = |v: &Value| -> Vec<f64> {
        v["quality"]["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["background_cpus"].as_f64().unwrap())
            .collect()
    };
    let mut clean = None;
    let mut last = None;
    let mut seen = Vec::new();
    for i in 0..3 {
        // A quiet machine is quiet within the first 300 ms; a busy one
        // may stay busy for minutes, which waiting longer does not fix.
        let quiet = wait_for_quiet(Duration::from_secs(5));
        let (code, v, _) = run_json(&format!("quiet{i}.json"), &args);
        assert_eq!(code, 0);
        let w = busy_warnings(&v);
        let bg = background(&v);
        // Whatever the machine did, the warning says what was measured:
        // none when every run was near idle, one when a run was busy.
        if bg.iter().all(|b| *b < 0.15) {
            assert!(w.is_empty(), "a warning at background {bg:?}: {w:?}");
        }
        if bg.iter().any(|b| *b > 0.4) {
            assert!(!w.is_empty(), "no warning at background {bg:?}");
        }
        seen.push((quiet, bg, w.clone()));
        if w.is_empty() {
            clean = Some(v);
            break;
        }
        last = Some(v);
    }
    let v = match clean {
        Some(v) => v,
        None => {
            // Never a quiet moment: the warnings above matched the load
            // measured, but "no warning on a quiet machine" was not seen.
            // Said in the suite's summary, not passed off as shown.
            common::skip(
                "a_cpu_hog_beside_the_run_is_reported_and_a_quiet_machine_is_not",
                &format!(
                    "the quiet half was not shown, the machine was busy on every attempt \
                 (quiet moment found, background per run, warnings): {seen:?}"
                ),
            );
            last.expect("three attempts ran")
        }
    };
    assert_eq!(v["placement"]["chosen"], "auto");
    assert_eq!(v["placement"]["relation"], "cross-cpu");
    let observed = &v["placement"]["observed"];
    assert_eq!(observed["client_cpus"], v["placement"]["client_cpus"]);
    assert_eq!(observed["server_cpus"], v["placement"]["server_cpus"]);

    // Two hogs on a 2-core machine: whatever the scheduler does, other
    // processes take far more than the limit.
    let hogs = Hogs::start(2);
    std::thread::sleep(Duration::from_millis(200));
    let (code, v, stdout) = run_json("hog.json", &args);
    drop(hogs);
    assert_eq!(code, 0);
    let w = busy_warnings(&v);
    assert_eq!(w.len(), 1, "{:?}", v["quality"]);
    assert!(w[0].contains("background load"), "{w:?}");
    assert!(
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with("Warning:") && l.contains(BUSY)),
        "the table says it too:\n{stdout}"
    );
    let case = &v["cases"][0];
    assert!(
        case["noise"]["background_cpus"].as_f64().unwrap() > 0.25,
        "{:?}",
        case["noise"]
    );
}
