//! Deadlines without a clock: the time a request may wait, and when that
//! time runs out, computed from instants the driver passes in.

use std::time::{Duration, Instant};

/// How long something may take, and once known, until when.
///
/// A driver that reads the clock when it starts the wait passes that
/// instant ([`Timer::started`]). A driver that avoids reading the clock on
/// its fast path starts the timer unarmed ([`Timer::unarmed`]) and arms it
/// the first time it has waited: with an instant no later than the wait's
/// start, so the deadline is never early ([`Timer::arm`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timer {
    /// The timeout it came from (reported in the error).
    pub after: Duration,
    /// When it runs out; `None` until armed.
    at: Option<Instant>,
}

impl Timer {
    /// A timer of `after` that started at `now`.
    pub fn started(after: Duration, now: Instant) -> Timer {
        Timer {
            after,
            at: now.checked_add(after),
        }
    }

    /// A timer of `after` whose start is not known yet.
    pub fn unarmed(after: Duration) -> Timer {
        Timer { after, at: None }
    }

    /// Start an unarmed timer at `began_by` (no later than the real start
    /// of the wait); an armed one is left as it is.
    pub fn arm(&mut self, began_by: Instant) {
        if self.at.is_none() {
            self.at = began_by.checked_add(self.after);
        }
    }

    /// When it runs out, if armed.
    pub fn deadline(&self) -> Option<Instant> {
        self.at
    }

    /// Whether it has run out at `now` (an unarmed timer never has).
    pub fn expired(&self, now: Instant) -> bool {
        self.at.is_some_and(|at| at <= now)
    }
}

/// How often a wait that may time out looks at its deadline: a sixteenth
/// of the timeout, within 1 ms … `max`.
pub fn check_interval(timeout: Duration, max: Duration) -> Duration {
    (timeout / 16).clamp(Duration::from_millis(1), max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unarmed_timer_never_expires_until_armed_and_arms_once() {
        let t0 = crate::conn::epoch();
        let ms = Duration::from_millis;
        let mut t = Timer::unarmed(ms(50));
        assert!(!t.expired(t0 + ms(1000)));
        t.arm(t0 + ms(10));
        assert_eq!(t.deadline(), Some(t0 + ms(60)));
        t.arm(t0 + ms(500));
        assert_eq!(t.deadline(), Some(t0 + ms(60)), "armed once");
        assert!(!t.expired(t0 + ms(59)));
        assert!(t.expired(t0 + ms(60)));
        let s = Timer::started(ms(5), t0);
        assert!(s.expired(t0 + ms(5)) && !s.expired(t0 + ms(4)));
    }

    #[test]
    fn check_interval_is_a_sixteenth_within_bounds() {
        let ms = Duration::from_millis;
        assert_eq!(check_interval(ms(1600), ms(250)), ms(100));
        assert_eq!(check_interval(ms(5), ms(250)), ms(1));
        assert_eq!(check_interval(ms(60_000), ms(250)), ms(250));
    }
}
