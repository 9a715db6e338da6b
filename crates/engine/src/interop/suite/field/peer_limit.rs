//! The server's own maximum message size (`peer_max_message_size`: the
//! limit it is configured with, counted in bytes after the 12-byte GIOP
//! header as omniORB's `giopMaxMsgSize` and `serve --max-message-size`
//! count it): what it does with requests just below and just above it.
//! In the field ORBs hang, crash or drop the connection silently here
//! (ACE_TAO #1201: fragments under a maximum message size).
//!
//! - Below: an `echo_octet` Request whose whole message, header
//!   included, ends [`UNDER`] bytes below the limit is echoed exactly:
//!   the limit is the limit.
//! - Above, whole: the same Request [`OVER`] bytes above the limit after
//!   the header. The server must answer a system exception (the detail
//!   names it and its minor code), MessageError or CloseConnection, or
//!   close the connection, within the wait of a probe; then a new
//!   connection's `ping` must be answered while the refused connection is
//!   still open. An echo fails: CORBA sets no maximum message size, so
//!   the check holds the server to the limit it was said to have.
//! - Above, in GIOP 1.2 Fragments each below the limit: the reassembly
//!   limit, by the same rule.
//!
//! Each in both byte orders, in GIOP 1.2, 1.1 and 1.0 up to the
//! reference's version (Fragments in 1.2 only: a 1.1 Fragment names no
//! request). The Request is written while the answer is read: a server
//! may answer, close or stop reading before a message it refuses has all
//! arrived, and one that stops reading and answers nothing for the wait
//! hangs.

use std::time::{Duration, Instant};

use bytes::BytesMut;
use iiop_cdr::{ByteOrder, Options};
use iiop_giop::codec::fragment_message;
use iiop_giop::header::HEADER_LEN;
use iiop_giop::message::{encode_request, ReplyStatus, RequestHead};
use iiop_giop::{Message, ResponseMode, TargetAddress, Version};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::super::{hex, system_text, InteropSuite, Verdict, V10, V11, V12};
use super::{address, ping_outcome, short, Next, Raw, PROBE_WAIT};

/// How far the refused Requests' size (after the header) is above the
/// limit: more than a Fragment header, so no way of counting the limit
/// (header or not, one message or the sum of Fragments) sees them under.
const OVER: usize = 64;

/// How far the echoed Request's whole message ends below the limit: under
/// it whether the server counts the header or not.
const UNDER: usize = 8;

/// Request ids: the echo or refused request, the ping after it.
const ECHO_ID: u32 = 40;
const PING_ID: u32 = 41;

/// The largest limit checked: the refused Request must fit GIOP's 32-bit
/// size.
const LARGEST: u64 = u32::MAX as u64 - OVER as u64;

/// What a check sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    /// One message below the limit, to be echoed.
    Below,
    /// One message above it, to be refused.
    Above,
    /// Above it in GIOP 1.2 Fragments each below it, to be refused.
    AboveInFragments,
}

impl Probe {
    fn name(self, v: Version, o: ByteOrder) -> String {
        let what = match self {
            Probe::Below => "request below the server's maximum message size -> echoed",
            Probe::Above => "request above the server's maximum message size -> refused, no hang",
            Probe::AboveInFragments => {
                "request above the server's maximum message size in Fragments below it \
                 -> refused, no hang"
            }
        };
        format!("{what}, GIOP {v} {}", short(o))
    }
}

/// The checks, in the order they run.
fn probes() -> Vec<(Probe, Version, ByteOrder)> {
    let mut all = Vec::new();
    for v in [V12, V11, V10] {
        for o in [ByteOrder::Little, ByteOrder::Big] {
            all.push((Probe::Below, v, o));
            all.push((Probe::Above, v, o));
            if v == V12 {
                all.push((Probe::AboveInFragments, v, o));
            }
        }
    }
    all
}

/// The octets echoed: `i mod 251`, so a shifted or truncated echo differs.
fn octets(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

/// `op` on `target` with the octets `seq` as its body (none for `ping`).
fn encode(
    v: Version,
    o: ByteOrder,
    id: u32,
    target: &TargetAddress,
    op: &str,
    seq: Option<&[u8]>,
) -> Result<BytesMut, String> {
    let mut b = BytesMut::new();
    let head = RequestHead {
        request_id: id,
        response: ResponseMode::Twoway,
        target,
        operation: op,
        contexts: &[],
    };
    encode_request(&mut b, v, o, Options::default(), &head, |w| match seq {
        Some(s) => w.write_octet_seq(s),
        None => Ok(()),
    })
    .map_err(|e| format!("encoding the {op} request: {e}"))?;
    Ok(b)
}

/// The `echo_octet` Request whose whole message is `total` bytes, and its
/// octet count; an error when even no octets take more.
fn sized(
    v: Version,
    o: ByteOrder,
    target: &TargetAddress,
    total: usize,
) -> Result<(BytesMut, usize), String> {
    let empty = encode(v, o, ECHO_ID, target, "echo_octet", Some(&[]))?.len();
    let n = total.checked_sub(empty).ok_or_else(|| {
        format!("an echo_octet request takes {empty} bytes with no octets, more than {total}")
    })?;
    let b = encode(v, o, ECHO_ID, target, "echo_octet", Some(&octets(n)))?;
    Ok((b, n))
}

/// The size of the Fragments of the refused Request: a quarter of the
/// limit, a multiple of 8 (every piece but the last must be), so each
/// piece, its header included, is below the limit; `None` when the
/// smallest piece [`fragment_message`] makes (32 bytes) is not.
fn piece_size(limit: usize) -> Option<usize> {
    let p = (limit / 4) & !7;
    (p >= 32).then_some(p)
}

/// How writing a message the server may refuse went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sent {
    /// Bytes written before it was all sent, an answer began, the
    /// connection closed, or the writing stalled.
    written: usize,
    /// Neither was a byte written nor read for the probe's wait: the
    /// server stopped reading and answered nothing.
    stalled: bool,
}

/// Write `bytes` to `c` while reading what the server sends meanwhile,
/// until all is written, an answer begins (a GIOP header's worth has
/// arrived), the connection closes or breaks, or nothing moved either way
/// for `c`'s wait. What arrived stays in `c` for [`Raw::next`].
async fn send_watching(c: &mut Raw, bytes: &[u8]) -> Sent {
    let wait = c.timeout;
    let (mut rd, mut wr) = c.stream.split();
    let buf = &mut c.buf;
    let mut written = 0;
    let mut moved = tokio::time::Instant::now();
    while written < bytes.len() {
        tokio::select! {
            w = wr.write(&bytes[written..]) => match w {
                Ok(n) if n > 0 => {
                    written += n;
                    moved = tokio::time::Instant::now();
                }
                _ => break,
            },
            r = rd.read_buf(buf) => match r {
                Ok(n) if n > 0 => {
                    if buf.len() >= HEADER_LEN {
                        break;
                    }
                    moved = tokio::time::Instant::now();
                }
                _ => break,
            },
            () = tokio::time::sleep_until(moved + wait) => {
                return Sent { written, stalled: true };
            }
        }
    }
    Sent {
        written,
        stalled: false,
    }
}

/// A refusal that passes: a system exception of these names a limit.
const LIMIT_EXCEPTIONS: [&str; 4] = ["MARSHAL", "IMP_LIMIT", "NO_MEMORY", "COMM_FAILURE"];

/// What the server's answer `next` to the refused Request `ECHO_ID` of
/// `octets` octets was (`Silent`: nothing for `wait`): `Ok((verdict,
/// what))` for an acceptable refusal (a note for a system exception that
/// names no limit), `Err(why)` else.
fn refusal(
    next: Next,
    octets: usize,
    limit: u64,
    wait: Duration,
) -> Result<(Verdict, String), String> {
    let m = match next {
        Next::Message(m, _) => m,
        Next::Closed => return Ok((Verdict::Pass, "closed the connection".into())),
        Next::Silent => {
            return Err(format!(
                "neither answered nor closed within {wait:?} (a hang)"
            ))
        }
        Next::Garbage(e) => return Err(format!("answered bytes that are not GIOP: {e}")),
    };
    let r = match m {
        Message::Reply(r) if r.header.request_id == ECHO_ID => r,
        Message::MessageError => return Ok((Verdict::Pass, "answered MessageError".into())),
        Message::CloseConnection => return Ok((Verdict::Pass, "answered CloseConnection".into())),
        m => {
            return Err(format!(
                "answered {:?} (want a system exception, MessageError or a close)",
                m.msg_type()
            ))
        }
    };
    match r.header.status {
        ReplyStatus::SystemException => {
            let x = r
                .system_exception()
                .map_err(|e| format!("answered a SYSTEM_EXCEPTION that does not decode: {e}"))?;
            let text = format!("answered {}", system_text(&x));
            if LIMIT_EXCEPTIONS.contains(&x.name()) {
                Ok((Verdict::Pass, text))
            } else {
                Ok((
                    Verdict::Note,
                    format!(
                        "{text}: refused, though not with an exception that names a limit \
                         ({})",
                        LIMIT_EXCEPTIONS.join(", ")
                    ),
                ))
            }
        }
        ReplyStatus::NoException => {
            let back = r
                .body
                .reader(Options::default())
                .read_octet_seq()
                .map(<[u8]>::len);
            Err(match back {
                Ok(n) if n == octets => format!(
                    "echoed all {octets} octets: the limit of {limit} bytes was not enforced"
                ),
                _ => format!(
                    "answered NO_EXCEPTION ({} body bytes): the limit of {limit} bytes was not \
                     enforced",
                    r.body.bytes.len()
                ),
            })
        }
        s => Err(format!("answered {s:?} (want a system exception)")),
    }
}

/// `1.3 ms`.
fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// Where the first of `got` and `want` differ, or their lengths if they
/// only differ in length.
fn first_difference(got: &[u8], want: &[u8]) -> Option<String> {
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        let eight = |s: &[u8]| hex(&s[i..s.len().min(i + 8)], 8);
        return Some(format!(
            "octet {i} differs: got {} want {}",
            eight(got),
            eight(want)
        ));
    }
    (got.len() != want.len()).then(|| format!("{} octets back, {} sent", got.len(), want.len()))
}

/// Where one check's requests go and in what form.
struct Aim {
    host: String,
    port: u16,
    v: Version,
    o: ByteOrder,
    target: TargetAddress,
    /// The server's limit, bytes after the header.
    limit: usize,
}

impl InteropSuite {
    /// Every check of the server's own maximum message size (skips
    /// naming the option when it is not given).
    pub(in crate::interop::suite) async fn peer_limit(&mut self) {
        for (p, v, o) in probes() {
            if self.expired() {
                return;
            }
            let mut k = self.field_check(p.name(v, o), "echo", o);
            k.giop = v.to_string();
            k.ty = "octet".into();
            k.calls = if p == Probe::Below { 1 } else { 2 };
            // What the reference allows first: the option would not help.
            let (host, port) = match self.limit_endpoint(v) {
                Ok(e) => e,
                Err(why) => {
                    self.push_field(k.set(Verdict::Skip, why));
                    continue;
                }
            };
            let Some(limit) = self.opts.peer_max_message_size else {
                let why = "the server's maximum message size is not known: give the limit it \
                    is configured with as `peer_max_message_size`";
                self.push_field(k.set(Verdict::Skip, why));
                continue;
            };
            if limit > LARGEST {
                let why = format!(
                    "a limit of {limit} bytes leaves no room above it in a GIOP message \
                     (at most {} bytes after the header)",
                    u32::MAX
                );
                self.push_field(k.set(Verdict::Skip, why));
                continue;
            }
            let Some(target) = address(&self.ior, 0) else {
                self.push_field(k.set(Verdict::Fail, "no IIOP profile"));
                continue;
            };
            let aim = Aim {
                host,
                port,
                v,
                o,
                target,
                limit: limit as usize,
            };
            let t = Instant::now();
            let r = match p {
                Probe::Below => self.below(&aim, &mut k).await,
                _ => {
                    let fragments = p == Probe::AboveInFragments;
                    self.above(&aim, fragments, &mut k).await
                }
            };
            k.seconds = t.elapsed().as_secs_f64();
            self.push_field(match r {
                Ok((verdict, detail)) => k.set(verdict, detail),
                Err(e) if e.starts_with("skip: ") => k.set(Verdict::Skip, &e[6..]),
                Err(e) => k.set(Verdict::Fail, e),
            });
        }
    }

    /// Where the probes of GIOP `v` connect, or why they cannot run.
    fn limit_endpoint(&self, v: Version) -> Result<(String, u16), String> {
        if v > self.ceiling {
            return Err(format!(
                "GIOP {v}; the reference publishes GIOP {}",
                self.ceiling
            ));
        }
        self.plain_endpoint()
    }

    /// The echo just below the limit.
    async fn below(
        &self,
        a: &Aim,
        k: &mut super::super::Check,
    ) -> Result<(Verdict, String), String> {
        let limit = a.limit;
        let total = limit.saturating_sub(UNDER);
        let (bytes, n) = sized(a.v, a.o, &a.target, total).map_err(|e| format!("skip: {e}"))?;
        k.size = n as u64;
        let mut c = Raw::connect(&a.host, a.port, self.opts.request_timeout).await?;
        let t = Instant::now();
        let sent = send_watching(&mut c, &bytes).await;
        let what = format!(
            "echo_octet of {n} octets in a {}-byte Request ({} bytes after the header, limit \
             {limit})",
            bytes.len(),
            bytes.len() - HEADER_LEN
        );
        if sent.stalled {
            return Err(format!(
                "{what}: the server stopped reading after {} bytes and answered nothing within \
                 {:?} (a hang)",
                sent.written, c.timeout
            ));
        }
        let (r, _) = c.reply(ECHO_ID).await.map_err(|e| {
            format!(
                "{what}: {e}{}",
                if sent.written < bytes.len() {
                    format!(" after {} of {} bytes were sent", sent.written, bytes.len())
                } else {
                    String::new()
                }
            )
        })?;
        let took = t.elapsed();
        if r.header.status != ReplyStatus::NoException {
            let x = match r.system_exception() {
                Ok(x) => system_text(&x),
                Err(_) => format!("{:?}", r.header.status),
            };
            return Err(format!(
                "{what}: answered {x}; is the server's limit lower than {limit}?"
            ));
        }
        let back = r
            .body
            .reader(Options::default())
            .read_octet_seq()
            .map_err(|e| format!("{what}: the echo does not decode: {e}"))?;
        if let Some(d) = first_difference(back, &octets(n)) {
            return Err(format!("{what}: echoed wrong: {d}"));
        }
        Ok((
            Verdict::Pass,
            format!("{what}, echoed exactly in {}", ms(took)),
        ))
    }

    /// The Request above the limit, whole or in `fragments`, then a new
    /// connection's ping.
    async fn above(
        &self,
        a: &Aim,
        fragments: bool,
        k: &mut super::super::Check,
    ) -> Result<(Verdict, String), String> {
        let limit = a.limit;
        let (whole, n) = sized(a.v, a.o, &a.target, HEADER_LEN + limit + OVER)?;
        k.size = n as u64;
        let mut what = format!(
            "a {}-byte Request ({} bytes after the header, limit {limit})",
            whole.len(),
            whole.len() - HEADER_LEN
        );
        let bytes = if fragments {
            let Some(piece) = piece_size(limit) else {
                return Err(format!(
                    "skip: a limit of {limit} bytes leaves no room for Fragments below it"
                ));
            };
            let mut out = BytesMut::with_capacity(whole.len() + whole.len() / piece * 16 + 32);
            fragment_message(&whole, piece, &mut out)
                .map_err(|e| format!("fragmenting the request: {e}"))?;
            what = format!(
                "{what} in {} pieces of at most {piece} bytes",
                (whole.len() - piece).div_ceil(piece - 16) + 1
            );
            out
        } else {
            whole
        };
        let wait = self.opts.request_timeout.min(PROBE_WAIT);
        let mut c = Raw::connect(&a.host, a.port, wait).await?;
        let t = Instant::now();
        let sent = send_watching(&mut c, &bytes).await;
        let next = if sent.stalled {
            Next::Silent
        } else {
            c.next().await
        };
        let took = t.elapsed();
        let when = if sent.written < bytes.len() {
            format!(
                "after {} of {} bytes were sent, {}",
                sent.written,
                bytes.len(),
                ms(took)
            )
        } else {
            format!("{} after the first byte", ms(took))
        };
        let judged = refusal(next, n, limit as u64, wait).map_err(|e| {
            if sent.stalled {
                format!(
                    "{what}: the server stopped reading after {} of {} bytes and answered \
                     nothing within {wait:?} (a hang)",
                    sent.written,
                    bytes.len()
                )
            } else {
                format!("{what}: {e} ({when})")
            }
        });
        // Still serving, while the refused connection is open.
        let ping = encode(a.v, a.o, PING_ID, &a.target, "ping", None)?;
        let served = async {
            let mut p = Raw::connect(&a.host, a.port, wait).await?;
            p.send(&ping).await?;
            let (r, _) = p.reply(PING_ID).await?;
            ping_outcome(&r)
        }
        .await;
        drop(c);
        match (judged, served) {
            (Ok((verdict, how)), Ok(())) => Ok((
                verdict,
                format!("{what}: {how} ({when}); a new connection is served"),
            )),
            (Ok((_, how)), Err(e)) => Err(format!(
                "{what}: {how} ({when}); then a new connection's ping: {e} (the server stopped \
                 serving)"
            )),
            (Err(e), Ok(())) => Err(format!("{e}; a new connection is served")),
            (Err(e), Err(p)) => Err(format!(
                "{e}; then a new connection's ping: {p} (the server stopped serving)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iiop_giop::message::encode_reply;
    use iiop_giop::{Completion, Header, SystemException};

    fn key() -> TargetAddress {
        TargetAddress::Key(bytes::Bytes::from_static(b"Bench"))
    }

    #[test]
    fn a_sized_request_is_exactly_as_long_as_asked() {
        for v in [V10, V11, V12] {
            for o in [ByteOrder::Little, ByteOrder::Big] {
                for total in [200, 1000, 65_536 - UNDER, 65_536 + HEADER_LEN + OVER] {
                    let (b, n) = sized(v, o, &key(), total).unwrap();
                    assert_eq!(b.len(), total, "GIOP {v} {o:?}");
                    let h = Header::parse(&b).unwrap();
                    assert_eq!(h.total_len(), total);
                    assert!(n > 0 && n < total);
                }
            }
        }
        assert!(sized(V12, ByteOrder::Big, &key(), 40).is_err());
    }

    #[test]
    fn fragments_of_the_refused_request_are_each_below_the_limit() {
        let limit = 4096;
        let (whole, _) = sized(V12, ByteOrder::Little, &key(), HEADER_LEN + limit + OVER).unwrap();
        let piece = piece_size(limit).unwrap();
        let mut out = BytesMut::new();
        fragment_message(&whole, piece, &mut out).unwrap();
        let mut rest = &out[..];
        let mut pieces = 0;
        let mut after_headers = 0;
        while !rest.is_empty() {
            let h = Header::parse(rest).unwrap();
            assert!(h.total_len() < limit, "{}", h.total_len());
            assert_eq!(h.more_fragments, rest.len() > h.total_len());
            after_headers += h.size as usize;
            rest = &rest[h.total_len()..];
            pieces += 1;
        }
        // All the pieces after their headers, request ids of the
        // Fragments less: more than the limit.
        assert!(after_headers - 4 * (pieces - 1) > limit);
        assert_eq!(pieces, (whole.len() - piece).div_ceil(piece - 16) + 1);
        assert_eq!(piece_size(100), None);
    }

    fn reply(status: ReplyStatus, id: u32, body: impl FnOnce(&mut iiop_cdr::Writer<'_>)) -> Next {
        let mut b = BytesMut::new();
        encode_reply(
            &mut b,
            V12,
            ByteOrder::Big,
            Options::default(),
            id,
            status,
            &[],
            |w| {
                body(w);
                Ok(())
            },
        )
        .unwrap();
        let mut d = iiop_giop::codec::Decoder::new(Default::default());
        let f = d.decode(&mut b).unwrap().unwrap();
        Next::Message(Message::decode_frame(f, Options::default()).unwrap(), 1)
    }

    fn system(name: &str) -> Next {
        let id = format!("IDL:omg.org/CORBA/{name}:1.0");
        let x = SystemException::new(id, 0x4154_000c, Completion::No);
        reply(ReplyStatus::SystemException, ECHO_ID, |w| {
            x.encode(w).unwrap()
        })
    }

    const W: Duration = Duration::from_secs(2);

    #[test]
    fn a_refusal_is_an_exception_a_message_error_or_a_close() {
        let (v, d) = refusal(system("MARSHAL"), 10, 64, W).unwrap();
        assert_eq!(v, Verdict::Pass);
        assert_eq!(
            d,
            "answered MARSHAL minor 0x4154000c (OmniOrb) completed COMPLETED_NO"
        );
        let (v, d) = refusal(system("BAD_PARAM"), 10, 64, W).unwrap();
        assert_eq!(v, Verdict::Note);
        assert!(
            d.contains("not with an exception that names a limit"),
            "{d}"
        );
        assert_eq!(
            refusal(Next::Closed, 10, 64, W).unwrap(),
            (Verdict::Pass, "closed the connection".to_string())
        );
        assert_eq!(
            refusal(Next::Message(Message::MessageError, 1), 10, 64, W)
                .unwrap()
                .1,
            "answered MessageError"
        );
        assert_eq!(
            refusal(Next::Silent, 10, 64, W).unwrap_err(),
            "neither answered nor closed within 2s (a hang)"
        );
        let echo = reply(ReplyStatus::NoException, ECHO_ID, |w| {
            w.write_octet_seq(&octets(10)).unwrap()
        });
        assert_eq!(
            refusal(echo, 10, 64, W).unwrap_err(),
            "echoed all 10 octets: the limit of 64 bytes was not enforced"
        );
        let other = reply(ReplyStatus::NoException, 7, |_| ());
        assert!(refusal(other, 10, 64, W)
            .unwrap_err()
            .starts_with("answered Reply"));
    }

    #[test]
    fn echoes_are_compared_octet_by_octet() {
        let want = octets(300);
        assert_eq!(first_difference(&want, &want), None);
        let mut got = want.clone();
        got[260] ^= 1;
        assert_eq!(
            first_difference(&got, &want).unwrap(),
            "octet 260 differs: got 080a0b0c 0d0e0f10 want 090a0b0c 0d0e0f10"
        );
        assert_eq!(
            first_difference(&want[..299], &want).unwrap(),
            "299 octets back, 300 sent"
        );
    }
}
