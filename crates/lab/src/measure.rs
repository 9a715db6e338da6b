//! The lab's self-measurement: UDP probes run between the two hosts of each
//! link (sockets made inside the hosts' namespaces, driven by threads of
//! this process) to measure the round-trip time added, the loss of each
//! direction and the rate of each capped direction, so a lab is only
//! trusted once its figures match what was configured.
//!
//! * RTT: sequential UDP echoes (host b echoes) of which the answered ones
//!   are samples; median, mean and minimum. "Added" is the median minus
//!   the median measured at creation before any impairment was applied.
//!   A lost echo costs a timeout of idling, so the next one is preceded by
//!   an unrecorded warm-up echo: otherwise loss would inflate the RTT.
//! * Loss: `loss_probes` numbered datagrams each way, paced below the rate
//!   cap; loss = 1 − received / sent.
//! * Rate: full-size datagrams sent at 1.3× the cap for `rate_duration`;
//!   rate = Ethernet-frame bits received between the first and the last
//!   arrival, divided by that time (what `tc tbf` counts).

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::{LabError, Result};
use crate::lab::Lab;
pub use crate::probe::median;
use crate::probe::{rtt_samples, SMALL_PAYLOAD};
use crate::relay::RelayCounters;
use crate::shaping::{Mechanisms, ETH_HEADER};
use crate::spec::Impairment;

/// How much probing [`Lab::measure`] does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeasureOptions {
    /// Sequential echo probes per link.
    pub rtt_probes: u32,
    /// Datagrams per direction for the loss estimate (3000 gives a
    /// standard error of 0.26 points at 2 % loss, so a 1-point tolerance
    /// is about 4 standard errors).
    pub loss_probes: u32,
    /// How long each capped direction is flooded for the rate estimate.
    pub rate_duration: Duration,
}

impl Default for MeasureOptions {
    fn default() -> Self {
        MeasureOptions {
            rtt_probes: 30,
            loss_probes: 3000,
            rate_duration: Duration::from_secs(1),
        }
    }
}

/// Largest UDP payload in a 1500-byte IP packet.
const FULL_PAYLOAD: usize = 1472;
/// Bytes of IPv4 + UDP headers.
const IP_UDP: u64 = 28;

/// Self-measurement of one link direction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DirectionReport {
    /// Sending host.
    pub from: String,
    /// Receiving host.
    pub to: String,
    /// Configured impairment.
    pub configured: Impairment,
    /// What produced it.
    pub mechanisms: Mechanisms,
    /// Loss probes sent.
    pub loss_sent: u32,
    /// Loss probes received.
    pub loss_received: u32,
    /// Measured loss, 0..1.
    pub loss: f64,
    /// Measured rate in bit/s of Ethernet frames, when a cap is configured.
    pub rate_bps: Option<f64>,
    /// The relay's counters after the probes (relay mode only); a non-zero
    /// `overflow` means the relay, not the configured loss, dropped packets.
    pub relay: Option<RelayCounters>,
}

/// Self-measurement of one link.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkReport {
    /// One end.
    pub a: String,
    /// Other end.
    pub b: String,
    /// Echo probes sent.
    pub rtt_sent: u32,
    /// Echo replies received in time.
    pub rtt_received: u32,
    /// Minimum RTT, ms.
    pub rtt_min_ms: f64,
    /// Median RTT, ms.
    pub rtt_median_ms: f64,
    /// Mean RTT, ms.
    pub rtt_mean_ms: f64,
    /// Median RTT measured at creation with no impairment, ms.
    pub base_rtt_ms: f64,
    /// Configured added RTT (delay a→b + delay b→a), ms.
    pub rtt_configured_ms: f64,
    /// Measured added RTT: median − base, ms.
    pub rtt_added_ms: f64,
    /// Direction a→b.
    pub a_to_b: DirectionReport,
    /// Direction b→a.
    pub b_to_a: DirectionReport,
}

impl LinkReport {
    /// The tolerance violations (empty when the lab is trustworthy): added
    /// RTT within 10 % of configured (1 ms when none is configured), loss
    /// within 1 point, rate within 10 %.
    pub fn violations(&self) -> Vec<String> {
        let mut v = Vec::new();
        let tol = (self.rtt_configured_ms * 0.1).max(1.0);
        if (self.rtt_added_ms - self.rtt_configured_ms).abs() > tol {
            v.push(format!(
                "{}<->{}: added RTT {:.2} ms, configured {:.2} ms (tolerance {:.2} ms)",
                self.a, self.b, self.rtt_added_ms, self.rtt_configured_ms, tol
            ));
        }
        for d in [&self.a_to_b, &self.b_to_a] {
            if (d.loss - d.configured.loss).abs() > 0.01 {
                v.push(format!(
                    "{}->{}: loss {:.2} %, configured {:.2} %",
                    d.from,
                    d.to,
                    d.loss * 100.0,
                    d.configured.loss * 100.0
                ));
            }
            if let (Some(cfg), Some(got)) = (d.configured.rate_bps, d.rate_bps) {
                if (got - cfg as f64).abs() > cfg as f64 * 0.1 {
                    v.push(format!(
                        "{}->{}: rate {:.0} bit/s, configured {cfg} bit/s",
                        d.from, d.to, got
                    ));
                }
            }
        }
        v
    }
}

fn io(step: &str) -> impl FnOnce(std::io::Error) -> LabError + '_ {
    move |e| LabError::io(step.to_string(), e)
}

/// A UDP socket bound to `host`'s address, port 0, inside its namespace.
fn udp_in(lab: &Lab, host: &str) -> Result<UdpSocket> {
    let addr = lab.host(host)?.addr();
    lab.run_in(host, move || UdpSocket::bind((addr, 0)))?
        .map_err(io("binding probe socket"))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Counts which of `expect` numbered datagrams arrive on `sock` (first
/// four bytes = sequence number) until `idle` passes with nothing after
/// `sending_done` is set, or `limit` is reached. Returns (unique count,
/// first arrival, last arrival, bytes).
fn receive_count(
    sock: &UdpSocket,
    expect: u32,
    sending_done: &AtomicBool,
    idle: Duration,
    limit: Instant,
) -> (u32, Option<Instant>, Option<Instant>) {
    let mut seen = vec![false; expect as usize];
    let mut count = 0u32;
    let (mut first, mut last) = (None, None);
    let mut buf = vec![0u8; 2048];
    let _ = sock.set_read_timeout(Some(Duration::from_millis(10)));
    let mut quiet_since = Instant::now();
    loop {
        let now = Instant::now();
        if now > limit {
            break;
        }
        match sock.recv(&mut buf) {
            Ok(n) if n >= 4 => {
                let t = Instant::now();
                quiet_since = t;
                let seq = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
                if let Some(slot) = seen.get_mut(seq as usize) {
                    if !*slot {
                        *slot = true;
                        count += 1;
                        first.get_or_insert(t);
                        last = Some(t);
                    }
                }
            }
            _ => {
                if sending_done.load(Ordering::Relaxed) && now.duration_since(quiet_since) > idle {
                    break;
                }
            }
        }
    }
    (count, first, last)
}

/// Sends `count` numbered datagrams of `payload` bytes at `pps` to `to`.
fn send_paced(
    sock: &UdpSocket,
    to: SocketAddr,
    count: u32,
    payload: usize,
    pps: f64,
    catch_up: bool,
) {
    let interval = Duration::from_secs_f64(1.0 / pps);
    let mut due = Instant::now();
    let mut msg = vec![0u8; payload];
    for seq in 0..count {
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        } else if !catch_up {
            // Late (the thread waited for a CPU): the schedule starts
            // again from here rather than sending the missed datagrams
            // back to back, which a rate cap would drop as excess.
            due = now;
        }
        msg[..4].copy_from_slice(&seq.to_be_bytes());
        let _ = sock.send_to(&msg, to);
        due += interval;
    }
}

/// One-way flood from `from` to `to`: (sent, received, first, last).
struct Flow {
    sent: u32,
    received: u32,
    first: Option<Instant>,
    last: Option<Instant>,
}

/// Receive buffer of a flow's receiving socket: a whole loss run's
/// datagrams (3000 small ones take about 2.3 MB of buffer), so a receiver
/// thread that waits for a CPU on a busy machine loses none of them.
const FLOW_RCVBUF: libc::c_int = 4 << 20;

/// Sets `sock`'s receive buffer to `bytes` beyond `net.core.rmem_max`
/// (`SO_RCVBUFFORCE`, which the lab's root has); left as it was if refused.
fn force_receive_buffer(sock: &UdpSocket, bytes: libc::c_int) {
    use std::os::fd::AsRawFd;
    // SAFETY: setsockopt on a live socket with a valid int option value.
    let _ = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            std::ptr::from_ref(&bytes).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
}

/// Sends each spec's datagrams from `from` to `to` at `pps`, all specs at
/// once. `catch_up`: a sender that fell behind sends what it missed at
/// once (a flood whose rate must hold whatever the machine's load);
/// otherwise it never sends faster than `pps` (a loss estimate that a
/// burst would turn into rate-cap drops).
fn flows(
    lab: &Lab,
    specs: &[(String, String, u32, usize, f64)],
    settle: Duration,
    catch_up: bool,
) -> Result<Vec<Flow>> {
    let mut socks = Vec::new();
    for (from, to, ..) in specs {
        let tx = udp_in(lab, from)?;
        let rx = udp_in(lab, to)?;
        force_receive_buffer(&rx, FLOW_RCVBUF);
        let rx_addr = rx.local_addr().map_err(io("flow local_addr"))?;
        socks.push((tx, rx, rx_addr));
    }
    let limit = Instant::now() + Duration::from_secs(60);
    std::thread::scope(|s| {
        let handles: Vec<_> = specs
            .iter()
            .zip(&socks)
            .map(|((_, _, count, payload, pps), (tx, rx, rx_addr))| {
                let done = AtomicBool::new(false);
                s.spawn(move || {
                    std::thread::scope(|inner| {
                        let r = inner.spawn(|| receive_count(rx, *count, &done, settle, limit));
                        send_paced(tx, *rx_addr, *count, *payload, *pps, catch_up);
                        done.store(true, Ordering::Relaxed);
                        let (received, first, last) = r.join().expect("receiver thread");
                        Flow {
                            sent: *count,
                            received,
                            first,
                            last,
                        }
                    })
                })
            })
            .collect();
        Ok(handles
            .into_iter()
            .map(|h| h.join().expect("flow thread"))
            .collect())
    })
}

impl Lab {
    /// Measures every link (RTT, loss both ways, rate of capped
    /// directions). Takes about `rtt_probes × RTT + loss_probes / pps +
    /// rate_duration` per link; the probes leave the lab as they found it.
    pub fn measure(&self, opts: &MeasureOptions) -> Result<Vec<LinkReport>> {
        (0..self.link_count())
            .map(|i| self.measure_link(i, opts))
            .collect()
    }

    /// [`Lab::measure`], then fails with [`LabError::SelfCheck`] listing
    /// every violation when a figure is outside its tolerance
    /// ([`LinkReport::violations`]). Returns the reports when all pass.
    pub fn verify(&self, opts: &MeasureOptions) -> Result<Vec<LinkReport>> {
        let reports = self.measure(opts)?;
        let bad: Vec<String> = reports.iter().flat_map(LinkReport::violations).collect();
        if bad.is_empty() {
            Ok(reports)
        } else {
            Err(LabError::SelfCheck(bad))
        }
    }

    fn measure_link(&self, idx: usize, opts: &MeasureOptions) -> Result<LinkReport> {
        let (ha, hb, spec, _) = self.link_ends(idx);
        let (a, b) = (ha.name().to_string(), hb.name().to_string());
        let (ab, ba) = (spec.a_to_b, spec.b_to_a);
        let configured_rtt = ab.delay + ba.delay;
        let slack = ab.delay + ab.jitter + ba.delay + ba.jitter;
        let timeout = slack * 3 + Duration::from_millis(500);
        let samples = rtt_samples(
            udp_in(self, &a)?,
            udp_in(self, &b)?,
            opts.rtt_probes,
            timeout,
        )?;
        if samples.is_empty() {
            return Err(LabError::Probe {
                probe: "rtt",
                link: format!("{a}<->{b}"),
                detail: format!("none of {} echoes answered", opts.rtt_probes),
            });
        }
        let base = self.base_rtt(idx);
        let med = median(&samples);
        let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
        let min = *samples.iter().min().expect("non-empty");

        // Loss: both directions at once, at most half the capped rate.
        let settle = slack + Duration::from_millis(300);
        let pps_for = |imp: &Impairment| {
            let bits = ((SMALL_PAYLOAD as u64 + IP_UDP + ETH_HEADER) * 8) as f64;
            imp.rate_bps
                .map(|r| (r as f64 * 0.5 / bits).min(2000.0))
                .unwrap_or(2000.0)
        };
        let loss = flows(
            self,
            &[
                (
                    a.clone(),
                    b.clone(),
                    opts.loss_probes,
                    SMALL_PAYLOAD,
                    pps_for(&ab),
                ),
                (
                    b.clone(),
                    a.clone(),
                    opts.loss_probes,
                    SMALL_PAYLOAD,
                    pps_for(&ba),
                ),
            ],
            settle,
            false,
        )?;

        // Rate: flood each capped direction at 1.3x its cap.
        let frame_bits = ((FULL_PAYLOAD as u64 + IP_UDP + ETH_HEADER) * 8) as f64;
        let mut rate_specs = Vec::new();
        let mut rate_dirs = Vec::new();
        for (from, to, imp, dir) in [(&a, &b, &ab, 0), (&b, &a, &ba, 1)] {
            if let Some(r) = imp.rate_bps {
                let pps = r as f64 * 1.3 / frame_bits;
                let count = (pps * opts.rate_duration.as_secs_f64()).ceil().max(10.0) as u32;
                rate_specs.push((from.clone(), to.clone(), count, FULL_PAYLOAD, pps));
                rate_dirs.push(dir);
            }
        }
        let rates = flows(self, &rate_specs, settle, true)?;
        let mut rate_of = [None, None];
        for (dir, f) in rate_dirs.into_iter().zip(&rates) {
            rate_of[dir] = match (f.first, f.last) {
                (Some(t0), Some(t1)) if f.received >= 2 && t1 > t0 => {
                    Some(f64::from(f.received - 1) * frame_bits / (t1 - t0).as_secs_f64())
                }
                _ => {
                    return Err(LabError::Probe {
                        probe: "rate",
                        link: format!("{a}<->{b}"),
                        detail: format!("{} of {} datagrams arrived", f.received, f.sent),
                    })
                }
            };
        }
        let dir_report = |from: &str,
                          to: &str,
                          imp: Impairment,
                          f: &Flow,
                          rate: Option<f64>|
         -> Result<DirectionReport> {
            Ok(DirectionReport {
                from: from.to_string(),
                to: to.to_string(),
                configured: imp,
                mechanisms: self.mechanisms(from, to)?,
                loss_sent: f.sent,
                loss_received: f.received,
                loss: 1.0 - f64::from(f.received) / f64::from(f.sent.max(1)),
                rate_bps: rate,
                relay: self.relay_counters(from, to)?,
            })
        };
        Ok(LinkReport {
            a_to_b: dir_report(&a, &b, ab, &loss[0], rate_of[0])?,
            b_to_a: dir_report(&b, &a, ba, &loss[1], rate_of[1])?,
            a,
            b,
            rtt_sent: opts.rtt_probes,
            rtt_received: samples.len() as u32,
            rtt_min_ms: ms(min),
            rtt_median_ms: ms(med),
            rtt_mean_ms: ms(mean),
            base_rtt_ms: ms(base),
            rtt_configured_ms: ms(configured_rtt),
            rtt_added_ms: ms(med) - ms(base),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        let d = |m| Duration::from_millis(m);
        assert_eq!(median(&[d(5), d(1), d(3)]), d(3));
        assert_eq!(median(&[d(4), d(1), d(3), d(2)]), d(3));
        assert_eq!(median(&[]), Duration::ZERO);
    }

    fn report(added: f64, loss: f64, rate: f64) -> LinkReport {
        let imp = Impairment {
            delay: Duration::from_millis(20),
            jitter: Duration::ZERO,
            loss: 0.02,
            rate_bps: Some(10_000_000),
        };
        let mech = crate::shaping::Mechanisms::for_impairment(&imp, false);
        let d = |from: &str, to: &str| DirectionReport {
            from: from.into(),
            to: to.into(),
            configured: imp,
            mechanisms: mech,
            loss_sent: 2000,
            loss_received: 1960,
            loss,
            rate_bps: Some(rate),
            relay: None,
        };
        LinkReport {
            a: "a".into(),
            b: "b".into(),
            rtt_sent: 30,
            rtt_received: 30,
            rtt_min_ms: added,
            rtt_median_ms: added,
            rtt_mean_ms: added,
            base_rtt_ms: 0.0,
            rtt_configured_ms: 40.0,
            rtt_added_ms: added,
            a_to_b: d("a", "b"),
            b_to_a: d("b", "a"),
        }
    }

    #[test]
    fn violations_apply_tolerances() {
        assert!(report(41.0, 0.025, 9.5e6).violations().is_empty());
        assert_eq!(
            report(45.0, 0.02, 1e7).violations(),
            ["a<->b: added RTT 45.00 ms, configured 40.00 ms (tolerance 4.00 ms)"]
        );
        assert_eq!(report(40.0, 0.04, 1e7).violations().len(), 2);
        assert_eq!(
            report(40.0, 0.02, 8.5e6).violations()[0],
            "a->b: rate 8500000 bit/s, configured 10000000 bit/s"
        );
    }
}
