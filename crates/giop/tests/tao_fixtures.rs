//! Every GIOP message in `fixtures/giop/tao/` — TAO 2.2's bench client
//! talking to TAO's server and to ours, and `iiopbench call` talking to
//! TAO's server (see that directory's README.md and manifest.txt) —
//! decodes to what its manifest says, and shows the TAO behaviour
//! docs/tao.md describes: little-endian replies whatever the request's
//! order, forwards from its short keys to its POA key, and BOM-less
//! UTF-16 read big-endian in little-endian GIOP 1.1.

mod captured;

use bytes::Bytes;
use captured::field;
use iiop_cdr::{ByteOrder, Options, WcharRules};
use iiop_giop::header::Header;
use iiop_giop::message::{Message, Reply, ReplyStatus, Request};
use iiop_giop::{MsgType, TargetAddress, Version};

fn manifest() -> Vec<captured::Row> {
    captured::manifest("tao")
}

fn decode(file: &str) -> (Header, Message) {
    captured::decode("tao", file)
}

fn request(file: &str) -> (Header, Request) {
    match decode(file) {
        (h, Message::Request(q)) => (h, q),
        (_, other) => panic!("{file}: {other:?}"),
    }
}

fn reply(file: &str) -> (Header, Reply) {
    match decode(file) {
        (h, Message::Reply(p)) => (h, p),
        (_, other) => panic!("{file}: {other:?}"),
    }
}

/// TAO's POA key for the bench object: `14 01 0f 00 'RST'` and a time
/// stamp and ids that change from run to run.
fn is_tao_poa_key(k: &[u8]) -> bool {
    k.len() == 27 && k.starts_with(b"\x14\x01\x0f\x00RST")
}

#[test]
fn every_capture_decodes_as_its_manifest_says() {
    let rows = manifest();
    assert_eq!(rows.len(), 75, "all captures listed");
    let mut listed: Vec<String> = rows.iter().map(|r| r.file.clone()).collect();
    listed.sort();
    let mut on_disk: Vec<String> = std::fs::read_dir(captured::dir("tao"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".bin"))
        .collect();
    on_disk.sort();
    assert_eq!(listed, on_disk, "manifest lists exactly the .bin files");
    for r in &rows {
        let (h, m, id) = captured::decode_row("tao", r);
        match m {
            Message::Request(q) => {
                assert_eq!(h.msg_type, MsgType::Request);
                captured::check_request(r, &q, id);
                let TargetAddress::Key(k) = &q.header.target else {
                    panic!("{}: {:?}", r.file, q.header.target)
                };
                assert!(&k[..] == b"Bench" || is_tao_poa_key(k), "{}", r.file);
                let cs = q.header.contexts.code_sets().unwrap();
                assert_eq!(
                    cs.is_some(),
                    r.what.contains("contexts=CodeSets"),
                    "{}",
                    r.file
                );
            }
            Message::Reply(p) => {
                assert!(r.what.starts_with("Reply"), "{}", r.file);
                assert_eq!(p.header.request_id, id, "{}", r.file);
                let status = if r.what.contains("LOCATION_FORWARD") {
                    ReplyStatus::LocationForward
                } else {
                    ReplyStatus::NoException
                };
                assert_eq!(p.header.status, status, "{}", r.file);
                if r.sender.starts_with("TAO") {
                    assert_eq!(h.order, ByteOrder::Little, "{}: TAO replies LE", r.file);
                }
            }
            other => panic!("{}: unexpected {other:?}", r.file),
        }
    }
}

#[test]
fn tao_forwards_its_short_keys_to_its_poa_key() {
    // GIOP 1.2 and 1.0, both big-endian requests on "Bench".
    for (req, rep, retry, v) in [
        ("forward-01", "forward-02", "forward-03", Version::V1_2),
        ("forward-05", "forward-06", "forward-07", Version::V1_0),
    ] {
        let (hq, q) = request(&format!("{req}-client-request.bin"));
        assert_eq!((hq.version, hq.order), (v, ByteOrder::Big));
        assert_eq!(q.header.target, TargetAddress::Key(Bytes::from("Bench")));
        let (hp, p) = reply(&format!("{rep}-server-reply.bin"));
        // The reply speaks the request's version, little-endian.
        assert_eq!((hp.version, hp.order), (v, ByteOrder::Little), "{rep}");
        assert_eq!(p.header.status, ReplyStatus::LocationForward, "{rep}");
        let ior = p.forward_ior().unwrap();
        assert_eq!(ior.type_id, "IDL:Bench/Perf:1.0");
        let prof = ior.iiop_profile().expect("an IIOP profile");
        assert_eq!((prof.version.major, prof.version.minor), (1, 2));
        assert_eq!(prof.host, "127.0.0.1");
        assert!(is_tao_poa_key(&prof.object_key), "{rep}");
        // TAG_ORB_TYPE "TAO\0", and code sets: char ISO-8859-1 with
        // UTF-8 conversion, wchar UTF-16.
        assert_eq!(prof.orb_type(), Some(0x5441_4f00), "{rep}");
        let (cs, _) = ior.code_sets().expect("TAG_CODE_SETS");
        assert_eq!(cs.for_char.native, 0x0001_0001);
        assert_eq!(cs.for_char.conversion, vec![0x0501_0001]);
        assert_eq!(cs.for_wchar.native, 0x0001_0109);
        // The retry goes to that key, over the forwarded profile's 1.2.
        let (hr, r) = request(&format!("{retry}-client-request.bin"));
        assert_eq!(hr.version, Version::V1_2, "{retry}");
        assert_eq!(r.header.operation(), q.header.operation());
        assert_eq!(
            r.header.target,
            TargetAddress::Key(prof.object_key.clone()),
            "{retry}"
        );
        assert_eq!(r.body.bytes, q.body.bytes, "{retry}: the same arguments");
    }
}

#[test]
fn tao_reads_bomless_utf16_big_endian_in_little_endian_giop_11() {
    for (req, rep, wstring) in [
        ("wchar11-01", "wchar11-02", false),
        ("wchar11-03", "wchar11-04", true),
    ] {
        let (hq, q) = request(&format!("{req}-client-request.bin"));
        let (hp, p) = reply(&format!("{rep}-server-reply.bin"));
        assert_eq!((hq.version, hq.order), (Version::V1_1, ByteOrder::Little));
        assert_eq!((hp.version, hp.order), (Version::V1_1, ByteOrder::Little));
        let opts = Options {
            wchar_rules: WcharRules::Giop11,
            ..Options::default()
        };
        let units = |body: &iiop_giop::message::Body| -> Vec<u16> {
            let mut r = body.reader(opts);
            let s: Vec<u16> = if wstring {
                let n = r.read_u32().unwrap();
                assert_eq!(n, 1, "one wstring");
                r.read_wstring().unwrap().encode_utf16().collect()
            } else {
                let n = r.read_u32().unwrap() as usize;
                (0..n).map(|_| r.read_u16().unwrap()).collect()
            };
            r.expect_end().unwrap();
            s
        };
        let sent = units(&q.body);
        let back = units(&p.body);
        assert!(!sent.is_empty());
        assert_eq!(
            back,
            sent.iter().map(|u| u.swap_bytes()).collect::<Vec<_>>(),
            "{rep}: every UTF-16 unit comes back byte-swapped"
        );
    }
}

#[test]
fn taos_client_negotiates_code_sets_from_our_ior() {
    // Every request of TAO's client carries CodeSets: char ISO-8859-1 and
    // wchar UTF-16 (what our IOR and TAO's both offer natively).
    for r in manifest()
        .iter()
        .filter(|r| r.sender.starts_with("TAO") && r.what.starts_with("Request"))
    {
        let (h, q) = request(&r.file);
        assert_eq!(
            (h.version, h.order),
            (Version::V1_2, ByteOrder::Little),
            "{}",
            r.file
        );
        let cs = q.header.contexts.code_sets().unwrap().expect("CodeSets");
        assert_eq!(
            (cs.char_data, cs.wchar_data),
            (0x0001_0001, 0x0001_0109),
            "{}",
            r.file
        );
        // The bodies read whole with those code sets.
        let mut rd = q.body.reader(cs.options(h.version));
        match q.header.operation() {
            "echo_wstring" => {
                let n = rd.read_u32().unwrap();
                for _ in 0..n {
                    rd.read_wstring().unwrap();
                }
            }
            "echo_wchar" => {
                let n = rd.read_u32().unwrap();
                for _ in 0..n {
                    rd.read_wchar().unwrap();
                }
            }
            "echo_string" => {
                let n = rd.read_u32().unwrap();
                for _ in 0..n {
                    rd.read_string().unwrap();
                }
            }
            _ => continue,
        }
        rd.expect_end().unwrap();
    }
}

#[test]
fn echo_replies_of_fixed_size_types_carry_the_request_back() {
    // TAO -> TAO, both little-endian: for the element types whose CDR
    // does not depend on alignment beyond 4, the reply body repeats the
    // request body byte for byte.
    let rows = manifest();
    let mut checked = 0;
    for pair in rows.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if !a.file.starts_with("types-") || !a.what.starts_with("Request") {
            continue;
        }
        let op = field(&a.what, "op=").unwrap();
        if !matches!(
            op,
            "echo_short"
                | "echo_ushort"
                | "echo_long"
                | "echo_ulong"
                | "echo_float"
                | "echo_octet"
                | "echo_char"
                | "echo_boolean"
        ) {
            continue;
        }
        let (_, q) = request(&a.file);
        let (_, p) = reply(&b.file);
        assert_eq!(p.header.request_id, q.header.request_id);
        assert_eq!(p.body.bytes, q.body.bytes, "{op}");
        checked += 1;
    }
    assert_eq!(checked, 8);
}
