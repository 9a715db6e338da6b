//! Every GIOP message in `fixtures/giop/jacorb/` — JacORB 3.9 talking to
//! omniORB's naming service, a raw sender talking to the JacORB bench
//! server, omniORB's nameclt talking to JacORB (see that directory's
//! README.md and manifest.txt) — decodes to what its manifest says.

mod captured;

use captured::field;
use iiop_cdr::Options;
use iiop_giop::header::Header;
use iiop_giop::message::{LocateStatus, Message, ReplyStatus};
use iiop_giop::{MsgType, TargetAddress};

fn manifest() -> Vec<captured::Row> {
    captured::manifest("jacorb")
}

fn decode(file: &str) -> (Header, Message) {
    captured::decode("jacorb", file)
}

#[test]
fn every_capture_decodes_as_its_manifest_says() {
    let rows = manifest();
    assert_eq!(rows.len(), 29, "all captures listed");
    for r in &rows {
        let (h, m, id) = captured::decode_row("jacorb", r);
        match m {
            Message::Request(q) => {
                assert_eq!(h.msg_type, MsgType::Request);
                captured::check_request(r, &q, id);
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
                // Every reply here comes from an ORB's server.
                assert!(
                    r.sender.starts_with("JacORB") || r.sender.starts_with("omniORB"),
                    "{}: {}",
                    r.file,
                    r.sender
                );
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
