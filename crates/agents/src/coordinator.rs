//! The coordinator's I/O around the pure [`Roster`]: accept agents until all
//! have registered or the barrier's deadline passes, measure each one's
//! clock offset as it registers, send every admitted agent the same job
//! and start instant, then collect each agent's results (one
//! thread per agent, all bounded by one deadline). Agents that never come,
//! die, or whose clock is too far off are reported, never waited for
//! beyond the deadlines and never left out silently.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use crate::clock::{self, Clock, Sample};
use crate::conn::{Conn, ConnError};
use crate::roster::{AgentReport, Limits, Roster};
use crate::wire::{FromAgent, ToAgent};

/// How a run is coordinated.
#[derive(Debug, Clone)]
pub struct Config {
    /// Agents expected.
    pub agents: u32,
    /// How long the start barrier waits for agents to register.
    pub register_timeout: Duration,
    /// Largest clock offset (and offset uncertainty) accepted.
    pub max_offset: Duration,
    /// Clock exchanges per agent (the min-round-trip one is kept).
    pub pings: usize,
    /// From the barrier closing to the first measured case: time for every
    /// agent to connect to the target and warm up.
    pub lead: Duration,
    /// The k-th case of every agent starts at `start + k·case_period`.
    pub case_period: Duration,
    /// How long after the start agents may take to send their results.
    pub result_timeout: Duration,
    /// Each registration message must arrive within this.
    pub io_timeout: Duration,
    /// This program's version; agents must match it.
    pub version: String,
}

/// A finished run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The first case's start on the coordinator's clock (Unix ns); `None`
    /// when no agent was admitted.
    pub start_at: Option<i64>,
    /// One per agent id.
    pub agents: Vec<AgentReport>,
    /// Connections refused before they had an id: `(name, reason)`.
    pub refused: Vec<(String, String)>,
}

/// Run the coordinator on `listener` for `job` (sent to every agent in
/// its serde form); `log` hears one line per event (registrations,
/// refusals, the start).
pub fn coordinate<J: serde::Serialize>(
    listener: &TcpListener,
    cfg: &Config,
    job: &J,
    clock: &dyn Clock,
    log: &dyn Fn(&str),
) -> std::io::Result<Outcome> {
    let register_by = clock.now_ns() + cfg.register_timeout.as_nanos() as i64;
    let mut roster = Roster::new(Limits {
        agents: cfg.agents,
        register_by,
        max_offset_ns: cfg.max_offset.as_nanos() as i64,
        version: cfg.version.clone(),
    });
    let mut conns: BTreeMap<u32, Conn> = BTreeMap::new();
    listener.set_nonblocking(true)?;
    let barrier_deadline = Instant::now() + cfg.register_timeout;
    while !roster.full() && Instant::now() < barrier_deadline {
        match listener.accept() {
            Ok((stream, _)) => {
                if let Some((id, c)) = register(stream, cfg, &mut roster, clock, log) {
                    conns.insert(id, c);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let admitted = roster.admit();
    if admitted.is_empty() {
        log("no agent admitted: the run does not start");
        for c in conns.values_mut() {
            let _ = c.send(&ToAgent::<()>::Abort {
                reason: "no agent was admitted to the run".into(),
            });
        }
        return Ok(finish(roster, None));
    }
    let start_at = clock.now_ns() + cfg.lead.as_nanos() as i64;
    log(&format!(
        "barrier closed: {} of {} agents admitted; start in {:?}",
        admitted.len(),
        cfg.agents,
        cfg.lead
    ));
    let report = roster.report();
    let mut running = Vec::new();
    for id in admitted {
        let mut c = conns.remove(&id).expect("admitted agents are connected");
        let offset_ns = report[id as usize].clock.map_or(0, |e| e.offset_ns);
        let sent = c.send(&ToAgent::Start {
            id,
            agents: cfg.agents,
            job,
            start_at,
            offset_ns,
            case_period_ns: cfg.case_period.as_nanos() as u64,
        });
        match sent {
            Ok(()) => running.push((id, c)),
            Err(e) => roster.finished(id, Err(format!("start order not delivered: {e}"))),
        }
    }
    // Agents registered beyond those admitted (rejected ones) were told at
    // once; nothing else is connected now.
    let wait = cfg.lead + cfg.result_timeout;
    let deadline = Instant::now() + wait;
    let handles: Vec<_> = running
        .into_iter()
        .map(|(id, mut c)| {
            std::thread::spawn(move || {
                let r = match c.recv::<FromAgent>(deadline) {
                    Ok(FromAgent::Results { results }) => Ok(results),
                    Ok(FromAgent::Failed { reason }) => {
                        Err(format!("could not run the job: {reason}"))
                    }
                    Ok(other) => Err(format!("sent {other:?} instead of its results")),
                    Err(ConnError::Closed) => {
                        Err("connection closed before its results (agent died?)".into())
                    }
                    Err(ConnError::TimedOut) => {
                        Err(format!("no results within {wait:?} of the barrier closing"))
                    }
                    Err(e) => Err(format!("results unreadable: {e}")),
                };
                (id, r)
            })
        })
        .collect();
    for h in handles {
        if let Ok((id, r)) = h.join() {
            if let Err(w) = &r {
                log(&format!("agent {id}: {w}"));
            }
            roster.finished(id, r);
        }
    }
    Ok(finish(roster, Some(start_at)))
}

fn finish(roster: Roster, start_at: Option<i64>) -> Outcome {
    Outcome {
        start_at,
        agents: roster.report(),
        refused: roster.refused().to_vec(),
    }
}

/// Hello, id, clock exchanges: the agent's id and connection when it may
/// run; otherwise it was told why not (when it could still hear it).
fn register(
    stream: std::net::TcpStream,
    cfg: &Config,
    roster: &mut Roster,
    clock: &dyn Clock,
    log: &dyn Fn(&str),
) -> Option<(u32, Conn)> {
    let mut c = match Conn::new(stream) {
        Ok(c) => c,
        Err(e) => {
            log(&format!("agent connection unusable: {e}"));
            return None;
        }
    };
    let peer = c.peer();
    let step = || Instant::now() + cfg.io_timeout;
    let (id, name, version) = match c.recv::<FromAgent>(step()) {
        Ok(FromAgent::Hello { id, name, version }) => (id, name, version),
        Ok(other) => {
            log(&format!("{peer}: expected hello, got {other:?}"));
            return None;
        }
        Err(e) => {
            log(&format!("{peer}: no hello: {e}"));
            return None;
        }
    };
    let id = match roster.register(clock.now_ns(), id, &name, &version) {
        Ok(id) => id,
        Err(why) => {
            log(&format!("agent {name} ({peer}) refused: {why}"));
            let _ = c.send(&ToAgent::<()>::Abort { reason: why });
            return None;
        }
    };
    let mut exchange = || -> Result<Vec<Sample>, String> {
        c.send(&ToAgent::<()>::Welcome { id })
            .map_err(|e| e.to_string())?;
        let mut samples = Vec::with_capacity(cfg.pings);
        for _ in 0..cfg.pings {
            let t1 = clock.now_ns();
            c.send(&ToAgent::<()>::Ping { t1 })
                .map_err(|e| e.to_string())?;
            match c.recv::<FromAgent>(step()) {
                Ok(FromAgent::Pong { t1: echo, t2, t3 }) if echo == t1 => samples.push(Sample {
                    t1,
                    t2,
                    t3,
                    t4: clock.now_ns(),
                }),
                Ok(other) => return Err(format!("answered a clock probe with {other:?}")),
                Err(e) => return Err(format!("clock exchange failed: {e}")),
            }
        }
        Ok(samples)
    };
    let samples = match exchange() {
        Ok(s) => s,
        Err(why) => {
            log(&format!("agent {id} ({name}): {why}"));
            roster.lost(id, &why);
            return None;
        }
    };
    let est = clock::estimate(&samples);
    match roster.clock(id, est) {
        Ok(()) => {
            let e = est.expect("accepted clocks are measured");
            log(&format!(
                "agent {id} ({name}, {peer}) registered: clock offset {:+.3} ms ± {:.3} ms",
                e.offset_ns as f64 / 1e6,
                e.rtt_ns as f64 / 2e6
            ));
            Some((id, c))
        }
        Err(why) => {
            log(&format!("agent {id} ({name}) rejected: {why}"));
            let _ = c.send(&ToAgent::<()>::Abort { reason: why });
            None
        }
    }
}
