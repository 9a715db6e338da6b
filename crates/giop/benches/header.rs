//! Encode + decode of a GIOP 1.2 Request header and Reply header: the
//! per-call protocol overhead our client and server pay, without I/O.

use bytes::{Bytes, BytesMut};
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use iiop_cdr::{ByteOrder, Options};
use iiop_giop::codec::Decoder;
use iiop_giop::message::{
    begin_reply, begin_request, Message, ReplyStatus, RequestHead, ResponseMode, TargetAddress,
};
use iiop_giop::Version;

fn request(c: &mut Criterion) {
    let target = TargetAddress::Key(Bytes::from_static(b"Bench"));
    let mut buf = BytesMut::with_capacity(256);
    let mut dec = Decoder::default();
    c.bench_function("request_header_encode_decode", |b| {
        b.iter(|| {
            buf.clear();
            let head = RequestHead {
                request_id: black_box(7),
                response: ResponseMode::Twoway,
                target: &target,
                operation: "echo_long",
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
            p.writer(&mut buf).write_u32(42);
            p.finish(&mut buf).unwrap();
            let f = dec.decode(&mut buf).unwrap().unwrap();
            let m = Message::decode(&f.header, f.payload, Options::default()).unwrap();
            black_box(m);
        })
    });
}

fn reply(c: &mut Criterion) {
    let mut buf = BytesMut::with_capacity(256);
    let mut dec = Decoder::default();
    c.bench_function("reply_header_encode_decode", |b| {
        b.iter(|| {
            buf.clear();
            let p = begin_reply(
                &mut buf,
                Version::V1_2,
                ByteOrder::NATIVE,
                Options::default(),
                black_box(7),
                ReplyStatus::NoException,
                &[],
            )
            .unwrap();
            p.writer(&mut buf).write_u32(42);
            p.finish(&mut buf).unwrap();
            let f = dec.decode(&mut buf).unwrap().unwrap();
            let m = Message::decode(&f.header, f.payload, Options::default()).unwrap();
            black_box(m);
        })
    });
}

criterion_group!(benches, request, reply);
criterion_main!(benches);
