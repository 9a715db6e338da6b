//! GIOP 1.1 Fragments laid out the way omniORB 4.2 sends them: each
//! Fragment's data aligned from that Fragment's own 12-byte header; a
//! primitive that does not fit after its padding goes to the next Fragment
//! and is aligned again there, the padding sent at the end of the piece
//! before (omniORB, seen on the wire) or not (another sender's choice the
//! spec allows just as well). The reassembled body must
//! decode to the exact values through serde (per element and through the
//! packed `Seq` fast path) and through `Value` (packed and struct-row fast
//! paths), in both byte orders.

use bytes::{Bytes, BytesMut};
use iiop_cdr::{from_reader, ByteOrder, Options, Reader, Seq, TypeCode, Value};
use iiop_giop::codec::Decoder;
use iiop_giop::message::Message;
use serde::Deserialize;

/// Builds one GIOP 1.1 Reply split into a first message and Fragments of
/// at most `limit` bytes each (headers included): a primitive that does
/// not fit ends the piece (after its padding when `pad_then_cut` and the
/// padding fits, as omniORB does), and is aligned again in the next
/// Fragment, relative to that Fragment.
struct Frag11 {
    order: ByteOrder,
    limit: usize,
    pad_then_cut: bool,
    done: Vec<Vec<u8>>,
    cur: Vec<u8>,
}

impl Frag11 {
    fn new(order: ByteOrder, limit: usize, pad_then_cut: bool) -> Self {
        Frag11 {
            order,
            limit,
            pad_then_cut,
            done: Vec::new(),
            cur: vec![0; 12],
        }
    }

    /// One primitive, its wire bytes given; aligned to its size.
    fn put(&mut self, wire: &[u8]) {
        let a = wire.len();
        let pad = self.cur.len().wrapping_neg() & (a - 1);
        if self.cur.len() + pad + a > self.limit {
            if self.pad_then_cut && self.cur.len() + pad <= self.limit {
                self.cur.extend(std::iter::repeat_n(0x5A, pad));
            }
            self.done
                .push(std::mem::replace(&mut self.cur, vec![0; 12]));
        }
        let pad = self.cur.len().wrapping_neg() & (a - 1);
        self.cur.extend(std::iter::repeat_n(0xA5, pad));
        self.cur.extend_from_slice(wire);
    }

    fn u32(&mut self, v: u32) {
        let b = match self.order {
            ByteOrder::Big => v.to_be_bytes(),
            ByteOrder::Little => v.to_le_bytes(),
        };
        self.put(&b);
    }
    fn i16(&mut self, v: i16) {
        let b = match self.order {
            ByteOrder::Big => v.to_be_bytes(),
            ByteOrder::Little => v.to_le_bytes(),
        };
        self.put(&b);
    }
    fn i32(&mut self, v: i32) {
        self.u32(v as u32);
    }
    fn f64(&mut self, v: f64) {
        let b = match self.order {
            ByteOrder::Big => v.to_be_bytes(),
            ByteOrder::Little => v.to_le_bytes(),
        };
        self.put(&b);
    }

    /// The wire bytes of all pieces, headers filled in.
    fn finish(mut self) -> (Vec<u8>, usize) {
        self.done.push(self.cur);
        let n = self.done.len();
        let mut out = Vec::new();
        for (i, mut m) in self.done.into_iter().enumerate() {
            let size = (m.len() - 12) as u32;
            let little = self.order == ByteOrder::Little;
            m[..4].copy_from_slice(b"GIOP");
            m[4] = 1;
            m[5] = 1;
            m[6] = little as u8 | if i + 1 < n { 2 } else { 0 };
            m[7] = if i == 0 { 1 } else { 7 }; // Reply, then Fragment
            m[8..12].copy_from_slice(&if little {
                size.to_le_bytes()
            } else {
                size.to_be_bytes()
            });
            out.extend_from_slice(&m);
        }
        (out, n)
    }
}

const DOUBLES: usize = 37;
const STRUCTS: usize = 29;
const MARKER: u32 = 0xC0FF_EE11;

fn double(i: usize) -> f64 {
    i as f64 * 1.25 - 3.0
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
struct PerfStruct {
    s: i16,
    c: char,
    l: i32,
    o: u8,
    d: f64,
}

fn perf(i: usize) -> PerfStruct {
    PerfStruct {
        s: i as i16 * 3 - 7,
        c: (b'a' + (i % 26) as u8) as char,
        l: i as i32 * 100_003 - 5,
        o: (i * 7) as u8,
        d: i as f64 * 0.5 + 0.25,
    }
}

/// A Reply whose body is sequence<double>, sequence<PerfStruct> and an
/// unsigned long, fragmented at `limit`; returns the decoded message and
/// the number of pieces on the wire.
fn reply(order: ByteOrder, limit: usize, pad_then_cut: bool) -> (iiop_giop::message::Reply, usize) {
    let mut f = Frag11::new(order, limit, pad_then_cut);
    f.u32(0); // no service contexts
    f.u32(42); // request id
    f.u32(0); // NO_EXCEPTION
    f.u32(DOUBLES as u32);
    for i in 0..DOUBLES {
        f.f64(double(i));
    }
    f.u32(STRUCTS as u32);
    for i in 0..STRUCTS {
        let p = perf(i);
        f.i16(p.s);
        f.put(&[p.c as u8]);
        f.i32(p.l);
        f.put(&[p.o]);
        f.f64(p.d);
    }
    f.u32(MARKER);
    let (wire, pieces) = f.finish();
    let mut d = Decoder::default();
    let mut buf = BytesMut::from(&wire[..]);
    let frame = d.decode(&mut buf).unwrap().expect("one complete message");
    assert!(buf.is_empty());
    assert_eq!(frame.segments.as_ref().map_or(0, |s| s.len()), pieces - 1);
    match Message::decode_frame(frame, Options::default()).unwrap() {
        Message::Reply(r) => {
            assert_eq!(r.header.request_id, 42);
            (r, pieces)
        }
        other => panic!("not a Reply: {other:?}"),
    }
}

fn expected_values() -> (Value, Value) {
    let doubles = Value::DoubleSeq((0..DOUBLES).map(double).collect());
    let ps: Vec<PerfStruct> = (0..STRUCTS).map(perf).collect();
    let structs = Value::StructSeq(vec![
        Value::ShortSeq(ps.iter().map(|p| p.s).collect()),
        Value::CharSeq(ps.iter().map(|p| p.c as u8).collect()),
        Value::LongSeq(ps.iter().map(|p| p.l).collect()),
        Value::OctetSeq(Bytes::from(ps.iter().map(|p| p.o).collect::<Vec<u8>>())),
        Value::DoubleSeq(ps.iter().map(|p| p.d).collect()),
    ]);
    (doubles, structs)
}

fn perf_tc() -> TypeCode {
    TypeCode::sequence(
        TypeCode::struct_tc(
            "IDL:Bench/PerfStruct:1.0",
            "PerfStruct",
            vec![
                ("s", TypeCode::short()),
                ("c", TypeCode::char()),
                ("l", TypeCode::long()),
                ("o", TypeCode::octet()),
                ("d", TypeCode::double()),
            ],
        ),
        0,
    )
}

/// Fragment sizes putting boundaries at every offset modulo 8, and one
/// large enough not to fragment at all.
const LIMITS: [usize; 9] = [40, 41, 43, 46, 48, 53, 64, 101, 4096];

/// Both byte orders, every limit, padding sent before the cut or not.
fn cases() -> impl Iterator<Item = (ByteOrder, usize, bool)> {
    [ByteOrder::Big, ByteOrder::Little]
        .into_iter()
        .flat_map(|o| {
            LIMITS
                .into_iter()
                .flat_map(move |l| [(o, l, true), (o, l, false)])
        })
}

#[test]
fn serde_decodes_omniorb_11_fragments_exactly() {
    let doubles: Vec<f64> = (0..DOUBLES).map(double).collect();
    let structs: Vec<PerfStruct> = (0..STRUCTS).map(perf).collect();
    for (order, limit, omni) in cases() {
        let (r, pieces) = reply(order, limit, omni);
        assert_eq!(pieces > 1, limit < 4096, "{limit}");
        // The packed fast path (Seq) and per-element reads (Vec).
        let mut rd = r.body.reader(Options::default());
        let d: Seq<f64> = from_reader(&mut rd).unwrap();
        assert_eq!(d.0, doubles, "{order:?} {limit} {omni}");
        let p: Vec<PerfStruct> = from_reader(&mut rd).unwrap();
        assert_eq!(p, structs, "{order:?} {limit} {omni}");
        assert_eq!(rd.read_u32().unwrap(), MARKER);
        rd.expect_end().unwrap();
        let mut rd = r.body.reader(Options::default());
        let d: Vec<f64> = from_reader(&mut rd).unwrap();
        assert_eq!(d, doubles, "{order:?} {limit} {omni}");
        let p: Vec<(i16, char, i32, u8, f64)> = from_reader(&mut rd).unwrap();
        assert_eq!(p.len(), STRUCTS);
        assert_eq!(p[STRUCTS - 1], (77, 'c', 2_800_079, 196, 14.25));
        assert_eq!(rd.read_u32().unwrap(), MARKER);
        rd.expect_end().unwrap();
    }
}

#[test]
fn values_decode_omniorb_11_fragments_exactly() {
    let (doubles, structs) = expected_values();
    for (order, limit, omni) in cases() {
        let (r, _) = reply(order, limit, omni);
        let mut rd = r.body.reader(Options::default());
        let d = Value::decode(&TypeCode::sequence(TypeCode::double(), 0), &mut rd).unwrap();
        assert_eq!(d, doubles, "{order:?} {limit} {omni}");
        let p = Value::decode(&perf_tc(), &mut rd).unwrap();
        assert_eq!(p, structs, "{order:?} {limit} {omni}");
        assert_eq!(rd.read_u32().unwrap(), MARKER);
        rd.expect_end().unwrap();
    }
}

#[test]
fn one_stream_reading_of_the_same_bytes_is_wrong() {
    // Guard for the tests above: without the fragment starts, the values
    // after a boundary at 0 mod 8 of the stream come out shifted.
    let (r, _) = reply(ByteOrder::Big, 48, true);
    assert!(r.body.segments.is_some());
    let mut rd = Reader::from_bytes(&r.body.bytes, r.body.order).with_base(r.body.offset);
    let d: Result<Seq<f64>, _> = from_reader(&mut rd);
    assert_ne!(
        d.map(|d| d.0).ok(),
        Some((0..DOUBLES).map(double).collect::<Vec<_>>())
    );
}
