//! The one probe the lab's construction and its self-measurement share:
//! sequential UDP echo round trips between two sockets (made by the caller
//! inside two hosts' namespaces), and their median. Below both
//! [`crate::lab`] (the base RTT of a bare link, at creation) and
//! [`crate::measure`] (the RTT of a configured one).

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::{LabError, Result};

/// Payload of loss and RTT probes.
pub const SMALL_PAYLOAD: usize = 64;

fn io(step: &str) -> impl FnOnce(std::io::Error) -> LabError + '_ {
    move |e| LabError::io(step.to_string(), e)
}

/// Bit set in the sequence number of an unrecorded warm-up echo, so its
/// reply is never taken for a measured probe's.
const WARM_UP: u32 = 1 << 31;
/// SCHED_FIFO priority of the two probe threads: below the relay's, so the
/// relay still forwards on time, and above every ordinary thread, so an RTT
/// sample is the link's round trip and not also the time the echo or the
/// prober waited for a CPU after its packet arrived (a build beside the
/// lab made those waits milliseconds each, beyond the self-check's
/// tolerance).
const PROBE_PRIORITY: libc::c_int = 5;

/// Warm-up echoes tried after a lost probe before measuring anyway.
const WARM_UP_TRIES: u32 = 3;

/// One echo of `seq` on the connected `client`: its round-trip time, or
/// `None` when no reply came within `timeout` (replies to other, late
/// probes are skipped).
fn echo(client: &UdpSocket, seq: u32, timeout: Duration) -> Result<Option<Duration>> {
    let mut msg = [0u8; SMALL_PAYLOAD];
    msg[..4].copy_from_slice(&seq.to_be_bytes());
    let mut buf = [0u8; 256];
    let t0 = Instant::now();
    client.send(&msg).map_err(io("probe send"))?;
    let deadline = t0 + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        client
            .set_read_timeout(Some(left))
            .map_err(io("probe timeout"))?;
        match client.recv(&mut buf) {
            Ok(n) if n >= 4 && buf[..4] == seq.to_be_bytes() => return Ok(Some(t0.elapsed())),
            Ok(_) => continue,
            Err(_) => return Ok(None),
        }
    }
}

/// Sequential UDP echo RTTs from `a` to `b`: one sample per answered
/// probe out of `count`. A lost probe is not a sample, and neither is its
/// wait: after it, up to [`WARM_UP_TRIES`] unrecorded warm-up echoes run
/// until one is answered, because the probe sent right after a `timeout` of idling measures the
/// hosts waking up (4x a warm round trip here, milliseconds on a loaded
/// machine), not the link; the base RTT is measured warm too.
pub fn rtt_samples(
    client: UdpSocket,
    server: UdpSocket,
    count: u32,
    timeout: Duration,
) -> Result<Vec<Duration>> {
    let server_addr = server.local_addr().map_err(io("echo local_addr"))?;
    server
        .set_read_timeout(Some(Duration::from_millis(20)))
        .map_err(io("echo timeout"))?;
    client.connect(server_addr).map_err(io("probe connect"))?;
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            crate::relay::realtime(PROBE_PRIORITY);
            let mut buf = [0u8; 256];
            while !stop.load(Ordering::Relaxed) {
                if let Ok((n, from)) = server.recv_from(&mut buf) {
                    let _ = server.send_to(&buf[..n], from);
                }
            }
        });
        let prober = s.spawn(|| -> Result<Vec<Duration>> {
            crate::relay::realtime(PROBE_PRIORITY);
            let mut out = Vec::new();
            let mut cold = false;
            for seq in 0..count {
                if cold {
                    for _ in 0..WARM_UP_TRIES {
                        if echo(&client, seq | WARM_UP, timeout)?.is_some() {
                            break;
                        }
                    }
                }
                let rtt = echo(&client, seq, timeout)?;
                cold = rtt.is_none();
                out.extend(rtt);
            }
            Ok(out)
        });
        let res = prober
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        stop.store(true, Ordering::Relaxed);
        res
    })
}

/// Median of a slice (sorted copy); zero when empty.
pub fn median(v: &[Duration]) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    let mut s = v.to_vec();
    s.sort();
    s[s.len() / 2]
}
