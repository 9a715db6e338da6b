//! Every GIOP message omniORB 4.2 sent in `fixtures/giop/omniorb/` (see
//! its manifest.tsv and fixtures/README.md for how they were captured)
//! decodes, reassembles, and re-encodes to the same bytes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use bytes::{Bytes, BytesMut};
use iiop_cdr::{ByteOrder, Options, Reader};
use iiop_giop::codec::Decoder;
use iiop_giop::context::{default_options, CodeSetContext};
use iiop_giop::exception::{Completion, MinorVendor, SystemException};
use iiop_giop::header::Header;
use iiop_giop::ior::{orb_type_name, summary, Ior};
use iiop_giop::message::*;
use iiop_giop::{GiopError, MsgType, Version};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/giop/omniorb")
}

struct Row {
    file: String,
    scenario: String,
    dir: String,
    version: String,
    kind: String,
    size: usize,
}

fn manifest() -> Vec<Row> {
    let text = std::fs::read_to_string(dir().join("manifest.tsv")).expect("manifest.tsv");
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 7, "manifest line {l:?}");
            Row {
                file: f[0].into(),
                scenario: f[1].into(),
                dir: f[2].into(),
                version: f[3].into(),
                kind: f[4].into(),
                size: f[6].parse().unwrap(),
            }
        })
        .collect()
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// All messages of one scenario in one direction, reassembled and decoded.
fn messages(scenario: &str, direction: &str) -> Vec<(Header, Message)> {
    let mut stream = Vec::new();
    for r in manifest() {
        if r.scenario == scenario && r.dir == direction {
            stream.extend(read(&r.file));
        }
    }
    assert!(!stream.is_empty(), "no messages for {scenario} {direction}");
    let mut d = Decoder::default();
    let mut buf = BytesMut::from(&stream[..]);
    let mut out = Vec::new();
    while let Some(f) = d.decode(&mut buf).unwrap() {
        let opts = default_options(f.header.version);
        let header = f.header;
        let m = Message::decode_frame(f, opts)
            .unwrap_or_else(|e| panic!("{scenario} {direction}: {e}"));
        out.push((header, m));
    }
    assert!(buf.is_empty());
    assert!(!d.in_progress());
    out
}

fn requests(scenario: &str) -> Vec<Request> {
    messages(scenario, "c2s")
        .into_iter()
        .filter_map(|(_, m)| match m {
            Message::Request(r) => Some(r),
            _ => None,
        })
        .collect()
}

fn replies(scenario: &str) -> Vec<Reply> {
    messages(scenario, "s2c")
        .into_iter()
        .filter_map(|(_, m)| match m {
            Message::Reply(r) => Some(r),
            _ => None,
        })
        .collect()
}

#[test]
fn manifest_matches_files_and_headers() {
    let rows = manifest();
    assert!(rows.len() >= 100, "{} messages", rows.len());
    let mut kinds = BTreeMap::new();
    for r in &rows {
        let b = read(&r.file);
        if r.kind == "raw" {
            assert_eq!(b.len(), r.size);
            continue;
        }
        assert_eq!(b.len(), 12 + r.size, "{}", r.file);
        *kinds.entry(r.kind.clone()).or_insert(0) += 1;
        match Header::parse(&b) {
            Ok(h) => {
                assert_eq!(h.size as usize, r.size);
                assert_eq!(format!("{}", h.version), r.version, "{}", r.file);
                assert_eq!(format!("{:?}", h.msg_type), r.kind, "{}", r.file);
            }
            Err(e) => assert_eq!(r.kind, "type9", "{}: {e}", r.file),
        }
    }
    for k in [
        "Request",
        "Reply",
        "LocateRequest",
        "LocateReply",
        "CloseConnection",
        "Fragment",
    ] {
        assert!(kinds.contains_key(k), "no {k} captured");
    }
}

#[test]
fn every_scenario_decodes_in_both_directions() {
    let mut seen = BTreeMap::new();
    for r in manifest() {
        if r.kind != "raw" && r.kind != "type9" {
            seen.insert((r.scenario.clone(), r.dir.clone()), ());
        }
    }
    let mut n = 0;
    for (scenario, direction) in seen.keys() {
        n += messages(scenario, direction).len();
    }
    assert!(n >= 100, "{n}");
}

/// Re-encode a decoded message with our encoder (bodies copied verbatim)
/// and compare with omniORB's bytes.
fn reencode(h: &Header, m: &Message) -> Option<Vec<u8>> {
    let mut buf = BytesMut::new();
    let o = h.order;
    let opts = default_options(h.version);
    match m {
        Message::Request(r) => {
            assert!(r.header.principal.is_empty());
            let head = RequestHead {
                request_id: r.header.request_id,
                response: r.header.response,
                target: &r.header.target,
                operation: r.header.operation(),
                contexts: &r.header.contexts.0,
            };
            encode_request(&mut buf, h.version, o, opts, &head, |w| {
                w.write_bytes(&r.body.bytes);
                Ok(())
            })
            .unwrap();
        }
        Message::Reply(r) => {
            encode_reply(
                &mut buf,
                h.version,
                o,
                opts,
                r.header.request_id,
                r.header.status,
                &r.header.contexts.0,
                |w| {
                    w.write_bytes(&r.body.bytes);
                    Ok(())
                },
            )
            .unwrap();
        }
        Message::LocateRequest(l) => {
            encode_locate_request(&mut buf, h.version, o, l.request_id, &l.target).unwrap();
        }
        Message::LocateReply(l) => {
            encode_locate_reply(&mut buf, h.version, o, l).unwrap();
        }
        Message::CloseConnection => {
            encode_empty(&mut buf, h.version, o, MsgType::CloseConnection);
        }
        _ => return None,
    }
    Some(buf.to_vec())
}

#[test]
fn unfragmented_messages_reencode_to_omniorbs_bytes() {
    let mut checked = 0;
    let mut garbage = 0;
    for r in manifest() {
        if r.kind == "raw" || r.kind == "type9" || r.kind == "Fragment" {
            continue;
        }
        let b = read(&r.file);
        let h = Header::parse(&b).unwrap();
        if h.more_fragments {
            continue;
        }
        let payload = Bytes::copy_from_slice(&b[12..]);
        let m = Message::decode(&h, payload, default_options(h.version)).unwrap();
        if let Some(ours) = reencode(&h, &m) {
            assert_eq!(ours.len(), b.len(), "{}", r.file);
            let gaps = gaps(&h, &b[12..]);
            let diff: Vec<usize> = (0..b.len()).filter(|&i| ours[i] != b[i]).collect();
            for &i in &diff {
                assert!(
                    gaps.contains(&i) && ours[i] == 0,
                    "{}: byte {i} differs ({:#04x} vs ours {:#04x}) outside a gap",
                    r.file,
                    b[i],
                    ours[i]
                );
            }
            garbage += diff.len();
            checked += 1;
        }
    }
    assert!(checked >= 90, "{checked}");
    // omniORB leaves whatever was in its buffer in alignment gaps.
    assert!(garbage > 0);
}

/// Stream offsets of the alignment gaps and reserved octets in a message
/// header (and the 1.2 pad before the body), found by walking it.
fn gaps(h: &Header, payload: &[u8]) -> Vec<usize> {
    let mut g = Vec::new();
    let mut r = Reader::new(payload, h.order).with_base(12);
    fn al(r: &mut Reader<'_>, n: usize, g: &mut Vec<usize>) {
        let p = r.position();
        let pad = p.wrapping_neg() & (n - 1);
        g.extend(p..p + pad);
        r.align(n).unwrap();
    }
    fn ctxs(r: &mut Reader<'_>, g: &mut Vec<usize>) {
        al(r, 4, g);
        let n = r.read_u32().unwrap();
        for _ in 0..n {
            al(r, 4, g);
            r.read_u32().unwrap();
            r.read_octet_seq().unwrap();
        }
    }
    fn seq(r: &mut Reader<'_>, g: &mut Vec<usize>) {
        al(r, 4, g);
        r.read_octet_seq().unwrap();
    }
    fn reserved(r: &mut Reader<'_>, n: usize, g: &mut Vec<usize>) {
        let p = r.position();
        g.extend(p..p + n);
        r.take(n).unwrap();
    }
    let v12 = h.version.is_12();
    match h.msg_type {
        MsgType::Request if v12 => {
            r.read_u32().unwrap();
            r.read_u8().unwrap();
            reserved(&mut r, 3, &mut g);
            assert_eq!(r.read_i16().unwrap(), 0, "KeyAddr");
            seq(&mut r, &mut g);
            seq(&mut r, &mut g); // operation (a string is a counted octet run)
            ctxs(&mut r, &mut g);
            if r.remaining() > 0 {
                al(&mut r, 8, &mut g);
            }
        }
        MsgType::Request => {
            ctxs(&mut r, &mut g);
            r.read_u32().unwrap();
            r.read_u8().unwrap();
            if h.version.minor == 1 {
                reserved(&mut r, 3, &mut g);
            }
            seq(&mut r, &mut g);
            seq(&mut r, &mut g);
            seq(&mut r, &mut g);
        }
        MsgType::Reply if v12 => {
            r.read_u32().unwrap();
            r.read_u32().unwrap();
            ctxs(&mut r, &mut g);
            if r.remaining() > 0 {
                al(&mut r, 8, &mut g);
            }
        }
        MsgType::LocateRequest if v12 => {
            r.read_u32().unwrap();
            r.read_i16().unwrap();
            seq(&mut r, &mut g);
        }
        _ => {}
    }
    g
}

#[test]
fn code_sets_context_on_ior_requests_only() {
    let cs = CodeSetContext {
        char_data: 0x0001_0001,
        wchar_data: 0x0001_0109,
    };
    let list = &requests("list-ior12")[0];
    assert_eq!(list.version, Version::V1_2);
    assert_eq!(list.header.operation(), "list");
    assert_eq!(list.header.contexts.code_sets().unwrap(), Some(cs));
    assert_eq!(
        &list.header.target.object_key().unwrap()[..],
        b"NameService"
    );
    let list11 = &requests("list-ior11")[0];
    assert_eq!(list11.version, Version::V1_1);
    assert_eq!(list11.header.contexts.code_sets().unwrap(), Some(cs));
    // corbaloc (IIOP 1.0 profile): GIOP 1.0, no contexts, _is_a first.
    let loc = requests("list-corbaloc10");
    assert_eq!(loc[0].version, Version::V1_0);
    assert_eq!(loc[0].header.operation(), "_is_a");
    assert!(loc[0].header.contexts.is_empty());
    let id = loc[0]
        .body
        .reader(Options::default())
        .read_string()
        .unwrap();
    assert_eq!(id, "IDL:omg.org/CosNaming/NamingContext:1.0");
    assert_eq!(loc[1].header.operation(), "list");
}

#[test]
fn user_exception_not_found() {
    for scenario in ["resolve-unknown12", "resolve-unknown10"] {
        let r = replies(scenario).pop().unwrap();
        assert_eq!(r.header.status, ReplyStatus::UserException);
        assert_eq!(
            r.user_exception_id().unwrap(),
            "IDL:omg.org/CosNaming/NamingContext/NotFound:1.0"
        );
        // NotFound { why = missing_node (0), rest_of_name = [{"nosuch", ""}] }
        let mut rd = r.body.reader(Options::default());
        rd.read_string().unwrap();
        assert_eq!(rd.read_u32().unwrap(), 0);
        assert_eq!(rd.read_u32().unwrap(), 1);
        assert_eq!(rd.read_string().unwrap(), "nosuch");
        assert_eq!(rd.read_string().unwrap(), "");
        rd.expect_end().unwrap();
    }
}

#[test]
fn system_exception_bad_operation_with_omniorb_minor() {
    for scenario in ["badop10", "badop12", "frag-request12", "frag-request11"] {
        let r = replies(scenario).pop().unwrap();
        assert_eq!(r.header.status, ReplyStatus::SystemException, "{scenario}");
        let e = r.system_exception().unwrap();
        assert_eq!(
            e,
            SystemException::bad_operation(0x4154_0026, Completion::No),
            "{scenario}"
        );
        assert_eq!(e.vendor(), MinorVendor::OmniOrb);
        assert_eq!(
            e.to_string(),
            "IDL:omg.org/CORBA/BAD_OPERATION:1.0 minor 0x41540026 COMPLETED_NO"
        );
    }
}

#[test]
fn locate_request_and_reply() {
    let loc = messages("nokey10", "c2s");
    match &loc[0].1 {
        Message::LocateRequest(l) => {
            assert_eq!(&l.target.object_key().unwrap()[..], b"NoSuchKey");
        }
        m => panic!("{m:?}"),
    }
    for scenario in ["nokey10", "nokey12"] {
        match &messages(scenario, "s2c")[0].1 {
            Message::LocateReply(l) => assert_eq!(l.status, LocateStatus::UnknownObject),
            m => panic!("{m:?}"),
        }
    }
    match &messages("badop12", "s2c")[0].1 {
        Message::LocateReply(l) => assert_eq!(l.status, LocateStatus::ObjectHere),
        m => panic!("{m:?}"),
    }
}

fn octet_payload_ok(r: &Request, n: usize) {
    let mut rd = r.body.reader(Options::default());
    let seq = rd.read_octet_seq().unwrap();
    assert_eq!(seq.len(), n);
    assert!(seq.iter().enumerate().all(|(i, &b)| b == (i & 0xff) as u8));
    rd.expect_end().unwrap();
}

#[test]
fn fragmented_requests_reassemble() {
    // omniORB 1.2: first message 20080 bytes with more-fragments, then an
    // 8-byte-payload Fragment (request id + the last 4 bytes).
    let raw = read("frag-request12-00-02-c2s-1.2-Request.bin");
    let h = Header::parse(&raw).unwrap();
    assert!(h.more_fragments);
    assert_eq!(raw.len() % 8, 0);
    let r = &requests("frag-request12")[0];
    assert_eq!(r.header.operation(), "no_such_op");
    octet_payload_ok(r, 20000);
    // 1.1: the last Fragment is empty.
    let r = &requests("frag-request11")[0];
    assert_eq!(r.version, Version::V1_1);
    octet_payload_ok(r, 20000);
    // A 10000-character name in bind_new_context: 8192 + a Fragment.
    let r = &requests("bind-long12")[0];
    assert_eq!(r.header.operation(), "bind_new_context");
    let mut rd = r.body.reader(Options::default());
    assert_eq!(rd.read_u32().unwrap(), 1);
    assert_eq!(rd.read_string().unwrap(), "x".repeat(10000));
}

#[test]
fn fragmented_replies_reassemble() {
    for scenario in ["frag-reply12", "frag-reply11"] {
        // nameclt lists with BindingIterator::next_one; the reply holding
        // the 10000-character context name is fragmented (8192 bytes, then
        // a Fragment). Body: boolean, Binding { Name, BindingType }.
        let rs = replies(scenario);
        let r = rs
            .iter()
            .find(|r| r.body.bytes.len() > 10000)
            .unwrap_or_else(|| panic!("{scenario}: no big reply"));
        let mut rd: Reader<'_> = r.body.reader(Options::default());
        assert!(rd.read_bool().unwrap());
        assert_eq!(rd.read_u32().unwrap(), 1);
        assert_eq!(rd.read_string().unwrap(), "x".repeat(10000));
        assert_eq!(rd.read_string().unwrap(), "");
        assert_eq!(rd.read_u32().unwrap(), 1, "ncontext");
        rd.expect_end().unwrap();
    }
}

#[test]
fn target_address_modes() {
    // omniORB 4.2's nameclt sends KeyAddr whatever -ORBgiopTargetAddressMode
    // says (the option did not change the bytes).
    for s in ["list-profileaddr12", "list-referenceaddr12"] {
        assert!(matches!(
            requests(s)[0].header.target,
            TargetAddress::Key(_)
        ));
    }
}

#[test]
fn server_close_and_bad_input() {
    // omniORB closes an idle GIOP 1.2 connection with a 1.0 CloseConnection.
    let m = messages("idle-close12", "s2c");
    assert_eq!(m.last().unwrap().1, Message::CloseConnection);
    assert_eq!(m.last().unwrap().0.version, Version::V1_0);
    // Clients on GIOP 1.2 say goodbye with CloseConnection too.
    assert_eq!(
        messages("list-ior12", "c2s").last().unwrap().1,
        Message::CloseConnection
    );
    // The probes omniNames answered by closing without a MessageError.
    assert_eq!(
        Header::parse(&read("bad-type12-00-00-c2s-1.2-type9.bin")),
        Err(GiopError::UnknownMessageType {
            msg_type: 9,
            minor: 2
        })
    );
    assert_eq!(
        Header::parse(&read("bad-magic-00-00-c2s-raw.bin")),
        Err(GiopError::BadMagic { found: *b"GIOQ" })
    );
    assert!(!manifest().iter().any(|r| r.kind == "MessageError"));
}

#[test]
fn is_a_and_non_existent_replies() {
    let rs = replies("is-a12");
    assert_eq!(rs.len(), 2);
    let mut by_id: Vec<(u32, bool)> = rs
        .iter()
        .map(|r| {
            (
                r.header.request_id,
                r.body.reader(Options::default()).read_bool().unwrap(),
            )
        })
        .collect();
    by_id.sort();
    assert_eq!(by_id, vec![(1, true), (2, false)]);
}

#[test]
fn omninames_ior_round_trips_and_summarises() {
    let text = std::fs::read_to_string(dir().join("omninames-root.ior")).unwrap();
    let text = text.trim();
    let ior: Ior = text.parse().unwrap();
    assert_eq!(
        ior.to_string(),
        text,
        "printing must give omniORB's string back"
    );
    assert_eq!(ior.order, ByteOrder::Little);
    assert_eq!(ior.type_id, "IDL:omg.org/CosNaming/NamingContextExt:1.0");
    let p = ior.iiop_profile().unwrap();
    assert_eq!(p.version, Version::V1_2);
    assert_eq!((p.host.as_str(), p.port), ("127.0.0.1", 21809));
    assert_eq!(&p.object_key[..], b"NameService");
    assert_eq!(p.orb_type(), Some(0x4154_5400));
    assert_eq!(orb_type_name(0x4154_5400), Some("omniORB"));
    let cs = p.code_sets().unwrap();
    assert_eq!(cs.for_char.native, 0x0001_0001);
    assert_eq!(cs.for_char.conversion, vec![0x0501_0001]);
    assert_eq!(cs.for_wchar.native, 0x0001_0109);
    // A third, omniORB-private component (tag 0x41545403) stays opaque.
    assert_eq!(p.components.len(), 3);
    assert_eq!(p.components[2].tag, 0x4154_5403);
    let s = summary(&ior);
    assert!(
        s.contains("IIOP 1.2 127.0.0.1:21809 key NameService orb omniORB (0x41545400) char ISO-8859-1 (conv UTF-8) wchar UTF-16"),
        "{s}"
    );
    // The resolve reply carries the IOR that was bound (the same object).
    let r = replies("resolve-ok12").pop().unwrap();
    assert_eq!(r.header.status, ReplyStatus::NoException);
    let bound = r.forward_ior().unwrap();
    assert_eq!(bound.iiop_profile().unwrap().object_key, p.object_key);
}

#[test]
fn oneway_flags() {
    let r = &requests("oneway12")[0];
    assert_eq!(r.header.response, ResponseMode::Oneway);
    assert!(matches!(
        SystemException::unknown_object().vendor(),
        MinorVendor::Omg
    ));
}

#[test]
fn fragment_alignment_12_continues_the_stream_11_restarts_per_fragment() {
    // 2000 strings fill omniORB's 8 KiB buffer (the first message is 8192
    // bytes), so the sequence<double> that follows travels in a Fragment.
    // GIOP 1.2: reading the reassembled body as one stream (alignment from
    // the first header, 16-byte fragment headers cut out) is exact.
    let r = &requests("frag-doubles12")[0];
    let mut rd = r.body.reader(Options::default());
    assert_eq!(rd.read_u32().unwrap(), 2000);
    for _ in 0..2000 {
        assert_eq!(rd.read_string().unwrap(), "ab");
    }
    let expected: Vec<f64> = (0..16).map(|i| i as f64 + 0.5).collect();
    assert_eq!(rd.read_seq::<f64>().unwrap(), expected);
    rd.expect_end().unwrap();

    // GIOP 1.1: omniORB aligns a Fragment's data relative to that
    // Fragment's own header (its data starts at offset 12, 4 mod 8), so
    // after an 8192-byte first message the doubles sit 4 bytes off the
    // contiguous stream's alignment: only a per-fragment origin reads them.
    let frag = read("frag-doubles11-00-03-c2s-1.1-Fragment.bin");
    let h = Header::parse(&frag).unwrap();
    assert_eq!(h.msg_type, MsgType::Fragment);
    let at = frag.len() - 16 * 8 - 8; // seq length, 4 pad bytes, doubles
    let mut rd = Reader::new(&frag[at..], h.order).with_base(at);
    assert_eq!(rd.read_seq::<f64>().unwrap(), expected);
    assert_eq!(
        at % 8,
        0,
        "the length sits 8-aligned from the fragment start"
    );
    // Our codec records where the Fragment's data begins in the
    // reassembled body, and the body's reader realigns there: exact.
    let r = &requests("frag-doubles11")[0];
    let first = read("frag-doubles11-00-02-c2s-1.1-Request.bin");
    assert_eq!(first.len(), 8192);
    let segs = r.body.segments.as_deref().expect("a 1.1 fragment boundary");
    assert_eq!(segs.len(), 1);
    assert_eq!(segs[0] + r.body.offset, first.len());
    let mut rd = r.body.reader(Options::default());
    assert_eq!(rd.read_u32().unwrap(), 2000);
    for _ in 0..2000 {
        assert_eq!(rd.read_string().unwrap(), "ab");
    }
    assert_eq!(rd.read_seq::<f64>().unwrap(), expected);
    rd.expect_end().unwrap();
    // Read as one stream (as before segments were recorded), the same
    // bytes give other doubles.
    let mut rd = Reader::from_bytes(&r.body.bytes, r.body.order).with_base(r.body.offset);
    assert_eq!(rd.read_u32().unwrap(), 2000);
    for _ in 0..2000 {
        assert_eq!(rd.read_string().unwrap(), "ab");
    }
    assert_ne!(rd.read_seq::<f64>().unwrap(), expected);
}
