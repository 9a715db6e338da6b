//! An agent's I/O: connect to the coordinator (retrying while it is not up
//! yet, as pods start in any order), say hello, answer clock probes, wait
//! for the start order, run it through the caller's runner, send back the
//! results. What running a bench command means is the caller's business
//! (the CLI runs it in-process); this module only moves messages.

use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::clock::Clock;
use crate::conn::{Conn, ConnError};
use crate::wire::{FromAgent, ToAgent};

/// How an agent joins.
#[derive(Debug, Clone)]
pub struct JoinConfig {
    /// The coordinator, `HOST:PORT`.
    pub coordinator: String,
    /// A fixed id (a Kubernetes completion index), else assigned.
    pub id: Option<u32>,
    /// This host's name, for people.
    pub name: String,
    /// This program's version.
    pub version: String,
    /// How long to keep trying to connect.
    pub connect_timeout: Duration,
    /// How long to wait for the start order once registered.
    pub start_timeout: Duration,
}

/// What to run, as the agent sees it: `J` is the job's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order<J> {
    pub id: u32,
    pub agents: u32,
    /// The job to run.
    pub job: J,
    /// The first case's start on this agent's clock (Unix ns).
    pub start_local_ns: i64,
    /// Between the starts of consecutive cases.
    pub case_period: Duration,
    /// This agent's clock minus the coordinator's, as measured.
    pub offset_ns: i64,
}

impl<J> Order<J> {
    /// The start as an `Instant` (now plus what is left on `clock`; an
    /// instant in the past when the start has passed).
    pub fn start_instant(&self, clock: &dyn Clock) -> Instant {
        let left = self.start_local_ns - clock.now_ns();
        let now = Instant::now();
        if left >= 0 {
            now + Duration::from_nanos(left as u64)
        } else {
            now.checked_sub(Duration::from_nanos(left.unsigned_abs()))
                .unwrap_or(now)
        }
    }
}

/// How joining ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Joined {
    /// Ran as agent `id` and delivered its results (or its failure).
    Ran { id: u32 },
    /// The coordinator did not admit it, and why.
    Aborted(String),
}

/// Why an agent could not take part: the coordinator's fault or the
/// network's, said in one line.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("cannot reach the coordinator {addr} within {timeout:?}: {last}")]
    Connect {
        addr: String,
        timeout: Duration,
        last: String,
    },
    #[error("coordinator {addr}: {step}: {source}")]
    Conn {
        addr: String,
        step: &'static str,
        source: ConnError,
    },
    #[error("coordinator {addr} sent {got} while the agent waited for {expected}")]
    Unexpected {
        addr: String,
        expected: &'static str,
        got: String,
    },
}

/// Join the run of `cfg.coordinator`; `run` executes the order (its job
/// read as a `J`) and returns the results file as JSON, or why the job
/// could not run at all.
pub fn join<J: serde::de::DeserializeOwned + std::fmt::Debug>(
    cfg: &JoinConfig,
    clock: &dyn Clock,
    run: &mut dyn FnMut(&Order<J>) -> Result<serde_json::Value, String>,
) -> Result<Joined, AgentError> {
    let addr = cfg.coordinator.clone();
    let mut c = connect(cfg)?;
    let conn_err = |step, source| AgentError::Conn {
        addr: addr.clone(),
        step,
        source,
    };
    c.send(&FromAgent::Hello {
        id: cfg.id,
        name: cfg.name.clone(),
        version: cfg.version.clone(),
    })
    .map_err(|e| conn_err("sending hello", e.into()))?;
    let registered = Instant::now() + Duration::from_secs(30);
    let id = match c
        .recv::<ToAgent<J>>(registered)
        .map_err(|e| conn_err("waiting for welcome", e))?
    {
        ToAgent::Welcome { id } => id,
        ToAgent::Abort { reason } => return Ok(Joined::Aborted(reason)),
        other => {
            return Err(AgentError::Unexpected {
                addr,
                expected: "welcome",
                got: format!("{other:?}"),
            })
        }
    };
    let deadline = Instant::now() + cfg.start_timeout;
    let order = loop {
        match c
            .recv::<ToAgent<J>>(deadline)
            .map_err(|e| conn_err("waiting for the start order", e))?
        {
            ToAgent::Ping { t1 } => {
                let t2 = clock.now_ns();
                c.send(&FromAgent::Pong {
                    t1,
                    t2,
                    t3: clock.now_ns(),
                })
                .map_err(|e| conn_err("answering a clock probe", e.into()))?;
            }
            ToAgent::Start {
                id: sid,
                agents,
                job,
                start_at,
                offset_ns,
                case_period_ns,
            } => {
                break Order {
                    id: sid,
                    agents,
                    job,
                    start_local_ns: start_at + offset_ns,
                    case_period: Duration::from_nanos(case_period_ns),
                    offset_ns,
                }
            }
            ToAgent::Abort { reason } => return Ok(Joined::Aborted(reason)),
            other => {
                return Err(AgentError::Unexpected {
                    addr,
                    expected: "a clock probe or the start order",
                    got: format!("{other:?}"),
                })
            }
        }
    };
    let msg = match run(&order) {
        Ok(results) => FromAgent::Results { results },
        Err(reason) => FromAgent::Failed { reason },
    };
    c.send(&msg)
        .map_err(|e| conn_err("sending results", e.into()))?;
    Ok(Joined::Ran { id })
}

fn connect(cfg: &JoinConfig) -> Result<Conn, AgentError> {
    let until = Instant::now() + cfg.connect_timeout;
    let mut last = String::from("no attempt");
    loop {
        // Resolve each time: a Kubernetes Service name may appear late.
        match cfg.coordinator.to_socket_addrs() {
            Ok(addrs) => {
                for a in addrs {
                    match TcpStream::connect_timeout(&a, Duration::from_secs(2)) {
                        Ok(s) => {
                            return Conn::new(s).map_err(|e| AgentError::Connect {
                                addr: cfg.coordinator.clone(),
                                timeout: cfg.connect_timeout,
                                last: e.to_string(),
                            })
                        }
                        Err(e) => last = format!("{a}: {e}"),
                    }
                }
            }
            Err(e) => last = format!("resolving: {e}"),
        }
        if Instant::now() >= until {
            return Err(AgentError::Connect {
                addr: cfg.coordinator.clone(),
                timeout: cfg.connect_timeout,
                last,
            });
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
