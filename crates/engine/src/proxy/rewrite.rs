//! What the proxy changes inside messages, as pure functions from bytes
//! to bytes: object references pointed back at the proxy (in
//! LOCATION_FORWARD / OBJECT_FORWARD bodies and in results that are one
//! object reference), the CodeSets service context removed, and GIOP 1.1
//! messages cut into Fragments. Every edit decodes the message with the
//! GIOP crate and encodes it again, so sizes, the GIOP 1.2 body padding
//! and every alignment stay right; an edit that cannot be made exactly
//! is not made (the message passes unchanged).

use std::collections::BTreeSet;

use bytes::{Bytes, BytesMut};
use iiop_cdr::ior::{IiopProfile, TaggedComponent, TAG_ALTERNATE_IIOP_ADDRESS};
use iiop_cdr::{ByteOrder, Options};
use iiop_giop::context::{default_options, ServiceContext, SC_CODE_SETS};
use iiop_giop::header::{Header, MsgType, Version, HEADER_LEN};
use iiop_giop::ior::{TAG_CSI_SEC_MECH_LIST, TAG_SSL_SEC_TRANS, TAG_TLS_SEC_TRANS};
use iiop_giop::message::{
    begin_reply, begin_request, encode_locate_reply, LocateReply, Reply, Request, RequestHead,
};
use iiop_giop::{Ior, Message, ReplyStatus};

/// Where the proxy listens for each server endpoint it fronts: the
/// driver binds a listener the first time an endpoint is asked for.
pub trait Endpoints {
    /// The proxy's `(host, port)` standing in for `host:port`, or `None`
    /// to leave references to it unchanged.
    fn proxy_for(&mut self, host: &str, port: u16) -> Option<(String, u16)>;
}

/// The operations of bench.idl whose result is one object reference (and
/// nothing else): `Perf::get_single` and `Dispatcher::next`.
pub const BENCH_REFERENCE_OPS: [&str; 2] = ["get_single", "next"];

/// Service context id of the filler a GIOP 1.0/1.1 edit adds to keep the
/// body's alignment (its high 20 bits, the vendor id, spell `IIO`): a
/// context every receiver must ignore, since it knows no such id.
pub const FILLER_CONTEXT: u32 = 0x4949_4F50;

/// Components that name another way in: dropped from rewritten profiles,
/// so a client finds only the proxy (alternate addresses; TLS and CSIv2
/// transports, which the proxy cannot see into).
const DROPPED_COMPONENTS: [u32; 4] = [
    TAG_ALTERNATE_IIOP_ADDRESS,
    TAG_SSL_SEC_TRANS,
    TAG_TLS_SEC_TRANS,
    TAG_CSI_SEC_MECH_LIST,
];

/// `ior` with every IIOP profile's address replaced by the proxy's for
/// it, and the components naming other ways in removed; `None` when no
/// profile changed (a nil reference, no IIOP profile, unknown endpoints).
pub fn rewrite_ior(ior: &Ior, map: &mut dyn Endpoints) -> Option<Ior> {
    let mut out = ior.clone();
    let mut changed = false;
    for tp in &mut out.profiles {
        let Some(Ok(mut p)) = tp.iiop() else { continue };
        let Some((host, port)) = map.proxy_for(&p.host, p.port) else {
            continue;
        };
        p.host = host;
        p.port = port;
        p.components
            .retain(|c: &TaggedComponent| !DROPPED_COMPONENTS.contains(&c.tag));
        *tp = IiopProfile::to_tagged(&p);
        changed = true;
    }
    changed.then_some(out)
}

/// What [`edit`] may change, and what it needs to know.
#[derive(Debug, Clone, Copy)]
pub struct EditWanted<'a> {
    /// Remove the CodeSets service context.
    pub strip_codesets: bool,
    /// The operation a Reply answers, when its request was seen: a
    /// result that is one object reference is rewritten for the
    /// operations in `reference_ops`.
    pub operation: Option<&'a str>,
    pub reference_ops: &'a BTreeSet<String>,
}

/// What [`edit`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Edited {
    /// CodeSets contexts removed.
    pub stripped: bool,
    /// A filler context added to keep a GIOP 1.0/1.1 body's alignment.
    pub filler: bool,
    /// An object reference pointed at the proxy.
    pub ior_rewritten: bool,
}

/// `msg` (decoded from a message with header `h`) edited as `want` says,
/// encoded whole (one piece); `None` when nothing needs changing or the
/// change cannot be made exactly.
pub fn edit(
    h: &Header,
    msg: &Message,
    want: &EditWanted<'_>,
    map: &mut dyn Endpoints,
) -> Option<(BytesMut, Edited)> {
    match msg {
        Message::Request(r) => {
            let strip = want.strip_codesets && r.header.contexts.get(SC_CODE_SETS).is_some();
            // 1.0/1.1 principals are re-encoded empty by the codec: leave
            // a request that carries one (no ORB sends one) as it is.
            if !strip || r.body.segments.is_some() || !r.header.principal.is_empty() {
                return None;
            }
            let contexts = without_code_sets(&r.header.contexts.0);
            let (buf, filler) = request_with(h, r, &contexts)?;
            Some((
                buf,
                Edited {
                    stripped: true,
                    filler,
                    ior_rewritten: false,
                },
            ))
        }
        Message::Reply(r) => {
            if r.body.segments.is_some() {
                return None;
            }
            let strip = want.strip_codesets && r.header.contexts.get(SC_CODE_SETS).is_some();
            let contexts = if strip {
                without_code_sets(&r.header.contexts.0)
            } else {
                r.header.contexts.0.clone()
            };
            let carries_ior = r.header.status.is_forward()
                || (r.header.status == ReplyStatus::NoException
                    && want
                        .operation
                        .is_some_and(|op| want.reference_ops.contains(op)));
            let new_ior = if carries_ior {
                whole_body_ior(r).and_then(|i| rewrite_ior(&i, map))
            } else {
                None
            };
            if !strip && new_ior.is_none() {
                return None;
            }
            let (buf, filler) = reply_with(h, r, &contexts, new_ior.as_ref())?;
            Some((
                buf,
                Edited {
                    stripped: strip,
                    filler,
                    ior_rewritten: new_ior.is_some(),
                },
            ))
        }
        Message::LocateReply(lr) => {
            let status = lr.status.map_forward(|ior| rewrite_ior(ior, map))?;
            let mut buf = BytesMut::new();
            let reply = LocateReply {
                request_id: lr.request_id,
                status,
            };
            encode_locate_reply(&mut buf, h.version, h.order, &reply).ok()?;
            Some((
                buf,
                Edited {
                    ior_rewritten: true,
                    ..Edited::default()
                },
            ))
        }
        _ => None,
    }
}

fn without_code_sets(contexts: &[ServiceContext]) -> Vec<ServiceContext> {
    contexts
        .iter()
        .filter(|c| c.id != SC_CODE_SETS)
        .cloned()
        .collect()
}

/// The reply's body as one object reference, when it is exactly one (only
/// alignment padding after it) and not nil.
fn whole_body_ior(r: &Reply) -> Option<Ior> {
    let mut rd = r.body.reader(Options::default());
    let ior = Ior::decode(&mut rd).ok()?;
    (rd.only_padding_left() && !ior.is_nil()).then_some(ior)
}

/// The filler contexts tried, smallest first, until a 1.0/1.1 body keeps
/// its alignment: none, then 0 to 7 bytes of data.
fn fillers() -> impl Iterator<Item = Option<ServiceContext>> {
    std::iter::once(None).chain((0..8).map(|n| {
        Some(ServiceContext {
            id: FILLER_CONTEXT,
            data: Bytes::from(vec![0u8; n]),
        })
    }))
}

/// Whether a body at message offset `new` reads as it did at `old`: the
/// same offset modulo 8 (CDR aligns to at most 8 from the header), or
/// nothing to read.
fn aligned_alike(new: usize, old: usize, body_len: usize) -> bool {
    body_len == 0 || new % 8 == old % 8
}

/// `r` encoded again with `contexts`, its body copied where it reads the
/// same; whether a filler context was needed.
fn request_with(h: &Header, r: &Request, contexts: &[ServiceContext]) -> Option<(BytesMut, bool)> {
    let opts = default_options(h.version);
    let op = std::str::from_utf8(&r.header.operation).ok()?;
    for filler in fillers() {
        let mut ctx = contexts.to_vec();
        ctx.extend(filler.clone());
        let mut buf = BytesMut::new();
        let head = RequestHead {
            request_id: r.header.request_id,
            response: r.header.response,
            target: &r.header.target,
            operation: op,
            contexts: &ctx,
        };
        let p = begin_request(&mut buf, h.version, h.order, opts, &head).ok()?;
        if !aligned_alike(
            p.body_start() - p.start(),
            r.body.offset,
            r.body.bytes.len(),
        ) {
            continue;
        }
        p.writer(&mut buf).write_bytes(&r.body.bytes);
        p.finish(&mut buf).ok()?;
        return Some((buf, filler.is_some()));
    }
    None
}

/// `r` encoded again with `contexts` and either its body copied where it
/// reads the same or `ior` as its body; whether a filler was needed.
fn reply_with(
    h: &Header,
    r: &Reply,
    contexts: &[ServiceContext],
    ior: Option<&Ior>,
) -> Option<(BytesMut, bool)> {
    let opts = default_options(h.version);
    for filler in fillers() {
        let mut ctx = contexts.to_vec();
        ctx.extend(filler.clone());
        let mut buf = BytesMut::new();
        let p = begin_reply(
            &mut buf,
            h.version,
            h.order,
            opts,
            r.header.request_id,
            r.header.status,
            &ctx,
        )
        .ok()?;
        match ior {
            Some(ior) => ior.encode(&mut p.writer(&mut buf)).ok()?,
            None => {
                if !aligned_alike(
                    p.body_start() - p.start(),
                    r.body.offset,
                    r.body.bytes.len(),
                ) {
                    continue;
                }
                p.writer(&mut buf).write_bytes(&r.body.bytes);
            }
        }
        p.finish(&mut buf).ok()?;
        return Some((buf, filler.is_some()));
    }
    None
}

/// Whether a whole message with header `h` may be cut by `fragment=N`
/// (GIOP 1.2 Request, Reply, LocateRequest, LocateReply) or, with
/// `fragment11`, as a GIOP 1.1 Request or Reply.
pub fn fragmentable(h: &Header, fragment11: bool) -> bool {
    match h.version.minor {
        2 => matches!(
            h.msg_type,
            MsgType::Request | MsgType::Reply | MsgType::LocateRequest | MsgType::LocateReply
        ),
        1 => fragment11 && matches!(h.msg_type, MsgType::Request | MsgType::Reply),
        _ => false,
    }
}

/// `msg` (one whole message) in pieces of at most `n` bytes (`n` ≥ 32):
/// GIOP 1.2 through the codec's fragmenter (every piece but the last a
/// multiple of 8 long, alignment continuing across pieces); GIOP 1.1 with
/// every cut at a message offset of 4 modulo 8, so each Fragment's data,
/// which 1.1 aligns from the Fragment's own header (first data byte at
/// offset 12), reads the same whether a receiver realigns there or reads
/// the pieces as one stream. A 1.1 cut cannot see types: an 8-byte value
/// that straddles one is split (docs/proxy.md). Messages of other
/// versions and types, and those not longer than `n`, come back whole.
pub fn fragment(msg: Bytes, n: usize, fragment11: bool) -> Vec<Bytes> {
    let Ok(h) = Header::parse(&msg) else {
        return vec![msg];
    };
    if msg.len() <= n || msg.len() != h.total_len() || !fragmentable(&h, fragment11) {
        return vec![msg];
    }
    if h.version.is_12() {
        let mut out = BytesMut::new();
        if iiop_giop::codec::fragment_message(&msg, n, &mut out).is_err() {
            return vec![msg];
        }
        return split_pieces(out.freeze());
    }
    fragment_11(&msg, &h, n)
}

/// Consecutive whole GIOP messages in `b`, each as its own `Bytes`.
fn split_pieces(b: Bytes) -> Vec<Bytes> {
    let mut v = Vec::new();
    let mut at = 0;
    while at + HEADER_LEN <= b.len() {
        let Ok(h) = Header::parse(&b[at..]) else {
            break;
        };
        let end = (at + h.total_len()).min(b.len());
        v.push(b.slice(at..end));
        at = end;
    }
    v
}

fn header_bytes(
    version: Version,
    order: ByteOrder,
    ty: MsgType,
    more: bool,
    size: usize,
) -> [u8; 12] {
    let mut h = Header::new(version, order, ty, size as u32);
    h.more_fragments = more;
    h.to_bytes()
}

/// GIOP 1.1 pieces of `msg` (see [`fragment`]).
fn fragment_11(msg: &[u8], h: &Header, n: usize) -> Vec<Bytes> {
    // The first piece ends at an offset of 4 mod 8; each Fragment then
    // carries a multiple of 8 data bytes.
    let first = n - (n - 4) % 8;
    let step = (n - HEADER_LEN) / 8 * 8;
    let mut v = Vec::new();
    let mut piece = BytesMut::with_capacity(first);
    piece.extend_from_slice(&header_bytes(
        h.version,
        h.order,
        h.msg_type,
        true,
        first - HEADER_LEN,
    ));
    piece.extend_from_slice(&msg[HEADER_LEN..first]);
    v.push(piece.freeze());
    let mut at = first;
    while at < msg.len() {
        let end = (at + step).min(msg.len());
        let more = end < msg.len();
        let mut f = BytesMut::with_capacity(HEADER_LEN + end - at);
        f.extend_from_slice(&header_bytes(
            h.version,
            h.order,
            MsgType::Fragment,
            more,
            end - at,
        ));
        f.extend_from_slice(&msg[at..end]);
        v.push(f.freeze());
        at = end;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use iiop_cdr::{Reader, Writer};
    use iiop_giop::codec::{CodecConfig, Decoder};
    use iiop_giop::context::CodeSetContext;
    use iiop_giop::message::{encode_location_forward, encode_reply, encode_request, LocateStatus};
    use iiop_giop::{ResponseMode, TargetAddress};

    /// Every endpoint maps to `proxy:9` + the original port's last digit.
    struct Map;
    impl Endpoints for Map {
        fn proxy_for(&mut self, host: &str, port: u16) -> Option<(String, u16)> {
            (host == "server").then(|| ("proxy".to_string(), 9000 + port % 10))
        }
    }

    fn decode(b: &[u8]) -> (Header, Message) {
        let mut d = Decoder::new(CodecConfig::default());
        let mut buf = BytesMut::from(b);
        let f = d.decode(&mut buf).unwrap().unwrap();
        assert!(buf.is_empty());
        let h = f.header;
        (
            h,
            Message::decode_frame(f, default_options(h.version)).unwrap(),
        )
    }

    fn code_sets(order: ByteOrder) -> ServiceContext {
        ServiceContext {
            id: SC_CODE_SETS,
            data: CodeSetContext {
                char_data: 0x0001_0001,
                wchar_data: 0x0001_0109,
            }
            .encode(order),
        }
    }

    /// An `echo_double` request carrying a CodeSets context: a long count
    /// then doubles, so a body read at another offset mod 8 would differ.
    fn request(v: Version, order: ByteOrder) -> Vec<u8> {
        let target = TargetAddress::Key(Bytes::from_static(b"Bench"));
        let ctx = [code_sets(order)];
        let head = RequestHead {
            request_id: 9,
            response: ResponseMode::Twoway,
            target: &target,
            operation: "echo_double",
            contexts: &ctx,
        };
        let mut buf = BytesMut::new();
        encode_request(&mut buf, v, order, Options::default(), &head, |w| {
            w.write_u32(3);
            for d in [1.5f64, -2.25, 1e300] {
                w.write_f64(d);
            }
            Ok(())
        })
        .unwrap();
        buf.to_vec()
    }

    fn body_doubles(m: &Message) -> Vec<f64> {
        let Message::Request(r) = m else {
            panic!("{m:?}")
        };
        let mut rd: Reader<'_> = r.body.reader(Options::default());
        let n = rd.read_u32().unwrap();
        (0..n).map(|_| rd.read_f64().unwrap()).collect()
    }

    #[test]
    fn strip_codesets_keeps_the_body_readable_in_every_version() {
        let refs = BTreeSet::new();
        let want = EditWanted {
            strip_codesets: true,
            operation: None,
            reference_ops: &refs,
        };
        for v in [Version::V1_0, Version::V1_1, Version::V1_2] {
            for order in [ByteOrder::Big, ByteOrder::Little] {
                let orig = request(v, order);
                let (h, m) = decode(&orig);
                let (out, ed) = edit(&h, &m, &want, &mut Map).expect("edited");
                let (h2, m2) = decode(&out);
                assert_eq!((h2.version, h2.order), (v, order));
                let Message::Request(r2) = &m2 else { panic!() };
                assert!(
                    r2.header.contexts.get(SC_CODE_SETS).is_none(),
                    "{v} {order:?}"
                );
                assert_eq!(body_doubles(&m2), [1.5, -2.25, 1e300], "{v} {order:?}");
                // The CodeSets context is 20 bytes: in 1.0/1.1 the body
                // moved by 4 mod 8 without a filler of 4 data bytes (12
                // in all); in 1.2 the body pad absorbs it.
                assert_eq!(ed.filler, !v.is_12(), "{v}");
                let want_len = if v.is_12() {
                    orig.len() - 24
                } else {
                    orig.len() - 8
                };
                assert_eq!(out.len(), want_len, "{v} {order:?}");
                assert_eq!(
                    r2.header
                        .contexts
                        .0
                        .iter()
                        .map(|c| c.id)
                        .collect::<Vec<_>>(),
                    if v.is_12() {
                        vec![]
                    } else {
                        vec![FILLER_CONTEXT]
                    }
                );
            }
        }
        // No CodeSets context: nothing to do.
        let (h, m) = decode(&request(Version::V1_2, ByteOrder::Big));
        let (out, _) = edit(&h, &m, &want, &mut Map).unwrap();
        let (h2, m2) = decode(&out);
        assert!(edit(&h2, &m2, &want, &mut Map).is_none());
    }

    fn server_ior() -> Ior {
        let mut p = IiopProfile::new("server", 2809, Bytes::from_static(b"Single7"));
        p.components.push(TaggedComponent::from_component(
            &iiop_cdr::ior::Component::AlternateAddress {
                host: "other".into(),
                port: 1,
            },
            ByteOrder::Big,
        ));
        Ior::new("IDL:Bench/Single:1.0", vec![p.to_tagged()])
    }

    fn profile_of(ior: &Ior) -> IiopProfile {
        ior.iiop_profile().unwrap()
    }

    #[test]
    fn references_in_forwards_and_results_point_at_the_proxy() {
        let refs: BTreeSet<String> = BENCH_REFERENCE_OPS.iter().map(|s| s.to_string()).collect();
        for v in [Version::V1_0, Version::V1_1, Version::V1_2] {
            for order in [ByteOrder::Big, ByteOrder::Little] {
                // LOCATION_FORWARD.
                let mut buf = BytesMut::new();
                encode_location_forward(&mut buf, v, order, 4, &server_ior(), false).unwrap();
                let (h, m) = decode(&buf);
                let want = EditWanted {
                    strip_codesets: false,
                    operation: Some("ping"),
                    reference_ops: &refs,
                };
                let (out, ed) = edit(&h, &m, &want, &mut Map).unwrap();
                assert!(ed.ior_rewritten);
                let (_, m2) = decode(&out);
                let Message::Reply(r) = m2 else { panic!() };
                assert_eq!(r.header.status, ReplyStatus::LocationForward);
                let p = profile_of(&r.forward_ior().unwrap());
                assert_eq!((p.host.as_str(), p.port), ("proxy", 9009));
                assert_eq!(p.object_key, Bytes::from_static(b"Single7"));
                assert!(p.alternate_addresses().is_empty());
                assert!(p.orb_type().is_some() && p.code_sets().is_some());
                // get_single's result.
                let mut buf = BytesMut::new();
                encode_reply(
                    &mut buf,
                    v,
                    order,
                    Options::default(),
                    5,
                    ReplyStatus::NoException,
                    &[],
                    |w| server_ior().encode(w).map_err(Into::into),
                )
                .unwrap();
                let (h, m) = decode(&buf);
                let want = EditWanted {
                    operation: Some("get_single"),
                    ..want
                };
                let (out, _) = edit(&h, &m, &want, &mut Map).unwrap();
                let (_, m2) = decode(&out);
                let Message::Reply(r) = m2 else { panic!() };
                let mut rd = r.body.reader(Options::default());
                let p = profile_of(&Ior::decode(&mut rd).unwrap());
                assert!(rd.only_padding_left());
                assert_eq!((p.host.as_str(), p.port), ("proxy", 9009));
                // The same reply to another operation is left alone.
                let other = EditWanted {
                    operation: Some("echo_octet"),
                    ..want
                };
                assert!(edit(&h, &m, &other, &mut Map).is_none());
            }
        }
        // OBJECT_FORWARD in a LocateReply (1.2: body not 8-aligned).
        let mut buf = BytesMut::new();
        let lr = LocateReply {
            request_id: 3,
            status: LocateStatus::ObjectForwardPerm(server_ior()),
        };
        encode_locate_reply(&mut buf, Version::V1_2, ByteOrder::Little, &lr).unwrap();
        let (h, m) = decode(&buf);
        let refs = BTreeSet::new();
        let want = EditWanted {
            strip_codesets: true,
            operation: None,
            reference_ops: &refs,
        };
        let (out, _) = edit(&h, &m, &want, &mut Map).unwrap();
        let (_, m2) = decode(&out);
        let Message::LocateReply(LocateReply {
            status: LocateStatus::ObjectForwardPerm(i),
            ..
        }) = m2
        else {
            panic!()
        };
        assert_eq!(profile_of(&i).port, 9009);
        // A reference to an endpoint the map does not front is kept.
        let mut other = server_ior();
        other.profiles = vec![IiopProfile::new("elsewhere", 1, Bytes::new()).to_tagged()];
        assert!(rewrite_ior(&other, &mut Map).is_none());
    }

    /// A GIOP 1.1 `echo_double` request of `n` doubles.
    fn doubles_11(order: ByteOrder, n: usize) -> Vec<u8> {
        let target = TargetAddress::Key(Bytes::from_static(b"Bench"));
        let head = RequestHead {
            request_id: 1,
            response: ResponseMode::Twoway,
            target: &target,
            operation: "echo_double",
            contexts: &[],
        };
        let mut buf = BytesMut::new();
        encode_request(
            &mut buf,
            Version::V1_1,
            order,
            Options::default(),
            &head,
            |w: &mut Writer<'_>| {
                w.write_u32(n as u32);
                for i in 0..n {
                    w.write_f64(i as f64 + 0.5);
                }
                Ok(())
            },
        )
        .unwrap();
        buf.to_vec()
    }

    #[test]
    fn giop_11_fragments_keep_alignment_and_reassemble() {
        for order in [ByteOrder::Big, ByteOrder::Little] {
            let msg = Bytes::from(doubles_11(order, 40));
            for n in [32, 64, 100, 333] {
                let pieces = fragment(msg.clone(), n, true);
                assert!(pieces.len() > 1);
                let mut at = 0;
                for (i, p) in pieces.iter().enumerate() {
                    let h = Header::parse(p).unwrap();
                    assert!(p.len() <= n, "{n}: piece {i} is {} bytes", p.len());
                    assert_eq!(h.more_fragments, i + 1 < pieces.len());
                    assert_eq!(
                        h.msg_type,
                        if i == 0 {
                            MsgType::Request
                        } else {
                            MsgType::Fragment
                        }
                    );
                    // Every cut at a message offset of 4 mod 8.
                    at += if i == 0 {
                        p.len()
                    } else {
                        p.len() - HEADER_LEN
                    };
                    if i + 1 < pieces.len() {
                        assert_eq!(at % 8, 4, "{n}: cut {i} at {at}");
                    }
                }
                assert_eq!(at, msg.len());
                // The codec reassembles them (realigning at each
                // Fragment) into the same doubles.
                let mut d = Decoder::new(CodecConfig::default());
                let mut buf = BytesMut::new();
                for p in &pieces {
                    buf.extend_from_slice(p);
                }
                let f = d.decode(&mut buf).unwrap().unwrap();
                let m = Message::decode_frame(f, default_options(Version::V1_1)).unwrap();
                let want: Vec<f64> = (0..40).map(|i| i as f64 + 0.5).collect();
                assert_eq!(body_doubles(&m), want, "{n} {order:?}");
            }
            // Not longer than n, or without fragment11: whole.
            assert_eq!(fragment(msg.clone(), msg.len(), true), vec![msg.clone()]);
            assert_eq!(fragment(msg.clone(), 64, false), vec![msg.clone()]);
        }
    }

    #[test]
    fn giop_12_and_10_fragmenting() {
        let orig = Bytes::from(request(Version::V1_2, ByteOrder::Little));
        let pieces = fragment(orig.clone(), 40, false);
        assert!(pieces.len() > 2);
        for p in &pieces[..pieces.len() - 1] {
            assert!(p.len() <= 40 && p.len() % 8 == 0, "{}", p.len());
        }
        let (_, m) = decode(&pieces.concat());
        assert_eq!(body_doubles(&m), [1.5, -2.25, 1e300]);
        // GIOP 1.0 cannot be fragmented.
        let old = Bytes::from(request(Version::V1_0, ByteOrder::Little));
        assert_eq!(fragment(old.clone(), 40, true), vec![old]);
    }
}
