//! Capture files as a stream of packets: legacy pcap (either byte order,
//! micro- or nanosecond timestamps) and pcapng (any number of interfaces,
//! each with its own link type and timestamp resolution), read through a
//! fixed-size buffer so that a capture of any length is never loaded whole.

use std::io::Read;

use pcap_parser::traits::PcapNGPacketBlock;
use pcap_parser::{create_reader, Block, PcapBlockOwned, PcapError};

/// One captured packet, borrowed from the reader's buffer.
#[derive(Debug, Clone, Copy)]
pub struct RawPacket<'a> {
    /// 1-based frame number, as Wireshark numbers them.
    pub frame: u64,
    /// Capture time, nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// The link type (LINKTYPE_* value) of the interface it came from.
    pub linktype: i32,
    /// The captured bytes (may be shorter than the packet on the wire).
    pub data: &'a [u8],
    /// Length of the packet on the wire.
    pub orig_len: u32,
}

/// Buffer of the streaming reader; grown when one block does not fit.
const INITIAL_BUFFER: usize = 1 << 20;
/// Largest block accepted (pcapng blocks of one packet of a 256 KiB
/// snap length, with room to spare).
const MAX_BUFFER: usize = 64 << 20;

#[derive(Debug, Clone, Copy)]
struct Interface {
    linktype: i32,
    /// Timestamp units per second.
    resolution: u64,
    offset_s: i64,
}

fn ts_to_ns(units: u64, resolution: u64) -> u64 {
    let secs = units / resolution;
    let frac = units % resolution;
    secs * 1_000_000_000 + (frac as u128 * 1_000_000_000 / resolution as u128) as u64
}

/// Why a capture could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    /// Opening or reading the file failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Not a pcap/pcapng file, or a damaged one.
    #[error("capture format: {0}")]
    Format(String),
}

/// Calls `f` for every packet of the capture read from `input`, in file
/// order. `f` returns `false` to stop early. Returns the number of frames.
pub fn for_each_packet<R, F>(input: R, mut f: F) -> Result<u64, CaptureError>
where
    R: Read + Send,
    F: FnMut(&RawPacket<'_>) -> bool,
{
    let mut capacity = INITIAL_BUFFER;
    let mut reader =
        create_reader(capacity, input).map_err(|e| CaptureError::Format(format!("{e:?}")))?;
    let mut frame = 0u64;
    // Legacy pcap: one link type and resolution for the file.
    let mut legacy = Interface {
        linktype: 1,
        resolution: 1_000_000,
        offset_s: 0,
    };
    let mut ifaces: Vec<Interface> = Vec::new();
    let mut stalled = false;
    loop {
        match reader.next() {
            Ok((used, block)) => {
                stalled = false;
                let mut stop = false;
                match block {
                    PcapBlockOwned::LegacyHeader(h) => {
                        legacy.linktype = h.network.0;
                        legacy.resolution = if h.is_nanosecond_precision() {
                            1_000_000_000
                        } else {
                            1_000_000
                        };
                    }
                    PcapBlockOwned::Legacy(b) => {
                        frame += 1;
                        let units = b.ts_sec as u64 * legacy.resolution + b.ts_usec as u64;
                        let p = RawPacket {
                            frame,
                            ts_ns: ts_to_ns(units, legacy.resolution),
                            linktype: legacy.linktype,
                            data: b.data,
                            orig_len: b.origlen,
                        };
                        stop = !f(&p);
                    }
                    PcapBlockOwned::NG(Block::SectionHeader(_)) => ifaces.clear(),
                    PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                        ifaces.push(Interface {
                            linktype: idb.linktype.0,
                            resolution: idb.ts_resolution().unwrap_or(1_000_000),
                            offset_s: idb.ts_offset(),
                        });
                    }
                    PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                        frame += 1;
                        let iface = ifaces.get(epb.if_id as usize).copied().ok_or_else(|| {
                            CaptureError::Format(format!(
                                "frame {frame}: packet on undeclared interface {}",
                                epb.if_id
                            ))
                        })?;
                        let units = ((epb.ts_high as u64) << 32) | epb.ts_low as u64;
                        let ns = ts_to_ns(units, iface.resolution) as i128
                            + iface.offset_s as i128 * 1_000_000_000;
                        let p = RawPacket {
                            frame,
                            ts_ns: ns.max(0) as u64,
                            linktype: iface.linktype,
                            data: epb.packet_data(),
                            orig_len: epb.origlen,
                        };
                        stop = !f(&p);
                    }
                    PcapBlockOwned::NG(Block::SimplePacket(spb)) => {
                        frame += 1;
                        let iface = ifaces.first().copied().ok_or_else(|| {
                            CaptureError::Format(format!(
                                "frame {frame}: packet before any interface"
                            ))
                        })?;
                        let p = RawPacket {
                            frame,
                            // Simple packet blocks carry no timestamp.
                            ts_ns: 0,
                            linktype: iface.linktype,
                            data: spb.packet_data(),
                            orig_len: spb.origlen,
                        };
                        stop = !f(&p);
                    }
                    PcapBlockOwned::NG(_) => {}
                }
                reader.consume(used);
                if stop {
                    return Ok(frame);
                }
            }
            Err(PcapError::Eof) => return Ok(frame),
            Err(PcapError::Incomplete(_)) => {
                if stalled {
                    // A refill brought nothing new: the block is larger
                    // than the buffer, or the file ends inside it.
                    if capacity >= MAX_BUFFER {
                        return Err(CaptureError::Format(format!(
                            "after frame {frame}: a block larger than {MAX_BUFFER} bytes, or a truncated file"
                        )));
                    }
                    capacity *= 4;
                    reader.grow(capacity);
                }
                reader
                    .refill()
                    .map_err(|e| CaptureError::Format(format!("{e:?}")))?;
                stalled = true;
            }
            Err(PcapError::UnexpectedEof) => {
                return Err(CaptureError::Format(format!(
                    "the file ends inside a block after frame {frame} (truncated capture)"
                )))
            }
            Err(e) => {
                return Err(CaptureError::Format(format!("after frame {frame}: {e:?}")));
            }
        }
    }
}
