//! Coordinator and agents over loopback (port 0), agents as threads with
//! injected clocks: the start barrier lines agents up on one instant
//! whatever their clocks say, and agents that never come, come with a clock
//! too far off, or die mid-run are reported by id with the reason.

use std::net::TcpListener;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use iiop_agents::clock::{SkewedClock, SystemClock};
use iiop_agents::coordinator::{coordinate, Config, Outcome};
use iiop_agents::{join, JoinConfig, Joined, Status};

const SEC: i64 = 1_000_000_000;

fn config(agents: u32, max_offset: Duration) -> Config {
    Config {
        agents,
        register_timeout: Duration::from_secs(3),
        max_offset,
        pings: 8,
        lead: Duration::from_millis(300),
        case_period: Duration::from_millis(100),
        result_timeout: Duration::from_secs(5),
        io_timeout: Duration::from_secs(2),
        version: "test".into(),
    }
}

fn join_cfg(addr: &str, name: &str) -> JoinConfig {
    JoinConfig {
        coordinator: addr.into(),
        id: None,
        name: name.into(),
        version: "test".into(),
        connect_timeout: Duration::from_secs(5),
        start_timeout: Duration::from_secs(10),
    }
}

/// How a test agent behaves once it has its order.
#[derive(Clone, Copy)]
enum Behaviour {
    Run,
    Die,
}

/// Start an agent thread with a clock `skew` ns off; it reports the
/// instant it was told to start at.
fn agent(
    addr: String,
    name: &'static str,
    skew: i64,
    behaviour: Behaviour,
    starts: mpsc::Sender<(&'static str, Instant)>,
) -> std::thread::JoinHandle<Result<Joined, String>> {
    std::thread::spawn(move || {
        let clock = SkewedClock(skew);
        let mut run = |o: &iiop_agents::Order<serde_json::Value>| {
            let at = o.start_instant(&clock);
            starts.send((name, at)).unwrap();
            match behaviour {
                Behaviour::Run => Ok(serde_json::json!({"agent": name, "job": o.job})),
                Behaviour::Die => panic!("agent {name} dies mid-run"),
            }
        };
        join(&join_cfg(&addr, name), &clock, &mut run).map_err(|e| e.to_string())
    })
}

fn run_coordinator(l: TcpListener, cfg: Config) -> std::thread::JoinHandle<Outcome> {
    std::thread::spawn(move || {
        let job = serde_json::json!({"bench": "latency"});
        coordinate(&l, &cfg, &job, &SystemClock, &|line| eprintln!("{line}")).unwrap()
    })
}

#[test]
fn agents_start_together_whatever_their_clocks_say() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let coord = run_coordinator(l, config(3, Duration::from_secs(10)));
    let (tx, rx) = mpsc::channel();
    let agents = [("fast", 4 * SEC), ("slow", -3 * SEC), ("exact", 0)]
        .map(|(n, skew)| agent(addr.clone(), n, skew, Behaviour::Run, tx.clone()));
    for a in agents {
        assert!(matches!(a.join().unwrap(), Ok(Joined::Ran { .. })));
    }
    let out = coord.join().unwrap();
    assert!(
        out.agents.iter().all(|a| a.status == Status::Ran),
        "{:?}",
        out.agents
    );
    let starts: Vec<Instant> = rx.try_iter().map(|(_, t)| t).collect();
    assert_eq!(starts.len(), 3);
    let (lo, hi) = (starts.iter().min().unwrap(), starts.iter().max().unwrap());
    // Clocks 7 s apart, starts within the offsets' loopback uncertainty.
    assert!(
        *hi - *lo < Duration::from_millis(20),
        "starts {:?} apart",
        *hi - *lo
    );
    for a in &out.agents {
        let c = a.clock.unwrap();
        let expected = match a.name.as_deref() {
            Some("fast") => 4 * SEC,
            Some("slow") => -3 * SEC,
            _ => 0,
        };
        assert!((c.offset_ns - expected).abs() < 20_000_000, "{a:?}");
        assert_eq!(c.samples, 8);
        assert_eq!(a.results.as_ref().unwrap()["job"]["bench"], "latency");
    }
}

#[test]
fn missing_far_off_and_dead_agents_are_named() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    // Four expected; one never comes, so the barrier waits its deadline.
    let coord = run_coordinator(l, config(4, Duration::from_millis(500)));
    let (tx, rx) = mpsc::channel();
    let ok = agent(addr.clone(), "ok", 0, Behaviour::Run, tx.clone());
    let off = agent(addr.clone(), "off", 5 * SEC, Behaviour::Run, tx.clone());
    let dies = agent(addr.clone(), "dies", 0, Behaviour::Die, tx.clone());
    assert!(matches!(ok.join().unwrap(), Ok(Joined::Ran { .. })));
    match off.join().unwrap() {
        Ok(Joined::Aborted(why)) => {
            let ms: f64 = why
                .strip_prefix("clock off by ")
                .and_then(|r| r.strip_suffix(" ms, over the 500.000 ms limit"))
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{why}"));
            assert!((ms - 5000.0).abs() < 20.0, "{why}");
        }
        other => panic!("far-off agent: {other:?}"),
    }
    assert!(dies.join().is_err(), "the dying agent panics");
    let out = coord.join().unwrap();
    let by_name = |n: &str| {
        out.agents
            .iter()
            .find(|a| a.name.as_deref() == Some(n))
            .unwrap()
            .clone()
    };
    assert_eq!(by_name("ok").status, Status::Ran);
    assert_eq!(by_name("off").status, Status::Rejected);
    let dead = by_name("dies");
    assert_eq!(dead.status, Status::Failed);
    assert_eq!(
        dead.reason.as_deref(),
        Some("connection closed before its results (agent died?)")
    );
    let missing: Vec<_> = out
        .agents
        .iter()
        .filter(|a| a.status == Status::Missing)
        .collect();
    assert_eq!(missing.len(), 1);
    assert_eq!(
        missing[0].reason.as_deref(),
        Some("did not register before the start barrier's deadline")
    );
    // Only admitted agents were given a start.
    let started: Vec<&str> = rx.try_iter().map(|(n, _)| n).collect();
    assert_eq!(started.len(), 2);
    assert!(!started.contains(&"off"));
}

#[test]
fn an_agent_without_a_coordinator_says_so() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    drop(l);
    let mut cfg = join_cfg(&addr, "lonely");
    cfg.connect_timeout = Duration::from_millis(300);
    let err = join(&cfg, &SystemClock, &mut |_: &iiop_agents::Order<
        serde_json::Value,
    >| {
        Ok(serde_json::Value::Null)
    })
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("cannot reach the coordinator {addr} within 300ms")),
        "{err}"
    );
}
