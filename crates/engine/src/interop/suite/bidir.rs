//! Bidirectional GIOP (CORBA 3.0, 15.8): `call_back(cb, n)` passes a
//! Callback object of ours, and the server calls `cb->notify(n)` before
//! it answers.
//!
//! Offered: our GIOP 1.2 Request carries a BI_DIR_IIOP service context
//! (id 5) listing the address in cb's reference, and the connection is
//! marked as offered for callbacks in the client core, which then takes
//! the server's Requests on it and answers them with our Callback
//! servant. The check passes when `notify(n)` came over our own
//! connection, nothing connected to the listen point, and the result is
//! `n + 1`. The context we sent is read back from our own bytes.
//!
//! Through the client driver (`--bidir`): `call_back` made by a
//! [`BenchClient`] whose connection the core offered for callbacks and
//! whose driver serves our Callback on it; passes when `notify(n)`
//! reached that servant and the result is `n + 1`.
//!
//! Not offered: no context. A Request over our connection is the
//! server's protocol error (the client core refuses it: MessageError);
//! the server may instead open a connection to cb's address (we listen
//! there and serve `notify` with our server core), or raise an exception
//! (ours raises NO_PERMISSION: it opens no connection back).

use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use iiop_bench_idl::bench::ops::CALLBACK_ID;
use iiop_bench_idl::callback::{CallbackServant, CALLBACK_KEY};
use iiop_bench_idl::client::{BenchClient, BenchError};
use iiop_cdr::{ByteOrder, Options, Writer};
use iiop_giop::conn::client::{Arrival, ClientConn, ClientSetup, ConnConfig, Incoming, Outgoing};
use iiop_giop::conn::server::{ServerConn, ServerConnConfig};
use iiop_giop::context::BiDirIiop;
use iiop_giop::message::{Reply, ReplyStatus};
use iiop_giop::{Header, Ior, Message, ResponseMode, TargetAddress};
use iiop_transport::client::{ClientConfig, ClientError};
use iiop_transport::config::Callbacks;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::field::{address, short, DRIVER_CHECK, PROBE_WAIT};
use super::{hex, system_text, InteropSuite, Verdict, V12};

/// The `n` passed to `call_back`; `notify` answers `n + 1`.
const N: i32 = 41;

/// What one `call_back` came to.
struct Called {
    /// The reply to `call_back`.
    reply: Reply,
    /// `notify` calls that came over our own connection.
    ours: Vec<i32>,
    /// Connections the server opened to our listen point, and the
    /// `notify` calls that came over them.
    accepted: usize,
    theirs: Vec<i32>,
    /// The BI_DIR_IIOP context as it went out (its data), if offered.
    context: Option<Vec<u8>>,
    /// The object keys call_back was forwarded to, in order.
    forwarded: Vec<String>,
    /// LocateRequests for our Callback that came over our connection.
    located: usize,
}

/// The most LOCATION_FORWARDs a `call_back` follows.
const MAX_FORWARDS: usize = 2;

/// The object key a forward reply `r` names, when it names the server we
/// are connected to (`host:port`): the callback must come over this
/// connection, so a forward elsewhere is not followed.
fn forward_here(r: &Reply, host: &str, port: u16, hops: usize) -> Result<bytes::Bytes, String> {
    if hops >= MAX_FORWARDS {
        return Err(format!(
            "call_back forwarded more than {MAX_FORWARDS} times"
        ));
    }
    let ior = r
        .forward_ior()
        .map_err(|e| format!("call_back's forward does not decode: {e}"))?;
    let p = ior
        .profiles
        .iter()
        .find_map(|p| p.iiop()?.ok())
        .ok_or("call_back forwarded to a reference without an IIOP profile")?;
    if p.port != port || !p.host.eq_ignore_ascii_case(host) {
        return Err(format!(
            "call_back forwarded to {}:{}, not to the server we are connected to ({host}:{port})",
            p.host, p.port
        ));
    }
    Ok(p.object_key)
}

/// Serve `notify` on a connection the server opened to our listen point,
/// with our server core, until it closes or `until`.
async fn serve_back(mut s: TcpStream, h: Arc<CallbackServant>, until: tokio::time::Instant) {
    let mut sc = ServerConn::new(Arc::new(ServerConnConfig::default()), 1, None, None);
    loop {
        sc.process(&*h, &mut |_| {});
        if !sc.output().is_empty() {
            if s.write_all(sc.output()).await.is_err() {
                return;
            }
            sc.sent();
        }
        if sc.is_done() {
            return;
        }
        match tokio::time::timeout_at(until, s.read_buf(sc.read_buf())).await {
            Ok(Ok(n)) if n > 0 => sc.received(n),
            _ => return,
        }
    }
}

/// The bytes of a Reference to our Callback object at `host:port`,
/// marshalled from an 8-aligned origin (an IOR's own alignment is at most
/// 4, so they go into a body as they are).
fn callback_ior(host: &str, port: u16, order: ByteOrder) -> Result<Vec<u8>, String> {
    let ior = Ior::iiop(CALLBACK_ID, host, port, CALLBACK_KEY);
    let mut b = BytesMut::new();
    ior.encode(&mut Writer::new(&mut b, order))
        .map_err(|e| format!("encoding our Callback reference: {e}"))?;
    Ok(b.to_vec())
}

/// The BI_DIR_IIOP context of the Request in `sent` (our own bytes).
fn context_sent(sent: &[u8]) -> Result<(BiDirIiop, Vec<u8>), String> {
    let h = Header::parse(sent).map_err(|e| format!("our own Request: {e}"))?;
    let payload = bytes::Bytes::copy_from_slice(&sent[12..h.total_len().min(sent.len())]);
    let Ok(Message::Request(r)) = Message::decode(&h, payload, Options::default()) else {
        return Err("our own Request does not decode".into());
    };
    let c = r
        .header
        .contexts
        .get(iiop_giop::context::SC_BI_DIR_IIOP)
        .ok_or("our Request carries no BI_DIR_IIOP context")?;
    let b = BiDirIiop::decode(&c.data).map_err(|e| format!("our BI_DIR_IIOP context: {e}"))?;
    Ok((b, c.data.to_vec()))
}

impl InteropSuite {
    /// The bidirectional GIOP checks: offered in both byte orders, and
    /// once not offered.
    pub(super) async fn bidir(&mut self) {
        for order in [ByteOrder::Little, ByteOrder::Big] {
            if self.expired() {
                return;
            }
            self.bidir_check(Some(order)).await;
        }
        if !self.expired() {
            self.bidir_check(None).await;
        }
        if !self.expired() {
            self.bidir_driver().await;
        }
    }

    /// `call_back` through our client driver offered for callbacks (what
    /// `--bidir` runs: the core sends the offer, the driver serves our
    /// Callback on the connection and nothing listens), in our native
    /// order.
    async fn bidir_driver(&mut self) {
        let order = ByteOrder::NATIVE;
        let mut k = self.field_check(DRIVER_CHECK.to_string(), "twoway", order);
        k.calls = 2;
        if self.ceiling < V12 {
            let why = format!(
                "bidirectional GIOP is GIOP 1.2; the reference publishes GIOP {}",
                self.ceiling
            );
            self.push_field(k.set(Verdict::Skip, why));
            return;
        }
        let servant = Arc::new(CallbackServant::default());
        // Bounded as the raw checks are: a server that cannot call back
        // hangs the call.
        let cfg = ClientConfig {
            callbacks: Some(Callbacks(servant.clone())),
            request_timeout: Some(self.opts.request_timeout.min(PROBE_WAIT)),
            ..self.cfg(V12, order, None)
        };
        let t = Instant::now();
        let r = async {
            let c = BenchClient::connect(&self.ior, &cfg).await?;
            let v = c.call_back(N).await;
            c.close();
            v
        }
        .await;
        k.seconds = t.elapsed().as_secs_f64();
        let seen = servant.seen();
        let (v, detail) = match r {
            Ok(v) if seen == [N] => (
                Verdict::Pass,
                format!(
                    "notify({N}) served by the client driver over its own connection, \
                     call_back returned {v}"
                ),
            ),
            Ok(v) => (
                Verdict::Fail,
                format!("call_back returned {v}, and our Callback saw notify {seen:?}"),
            ),
            Err(BenchError::Call(ClientError::System(x)))
                if x.name().ends_with("BAD_OPERATION") || x.name().ends_with("NO_IMPLEMENT") =>
            {
                (
                    Verdict::Skip,
                    format!(
                        "the server does not implement call_back (bench.idl's CALLBACKS): {}",
                        system_text(&x)
                    ),
                )
            }
            Err(e) => (
                Verdict::Fail,
                format!("{e}; our Callback saw notify {seen:?}"),
            ),
        };
        self.push_field(k.set(v, detail));
    }

    /// `call_back` offered for callbacks in `order`, or (`None`) not
    /// offered, in our native order.
    async fn bidir_check(&mut self, offered: Option<ByteOrder>) {
        let order = offered.unwrap_or(ByteOrder::NATIVE);
        let name = match offered {
            Some(o) => format!("bidirectional GIOP callback, GIOP 1.2 {}", short(o)),
            None => "callback without BI_DIR_IIOP, GIOP 1.2".to_string(),
        };
        let mut k = self.field_check(name, "twoway", order);
        k.calls = 2;
        if let Err(e) = self.raw_endpoint() {
            self.push_field(k.set(Verdict::Skip, e));
            return;
        }
        let t = Instant::now();
        let r = self.call_back(order, offered.is_some()).await;
        k.seconds = t.elapsed().as_secs_f64();
        let (v, detail) = match r {
            Err(e) => (Verdict::Fail, e),
            Ok(c) => judge(&c, offered.is_some()),
        };
        self.push_field(k.set(v, detail));
    }

    /// One `call_back(cb, N)` on a connection of its own, serving
    /// callbacks on it (when `offer`) and on our listen point.
    async fn call_back(&self, order: ByteOrder, offer: bool) -> Result<Called, String> {
        let (host, port) = self.raw_endpoint()?;
        let wait = self.opts.request_timeout.min(PROBE_WAIT);
        let mut stream = tokio::time::timeout(wait, TcpStream::connect((host.as_str(), port)))
            .await
            .map_err(|_| format!("connect {host}:{port}: no answer within {wait:?}"))?
            .map_err(|e| format!("connect {host}:{port}: {e}"))?;
        let _ = stream.set_nodelay(true);
        // Listen where the server reaches us: the address our connection
        // comes from.
        let local = stream
            .local_addr()
            .map_err(|e| format!("our address: {e}"))?
            .ip();
        let listener = TcpListener::bind((local, 0))
            .await
            .map_err(|e| format!("listen on {local}: {e}"))?;
        let lp_port = listener
            .local_addr()
            .map_err(|e| format!("our listen point: {e}"))?
            .port();
        let lp_host = local.to_string();
        let cfg = ConnConfig {
            version: Some(V12),
            order,
            ..ConnConfig::default()
        };
        let setup = ClientSetup::negotiate(format!("{host}:{port}"), V12, &cfg, None);
        let mut conn = ClientConn::new(setup, &cfg);
        let offer_ctx = BiDirIiop {
            listen_points: vec![(lp_host.clone(), lp_port)],
        };
        let contexts = if offer {
            conn.offer_bidir();
            vec![offer_ctx
                .context(order)
                .map_err(|e| format!("encoding BI_DIR_IIOP: {e}"))?]
        } else {
            Vec::new()
        };
        let target = address(&self.ior, 0).ok_or("no IIOP profile")?;
        let cb = callback_ior(&lp_host, lp_port, order)?;
        let send = |conn: &mut ClientConn, target: &TargetAddress| {
            conn.send(
                Outgoing::Request {
                    target,
                    operation: "call_back",
                    response: ResponseMode::Twoway,
                    contexts: &contexts,
                    body: |w: &mut Writer<'_>| {
                        w.write_bytes(&cb);
                        w.write_i32(N);
                        Ok(())
                    },
                },
                None,
                None,
            )
            .map_err(|e| format!("encoding call_back: {e}"))
        };
        let mut id = send(&mut conn, &target)?;
        let mut forwarded = Vec::new();
        let sent = conn.outbox().to_vec();
        let context = if offer {
            let (got, data) = context_sent(&sent)?;
            if got != offer_ctx {
                return Err(format!(
                    "our BI_DIR_IIOP context reads back as {got:?}, not {offer_ctx:?}"
                ));
            }
            Some(data)
        } else {
            None
        };
        let ours = Arc::new(CallbackServant::default());
        let theirs = Arc::new(CallbackServant::default());
        let until = tokio::time::Instant::now() + wait;
        let mut accepted = 0;
        let mut located = 0;
        let mut served = tokio::task::JoinSet::new();
        let reply = loop {
            let out = conn.outbox().to_vec();
            if !out.is_empty() {
                stream
                    .write_all(&out)
                    .await
                    .map_err(|e| format!("send: {e}"))?;
                conn.outbox().consume(out.len());
            }
            tokio::select! {
                r = stream.read_buf(conn.read_buf()) => match r {
                    Ok(0) | Err(_) => break Err("the server closed the connection".to_string()),
                    Ok(_) => {}
                },
                a = listener.accept() => {
                    if let Ok((s, _)) = a {
                        accepted += 1;
                        served.spawn(serve_back(s, theirs.clone(), until));
                    }
                    continue;
                }
                _ = tokio::time::sleep_until(until) => {
                    break Err(format!("no reply to call_back within {wait:?}"));
                }
            }
            let mut done = None;
            loop {
                match conn.poll_arrival() {
                    Ok(None) => break,
                    Ok(Some(Arrival::Request(req))) => {
                        if let Err(e) = conn.answer(&req, &*ours) {
                            done = Some(Err(format!("answering the callback: {e}")));
                            break;
                        }
                    }
                    Ok(Some(Arrival::Locate(l))) => {
                        located += 1;
                        if let Err(e) = conn.answer_locate(&l, &*ours) {
                            done = Some(Err(format!("answering the LocateRequest: {e}")));
                            break;
                        }
                    }
                    Ok(Some(Arrival::Answer(got, Incoming::Reply(r))))
                        if got == id && r.header.status.is_forward() =>
                    {
                        // A server may forward call_back to an object of
                        // its own that may call back (omniORB's bench
                        // server does: its fixed keys live in a POA
                        // without the BiDir policy): follow it on this
                        // connection, offering it again.
                        match forward_here(&r, &host, port, forwarded.len()) {
                            Ok(to) => {
                                forwarded.push(iiop_giop::key::key_text(&to));
                                match send(&mut conn, &TargetAddress::Key(to)) {
                                    Ok(next) => id = next,
                                    Err(e) => {
                                        done = Some(Err(e));
                                        break;
                                    }
                                }
                            }
                            Err(e) => {
                                done = Some(Err(e));
                                break;
                            }
                        }
                    }
                    Ok(Some(Arrival::Answer(got, inc))) if got == id => {
                        done = Some(match inc {
                            Incoming::Reply(r) => Ok(r),
                            Incoming::Locate(_) => Err("a LocateReply to call_back".to_string()),
                        });
                        break;
                    }
                    Ok(Some(Arrival::Answer(..))) => {}
                    Err(e) => {
                        let why = if offer {
                            format!("{e}")
                        } else {
                            format!(
                                "{e}: a Request over a connection not offered for \
                                 callbacks (no BI_DIR_IIOP context) is the server's \
                                 protocol error (CORBA 3.0, 15.8)"
                            )
                        };
                        done = Some(Err(why));
                        break;
                    }
                }
            }
            if let Some(d) = done {
                // What the error queued (MessageError) goes out.
                let out = conn.outbox().to_vec();
                let _ = stream.write_all(&out).await;
                break d;
            }
        }?;
        served.abort_all();
        Ok(Called {
            reply,
            ours: ours.seen(),
            accepted,
            theirs: theirs.seen(),
            context,
            forwarded,
            located,
        })
    }
}

/// The verdict and detail of one `call_back`.
fn judge(c: &Called, offered: bool) -> (Verdict, String) {
    let mut ctx = c
        .context
        .as_ref()
        .map(|d| format!("; BI_DIR_IIOP context sent: {}", hex(d, 48)))
        .unwrap_or_default();
    if c.located > 0 {
        ctx += &format!(
            "; {} LocateRequest(s) for the Callback over our connection, answered",
            c.located
        );
    }
    if !c.forwarded.is_empty() {
        ctx += &format!(
            "; after LOCATION_FORWARD to key {} on the same connection",
            c.forwarded.join(", then ")
        );
    }
    let result = match c.reply.header.status {
        ReplyStatus::NoException => match c.reply.body.reader(Options::default()).read_i32() {
            Ok(v) => Ok(v),
            Err(e) => return (Verdict::Fail, format!("call_back's result: {e}")),
        },
        ReplyStatus::SystemException => Err(match c.reply.system_exception() {
            Ok(x) => x,
            Err(e) => {
                return (
                    Verdict::Fail,
                    format!("SYSTEM_EXCEPTION that does not decode: {e}"),
                )
            }
        }),
        s => return (Verdict::Fail, format!("call_back answered {s:?}")),
    };
    if let Err(x) = &result {
        if x.name().ends_with("BAD_OPERATION") || x.name().ends_with("NO_IMPLEMENT") {
            return (
                Verdict::Skip,
                format!(
                    "the server does not implement call_back (bench.idl's CALLBACKS): {}",
                    system_text(x)
                ),
            );
        }
    }
    let seen = format!(
        "notify over our connection: {:?}; connections to our listen point: {} \
         (notify over them: {:?})",
        c.ours, c.accepted, c.theirs
    );
    match (offered, result) {
        (true, Ok(v)) if v == N + 1 && c.ours == [N] && c.accepted == 0 => (
            Verdict::Pass,
            format!("notify({N}) came over our own connection, call_back returned {v}{ctx}"),
        ),
        (true, Ok(v)) if c.ours.is_empty() && c.accepted > 0 => (
            Verdict::Fail,
            format!(
                "the server connected to our listen point instead of calling back over \
                 the connection we offered (call_back returned {v}); {seen}{ctx}"
            ),
        ),
        (true, Ok(v)) => (
            Verdict::Fail,
            format!("call_back returned {v} (want {}); {seen}{ctx}", N + 1),
        ),
        (true, Err(x)) => (
            Verdict::Fail,
            format!("call_back raised {}; {seen}{ctx}", system_text(&x)),
        ),
        (false, _) if !c.ours.is_empty() => (
            Verdict::Fail,
            format!("the server called back over a connection not offered; {seen}"),
        ),
        (false, Ok(v)) if v == N + 1 && c.theirs == [N] => (
            Verdict::Pass,
            format!(
                "no Request over our connection; the server connected to our listen \
                 point for notify({N}) (as it may without BI_DIR_IIOP), call_back returned {v}{ctx}"
            ),
        ),
        (false, Ok(v)) => (
            Verdict::Fail,
            format!("call_back returned {v} (want {}); {seen}", N + 1),
        ),
        (false, Err(x)) => (
            Verdict::Pass,
            format!(
                "no Request over our connection; call_back raised {} (the server may \
                 refuse to call back without BI_DIR_IIOP); {seen}{ctx}",
                system_text(&x)
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use iiop_cdr::Reader;

    use super::*;

    #[test]
    fn our_callback_reference_reads_back() {
        let b = callback_ior("127.0.0.1", 4711, ByteOrder::Big).unwrap();
        let ior = Ior::decode(&mut Reader::new(&b, ByteOrder::Big)).unwrap();
        assert_eq!(ior.type_id, CALLBACK_ID);
        let p = ior.profiles[0].iiop().unwrap().unwrap();
        assert_eq!((p.host.as_str(), p.port), ("127.0.0.1", 4711));
        assert_eq!(&p.object_key[..], CALLBACK_KEY);
    }
}
