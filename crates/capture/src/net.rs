//! From a captured frame to a TCP segment: the link layer (Ethernet with
//! VLAN tags, Linux cooked v1 and v2, BSD/Linux loopback, raw IP), IPv4 or
//! IPv6, then the TCP header. Everything else is skipped with a reason.

use std::net::{IpAddr, SocketAddr};

use etherparse::{NetSlice, SlicedPacket, TransportSlice};

/// LINKTYPE_NULL: 4-byte host-order address family, then IP.
pub const LINKTYPE_NULL: i32 = 0;
/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: i32 = 1;
/// LINKTYPE_RAW: IP without link header.
pub const LINKTYPE_RAW: i32 = 101;
/// LINKTYPE_LOOP (OpenBSD loopback): 4-byte network-order family, then IP.
pub const LINKTYPE_LOOP: i32 = 108;
/// LINKTYPE_LINUX_SLL: 16-byte Linux cooked header.
pub const LINKTYPE_LINUX_SLL: i32 = 113;
/// LINKTYPE_IPV4.
pub const LINKTYPE_IPV4: i32 = 228;
/// LINKTYPE_IPV6.
pub const LINKTYPE_IPV6: i32 = 229;
/// LINKTYPE_LINUX_SLL2: 20-byte Linux cooked header v2.
pub const LINKTYPE_LINUX_SLL2: i32 = 276;

/// A TCP segment, borrowed from the frame.
#[derive(Debug, Clone, Copy)]
pub struct Segment<'a> {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub seq: u32,
    pub syn: bool,
    pub fin: bool,
    pub rst: bool,
    pub payload: &'a [u8],
}

/// Why a frame gave no TCP segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Skip {
    /// A link type we do not read.
    LinkType,
    /// Not IPv4/IPv6 (ARP …), or not TCP (UDP, ICMP …).
    NotTcp,
    /// Headers cut short (snap length) or malformed.
    Malformed,
    /// An IP fragment (TCP over fragmented IP is not reassembled).
    IpFragment,
}

impl Skip {
    /// Short name for counters.
    pub fn name(self) -> &'static str {
        match self {
            Skip::LinkType => "unsupported link type",
            Skip::NotTcp => "not TCP",
            Skip::Malformed => "malformed or truncated headers",
            Skip::IpFragment => "IP fragment",
        }
    }
}

/// Parses one frame of link type `linktype`.
pub fn parse(linktype: i32, data: &[u8]) -> Result<Segment<'_>, Skip> {
    let sliced = match linktype {
        LINKTYPE_ETHERNET => SlicedPacket::from_ethernet(data),
        LINKTYPE_LINUX_SLL => SlicedPacket::from_linux_sll(data),
        LINKTYPE_LINUX_SLL2 => SlicedPacket::from_ip(data.get(20..).ok_or(Skip::Malformed)?),
        LINKTYPE_NULL | LINKTYPE_LOOP => {
            SlicedPacket::from_ip(data.get(4..).ok_or(Skip::Malformed)?)
        }
        LINKTYPE_RAW | LINKTYPE_IPV4 | LINKTYPE_IPV6 => SlicedPacket::from_ip(data),
        _ => return Err(Skip::LinkType),
    }
    .map_err(|_| Skip::Malformed)?;
    let (src_ip, dst_ip, fragmented): (IpAddr, IpAddr, bool) = match &sliced.net {
        Some(NetSlice::Ipv4(v4)) => {
            let h = v4.header();
            (
                h.source_addr().into(),
                h.destination_addr().into(),
                v4.is_payload_fragmented(),
            )
        }
        Some(NetSlice::Ipv6(v6)) => {
            let h = v6.header();
            (
                h.source_addr().into(),
                h.destination_addr().into(),
                v6.is_payload_fragmented(),
            )
        }
        _ => return Err(Skip::NotTcp),
    };
    if fragmented {
        return Err(Skip::IpFragment);
    }
    match &sliced.transport {
        Some(TransportSlice::Tcp(t)) => Ok(Segment {
            src: SocketAddr::new(src_ip, t.source_port()),
            dst: SocketAddr::new(dst_ip, t.destination_port()),
            seq: t.sequence_number(),
            syn: t.syn(),
            fin: t.fin(),
            rst: t.rst(),
            payload: t.payload(),
        }),
        _ => Err(Skip::NotTcp),
    }
}
