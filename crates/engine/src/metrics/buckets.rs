//! The fixed latency buckets of the live metrics: one set of bounds for
//! every histogram exported, a lock-free histogram over them that the
//! measuring loops record into, and the same buckets filled from an HDR
//! histogram.
//!
//! The bounds run from 1 µs to 10 s, six to a decade (1, 1.5, 2, 3, 5 and
//! 7.5 times a power of ten): neighbours differ by 1.33x to 1.67x, so
//! `histogram_quantile` (which interpolates within a bucket) places a
//! percentile within that factor, while a scrape stays small (44 buckets
//! per series). A round trip on loopback takes microseconds, a call to a
//! loaded server up to seconds; anything above 10 s lands in `+Inf`.
//! The run's own percentiles (the results file) come from its HDR
//! histograms, exact to 0.1 %; these buckets are for watching a run.

use std::sync::atomic::{AtomicU64, Ordering};

/// The upper bounds of the buckets in nanoseconds, ascending; a value
/// `v` falls in the first bucket whose bound is at least `v` (`le`).
pub const BOUNDS_NS: [u64; 43] = bounds();

const fn bounds() -> [u64; 43] {
    // Tenths of the decade's first bound: 1, 1.5, 2, 3, 5, 7.5.
    const STEPS: [u64; 6] = [10, 15, 20, 30, 50, 75];
    let mut out = [0u64; 43];
    let mut decade = 1_000u64; // 1 µs in ns
    let mut i = 0;
    while i < 42 {
        out[i] = decade * STEPS[i % 6] / 10;
        i += 1;
        if i % 6 == 0 {
            decade *= 10;
        }
    }
    out[42] = decade; // 10 s
    out
}

/// The number of buckets, `+Inf` included.
pub const BUCKETS: usize = BOUNDS_NS.len() + 1;

/// The bucket `ns` falls in (the last one is `+Inf`).
#[inline]
pub fn bucket_of(ns: u64) -> usize {
    BOUNDS_NS.partition_point(|&b| b < ns)
}

/// A histogram over [`BOUNDS_NS`] that any thread records into without a
/// lock: one relaxed atomic add for the bucket and one for the sum.
#[derive(Debug)]
pub struct AtomicBuckets {
    counts: [AtomicU64; BUCKETS],
    sum_ns: AtomicU64,
}

impl Default for AtomicBuckets {
    fn default() -> Self {
        AtomicBuckets {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_ns: AtomicU64::new(0),
        }
    }
}

impl AtomicBuckets {
    /// Record one value of `ns` nanoseconds.
    #[inline]
    pub fn record(&self, ns: u64) {
        self.counts[bucket_of(ns)].fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// The counts now. Read while others record, the sum may lag or lead
    /// the counts by the values being recorded at that moment; the count
    /// is always the sum of the buckets read.
    pub fn snapshot(&self) -> Buckets {
        Buckets {
            counts: self
                .counts
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .collect(),
            sum_ns: self.sum_ns.load(Ordering::Relaxed),
        }
    }
}

/// Counts per bucket of [`BOUNDS_NS`] (not cumulative; the last is
/// `+Inf`), and the sum of the values in nanoseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buckets {
    pub counts: Vec<u64>,
    pub sum_ns: u64,
}

impl Default for Buckets {
    fn default() -> Self {
        Buckets {
            counts: vec![0; BUCKETS],
            sum_ns: 0,
        }
    }
}

impl Buckets {
    /// How many values in all.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The same buckets filled from an HDR histogram of nanoseconds. HDR
    /// keeps values to 3 significant digits, so a value within 0.1 % of a
    /// bound may land on either side of it; the sum is the histogram's
    /// mean times its count (exact to the same precision).
    pub fn from_hdr(h: &hdrhistogram::Histogram<u64>) -> Buckets {
        let mut b = Buckets::default();
        for v in h.iter_recorded() {
            let value = h.highest_equivalent(v.value_iterated_to());
            b.counts[bucket_of(value)] += v.count_at_value();
        }
        b.sum_ns = (h.mean() * h.len() as f64).round() as u64;
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bounds_are_six_a_decade_from_1us_to_10s() {
        assert_eq!(
            &BOUNDS_NS[..7],
            &[1_000, 1_500, 2_000, 3_000, 5_000, 7_500, 10_000]
        );
        assert_eq!(
            BOUNDS_NS[36..],
            [
                1_000_000_000,
                1_500_000_000,
                2_000_000_000,
                3_000_000_000,
                5_000_000_000,
                7_500_000_000,
                10_000_000_000
            ]
        );
        assert!(BOUNDS_NS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_value_falls_in_the_first_bucket_whose_bound_is_at_least_it() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(1_000), 0);
        assert_eq!(bucket_of(1_001), 1);
        assert_eq!(bucket_of(1_500), 1);
        assert_eq!(bucket_of(25_000), 9); // 20 µs < 25 µs <= 30 µs
        assert_eq!(BOUNDS_NS[9], 30_000);
        assert_eq!(bucket_of(10_000_000_000), 42);
        assert_eq!(bucket_of(10_000_000_001), 43);
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn recorded_values_are_counted_and_summed() {
        let a = AtomicBuckets::default();
        for ns in [500, 1_000, 1_200, 25_000, 20_000_000_000] {
            a.record(ns);
        }
        let s = a.snapshot();
        assert_eq!(s.count(), 5);
        assert_eq!(s.counts[0], 2);
        assert_eq!(s.counts[1], 1);
        assert_eq!(s.counts[9], 1);
        assert_eq!(s.counts[BUCKETS - 1], 1);
        assert_eq!(s.sum_ns, 500 + 1_000 + 1_200 + 25_000 + 20_000_000_000);
    }

    #[test]
    fn an_hdr_histogram_fills_the_same_buckets_away_from_the_bounds() {
        let a = AtomicBuckets::default();
        let mut h = crate::hist::Latency::new();
        // Values at least 1 % away from every bound: HDR's 0.1 % cannot
        // move them across one.
        for ns in [700u64, 1_230, 8_800, 26_000, 26_100, 410_000, 3_300_000_000] {
            a.record(ns);
            h.record_ns(ns);
        }
        let from_hdr = Buckets::from_hdr(h.inner());
        assert_eq!(from_hdr.counts, a.snapshot().counts);
        let exact = a.snapshot().sum_ns as f64;
        assert!((from_hdr.sum_ns as f64 - exact).abs() / exact < 1e-3);
    }
}
