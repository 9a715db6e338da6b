// The cases of tests/malformed.rs and tests/malformed_threads.rs: one
// suite, run against each server model (`MODEL`, defined by the includer).

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use iiop_cdr::{ByteOrder, Writer};
use iiop_giop::codec::{fragment_message, CodecConfig};
use iiop_giop::context::{default_options, CodeSetContext, ServiceContext, SC_CODE_SETS};
use iiop_giop::exception::{Completion, MINOR_MARSHAL_BAD_BODY};
use iiop_giop::header::{Header, MsgType};
use iiop_giop::message::{
    encode_cancel_request, encode_empty, encode_locate_request, encode_request,
    encode_system_exception, LocateStatus, Message, ReplyStatus, RequestHead, ResponseMode,
};
use iiop_transport::server::ServerConfig;
use iiop_transport::tls::rustls;
use iiop_giop::{TargetAddress, Version};
use iiop_bench_idl::run::{RunningServer, ServerOptions};
use iiop_transport::hosted::ServerModel;

const LE: ByteOrder = ByteOrder::Little;
const V10: Version = Version::V1_0;
const V11: Version = Version::V1_1;
const V12: Version = Version::V1_2;
/// The test server's message limit (small, so "over the limit" is cheap).
const MAX_MSG: usize = 64 * 1024;
/// Its reassembly limit.
const MAX_REASM: usize = 96 * 1024;
/// Its read timeout (the slow-client case).
const READ_TIMEOUT: Duration = Duration::from_millis(600);
const MARSHAL: &str = "IDL:omg.org/CORBA/MARSHAL:1.0";
const BAD_PARAM: &str = "IDL:omg.org/CORBA/BAD_PARAM:1.0";

fn server(cfg: ServerConfig) -> RunningServer {
    RunningServer::start(ServerOptions {
        threads: 2,
        config: cfg,
        model: MODEL,
        ..Default::default()
    })
    .unwrap()
}

fn hostile_config() -> ServerConfig {
    ServerConfig {
        codec: CodecConfig {
            max_message_size: MAX_MSG,
            max_reassembled_size: MAX_REASM,
        },
        read_timeout: Some(READ_TIMEOUT),
        max_in_flight: 8,
        ..ServerConfig::default()
    }
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.set_nodelay(true).unwrap();
    s
}

/// A well-formed Request with a raw body (written after the 8-aligned
/// body start of GIOP 1.2).
fn request_v(v: Version, order: ByteOrder, id: u32, key: &[u8], op: &str, body: &[u8]) -> Vec<u8> {
    request_full(v, id, key, op, ResponseMode::Twoway, &[], body, order)
}

/// [`request_v`] with a response mode and service contexts.
#[allow(clippy::too_many_arguments)]
fn request_full(
    v: Version,
    id: u32,
    key: &[u8],
    op: &str,
    response: ResponseMode,
    contexts: &[ServiceContext],
    body: &[u8],
    order: ByteOrder,
) -> Vec<u8> {
    let mut b = BytesMut::new();
    let target = TargetAddress::Key(Bytes::copy_from_slice(key));
    encode_request(
        &mut b,
        v,
        order,
        default_options(v),
        &RequestHead {
            request_id: id,
            response,
            target: &target,
            operation: op,
            contexts,
        },
        |w: &mut Writer<'_>| {
            w.write_bytes(body);
            Ok(())
        },
    )
    .unwrap();
    b.to_vec()
}

fn request(id: u32, op: &str, body: &[u8]) -> Vec<u8> {
    request_v(V12, LE, id, b"Bench", op, body)
}

fn ping(id: u32) -> Vec<u8> {
    request(id, "ping", &[])
}

fn header(v: Version, t: MsgType, more: bool, size: u32) -> Vec<u8> {
    let mut h = Header::new(v, LE, t, size);
    h.more_fragments = more;
    h.to_bytes().to_vec()
}

/// A message with this header and payload (size computed).
fn msg(v: Version, t: MsgType, more: bool, payload: &[u8]) -> Vec<u8> {
    let mut m = header(v, t, more, payload.len() as u32);
    m.extend_from_slice(payload);
    m
}

fn le32(v: u32) -> [u8; 4] {
    v.to_le_bytes()
}

/// A GIOP 1.2 request header written by hand up to (not including) the
/// operation name, then `rest` verbatim: for malformed request headers.
fn raw_request_head(id: u32, flags: u8, disposition: i16, rest: &[u8]) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend(le32(id));
    p.extend([flags, 0, 0, 0]);
    p.extend(disposition.to_le_bytes());
    p.extend([0, 0]);
    p.extend(le32(5));
    p.extend(b"Bench");
    p.extend([0, 0, 0]);
    p.extend_from_slice(rest);
    msg(V12, MsgType::Request, false, &p)
}

/// One message read from the server.
#[derive(Debug)]
struct Got {
    header: Header,
    raw_header: [u8; 12],
    payload: Bytes,
}

/// A byte stream to the server: plain TCP or TLS over TCP.
trait Wire: Read + Write {
    /// Half-close our side (TLS: close_notify first).
    fn half_close(&mut self) -> std::io::Result<()>;
}

impl Wire for TcpStream {
    fn half_close(&mut self) -> std::io::Result<()> {
        self.shutdown(Shutdown::Write)
    }
}

fn read_msg<S: Read>(s: &mut S) -> std::io::Result<Option<Got>> {
    let mut h = [0u8; 12];
    let mut n = 0;
    while n < 12 {
        match s.read(&mut h[n..])? {
            0 if n == 0 => return Ok(None),
            0 => return Err(ErrorKind::UnexpectedEof.into()),
            k => n += k,
        }
    }
    let header = Header::parse(&h).map_err(|e| std::io::Error::other(e.to_string()))?;
    let mut payload = vec![0u8; header.size as usize];
    s.read_exact(&mut payload)?;
    Ok(Some(Got {
        header,
        raw_header: h,
        payload: payload.into(),
    }))
}

/// EOF (or a reset) with no byte before it.
fn expect_eof<S: Read>(s: &mut S) -> Result<(), String> {
    let mut b = [0u8; 64];
    match s.read(&mut b) {
        Ok(0) => Ok(()),
        // (TLS: closed without close_notify.)
        Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::UnexpectedEof) => {
            Ok(())
        }
        Ok(n) => Err(format!("expected EOF, got {n} bytes {:02x?}", &b[..n])),
        Err(e) => Err(format!("expected EOF, got {e}")),
    }
}

fn decode(g: &Got) -> Message {
    Message::decode(
        &g.header,
        g.payload.clone(),
        default_options(g.header.version),
    )
    .unwrap()
}

/// A twoway ping answered with NO_EXCEPTION on `s`.
fn ping_ok<S: Read + Write>(s: &mut S, id: u32) -> Result<(), String> {
    s.write_all(&ping(id))
        .map_err(|e| format!("writing ping: {e}"))?;
    let g = read_msg(s)
        .map_err(|e| format!("reading ping reply: {e}"))?
        .ok_or("connection closed instead of answering ping")?;
    match decode(&g) {
        Message::Reply(r)
            if r.header.request_id == id && r.header.status == ReplyStatus::NoException =>
        {
            Ok(())
        }
        m => Err(format!("ping {id}: unexpected answer {m:?}")),
    }
}

/// The expected reaction to a case.
#[derive(Debug, Clone)]
enum Expect {
    /// A MessageError in this GIOP minor version (exact 12 bytes, native
    /// byte order, size 0), then the connection closes.
    MessageError(u8),
    /// The connection closes without a byte.
    Closed,
    /// A Reply to `id` with SYSTEM_EXCEPTION (repository id, minor,
    /// COMPLETED_NO); the connection stays usable.
    System(u32, &'static str, u32),
    /// A Reply to `id` with NO_EXCEPTION and exactly this body.
    Reply(u32, Vec<u8>),
    /// A LocateReply to `id` with this status.
    Locate(u32, LocateStatus),
    /// Nothing is answered; the connection stays usable.
    Silence,
    /// A NO_EXCEPTION Reply to `id`, then a MessageError in this minor
    /// version and the connection closes.
    ReplyThenMessageError(u32, u8),
}

struct Case {
    name: &'static str,
    /// Bytes to send.
    send: Vec<u8>,
    /// Half-close our side after sending (EOF mid-message).
    eof: bool,
    expect: Expect,
}

fn case(name: &'static str, send: Vec<u8>, expect: Expect) -> Case {
    Case {
        name,
        send,
        eof: false,
        expect,
    }
}

fn message_error_bytes(minor: u8) -> [u8; 12] {
    let mut b = BytesMut::new();
    encode_empty(
        &mut b,
        Version::new(1, minor).unwrap(),
        ByteOrder::NATIVE,
        MsgType::MessageError,
    );
    b[..].try_into().unwrap()
}

fn check<S: Wire>(s: &mut S, c: &Case) -> Result<(), String> {
    s.write_all(&c.send).map_err(|e| format!("send: {e}"))?;
    s.flush().map_err(|e| format!("send: {e}"))?;
    if c.eof {
        s.half_close().map_err(|e| e.to_string())?;
    }
    match &c.expect {
        Expect::MessageError(minor) => {
            let g = read_msg(s)
                .map_err(|e| format!("reading: {e}"))?
                .ok_or("closed without MessageError")?;
            if g.raw_header != message_error_bytes(*minor) {
                return Err(format!(
                    "expected MessageError 1.{minor} {:02x?}, got {:02x?}",
                    message_error_bytes(*minor),
                    g.raw_header
                ));
            }
            expect_eof(s)
        }
        Expect::Closed => expect_eof(s),
        Expect::System(id, repo, minor) => {
            let g = read_msg(s)
                .map_err(|e| format!("reading: {e}"))?
                .ok_or("closed instead of replying")?;
            let Message::Reply(r) = decode(&g) else {
                return Err(format!("expected a Reply, got {:?}", g.header));
            };
            let e = r
                .system_exception()
                .map_err(|e| format!("not a system exception: {e}"))?;
            if r.header.request_id != *id
                || r.header.status != ReplyStatus::SystemException
                || e.repo_id != *repo
                || e.minor != *minor
                || e.completed != Completion::No
            {
                return Err(format!(
                    "expected {repo} minor {minor:#x} for {id}, got {} {} minor {:#x} {:?}",
                    r.header.request_id, e.repo_id, e.minor, e.completed
                ));
            }
            ping_ok(s, 9_000)
        }
        Expect::Reply(id, body) => {
            let g = read_msg(s)
                .map_err(|e| format!("reading: {e}"))?
                .ok_or("closed instead of replying")?;
            let Message::Reply(r) = decode(&g) else {
                return Err(format!("expected a Reply, got {:?}", g.header));
            };
            if r.header.request_id != *id || r.header.status != ReplyStatus::NoException {
                return Err(format!(
                    "expected NO_EXCEPTION for {id}, got {:?}",
                    r.header
                ));
            }
            if r.body.bytes[..] != body[..] {
                return Err(format!(
                    "reply body {:02x?}, expected {:02x?}",
                    &r.body.bytes[..],
                    body
                ));
            }
            ping_ok(s, 9_001)
        }
        Expect::Locate(id, status) => {
            let g = read_msg(s)
                .map_err(|e| format!("reading: {e}"))?
                .ok_or("closed instead of replying")?;
            let Message::LocateReply(l) = decode(&g) else {
                return Err(format!("expected a LocateReply, got {:?}", g.header));
            };
            if l.request_id != *id || l.status != *status {
                return Err(format!("expected locate {id} status {status:?}, got {l:?}"));
            }
            ping_ok(s, 9_002)
        }
        Expect::Silence => ping_ok(s, 9_003),
        Expect::ReplyThenMessageError(id, minor) => {
            let g = read_msg(s)
                .map_err(|e| e.to_string())?
                .ok_or("closed before the reply")?;
            match decode(&g) {
                Message::Reply(r) if r.header.request_id == *id => {}
                m => return Err(format!("expected reply {id}, got {m:?}")),
            }
            let g = read_msg(s)
                .map_err(|e| e.to_string())?
                .ok_or("closed without MessageError")?;
            if g.raw_header != message_error_bytes(*minor) {
                return Err(format!("expected MessageError, got {:02x?}", g.raw_header));
            }
            expect_eof(s)
        }
    }
}

/// `echo_long` etc. body: a count then raw element bytes.
fn seq(count: u32, elems: &[u8]) -> Vec<u8> {
    let mut v = le32(count).to_vec();
    v.extend_from_slice(elems);
    v
}

/// A CDR string (length, chars, NUL).
fn cdr_string(s: &str) -> Vec<u8> {
    let mut v = le32(s.len() as u32 + 1).to_vec();
    v.extend_from_slice(s.as_bytes());
    v.push(0);
    v
}

fn cases() -> Vec<Case> {
    use Expect::*;
    let mut v = Vec::new();
    let p = ping(1);
    // ---- the 12-byte header ------------------------------------------
    let mut bad = p.clone();
    bad[3] = b'Q';
    v.push(case("bad magic GIOQ", bad, MessageError(0)));
    let mut bad = p.clone();
    bad[..4].copy_from_slice(b"giop");
    v.push(case("lowercase magic", bad, MessageError(0)));
    v.push(case(
        "HTTP request instead of GIOP",
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        MessageError(0),
    ));
    let mut bad = p.clone();
    bad[5] = 3;
    v.push(case("unknown version 1.3", bad, MessageError(0)));
    let mut bad = p.clone();
    bad[4] = 2;
    bad[5] = 0;
    v.push(case("unknown version 2.0", bad, MessageError(0)));
    let mut bad = p.clone();
    bad[7] = 8;
    v.push(case("unknown message type 8 (1.2)", bad, MessageError(2)));
    let mut bad = p.clone();
    bad[7] = 0xFF;
    v.push(case("unknown message type 255", bad, MessageError(2)));
    v.push(case(
        "Fragment type in GIOP 1.0",
        msg(V10, MsgType::Fragment, false, &[0; 8]),
        MessageError(0),
    ));
    let mut bad = p.clone();
    bad[6] = 0x05;
    v.push(case("undefined flag bits", bad, MessageError(2)));
    v.push(case(
        "more-fragments on CloseConnection",
        header(V12, MsgType::CloseConnection, true, 0),
        MessageError(2),
    ));
    v.push(case(
        "size over the limit (64 KiB + 1)",
        header(V12, MsgType::Request, false, MAX_MSG as u32 + 1),
        MessageError(2),
    ));
    v.push(case(
        "size 0xFFFFFFFF",
        header(V12, MsgType::Request, false, u32::MAX),
        MessageError(2),
    ));
    let mut c = case(
        "size larger than what follows, then EOF",
        {
            let mut m = header(V12, MsgType::Request, false, 1000);
            m.extend_from_slice(&p[12..]);
            m
        },
        Closed,
    );
    c.eof = true;
    v.push(c);
    let mut c = case(
        "truncated header (5 bytes), then EOF",
        p[..5].to_vec(),
        Closed,
    );
    c.eof = true;
    v.push(c);
    let mut c = case(
        "truncated body (half a ping), then EOF",
        p[..p.len() / 2 + 6].to_vec(),
        Closed,
    );
    c.eof = true;
    v.push(c);
    // ---- request headers ---------------------------------------------
    v.push(case(
        "request header shorter than its fields",
        msg(V12, MsgType::Request, false, &le32(7)),
        MessageError(2),
    ));
    v.push(case(
        "invalid response flags 0x02",
        raw_request_head(7, 0x02, 0, &cdr_string("ping")),
        MessageError(2),
    ));
    v.push(case(
        "addressing disposition 7 (no such union branch)",
        raw_request_head(7, 0x03, 7, &cdr_string("ping")),
        MessageError(2),
    ));
    v.push(case(
        "operation length beyond the message",
        raw_request_head(7, 0x03, 0, &[0x00, 0x01, 0, 0, b'p']),
        MessageError(2),
    ));
    v.push(case(
        "operation without NUL",
        raw_request_head(
            7,
            0x03,
            0,
            &[4, 0, 0, 0, b'p', b'i', b'n', b'g', 0, 0, 0, 0],
        ),
        MessageError(2),
    ));
    v.push(case(
        "operation of length 0",
        raw_request_head(7, 0x03, 0, &[0, 0, 0, 0, 0, 0, 0, 0]),
        MessageError(2),
    ));
    v.push(case(
        "service context count 0x7FFFFFFF",
        raw_request_head(7, 0x03, 0, &{
            let mut r = cdr_string("ping");
            r.extend([0, 0, 0]);
            r.extend(le32(0x7FFF_FFFF));
            r
        }),
        MessageError(2),
    ));
    v.push(case(
        "object key length beyond the message",
        msg(
            V12,
            MsgType::Request,
            false,
            &[7, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0, b'B'],
        ),
        MessageError(2),
    ));
    // ---- message types a server must not get ---------------------------
    let mut reply = BytesMut::new();
    encode_system_exception(
        &mut reply,
        V12,
        LE,
        5,
        &iiop_giop::SystemException::transient(1, Completion::No),
    )
    .unwrap();
    v.push(case(
        "a Reply sent to a server",
        reply.to_vec(),
        MessageError(2),
    ));
    v.push(case(
        "a LocateReply sent to a server",
        msg(V12, MsgType::LocateReply, false, &[5, 0, 0, 0, 1, 0, 0, 0]),
        MessageError(2),
    ));
    v.push(case(
        "MessageError from the client",
        header(V12, MsgType::MessageError, false, 0),
        Closed,
    ));
    v.push(case(
        "CloseConnection from the client",
        header(V12, MsgType::CloseConnection, false, 0),
        Closed,
    ));
    // ---- cancel and locate -------------------------------------------
    let mut b = BytesMut::new();
    encode_cancel_request(&mut b, V12, LE, 4242).unwrap();
    v.push(case("CancelRequest for an unknown id", b.to_vec(), Silence));
    v.push(case(
        "CancelRequest with a 2-byte body",
        msg(V12, MsgType::CancelRequest, false, &[1, 2]),
        MessageError(2),
    ));
    let mut b = BytesMut::new();
    encode_locate_request(
        &mut b,
        V12,
        LE,
        77,
        &TargetAddress::Key(Bytes::from_static(b"NoSuchKey")),
    )
    .unwrap();
    v.push(case(
        "LocateRequest 1.2 for an unknown key",
        b.to_vec(),
        Locate(77, LocateStatus::UnknownObject),
    ));
    let mut b = BytesMut::new();
    encode_locate_request(
        &mut b,
        V10,
        LE,
        78,
        &TargetAddress::Key(Bytes::from_static(b"NoSuchKey")),
    )
    .unwrap();
    v.push(case(
        "LocateRequest 1.0 for an unknown key",
        b.to_vec(),
        Locate(78, LocateStatus::UnknownObject),
    ));
    let mut b = BytesMut::new();
    encode_locate_request(
        &mut b,
        V12,
        LE,
        79,
        &TargetAddress::Key(Bytes::from_static(b"Bench")),
    )
    .unwrap();
    v.push(case(
        "LocateRequest for the Bench key",
        b.to_vec(),
        Locate(79, LocateStatus::ObjectHere),
    ));
    v.push(case(
        "LocateRequest with a truncated target",
        msg(V12, MsgType::LocateRequest, false, &[80, 0, 0, 0, 0]),
        MessageError(2),
    ));
    // ---- dispatch ----------------------------------------------------
    v.push(case(
        "request for an unknown object key",
        request_v(V12, LE, 11, b"Nobody", "ping", &[]),
        System(
            11,
            "IDL:omg.org/CORBA/OBJECT_NOT_EXIST:1.0",
            iiop_giop::exception::MINOR_OBJECT_NOT_EXIST_NO_MATCH,
        ),
    ));
    v.push(case(
        "request for an unknown operation",
        request(12, "launch_missiles", &[]),
        System(
            12,
            "IDL:omg.org/CORBA/BAD_OPERATION:1.0",
            iiop_giop::exception::MINOR_BAD_OPERATION_UNKNOWN,
        ),
    ));
    // ---- bodies: MARSHAL with our minor code ---------------------------
    let m = |id: u32, op: &str, body: Vec<u8>| {
        (
            request(id, op, &body),
            System(id, MARSHAL, MINOR_MARSHAL_BAD_BODY),
        )
    };
    let mut push = |name: &'static str, (send, e): (Vec<u8>, Expect)| v.push(case(name, send, e));
    push(
        "sequence count beyond the message",
        m(20, "echo_long", seq(100, &[0; 8])),
    );
    push(
        "sequence count 0xFFFFFFFF",
        m(21, "echo_long", seq(u32::MAX, &[])),
    );
    push(
        "negative sequence count (0x80000000)",
        m(22, "echo_double", seq(0x8000_0000, &[0; 16])),
    );
    push(
        "body shorter than its length prefix (2 doubles, 1 sent)",
        m(23, "echo_double", seq(2, &[0; 8])),
    );
    push("empty body for echo_octet", m(24, "echo_octet", vec![]));
    push(
        "string length beyond the message",
        m(25, "echo_string", seq(1, &[0xFF, 0, 0, 0, b'a'])),
    );
    push(
        "string without NUL",
        m(26, "echo_string", seq(1, &[3, 0, 0, 0, b'a', b'b', b'c'])),
    );
    push(
        "string of length 0",
        m(27, "echo_string", seq(1, &[0, 0, 0, 0])),
    );
    push(
        "string count 0x7FFFFFFF",
        m(28, "echo_string", seq(0x7FFF_FFFF, &cdr_string("x"))),
    );
    push(
        "invalid boolean 2 in a boolean sequence",
        m(29, "echo_boolean", seq(3, &[1, 0, 2])),
    );
    push(
        "invalid boolean 0xFF in MyStruct",
        m(30, "echo_mystruct", {
            let mut b = seq(1, &[0xFF, 0, 0, 0]);
            b.extend(cdr_string("s"));
            b.extend([0, 0]);
            b.extend(le32(5));
            b
        }),
    );
    push(
        "enum Color value 3 (no such enumerator)",
        m(31, "echo_color", seq(2, &[0, 0, 0, 0, 3, 0, 0, 0])),
    );
    push(
        "Variant string branch with a bad string",
        m(32, "echo_variant", seq(1, &[3, 0, 0, 0, 9, 0, 0, 0, b'x'])),
    );
    push(
        "wstring count beyond the message",
        m(33, "echo_wstring", seq(0x1000_0000, &[])),
    );
    push(
        "MyStruct sequence truncated inside an element",
        m(34, "echo_mystruct", seq(2, &[1, 0, 0, 0])),
    );
    push(
        "pass_both: second sequence missing",
        m(35, "pass_both", seq(1, b"c")),
    );
    push("mark without its argument", m(36, "mark", vec![1, 2, 3]));
    push(
        "_is_a with a string without NUL",
        m(37, "_is_a", seq(2, b"ab")),
    );
    // ---- legal but unusual ---------------------------------------------
    // Variant has a default branch, so any discriminator is legal: 99
    // selects the octet branch and round-trips.
    let variant = seq(2, &[99, 0, 0, 0, 0xAB, 0, 0, 0, 0x80, 0, 0, 0, 0xCD]);
    v.push(case(
        "Variant discriminator 99 (default branch) round-trips",
        request(40, "echo_variant", &variant),
        Reply(40, variant.clone()),
    ));
    v.push(case(
        "work with ServiceDist 7",
        request(41, "work", &{
            let mut b = 1.0f64.to_le_bytes().to_vec();
            b.extend(le32(7));
            b.extend(le32(0));
            b
        }),
        System(41, BAD_PARAM, iiop_giop::exception::omg_minor(25)),
    ));
    v.push(case(
        "get_single(100000): index out of range",
        request(42, "get_single", &le32(100_000)),
        System(42, BAD_PARAM, iiop_giop::exception::omg_minor(1)),
    ));
    // 4 bytes after a 1.2 body that starts 8-aligned cannot be padding.
    v.push(case(
        "ping with 4 trailing bytes in the body",
        request(43, "ping", &[0xDE, 0xAD, 0xBE, 0xEF]),
        System(43, MARSHAL, MINOR_MARSHAL_BAD_BODY),
    ));
    // A 1.0 ping's header ends at offset 52: 4 bytes up to 56 are padding.
    v.push(case(
        "GIOP 1.0 ping with 4 bytes of padding to an 8-aligned end",
        request_v(V10, LE, 45, b"Bench", "ping", &[0xDE, 0xAD, 0xBE, 0xEF]),
        Reply(45, vec![]),
    ));
    v.push(case(
        "GIOP 1.0 big-endian ping",
        request_v(V10, ByteOrder::Big, 44, b"Bench", "ping", &[]),
        Reply(44, vec![]),
    ));
    // ---- fragments -----------------------------------------------------
    v.push(case(
        "1.2 Fragment without a first message",
        msg(V12, MsgType::Fragment, false, &[50, 0, 0, 0, 1, 2, 3, 4]),
        MessageError(2),
    ));
    v.push(case(
        "1.1 Fragment without a first message",
        msg(V11, MsgType::Fragment, false, &[1, 2, 3, 4]),
        MessageError(1),
    ));
    let big = seq(4000, &[7u8; 4000]);
    let whole = request(51, "echo_octet", &big);
    let mut frag = BytesMut::new();
    fragment_message(&whole, 1024, &mut frag).unwrap();
    let first_len = 1024;
    {
        let mut s = frag[..first_len].to_vec();
        s.extend(msg(
            V12,
            MsgType::Fragment,
            false,
            &[99, 0, 0, 0, 1, 2, 3, 4],
        ));
        v.push(case(
            "1.2 Fragment for an unknown request id during reassembly",
            s,
            MessageError(2),
        ));
    }
    v.push(case(
        "a fragmented echo_octet (positive control)",
        frag.to_vec(),
        Reply(51, big.clone()),
    ));
    {
        let mut s = ping(52);
        s.extend(msg(
            V12,
            MsgType::Fragment,
            false,
            &[52, 0, 0, 0, 1, 2, 3, 4],
        ));
        // The ping is answered first, then the stray fragment errs.
        v.push(case(
            "1.2 Fragment after the complete message",
            s,
            ReplyThenMessageError(52, 2),
        ));
    }
    {
        let mut s = frag[..first_len].to_vec();
        s.extend_from_slice(&frag[..first_len]);
        v.push(case(
            "two first fragments with the same request id",
            s,
            MessageError(2),
        ));
    }
    {
        let mut s = frag[..first_len].to_vec();
        s.extend(msg(V11, MsgType::Fragment, false, &[1, 2, 3, 4]));
        v.push(case(
            "1.1 Fragment continuing a 1.2 message",
            s,
            MessageError(1),
        ));
    }
    {
        // 3 fragmented messages of 40 KiB each, interleaved: 120 KiB held
        // at once exceeds the 96 KiB reassembly limit.
        let mut s = Vec::new();
        for id in 60..63u32 {
            let mut m = header(V12, MsgType::Request, true, 40 * 1024);
            m.extend(le32(id));
            m.extend(vec![0u8; 40 * 1024 - 4]);
            s.extend(m);
        }
        v.push(case(
            "fragments over the reassembly limit",
            s,
            MessageError(2),
        ));
    }
    v
}

/// The CodeSets context (char ISO-8859-1, wchar UTF-16) that lets a
/// connection carry wchar data.
fn code_sets_context() -> ServiceContext {
    ServiceContext {
        id: SC_CODE_SETS,
        data: CodeSetContext {
            char_data: 0x0001_0001,
            wchar_data: 0x0001_0109,
        }
        .encode(LE),
    }
}

/// A GIOP 1.2 little-endian request on `key` carrying the CodeSets
/// context; its body starts at an 8-aligned offset.
fn wide_request(id: u32, key: &[u8], op: &str, response: ResponseMode, body: &[u8]) -> Vec<u8> {
    request_full(V12, id, key, op, response, &[code_sets_context()], body, LE)
}

/// Bodies with bytes after the last argument, for any skeleton serving
/// `echo_long` and `echo_wchar` (bench.idl signatures) on `key`. A body
/// starts 8-aligned (GIOP 1.2), so offsets are given from its start: the
/// trailing bytes are padding only when fewer than 8 and ending at a
/// multiple of 8.
fn trailing_cases(key: &[u8]) -> Vec<Case> {
    use Expect::*;
    let marshal = |id| System(id, MARSHAL, MINOR_MARSHAL_BAD_BODY);
    let tw = ResponseMode::Twoway;
    let with = |base: &[u8], extra: &[u8]| {
        let mut b = base.to_vec();
        b.extend_from_slice(extra);
        b
    };
    // Two wchars in GIOP 1.2 (octet length 2, UTF-16 BE): end at +10.
    let wchars = seq(2, &[2, 0x00, 0x41, 2, 0x04, 0x16]);
    // One long: ends at +8. No long: ends at +4.
    let one_long = seq(1, &le32(0x0102_0304));
    let no_long = seq(0, &[]);
    vec![
        case(
            "sequence<wchar> echo, exact (control)",
            wide_request(70, key, "echo_wchar", tw, &wchars),
            Reply(70, wchars.clone()),
        ),
        case(
            "sequence<wchar> echo with 2 bytes left over (+10 + 2)",
            wide_request(71, key, "echo_wchar", tw, &with(&wchars, &[0x00, 0x43])),
            marshal(71),
        ),
        case(
            "sequence<wchar> echo with 6 bytes of padding (+10 + 6 = +16)",
            wide_request(72, key, "echo_wchar", tw, &with(&wchars, &[0xAA; 6])),
            Reply(72, wchars.clone()),
        ),
        case(
            "sequence<long> echo with 4 bytes left over (+8 + 4)",
            request_full(
                V12,
                73,
                key,
                "echo_long",
                tw,
                &[],
                &with(&one_long, &[0; 4]),
                LE,
            ),
            marshal(73),
        ),
        case(
            "sequence<long> echo with 8 zero bytes after an aligned end",
            request_full(
                V12,
                74,
                key,
                "echo_long",
                tw,
                &[],
                &with(&one_long, &[0; 8]),
                LE,
            ),
            marshal(74),
        ),
        case(
            "empty sequence<long> echo with 4 bytes of padding (+4 + 4 = +8)",
            request_full(
                V12,
                75,
                key,
                "echo_long",
                tw,
                &[],
                &with(&no_long, &[0xEE; 4]),
                LE,
            ),
            Reply(75, no_long.clone()),
        ),
        case(
            "_is_a with 5 bytes after its string",
            request_full(
                V12,
                76,
                key,
                "_is_a",
                tw,
                &[],
                &with(&cdr_string("IDL:omg.org/CORBA/Object:1.0"), &[1; 5]),
                LE,
            ),
            marshal(76),
        ),
    ]
}

#[test]
fn trailing_bytes_after_the_arguments_get_marshal_from_the_typed_skeleton() {
    use Expect::*;
    let srv = server(hostile_config());
    let mut cases = trailing_cases(b"Bench");
    let marshal = |id| System(id, MARSHAL, MINOR_MARSHAL_BAD_BODY);
    let tw = ResponseMode::Twoway;
    // The typed skeleton's fast paths: a fixed-layout struct sequence
    // (PerfStruct { short; char; long; octet; double }: its short follows
    // the count, its double ends the body at +24, 8-aligned) and an octet
    // sequence (3 octets end at +7).
    let perf = {
        let mut b = seq(1, &[0x01, 0x02, b'A', 0]);
        b.extend(le32(3));
        b.extend([4, 0, 0, 0]);
        b.extend(1.5f64.to_le_bytes());
        assert_eq!(b.len(), 24);
        b
    };
    let octets = seq(3, &[1, 2, 3]);
    let plus = |b: &[u8], n: usize| {
        let mut v = b.to_vec();
        v.extend(vec![0u8; n]);
        v
    };
    let req = |id, op: &str, body: &[u8]| request_full(V12, id, b"Bench", op, tw, &[], body, LE);
    cases.push(case(
        "echo_perfstruct, exact (control)",
        req(80, "echo_perfstruct", &perf),
        Reply(80, perf.clone()),
    ));
    cases.push(case(
        "echo_perfstruct with 4 bytes left over",
        req(81, "echo_perfstruct", &plus(&perf, 4)),
        marshal(81),
    ));
    cases.push(case(
        "echo_octet with 1 byte of padding (+7 + 1 = +8)",
        req(82, "echo_octet", &plus(&octets, 1)),
        Reply(82, octets.clone()),
    ));
    cases.push(case(
        "echo_octet with 2 bytes left over",
        req(83, "echo_octet", &plus(&octets, 2)),
        marshal(83),
    ));
    cases.push(case(
        "mark with 4 bytes after its ulonglong (twoway request of a oneway op)",
        req(84, "mark", &plus(&7u64.to_le_bytes(), 4)),
        marshal(84),
    ));
    cases.push(case(
        "work with 4 bytes after its arguments",
        req(85, "work", &{
            let mut b = 1.0f64.to_le_bytes().to_vec();
            b.extend(le32(0));
            b.extend(le32(1));
            b.extend([0; 4]);
            b
        }),
        marshal(85),
    ));
    let mut failures = Vec::new();
    for c in &cases {
        if let Err(e) = check(&mut connect(srv.addr()), c) {
            failures.push(format!("{}: {e}", c.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(cases.len(), 13);
}

#[test]
fn trailing_bytes_get_marshal_from_the_dynamic_skeleton() {
    let srv = RunningServer::start(ServerOptions {
        threads: 2,
        skeleton: iiop_bench_idl::reference::Skeleton::Dynamic,
        config: hostile_config(),
        model: MODEL,
        ..Default::default()
    })
    .unwrap();
    let mut failures = Vec::new();
    for c in &trailing_cases(b"Bench") {
        if let Err(e) = check(&mut connect(srv.addr()), c) {
            failures.push(format!("{}: {e}", c.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn trailing_bytes_get_marshal_from_the_idl_driven_skeleton() {
    use iiopbench_engine::dynamic::server::{Behaviour, IdlHandler, IdlServer, IdlServerOptions};
    const IDL: &str = r#"
module T {
  typedef sequence<long> LongSeq;
  typedef sequence<wchar> WCharSeq;
  interface I {
    void ping();
    LongSeq echo_long(in LongSeq s);
    WCharSeq echo_wchar(in WCharSeq s);
    oneway void sink(in LongSeq s);
  };
};
"#;
    let spec = iiop_idl::parse_str("t.idl", IDL, &Default::default()).unwrap();
    let id = spec.lookup("T::I").unwrap();
    let h = IdlHandler::new(&spec, id, Behaviour::Echo).unwrap();
    let srv = IdlServer::start(
        h,
        b"T",
        IdlServerOptions {
            config: hostile_config(),
            ..IdlServerOptions::default()
        },
    )
    .unwrap();
    let mut failures = Vec::new();
    for c in &trailing_cases(b"T") {
        if let Err(e) = check(&mut connect(srv.addr()), c) {
            failures.push(format!("{}: {e}", c.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Oneways: one with 4 bytes left over is dropped uncounted, as one
    // with a short body is; the good one is counted with its 12 bytes.
    let before = srv.handler().counters().snapshot();
    let ow = ResponseMode::Oneway;
    let mut s = connect(srv.addr());
    let mut all = request_full(V12, 1, b"T", "sink", ow, &[], &seq(2, &[0; 4]), LE);
    let mut bad = seq(1, &[0; 4]);
    bad.extend([0; 4]);
    all.extend(request_full(V12, 2, b"T", "sink", ow, &[], &bad, LE));
    all.extend(request_full(
        V12,
        3,
        b"T",
        "sink",
        ow,
        &[],
        &seq(2, &[0; 8]),
        LE,
    ));
    // `_non_existent` after them on the same connection: once it is
    // answered, the three oneways before it have been handled.
    all.extend(request_full(
        V12,
        4,
        b"T",
        "_non_existent",
        ResponseMode::Twoway,
        &[],
        &[],
        LE,
    ));
    s.write_all(&all).unwrap();
    let g = read_msg(&mut s).unwrap().expect("a reply to _non_existent");
    match decode(&g) {
        Message::Reply(r) => assert_eq!(
            (r.header.request_id, r.header.status, &r.body.bytes[..]),
            (4, ReplyStatus::NoException, &[0u8][..])
        ),
        m => panic!("unexpected {m:?}"),
    }
    let st = srv.handler().counters().snapshot();
    assert_eq!(
        (st.oneways, st.bytes - before.bytes),
        (1, 12),
        "{st:?} {before:?}"
    );
}

#[test]
fn oneways_with_bytes_left_over_are_dropped_like_short_ones() {
    let srv = server(hostile_config());
    let mut s = connect(srv.addr());
    let ow = ResponseMode::Oneway;
    let send =
        |id, body: &[u8]| request_full(V12, id, b"Bench", "send_oneway_long", ow, &[], body, LE);
    let mut all = send(1, &seq(2, &[0; 4])); // short: 1 long of 2
    all.extend(send(2, &{
        let mut b = seq(1, &[0; 4]);
        b.extend([0; 4]); // 4 bytes left over
        b
    }));
    all.extend(send(3, &seq(2, &[0; 8]))); // good: 8 bytes
    s.write_all(&all).unwrap();
    // Nothing answers a oneway: the next reply on the connection is the
    // ping's, and the server is still serving.
    ping_ok(&mut s, 4).unwrap();
    let st = srv.stats();
    // Each bad oneway counts as a call (its operation was known) but its
    // payload bytes do not: only the good one's 8 bytes.
    assert_eq!((st.oneways, st.bytes), (3, 8), "{st:?}");
}

/// Every case of [`cases`] on a connection of its own made by
/// `connect`, then a ping on a new connection and on one open all along.
fn run_cases<S: Wire>(connect: impl Fn() -> S) {
    let mut keeper = connect();
    ping_ok(&mut keeper, 1).unwrap();
    let cases = cases();
    assert!(cases.len() >= 40, "{} cases", cases.len());
    let mut failures = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let mut s = connect();
        if let Err(e) = check(&mut s, c) {
            failures.push(format!("{}: {e}", c.name));
        }
        let id = 100 + 2 * i as u32;
        if let Err(e) = ping_ok(&mut connect(), id) {
            failures.push(format!("{}: new connection afterwards: {e}", c.name));
        }
        if let Err(e) = ping_ok(&mut keeper, id + 1) {
            failures.push(format!("{}: open connection afterwards: {e}", c.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_malformed_case_gets_its_exact_reaction_and_the_server_survives() {
    let srv = server(hostile_config());
    let addr = srv.addr();
    run_cases(|| connect(addr));
}

#[test]
fn thousands_of_pipelined_requests_are_all_answered_in_order() {
    let srv = server(hostile_config());
    let mut s = connect(srv.addr());
    let mut all = Vec::new();
    for id in 0..5000u32 {
        all.extend(ping(id));
    }
    let writer = {
        let mut w = s.try_clone().unwrap();
        std::thread::spawn(move || {
            w.write_all(&all).unwrap();
            w.shutdown(Shutdown::Write).unwrap();
        })
    };
    for id in 0..5000u32 {
        let g = read_msg(&mut s).unwrap().expect("reply");
        match decode(&g) {
            Message::Reply(r) => {
                assert_eq!(
                    (r.header.request_id, r.header.status),
                    (id, ReplyStatus::NoException)
                )
            }
            m => panic!("unexpected {m:?}"),
        }
    }
    // Our EOF: the server closes without CloseConnection (we are gone).
    expect_eof(&mut s).unwrap();
    writer.join().unwrap();
    assert_eq!(srv.stats().calls, 5000);
}

#[test]
fn pipelined_requests_then_an_abrupt_close_leave_the_server_serving() {
    let srv = server(hostile_config());
    let mut keeper = connect(srv.addr());
    for round in 0..3 {
        let mut s = connect(srv.addr());
        let mut all = Vec::new();
        for id in 0..3000u32 {
            all.extend(request(id, "echo_octet", &seq(64, &[1; 64])));
        }
        s.write_all(&all).unwrap();
        // Close with unread replies: the kernel resets the connection.
        drop(s);
        ping_ok(&mut connect(srv.addr()), round).unwrap();
        ping_ok(&mut keeper, round).unwrap();
    }
}

#[test]
fn a_slow_client_is_cut_off_by_the_read_timeout() {
    let srv = server(hostile_config());
    let mut keeper = connect(srv.addr());
    let mut s = connect(srv.addr());
    let p = ping(1);
    let t0 = Instant::now();
    // One byte every 200 ms: a message that never completes in time.
    let mut sent = 0;
    let closed_at = loop {
        if s.write_all(&p[sent..sent + 1]).is_err() {
            break t0.elapsed();
        }
        sent += 1;
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut b = [0u8; 16];
        match s.read(&mut b) {
            Ok(0) => break t0.elapsed(),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break t0.elapsed(),
            Ok(n) => panic!("unexpected {n} bytes"),
            Err(_) => {}
        }
        assert!(sent < 15, "still open after {sent} bytes");
    };
    // Closed at the read timeout (600 ms after the first byte), silently.
    assert!(
        closed_at >= READ_TIMEOUT && closed_at < READ_TIMEOUT + Duration::from_millis(1500),
        "closed after {closed_at:?}"
    );
    assert!((3..=11).contains(&sent), "{sent} bytes sent");
    ping_ok(&mut keeper, 2).unwrap();
    ping_ok(&mut connect(srv.addr()), 3).unwrap();
}

#[test]
fn an_idle_connection_gets_close_connection() {
    let srv = server(ServerConfig {
        idle_timeout: Some(Duration::from_millis(300)),
        ..hostile_config()
    });
    let mut s = connect(srv.addr());
    ping_ok(&mut s, 1).unwrap();
    let t0 = Instant::now();
    let g = read_msg(&mut s).unwrap().expect("CloseConnection");
    assert_eq!(g.header.msg_type, MsgType::CloseConnection);
    assert_eq!(g.header.version, V12, "in the version last spoken");
    assert!(
        t0.elapsed() >= Duration::from_millis(250),
        "{:?}",
        t0.elapsed()
    );
    expect_eof(&mut s).unwrap();
    ping_ok(&mut connect(srv.addr()), 2).unwrap();
}

#[test]
fn in_flight_limit_pauses_reading_but_answers_everything() {
    // max_in_flight 2: six 100 ms sleeps run two at a time (>= 300 ms).
    let srv = server(ServerConfig {
        max_in_flight: 2,
        ..hostile_config()
    });
    let mut s = connect(srv.addr());
    let mut all = Vec::new();
    for id in 0..6u32 {
        let mut b = 100_000.0f64.to_le_bytes().to_vec();
        b.extend(le32(0)); // DIST_FIXED
        b.extend(le32(0)); // KIND_SLEEP
        all.extend(request(id, "work", &b));
    }
    let t0 = Instant::now();
    s.write_all(&all).unwrap();
    let mut ids = Vec::new();
    for _ in 0..6 {
        let g = read_msg(&mut s).unwrap().expect("reply");
        match decode(&g) {
            Message::Reply(r) if r.header.status == ReplyStatus::NoException => {
                ids.push(r.header.request_id)
            }
            m => panic!("unexpected {m:?}"),
        }
    }
    ids.sort();
    assert_eq!(ids, vec![0, 1, 2, 3, 4, 5]);
    let took = t0.elapsed();
    assert!(took >= Duration::from_millis(290), "{took:?}");
    ping_ok(&mut s, 7).unwrap();
}

#[test]
fn connection_limit_makes_further_clients_wait() {
    let srv = server(ServerConfig {
        max_connections: 2,
        ..hostile_config()
    });
    let mut a = connect(srv.addr());
    let mut b = connect(srv.addr());
    ping_ok(&mut a, 1).unwrap();
    ping_ok(&mut b, 1).unwrap();
    // The third is accepted by the kernel but not served...
    let mut c = connect(srv.addr());
    c.write_all(&ping(3)).unwrap();
    c.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buf = [0u8; 12];
    let r = c.read(&mut buf);
    assert!(
        matches!(&r, Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)),
        "{r:?}"
    );
    // ...until one of the two leaves.
    drop(a);
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let g = read_msg(&mut c).unwrap().expect("reply");
    assert!(matches!(decode(&g), Message::Reply(r) if r.header.request_id == 3));
    ping_ok(&mut b, 2).unwrap();
}

#[test]
fn hostile_typecodes_in_echo_any_are_refused_and_the_server_keeps_serving() {
    // echo_any decodes a TypeCode from the wire: looping, out-of-range and
    // oversized ones, and anys nested past the depth limit, are answered
    // MARSHAL (never a loop, a huge allocation or a crash), and the
    // connection goes on serving.
    let srv = server(hostile_config());
    let mut s = connect(srv.addr());
    let le = |words: &[u32]| words.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
    let bomb: Vec<u8> = std::iter::repeat_n(le(&[11]), 10_000).flatten().collect();
    for (id, what, body) in [
        // The any's TypeCode an indirection to itself.
        (1, "self", le(&[0xffff_ffff, (-4i32) as u32])),
        // A TypeCode value (tk_TypeCode) pointing back into the any's own
        // TypeCode: outside its outermost TypeCode.
        (2, "outside", le(&[12, 0xffff_ffff, (-8i32) as u32])),
        // Far before the message.
        (3, "far", le(&[12, 0xffff_ffff, 0x8000_0000])),
        // Forward.
        (4, "forward", le(&[12, 0xffff_ffff, 8, 3])),
        // A struct TypeCode whose encapsulation claims 2 GiB.
        (5, "huge", le(&[15, 0x7fff_ffff, 0])),
        // An any in an any in an any ... 10000 deep.
        (6, "deep", bomb),
    ] {
        let c = case(
            what,
            request(id, "echo_any", &body),
            Expect::System(id, MARSHAL, MINOR_MARSHAL_BAD_BODY),
        );
        check(&mut s, &c).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
    ping_ok(&mut s, 7).unwrap();
}

type TlsStream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

impl Wire for TlsStream {
    fn half_close(&mut self) -> std::io::Result<()> {
        self.conn.send_close_notify();
        self.flush()?;
        while self.conn.wants_write() {
            self.conn.write_tls(&mut self.sock)?;
        }
        self.sock.shutdown(Shutdown::Write)
    }
}

#[test]
fn every_malformed_case_gets_the_same_reaction_over_tls() {
    use iiop_transport::tls::test_pki::TestPki;
    let pki = TestPki::new("malformed");
    let srv = RunningServer::start(ServerOptions {
        threads: 2,
        config: hostile_config(),
        model: MODEL,
        tls: Some(iiop_transport::hosted::TlsServer {
            config: pki.server(false),
            client_certificates: false,
        }),
        ..Default::default()
    })
    .unwrap();
    let addr = srv.addr();
    let client = pki.client(false);
    run_cases(|| {
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let conn = rustls::ClientConnection::new(client.clone(), name).unwrap();
        let mut s = rustls::StreamOwned::new(conn, connect(addr));
        while s.conn.is_handshaking() {
            s.conn.complete_io(&mut s.sock).expect("TLS handshake");
        }
        s
    });
}
