//! Lab tests against the real kernel: they need root (CI runs as root) and
//! `ip`, `tc`, `nft` (scripts/lab/install). Without root each test prints
//! `SKIP <test>: <reason>` and returns, except under `CI=true` (or `1`),
//! where it fails. Tests that time things run one at a time.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use iiop_lab::{
    cleanup_leftovers, netns, DelayMechanism, Impairment, Lab, LabError, LabSpec, LinkReport,
    MeasureOptions, Mechanism,
};

/// Serialises the tests: timing on a 2-core machine is only fair alone.
static SERIAL: Mutex<()> = Mutex::new(());

/// Whether the test can run: true as root. Otherwise the test is skipped
/// (`false`), or, under CI, fails.
fn root_or_skip(test: &str) -> bool {
    match netns::require_root() {
        Ok(()) => true,
        Err(e) => {
            let how = "run the tests as root, as scripts/test does; scripts/lab/install installs ip, tc, nft";
            skip_or_fail(test, &format!("{e} ({how})"));
            false
        }
    }
}

/// A prerequisite of `test` is missing. Under `CI=true` (or `1`) that is a
/// failure; elsewhere prints `SKIP <test>: <reason>` and appends that line
/// to the file named by `IIOPBENCH_SKIP_LOG` when set (scripts/test lists
/// them).
fn skip_or_fail(test: &str, reason: &str) {
    if matches!(std::env::var("CI").as_deref(), Ok("true" | "1")) {
        panic!("CI is set but {reason}");
    }
    let line = format!("SKIP {test}: {reason}");
    eprintln!("{line}");
    if let Some(log) = std::env::var_os("IIOPBENCH_SKIP_LOG") {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log);
        let _ = file.and_then(|mut f| writeln!(f, "{line}"));
    }
}

fn assert_gone(lab_id: &str) {
    let left = netns::list(&format!("{lab_id}-"));
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
}

const MSG: usize = 64;

/// Echo server for fixed 64-byte messages on one accepted connection.
/// Puts the calling thread in the real-time class, below the lab's relay
/// and its probes: the ping-pong tests ask whether the lab moves a round
/// trip by its delay, and on a busy machine an ordinary thread also waits
/// milliseconds for a CPU after every wake-up, which is the machine's
/// doing, not the lab's. Both ends of a ping-pong call it.
fn realtime() {
    let param = libc::sched_param { sched_priority: 3 };
    // SAFETY: sets this thread's (tid 0 = caller) policy from a valid param.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    assert_eq!(
        rc,
        0,
        "SCHED_FIFO as root: {}",
        std::io::Error::last_os_error()
    );
}

fn echo_once(listener: TcpListener) {
    realtime();
    let (mut s, _) = listener.accept().expect("accept");
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = [0u8; MSG];
    while s.read_exact(&mut buf).is_ok() {
        if s.write_all(&buf).is_err() {
            break;
        }
    }
}

/// `n` request/response round trips of 64 bytes; response times.
fn ping_pong(s: &mut TcpStream, n: u32) -> Vec<Duration> {
    realtime();
    let mut out = Vec::new();
    let mut buf = [0u8; MSG];
    for i in 0..n {
        buf[..4].copy_from_slice(&i.to_be_bytes());
        let t0 = Instant::now();
        s.write_all(&buf).expect("send request");
        let mut back = [0u8; MSG];
        s.read_exact(&mut back).expect("read response");
        assert_eq!(back, buf, "echo of request {i}");
        out.push(t0.elapsed());
    }
    out
}

fn mean_ms(v: &[Duration]) -> f64 {
    v.iter().map(Duration::as_secs_f64).sum::<f64>() * 1000.0 / v.len() as f64
}

fn median_ms(v: &[Duration]) -> f64 {
    iiop_lab::measure::median(v).as_secs_f64() * 1000.0
}

/// Self-measurements taken at most, while they find figures outside the
/// tolerances.
const SELF_CHECKS: u32 = 3;

/// The lab's self-check ([`Lab::verify`]), taken again while it fails, at
/// most [`SELF_CHECKS`] times; the first that passes. Its figures are
/// medians, which a build beside the test and a busy loop on every core
/// leave well inside the tolerances; but a disturbance of a second or
/// more that such load does not reproduce has once moved every probe of
/// a measurement in a full test run. A lab that does not do what it was
/// told fails every time: each failure is printed, and all of them are
/// listed if none passes.
fn verified(lab: &Lab, opts: &MeasureOptions) -> Vec<LinkReport> {
    let mut failures = Vec::new();
    for attempt in 1..=SELF_CHECKS {
        match lab.verify(opts) {
            Ok(reports) => return reports,
            Err(LabError::SelfCheck(v)) => {
                eprintln!("self-check {attempt} of {SELF_CHECKS} failed: {v:?}");
                failures.push(v);
            }
            Err(e) => panic!("self-check: {e}"),
        }
    }
    panic!("the lab failed all {SELF_CHECKS} self-checks: {failures:?}");
}

#[test]
fn ci_lab_20ms_2pct_10mbit_measures_itself_and_moves_ping_pong() {
    if !root_or_skip("ci_lab_20ms_2pct_10mbit_measures_itself_and_moves_ping_pong") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let started = Instant::now();
    let full = Impairment {
        delay: Duration::from_millis(20),
        jitter: Duration::ZERO,
        loss: 0.02,
        rate_bps: Some(10_000_000),
    };
    let mut lab = Lab::create(LabSpec::pair("client", "server", full)).expect("create lab");
    let id = lab.id().to_string();
    assert_eq!(lab.namespaces().len(), 3);
    for ns in lab.namespaces() {
        assert!(netns::ns_path(ns).exists(), "{ns} exists");
    }
    let server = lab.host("server").unwrap().addr();
    assert_eq!(server.to_string(), "10.201.0.2");

    // Self-measurement.
    let reports = verified(&lab, &MeasureOptions::default());
    assert_eq!(reports.len(), 1);
    let r = &reports[0];
    eprintln!("{}", serde_json::to_string_pretty(r).unwrap());
    assert_eq!(r.rtt_configured_ms, 40.0);
    for d in [&r.a_to_b, &r.b_to_a] {
        assert_ne!(d.mechanisms.delay, Mechanism::None);
        assert_ne!(d.mechanisms.loss, Mechanism::None);
        assert_eq!(d.mechanisms.rate, Mechanism::Tbf);
        assert_eq!(d.loss_sent, 3000);
        if d.mechanisms.delay == Mechanism::Relay {
            let c = d.relay.expect("relay counters");
            // At least the loss probes that survived nft went through it.
            assert!(c.forwarded >= u64::from(d.loss_received), "{c:?}");
            assert_eq!((c.overflow, c.write_errors), (0, 0));
        } else {
            assert_eq!(d.relay, None);
        }
    }

    // TCP ping-pong: the echo server listens in "server", the client
    // connects from "client"; one connection for all phases.
    let listener = lab.tcp_listener("server", 0).unwrap();
    let port = listener.local_addr().unwrap().port();
    let echo = std::thread::spawn(move || echo_once(listener));
    lab.set_link("client", "server", Impairment::NONE).unwrap();
    let mut conn = lab
        .tcp_connect("client", (server, port).into(), Duration::from_secs(5))
        .unwrap();
    conn.set_nodelay(true).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = ping_pong(&mut conn, 5); // warm-up
    let base = ping_pong(&mut conn, 30);
    let delay_only = Impairment { loss: 0.0, ..full };
    lab.set_link("client", "server", delay_only).unwrap();
    let _ = ping_pong(&mut conn, 5); // warm-up: TCP learns the new RTT
    let delayed = ping_pong(&mut conn, 30);
    lab.set_link("client", "server", full).unwrap();
    let _ = ping_pong(&mut conn, 5);
    let lossy = ping_pong(&mut conn, 30);
    drop(conn);
    echo.join().unwrap();
    let (b, d, l) = (mean_ms(&base), mean_ms(&delayed), mean_ms(&lossy));
    let max = |v: &[Duration]| v.iter().max().unwrap().as_secs_f64() * 1000.0;
    eprintln!(
        "ping-pong max: bare {:.3} ms, delayed {:.3} ms, lossy {:.3} ms",
        max(&base),
        max(&delayed),
        max(&lossy)
    );
    eprintln!("ping-pong mean: bare {b:.3} ms, 20ms+20ms {d:.3} ms, with 2% loss {l:.3} ms");
    let (mb, md, ml) = (median_ms(&base), median_ms(&delayed), median_ms(&lossy));
    eprintln!("ping-pong median: bare {mb:.3} ms, 20ms+20ms {md:.3} ms, with 2% loss {ml:.3} ms");
    // Medians: a round trip that waits for a retransmission or for a
    // higher-priority thread moves the mean but not the median. The
    // delay itself can only add: a broken or half-applied delay moves
    // the median by 0 or 20 ms, far outside 40 ± 4.
    assert!(
        (md - mb - 40.0).abs() <= 4.0,
        "delay moved the median by {:.3} ms",
        md - mb
    );
    assert!(
        (ml - mb - 40.0).abs() <= 4.0,
        "median with loss moved by {:.3} ms",
        ml - mb
    );
    // Loss only adds (retransmissions), and load only adds.
    assert!(
        l - b >= 36.0,
        "mean with loss moved by only {:.3} ms",
        l - b
    );

    lab.destroy().expect("destroy");
    assert_gone(&id);
    eprintln!("ci_lab took {:?}", started.elapsed());
}

#[test]
fn spawned_processes_run_inside_hosts_and_die_with_the_lab() {
    if !root_or_skip("spawned_processes_run_inside_hosts_and_die_with_the_lab") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::create(LabSpec::pair("a", "b", Impairment::NONE)).expect("create lab");
    let id = lab.id().to_string();
    let b_addr = lab.host("b").unwrap().addr();

    let mut cmd = Command::new("ip");
    cmd.args(["-o", "-4", "addr", "show", "dev", "lo"])
        .stdout(Stdio::piped());
    let out = lab.spawn("a", cmd).unwrap().wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("inet 10.201.0.1/32"), "{text}");

    let mut cmd = Command::new("ping");
    cmd.args(["-c", "3", "-i", "0.2", "-W", "2", &b_addr.to_string()])
        .stdout(Stdio::piped());
    let out = lab.spawn("a", cmd).unwrap().wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "ping failed: {text}");
    assert!(text.contains("3 received"), "{text}");

    // A process still running when the lab goes is killed.
    let mut cmd = Command::new("sleep");
    cmd.arg("30");
    let mut child = lab.spawn("b", cmd).unwrap();
    let t0 = Instant::now();
    drop(lab);
    let status = child.wait().unwrap();
    assert!(!status.success());
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert_gone(&id);
}

#[test]
fn failed_create_removes_what_it_made() {
    if !root_or_skip("failed_create_removes_what_it_made") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let netem = Lab::create(LabSpec {
        delay_mechanism: DelayMechanism::Netem,
        ..LabSpec::pair("a", "b", Impairment::delay(Duration::from_millis(5)))
    });
    let mine = format!("{}{}-", iiop_lab::NAME_PREFIX, std::process::id());
    match netem {
        // Kernel without sch_netem: the error names tc, and nothing is left.
        Err(LabError::Command { command, .. }) => {
            assert!(
                command.starts_with("tc qdisc add dev sb root handle 1: netem"),
                "{command}"
            );
        }
        Err(e) => panic!("unexpected error: {e}"),
        Ok(lab) => {
            assert_eq!(
                lab.mechanisms("a", "b").unwrap().delay,
                Mechanism::Netem,
                "kernel has netem"
            );
        }
    }
    // Drop of the Ok lab or the error path has removed everything of ours
    // except labs of concurrently running tests (serialised here).
    assert_eq!(netns::list(&mine), Vec::<String>::new());
}

#[test]
fn clean_removes_leftovers_of_dead_owners_only() {
    if !root_or_skip("clean_removes_leftovers_of_dead_owners_only") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // pid 999999999 is above any pid_max, so its owner is certainly dead.
    let dead = "iiopb-999999999-0-h-x";
    netns::create(dead).unwrap();
    let alive = format!("iiopb-{}-999-h-y", std::process::id());
    netns::create(&alive).unwrap();
    let removed = cleanup_leftovers("iiopb-999999999-", false).unwrap();
    assert_eq!(removed, vec![dead.to_string()]);
    assert!(!netns::ns_path(dead).exists());
    assert_eq!(
        cleanup_leftovers(&alive, false).unwrap(),
        Vec::<String>::new()
    );
    assert!(netns::ns_path(&alive).exists());
    assert_eq!(
        cleanup_leftovers(&alive, true).unwrap(),
        vec![alive.clone()]
    );
    assert!(!netns::ns_path(&alive).exists());

    // A namespace with one of our names that we did not make (a dead
    // process had our pid) is replaced, not an error.
    let stale = format!("iiopb-{}-777-h-z", std::process::id());
    netns::ip(&["netns", "add", &stale]).unwrap();
    let f = netns::create(&stale).unwrap();
    drop(f);
    netns::destroy(&stale).unwrap();
    assert!(!netns::ns_path(&stale).exists());
    assert!(!netns::live().contains(&stale));
}

#[test]
fn bad_spec_is_rejected_before_touching_the_system() {
    let bad = LabSpec::pair("a", "a", Impairment::NONE);
    assert_eq!(
        Lab::create(bad).unwrap_err().to_string(),
        "invalid lab spec: host `a` listed twice"
    );
}

#[test]
fn features_probe_matches_this_kernel() {
    if !root_or_skip("features_probe_matches_this_kernel") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let f = iiop_lab::probe_features().expect("probe");
    eprintln!("{}", serde_json::to_string(&f).unwrap());
    assert!(f.lab_possible(), "{f:?}");
    // netem is optional; whatever the probe says must agree with what
    // Lab::create picks in Auto mode.
    let lab = Lab::create(LabSpec::pair(
        "a",
        "b",
        Impairment::delay(Duration::from_millis(1)),
    ))
    .unwrap();
    let expected = if f.netem {
        Mechanism::Netem
    } else {
        Mechanism::Relay
    };
    assert_eq!(lab.mechanisms("a", "b").unwrap().delay, expected);
    assert!(!netns::ns_path(&format!("iiopb-{}-probe", std::process::id())).exists());
}

const CHILD_ENV: &str = "IIOP_LAB_SIGNAL_CHILD";

/// Run by `signals_*` in a child process: holds a lab with the cleanup
/// handler installed until killed (at most 30 s).
#[test]
#[ignore = "helper process for the signal tests"]
fn signal_child_holds_a_lab() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    iiop_lab::install_cleanup_handler().unwrap();
    let lab = Lab::create(LabSpec::pair(
        "a",
        "b",
        Impairment::delay(Duration::from_millis(5)),
    ))
    .unwrap();
    println!("LAB_ID={}", lab.id());
    std::io::stdout().flush().unwrap();
    std::thread::sleep(Duration::from_secs(30));
}

/// Starts the helper, returns it and its lab id once the lab exists.
fn start_child() -> (std::process::Child, String) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "signal_child_holds_a_lab",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_ENV, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(out).lines().map_while(|l| l.ok()) {
            if let Some(id) = line.strip_prefix("LAB_ID=") {
                let _ = tx.send(id.to_string());
            }
        }
    });
    let id = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("child printed its lab id");
    (child, id)
}

#[test]
fn sigint_removes_the_lab_and_sigkill_leftovers_are_cleaned() {
    if !root_or_skip("sigint_removes_the_lab_and_sigkill_leftovers_are_cleaned") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    use std::os::unix::process::ExitStatusExt;

    let (mut child, id) = start_child();
    assert_eq!(netns::list(&format!("{id}-")).len(), 3);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(
        status.signal(),
        Some(libc::SIGINT),
        "died of the re-raised SIGINT"
    );
    assert_gone(&id);

    let (mut child, id) = start_child();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
    let left = netns::list(&format!("{id}-"));
    assert_eq!(left.len(), 3, "SIGKILL cannot be caught: namespaces stay");
    assert_eq!(cleanup_leftovers(&format!("{id}-"), false).unwrap(), left);
    assert_gone(&id);
}

/// Bytes moved one way over a fresh TCP connection from `from` to `to`
/// within `limit`; returns (bytes, seconds).
fn bulk(lab: &Lab, from: &str, to: &str, total: usize, limit: Duration) -> (usize, f64) {
    let addr = lab.host(to).unwrap().addr();
    let listener = lab
        .run_in(to, move || TcpListener::bind((addr, 0)))
        .unwrap()
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let sink = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = vec![0u8; 1 << 16];
        let mut n = 0usize;
        while let Ok(k) = s.read(&mut buf) {
            if k == 0 {
                break;
            }
            n += k;
        }
        n
    });
    let mut conn = lab
        .run_in(from, move || {
            TcpStream::connect_timeout(&(addr, port).into(), Duration::from_secs(5))
        })
        .unwrap()
        .unwrap();
    conn.set_write_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let chunk = vec![7u8; 1 << 16];
    let t0 = Instant::now();
    let mut sent = 0;
    while sent < total && t0.elapsed() < limit {
        conn.write_all(&chunk).unwrap();
        sent += chunk.len();
    }
    drop(conn);
    let got = sink.join().unwrap();
    (got, t0.elapsed().as_secs_f64())
}

#[test]
fn relay_carries_tens_of_megabits() {
    if !root_or_skip("relay_carries_tens_of_megabits") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let spec = LabSpec {
        delay_mechanism: DelayMechanism::Relay,
        ..LabSpec::pair("a", "b", Impairment::delay(Duration::from_millis(5)))
    };
    let lab = Lab::create(spec).unwrap();
    let (bytes, secs) = bulk(&lab, "a", "b", 40 << 20, Duration::from_secs(4));
    let mbps = bytes as f64 * 8.0 / secs / 1e6;
    eprintln!("relay throughput: {bytes} bytes in {secs:.2} s = {mbps:.1} Mbit/s");
    assert!(mbps >= 40.0, "relay carried only {mbps:.1} Mbit/s");
}

#[test]
fn three_hosts_t1_asymmetric_delay_with_jitter() {
    if !root_or_skip("three_hosts_t1_asymmetric_delay_with_jitter") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let t1 = |delay_ms, jitter_ms| Impairment {
        delay: Duration::from_millis(delay_ms),
        jitter: Duration::from_millis(jitter_ms),
        loss: 0.0,
        rate_bps: Some(iiop_lab::T1_BPS),
    };
    let spec = LabSpec {
        hosts: vec!["client".into(), "server".into(), "far".into()],
        links: vec![
            iiop_lab::LinkSpec {
                a: "client".into(),
                b: "server".into(),
                a_to_b: t1(50, 2),
                b_to_a: t1(10, 2),
                mtu: 1500,
            },
            iiop_lab::LinkSpec {
                mtu: 1400,
                ..iiop_lab::LinkSpec::symmetric(
                    "server",
                    "far",
                    Impairment::delay(Duration::from_millis(5)),
                )
            },
        ],
        delay_mechanism: DelayMechanism::Auto,
    };
    let lab = Lab::create(spec).unwrap();
    let id = lab.id().to_string();
    let reports = verified(&lab, &MeasureOptions::default());
    for r in &reports {
        eprintln!("{}", serde_json::to_string(r).unwrap());
    }
    assert_eq!(reports.len(), 2);
    let cs = &reports[0];
    assert_eq!(cs.rtt_configured_ms, 60.0);
    // ±2 ms jitter each way: the fastest of 30 echoes is below 59 ms.
    assert!(
        cs.rtt_min_ms >= 56.0 && cs.rtt_min_ms < 59.0,
        "min {}",
        cs.rtt_min_ms
    );
    assert_eq!(reports[1].rtt_configured_ms, 10.0);
    assert_eq!(reports[1].a_to_b.rate_bps, None);

    // Only linked hosts reach each other.
    let far = lab.host("far").unwrap().addr();
    let err = lab
        .run_in("client", move || {
            TcpStream::connect_timeout(&(far, 9).into(), Duration::from_secs(2))
        })
        .unwrap()
        .unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENETUNREACH), "{err}");
    // The MTU of the server-far link is what the spec says.
    let mut cmd = Command::new("ip");
    cmd.args(["-o", "link", "show", "dev", "l1"])
        .stdout(Stdio::piped());
    let out = lab.spawn("far", cmd).unwrap().wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("mtu 1400"), "{text}");
    drop(lab);
    assert_gone(&id);
}

#[test]
fn self_check_catches_a_lab_that_lies() {
    if !root_or_skip("self_check_catches_a_lab_that_lies") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let lab = Lab::create(LabSpec::pair("a", "b", Impairment::NONE)).unwrap();
    // Behind the lab's back: a second nftables table in the middle
    // namespace drops 30 % of a->b while the spec says no loss.
    let middle = lab.links()[0].1.to_string();
    let rogue = "table inet rogue {\n chain c {\n  type filter hook forward priority 10; policy accept;\n  iifname \"sa\" numgen random mod 100 < 30 drop\n }\n}\n";
    let mut nft = Command::new("ip")
        .args(["netns", "exec", &middle, "nft", "-f", "-"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    nft.stdin
        .take()
        .unwrap()
        .write_all(rogue.as_bytes())
        .unwrap();
    assert!(nft.wait().unwrap().success());
    let opts = MeasureOptions {
        rtt_probes: 5,
        loss_probes: 1000,
        rate_duration: Duration::from_millis(200),
    };
    // The check must name the loss of a->b, and nothing else but possibly
    // the a<->b round trip: its 5 echoes on a machine that may be busy
    // (another build) can miss the 1 ms tolerance, which is not what this
    // test is about. (Lost echoes themselves no longer inflate it: see
    // `rtt_samples`.)
    match lab.verify(&opts) {
        Err(LabError::SelfCheck(v)) => {
            let (loss, rest): (Vec<&String>, Vec<&String>) =
                v.iter().partition(|s| s.starts_with("a->b: loss "));
            assert_eq!(loss.len(), 1, "{v:?}");
            assert!(loss[0].ends_with(" %, configured 0.00 %"), "{}", loss[0]);
            for other in rest {
                assert!(other.starts_with("a<->b: added RTT "), "{v:?}");
                eprintln!("also (not this test's concern): {other}");
            }
        }
        other => panic!("expected a failed self-check, got {other:?}"),
    }
    let r = &lab.measure(&opts).unwrap()[0];
    assert!((r.a_to_b.loss - 0.3).abs() < 0.06, "loss {}", r.a_to_b.loss);
    assert_eq!(r.b_to_a.loss, 0.0);
}
