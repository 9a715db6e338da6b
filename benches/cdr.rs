//! CDR encode/decode throughput of 64 KiB payloads — through serde (the
//! static path), through the fixed-layout struct path (static, for structs
//! of primitives), and through TypeCode-driven `Value`s (the dynamic path)
//! — in host and swapped byte order, next to a plain memcpy of the same
//! 64 KiB measured in the same group as the baseline.
//!
//! Run: `cargo bench -p iiop-benches --bench cdr -- --warm-up-time 1
//! --measurement-time 2`, then `python3 benches/ratios.py` for the ratio
//! of each case's throughput to memcpy's. One function per case, so
//! further variants (e.g. the dynamic `Value` path) are one more call in
//! `cdr`.

use std::hint::black_box;

use bytes::BytesMut;
use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use iiop_benches::*;
use iiop_cdr::{CharCodeSet, FixedLayout, Options, Reader, TcStruct, TypeCode, Value, Writer};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// memcpy of PAYLOAD_BYTES: the baseline every ratio is taken against.
fn memcpy(g: &mut BenchmarkGroup<'_, WallTime>) {
    let src = vec![0x5au8; PAYLOAD_BYTES];
    let mut dst = vec![0u8; PAYLOAD_BYTES];
    g.throughput(Throughput::Bytes(PAYLOAD_BYTES as u64));
    g.bench_function("memcpy", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(&src));
            black_box(&mut dst);
        })
    });
}

/// Encode `value` with serde into a reused buffer, both byte orders.
fn encode_static<T: Serialize>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    ty: &str,
    value: &T,
    wire_bytes: usize,
) {
    g.throughput(Throughput::Bytes(wire_bytes as u64));
    for (order, oname) in orders() {
        let mut buf = BytesMut::with_capacity(wire_bytes + 64);
        g.bench_function(format!("encode_static/{ty}/{oname}"), |b| {
            b.iter(|| {
                buf.clear();
                let mut w = Writer::new(&mut buf, order);
                iiop_cdr::to_writer(&mut w, black_box(value)).expect("encodes");
                black_box(&buf);
            })
        });
    }
}

/// Decode with serde from bytes encoded beforehand, both byte orders.
fn decode_static<T: Serialize + DeserializeOwned>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    ty: &str,
    value: &T,
    wire_bytes: usize,
) {
    g.throughput(Throughput::Bytes(wire_bytes as u64));
    for (order, oname) in orders() {
        let bytes = encoded(value, order);
        g.bench_function(format!("decode_static/{ty}/{oname}"), |b| {
            b.iter(|| {
                let v: T = iiop_cdr::from_bytes(black_box(&bytes[..]), order).expect("decodes");
                black_box(v);
            })
        });
    }
}

fn static_case<T: Serialize + DeserializeOwned>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    ty: &str,
    value: &T,
    wire_bytes: usize,
) {
    encode_static(g, ty, value, wire_bytes);
    decode_static(g, ty, value, wire_bytes);
}

/// Encode and decode a fixed-layout struct sequence at precomputed offsets.
fn fixed_case<T: FixedLayout>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    ty: &str,
    value: &[T],
    wire_bytes: usize,
) {
    g.throughput(Throughput::Bytes(wire_bytes as u64));
    for (order, oname) in orders() {
        let mut buf = BytesMut::with_capacity(wire_bytes + 64);
        // As in `checked_case`: the decoding case's input, whatever runs.
        iiop_cdr::write_fixed_seq(&mut Writer::new(&mut buf, order), value).expect("encodes");
        let wire = buf.clone().freeze();
        g.bench_function(format!("encode_fixed/{ty}/{oname}"), |b| {
            b.iter(|| {
                buf.clear();
                iiop_cdr::write_fixed_seq(&mut Writer::new(&mut buf, order), black_box(value))
                    .expect("encodes");
                black_box(&buf);
            })
        });
        g.bench_function(format!("decode_fixed/{ty}/{oname}"), |b| {
            b.iter(|| {
                let v: Vec<T> =
                    iiop_cdr::read_fixed_seq(&mut Reader::new(black_box(&wire[..]), order))
                        .expect("decodes");
                black_box(v);
            })
        });
    }
}

/// Encode and decode a struct sequence through the checked fast path the
/// servers use (layout from the TypeCode; serde's char and boolean checks),
/// under both char code sets: compare with the unchecked `*_fixed` cases.
fn checked_case<T: TcStruct>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    ty: &str,
    value: &[T],
    wire_bytes: usize,
) {
    g.throughput(Throughput::Bytes(wire_bytes as u64));
    for (order, oname) in orders() {
        for (cs, csname) in [(CharCodeSet::Latin1, "latin1"), (CharCodeSet::Utf8, "utf8")] {
            let opts = Options {
                char_set: cs,
                ..Options::default()
            };
            let mut buf = BytesMut::with_capacity(wire_bytes + 64);
            // Encoded here, so that the decoding case has its input when
            // a filter leaves the encoding case out.
            iiop_cdr::write_struct_seq(&mut Writer::new(&mut buf, order).options(opts), value)
                .expect("encodes");
            let wire = buf.clone().freeze();
            g.bench_function(format!("encode_checked/{ty}/{oname}/{csname}"), |b| {
                b.iter(|| {
                    buf.clear();
                    iiop_cdr::write_struct_seq(
                        &mut Writer::new(&mut buf, order).options(opts),
                        black_box(value),
                    )
                    .expect("encodes");
                    black_box(&buf);
                })
            });
            g.bench_function(format!("decode_checked/{ty}/{oname}/{csname}"), |b| {
                b.iter(|| {
                    let v: Vec<T> = iiop_cdr::read_struct_seq(
                        &mut Reader::new(black_box(&wire[..]), order).options(opts),
                    )
                    .expect("decodes");
                    black_box(v);
                })
            });
        }
    }
}

/// Encode and decode through a run-time TypeCode (the DII/DSI analogue).
fn dynamic_case<T: Serialize>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    ty: &str,
    tc: &TypeCode,
    value: &T,
    wire_bytes: usize,
) {
    g.throughput(Throughput::Bytes(wire_bytes as u64));
    for (order, oname) in orders() {
        let bytes = encoded(value, order);
        let v = Value::decode(tc, &mut Reader::new(&bytes, order)).expect("decodes");
        let mut buf = BytesMut::with_capacity(wire_bytes + 64);
        g.bench_function(format!("encode_dynamic/{ty}/{oname}"), |b| {
            b.iter(|| {
                buf.clear();
                black_box(&v)
                    .encode(tc, &mut Writer::new(&mut buf, order))
                    .expect("encodes");
                black_box(&buf);
            })
        });
        g.bench_function(format!("decode_dynamic/{ty}/{oname}"), |b| {
            b.iter(|| {
                black_box(
                    Value::decode(tc, &mut Reader::new(black_box(&bytes[..]), order))
                        .expect("decodes"),
                )
            })
        });
    }
}

fn cdr(c: &mut Criterion) {
    let mut g = c.benchmark_group("cdr");
    memcpy(&mut g);
    let s = shorts();
    static_case(&mut g, "short", &s, s.len() * 2);
    let ch = chars();
    static_case(&mut g, "char", &ch, ch.0.len());
    let wc = wchars();
    static_case(&mut g, "wchar", &wc, wc.len() * WCHAR_WIRE_BYTES);
    let ws = wstring();
    static_case(&mut g, "wstring", &ws, PAYLOAD_BYTES);
    let l = longs();
    static_case(&mut g, "long", &l, l.len() * 4);
    let o = octets();
    static_case(&mut g, "octet", &o, o.0.len());
    let d = doubles();
    static_case(&mut g, "double", &d, d.len() * 8);
    let p = perf_structs();
    static_case(&mut g, "perfstruct", &p, p.len() * PERF_STRUCT_STRIDE);
    fixed_case(&mut g, "perfstruct", &p, p.len() * PERF_STRUCT_STRIDE);
    checked_case(&mut g, "perfstruct", &p, p.len() * PERF_STRUCT_STRIDE);
    use iiop_bench_idl::bench::{elements::Elem, types::seq_typecode};
    dynamic_case(
        &mut g,
        "perfstruct",
        &seq_typecode(Elem::PerfStruct),
        &p,
        p.len() * PERF_STRUCT_STRIDE,
    );
    dynamic_case(
        &mut g,
        "double",
        &seq_typecode(Elem::Double),
        &d,
        d.len() * 8,
    );
    g.finish();
}

criterion_group!(benches, cdr);
criterion_main!(benches);
