//! Parsing of the quantities users type: byte sizes (`64KiB`, `1MB`),
//! size sweeps (`1KiB..128KiB` doubling, `1,16,256` lists), durations
//! (`500ms`, `2s`, `1m`) and percentages (`5%`). docs/cli.md names the
//! unit of every option. The serde forms of these quantities in a job
//! ([`duration`], [`size`] …) write what a user would type and read both
//! that and plain numbers.

use std::time::Duration;

/// A parse failure, naming what was typed and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot parse {input:?} as {what}: {reason}")]
pub struct ParseError {
    input: String,
    what: &'static str,
    reason: &'static str,
}

fn err(input: &str, what: &'static str, reason: &'static str) -> ParseError {
    ParseError {
        input: input.to_string(),
        what,
        reason,
    }
}

/// Parse a byte size: a whole number with an optional unit
/// B, K/KB (10^3), KiB (2^10), M/MB, MiB, G/GB, GiB (case-insensitive).
pub fn parse_size(s: &str) -> Result<u64, ParseError> {
    const WHAT: &str = "a byte size";
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(err(s, WHAT, "expected a number, e.g. 64KiB"));
    }
    let n: u64 = num.parse().map_err(|_| err(s, WHAT, "number too large"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        _ => {
            return Err(err(
                s,
                WHAT,
                "unknown unit (use B, KiB, MiB, GiB, KB, MB, GB)",
            ))
        }
    };
    n.checked_mul(mult).ok_or_else(|| err(s, WHAT, "too large"))
}

/// Parse a size sweep: `A..B` (A, 2A, 4A … up to and including B),
/// `A..B*F` / `A..B+S` (multiply by F / add S), a comma list, or a single
/// size. The result is non-empty and sorted as given.
pub fn parse_sizes(s: &str) -> Result<Vec<u64>, ParseError> {
    const WHAT: &str = "a size list or range";
    let mut out = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        if let Some((a, rest)) = part.split_once("..") {
            let lo = parse_size(a)?;
            let (hi, step) = if let Some((b, f)) = rest.split_once('*') {
                let f: u64 = f
                    .trim()
                    .parse()
                    .map_err(|_| err(s, WHAT, "bad factor after *"))?;
                if f < 2 {
                    return Err(err(s, WHAT, "factor must be at least 2"));
                }
                (parse_size(b)?, Step::Mul(f))
            } else if let Some((b, d)) = rest.split_once('+') {
                let d = parse_size(d)?;
                if d == 0 {
                    return Err(err(s, WHAT, "step must be positive"));
                }
                (parse_size(b)?, Step::Add(d))
            } else {
                (parse_size(rest)?, Step::Mul(2))
            };
            if lo > hi {
                return Err(err(s, WHAT, "range start exceeds its end"));
            }
            if lo == 0 && matches!(step, Step::Mul(_)) {
                out.push(0);
                let mut v = 1;
                while v <= hi {
                    out.push(v);
                    v = step.next(v);
                }
                continue;
            }
            let mut v = lo;
            while v <= hi {
                out.push(v);
                if out.len() > 10_000 {
                    return Err(err(s, WHAT, "more than 10000 points"));
                }
                v = step.next(v);
            }
        } else {
            out.push(parse_size(part)?);
        }
    }
    if out.is_empty() {
        return Err(err(s, WHAT, "empty"));
    }
    Ok(out)
}

#[derive(Clone, Copy)]
enum Step {
    Mul(u64),
    Add(u64),
}

impl Step {
    fn next(self, v: u64) -> u64 {
        match self {
            Step::Mul(f) => v.saturating_mul(f),
            Step::Add(d) => v.saturating_add(d),
        }
    }
}

/// Parse a duration: a number (decimals allowed) with unit ns, us, ms, s,
/// m or h; a bare number is seconds.
pub fn parse_duration(s: &str) -> Result<Duration, ParseError> {
    const WHAT: &str = "a duration";
    let t = s.trim();
    if t.starts_with('-') {
        return Err(err(s, WHAT, "the duration is negative; give 0 or more"));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| err(s, WHAT, "expected a number, e.g. 500ms or 2s"))?;
    let secs = match unit.trim() {
        "" | "s" => n,
        "ns" => n / 1e9,
        "us" | "µs" => n / 1e6,
        "ms" => n / 1e3,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(err(s, WHAT, "unknown unit (use ns, us, ms, s, m, h)")),
    };
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(err(s, WHAT, "out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parse a percentage written with its sign (`5%`, `2.5 %`); returns the
/// number of percent (5.0). A bare number is refused: `0.05` and `5` would
/// both be plausible.
pub fn parse_percent(s: &str) -> Result<f64, ParseError> {
    const WHAT: &str = "a percentage";
    let Some(num) = s.trim().strip_suffix('%') else {
        return Err(err(s, WHAT, "expected a number and `%`, e.g. 5%"));
    };
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| err(s, WHAT, "expected a number and `%`, e.g. 5%"))?;
    if !n.is_finite() || n < 0.0 {
        return Err(err(s, WHAT, "out of range"));
    }
    Ok(n)
}

/// Format a byte count the way users type it back (64KiB, 1MiB, 1000B).
pub fn format_size(n: u64) -> String {
    for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if n >= 1 << shift && n.is_multiple_of(1 << shift) {
            return format!("{}{unit}", n >> shift);
        }
    }
    format!("{n}B")
}

/// Format a duration the way users type it back: the largest of s, ms,
/// us that holds it exactly (`200ms`, `60s`, `0s`), else ns.
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    for (unit, per) in [("s", 1_000_000_000u128), ("ms", 1_000_000), ("us", 1_000)] {
        if ns.is_multiple_of(per) {
            return format!("{}{unit}", ns / per);
        }
    }
    format!("{ns}ns")
}

/// A number, or a quantity written as users type it.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Written {
    Whole(u64),
    Real(f64),
    Text(String),
}

/// The serde form of a [`Duration`]: written as `200ms`; read from that
/// or from a number of seconds.
pub mod duration {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_duration(*d))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        read(super::Written::deserialize(d)?).map_err(serde::de::Error::custom)
    }

    pub(super) fn read(w: super::Written) -> Result<Duration, String> {
        match w {
            super::Written::Whole(n) => Ok(Duration::from_secs(n)),
            super::Written::Real(x) if x.is_finite() && (0.0..=1e9).contains(&x) => {
                Ok(Duration::from_secs_f64(x))
            }
            super::Written::Real(x) => Err(format!("{x} seconds is out of range")),
            super::Written::Text(t) => super::parse_duration(&t).map_err(|e| e.to_string()),
        }
    }
}

/// The serde form of an optional [`Duration`] (see [`duration`]).
pub mod opt_duration {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::duration::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<super::Written>::deserialize(d)?
            .map(super::duration::read)
            .transpose()
            .map_err(serde::de::Error::custom)
    }
}

/// The serde form of a list of [`Duration`]s (see [`duration`]).
pub mod durations {
    use std::time::Duration;

    use serde::ser::SerializeSeq;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[Duration], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(v.len()))?;
        for d in v {
            seq.serialize_element(&super::format_duration(*d))?;
        }
        seq.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Duration>, D::Error> {
        Vec::<super::Written>::deserialize(d)?
            .into_iter()
            .map(super::duration::read)
            .collect::<Result<_, _>>()
            .map_err(serde::de::Error::custom)
    }
}

/// The serde form of a byte count: written as a number; read from a
/// number or a size as users type it (`64KiB`).
pub mod size {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(n: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(*n)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        read(super::Written::deserialize(d)?).map_err(serde::de::Error::custom)
    }

    pub(super) fn read(w: super::Written) -> Result<u64, String> {
        match w {
            super::Written::Whole(n) => Ok(n),
            super::Written::Real(x) => Err(format!("{x}: a byte count is a whole number")),
            super::Written::Text(t) => super::parse_size(&t).map_err(|e| e.to_string()),
        }
    }
}

/// The serde form of an optional byte count (see [`size`]).
pub mod opt_size {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(n: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match n {
            Some(n) => s.serialize_u64(*n),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        Option::<super::Written>::deserialize(d)?
            .map(super::size::read)
            .transpose()
            .map_err(serde::de::Error::custom)
    }
}

/// A list of byte counts read from a list of sizes (numbers or
/// `64KiB`), or from one sweep or size as users type it
/// (`1KiB..128KiB`, `1,1KiB`).
pub(crate) fn read_sizes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Form {
        List(Vec<Written>),
        One(Written),
    }
    let out = match <Form as serde::Deserialize>::deserialize(d)? {
        Form::List(v) => v
            .into_iter()
            .map(size::read)
            .collect::<Result<Vec<u64>, String>>(),
        Form::One(Written::Text(t)) => parse_sizes(&t).map_err(|e| e.to_string()),
        Form::One(w) => size::read(w).map(|n| vec![n]),
    }
    .map_err(serde::de::Error::custom)?;
    if out.is_empty() {
        return Err(serde::de::Error::custom("an empty list of sizes"));
    }
    Ok(out)
}

/// A float with a sensible number of significant digits for a table.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// Microseconds, switching to ms / s for large values.
pub fn micros(us: f64) -> String {
    if us >= 1e6 {
        format!("{} s", num(us / 1e6))
    } else if us >= 1e3 {
        format!("{} ms", num(us / 1e3))
    } else {
        format!("{} µs", num(us))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64KiB").unwrap(), 65536);
        assert_eq!(parse_size("64kib").unwrap(), 65536);
        assert_eq!(parse_size("1MB").unwrap(), 1_000_000);
        assert_eq!(parse_size("17").unwrap(), 17);
        assert!(parse_size("KiB").is_err());
        assert!(parse_size("3 parsecs").is_err());
        assert!(parse_size("99999999999999999999GiB").is_err());
    }

    #[test]
    fn sweeps() {
        assert_eq!(
            parse_sizes("1KiB..8KiB").unwrap(),
            vec![1024, 2048, 4096, 8192]
        );
        assert_eq!(parse_sizes("1..100*10").unwrap(), vec![1, 10, 100]);
        assert_eq!(parse_sizes("0..4").unwrap(), vec![0, 1, 2, 4]);
        assert_eq!(parse_sizes("10..30+10").unwrap(), vec![10, 20, 30]);
        assert_eq!(parse_sizes("1, 4,16").unwrap(), vec![1, 4, 16]);
        assert!(parse_sizes("8..1").is_err());
        assert!(parse_sizes("1..2*1").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        assert!(parse_duration("fast").is_err());
        assert_eq!(
            parse_duration("-5s").unwrap_err().to_string(),
            "cannot parse \"-5s\" as a duration: the duration is negative; give 0 or more"
        );
    }

    #[test]
    fn percentages() {
        assert_eq!(parse_percent("5%").unwrap(), 5.0);
        assert_eq!(parse_percent("2.5 %").unwrap(), 2.5);
        assert!(parse_percent("5").is_err());
        assert!(parse_percent("0.05").is_err());
        assert!(parse_percent("-1%").is_err());
        assert!(parse_percent("x%").is_err());
    }

    #[test]
    fn numbers() {
        assert_eq!(num(12345.67), "12346");
        assert_eq!(num(123.456), "123.5");
        assert_eq!(num(12.345), "12.35");
        assert_eq!(num(1.23456), "1.235");
        assert_eq!(micros(52.0), "52.00 µs");
        assert_eq!(micros(1500.0), "1.500 ms");
        assert_eq!(micros(2_500_000.0), "2.500 s");
    }

    #[test]
    fn durations_are_written_as_typed_and_read_back() {
        assert_eq!(format_duration(Duration::from_millis(200)), "200ms");
        assert_eq!(format_duration(Duration::from_secs(60)), "60s");
        assert_eq!(format_duration(Duration::ZERO), "0s");
        assert_eq!(format_duration(Duration::from_micros(1500)), "1500us");
        assert_eq!(format_duration(Duration::from_nanos(7)), "7ns");
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct T {
            #[serde(with = "duration")]
            d: Duration,
            #[serde(with = "size")]
            n: u64,
        }
        let t = T {
            d: Duration::from_millis(1500),
            n: 65536,
        };
        let j = serde_json::to_string(&t).unwrap();
        assert_eq!(j, r#"{"d":"1500ms","n":65536}"#);
        assert_eq!(serde_json::from_str::<T>(&j).unwrap(), t);
        let typed: T = serde_json::from_str(r#"{"d": 1.5, "n": "64KiB"}"#).unwrap();
        assert_eq!(typed, t);
        let e = serde_json::from_str::<T>(r#"{"d": "fast", "n": 1}"#).unwrap_err();
        assert!(e.to_string().contains("\"fast\""), "{e}");
    }

    #[test]
    fn formats() {
        assert_eq!(format_size(65536), "64KiB");
        assert_eq!(format_size(1 << 20), "1MiB");
        assert_eq!(format_size(1000), "1000B");
    }
}
