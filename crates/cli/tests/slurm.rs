//! `iiopbench agents slurm` through a real Slurm: a one-node cluster on
//! loopback (Debian's slurm-wlm and munge: munged, slurmctld and slurmd
//! on a configuration of their own, started by scripts/slurm/start and
//! stopped by scripts/slurm/stop, also when the test fails) runs a
//! 3-agent load sweep against our server as one job — the coordinator in
//! its batch step, the agents as the tasks of one `srun` step — and every
//! merged step's counts must be the sum of the agents'.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use iiop_bench_idl::run::{RunningServer, ServerOptions};
use serde_json::Value;

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_iiopbench")
}

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slurm")
}

/// A directory of this test, removed on drop.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running one-node Slurm, stopped and removed on drop.
struct Cluster {
    dir: PathBuf,
    conf: String,
}

impl Cluster {
    fn start(dir: PathBuf) -> Cluster {
        let out = Command::new(scripts().join("start"))
            .arg(&dir)
            .env("SLURM_START_TIMEOUT", "60")
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .expect("scripts/slurm/start runs");
        // Whatever it started is stopped, even when it failed half-way.
        let mut c = Cluster {
            dir,
            conf: String::new(),
        };
        assert!(out.status.success(), "scripts/slurm/start failed");
        let text = String::from_utf8_lossy(&out.stdout);
        c.conf = text
            .lines()
            .find_map(|l| l.strip_prefix("SLURM_CONF="))
            .expect("start prints SLURM_CONF=")
            .to_string();
        c
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(scripts().join("stop"))
            .arg(&self.dir)
            .stdin(Stdio::null())
            .status();
    }
}

/// Why a one-node Slurm cannot start here, if it cannot.
fn missing() -> Option<String> {
    let path = format!(
        "{}:/usr/sbin:/sbin",
        std::env::var("PATH").unwrap_or_default()
    );
    for p in ["munged", "slurmctld", "slurmd", "srun", "sbatch"] {
        if !std::env::split_paths(&path).any(|d| d.join(p).is_file()) {
            return Some(format!(
                "{p} is not installed (scripts/slurm/install installs Debian's slurm-wlm and munge)"
            ));
        }
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("slurmd runs jobs as their user and must run as root".into());
    }
    None
}

#[test]
fn three_slurm_tasks_sweep_in_step_and_merge_exactly() {
    let test = "three_slurm_tasks_sweep_in_step_and_merge_exactly";
    if let Some(why) = missing() {
        common::skip_or_fail(test, &why);
        return;
    }
    let scratch = Scratch(
        std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("iiopbench-slurm-test-{}", std::process::id())),
    );
    let _ = std::fs::remove_dir_all(&scratch.0);
    std::fs::create_dir_all(&scratch.0).unwrap();
    let t0 = Instant::now();
    let cluster = Cluster::start(scratch.0.join("cluster"));
    let started = t0.elapsed();
    let srv = RunningServer::start(ServerOptions {
        threads: 2,
        ..Default::default()
    })
    .unwrap();
    let target = format!("corbaloc:iiop:1.2@127.0.0.1:{}/Bench", srv.addr().port());
    let run = scratch.0.join("run");
    let json = scratch.0.join("merged.json");
    let t1 = Instant::now();
    let mut child = common::Proc(
        Command::new(exe())
            .args(["agents", "slurm", "--agents", "3", "--duration", "1s"])
            .args([
                "--register-timeout",
                "60s",
                "--queue-timeout",
                "60s",
                "--dir",
            ])
            .arg(&run)
            .arg("--json")
            .arg(&json)
            .args(["--", "bench", "sweep", "--target", &target])
            .args(["--open", "200,400", "--warmup", "20"])
            .env("SLURM_CONF", &cluster.conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("iiopbench starts"),
    );
    let limit = Duration::from_secs(180);
    let status = loop {
        if let Some(st) = child.0.try_wait().unwrap() {
            break st;
        }
        assert!(
            t1.elapsed() < limit,
            "agents slurm still running after {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let ran = t1.elapsed();
    let out = std::fs::read_dir(&run)
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().starts_with("slurm-"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .unwrap_or_else(|| "(no slurm-JOBID.out)".into());
    assert!(status.success(), "{status}; the job's output:\n{out}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    common::agents::check_merged_sweep(&v, 3, &[200.0, 400.0]);
    // Ids are the tasks' ranks, each named by its rank and node.
    let mut names: Vec<(u64, String)> = v["agents"]["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["id"].as_u64().unwrap(),
                a["name"].as_str().unwrap().into(),
            )
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        (0..3)
            .map(|r| (r, format!("task {r}@localhost")))
            .collect::<Vec<_>>()
    );
    // The coordinator published its address in the run directory.
    let addr = std::fs::read_to_string(run.join("coordinator")).unwrap();
    assert!(addr.trim().starts_with("localhost:"), "{addr}");
    let measured: u64 = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["calls"].as_u64().unwrap())
        .sum();
    assert!(srv.stats().calls >= measured);
    let t2 = Instant::now();
    drop(cluster);
    eprintln!(
        "slurm: started in {started:?}, the 3-agent sweep ran in {ran:?}, stopped in {:?}",
        t2.elapsed()
    );
}
