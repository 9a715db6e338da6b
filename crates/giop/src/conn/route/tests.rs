//! Every routing decision driven by hand, with exact expected values:
//! answers built with the message encoders, no connection, no socket.

use bytes::{Bytes, BytesMut};
use iiop_cdr::{ByteOrder, Options};

use super::*;
use crate::conn::client::ClientSetup;
use crate::header::Header;
use crate::message::{encode_location_forward, encode_reply, Message, ReplyStatus};

const ADDR1: &str = "h:1";

fn cfg() -> ConnConfig {
    ConnConfig {
        max_forwards: 2,
        ..ConnConfig::default()
    }
}

/// A profile at `h:port` for `key`, GIOP 1.`minor`, with or without our
/// code sets.
fn profile(port: u16, key: &str, minor: u8, code_sets: bool) -> IiopProfile {
    let mut p = IiopProfile::new("h", port, Bytes::copy_from_slice(key.as_bytes()));
    p.version = Version { major: 1, minor };
    if !code_sets {
        p.components.clear();
    }
    p
}

/// A reference as an ORB publishes it: GIOP 1.2, code sets.
fn ior(port: u16, key: &str) -> Ior {
    Ior::builder("IDL:Bench/Perf:1.0")
        .profile(&profile(port, key, 2, true))
        .build()
}

/// A corbaloc's reference: no code sets, GIOP 1.`minor`.
fn corbaloc(port: u16, key: &str, minor: u8) -> Ior {
    Ior::builder("")
        .profile(&profile(port, key, minor, false))
        .build()
}

fn key(k: &str) -> TargetAddress {
    TargetAddress::Key(Bytes::copy_from_slice(k.as_bytes()))
}

fn decoded(b: &BytesMut) -> Reply {
    let h = Header::parse(b).unwrap();
    match Message::decode(&h, b.clone().freeze().slice(12..), Options::default()) {
        Ok(Message::Reply(r)) => r,
        m => panic!("{m:?}"),
    }
}

fn ok_reply() -> Result<Answer, ClientError> {
    let mut b = BytesMut::new();
    encode_reply(
        &mut b,
        Version::V1_2,
        ByteOrder::Big,
        Options::default(),
        1,
        ReplyStatus::NoException,
        &[],
        |_| Ok(()),
    )
    .unwrap();
    Ok(Answer::Reply(Some(decoded(&b))))
}

fn forward(to: &Ior, permanent: bool) -> Result<Answer, ClientError> {
    let mut b = BytesMut::new();
    encode_location_forward(&mut b, Version::V1_2, ByteOrder::Big, 1, to, permanent).unwrap();
    Ok(Answer::Reply(Some(decoded(&b))))
}

fn needs_addressing(d: i16) -> Result<Answer, ClientError> {
    let mut b = BytesMut::new();
    encode_reply(
        &mut b,
        Version::V1_2,
        ByteOrder::Big,
        Options::default(),
        1,
        ReplyStatus::NeedsAddressingMode,
        &[],
        |w| {
            w.write_i16(d);
            Ok(())
        },
    )
    .unwrap();
    Ok(Answer::Reply(Some(decoded(&b))))
}

fn located(status: LocateStatus) -> Result<Answer, ClientError> {
    Ok(Answer::Locate(LocateReply {
        request_id: 7,
        status,
    }))
}

fn closed() -> Result<Answer, ClientError> {
    Err(ClientError::Closed {
        addr: ADDR1.into(),
        retryable: true,
    })
}

fn wchar() -> ClientError {
    ClientError::Encode(GiopError::Cdr {
        what: "request body",
        source: CdrError::WcharNotNegotiated { offset: 4 },
    })
}

fn request(k: &str) -> Next<'static> {
    Next::Request(Cow::Owned(key(k)))
}

#[test]
fn the_version_is_the_configured_one_else_the_profiles_capped_at_1_2() {
    let p = |minor| profile(2809, "K", minor, false);
    assert_eq!(version_for(&p(0), None), Version::V1_0);
    assert_eq!(version_for(&p(1), None), Version::V1_1);
    assert_eq!(version_for(&p(2), None), Version::V1_2);
    assert_eq!(version_for(&p(3), None), Version::V1_2);
    assert_eq!(version_for(&p(0), Some(Version::V1_2)), Version::V1_2);
    assert_eq!(version_for(&p(3), Some(Version::V1_1)), Version::V1_1);
}

#[test]
fn a_destination_is_the_first_iiop_profile_in_the_version_with_the_code_sets() {
    let d = Destination::of(&ior(2809, "Bench"), &cfg()).unwrap();
    assert_eq!(
        d,
        Destination {
            endpoint: Endpoint::tcp("h", 2809),
            version: Version::V1_2,
            code_sets: Some(CodeSetComponentInfo::ours()),
            key: key("Bench"),
        }
    );
    assert!(d.negotiates());
    let forced = ConnConfig {
        version: Some(Version::V1_1),
        ..cfg()
    };
    let d = Destination::of(&corbaloc(2809, "Bench", 0), &forced).unwrap();
    assert_eq!((d.version, d.code_sets.is_none()), (Version::V1_1, true));
    assert!(!d.negotiates());
    // GIOP 1.0 cannot negotiate the code sets a reference names.
    let old = Ior::builder("").profile(&profile(1, "K", 0, true)).build();
    assert!(!Destination::of(&old, &cfg()).unwrap().negotiates());
    assert_eq!(
        Destination::of(&Ior::nil(), &cfg()).unwrap_err(),
        ClientError::NoProfile
    );
}

#[test]
fn a_connection_carries_a_destination_of_its_endpoint_version_and_code_sets() {
    let setup = |version, code_sets: bool| {
        let cs = CodeSetComponentInfo::ours();
        ClientSetup::negotiate("h:1".into(), version, &cfg(), code_sets.then_some(&cs))
    };
    let ep = Endpoint::tcp("h", 1);
    let with_cs = Destination::of(&ior(1, "K"), &cfg()).unwrap();
    let without = Destination::of(&corbaloc(1, "K", 2), &cfg()).unwrap();
    // Opened for what it carries.
    assert!(with_cs.carried_by(&ep, &setup(Version::V1_2, true)));
    assert!(without.carried_by(&ep, &setup(Version::V1_2, false)));
    // Code sets negotiated carry a reference that names none, or others.
    assert!(without.carried_by(&ep, &setup(Version::V1_2, true)));
    // A connection without code sets cannot carry a reference that brings
    // them (its wide characters could not be encoded there).
    assert!(!with_cs.carried_by(&ep, &setup(Version::V1_2, false)));
    // Another endpoint, another version, TLS: another connection.
    assert!(!with_cs.carried_by(&Endpoint::tcp("h", 2), &setup(Version::V1_2, true)));
    assert!(!with_cs.carried_by(&Endpoint::tcp("g", 1), &setup(Version::V1_2, true)));
    assert!(!with_cs.carried_by(&ep, &setup(Version::V1_1, true)));
    let tls = Endpoint {
        tls: true,
        ..ep.clone()
    };
    assert!(!with_cs.carried_by(&tls, &setup(Version::V1_2, true)));
    // A 1.0 connection never negotiates: it carries a 1.0 destination
    // whatever the reference names.
    let old = Ior::builder("").profile(&profile(1, "K", 0, true)).build();
    let old = Destination::of(&old, &cfg()).unwrap();
    assert!(old.carried_by(&ep, &setup(Version::V1_0, true)));
}

#[test]
fn a_twoway_goes_straight_and_its_reply_confirms_the_destination() {
    let route = Route::new(ior(1, "Bench"), &cfg()).unwrap();
    let mut call = route.call(Kind::Request(ResponseMode::Twoway), false, &cfg());
    assert_eq!(call.next().unwrap(), request("Bench"));
    assert!(matches!(
        call.on_answer(ok_reply(), ADDR1),
        Ok(Progress::Done(Answer::Reply(Some(_))))
    ));
    assert!(call.confirmed());
    assert!(call.hops().is_empty());
}

#[test]
fn forwards_are_followed_and_recorded_and_later_calls_start_where_they_led() {
    let route = Route::new(corbaloc(1, "Bench", 2), &cfg()).unwrap();
    let mut call = route.call(Kind::Request(ResponseMode::Twoway), true, &cfg());
    let hop = match call.on_answer(forward(&ior(2, "POA/Bench"), false), ADDR1) {
        Ok(Progress::Forwarded(h)) => h,
        r => panic!("{r:?}"),
    };
    assert_eq!(
        hop.to_string(),
        r#"LOCATION_FORWARD from h:1 key "Bench" to h:2 key "POA/Bench""#
    );
    assert_eq!(call.destination().endpoint, Endpoint::tcp("h", 2));
    assert!(!call.confirmed(), "a new destination is not confirmed");
    assert_eq!(call.next().unwrap(), request("POA/Bench"));
    let Ok(Progress::Forwarded(perm)) = call.on_answer(forward(&ior(3, "\x01K"), true), "h:2")
    else {
        panic!()
    };
    assert_eq!(
        perm,
        Hop {
            status: "LOCATION_FORWARD_PERM",
            from: r#"h:2 key "POA/Bench""#.into(),
            to: "h:3 key 0x014b".into(),
        }
    );
    assert!(matches!(
        call.on_answer(ok_reply(), "h:3"),
        Ok(Progress::Done(_))
    ));
    assert_eq!(call.hops(), [hop.clone(), perm.clone()]);
    assert_eq!(call.target(), &ior(3, "\x01K"));
    // Later calls start at the last forward, with the chain.
    let later = route.after(&call);
    assert_eq!(later.reference(), &ior(3, "\x01K"));
    assert_eq!(later.forwarded_to(), Some(&ior(3, "\x01K")));
    assert_eq!(later.destination().key, key("\x01K"));
    assert_eq!(later.chain(), [hop, perm]);
    assert_eq!(route.forwarded_to(), None);
    let again = later.call(Kind::Request(ResponseMode::Twoway), true, &cfg());
    assert_eq!(again.next().unwrap(), request("\x01K"));
}

#[test]
fn a_forward_loop_stops_beyond_the_hop_limit_naming_who_sent_the_last() {
    let me = ior(1, "loop");
    let route = Route::new(me.clone(), &cfg()).unwrap();
    let mut call = route.call(Kind::Request(ResponseMode::Twoway), true, &cfg());
    for _ in 0..2 {
        assert!(matches!(
            call.on_answer(forward(&me, false), ADDR1),
            Ok(Progress::Forwarded(_))
        ));
    }
    assert_eq!(
        call.on_answer(forward(&me, false), ADDR1).unwrap_err(),
        ClientError::TooManyForwards {
            addr: ADDR1.into(),
            limit: 2
        }
    );
    assert_eq!(call.hops().len(), 2);
    // LocateRequests count against the same limit.
    let mut call = route.call(Kind::Locate, true, &cfg());
    assert_eq!(call.next().unwrap(), Next::Locate(Cow::Owned(key("loop"))));
    for _ in 0..2 {
        let fwd = located(LocateStatus::ObjectForward(me.clone()));
        assert!(matches!(
            call.on_answer(fwd, ADDR1),
            Ok(Progress::Forwarded(_))
        ));
    }
    let fwd = located(LocateStatus::ObjectForwardPerm(me.clone()));
    assert!(matches!(
        call.on_answer(fwd, ADDR1),
        Err(ClientError::TooManyForwards { limit: 2, .. })
    ));
}

#[test]
fn close_connection_is_retried_once_on_a_new_connection() {
    let route = Route::new(ior(1, "K"), &cfg()).unwrap();
    for kind in [
        Kind::Request(ResponseMode::Twoway),
        Kind::Prepared(ResponseMode::Twoway),
        Kind::Locate,
    ] {
        let mut call = route.call(kind, true, &cfg());
        assert!(matches!(
            call.on_answer(closed(), ADDR1),
            Ok(Progress::Reconnect)
        ));
        assert_eq!(call.destination().endpoint, Endpoint::tcp("h", 1));
        assert!(call.next().is_ok(), "{kind:?} goes again");
        assert_eq!(
            call.on_answer(closed(), ADDR1).unwrap_err(),
            closed().unwrap_err()
        );
    }
    // A close without CloseConnection is not retried.
    let mut call = route.call(Kind::Request(ResponseMode::Twoway), true, &cfg());
    let eof = ClientError::Closed {
        addr: ADDR1.into(),
        retryable: false,
    };
    assert_eq!(call.on_answer(Err(eof.clone()), ADDR1).unwrap_err(), eof);
}

#[test]
fn needs_addressing_mode_is_answered_once_in_the_disposition_asked_for() {
    let r = ior(1, "K");
    let route = Route::new(r.clone(), &cfg()).unwrap();
    let mut call = route.call(Kind::Request(ResponseMode::Twoway), true, &cfg());
    assert!(matches!(
        call.on_answer(needs_addressing(1), ADDR1),
        Ok(Progress::Continue)
    ));
    let profile = r.profiles[0].clone();
    assert_eq!(
        call.next().unwrap(),
        Next::Request(Cow::Owned(TargetAddress::Profile(profile)))
    );
    assert_eq!(
        call.on_answer(needs_addressing(2), ADDR1).unwrap_err(),
        ClientError::NeedsAddressingMode(2)
    );
    // A prepared request's bytes carry their address.
    let mut call = route.call(Kind::Prepared(ResponseMode::Twoway), true, &cfg());
    assert_eq!(
        call.on_answer(needs_addressing(1), ADDR1).unwrap_err(),
        ClientError::PreparedCannotFollow {
            addr: ADDR1.into(),
            what: "NEEDS_ADDRESSING_MODE".into()
        }
    );
}

#[test]
fn a_oneway_no_reply_has_confirmed_goes_after_a_probe() {
    let route = Route::new(corbaloc(1, "Bench", 2), &cfg()).unwrap();
    let mut call = route.call(Kind::Request(ResponseMode::Oneway), false, &cfg());
    assert_eq!(call.next().unwrap(), Next::Probe(Cow::Owned(key("Bench"))));
    // The probe is forwarded: probe again where it leads.
    assert!(matches!(
        call.on_answer(forward(&ior(2, "Long"), false), ADDR1),
        Ok(Progress::Forwarded(_))
    ));
    assert_eq!(call.next().unwrap(), Next::Probe(Cow::Owned(key("Long"))));
    // Any reply confirms (an exception too: the object is there).
    assert!(matches!(
        call.on_answer(ok_reply(), "h:2"),
        Ok(Progress::Continue)
    ));
    assert!(call.confirmed());
    assert_eq!(call.next().unwrap(), request("Long"));
    assert!(matches!(
        call.on_answer(Ok(Answer::Reply(None)), "h:2"),
        Ok(Progress::Done(Answer::Reply(None)))
    ));
    // Confirmed: no probe; a prepared oneway alike; a call that expects
    // a reply needs none.
    let call = route.call(Kind::Request(ResponseMode::Oneway), true, &cfg());
    assert_eq!(call.next().unwrap(), request("Bench"));
    let call = route.call(Kind::Prepared(ResponseMode::Oneway), false, &cfg());
    assert!(matches!(call.next().unwrap(), Next::Probe(_)));
    let call = route.call(Kind::Request(ResponseMode::SyncWithServer), false, &cfg());
    assert_eq!(call.next().unwrap(), request("Bench"));
    // A bare reference starts unconfirmed.
    let r = ior(1, "K");
    let call = Call::to(&r, Kind::Request(ResponseMode::Oneway), &cfg()).unwrap();
    assert!(matches!(call.next().unwrap(), Next::Probe(_)));
}

#[test]
fn wide_characters_for_a_reference_without_code_sets_locate_first() {
    let route = Route::new(corbaloc(1, "Bench", 2), &cfg()).unwrap();
    let mut call = route.call(Kind::Request(ResponseMode::Twoway), true, &cfg());
    assert_eq!(call.next().unwrap(), request("Bench"));
    assert!(matches!(
        call.on_answer(Err(wchar()), ADDR1),
        Ok(Progress::Continue)
    ));
    assert_eq!(call.next().unwrap(), Next::Locate(Cow::Owned(key("Bench"))));
    // The forward names code sets: the call goes there, on a connection
    // that negotiates them.
    let to = ior(1, "POA/Bench");
    let Ok(Progress::Forwarded(hop)) =
        call.on_answer(located(LocateStatus::ObjectForward(to.clone())), ADDR1)
    else {
        panic!()
    };
    assert_eq!(hop.status, "OBJECT_FORWARD");
    assert!(call.destination().negotiates());
    assert_eq!(call.next().unwrap(), request("POA/Bench"));
    // There, a wide-character failure is final: once.
    assert_eq!(call.on_answer(Err(wchar()), ADDR1).unwrap_err(), wchar());

    // OBJECT_HERE: nothing to learn the code sets from.
    let mut call = route.call(Kind::Request(ResponseMode::Twoway), true, &cfg());
    call.on_answer(Err(wchar()), ADDR1).unwrap();
    let here = located(LocateStatus::ObjectHere);
    assert_eq!(call.on_answer(here, ADDR1).unwrap_err(), wchar());

    // A forward to another reference without code sets: the hop counts,
    // the call fails after it.
    let mut call = route.call(Kind::Request(ResponseMode::Twoway), true, &cfg());
    call.on_answer(Err(wchar()), ADDR1).unwrap();
    let plain = located(LocateStatus::ObjectForward(corbaloc(2, "Other", 2)));
    assert!(matches!(
        call.on_answer(plain, ADDR1),
        Ok(Progress::Forwarded(_))
    ));
    assert_eq!(call.next().unwrap_err(), wchar());

    // A reference with code sets (on a connection that could not encode
    // wide characters anyway): no locate.
    let route = Route::new(ior(1, "K"), &cfg()).unwrap();
    let mut call = route.call(Kind::Request(ResponseMode::Twoway), true, &cfg());
    assert_eq!(call.on_answer(Err(wchar()), ADDR1).unwrap_err(), wchar());
}

#[test]
fn a_locate_follows_object_forward_and_ends_with_the_status_and_reference() {
    let route = Route::new(corbaloc(1, "Bench", 2), &cfg()).unwrap();
    let mut call = route.call(Kind::Locate, false, &cfg());
    let to = ior(2, "POA/Bench");
    assert!(matches!(
        call.on_answer(located(LocateStatus::ObjectForwardPerm(to.clone())), ADDR1),
        Ok(Progress::Forwarded(Hop {
            status: "OBJECT_FORWARD_PERM",
            ..
        }))
    ));
    assert_eq!(
        call.next().unwrap(),
        Next::Locate(Cow::Owned(key("POA/Bench")))
    );
    match call.on_answer(located(LocateStatus::ObjectHere), "h:2") {
        Ok(Progress::Done(Answer::Locate(l))) => {
            assert_eq!(
                l,
                LocateReply {
                    request_id: 7,
                    status: LocateStatus::ObjectHere
                }
            )
        }
        r => panic!("{r:?}"),
    }
    assert_eq!(call.target(), &to);
    assert!(call.confirmed(), "OBJECT_HERE confirms");
    let mut call = route.call(Kind::Locate, false, &cfg());
    call.on_answer(located(LocateStatus::UnknownObject), ADDR1)
        .unwrap();
    assert!(!call.confirmed());
}

#[test]
fn a_prepared_request_cannot_follow_a_forward_but_the_client_moves() {
    let route = Route::new(corbaloc(1, "Bench", 2), &cfg()).unwrap();
    let mut call = route.call(Kind::Prepared(ResponseMode::Twoway), true, &cfg());
    assert_eq!(call.next().unwrap(), request("Bench"));
    let Ok(Progress::Forwarded(hop)) = call.on_answer(forward(&ior(2, "L"), false), ADDR1) else {
        panic!()
    };
    assert_eq!(
        call.next().unwrap_err(),
        ClientError::PreparedCannotFollow {
            addr: ADDR1.into(),
            what: r#"LOCATION_FORWARD from h:1 key "Bench" to h:2 key "L""#.into(),
        }
    );
    assert_eq!(route.after(&call).chain(), [hop]);
}

#[test]
fn a_forward_to_a_reference_with_nowhere_to_go_names_who_sent_it() {
    let route = Route::new(ior(1, "K"), &cfg()).unwrap();
    let mut call = route.call(Kind::Request(ResponseMode::Twoway), true, &cfg());
    assert_eq!(
        call.on_answer(forward(&Ior::new("IDL:X:1.0", Vec::new()), false), ADDR1)
            .unwrap_err(),
        ClientError::ForwardedNowhere { addr: ADDR1.into() }
    );
}

#[test]
fn another_key_on_a_route_is_the_same_destination_unforwarded() {
    let route = Route::new(corbaloc(1, "Bench", 2), &cfg()).unwrap();
    let mut call = route.call(Kind::Request(ResponseMode::Twoway), true, &cfg());
    call.on_answer(forward(&ior(1, "Long"), false), ADDR1)
        .unwrap();
    let moved = route.after(&call);
    let other = moved.with_key(b"Dispatch50");
    assert_eq!(other.destination().key, key("Dispatch50"));
    assert_eq!(other.destination().endpoint, moved.destination().endpoint);
    assert_eq!(
        other.reference().iiop_profile().unwrap().object_key,
        &b"Dispatch50"[..]
    );
    assert!(other.chain().is_empty());
    assert_eq!(other.forwarded_to(), None);
}
