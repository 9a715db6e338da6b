//! corbaloc / corbaname parsing: arbitrary strings. Must never panic;
//! a corbaloc that parses prints back to one that parses equal, and its
//! IOR (when it has an IIOP address) carries the same object key.
#![no_main]

use iiop_giop::corbaloc::{parse_name, unescape, Corbaloc, Corbaname};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(c) = s.parse::<Corbaloc>() {
        let back: Corbaloc = c.to_string().parse().expect("printed corbaloc parses");
        assert_eq!(back, c);
        if let Some(ior) = c.to_ior("IDL:x:1.0") {
            let key = ior.iiop_profile().expect("IIOP profile").object_key;
            assert_eq!(&key[..], &c.key[..]);
        }
    }
    if let Ok(n) = s.parse::<Corbaname>() {
        let _ = n.components();
        let _ = n.naming_context();
    }
    let _ = parse_name(s);
    let _ = unescape(s, "fuzz");
});
