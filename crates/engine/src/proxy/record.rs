//! The proxy's recording: every relayed connection as two TCP connections
//! in one pcapng file — client ↔ proxy and proxy ↔ server, with their
//! real addresses — whose segments are the reads and writes the proxy
//! made, each side's sequence numbers consistent, so `iiopbench pcap`
//! (and Wireshark) read what each peer sent and received. No packet was
//! captured: the TCP/IP headers are synthesized ([`iiop_capture::synth`]).
//! Time comes in from the caller.

use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use iiop_capture::synth::{Flow, PcapngWriter, ETHERNET};

/// Largest TCP payload per recorded segment (an IPv4 packet is at most
/// 64 KiB).
const MAX_SEGMENT: usize = 65_000;

type Sink = Box<dyn Write + Send>;

/// A pcapng file being written by every leg of a proxy.
pub struct Recorder {
    inner: Mutex<Inner>,
}

struct Inner {
    out: Option<PcapngWriter<Sink>>,
    /// The first write error; recording stops there.
    error: Option<io::Error>,
    legs: u32,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Recorder {
    /// A recording into `out` (the pcapng headers are written now).
    pub fn new(out: Sink) -> io::Result<Arc<Recorder>> {
        let w = PcapngWriter::new(out, ETHERNET)?;
        Ok(Arc::new(Recorder {
            inner: Mutex::new(Inner {
                out: Some(w),
                error: None,
                legs: 0,
            }),
        }))
    }

    fn write(&self, ts_ns: u64, segs: &[iiop_capture::synth::SegmentSpec<'_>]) {
        let mut g = lock(&self.inner);
        let Inner { out, error, .. } = &mut *g;
        let Some(w) = out.as_mut() else { return };
        if error.is_some() {
            return;
        }
        for s in segs {
            if let Err(e) = w.segment(ts_ns, s) {
                *error = Some(e);
                return;
            }
        }
    }

    /// A new TCP connection from `client` to `server` at `ts_ns` (its
    /// handshake is recorded now).
    pub fn leg(self: &Arc<Self>, client: SocketAddr, server: SocketAddr, ts_ns: u64) -> Leg {
        let n = {
            let mut g = lock(&self.inner);
            g.legs += 1;
            g.legs
        };
        // Distinct initial sequence numbers per leg and side, for readers
        // that look.
        let mut flow = Flow::new(
            client,
            server,
            [
                n.wrapping_mul(0x0100_0000),
                n.wrapping_mul(0x0100_0000) ^ 0x8000_0000,
            ],
        );
        let hs = flow.handshake();
        self.write(ts_ns, &hs);
        Leg {
            rec: self.clone(),
            flow: Mutex::new(Some(flow)),
        }
    }

    /// Flush and stop; the first write error, if any.
    pub fn finish(&self) -> io::Result<()> {
        let mut g = lock(&self.inner);
        if let Some(mut w) = g.out.take() {
            if g.error.is_none() {
                if let Err(e) = w.flush() {
                    g.error = Some(e);
                }
            }
        }
        match g.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// One recorded TCP connection.
#[derive(Debug)]
pub struct Leg {
    rec: Arc<Recorder>,
    /// `None` once closed.
    flow: Mutex<Option<Flow>>,
}

impl Leg {
    /// `bytes` sent by the leg's client (`from_client`) or server at
    /// `ts_ns`.
    pub fn data(&self, from_client: bool, bytes: &[u8], ts_ns: u64) {
        if bytes.is_empty() {
            return;
        }
        let mut g = lock(&self.flow);
        let Some(flow) = g.as_mut() else { return };
        let segs = flow.send(from_client, bytes, MAX_SEGMENT);
        self.rec.write(ts_ns, &segs);
    }

    /// Both sides' FIN at `ts_ns` (once).
    pub fn close(&self, ts_ns: u64) {
        let mut g = lock(&self.flow);
        if let Some(mut flow) = g.take() {
            let fins = [flow.fin(true), flow.fin(false)];
            self.rec.write(ts_ns, &fins);
        }
    }
}

/// Nanoseconds since the Unix epoch now (what the recording's timestamps
/// count).
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `Write` the test reads back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            lock(&self.0).extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn legs_read_back_as_tcp_connections() {
        let buf = Shared::default();
        let rec = Recorder::new(Box::new(buf.clone())).unwrap();
        let c: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let p: SocketAddr = "127.0.0.1:3000".parse().unwrap();
        let s: SocketAddr = "127.0.0.1:2809".parse().unwrap();
        let t = 1_700_000_000_000_000_000;
        let a = rec.leg(c, p, t);
        let b = rec.leg("127.0.0.1:40001".parse().unwrap(), s, t);
        a.data(true, b"GIOP", t + 1);
        b.data(true, &vec![1u8; 100_000], t + 2);
        b.data(false, b"x", t + 3);
        a.close(t + 4);
        a.close(t + 5);
        b.close(t + 6);
        rec.finish().unwrap();
        let bytes = lock(&buf.0).clone();
        let sum = iiop_capture::analyze(&bytes[..], iiop_capture::Config::default()).unwrap();
        // Two handshakes (2 each), 1 + 2 + 1 data segments, two FINs each.
        assert_eq!(sum.frames, 4 + 4 + 4);
        assert_eq!(sum.connections, 2);
        assert_eq!(sum.mid_stream_connections, 0);
        assert_eq!(sum.gaps, 0);
        // Not GIOP: every payload byte is counted as unframed.
        assert_eq!(sum.unframed_bytes, 4 + 100_000 + 1);
    }
}
