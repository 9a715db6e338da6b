//! The start gate of an agent run (issue 22, `iiopbench agents`): when an
//! agent runs a bench command, every agent's k-th measured case must start
//! at the same instant, `first + k·period`, whatever each took to connect
//! and warm up. The bench loops call [`case_start`] right before they
//! start measuring a case; outside an agent run the gate is not armed and
//! it returns at once. Also says whether the target is shared with other
//! agents ([`armed`]), so that commands skip resetting and reading the
//! server's process-wide counters, which every agent moves at once.

use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug)]
struct Gate {
    first: Instant,
    period: Duration,
    next: u32,
    /// Per case, how late it started (ms): warm-up overran its slot.
    late_ms: Vec<f64>,
}

static GATE: Mutex<Option<Gate>> = Mutex::new(None);

/// Unit tests that arm the gate, or run loops that pass through it, hold
/// this: the gate is one per process and the tests of this crate share one.
#[cfg(test)]
pub(crate) static TEST_SERIAL: Mutex<()> = Mutex::new(());

fn gate() -> std::sync::MutexGuard<'static, Option<Gate>> {
    GATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Arm the gate: case k starts at `first + k·period`.
pub fn arm(first: Instant, period: Duration) {
    *gate() = Some(Gate {
        first,
        period,
        next: 0,
        late_ms: Vec::new(),
    });
}

/// Disarm it; returns how late each case started (ms, in case order).
pub fn disarm() -> Vec<f64> {
    gate().take().map(|g| g.late_ms).unwrap_or_default()
}

/// Whether an agent run is going on (the target is shared).
pub fn armed() -> bool {
    gate().is_some()
}

/// Wait for this case's slot (at once when not armed, or when late; Ctrl-C
/// ends the wait).
pub async fn case_start() {
    let slot = {
        let mut g = gate();
        let Some(g) = g.as_mut() else { return };
        let slot = g.first + g.period * g.next;
        g.next += 1;
        slot
    };
    while Instant::now() < slot && !crate::interrupt::requested() {
        let left = slot - Instant::now();
        tokio::time::sleep(left.min(Duration::from_millis(50))).await;
    }
    let late = Instant::now().saturating_duration_since(slot);
    if let Some(g) = gate().as_mut() {
        g.late_ms.push(late.as_secs_f64() * 1e3);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_wait_for_their_slots_and_late_ones_are_counted() {
        let _serial = TEST_SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let t0 = Instant::now();
            arm(t0 + Duration::from_millis(30), Duration::from_millis(40));
            assert!(armed());
            case_start().await;
            assert!(t0.elapsed() >= Duration::from_millis(30));
            // Overrun the second slot (t0 + 70 ms) by at least 80 ms.
            std::thread::sleep(Duration::from_millis(150).saturating_sub(t0.elapsed()));
            case_start().await;
            let late = disarm();
            assert_eq!(late.len(), 2);
            // (Generous for a loaded machine: a sleep may overshoot.)
            assert!(late[0] < 50.0, "{late:?}");
            assert!(late[1] >= 80.0, "{late:?}");
            assert!(!armed());
            // Not armed: no wait, nothing counted.
            let t = Instant::now();
            case_start().await;
            assert!(t.elapsed() < Duration::from_millis(5));
            assert!(disarm().is_empty());
        });
    }
}
