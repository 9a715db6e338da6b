//! Statistics for the workload experiments: a seeded random source (so a
//! run's think and service times repeat exactly), draws from the fixed and
//! exponential distributions, and 95 % confidence intervals of a mean from
//! batch means (Student's t), the rule seed 001 ran its experiments by.

use serde::Serialize;

/// SplitMix64: tiny, fast, and fully determined by its seed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`; `stream` separates the generators of
    /// several clients that share one `--seed`.
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut r = Rng(seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        r.next_u64();
        r
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1]: never 0, so `ln` is finite.
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// A draw with mean `mean` from `dist`.
    pub fn draw(&mut self, mean: f64, dist: Dist) -> f64 {
        match dist {
            Dist::Fixed => mean,
            Dist::Exp => -mean * self.unit().ln(),
        }
    }
}

/// Fixed at the mean, or exponential with that mean.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dist {
    #[default]
    Fixed,
    Exp,
}

impl Dist {
    /// `fixed` / `exp`.
    pub fn name(self) -> &'static str {
        match self {
            Dist::Fixed => "fixed",
            Dist::Exp => "exp",
        }
    }
}

/// Two-sided 97.5 % quantile of Student's t with `df` degrees of freedom.
pub fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => T[df - 1],
        // Cornish-Fisher style tail: within 0.001 of the table beyond 30.
        _ => 1.959_964 + 2.372 / df as f64,
    }
}

/// A mean with its 95 % confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Ci {
    pub mean: f64,
    /// Half-width of the interval (same unit as the mean).
    pub half_width: f64,
    /// Half-width relative to the mean (0.05 = ±5 %).
    pub relative: f64,
    /// Number of batch means behind it.
    pub batches: usize,
}

/// The 95 % CI of the mean of `xs` (batch means); `None` below 2 values.
pub fn ci95(xs: &[f64]) -> Option<Ci> {
    let n = xs.len();
    if n < 2 {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half_width = t975(n - 1) * (var / n as f64).sqrt();
    Some(Ci {
        mean,
        half_width,
        relative: if mean != 0.0 {
            half_width / mean.abs()
        } else {
            f64::INFINITY
        },
        batches: n,
    })
}

/// The 95 % CI of a ratio of sums `Σa / Σb` over batches `(a_i, b_i)`
/// (e.g. total response time over calls): the ratio estimator's
/// variance, `Σ (a_i − m·b_i)² / (k (k−1) b̄²)`, so the interval is
/// centred on the overall mean, not on the mean of batch means (which
/// over-weights batches with few calls). `None` below 2 batches or when
/// `Σb` is 0.
pub fn ratio_ci95(pairs: &[(f64, f64)]) -> Option<Ci> {
    let k = pairs.len();
    let (sa, sb) = pairs
        .iter()
        .fold((0.0, 0.0), |(x, y), (a, b)| (x + a, y + b));
    if k < 2 || sb <= 0.0 {
        return None;
    }
    let mean = sa / sb;
    let bbar = sb / k as f64;
    let ss: f64 = pairs.iter().map(|(a, b)| (a - mean * b).powi(2)).sum();
    let var = ss / ((k * (k - 1)) as f64 * bbar * bbar);
    let half_width = t975(k - 1) * var.sqrt();
    Some(Ci {
        mean,
        half_width,
        relative: if mean != 0.0 {
            half_width / mean.abs()
        } else {
            f64::INFINITY
        },
        batches: k,
    })
}

/// The median of `xs` (the mean of the middle two for an even count);
/// `None` when empty.
pub fn median(xs: &[f64]) -> Option<f64> {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// The median over rounds of `a[k] / b[k]`, for a figure and its baseline
/// measured in slices side by side: rounds without both, or with an empty
/// baseline, are left out; `None` when none is left.
pub fn median_ratio(a: &[f64], b: &[f64]) -> Option<f64> {
    let q: Vec<f64> = a
        .iter()
        .zip(b)
        .filter(|(_, y)| **y > 0.0)
        .map(|(x, y)| x / y)
        .collect();
    median(&q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ratio_of_slices_is_the_median_of_the_rounds() {
        // Round 3 met a stall on the baseline side: it does not move the
        // median.
        let giop = [30.0, 32.0, 31.0, 29.0, 30.0];
        let raw = [25.0, 25.0, 5.0, 25.0, 24.0];
        assert_eq!(median_ratio(&giop, &raw), Some(1.25));
        // Even counts: the mean of the middle two; rounds without both
        // sides, or with an empty baseline, are left out.
        assert_eq!(median_ratio(&[10.0, 12.0], &[10.0, 10.0]), Some(1.1));
        assert_eq!(median_ratio(&[10.0, 12.0], &[0.0, 10.0]), Some(1.2));
        assert_eq!(median_ratio(&[10.0], &[]), None);
    }

    #[test]
    fn seeded_streams_repeat_and_differ() {
        let a: Vec<u64> = (0..4).map(|_| Rng::new(7, 1).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let mut x = Rng::new(7, 1);
        let mut y = Rng::new(7, 2);
        assert_ne!(x.next_u64(), y.next_u64());
    }

    #[test]
    fn exponential_mean_is_close() {
        let mut r = Rng::new(42, 0);
        let n = 200_000;
        let m = (0..n).map(|_| r.draw(10.0, Dist::Exp)).sum::<f64>() / n as f64;
        assert!((m - 10.0).abs() < 0.1, "{m}");
        assert_eq!(r.draw(3.5, Dist::Fixed), 3.5);
    }

    #[test]
    fn ci_of_known_values() {
        let c = ci95(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!(c.mean, 3.0);
        // s = sqrt(2.5), t(4) = 2.776: 2.776 * sqrt(2.5/5)
        assert!((c.half_width - 2.776 * 0.5f64.sqrt()).abs() < 1e-12);
        assert_eq!(c.batches, 5);
        assert!(ci95(&[1.0]).is_none());
        assert_eq!(t975(1), 12.706);
        assert!((t975(1000) - 1.962).abs() < 0.001);
    }

    #[test]
    fn ratio_ci_is_centred_on_the_pooled_mean() {
        // Equal batch sizes: same as the plain CI of the batch means.
        let pairs = [(10.0, 10.0), (20.0, 10.0), (30.0, 10.0)];
        let r = ratio_ci95(&pairs).unwrap();
        let p = ci95(&[1.0, 2.0, 3.0]).unwrap();
        assert!((r.mean - 2.0).abs() < 1e-12);
        assert!((r.half_width - p.half_width).abs() < 1e-12);
        // Unequal sizes: the pooled mean, not the mean of means.
        let r = ratio_ci95(&[(10.0, 10.0), (30.0, 10.0), (5.0, 1.0)]).unwrap();
        assert!((r.mean - 45.0 / 21.0).abs() < 1e-12);
        assert!(ratio_ci95(&[(1.0, 1.0)]).is_none());
        assert!(ratio_ci95(&[(0.0, 0.0), (0.0, 0.0)]).is_none());
    }
}
