//! GIOP codec: arbitrary bytes as a stream of GIOP messages. The decoder
//! (with small limits) and `Message::decode` must never panic or allocate
//! without bound. Every message that decodes is re-encoded with our
//! encoders and must decode to the same message (where the encoding is
//! canonical: 1.0/1.1 principals, SYNC_WITH_SERVER, non-ASCII operation
//! names and unaligned 1.2 bodies have no canonical re-encoding and are
//! skipped); 1.2 Requests/Replies are also fragmented
//! and reassembled, and must come back byte for byte. Reassembled GIOP 1.1
//! messages (realigned per Fragment) are decoded but not compared.
#![no_main]

use bytes::BytesMut;
use iiop_giop::codec::{fragment_message, CodecConfig, Decoder, Frame};
use iiop_giop::context::default_options;
use iiop_giop::header::{Header, MsgType, HEADER_LEN};
use iiop_giop::message::{
    encode_cancel_request, encode_empty, encode_locate_reply, encode_locate_request, encode_reply,
    encode_request, Message, RequestHead, ResponseMode,
};
use libfuzzer_sys::fuzz_target;

const LIMITS: CodecConfig = CodecConfig {
    max_message_size: 1 << 16,
    max_reassembled_size: 1 << 17,
};

fuzz_target!(|data: &[u8]| {
    let mut d = Decoder::new(LIMITS);
    let mut buf = BytesMut::from(data);
    // Each decoded frame consumes at least a 12-byte header: bounded.
    while let Ok(Some(f)) = d.decode(&mut buf) {
        check(f);
    }
});

/// Empty bodies have no alignment of their own: ignore their offset.
fn norm(m: Message) -> Message {
    match m {
        Message::Request(mut r) if r.body.bytes.is_empty() => {
            r.body.offset = 0;
            Message::Request(r)
        }
        Message::Reply(mut r) if r.body.bytes.is_empty() => {
            r.body.offset = 0;
            Message::Reply(r)
        }
        m => m,
    }
}

fn check(f: Frame) {
    let v = f.header.version;
    let order = f.header.order;
    let opts = default_options(v);
    let segmented = f.segments.is_some();
    let Ok(m) = Message::decode_segmented(&f.header, f.payload.clone(), f.segments, opts) else {
        return;
    };
    // A reassembled 1.1 message realigns at each Fragment: it has no
    // single-message encoding to compare with.
    if segmented {
        return;
    }
    // A 1.2 body must start 8-aligned; we also accept one that does not
    // (when the padding would run past the message), which we never write.
    let unaligned = |b: &iiop_giop::message::Body| b.offset % 8 != 0 && !b.bytes.is_empty();
    match &m {
        Message::Request(r) if v.is_12() && unaligned(&r.body) => return,
        Message::Reply(r) if v.is_12() && unaligned(&r.body) => return,
        _ => {}
    }
    let mut out = BytesMut::new();
    let encoded = match &m {
        Message::Request(r) => {
            let h = &r.header;
            if !r.version.is_12()
                && (!h.principal.is_empty() || h.response == ResponseMode::SyncWithServer)
            {
                return;
            }
            let head = RequestHead {
                request_id: h.request_id,
                response: h.response,
                target: &h.target,
                operation: h.operation(),
                contexts: &h.contexts.0,
            };
            // Operation names are IDL identifiers (ASCII). Others are read
            // as UTF-8 bytes but written through the negotiated char set,
            // so they have no canonical re-encoding.
            if !h.operation.is_ascii() {
                return;
            }
            encode_request(&mut out, v, order, opts, &head, |w| {
                w.write_bytes(&r.body.bytes);
                Ok(())
            })
            .is_ok()
        }
        Message::Reply(r) => encode_reply(
            &mut out,
            v,
            order,
            opts,
            r.header.request_id,
            r.header.status,
            &r.header.contexts.0,
            |w| {
                w.write_bytes(&r.body.bytes);
                Ok(())
            },
        )
        .is_ok(),
        Message::CancelRequest { request_id } => {
            encode_cancel_request(&mut out, v, order, *request_id).is_ok()
        }
        Message::LocateRequest(l) => {
            encode_locate_request(&mut out, v, order, l.request_id, &l.target).is_ok()
        }
        Message::LocateReply(l) => encode_locate_reply(&mut out, v, order, l).is_ok(),
        Message::CloseConnection => {
            encode_empty(&mut out, v, order, MsgType::CloseConnection);
            true
        }
        Message::MessageError => {
            encode_empty(&mut out, v, order, MsgType::MessageError);
            true
        }
    };
    if !encoded {
        return;
    }
    let h = Header::parse(&out).expect("our header parses");
    assert_eq!(h.total_len(), out.len(), "size field matches");
    let payload = out.clone().freeze().slice(HEADER_LEN..);
    let again = Message::decode(&h, payload, opts).expect("our encoding decodes");
    assert_eq!(norm(again), norm(m.clone()), "re-encoded message differs");
    // Fragmenting (1.2) and reassembling gives the same bytes back.
    if v.is_12() && matches!(m, Message::Request(_) | Message::Reply(_)) {
        let mut frags = BytesMut::new();
        fragment_message(&out, 48, &mut frags).expect("fragments");
        let mut d = Decoder::new(CodecConfig {
            max_message_size: out.len(),
            max_reassembled_size: out.len(),
        });
        let back = d
            .decode(&mut frags)
            .expect("reassembles")
            .expect("complete");
        assert_eq!(back.header, h);
        assert_eq!(&back.payload[..], &out[HEADER_LEN..]);
        assert!(frags.is_empty());
    }
}
