//! What a lab is made of: named hosts, links between pairs of them, and the
//! impairment of each link direction. Pure data plus validation; nothing
//! here touches the system.

use std::time::Duration;

use serde::Serialize;

use crate::error::{LabError, Result};

/// T1 line rate in bit/s (seed 003's WAN link).
pub const T1_BPS: u64 = 1_544_000;

/// Largest number of hosts or links a lab accepts (addresses are /24 octets).
pub const MAX_HOSTS: usize = 200;
/// Largest number of links a lab accepts.
pub const MAX_LINKS: usize = 200;

/// Serializes a duration as fractional milliseconds (results files).
fn as_ms<S: serde::Serializer>(d: &Duration, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}

/// How one direction of a link is degraded.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Impairment {
    /// Added one-way delay.
    #[serde(rename = "delay_ms", serialize_with = "as_ms")]
    pub delay: Duration,
    /// Each packet's delay is `delay ± jitter` (uniform). The relay keeps
    /// packet order (a packet never leaves before the one ahead of it);
    /// netem reorders when jitter exceeds the packet spacing.
    #[serde(rename = "jitter_ms", serialize_with = "as_ms")]
    pub jitter: Duration,
    /// Probability that a packet is dropped, 0.0..=1.0.
    pub loss: f64,
    /// Bandwidth cap in bit/s, counted on Ethernet frames (what `tc tbf`
    /// counts): `None` leaves the link at veth speed.
    pub rate_bps: Option<u64>,
}

impl Impairment {
    /// No impairment at all.
    pub const NONE: Impairment = Impairment {
        delay: Duration::ZERO,
        jitter: Duration::ZERO,
        loss: 0.0,
        rate_bps: None,
    };

    /// Only a fixed one-way delay.
    pub fn delay(delay: Duration) -> Self {
        Impairment {
            delay,
            ..Self::NONE
        }
    }

    /// True when nothing is impaired.
    pub fn is_none(&self) -> bool {
        *self == Self::NONE
    }

    /// Checks ranges: loss in 0..=1, jitter not above delay, delay at most
    /// 10 s, rate at least 8 kbit/s.
    pub fn validate(&self, what: &str) -> Result<()> {
        if !(0.0..=1.0).contains(&self.loss) || self.loss.is_nan() {
            return Err(LabError::Spec(format!(
                "{what}: loss {} is not within 0..=1",
                self.loss
            )));
        }
        if self.jitter > self.delay {
            return Err(LabError::Spec(format!(
                "{what}: jitter {:?} exceeds delay {:?}",
                self.jitter, self.delay
            )));
        }
        if self.delay > Duration::from_secs(10) {
            return Err(LabError::Spec(format!(
                "{what}: delay {:?} exceeds 10 s",
                self.delay
            )));
        }
        if let Some(r) = self.rate_bps {
            if r < 8_000 {
                return Err(LabError::Spec(format!(
                    "{what}: rate {r} bit/s is below 8000"
                )));
            }
        }
        Ok(())
    }
}

fn parse_duration(v: &str) -> Option<Duration> {
    let (num, scale) = if let Some(n) = v.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = v.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1.0)
    } else {
        return None;
    };
    let x: f64 = num.parse().ok()?;
    (x.is_finite() && (0.0..=3600.0).contains(&x)).then(|| Duration::from_secs_f64(x * scale))
}

fn parse_rate(v: &str) -> Option<u64> {
    if v.eq_ignore_ascii_case("t1") {
        return Some(T1_BPS);
    }
    let lower = v.to_ascii_lowercase();
    let (num, scale) = [("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1.0)]
        .iter()
        .find_map(|(suffix, scale)| lower.strip_suffix(suffix).map(|n| (n.to_string(), *scale)))?;
    let x: f64 = num.parse().ok()?;
    let bps = x * scale;
    (bps.is_finite() && (1.0..=1e12).contains(&bps)).then_some(bps.round() as u64)
}

/// Parses the command-line form `delay=20ms,jitter=2ms,loss=2%,rate=10mbit`
/// (any subset, any order; `none` or an empty string for no impairment).
/// Durations take `us`, `ms` or `s`; loss `N%` or a fraction; rate `bit`,
/// `kbit`, `mbit`, `gbit` (decimal, as tc) or `t1`. The result is validated.
impl std::str::FromStr for Impairment {
    type Err = LabError;

    fn from_str(s: &str) -> Result<Self> {
        let mut imp = Impairment::NONE;
        let s = s.trim();
        if s.is_empty() || s == "none" {
            return Ok(imp);
        }
        for part in s.split(',') {
            let bad = || LabError::Spec(format!("impairment `{s}`: cannot parse `{part}`"));
            let (key, value) = part.trim().split_once('=').ok_or_else(bad)?;
            let value = value.trim();
            match key.trim() {
                "delay" => imp.delay = parse_duration(value).ok_or_else(bad)?,
                "jitter" => imp.jitter = parse_duration(value).ok_or_else(bad)?,
                "loss" => {
                    imp.loss = match value.strip_suffix('%') {
                        Some(p) => p.parse::<f64>().map_err(|_| bad())? / 100.0,
                        None => value.parse::<f64>().map_err(|_| bad())?,
                    }
                }
                "rate" => imp.rate_bps = Some(parse_rate(value).ok_or_else(bad)?),
                _ => return Err(bad()),
            }
        }
        imp.validate(&format!("impairment `{s}`"))?;
        Ok(imp)
    }
}

/// The form [`FromStr`](std::str::FromStr) reads; `none` when unimpaired.
impl std::fmt::Display for Impairment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        let ms = |d: Duration| format!("{}ms", d.as_secs_f64() * 1000.0);
        if !self.delay.is_zero() {
            parts.push(format!("delay={}", ms(self.delay)));
        }
        if !self.jitter.is_zero() {
            parts.push(format!("jitter={}", ms(self.jitter)));
        }
        if self.loss > 0.0 {
            // Rounded to 1e-6 %, so 0.08 prints as 8%, not 8.000000000000002%.
            parts.push(format!("loss={}%", (self.loss * 1e8).round() / 1e6));
        }
        if let Some(r) = self.rate_bps {
            parts.push(format!("rate={r}bit"));
        }
        if parts.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&parts.join(","))
        }
    }
}

impl Default for Impairment {
    fn default() -> Self {
        Self::NONE
    }
}

/// How delay (and jitter) is produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub enum DelayMechanism {
    /// netem when the kernel has it, the TUN relay otherwise.
    #[default]
    Auto,
    /// Always the TUN relay (works without sch_netem).
    Relay,
    /// Always `tc netem` (fails when the kernel lacks sch_netem).
    Netem,
}

/// A link between hosts `a` and `b`, with each direction impaired on its own.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkSpec {
    /// One end (a host name).
    pub a: String,
    /// The other end (a host name).
    pub b: String,
    /// Impairment of packets travelling from `a` to `b`.
    pub a_to_b: Impairment,
    /// Impairment of packets travelling from `b` to `a`.
    pub b_to_a: Impairment,
    /// MTU of every interface on the path (veth ends and TUN devices).
    pub mtu: u32,
}

impl LinkSpec {
    /// A link with the same impairment both ways and MTU 1500.
    pub fn symmetric(a: &str, b: &str, imp: Impairment) -> Self {
        LinkSpec {
            a: a.to_string(),
            b: b.to_string(),
            a_to_b: imp,
            b_to_a: imp,
            mtu: 1500,
        }
    }
}

/// A whole lab: the hosts and the links between them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabSpec {
    /// Host names: 1-24 characters of `[A-Za-z0-9_-]`, unique.
    pub hosts: Vec<String>,
    /// Links; at most one per pair of hosts. Only hosts joined by a link
    /// can reach each other (the middle namespaces do not route further).
    pub links: Vec<LinkSpec>,
    /// How delay is produced.
    pub delay_mechanism: DelayMechanism,
}

impl LabSpec {
    /// Two hosts joined by one symmetric link.
    pub fn pair(a: &str, b: &str, imp: Impairment) -> Self {
        LabSpec {
            hosts: vec![a.to_string(), b.to_string()],
            links: vec![LinkSpec::symmetric(a, b, imp)],
            delay_mechanism: DelayMechanism::Auto,
        }
    }

    /// Two hosts joined by one link impaired differently each way.
    pub fn pair_asymmetric(a: &str, b: &str, a_to_b: Impairment, b_to_a: Impairment) -> Self {
        let mut spec = Self::pair(a, b, a_to_b);
        spec.links[0].b_to_a = b_to_a;
        spec
    }

    /// Checks names, uniqueness, link ends, MTU and impairment ranges.
    pub fn validate(&self) -> Result<()> {
        if self.hosts.is_empty() || self.hosts.len() > MAX_HOSTS {
            return Err(LabError::Spec(format!(
                "{} hosts; need 1..={MAX_HOSTS}",
                self.hosts.len()
            )));
        }
        if self.links.len() > MAX_LINKS {
            return Err(LabError::Spec(format!(
                "{} links; at most {MAX_LINKS}",
                self.links.len()
            )));
        }
        for (i, h) in self.hosts.iter().enumerate() {
            let ok = !h.is_empty()
                && h.len() <= 24
                && h.bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-');
            if !ok {
                return Err(LabError::Spec(format!(
                    "host name `{h}`: need 1-24 characters of [A-Za-z0-9_-]"
                )));
            }
            if self.hosts[..i].contains(h) {
                return Err(LabError::Spec(format!("host `{h}` listed twice")));
            }
        }
        for (i, l) in self.links.iter().enumerate() {
            for end in [&l.a, &l.b] {
                if !self.hosts.contains(end) {
                    return Err(LabError::Spec(format!("link {i}: `{end}` is not a host")));
                }
            }
            if l.a == l.b {
                return Err(LabError::Spec(format!("link {i}: both ends are `{}`", l.a)));
            }
            let dup = self.links[..i]
                .iter()
                .any(|o| (o.a == l.a && o.b == l.b) || (o.a == l.b && o.b == l.a));
            if dup {
                return Err(LabError::Spec(format!(
                    "link {i}: `{}`-`{}` already linked",
                    l.a, l.b
                )));
            }
            if !(576..=9000).contains(&l.mtu) {
                return Err(LabError::Spec(format!(
                    "link {i}: mtu {} not within 576..=9000",
                    l.mtu
                )));
            }
            l.a_to_b.validate(&format!("link {i} {}->{}", l.a, l.b))?;
            l.b_to_a.validate(&format!("link {i} {}->{}", l.b, l.a))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impairment_serializes_in_milliseconds() {
        let imp = Impairment {
            delay: Duration::from_micros(20_500),
            jitter: Duration::from_millis(2),
            loss: 0.02,
            rate_bps: Some(T1_BPS),
        };
        assert_eq!(
            serde_json::to_string(&imp).unwrap(),
            r#"{"delay_ms":20.5,"jitter_ms":2.0,"loss":0.02,"rate_bps":1544000}"#
        );
    }

    #[test]
    fn impairment_parses_command_line_form() {
        let imp: Impairment = "delay=20ms, jitter=1.5ms,loss=2%,rate=10mbit"
            .parse()
            .unwrap();
        assert_eq!(
            imp,
            Impairment {
                delay: Duration::from_millis(20),
                jitter: Duration::from_micros(1500),
                loss: 0.02,
                rate_bps: Some(10_000_000),
            }
        );
        assert_eq!(
            imp.to_string(),
            "delay=20ms,jitter=1.5ms,loss=2%,rate=10000000bit"
        );
        assert_eq!(imp.to_string().parse::<Impairment>().unwrap(), imp);
        let t1: Impairment = "rate=T1,delay=0.3s,loss=0.08".parse().unwrap();
        assert_eq!(t1.rate_bps, Some(T1_BPS));
        assert_eq!(t1.delay, Duration::from_millis(300));
        assert_eq!(t1.loss, 0.08);
        assert_eq!(t1.to_string(), "delay=300ms,loss=8%,rate=1544000bit");
        assert_eq!("none".parse::<Impairment>().unwrap(), Impairment::NONE);
        assert_eq!(Impairment::NONE.to_string(), "none");
        assert_eq!(
            "delay=500us".parse::<Impairment>().unwrap().delay,
            Duration::from_micros(500)
        );
        assert_eq!(
            "rate=64kbit".parse::<Impairment>().unwrap().rate_bps,
            Some(64_000)
        );
    }

    #[test]
    fn impairment_parse_errors_name_the_part() {
        let e = |s: &str| s.parse::<Impairment>().unwrap_err().to_string();
        assert_eq!(
            e("delay=20"),
            "invalid lab spec: impairment `delay=20`: cannot parse `delay=20`"
        );
        assert_eq!(
            e("delay=20ms,speed=1"),
            "invalid lab spec: impairment `delay=20ms,speed=1`: cannot parse `speed=1`"
        );
        assert_eq!(
            e("loss=120%"),
            "invalid lab spec: impairment `loss=120%`: loss 1.2 is not within 0..=1"
        );
        assert_eq!(
            e("jitter=5ms"),
            "invalid lab spec: impairment `jitter=5ms`: jitter 5ms exceeds delay 0ns"
        );
        assert_eq!(
            e("rate=fast"),
            "invalid lab spec: impairment `rate=fast`: cannot parse `rate=fast`"
        );
    }

    #[test]
    fn pair_validates() {
        let s = LabSpec::pair(
            "client",
            "server",
            Impairment::delay(Duration::from_millis(20)),
        );
        s.validate().unwrap();
    }

    #[test]
    fn rejects_bad_specs() {
        let base = LabSpec::pair("a", "b", Impairment::NONE);
        let mut s = base.clone();
        s.hosts.push("a".into());
        assert_eq!(
            s.validate().unwrap_err().to_string(),
            "invalid lab spec: host `a` listed twice"
        );
        let mut s = base.clone();
        s.hosts[0] = "bad name".into();
        assert_eq!(
            s.validate().unwrap_err().to_string(),
            "invalid lab spec: host name `bad name`: need 1-24 characters of [A-Za-z0-9_-]"
        );
        let mut s = base.clone();
        s.links[0].a_to_b.loss = 1.5;
        assert_eq!(
            s.validate().unwrap_err().to_string(),
            "invalid lab spec: link 0 a->b: loss 1.5 is not within 0..=1"
        );
        let mut s = base.clone();
        s.links[0].b_to_a.jitter = Duration::from_millis(1);
        assert_eq!(
            s.validate().unwrap_err().to_string(),
            "invalid lab spec: link 0 b->a: jitter 1ms exceeds delay 0ns"
        );
        let mut s = base.clone();
        s.links
            .push(LinkSpec::symmetric("b", "a", Impairment::NONE));
        assert_eq!(
            s.validate().unwrap_err().to_string(),
            "invalid lab spec: link 1: `b`-`a` already linked"
        );
        let mut s = base.clone();
        s.links[0].mtu = 100;
        assert_eq!(
            s.validate().unwrap_err().to_string(),
            "invalid lab spec: link 0: mtu 100 not within 576..=9000"
        );
        let mut s = base;
        s.links[0].b = "c".into();
        assert_eq!(
            s.validate().unwrap_err().to_string(),
            "invalid lab spec: link 0: `c` is not a host"
        );
    }
}
