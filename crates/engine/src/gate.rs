//! The start gate of an agent run (issue 22, `iiopbench agents`): when an
//! agent runs a bench, every agent's k-th measured case must start at the
//! same instant, `first + k·period`, whatever each took to connect and
//! warm up. The agent makes a [`Gate`] and passes it in the bench's
//! options (`TargetOpts::gate`); the bench loops call [`case_start`] right
//! before they start measuring a case, which without a gate returns at
//! once. A gate also says that the target is shared with other agents, so
//! that benches skip resetting and reading the server's process-wide
//! counters, which every agent moves at once.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One agent's start gate: case k starts at `first + k·period`. Clones
/// share the gate (the bench's copy counts the cases, the agent's copy
/// reads how late they started).
#[derive(Debug, Clone)]
pub struct Gate(Arc<Mutex<State>>);

#[derive(Debug)]
struct State {
    first: Instant,
    period: Duration,
    next: u32,
    /// Per case, how late it started (ms): warm-up overran its slot.
    late_ms: Vec<f64>,
}

impl Gate {
    /// A gate whose case k starts at `first + k·period`.
    pub fn new(first: Instant, period: Duration) -> Gate {
        Gate(Arc::new(Mutex::new(State {
            first,
            period,
            next: 0,
            late_ms: Vec::new(),
        })))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How late each case passed so far started (ms, in case order).
    pub fn late_ms(&self) -> Vec<f64> {
        self.state().late_ms.clone()
    }

    /// Wait for the next case's slot (at once when late; Ctrl-C ends the
    /// wait) and record how late it started.
    pub async fn case_start(&self) {
        let slot = {
            let mut g = self.state();
            let slot = g.first + g.period * g.next;
            g.next += 1;
            slot
        };
        while Instant::now() < slot && !crate::interrupt::requested() {
            let left = slot - Instant::now();
            tokio::time::sleep(left.min(Duration::from_millis(50))).await;
        }
        let late = Instant::now().saturating_duration_since(slot);
        self.state().late_ms.push(late.as_secs_f64() * 1e3);
    }
}

/// Wait for this case's slot when there is a gate; at once without one.
pub async fn case_start(gate: Option<&Gate>) {
    if let Some(g) = gate {
        g.case_start().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_wait_for_their_slots_and_late_ones_are_counted() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let t0 = Instant::now();
            let (first, period) = (t0 + Duration::from_millis(30), Duration::from_millis(40));
            let gate = Gate::new(first, period);
            let ours = gate.clone();
            case_start(Some(&gate)).await;
            let started0 = Instant::now();
            assert!(started0 >= first, "started before its slot");
            // Overrun the second slot (t0 + 70 ms) by at least 80 ms.
            std::thread::sleep(Duration::from_millis(150).saturating_sub(t0.elapsed()));
            case_start(Some(&gate)).await;
            let started = [started0, Instant::now()];
            // The clone the agent kept sees both cases, each as late as
            // it was: at most as late as this thread saw it start (which
            // a busy machine can make a lot later than its slot), and
            // the second by at least its overrun.
            let late = ours.late_ms();
            assert_eq!(late.len(), 2);
            let seen = |k: usize| (started[k] - (first + period * k as u32)).as_secs_f64() * 1e3;
            assert!(late[0] <= seen(0), "{late:?}, seen {}", seen(0));
            assert!(
                late[1] >= 80.0 && late[1] <= seen(1),
                "{late:?}, seen {}",
                seen(1)
            );
            // No gate: ready at the first poll (no wait), nothing counted.
            use std::future::Future;
            let mut no_gate = std::pin::pin!(case_start(None));
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            assert!(no_gate.as_mut().poll(&mut cx).is_ready());
            assert_eq!(ours.late_ms().len(), 2);
        });
    }
}
