//! Clock offsets between coordinator and agent, measured NTP-style: the
//! coordinator sends a ping at `t1` (its clock), the agent stamps arrival
//! `t2` and departure `t3` (its clock), the coordinator stamps the answer's
//! arrival `t4`. Then offset θ = ((t2 − t1) + (t3 − t4)) / 2 (agent minus
//! coordinator) and round trip δ = (t4 − t1) − (t3 − t2); θ is off by at
//! most δ/2, so of several exchanges the one with the smallest δ is kept.
//! Pure: times come in as numbers (Unix nanoseconds), and [`Clock`] is how
//! the I/O layers read them, so tests inject skewed clocks.

use serde::{Deserialize, Serialize};

/// Where the I/O layers read the time (Unix nanoseconds).
pub trait Clock: Send + Sync {
    fn now_ns(&self) -> i64;
}

/// The system's real-time clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ns(&self) -> i64 {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        d.as_nanos().min(i64::MAX as u128) as i64
    }
}

/// The system clock shifted by a fixed amount (tests: an agent whose clock
/// is off).
#[derive(Debug, Clone, Copy)]
pub struct SkewedClock(pub i64);

impl Clock for SkewedClock {
    fn now_ns(&self) -> i64 {
        SystemClock.now_ns().saturating_add(self.0)
    }
}

/// One ping exchange's four timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub t1: i64,
    pub t2: i64,
    pub t3: i64,
    pub t4: i64,
}

impl Sample {
    /// Agent clock minus coordinator clock.
    pub fn offset_ns(&self) -> i64 {
        (((self.t2 as i128 - self.t1 as i128) + (self.t3 as i128 - self.t4 as i128)) / 2) as i64
    }

    /// Network round trip, the agent's turnaround excluded.
    pub fn rtt_ns(&self) -> i64 {
        (self.t4 - self.t1) - (self.t3 - self.t2)
    }
}

/// The offset kept for one agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Estimate {
    /// Agent clock minus coordinator clock, ns.
    pub offset_ns: i64,
    /// Round trip of the exchange it came from, ns (the offset is exact
    /// within ± half of it).
    pub rtt_ns: i64,
    /// Exchanges made.
    pub samples: usize,
}

/// The min-round-trip estimate over `samples`; exchanges whose stamps are
/// impossible (the answer arriving before the ping left, or the agent
/// answering before it received) are ignored. `None` when none is usable.
pub fn estimate(samples: &[Sample]) -> Option<Estimate> {
    samples
        .iter()
        .filter(|s| s.t4 >= s.t1 && s.t3 >= s.t2 && s.rtt_ns() >= 0)
        .min_by_key(|s| s.rtt_ns())
        .map(|s| Estimate {
            offset_ns: s.offset_ns(),
            rtt_ns: s.rtt_ns(),
            samples: samples.len(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An exchange with an agent `skew` ns ahead, `out` and `back` ns of
    /// one-way delay and `turn` ns of turnaround, starting at `t1`.
    fn exchange(t1: i64, skew: i64, out: i64, back: i64, turn: i64) -> Sample {
        let t2 = t1 + out + skew;
        let t3 = t2 + turn;
        Sample {
            t1,
            t2,
            t3,
            t4: t3 - skew + back,
        }
    }

    #[test]
    fn symmetric_paths_give_the_exact_offset() {
        let s = exchange(1_000, 5_000_000, 300, 300, 50);
        assert_eq!(s.offset_ns(), 5_000_000);
        assert_eq!(s.rtt_ns(), 600);
    }

    #[test]
    fn the_min_rtt_exchange_wins() {
        let samples = [
            // A queued answer: 2 ms back, offset off by ~1 ms.
            exchange(0, -7_000, 100, 2_000_000, 10),
            exchange(10_000_000, -7_000, 100, 120, 10),
            exchange(20_000_000, -7_000, 900_000, 100, 10),
        ];
        let e = estimate(&samples).unwrap();
        assert_eq!(e.rtt_ns, 220);
        assert_eq!(e.offset_ns, -7_010);
        assert_eq!(e.samples, 3);
        // The error is within half the round trip.
        assert!((e.offset_ns - -7_000).abs() <= e.rtt_ns / 2);
    }

    #[test]
    fn impossible_stamps_are_ignored() {
        let bad = Sample {
            t1: 100,
            t2: 50,
            t3: 40,
            t4: 90,
        };
        assert_eq!(estimate(&[bad]), None);
        assert_eq!(estimate(&[]), None);
    }
}
