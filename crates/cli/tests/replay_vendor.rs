//! Black-box: bytes captured from TAO, JacORB and omniORB
//! (fixtures/giop/{tao,jacorb,omniorb}/pcap) re-sent to our server by
//! `iiopbench replay`.
//! Every echo reply must equal the vendor server's captured one, read with
//! each connection's own code sets and GIOP version; TAO's forwards from
//! its short keys are no difference where our server answers the key
//! itself (and JacORB's OBJECT_FORWARDs to LocateRequests, which replay
//! re-sends); and TAO's one known wrong answer (UTF-16 read big-endian in a
//! little-endian GIOP 1.1 message) must show up as exactly the two
//! differences it is.

use std::path::PathBuf;

use iiop_bench_idl::run::{RunningServer, ServerOptions};
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn server() -> RunningServer {
    RunningServer::start(ServerOptions {
        threads: 1,
        ..Default::default()
    })
    .unwrap()
}

/// `iiopbench replay FIXTURE --target IOR --idl bench.idl`: exit code and
/// the results document.
fn replay(fixture: &str, srv: &RunningServer) -> (i32, Value) {
    let json = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "iiopbench-replay-vendor-{}-{}.json",
        std::process::id(),
        fixture.replace('/', "-")
    ));
    let pcap = root().join("fixtures/giop").join(fixture);
    let ior = srv.refs().ior.to_string();
    let idl = root().join("fixtures/idl/bench.idl");
    let code = iiopbench::main_with_args([
        "iiopbench",
        "replay",
        pcap.to_str().unwrap(),
        "--target",
        &ior,
        "--idl",
        idl.to_str().unwrap(),
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&json).unwrap_or_else(|_| "null".into());
    let _ = std::fs::remove_file(&json);
    (code, serde_json::from_str(&text).unwrap())
}

fn cases(v: &Value) -> &Vec<Value> {
    v["cases"].as_array().expect("cases")
}

/// The case of `op` on the object key `key`.
fn case<'a>(v: &'a Value, op: &str, key: &str) -> &'a Value {
    cases(v)
        .iter()
        .find(|c| c["params"]["operation"] == op && c["params"]["object_key"] == key)
        .unwrap_or_else(|| panic!("no case {op} on {key}: {v}"))
}

fn differences(v: &Value) -> Vec<String> {
    v["params"]["differences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap().to_string())
        .collect()
}

/// Every case replayed all its calls, none failed or differed.
fn all_as_captured(name: &str, code: i32, v: &Value) {
    assert_eq!(code, 0, "{name}: {:?}", differences(v));
    assert!(differences(v).is_empty(), "{name}");
    for c in cases(v) {
        assert_eq!(c["calls"], c["extra"]["captured"], "{name}: {c}");
        assert_eq!(c["extra"]["failed"], 0, "{name}: {c}");
        assert_eq!(c["extra"]["differing"], 0, "{name}: {c}");
    }
}

#[test]
fn taos_echo_of_every_type_replays_against_our_server_reply_for_reply() {
    let srv = server();
    let (code, v) = replay("tao/pcap/types.pcap", &srv);
    all_as_captured("types", code, &v);
    // All 26 bench.idl types, each echo's value compared through bench.idl
    // with TAO's captured reply.
    assert_eq!(cases(&v).len(), 26, "{v}");
    for c in cases(&v) {
        let op = c["params"]["operation"].as_str().unwrap();
        assert!(op.starts_with("echo_"), "{op}");
        assert_eq!(c["extra"]["compared_bodies"], 1, "{op}");
        // TAO's POA key, printable: the captured key's bytes %-escaped.
        let key = c["params"]["object_key"].as_str().unwrap();
        assert!(key.starts_with("%14%01%0f%00RST"), "{key}");
    }
}

#[test]
fn taos_client_requests_replay_against_our_server() {
    let srv = server();
    let (code, v) = replay("tao/pcap/client.pcap", &srv);
    all_as_captured("client", code, &v);
    for op in [
        "echo_wstring",
        "echo_wchar",
        "echo_string",
        "echo_char",
        "echo_perfstruct",
    ] {
        assert_eq!(case(&v, op, "Bench")["extra"]["compared_bodies"], 1, "{op}");
    }
    assert_eq!(case(&v, "send_oneway_long", "Bench")["calls"], 1);
}

#[test]
fn taos_forwards_are_no_difference_where_our_server_answers_the_key() {
    // TAO forwarded "Bench" to its POA key; our server answers "Bench"
    // itself, and the retries on the POA key go to our main object.
    let srv = server();
    let (code, v) = replay("tao/pcap/forward.pcap", &srv);
    all_as_captured("forward", code, &v);
    for op in ["echo_long", "echo_string"] {
        let short = case(&v, op, "Bench");
        assert_eq!(short["extra"]["answered_forwards"], 1, "{op}");
        assert_eq!(short["extra"]["compared_bodies"], 0, "{op}");
        let retry = cases(&v)
            .iter()
            .find(|c| c["params"]["operation"] == op && c["params"]["object_key"] != "Bench")
            .expect("the retry on the POA key");
        assert_eq!(retry["extra"]["compared_bodies"], 1, "{op}");
        assert_eq!(retry["extra"]["answered_forwards"], 0, "{op}");
    }
}

#[test]
fn taos_giop_11_utf16_quirk_is_exactly_two_differences() {
    let srv = server();
    let (code, v) = replay("tao/pcap/wchar11.pcap", &srv);
    assert_eq!(code, 1, "a replay with differences fails");
    let d = differences(&v);
    assert_eq!(d.len(), 2, "{d:?}");
    for (line, op) in d.iter().zip(["echo_wchar", "echo_wstring"]) {
        assert!(
            line.contains(op) && line.contains("reply value differs"),
            "{line}"
        );
    }
    for c in cases(&v) {
        assert_eq!(c["extra"]["failed"], 0, "{c}");
        assert_eq!(c["extra"]["compared_bodies"], 1, "{c}");
        assert_eq!(c["extra"]["differing"], 1, "{c}");
    }
}

#[test]
fn jacorbs_captures_replay_against_our_server() {
    let srv = server();
    for f in ["large", "oneway", "raw"] {
        let (code, v) = replay(&format!("jacorb/pcap/{f}.pcap"), &srv);
        all_as_captured(f, code, &v);
    }
    // raw.pcap's LocateRequests are replayed too: JacORB forwarded
    // `Bench` (GIOP 1.2 and 1.0), which our server holds itself (no
    // difference), and did not know `NoSuchKey`, nor does our server.
    let (_, v) = replay("jacorb/pcap/raw.pcap", &srv);
    let bench = case(&v, "(LocateRequest)", "Bench");
    assert_eq!(bench["params"]["mode"], "locate");
    assert_eq!(
        (
            bench["calls"].as_u64(),
            bench["extra"]["answered_forwards"].as_u64()
        ),
        (Some(2), Some(2))
    );
    let unknown = case(&v, "(LocateRequest)", "NoSuchKey");
    assert_eq!(
        (
            unknown["calls"].as_u64(),
            unknown["extra"]["differing"].as_u64()
        ),
        (Some(1), Some(0))
    );
    let (_, v) = replay("jacorb/pcap/large.pcap", &srv);
    assert_eq!(
        case(&v, "echo_octet", "iiopbench/bench/Bench")["extra"]["compared_bodies"],
        1
    );
}

#[test]
fn omniorbs_locate_requests_replay_against_our_server() {
    // omniORB's client locates an object it holds an IOR of before its
    // first call (fixtures/giop/omniorb/README.md, scripts/orbs/omniorb/capture).
    let srv = server();
    let (code, v) = replay("omniorb/pcap/locate.pcap", &srv);
    all_as_captured("locate", code, &v);
    let here = case(&v, "(LocateRequest)", "Bench");
    assert_eq!(here["params"]["mode"], "locate");
    assert_eq!(here["calls"], 1);
    assert_eq!(case(&v, "ping", "Bench")["calls"], 3);
    // Through a short key our --forward-keys server forwarded: omniORB
    // located the long key it was sent to, then called it. Our plain
    // server holds `Bench` itself: an answered forward, no difference.
    let (code, v) = replay("omniorb/pcap/locate-forward.pcap", &srv);
    all_as_captured("locate-forward", code, &v);
    let short = case(&v, "(LocateRequest)", "Bench");
    assert_eq!(short["extra"]["answered_forwards"], 1);
    let long: Vec<&Value> = cases(&v)
        .iter()
        .filter(|c| c["params"]["object_key"] != "Bench")
        .collect();
    assert_eq!(long.len(), 2, "{v}");
    for c in long {
        assert!(c["params"]["object_key"]
            .as_str()
            .unwrap()
            .ends_with("BenchPOA%00Bench"));
        assert_eq!(c["extra"]["answered_forwards"], 0);
    }
}

/// TAO 2.2.2's client writes a chunked truncatable `TaggedNode` with its
/// nested `Node` value inside the outer chunk, unchunked, and end tags
/// of a level it never opened (fixtures/giop/tao/values/README.md): not
/// CORBA's chunked encoding (chunks are never nested), so our server
/// answers that Request, as TAO's client sent it, MARSHAL (docs/tao.md).
#[test]
fn taos_chunked_tagged_node_is_answered_marshal() {
    use std::io::{Read, Write};
    let raw =
        std::fs::read(root().join("fixtures/giop/tao/values/tagged-node-request.bin")).unwrap();
    let srv = server();
    let mut c = std::net::TcpStream::connect(srv.addr()).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    c.write_all(&raw).unwrap();
    let mut head = [0u8; iiop_giop::header::HEADER_LEN];
    c.read_exact(&mut head).unwrap();
    let h = iiop_giop::Header::parse(&head).unwrap();
    let mut body = vec![0u8; h.size as usize];
    c.read_exact(&mut body).unwrap();
    let m =
        iiop_giop::Message::decode(&h, body.clone().into(), iiop_cdr::Options::default()).unwrap();
    let iiop_giop::Message::Reply(r) = m else {
        panic!("not a Reply: {m:?}")
    };
    // TAO's request id, 1287.
    assert_eq!(r.header.request_id, 1287);
    assert_eq!(
        r.header.status,
        iiop_giop::message::ReplyStatus::SystemException
    );
    let text = String::from_utf8_lossy(&body);
    assert!(text.contains("IDL:omg.org/CORBA/MARSHAL:1.0"), "{text}");
    srv.stop().unwrap();
}
