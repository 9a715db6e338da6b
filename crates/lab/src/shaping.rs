//! The kernel configuration that impairs a link direction, as pure text:
//! `tc tbf` arguments for the rate cap, `tc netem` arguments for delay,
//! jitter and loss where the kernel has netem, and the nftables ruleset for
//! random loss where it does not. Kept free of I/O so the exact commands are
//! unit-tested.

use std::time::Duration;

use serde::Serialize;

use crate::spec::Impairment;

/// Bytes of an Ethernet header, which `tc` counts in every packet.
pub const ETH_HEADER: u64 = 14;

/// Denominator of the nftables loss rule (`numgen random mod N`), giving
/// loss a resolution of 1 in a million.
pub const NFT_LOSS_SCALE: u64 = 1_000_000;

/// Which mechanism produces one property of one link direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mechanism {
    /// Not impaired.
    None,
    /// `tc qdisc … netem`.
    Netem,
    /// The TUN relay of this crate.
    Relay,
    /// An nftables `numgen random` drop rule.
    Nft,
    /// `tc qdisc … tbf`.
    Tbf,
}

/// What ran for each property of one direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Mechanisms {
    /// Delay and jitter.
    pub delay: Mechanism,
    /// Random loss.
    pub loss: Mechanism,
    /// Rate cap.
    pub rate: Mechanism,
}

impl Mechanisms {
    /// Mechanisms for `imp` when delay is made by netem (`netem` true) or
    /// by the relay. The relay stays in the path even at zero delay (so the
    /// delay can change at run time) but is reported only when it delays.
    pub fn for_impairment(imp: &Impairment, netem: bool) -> Self {
        let delays = !imp.delay.is_zero() || !imp.jitter.is_zero();
        Mechanisms {
            delay: match (delays, netem) {
                (false, _) => Mechanism::None,
                (true, true) => Mechanism::Netem,
                (true, false) => Mechanism::Relay,
            },
            loss: match (imp.loss > 0.0, netem) {
                (false, _) => Mechanism::None,
                (true, true) => Mechanism::Netem,
                (true, false) => Mechanism::Nft,
            },
            rate: if imp.rate_bps.is_some() {
                Mechanism::Tbf
            } else {
                Mechanism::None
            },
        }
    }
}

/// Token-bucket size in bytes: two full frames, or 5 ms at the rate when
/// that is larger. A bucket smaller than a frame would drop every frame;
/// one much smaller than the qdisc timer's latency under load loses
/// tokens (measured: 2 ms at 10 Mbit/s gave 3 % less than the rate on a
/// busy 2-core machine).
pub fn tbf_burst(rate_bps: u64, mtu: u32) -> u64 {
    let frame = u64::from(mtu) + ETH_HEADER;
    (2 * frame).max(rate_bps / 8 / 200)
}

/// Queue limit in bytes: 100 ms at the rate, at least 16 full frames.
pub fn tbf_limit(rate_bps: u64, mtu: u32) -> u64 {
    let frame = u64::from(mtu) + ETH_HEADER;
    (16 * frame).max(rate_bps / 8 / 10)
}

/// Arguments after `tc qdisc add dev X <parent>` for the rate cap.
pub fn tbf_args(rate_bps: u64, mtu: u32) -> Vec<String> {
    vec![
        "tbf".into(),
        "rate".into(),
        format!("{rate_bps}bit"),
        "burst".into(),
        tbf_burst(rate_bps, mtu).to_string(),
        "limit".into(),
        tbf_limit(rate_bps, mtu).to_string(),
    ]
}

fn micros(d: Duration) -> String {
    format!("{}us", d.as_micros())
}

/// Arguments after `tc qdisc add dev X root handle 1:` for netem, or
/// `None` when the direction has no delay, jitter or loss.
pub fn netem_args(imp: &Impairment) -> Option<Vec<String>> {
    if imp.delay.is_zero() && imp.jitter.is_zero() && imp.loss == 0.0 {
        return None;
    }
    let mut v = vec!["netem".to_string(), "limit".into(), "100000".into()];
    if !imp.delay.is_zero() || !imp.jitter.is_zero() {
        v.push("delay".into());
        v.push(micros(imp.delay));
        if !imp.jitter.is_zero() {
            v.push(micros(imp.jitter));
        }
    }
    if imp.loss > 0.0 {
        v.push("loss".into());
        v.push(format!("{:.4}%", imp.loss * 100.0));
    }
    Some(v)
}

/// Threshold of the nftables rule for loss probability `loss`.
pub fn nft_threshold(loss: f64) -> u64 {
    (loss * NFT_LOSS_SCALE as f64).round() as u64
}

/// The nftables script that (re)defines table `inet iiopb_lab` in a link's
/// middle namespace: packets forwarded in from interface `sa` (travelling
/// a→b) are dropped with probability `loss_ab`, from `sb` with `loss_ba`.
/// The first two lines make the delete succeed when the table is absent.
pub fn nft_script(loss_ab: f64, loss_ba: f64) -> String {
    let mut rules = String::new();
    for (iif, loss) in [("sa", loss_ab), ("sb", loss_ba)] {
        if loss > 0.0 {
            rules.push_str(&format!(
                "    iifname \"{iif}\" numgen random mod {NFT_LOSS_SCALE} < {} counter drop\n",
                nft_threshold(loss)
            ));
        }
    }
    format!(
        "table inet iiopb_lab {{}}\ndelete table inet iiopb_lab\n\
         table inet iiopb_lab {{\n  chain impair {{\n    type filter hook forward priority 0; policy accept;\n{rules}  }}\n}}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tbf_for_t1_and_ten_megabit() {
        assert_eq!(
            tbf_args(1_544_000, 1500),
            [
                "tbf",
                "rate",
                "1544000bit",
                "burst",
                "3028",
                "limit",
                "24224"
            ]
        );
        assert_eq!(
            tbf_args(10_000_000, 1500),
            [
                "tbf",
                "rate",
                "10000000bit",
                "burst",
                "6250",
                "limit",
                "125000"
            ]
        );
        assert_eq!(tbf_burst(1_000_000_000, 1500), 625_000);
    }

    #[test]
    fn netem_args_cover_delay_jitter_loss() {
        let imp = Impairment {
            delay: Duration::from_millis(20),
            jitter: Duration::from_millis(2),
            loss: 0.02,
            rate_bps: Some(10_000_000),
        };
        assert_eq!(
            netem_args(&imp).unwrap(),
            ["netem", "limit", "100000", "delay", "20000us", "2000us", "loss", "2.0000%"]
        );
        assert_eq!(netem_args(&Impairment::NONE), None);
        let loss_only = Impairment {
            loss: 0.08,
            ..Impairment::NONE
        };
        assert_eq!(
            netem_args(&loss_only).unwrap(),
            ["netem", "limit", "100000", "loss", "8.0000%"]
        );
    }

    #[test]
    fn nft_script_drops_per_direction() {
        assert_eq!(
            nft_script(0.02, 0.0),
            "table inet iiopb_lab {}\ndelete table inet iiopb_lab\n\
             table inet iiopb_lab {\n  chain impair {\n    type filter hook forward priority 0; policy accept;\n\
             \x20   iifname \"sa\" numgen random mod 1000000 < 20000 counter drop\n  }\n}\n"
        );
        assert_eq!(nft_threshold(0.08), 80_000);
    }

    #[test]
    fn mechanisms_reported() {
        let imp = Impairment {
            delay: Duration::from_millis(20),
            jitter: Duration::ZERO,
            loss: 0.02,
            rate_bps: Some(10_000_000),
        };
        assert_eq!(
            Mechanisms::for_impairment(&imp, false),
            Mechanisms {
                delay: Mechanism::Relay,
                loss: Mechanism::Nft,
                rate: Mechanism::Tbf
            }
        );
        assert_eq!(
            Mechanisms::for_impairment(&imp, true),
            Mechanisms {
                delay: Mechanism::Netem,
                loss: Mechanism::Netem,
                rate: Mechanism::Tbf
            }
        );
        assert_eq!(
            Mechanisms::for_impairment(&Impairment::NONE, false),
            Mechanisms {
                delay: Mechanism::None,
                loss: Mechanism::None,
                rate: Mechanism::None
            }
        );
    }
}
