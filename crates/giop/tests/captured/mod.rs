//! Shared by the tests of GIOP messages cut from captures by
//! `scripts/orbs/giop_capture.py` (fixtures/giop/jacorb, fixtures/giop/tao):
//! their manifest and their decoding.

use std::path::PathBuf;

use bytes::Bytes;
use iiop_cdr::{ByteOrder, Options};
use iiop_giop::header::{Header, HEADER_LEN};
use iiop_giop::message::{Message, Request, ResponseMode};
use iiop_giop::Version;

/// `fixtures/giop/<name>`.
pub fn dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/giop")
        .join(name)
}

/// One line of a `manifest.txt`.
pub struct Row {
    pub file: String,
    pub sender: String,
    pub version: Version,
    pub order: ByteOrder,
    pub what: String,
}

/// The manifest of `fixtures/giop/<name>`: file, direction, sender, GIOP
/// version, byte order, what it is (tab-separated; `#` comments).
pub fn manifest(name: &str) -> Vec<Row> {
    std::fs::read_to_string(dir(name).join("manifest.txt"))
        .expect("manifest.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 6, "manifest line {l:?}");
            Row {
                file: f[0].into(),
                sender: f[2].into(),
                version: match f[3] {
                    "1.0" => Version::V1_0,
                    "1.1" => Version::V1_1,
                    "1.2" => Version::V1_2,
                    other => panic!("{}: version {other}", f[0]),
                },
                order: if f[4] == "big-endian" {
                    ByteOrder::Big
                } else {
                    ByteOrder::Little
                },
                what: f[5].into(),
            }
        })
        .collect()
}

/// Decode `fixtures/giop/<name>/<file>`: one whole, unfragmented message
/// whose size field matches the file.
pub fn decode(name: &str, file: &str) -> (Header, Message) {
    let raw = std::fs::read(dir(name).join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let h = Header::parse(&raw).unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_eq!(
        h.size as usize,
        raw.len() - HEADER_LEN,
        "{file}: size field"
    );
    assert!(!h.more_fragments, "{file}: nothing here is fragmented");
    let m = Message::decode(
        &h,
        Bytes::copy_from_slice(&raw[HEADER_LEN..]),
        Options::default(),
    )
    .unwrap_or_else(|e| panic!("{file}: {e}"));
    (h, m)
}

/// A field of a manifest description, e.g. `id=4` → "4".
pub fn field<'a>(what: &'a str, key: &str) -> Option<&'a str> {
    what.split([' ', ',']).find_map(|w| w.strip_prefix(key))
}

/// Decode a manifest row's file and check what every row states: the
/// header's GIOP version and byte order. Returns the message and the row's
/// request id.
pub fn decode_row(name: &str, r: &Row) -> (Header, Message, u32) {
    let (h, m) = decode(name, &r.file);
    assert_eq!(h.version, r.version, "{}", r.file);
    assert_eq!(h.order, r.order, "{}", r.file);
    let id: u32 = field(&r.what, "id=")
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{}: no id", r.file));
    (h, m, id)
}

/// A request agrees with its manifest row: a "Request" with the row's id,
/// operation and oneway flag.
pub fn check_request(r: &Row, q: &Request, id: u32) {
    assert!(r.what.starts_with("Request"), "{}", r.file);
    assert_eq!(q.header.request_id, id, "{}", r.file);
    assert_eq!(
        Some(q.header.operation()),
        field(&r.what, "op="),
        "{}",
        r.file
    );
    assert_eq!(
        q.header.response == ResponseMode::Oneway,
        r.what.contains(" oneway "),
        "{}",
        r.file
    );
}
