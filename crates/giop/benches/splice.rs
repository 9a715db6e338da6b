//! Marshalling a Request with a large `sequence<octet>` body into the
//! output queue, copied vs spliced (what the client does per call before
//! the socket write), without I/O: the user-space cost splicing removes.

use bytes::{Bytes, BytesMut};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use iiop_cdr::{ByteOrder, Octets, Options, Splices};
use iiop_giop::message::{begin_request, RequestHead, ResponseMode, TargetAddress};
use iiop_giop::Version;

fn marshal(c: &mut Criterion) {
    let target = TargetAddress::Key(Bytes::from_static(b"Bench"));
    let mut g = c.benchmark_group("request_octets_into_queue");
    for size in [1024usize, 64 * 1024, 128 * 1024] {
        let data = Octets(Bytes::from(vec![7u8; size]));
        for (name, cutoff) in [("copied", None), ("spliced", Some(16 * 1024))] {
            let mut buf = BytesMut::with_capacity(size + 256);
            // Copied: the writer without a splice list (the old path).
            let mut sp = Splices::new(cutoff.unwrap_or(usize::MAX));
            g.bench_with_input(BenchmarkId::new(name, size), &data, |b, data| {
                b.iter(|| {
                    buf.clear();
                    sp.take();
                    let head = RequestHead {
                        request_id: black_box(7),
                        response: ResponseMode::Oneway,
                        target: &target,
                        operation: "send_octet_seq",
                        contexts: &[],
                    };
                    let p = begin_request(
                        &mut buf,
                        Version::V1_2,
                        ByteOrder::NATIVE,
                        Options::default(),
                        &head,
                    )
                    .unwrap();
                    if cutoff.is_some() {
                        let mut w = p.writer_spliced(&mut buf, &mut sp);
                        iiop_cdr::to_writer(&mut w, data).unwrap();
                        black_box(p.finish_spliced(&mut buf, &sp).unwrap());
                    } else {
                        iiop_cdr::to_writer(&mut p.writer(&mut buf), data).unwrap();
                        black_box(p.finish(&mut buf).unwrap());
                    }
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, marshal);
criterion_main!(benches);
