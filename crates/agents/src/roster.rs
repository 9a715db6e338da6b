//! The coordinator's bookkeeping, with no I/O and no clock of its own (the
//! time comes in as `now`, Unix ns on the coordinator's clock): which agents
//! registered before the start barrier's deadline, which were refused and
//! why (wrong version, a taken id, a clock too far off), which were
//! admitted, and how each one ended. [`Roster::report`] names every agent
//! id `0..agents`, so an agent that never came is listed, never dropped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::clock::Estimate;

/// What the run accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Agents expected (ids `0..agents`).
    pub agents: u32,
    /// The barrier's deadline: registrations after it are refused, and
    /// the run starts with whoever registered by then.
    pub register_by: i64,
    /// Largest |clock offset| accepted, ns (and largest uncertainty,
    /// half the round trip of the exchange kept).
    pub max_offset_ns: i64,
    /// The coordinator's iiopbench version: agents must run the same one
    /// (the bench arguments are parsed on both sides).
    pub version: String,
}

/// How one agent ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Ran and sent its results (which may themselves say the bench
    /// stopped early).
    Ran,
    /// Admitted, but failed to run the command, or died (connection lost,
    /// no results by the deadline).
    Failed,
    /// Never registered before the deadline.
    Missing,
    /// Registered but not admitted (clock too far off, no usable clock
    /// exchange, version mismatch).
    Rejected,
}

/// One agent in the final report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentReport {
    pub id: u32,
    /// Its host name, when it registered.
    pub name: Option<String>,
    pub status: Status,
    /// Why, for every status but `ran`.
    pub reason: Option<String>,
    pub clock: Option<Estimate>,
    /// The results file it sent.
    pub results: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq)]
enum State {
    Registered,
    Admitted,
    Rejected(String),
    Ran(serde_json::Value),
    Failed(String),
}

#[derive(Debug, Clone, PartialEq)]
struct Entry {
    name: String,
    clock: Option<Estimate>,
    state: State,
}

/// Agents of one run, by id.
#[derive(Debug, Clone)]
pub struct Roster {
    limits: Limits,
    entries: BTreeMap<u32, Entry>,
    /// Connections refused before they had an id: `(name, reason)`.
    refused: Vec<(String, String)>,
}

impl Roster {
    pub fn new(limits: Limits) -> Roster {
        Roster {
            limits,
            entries: BTreeMap::new(),
            refused: Vec::new(),
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// An agent said hello at `now`: its id, or why it is refused.
    pub fn register(
        &mut self,
        now: i64,
        id: Option<u32>,
        name: &str,
        version: &str,
    ) -> Result<u32, String> {
        let refuse = |me: &mut Self, why: String| {
            me.refused.push((name.to_string(), why.clone()));
            Err(why)
        };
        if now > self.limits.register_by {
            return refuse(self, "registered after the start barrier's deadline".into());
        }
        if version != self.limits.version {
            return refuse(
                self,
                format!(
                    "agent runs iiopbench {version}, the coordinator {}",
                    self.limits.version
                ),
            );
        }
        let id = match id {
            Some(i) if i >= self.limits.agents => {
                return refuse(
                    self,
                    format!("agent id {i} is not below `agents` {}", self.limits.agents),
                )
            }
            Some(i) if self.entries.contains_key(&i) => {
                return refuse(self, format!("agent id {i} is already taken"))
            }
            Some(i) => i,
            None => match (0..self.limits.agents).find(|i| !self.entries.contains_key(i)) {
                Some(i) => i,
                None => {
                    return refuse(
                        self,
                        format!("all {} agent ids are taken", self.limits.agents),
                    )
                }
            },
        };
        self.entries.insert(
            id,
            Entry {
                name: name.to_string(),
                clock: None,
                state: State::Registered,
            },
        );
        Ok(id)
    }

    /// The clock exchanges with agent `id` gave `est`: Ok when it may run,
    /// else why not (the agent is then rejected).
    pub fn clock(&mut self, id: u32, est: Option<Estimate>) -> Result<(), String> {
        let max = self.limits.max_offset_ns;
        let e = self.entries.get_mut(&id).expect("registered agent");
        e.clock = est;
        let why = match est {
            None => Some("no usable clock exchange".to_string()),
            Some(c) if c.offset_ns.unsigned_abs() > max as u64 => Some(format!(
                "clock off by {:.3} ms, over the {:.3} ms limit",
                c.offset_ns as f64 / 1e6,
                max as f64 / 1e6
            )),
            Some(c) if c.rtt_ns / 2 > max => Some(format!(
                "clock offset uncertain by ±{:.3} ms (round trip {:.3} ms), over the {:.3} ms limit",
                c.rtt_ns as f64 / 2e6,
                c.rtt_ns as f64 / 1e6,
                max as f64 / 1e6
            )),
            Some(_) => None,
        };
        match why {
            Some(w) => {
                e.state = State::Rejected(w.clone());
                Err(w)
            }
            None => Ok(()),
        }
    }

    /// Whether every expected agent registered with a usable clock (the
    /// barrier need not wait for its deadline).
    pub fn full(&self) -> bool {
        self.entries
            .values()
            .filter(|e| e.state == State::Registered && e.clock.is_some())
            .count() as u32
            == self.limits.agents
    }

    /// Close the barrier: every registered agent with a usable clock is
    /// admitted; returns their ids.
    pub fn admit(&mut self) -> Vec<u32> {
        let mut ids = Vec::new();
        for (id, e) in self.entries.iter_mut() {
            if e.state == State::Registered && e.clock.is_some() {
                e.state = State::Admitted;
                ids.push(*id);
            }
        }
        ids
    }

    /// Agent `id` was lost before the barrier closed (its connection
    /// dropped): it counts as failed.
    pub fn lost(&mut self, id: u32, reason: &str) {
        if let Some(e) = self.entries.get_mut(&id) {
            if matches!(e.state, State::Registered | State::Admitted) {
                e.state = State::Failed(reason.to_string());
            }
        }
    }

    /// How admitted agent `id` ended: its results, or why there are none.
    pub fn finished(&mut self, id: u32, outcome: Result<serde_json::Value, String>) {
        if let Some(e) = self.entries.get_mut(&id) {
            if e.state == State::Admitted {
                e.state = match outcome {
                    Ok(v) => State::Ran(v),
                    Err(w) => State::Failed(w),
                };
            }
        }
    }

    /// Connections refused before they got an id: `(name, reason)`.
    pub fn refused(&self) -> &[(String, String)] {
        &self.refused
    }

    /// One report per agent id `0..agents`, in id order.
    pub fn report(&self) -> Vec<AgentReport> {
        (0..self.limits.agents)
            .map(|id| match self.entries.get(&id) {
                None => AgentReport {
                    id,
                    name: None,
                    status: Status::Missing,
                    reason: Some("did not register before the start barrier's deadline".into()),
                    clock: None,
                    results: None,
                },
                Some(e) => {
                    let (status, reason, results) = match &e.state {
                        State::Ran(v) => (Status::Ran, None, Some(v.clone())),
                        State::Rejected(w) => (Status::Rejected, Some(w.clone()), None),
                        State::Failed(w) => (Status::Failed, Some(w.clone()), None),
                        State::Registered => (
                            Status::Failed,
                            Some("registered but was not admitted".into()),
                            None,
                        ),
                        State::Admitted => (
                            Status::Failed,
                            Some("admitted but never reported".into()),
                            None,
                        ),
                    };
                    AgentReport {
                        id,
                        name: Some(e.name.clone()),
                        status,
                        reason,
                        clock: e.clock,
                        results,
                    }
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn roster(n: u32) -> Roster {
        Roster::new(Limits {
            agents: n,
            register_by: 10 * S,
            max_offset_ns: S / 2,
            version: "1.0".into(),
        })
    }

    fn clock(offset_ns: i64, rtt_ns: i64) -> Option<Estimate> {
        Some(Estimate {
            offset_ns,
            rtt_ns,
            samples: 8,
        })
    }

    #[test]
    fn ids_are_given_or_assigned_and_never_shared() {
        let mut r = roster(3);
        assert_eq!(r.register(0, Some(2), "c", "1.0"), Ok(2));
        assert_eq!(r.register(0, None, "a", "1.0"), Ok(0));
        assert_eq!(r.register(0, None, "b", "1.0"), Ok(1));
        assert_eq!(
            r.register(0, None, "d", "1.0"),
            Err("all 3 agent ids are taken".into())
        );
        assert_eq!(
            r.register(0, Some(1), "e", "1.0"),
            Err("agent id 1 is already taken".into())
        );
        assert_eq!(
            r.register(0, Some(7), "f", "1.0"),
            Err("agent id 7 is not below `agents` 3".into())
        );
        assert_eq!(r.refused().len(), 3);
    }

    #[test]
    fn late_or_foreign_agents_are_refused() {
        let mut r = roster(2);
        assert_eq!(
            r.register(10 * S + 1, None, "late", "1.0"),
            Err("registered after the start barrier's deadline".into())
        );
        assert_eq!(
            r.register(0, None, "old", "0.9"),
            Err("agent runs iiopbench 0.9, the coordinator 1.0".into())
        );
    }

    #[test]
    fn the_barrier_is_full_only_with_every_clock_measured() {
        let mut r = roster(2);
        let a = r.register(0, None, "a", "1.0").unwrap();
        let b = r.register(0, None, "b", "1.0").unwrap();
        assert!(!r.full());
        r.clock(a, clock(1000, 200)).unwrap();
        assert!(!r.full());
        r.clock(b, clock(-1000, 200)).unwrap();
        assert!(r.full());
        assert_eq!(r.admit(), vec![0, 1]);
    }

    #[test]
    fn far_off_or_unknown_clocks_are_rejected_and_reported() {
        let mut r = roster(4);
        for n in ["a", "b", "c"] {
            r.register(0, None, n, "1.0").unwrap();
        }
        assert_eq!(
            r.clock(0, clock(3 * S, 100)),
            Err("clock off by 3000.000 ms, over the 500.000 ms limit".into())
        );
        assert_eq!(
            r.clock(1, clock(0, 2 * S)),
            Err(
                "clock offset uncertain by ±1000.000 ms (round trip 2000.000 ms), over the 500.000 ms limit"
                    .into()
            )
        );
        assert_eq!(r.clock(2, None), Err("no usable clock exchange".into()));
        assert!(r.admit().is_empty());
        let rep = r.report();
        assert_eq!(rep.len(), 4);
        assert!(rep[..3].iter().all(|a| a.status == Status::Rejected));
        assert_eq!(rep[3].status, Status::Missing);
        assert_eq!(rep[3].name, None);
    }

    #[test]
    fn every_admitted_agent_ends_ran_or_failed() {
        let mut r = roster(3);
        for n in ["a", "b", "c"] {
            let id = r.register(0, None, n, "1.0").unwrap();
            r.clock(id, clock(0, 100)).unwrap();
        }
        assert_eq!(r.admit(), vec![0, 1, 2]);
        r.finished(0, Ok(serde_json::json!({"kind": "latency"})));
        r.finished(1, Err("connection closed before results".into()));
        let rep = r.report();
        assert_eq!(
            rep.iter().map(|a| a.status).collect::<Vec<_>>(),
            [Status::Ran, Status::Failed, Status::Failed]
        );
        assert_eq!(
            rep[2].reason.as_deref(),
            Some("admitted but never reported")
        );
        assert_eq!(rep[0].results.as_ref().unwrap()["kind"], "latency");
        // A later outcome does not overwrite the first.
        r.finished(0, Err("late".into()));
        assert_eq!(r.report()[0].status, Status::Ran);
    }
}
