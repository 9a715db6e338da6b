//! Latency histograms: HDR histograms of nanoseconds, their summary in
//! microseconds, and their lossless text form (HdrHistogram V2 compressed,
//! base64) so results from several runs or machines merge exactly.

use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest trackable latency: one hour, in nanoseconds.
const MAX_NS: u64 = 3_600 * 1_000_000_000;

/// A latency histogram recording nanoseconds with 3 significant digits
/// (so 0.1 % relative resolution, far below a microsecond at the low end).
#[derive(Debug, Clone)]
pub struct Latency {
    h: Histogram<u64>,
}

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

impl Latency {
    /// An empty histogram.
    pub fn new() -> Self {
        Latency {
            h: Histogram::new_with_bounds(1, MAX_NS, 3).expect("static bounds are valid"),
        }
    }

    /// Record one latency in nanoseconds (clamped into the trackable range).
    #[inline]
    pub fn record_ns(&mut self, ns: u64) {
        self.h.saturating_record(ns.clamp(1, MAX_NS));
    }

    /// Number of values recorded.
    pub fn len(&self) -> u64 {
        self.h.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.h.is_empty()
    }

    /// Add every value of `other` (lossless).
    pub fn merge(&mut self, other: &Latency) {
        self.h.add(&other.h).expect("same bounds");
    }

    /// The underlying histogram.
    pub fn inner(&self) -> &Histogram<u64> {
        &self.h
    }

    /// Summary in microseconds.
    pub fn summary(&self) -> LatencySummary {
        let us = |ns: u64| ns as f64 / 1e3;
        let q = |p: f64| us(self.h.value_at_quantile(p));
        if self.h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            min: us(self.h.min()),
            mean: self.h.mean() / 1e3,
            stdev: self.h.stdev() / 1e3,
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            p999: q(0.999),
            p9999: q(0.9999),
            max: us(self.h.max()),
        }
    }

    /// HdrHistogram V2 compressed encoding, base64: the `histogram` field
    /// of the results schema.
    pub fn to_base64(&self) -> String {
        let mut buf = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.h, &mut buf)
            .expect("serializing into memory cannot fail");
        base64::engine::general_purpose::STANDARD.encode(buf)
    }

    /// Inverse of [`to_base64`](Self::to_base64).
    pub fn from_base64(s: &str) -> crate::error::Result<Latency> {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(s.trim())
            .map_err(|e| crate::error::fail!(Local, "histogram is not base64: {e}"))?;
        let h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut &raw[..])
            .map_err(|e| crate::error::fail!(Local, "histogram undecodable: {e:?}"))?;
        let mut out = Latency::new();
        out.h
            .add(&h)
            .map_err(|e| crate::error::fail!(Local, "histogram out of range: {e:?}"))?;
        Ok(out)
    }

    /// The percentile distribution (value in µs at each percentile), the
    /// data behind HDR "percentile distribution" plots.
    pub fn percentile_curve(&self) -> Vec<(f64, f64)> {
        self.h
            .iter_quantiles(5)
            .map(|v| {
                (
                    v.quantile_iterated_to() * 100.0,
                    v.value_iterated_to() as f64 / 1e3,
                )
            })
            .collect()
    }
}

/// Latency summary in microseconds. Field names are part of the stable
/// results schema (`latency_us`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub min: f64,
    pub mean: f64,
    pub stdev: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub p9999: f64,
    pub max: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_values() {
        let mut l = Latency::new();
        for us in 1..=1000u64 {
            l.record_ns(us * 1000);
        }
        let s = l.summary();
        assert_eq!(l.len(), 1000);
        assert!((s.min - 1.0).abs() < 0.01, "{s:?}");
        assert!((s.p50 - 500.0).abs() < 1.0, "{s:?}");
        assert!((s.p99 - 990.0).abs() < 1.0, "{s:?}");
        assert!((s.max - 1000.0).abs() < 1.0, "{s:?}");
        assert!((s.mean - 500.5).abs() < 0.5, "{s:?}");
    }

    #[test]
    fn base64_round_trip_and_merge_are_lossless() {
        let mut a = Latency::new();
        let mut b = Latency::new();
        for i in 0..500u64 {
            a.record_ns(10_000 + i * 37);
            b.record_ns(2_000_000 + i * 101);
        }
        let a2 = Latency::from_base64(&a.to_base64()).unwrap();
        assert_eq!(a2.inner(), a.inner());
        let mut m = a2;
        m.merge(&Latency::from_base64(&b.to_base64()).unwrap());
        assert_eq!(m.len(), 1000);
        assert_eq!(m.inner().max(), b.inner().max());
        assert_eq!(m.inner().min(), a.inner().min());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(Latency::from_base64("not base64!").is_err());
        assert!(Latency::from_base64("AAAA").is_err());
    }
}
