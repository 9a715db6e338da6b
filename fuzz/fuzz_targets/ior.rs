//! IOR parsing: arbitrary bytes as a stringified `IOR:` reference and as a
//! CDR-encoded IOR (first byte: byte order). Must never panic; whatever
//! parses prints back to a string that parses to the same IOR, and
//! encodes to CDR that decodes to the same IOR. IIOP profiles that decode
//! re-encode to bodies that decode the same.
#![no_main]

use iiop_cdr::{ByteOrder, Reader, Writer};
use iiop_giop::ior::{IiopProfile, Ior};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(ior) = s.parse::<Ior>() {
            let back: Ior = ior.to_string().parse().expect("printed IOR parses");
            assert_eq!(back, ior);
            profiles(&ior);
        }
    }
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let order = ByteOrder::from_flag(flags & 1 == 1);
    let mut r = Reader::new(rest, order);
    if let Ok(ior) = Ior::decode(&mut r) {
        let mut buf = bytes::BytesMut::new();
        ior.encode(&mut Writer::new(&mut buf, order))
            .expect("encodes");
        let again = Ior::decode(&mut Reader::new(&buf, order)).expect("decodes");
        assert_eq!(again.type_id, ior.type_id);
        assert_eq!(again.profiles, ior.profiles);
        profiles(&ior);
    }
});

fn profiles(ior: &Ior) {
    for p in &ior.profiles {
        if let Some(Ok(iiop)) = p.iiop() {
            let again = IiopProfile::decode(&iiop.encode()).expect("re-encoded profile decodes");
            assert_eq!(again.host, iiop.host);
            assert_eq!(again.port, iiop.port);
            assert_eq!(again.object_key, iiop.object_key);
        }
    }
}
