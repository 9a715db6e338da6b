//! `iiopbench orbs compare --quick` against ours and omniORB, black-box:
//! the real binary starts both servers, runs every section's pairs and
//! raw-TCP runs, and writes results (schema 6, kind `orbs`) that
//! `iiopbench report` renders with every section, each ratio with its
//! range over the rounds. Bounded: the run is killed after
//! [`RUN_LIMIT`]. Skipped with its reason when omniORB is not built here
//! (a failure under CI, where scripts/test builds it first). The figures
//! of a debug build say nothing of the ORBs; what is checked is that each
//! is a real measurement: positive, finite, its median inside its range,
//! over the rounds asked for.

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The longest the quick comparison may take here (a debug build on a
/// shared 2-CPU machine).
const RUN_LIMIT: Duration = Duration::from_secs(240);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn iiopbench() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_iiopbench"));
    c.env("IIOPBENCH_ROOT", root()).stdin(Stdio::null());
    c
}

/// Run `cmd` to its end within `limit`; its status and stdout.
fn bounded(mut cmd: Command, limit: Duration) -> (std::process::ExitStatus, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("iiopbench runs");
    let mut out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).unwrap();
        s
    });
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > limit {
            // SIGTERM first: the command stops the servers it started.
            // SAFETY: kill(2) on our own child's pid.
            unsafe {
                libc::kill(child.id() as i32, libc::SIGTERM);
            }
            std::thread::sleep(Duration::from_secs(10));
            let _ = child.kill();
            let _ = child.wait();
            panic!("iiopbench did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    (status, reader.join().unwrap())
}

const SECTIONS: [(&str, &str); 7] = [
    ("client", "1. Client against client"),
    ("server", "2. Server against server"),
    ("both", "3. Both ours against both omniORB"),
    ("limit", "4. The physical limit"),
    ("latency", "5. Latency (p50)"),
    ("buffered", "6. Buffered oneways"),
    ("coalesced", "7. Coalesced oneways"),
];

#[test]
fn quick_comparison_of_ours_and_omniorb_is_written_and_reported() {
    if !common::vendor_built("orbs_compare", "omniorb", true) {
        return;
    }
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iiopbench-orbs-compare-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("compare.json");
    let mut cmd = iiopbench();
    // --quick at octet only, 2 MiB a run: a debug build's client would
    // take minutes over the char points and 8 MiB twoways, which say
    // nothing more about the command.
    cmd.args([
        "orbs",
        "compare",
        "--quick",
        "--type",
        "octet",
        "--total",
        "2MiB",
        "--servers",
        "ours,omniorb",
        "--json",
    ])
    .arg(&json);
    let t0 = Instant::now();
    let (status, stdout) = bounded(cmd, RUN_LIMIT);
    let took = t0.elapsed();
    eprintln!("orbs compare --quick took {took:?}");
    assert!(
        status.success(),
        "orbs compare failed ({status}):\n{stdout}"
    );
    for (_, title) in SECTIONS {
        assert!(stdout.contains(title), "summary lacks {title:?}:\n{stdout}");
    }

    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["schema_version"], 6);
    assert_eq!(r["kind"], "orbs");
    assert_eq!(r["outcome"]["complete"], true, "{}", r["outcome"]);
    assert_eq!(r["job"]["reps"], 2, "--quick takes two rounds");
    let cmp = &r["comparison"];
    assert_eq!(cmp["servers"], serde_json::json!(["ours", "omniorb"]));
    let ratios = cmp["ratios"].as_array().unwrap();
    for (id, title) in SECTIONS {
        assert!(
            ratios.iter().any(|x| x["section"] == id),
            "no ratio in section {title}"
        );
    }
    let f = |v: &serde_json::Value| v.as_f64().unwrap();
    for x in ratios {
        let q = &x["ratio"];
        let (med, lo, hi) = (f(&q["median"]), f(&q["min"]), f(&q["max"]));
        assert!(
            med.is_finite() && lo > 0.0 && lo <= med && med <= hi && hi < 1e3,
            "{x}"
        );
        assert!(f(&x["num_value"]) > 0.0 && f(&x["den_value"]) > 0.0, "{x}");
        // Every throughput ratio divides two rounds at least (the limit
        // section two ORB runs per round).
        if x["unit"] == "Mbit/s" {
            assert!(q["n"].as_u64().unwrap() >= 2, "{x}");
        }
    }
    // Every (client, server) pair of every point ran in every round:
    // 2 sizes × (4 oneway + 2 twoway clients) × 2 servers.
    let pairs: Vec<&serde_json::Value> = r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["params"]["section"] == "pairs")
        .collect();
    assert_eq!(pairs.len(), 2 * 6 * 2, "pair cases");
    for c in &pairs {
        let runs = c["runs"].as_array().unwrap();
        assert!(
            (2..=3).contains(&runs.len()),
            "{}: {} rounds",
            c["name"],
            runs.len()
        );
        assert!(
            runs.iter().all(|x| f(&x["throughput_mbps"]) > 0.0),
            "{}",
            c["name"]
        );
    }

    let rep = dir.join("report");
    let mut cmd = iiopbench();
    cmd.arg("report").arg(&json).arg("--report").arg(&rep);
    let (status, out) = bounded(cmd, Duration::from_secs(60));
    assert!(status.success(), "report failed: {out}");
    let md = std::fs::read_to_string(rep.join("report.md")).unwrap();
    let html = std::fs::read_to_string(rep.join("index.html")).unwrap();
    for (_, title) in SECTIONS {
        assert!(
            md.contains(&format!("### {title}")),
            "report.md lacks {title}"
        );
        assert!(
            html.contains(&format!("<h3>{}</h3>", title)),
            "index.html lacks {title}"
        );
    }
    assert!(md.contains("range over rounds"));
    // A figure per section, its whiskers the rounds' range.
    let figs = std::fs::read_dir(&rep)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "svg")
        })
        .count();
    assert!(figs >= SECTIONS.len(), "{figs} figures");
    std::fs::remove_dir_all(&dir).unwrap();
}
