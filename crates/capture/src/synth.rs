//! Writing captures: a legacy pcap writer and a pcapng writer (Ethernet or
//! loopback link type, IPv4 or IPv6 TCP) and a TCP connection model that
//! numbers segments, so tests and the large-capture generator build exact
//! pcaps by hand — reordered, retransmitted or cut to start
//! mid-connection as they wish — and a recorder that never saw the
//! packets (the engine's GIOP proxy) writes what it passed as TCP.

use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};

use etherparse::PacketBuilder;

use crate::net::{LINKTYPE_ETHERNET, LINKTYPE_NULL};

/// Writes a legacy pcap file (microsecond timestamps, little-endian).
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    linktype: i32,
    /// Packets written.
    pub packets: u64,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header. `linktype` is [`LINKTYPE_ETHERNET`] or
    /// [`LINKTYPE_NULL`].
    pub fn new(mut out: W, linktype: i32) -> io::Result<Self> {
        let mut h = Vec::with_capacity(24);
        h.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&4u16.to_le_bytes());
        h.extend_from_slice(&0i32.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        h.extend_from_slice(&262_144u32.to_le_bytes());
        h.extend_from_slice(&(linktype as u32).to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter {
            out,
            linktype,
            packets: 0,
        })
    }

    /// One TCP segment at `ts_ns`.
    pub fn segment(&mut self, ts_ns: u64, seg: &SegmentSpec<'_>) -> io::Result<()> {
        let pkt = packet(self.linktype, seg)?;
        let mut rec = Vec::with_capacity(16);
        rec.extend_from_slice(&((ts_ns / 1_000_000_000) as u32).to_le_bytes());
        rec.extend_from_slice(&(((ts_ns % 1_000_000_000) / 1000) as u32).to_le_bytes());
        rec.extend_from_slice(&(pkt.len() as u32).to_le_bytes());
        rec.extend_from_slice(&(pkt.len() as u32).to_le_bytes());
        self.out.write_all(&rec)?;
        self.out.write_all(&pkt)?;
        self.packets += 1;
        Ok(())
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Writes a pcapng file: one section, one interface of `linktype` with
/// nanosecond timestamps, an Enhanced Packet Block per segment.
#[derive(Debug)]
pub struct PcapngWriter<W: Write> {
    out: W,
    linktype: i32,
    /// Packets written.
    pub packets: u64,
}

/// A pcapng block: type, total length, `body` padded to 4, total length.
fn block(out: &mut impl Write, ty: u32, body: &[u8]) -> io::Result<()> {
    let pad = body.len().wrapping_neg() & 3;
    let total = (12 + body.len() + pad) as u32;
    out.write_all(&ty.to_le_bytes())?;
    out.write_all(&total.to_le_bytes())?;
    out.write_all(body)?;
    out.write_all(&[0u8; 3][..pad])?;
    out.write_all(&total.to_le_bytes())
}

impl<W: Write> PcapngWriter<W> {
    /// Writes the Section Header Block and the one Interface Description
    /// Block. `linktype` is [`LINKTYPE_ETHERNET`] or [`LINKTYPE_NULL`].
    pub fn new(mut out: W, linktype: i32) -> io::Result<Self> {
        let mut shb = Vec::with_capacity(16);
        shb.extend_from_slice(&0x1a2b_3c4du32.to_le_bytes());
        shb.extend_from_slice(&1u16.to_le_bytes());
        shb.extend_from_slice(&0u16.to_le_bytes());
        shb.extend_from_slice(&(-1i64).to_le_bytes()); // section length unknown
        block(&mut out, 0x0a0d_0d0a, &shb)?;
        let mut idb = Vec::with_capacity(20);
        idb.extend_from_slice(&(linktype as u16).to_le_bytes());
        idb.extend_from_slice(&0u16.to_le_bytes());
        idb.extend_from_slice(&262_144u32.to_le_bytes());
        // if_tsresol = 9: timestamps in nanoseconds; then opt_endofopt.
        idb.extend_from_slice(&9u16.to_le_bytes());
        idb.extend_from_slice(&1u16.to_le_bytes());
        idb.extend_from_slice(&[9, 0, 0, 0]);
        idb.extend_from_slice(&[0, 0, 0, 0]);
        block(&mut out, 1, &idb)?;
        Ok(PcapngWriter {
            out,
            linktype,
            packets: 0,
        })
    }

    /// One TCP segment at `ts_ns` (nanoseconds since the Unix epoch).
    pub fn segment(&mut self, ts_ns: u64, seg: &SegmentSpec<'_>) -> io::Result<()> {
        let pkt = packet(self.linktype, seg)?;
        let mut epb = Vec::with_capacity(20 + pkt.len());
        epb.extend_from_slice(&0u32.to_le_bytes()); // interface 0
        epb.extend_from_slice(&((ts_ns >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(ts_ns as u32).to_le_bytes());
        epb.extend_from_slice(&(pkt.len() as u32).to_le_bytes());
        epb.extend_from_slice(&(pkt.len() as u32).to_le_bytes());
        epb.extend_from_slice(&pkt);
        block(&mut self.out, 6, &epb)?;
        self.packets += 1;
        Ok(())
    }

    /// Flush the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// The frame of one TCP segment as `linktype` carries it: link header (or
/// the DLT_NULL family word), IP and TCP headers, then the payload.
fn packet(linktype: i32, seg: &SegmentSpec<'_>) -> io::Result<Vec<u8>> {
    let mut pkt = Vec::with_capacity(seg.payload.len() + 80);
    let builder = match (seg.src.ip(), seg.dst.ip()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            if linktype == LINKTYPE_ETHERNET {
                PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]).ipv4(
                    s.octets(),
                    d.octets(),
                    64,
                )
            } else {
                pkt.extend_from_slice(&2u32.to_ne_bytes());
                PacketBuilder::ipv4(s.octets(), d.octets(), 64)
            }
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            if linktype == LINKTYPE_ETHERNET {
                PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]).ipv6(
                    s.octets(),
                    d.octets(),
                    64,
                )
            } else {
                // BSD AF_INET6 as Linux writes it for DLT_NULL.
                pkt.extend_from_slice(&10u32.to_ne_bytes());
                PacketBuilder::ipv6(s.octets(), d.octets(), 64)
            }
        }
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "mixed IPv4/IPv6 addresses",
            ))
        }
    };
    let mut b = builder
        .tcp(seg.src.port(), seg.dst.port(), seg.seq, 65535)
        .ack(seg.ack);
    if seg.syn {
        b = b.syn();
    }
    if seg.fin {
        b = b.fin();
    }
    if !seg.payload.is_empty() {
        b = b.psh();
    }
    b.write(&mut pkt, seg.payload)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    Ok(pkt)
}

/// One TCP segment to write.
#[derive(Debug, Clone, Copy)]
pub struct SegmentSpec<'a> {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub seq: u32,
    pub ack: u32,
    pub syn: bool,
    pub fin: bool,
    pub payload: &'a [u8],
}

/// Sequence numbering of one TCP connection, both directions.
#[derive(Debug, Clone)]
pub struct Flow {
    pub client: SocketAddr,
    pub server: SocketAddr,
    /// Next sequence number of each side: [client, server].
    pub next: [u32; 2],
}

impl Flow {
    /// A connection with these initial sequence numbers.
    pub fn new(client: SocketAddr, server: SocketAddr, isn: [u32; 2]) -> Self {
        Flow {
            client,
            server,
            next: isn,
        }
    }

    /// The three-way handshake's SYN and SYN-ACK.
    pub fn handshake(&mut self) -> [SegmentSpec<'static>; 2] {
        let a = SegmentSpec {
            src: self.client,
            dst: self.server,
            seq: self.next[0],
            ack: 0,
            syn: true,
            fin: false,
            payload: &[],
        };
        let b = SegmentSpec {
            src: self.server,
            dst: self.client,
            seq: self.next[1],
            ack: self.next[0].wrapping_add(1),
            syn: true,
            fin: false,
            payload: &[],
        };
        self.next[0] = self.next[0].wrapping_add(1);
        self.next[1] = self.next[1].wrapping_add(1);
        [a, b]
    }

    /// A FIN from the client (`from_client`) or the server; advances its
    /// sequence number by one.
    pub fn fin(&mut self, from_client: bool) -> SegmentSpec<'static> {
        let d = usize::from(!from_client);
        let (src, dst) = if from_client {
            (self.client, self.server)
        } else {
            (self.server, self.client)
        };
        let seg = SegmentSpec {
            src,
            dst,
            seq: self.next[d],
            ack: self.next[1 - d],
            syn: false,
            fin: true,
            payload: &[],
        };
        self.next[d] = self.next[d].wrapping_add(1);
        seg
    }

    /// `payload` sent by the client (`from_client`) or the server, cut into
    /// segments of at most `mss` bytes; advances the sequence number.
    pub fn send<'a>(
        &mut self,
        from_client: bool,
        payload: &'a [u8],
        mss: usize,
    ) -> Vec<SegmentSpec<'a>> {
        let d = if from_client { 0 } else { 1 };
        let (src, dst) = if from_client {
            (self.client, self.server)
        } else {
            (self.server, self.client)
        };
        let mut out = Vec::new();
        for chunk in payload.chunks(mss.max(1)) {
            out.push(SegmentSpec {
                src,
                dst,
                seq: self.next[d],
                ack: self.next[1 - d],
                syn: false,
                fin: false,
                payload: chunk,
            });
            self.next[d] = self.next[d].wrapping_add(chunk.len() as u32);
        }
        out
    }
}

/// Link type constants re-exported for writers.
pub const ETHERNET: i32 = LINKTYPE_ETHERNET;
/// Loopback (DLT_NULL), what Linux `lo` captures use in pcap form… or not:
/// Linux writes `lo` as Ethernet with zero addresses; BSD uses NULL.
pub const NULL: i32 = LINKTYPE_NULL;
