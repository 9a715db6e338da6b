//! Writes a large synthetic capture for measuring `iiopbench pcap`'s rate
//! and memory: `cargo run --release -p iiop-capture --example big_capture
//! -- OUT.pcap [MiB] [mixed|small]` (default 1024 MiB, mixed). Eight
//! interleaved IPv4 connections over Ethernet, 1448-byte segments, GIOP
//! 1.2 twoway `echo_long` calls of 64 B to 64 KiB, `ping` calls and
//! `send_oneway_long` oneways, every reply 100-400 µs after its request.
//! `small` leaves out the echoes: a message per segment, for what the
//! analysis costs per message rather than per byte. Prints the counts a
//! correct analysis must report.

use std::io::{BufWriter, Write};
use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use iiop_capture::synth::{Flow, PcapWriter, ETHERNET};
use iiop_cdr::{ByteOrder, Options};
use iiop_giop::header::Version;
use iiop_giop::message::{encode_reply, encode_request, RequestHead};
use iiop_giop::{ReplyStatus, ResponseMode, TargetAddress};

const MSS: usize = 1448;
const CONNECTIONS: usize = 8;

fn request(id: u32, op: &str, oneway: bool, n: usize) -> Vec<u8> {
    let mut buf = BytesMut::new();
    let target = TargetAddress::Key(Bytes::from_static(b"Bench"));
    let head = RequestHead {
        request_id: id,
        response: if oneway {
            ResponseMode::Oneway
        } else {
            ResponseMode::Twoway
        },
        target: &target,
        operation: op,
        contexts: &[],
    };
    encode_request(
        &mut buf,
        Version::V1_2,
        ByteOrder::Little,
        Options::default(),
        &head,
        |w| {
            if op != "ping" {
                w.write_u32(n as u32);
                for i in 0..n {
                    w.write_i32(i as i32);
                }
            }
            Ok(())
        },
    )
    .expect("encodes");
    buf.to_vec()
}

fn reply(id: u32, n: usize) -> Vec<u8> {
    let mut buf = BytesMut::new();
    encode_reply(
        &mut buf,
        Version::V1_2,
        ByteOrder::Little,
        Options::default(),
        id,
        ReplyStatus::NoException,
        &[],
        |w| {
            if n > 0 {
                w.write_u32(n as u32);
                for i in 0..n {
                    w.write_i32(i as i32);
                }
            }
            Ok(())
        },
    )
    .expect("encodes");
    buf.to_vec()
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: big_capture OUT.pcap [MiB] [mixed|small]"))?;
    let mib: u64 = args.next().map_or(Ok(1024), |s| s.parse())?;
    let small = match args.next().as_deref() {
        None | Some("mixed") => false,
        Some("small") => true,
        Some(other) => anyhow::bail!("unknown mix {other:?}: mixed or small"),
    };
    let limit = mib << 20;
    let file = std::fs::File::create(&out)?;
    let mut w = PcapWriter::new(BufWriter::with_capacity(1 << 20, file), ETHERNET)?;
    let server: SocketAddr = "10.0.0.1:2809".parse()?;
    let mut flows: Vec<Flow> = (0..CONNECTIONS)
        .map(|i| {
            let client: SocketAddr = format!("10.0.0.2:{}", 40000 + i).parse().expect("addr");
            Flow::new(client, server, [1000 * i as u32, 7_000_000 + i as u32])
        })
        .collect();
    let mut ts: u64 = 1_700_000_000_000_000_000;
    for f in &mut flows {
        for s in f.handshake() {
            w.segment(ts, &s)?;
            ts += 1_000;
        }
    }
    // Elements per echo: 16 .. 16384 longs (64 B .. 64 KiB), cycling.
    let sizes = [16usize, 256, 1024, 4096, 16384, 64, 2048];
    let (mut echoes, mut pings, mut oneways, mut bytes) = (0u64, 0u64, 0u64, 0u64);
    let mut call = 0u64;
    // File size so far: GIOP bytes plus a pcap record and Ethernet, IPv4
    // and TCP headers (16 + 54 bytes) per packet.
    while bytes + w.packets * 70 < limit {
        let c = (call as usize) % CONNECTIONS;
        let id = (call / CONNECTIONS as u64) as u32;
        // Of every 10 calls: 7 echoes, 2 pings, 1 oneway; `small`: 2
        // pings, 1 oneway of every 3.
        let kind = if small { 7 + call % 3 } else { call % 10 };
        let (req, rep) = match kind {
            0..=6 => {
                let n = sizes[(call as usize / 10) % sizes.len()];
                echoes += 1;
                (request(id, "echo_long", false, n), Some(reply(id, n)))
            }
            7 | 8 => {
                pings += 1;
                (request(id, "ping", false, 0), Some(reply(id, 0)))
            }
            _ => {
                oneways += 1;
                (request(id, "send_oneway_long", true, 64), None)
            }
        };
        let f = &mut flows[c];
        for s in f.send(true, &req, MSS) {
            w.segment(ts, &s)?;
            ts += 2_000;
        }
        bytes += req.len() as u64;
        if let Some(rep) = rep {
            ts += 100_000 + (call % 4) * 100_000;
            for s in f.send(false, &rep, MSS) {
                w.segment(ts, &s)?;
                ts += 2_000;
            }
            bytes += rep.len() as u64;
        }
        call += 1;
    }
    let packets = w.packets;
    let mut inner = w.into_inner();
    inner.flush()?;
    let size = std::fs::metadata(&out)?.len();
    println!(
        "{out}: {size} bytes, {packets} packets, {CONNECTIONS} connections; echo_long {echoes}, ping {pings}, send_oneway_long {oneways}; GIOP {bytes} bytes"
    );
    Ok(())
}
