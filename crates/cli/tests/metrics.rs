//! `--metrics-listen`: the live metrics of a run and of `serve`, scraped
//! while they run. The bench commands' counters must equal what their
//! results file says; a real Prometheus server (Debian's `prometheus`),
//! started and stopped here, scrapes a 10 s run and must hold its call
//! count within 1 % of the JSON's.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_iiopbench")
}

/// A scratch directory of this test, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let d = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("iiopbench-metrics-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }

    fn path(&self, f: &str) -> PathBuf {
        self.0.join(f)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child process stopped (SIGTERM, then SIGKILL after 10 s) and reaped
/// on drop.
struct Proc(Child);

impl Proc {
    fn stop(&mut self) -> Option<std::process::ExitStatus> {
        if let Ok(Some(st)) = self.0.try_wait() {
            return Some(st);
        }
        // SAFETY: kill has no memory preconditions; the pid is our child's.
        unsafe { libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(st)) = self.0.try_wait() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        self.0.wait().ok()
    }

    /// Wait for the process to end by itself, at most `limit`.
    fn wait_for(&mut self, limit: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(st) = self.0.try_wait().unwrap() {
                return st;
            }
            assert!(Instant::now() < deadline, "still running after {limit:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Start `iiopbench args…` and wait (at most 60 s) for the `metrics: URL`
/// line on its stderr; returns the process and the exporter's address.
fn start_with_metrics(args: &[&str]) -> (Proc, SocketAddr) {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("iiopbench starts");
    let err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            eprintln!("[iiopbench] {line}");
            if let Some(url) = line.strip_prefix("metrics: ") {
                let _ = tx.send(url.to_string());
            }
        }
    });
    let p = Proc(child);
    let url = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the metrics address is printed");
    (p, addr_of(&url))
}

/// `127.0.0.1:PORT` of `http://127.0.0.1:PORT/metrics`.
fn addr_of(url: &str) -> SocketAddr {
    let hostport = url
        .strip_prefix("http://")
        .and_then(|r| r.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("not a metrics URL: {url}"));
    hostport.parse().unwrap()
}

/// GET `path` from `addr` (one request, `Connection: close`): the status
/// code and the body.
fn get(addr: SocketAddr, path: &str, accept: Option<&str>) -> (u16, String) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{accept}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status: {head}"));
    (code, body.to_string())
}

/// The value of the series `series` (name and labels as written) in a
/// scrape.
fn value(scrape: &str, series: &str) -> Option<f64> {
    scrape
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.parse().unwrap())
}

/// Wait (at most 120 s) for `file` to exist, while `p` runs; then parse it.
fn wait_json(file: &Path, p: &mut Proc) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !file.exists() {
        assert!(
            p.0.try_wait().unwrap().is_none() || file.exists(),
            "the run ended without its JSON"
        );
        assert!(
            Instant::now() < deadline,
            "no {} after 120 s",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}

/// The bench commands count into the live metrics exactly what their
/// results count: a scrape after the run (while `--metrics-linger`
/// serves) shows each case's calls as the JSON has them, errors none.
#[test]
fn a_finished_runs_counters_equal_its_results() {
    let scratch = Scratch::new("finished");
    let runs: &[(&str, &[&str])] = &[
        // Oneways, added in batches between the loop's clock readings.
        (
            "throughput",
            &[
                "bench",
                "throughput",
                "--mode",
                "oneway,twoway",
                "--size",
                "1KiB",
                "--total",
                "2MiB",
                "--min-duration",
                "0s",
            ],
        ),
        // Open loop: each call recorded as it completes, by its task.
        (
            "latency",
            &[
                "bench", "latency", "--rate", "2000", "--count", "1000", "--warmup", "10",
            ],
        ),
        (
            "closed",
            &[
                "bench",
                "closed",
                "--clients",
                "2",
                "--duration",
                "1s",
                "--service",
                "100us",
            ],
        ),
    ];
    for (kind, args) in runs {
        let json = scratch.path(&format!("{kind}.json"));
        let j = json.display().to_string();
        let mut all: Vec<&str> = args.to_vec();
        all.extend([
            "--runs",
            "2",
            "--quiet",
            "--json",
            &j,
            "--metrics-listen",
            "127.0.0.1:0",
            "--metrics-linger",
            "60s",
        ]);
        let (mut p, addr) = start_with_metrics(&all);
        let v = wait_json(&json, &mut p);
        assert_eq!(v["outcome"]["complete"], true, "{kind}: {}", v["outcome"]);
        let (code, scrape) = get(addr, "/metrics", None);
        assert_eq!(code, 200);
        let cases = v["cases"].as_array().unwrap();
        let giop: Vec<&Value> = cases
            .iter()
            .filter(|c| !c["params"]["mode"].as_str().unwrap().starts_with("tcp"))
            .collect();
        assert!(!giop.is_empty(), "{kind}: no cases");
        for c in giop {
            let name = c["name"].as_str().unwrap();
            let labels = format!("{{bench=\"{kind}\",case=\"{name}\",target=\"embedded\"}}");
            let calls = c["calls"].as_u64().unwrap();
            assert!(calls > 0, "{kind} {name}");
            assert_eq!(
                value(&scrape, &format!("iiopbench_calls_total{labels}")),
                Some(calls as f64),
                "{kind} {name} (two runs add up):\n{scrape}"
            );
            assert_eq!(
                value(&scrape, &format!("iiopbench_payload_bytes_total{labels}")),
                Some(c["bytes"].as_u64().unwrap() as f64),
                "{kind} {name}"
            );
            // Every timed call is in the histogram (oneways are not timed).
            let timed = value(
                &scrape,
                &format!("iiopbench_call_latency_seconds_count{labels}"),
            );
            match c["params"]["mode"].as_str().unwrap() {
                "oneway" => assert_eq!(timed, None, "{kind} {name}"),
                _ => assert_eq!(timed, Some(calls as f64), "{kind} {name}"),
            }
        }
        assert!(
            !scrape.contains("iiopbench_call_errors_total{"),
            "{kind}:\n{scrape}"
        );
        // SIGTERM ends the linger at once, and the command's status is
        // the run's.
        let t = Instant::now();
        let st = p.stop().unwrap();
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        assert!(st.success(), "{kind}: {st:?}");
    }
}

/// `serve --metrics-listen` counts and times each operation it serves:
/// as many pings as the client made, a service time for each.
#[test]
fn serve_exports_per_operation_counts_and_service_times() {
    let scratch = Scratch::new("serve");
    let mut child = Command::new(bin())
        .args(["serve", "--metrics-listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("serve starts");
    let out = child.stdout.take().unwrap();
    let mut server = Proc(child);
    let (mut ior, mut metrics) = (None, None);
    let mut lines = BufReader::new(out).lines();
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(url) = line.strip_prefix("config metrics=") {
            metrics = Some(addr_of(url));
        }
        if line.starts_with("IOR:") {
            ior = Some(line.clone());
        }
        if line == "ready" {
            break;
        }
    }
    // The rest (the counters at shutdown) read as it comes, so the server
    // never writes into a closed pipe.
    std::thread::spawn(move || lines.for_each(drop));
    let (ior, metrics) = (
        ior.expect("an IOR line"),
        metrics.expect("a config metrics= line"),
    );
    let json = scratch.path("lat.json");
    let j = json.display().to_string();
    let code = iiopbench::main_with_args([
        "iiopbench",
        "bench",
        "latency",
        "--target",
        &ior,
        "--count",
        "300",
        "--warmup",
        "20",
        "--runs",
        "1",
        "--quiet",
        "--json",
        &j,
    ]);
    assert_eq!(code, 0);
    let (status, scrape) = get(
        metrics,
        "/metrics",
        Some("application/openmetrics-text; version=1.0.0"),
    );
    assert_eq!(status, 200);
    assert!(scrape.ends_with("# EOF\n"), "{scrape}");
    let l = "{operation=\"ping\"}";
    assert_eq!(
        value(&scrape, &format!("iiopbench_server_requests_total{l}")),
        Some(320.0),
        "{scrape}"
    );
    assert_eq!(
        value(
            &scrape,
            &format!("iiopbench_server_service_seconds_count{l}")
        ),
        Some(320.0)
    );
    assert_eq!(
        value(&scrape, &format!("iiopbench_server_exceptions_total{l}")),
        Some(0.0)
    );
    // ping has no arguments and no results: no body bytes either way.
    assert_eq!(
        value(&scrape, &format!("iiopbench_server_request_bytes_total{l}")),
        Some(0.0)
    );
    assert_eq!(
        value(&scrape, &format!("iiopbench_server_reply_bytes_total{l}")),
        Some(0.0)
    );
    let sum = value(&scrape, &format!("iiopbench_server_service_seconds_sum{l}")).unwrap();
    assert!(sum > 0.0 && sum < 320.0 * 0.01, "{sum}");
    // The client's connection has ended.
    assert_eq!(
        value(&scrape, "iiopbench_server_connections_closed_total"),
        Some(1.0),
        "{scrape}"
    );
    let st = server.stop().unwrap();
    assert!(st.success(), "{st:?}");
}

/// Where the `prometheus` program is, if installed.
fn prometheus() -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join("prometheus"))
        .find(|p| p.is_file())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A query string's value, percent-encoded.
fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// An instant query to Prometheus's HTTP API: its `data.result`.
fn query(prom: SocketAddr, q: &str) -> Vec<Value> {
    let (code, body) = get(prom, &format!("/api/v1/query?query={}", encode(q)), None);
    assert_eq!(code, 200, "{q}: {body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["status"], "success", "{q}: {body}");
    v["data"]["result"].as_array().cloned().unwrap_or_default()
}

/// The acceptance test: a Prometheus server started here scrapes
/// `--metrics-listen` every second during a 10 s `bench latency`, and its
/// query API holds the run's call count within 1 % of the JSON's. The
/// run serves 3 s longer (`--metrics-linger`) so a scrape after its last
/// call sees the final count; the scrapes during the run must have seen
/// the count grow.
#[test]
fn prometheus_scrapes_a_10s_run_and_holds_its_call_count() {
    let test = "prometheus_scrapes_a_10s_run_and_holds_its_call_count";
    let Some(prom_bin) = prometheus() else {
        common::skip_or_fail(
            test,
            "prometheus is not installed (scripts/install-deps installs Debian's)",
        );
        return;
    };
    let scratch = Scratch::new("prometheus");
    // Targets come from a file Prometheus watches: it is started (and
    // ready) first, and learns the run's port-0 address when the run has
    // printed it.
    let targets = scratch.path("targets.json");
    std::fs::write(&targets, "[]").unwrap();
    let config = scratch.path("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: iiopbench\n    file_sd_configs:\n      - files: ['{}']\n        refresh_interval: 1s\n",
            targets.display()
        ),
    )
    .unwrap();
    let port = free_port();
    let prom_addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut prom = Proc(
        Command::new(&prom_bin)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                scratch.path("data").display()
            ))
            .arg(format!("--web.listen-address={prom_addr}"))
            .arg("--log.level=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("prometheus starts"),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(
            prom.0.try_wait().unwrap().is_none(),
            "prometheus exited at start"
        );
        if TcpStream::connect_timeout(&prom_addr, Duration::from_secs(1)).is_ok()
            && get(prom_addr, "/-/ready", None).0 == 200
        {
            break;
        }
        assert!(Instant::now() < deadline, "prometheus not ready after 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }

    let json = scratch.path("run.json");
    let j = json.display().to_string();
    let (mut run, metrics) = start_with_metrics(&[
        "bench",
        "latency",
        "--duration",
        "10s",
        "--runs",
        "1",
        "--quiet",
        "--json",
        &j,
        "--metrics-listen",
        "127.0.0.1:0",
        "--metrics-linger",
        "3s",
    ]);
    let tmp = scratch.path("targets.tmp");
    std::fs::write(&tmp, format!("[{{\"targets\": [\"{metrics}\"]}}]")).unwrap();
    std::fs::rename(&tmp, &targets).unwrap();
    let st = run.wait_for(Duration::from_secs(120));
    assert!(st.success(), "{st:?}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let calls = v["cases"][0]["calls"].as_u64().unwrap() as f64;
    assert_eq!(v["cases"][0]["name"], "ping");
    assert!(calls > 0.0);

    let series = "iiopbench_calls_total{job=\"iiopbench\",bench=\"latency\",case=\"ping\"}";
    let headline = query(prom_addr, &format!("max_over_time({series}[10m])"));
    assert_eq!(headline.len(), 1, "{headline:?}");
    let seen: f64 = headline[0]["value"][1].as_str().unwrap().parse().unwrap();
    let off = (seen - calls).abs() / calls;
    assert!(
        off <= 0.01,
        "Prometheus holds {seen} calls, the JSON {calls}: {:.2} % apart",
        off * 100.0
    );
    // The scrapes during the run saw the count grow: several samples
    // between none and the last.
    let raw = query(prom_addr, &format!("{series}[10m]"));
    assert_eq!(raw.len(), 1, "{raw:?}");
    let samples: Vec<f64> = raw[0]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s[1].as_str().unwrap().parse().unwrap())
        .collect();
    let during = samples.iter().filter(|&&x| x > 0.0 && x < seen).count();
    assert!(during >= 3, "scrapes during the run: {samples:?}");
    assert!(
        samples.windows(2).all(|w| w[0] <= w[1]),
        "a counter that went down: {samples:?}"
    );
    // The latency histogram came through too, one value per call.
    let count = query(
        prom_addr,
        "max_over_time(iiopbench_call_latency_seconds_count{job=\"iiopbench\",case=\"ping\"}[10m])",
    );
    let n: f64 = count[0]["value"][1].as_str().unwrap().parse().unwrap();
    assert_eq!(n, seen);
    let st = prom.stop();
    assert!(st.is_some());
}
