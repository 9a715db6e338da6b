//! Fuzz-style properties: no input makes the codec or the parsers panic,
//! and a well-formed header with random contents decodes or fails cleanly.

use bytes::BytesMut;
use iiop_cdr::Options;
use iiop_giop::codec::{CodecConfig, Decoder};
use iiop_giop::context::{BiDirIiop, CodeSetComponentInfo, CodeSetContext};
use iiop_giop::corbaloc::{parse_name, Corbaloc, Corbaname, Target};
use iiop_giop::header::{Header, MsgType, Version};
use iiop_giop::ior::{summary, IiopProfile, Ior};
use iiop_giop::message::Message;
use proptest::prelude::*;

fn small_codec() -> CodecConfig {
    CodecConfig {
        max_message_size: 1 << 16,
        max_reassembled_size: 1 << 16,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn codec_never_panics_on_random_bytes(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        let mut d = Decoder::new(small_codec());
        let mut buf = BytesMut::from(&data[..]);
        for _ in 0..64 {
            match d.decode(&mut buf) {
                Ok(Some(f)) => { let _ = Message::decode(&f.header, f.payload, Options::default()); }
                Ok(None) | Err(_) => break,
            }
        }
        let _ = Header::parse(&data);
    }

    #[test]
    fn valid_headers_with_random_payloads(
        minor in 0u8..3,
        flags in 0u8..4,
        t in 0u8..8,
        payload in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let mut frame = vec![b'G', b'I', b'O', b'P', 1, minor, if minor == 0 { flags & 1 } else { flags }, t];
        let size = payload.len() as u32;
        frame.extend_from_slice(&if flags & 1 == 1 { size.to_le_bytes() } else { size.to_be_bytes() });
        frame.extend_from_slice(&payload);
        // Followed by a fragment, to exercise reassembly paths.
        let mut frag = frame.clone();
        frag[7] = MsgType::Fragment as u8;
        frame.extend_from_slice(&frag);
        let mut d = Decoder::new(small_codec());
        let mut buf = BytesMut::from(&frame[..]);
        for _ in 0..4 {
            match d.decode(&mut buf) {
                Ok(Some(f)) => {
                    let _ = Message::decode(&f.header, f.payload, Options::default());
                }
                Ok(None) | Err(_) => break,
            }
        }
        let _ = Version::new(1, minor);
    }

    #[test]
    fn reference_parsers_never_panic(s in "\\PC{0,80}") {
        let _ = s.parse::<Corbaloc>();
        let _ = s.parse::<Corbaname>();
        let _ = s.parse::<Target>();
        let _ = s.parse::<Ior>();
        let _ = parse_name(&s);
        let _ = format!("corbaloc:{s}").parse::<Corbaloc>();
        let _ = format!("corbaname:{s}").parse::<Corbaname>();
    }

    #[test]
    fn ior_hex_and_encapsulations_never_panic(data in proptest::collection::vec(any::<u8>(), 0..200)) {
        let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
        if let Ok(ior) = format!("IOR:{hex}").parse::<Ior>() {
            let _ = summary(&ior);
            let _ = ior.to_string();
        }
        let _ = IiopProfile::decode(&data);
        let _ = CodeSetComponentInfo::decode(&data);
        let _ = CodeSetContext::decode(&data);
        let _ = BiDirIiop::decode(&data);
    }

    #[test]
    fn built_iors_round_trip(host in "[a-z0-9.]{1,20}", port: u16, key in proptest::collection::vec(any::<u8>(), 0..40)) {
        let ior = Ior::iiop("IDL:X:1.0", &host, port, key.clone());
        let back: Ior = ior.to_string().parse().unwrap();
        prop_assert_eq!(&back, &ior);
        let p = back.iiop_profile().unwrap();
        prop_assert_eq!(&p.object_key[..], &key[..]);
        let loc = Corbaloc { addresses: vec![iiop_giop::corbaloc::ObjAddr::Iiop { version: None, host: host.clone(), port: Some(port), tls: false }], key: key.clone().into() };
        let back: Corbaloc = loc.to_string().parse().unwrap();
        prop_assert_eq!(back, loc);
    }
}
