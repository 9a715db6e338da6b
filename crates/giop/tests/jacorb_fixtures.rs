//! Every GIOP message in `fixtures/giop/jacorb/` — JacORB 3.9 talking to
//! omniORB's naming service, a raw sender talking to the JacORB bench
//! server, omniORB's nameclt talking to JacORB (see that directory's
//! README.md and manifest.txt) — decodes to what its manifest says.

use std::path::PathBuf;

use bytes::Bytes;
use iiop_cdr::{ByteOrder, Options};
use iiop_giop::header::{Header, HEADER_LEN};
use iiop_giop::message::{LocateStatus, Message, ReplyStatus, ResponseMode};
use iiop_giop::{MsgType, TargetAddress, Version};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/giop/jacorb")
}

struct Row {
    file: String,
    version: String,
    order: String,
    what: String,
}

fn manifest() -> Vec<Row> {
    std::fs::read_to_string(dir().join("manifest.txt"))
        .expect("manifest.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 6, "manifest line {l:?}");
            Row {
                file: f[0].into(),
                version: f[3].into(),
                order: f[4].into(),
                what: f[5].into(),
            }
        })
        .collect()
}

fn decode(file: &str) -> (Header, Message) {
    let raw = std::fs::read(dir().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let h = Header::parse(&raw).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_eq!(
        h.size as usize,
        raw.len() - HEADER_LEN,
        "{file}: size field"
    );
    assert!(!h.more_fragments, "{file}: JacORB never fragments");
    let m = Message::decode(
        &h,
        Bytes::copy_from_slice(&raw[HEADER_LEN..]),
        Options::default(),
    )
    .unwrap_or_else(|e| panic!("{file}: {e}"));
    (h, m)
}

/// A field of the manifest's description, e.g. `id=4` → "4".
fn field<'a>(what: &'a str, key: &str) -> Option<&'a str> {
    what.split([' ', ',']).find_map(|w| w.strip_prefix(key))
}

#[test]
fn every_capture_decodes_as_its_manifest_says() {
    let rows = manifest();
    assert_eq!(rows.len(), 29, "all captures listed");
    for r in &rows {
        let (h, m) = decode(&r.file);
        let v = match r.version.as_str() {
            "1.0" => Version::V1_0,
            "1.2" => Version::V1_2,
            other => panic!("{}: version {other}", r.file),
        };
        assert_eq!(h.version, v, "{}", r.file);
        let order = if r.order == "big-endian" {
            ByteOrder::Big
        } else {
            ByteOrder::Little
        };
        assert_eq!(h.order, order, "{}", r.file);
        let id: u32 = field(&r.what, "id=")
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{}: no id", r.file));
        match m {
            Message::Request(q) => {
                assert_eq!(h.msg_type, MsgType::Request);
                assert!(r.what.starts_with("Request"), "{}", r.file);
                assert_eq!(q.header.request_id, id, "{}", r.file);
                assert_eq!(
                    Some(q.header.operation()),
                    field(&r.what, "op="),
                    "{}",
                    r.file
                );
                let oneway = r.what.contains(" oneway ");
                assert_eq!(
                    q.header.response == ResponseMode::Oneway,
                    oneway,
                    "{}",
                    r.file
                );
                let key = field(&r.what, "key=").unwrap();
                match &q.header.target {
                    TargetAddress::Key(k) => assert_eq!(&k[..], key.as_bytes(), "{}", r.file),
                    other => panic!("{}: {other:?}", r.file),
                }
                // JacORB sends its CodeSets context (UTF-8 / UTF-16) first.
                let cs = q.header.contexts.code_sets().unwrap();
                if r.what.contains("contexts=CodeSets") {
                    let cs = cs.unwrap_or_else(|| panic!("{}: CodeSets context", r.file));
                    if r.file.starts_with("naming")
                        || r.file.starts_with("large")
                        || r.file.starts_with("oneway")
                    {
                        assert_eq!(
                            (cs.char_data, cs.wchar_data),
                            (0x0501_0001, 0x0001_0109),
                            "{}",
                            r.file
                        );
                    }
                } else {
                    assert!(cs.is_none(), "{}", r.file);
                }
            }
            Message::Reply(p) => {
                assert!(r.what.starts_with("Reply"), "{}", r.file);
                assert_eq!(p.header.request_id, id, "{}", r.file);
                let status = if r.what.contains("NO_EXCEPTION") {
                    ReplyStatus::NoException
                } else if r.what.contains("USER_EXCEPTION") {
                    ReplyStatus::UserException
                } else {
                    ReplyStatus::SystemException
                };
                assert_eq!(p.header.status, status, "{}", r.file);
                match status {
                    ReplyStatus::UserException => {
                        assert_eq!(
                            p.user_exception_id().unwrap(),
                            "IDL:omg.org/CosNaming/NamingContext/NotFound:1.0"
                        )
                    }
                    ReplyStatus::SystemException => {
                        let e = p.system_exception().unwrap();
                        assert!(r.what.contains(e.repo_id.as_ref()), "{}: {e}", r.file);
                        assert!(
                            r.what.contains(&format!("minor={:#010x}", e.minor)),
                            "{}: {e}",
                            r.file
                        );
                    }
                    _ => {}
                }
            }
            Message::LocateRequest(l) => {
                assert!(r.what.starts_with("LocateRequest"), "{}", r.file);
                assert_eq!(l.request_id, id, "{}", r.file);
            }
            Message::LocateReply(l) => {
                assert!(r.what.starts_with("LocateReply"), "{}", r.file);
                assert_eq!(l.request_id, id, "{}", r.file);
                match l.status {
                    LocateStatus::ObjectForward(ior) => {
                        assert!(r.what.contains("OBJECT_FORWARD"), "{}", r.file);
                        let p = ior.iiop_profile().expect("IIOP profile");
                        assert_eq!(p.host, "127.0.0.1");
                        assert_eq!(&p.object_key[..], b"iiopbench/bench/Bench");
                    }
                    LocateStatus::UnknownObject => {
                        assert!(r.what.contains("UNKNOWN_OBJECT"), "{}", r.file)
                    }
                    LocateStatus::ObjectHere => {
                        assert!(r.what.contains("OBJECT_HERE"), "{}", r.file)
                    }
                    other => panic!("{}: {other:?}", r.file),
                }
            }
            other => panic!("{}: unexpected {other:?}", r.file),
        }
    }
}

#[test]
fn the_large_jacorb_echo_carries_its_payload_intact() {
    let (_, m) = decode("large-01-client-request.bin");
    let Message::Request(q) = m else {
        panic!("request")
    };
    let mut r = q.body.reader(Options::default());
    let data = r.read_octet_seq().unwrap();
    assert_eq!(data.len(), 100_000);
    assert!(
        data.iter()
            .enumerate()
            .all(|(i, &b)| b == ((i * 7 + 3) & 0xff) as u8),
        "contract contents"
    );
    r.expect_end().unwrap();
    let (_, m) = decode("large-02-server-reply.bin");
    let Message::Reply(p) = m else {
        panic!("reply")
    };
    assert_eq!(
        p.body.reader(Options::default()).read_octet_seq().unwrap(),
        data
    );
}
