//! `work(service_us, dist, kind)`: the service time a client asks for,
//! fixed or drawn from an exponential distribution, spent sleeping or
//! burning CPU.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// bench.idl `ServiceDist`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dist {
    Fixed,
    Exponential,
}

/// bench.idl `ServiceKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sleep,
    Spin,
}

impl Dist {
    /// From the enum's wire index.
    pub fn from_index(i: u32) -> Option<Dist> {
        [Dist::Fixed, Dist::Exponential].get(i as usize).copied()
    }
}

impl Kind {
    /// From the enum's wire index.
    pub fn from_index(i: u32) -> Option<Kind> {
        [Kind::Sleep, Kind::Spin].get(i as usize).copied()
    }
}

thread_local! {
    static RNG: RefCell<SmallRng> = RefCell::new(SmallRng::seed_from_u64(
        0x1110_b3c4 ^ std::process::id() as u64
    ));
}

/// Largest service time honoured (a hostile client must not park a
/// server thread for hours): 60 s.
pub const MAX_SERVICE: Duration = Duration::from_secs(60);

/// The service time to spend for a request (clamped to [`MAX_SERVICE`];
/// negative or NaN means zero).
pub fn plan(service_us: f64, dist: Dist) -> Duration {
    if service_us.is_nan() || service_us <= 0.0 {
        return Duration::ZERO;
    }
    let us = match dist {
        Dist::Fixed => service_us,
        Dist::Exponential => {
            let u: f64 = RNG.with(|r| r.borrow_mut().gen_range(f64::MIN_POSITIVE..1.0));
            -service_us * u.ln()
        }
    };
    Duration::from_secs_f64((us / 1e6).min(MAX_SERVICE.as_secs_f64()))
}

/// Burn CPU for `d`.
pub fn spin(d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans() {
        assert_eq!(plan(1500.0, Dist::Fixed), Duration::from_micros(1500));
        assert_eq!(plan(-5.0, Dist::Fixed), Duration::ZERO);
        assert_eq!(plan(f64::NAN, Dist::Exponential), Duration::ZERO);
        assert_eq!(plan(1e12, Dist::Fixed), MAX_SERVICE);
        let n = 20_000;
        let mean: f64 = (0..n)
            .map(|_| plan(100.0, Dist::Exponential).as_secs_f64() * 1e6)
            .sum::<f64>()
            / n as f64;
        assert!((mean - 100.0).abs() < 5.0, "exponential mean {mean}");
        assert_eq!(Dist::from_index(1), Some(Dist::Exponential));
        assert_eq!(Kind::from_index(2), None);
    }

    #[test]
    fn spin_takes_its_time() {
        let t = Instant::now();
        spin(Duration::from_millis(5));
        assert!(t.elapsed() >= Duration::from_millis(5));
    }
}
