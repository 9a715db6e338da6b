//! A blocking IIOP connection for one caller: the calling thread writes a
//! request and then itself blocks in `recv` until the reply is there.
//! This is TAO's wait-on-read client strategy, and how omniORB's
//! thread-per-connection client waits.
//!
//! A round trip costs one write and one read system call. The
//! [`Connection`](super::Connection) of the tokio transport waits in the
//! runtime's `epoll_wait` instead and is then woken to read: one system
//! call and one wake-up more per reply. On a loopback ping that is several
//! per cent of the round trip. Use this when one caller makes one call at
//! a time (closed-loop latency, back-to-back twoway throughput); use
//! [`Connection`](super::Connection) for everything else.
//!
//! The encoding, framing and reply matching are the same pure code the
//! tokio client uses. Only the I/O differs:
//! - SO_RCVTIMEO/SO_SNDTIMEO are set to a short poll interval, so a call
//!   that waits can see its deadline and the abort check
//!   ([`BlockingConnection::set_abort`]) without a timer;
//! - a timed-out request is cancelled (CancelRequest), and its late reply
//!   is dropped when it arrives;
//! - a malformed message is answered with MessageError and ends the
//!   connection, as in the tokio client.

use std::io::{IoSlice, Write};
use std::mem::MaybeUninit;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use iiop_cdr::{ByteOrder, CdrError, Options, Splices, Writer};

use super::client::tcp_socket;
use crate::codec::Decoder;
use crate::conn::client::{
    fragment_from, incoming, locate_of, reply_of, with_code_sets, ClientConfig, ClientError,
    ClientSetup, Incoming, Prepared, Sending,
};
use crate::conn::deadline::check_interval;
use crate::conn::out::{head_first_for, Outbox, MAX_IOV};
use crate::context::{CodeSetComponentInfo, ServiceContext};
use crate::error::GiopError;
use crate::header::{MsgType, Version};
use crate::message::{
    encode_cancel_request, encode_empty, encode_locate_request, LocateReply, Message, Reply,
    RequestHead, ResponseMode, TargetAddress,
};

/// Longest a blocked read or write goes before it looks at its deadline
/// and the abort check.
const MAX_POLL: Duration = Duration::from_millis(100);

/// One IIOP connection used by one thread at a time, waiting on read.
#[derive(Debug)]
pub struct BlockingConnection {
    sock: TcpStream,
    local: SocketAddr,
    setup: ClientSetup,
    code_sets_sent: bool,
    /// SO_RCVTIMEO/SO_SNDTIMEO: how long a blocked call waits before it
    /// looks at its deadline and the abort check.
    poll: Duration,
    abort: Option<fn() -> bool>,
    /// Poll without blocking this long before a reply read blocks.
    spin: Option<Duration>,
    next_id: u32,
    out: Outbox,
    input: BytesMut,
    decoder: Decoder,
    /// Set once the connection is unusable; every later call fails with it.
    dead: Option<ClientError>,
}

impl BlockingConnection {
    /// Connect to `host:port` speaking `version`; with `code_sets` (the
    /// target IOR's TAG_CODE_SETS) and GIOP ≥ 1.1, code sets are
    /// negotiated and sent on the first request, as
    /// [`Connection::connect`](super::Connection::connect) does.
    pub fn connect(
        host: &str,
        port: u16,
        version: Version,
        cfg: &ClientConfig,
        code_sets: Option<&CodeSetComponentInfo>,
    ) -> Result<BlockingConnection, ClientError> {
        let addr = format!("{host}:{port}");
        let connect_err = |e: std::io::Error| ClientError::Connect {
            addr: addr.clone(),
            message: e.to_string(),
        };
        let sockaddr = (host, port)
            .to_socket_addrs()
            .map_err(connect_err)?
            .next()
            .ok_or_else(|| ClientError::Connect {
                addr: addr.clone(),
                message: "host name resolved to no address".into(),
            })?;
        let socket = tcp_socket(sockaddr, cfg).map_err(connect_err)?;
        socket
            .connect_timeout(&sockaddr.into(), cfg.connect_timeout)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
                    ClientError::ConnectTimeout {
                        addr: addr.clone(),
                        after: cfg.connect_timeout,
                    }
                }
                _ => connect_err(e),
            })?;
        let sock: TcpStream = socket.into();
        let poll = poll_interval(cfg.request_timeout);
        sock.set_read_timeout(Some(poll)).map_err(connect_err)?;
        sock.set_write_timeout(Some(poll)).map_err(connect_err)?;
        let local = sock.local_addr().map_err(connect_err)?;
        let setup = ClientSetup::negotiate(addr, version, cfg, code_sets);
        Ok(BlockingConnection {
            sock,
            local,
            setup,
            code_sets_sent: false,
            poll,
            abort: None,
            // Bounded by the poll interval, so the deadline and the abort
            // check are looked at no later than without it.
            spin: cfg.spin.filter(|d| !d.is_zero()).map(|d| d.min(poll)),
            next_id: 1,
            out: Outbox::new(16 * 1024, cfg.splice_cutoff),
            input: BytesMut::with_capacity(64 * 1024),
            decoder: Decoder::new(cfg.codec),
            dead: None,
        })
    }

    /// Check `abort` whenever a blocked read or write wakes to look at its
    /// deadline (at least every 100 ms): when it returns true, the call
    /// fails with [`ClientError::LocallyClosed`] and the connection closes
    /// (e.g. on Ctrl-C while a server does not answer).
    pub fn set_abort(&mut self, abort: fn() -> bool) {
        self.abort = Some(abort);
    }

    /// `host:port` of the peer.
    pub fn addr(&self) -> &str {
        &self.setup.addr
    }

    /// Our end of the TCP connection.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The GIOP version spoken.
    pub fn version(&self) -> Version {
        self.setup.wire.version
    }

    /// Our byte order.
    pub fn order(&self) -> ByteOrder {
        self.setup.wire.order
    }

    /// The CDR options (negotiated code sets) for bodies on this
    /// connection.
    pub fn options(&self) -> Options {
        self.setup.wire.opts
    }

    /// Whether the connection has failed or was closed.
    pub fn is_closed(&self) -> bool {
        self.dead.is_some()
    }

    /// Close the connection (GIOP 1.2: with CloseConnection); later calls
    /// fail with `LocallyClosed`.
    pub fn close(&mut self) {
        if self.dead.is_none() {
            self.say_goodbye();
            self.dead = Some(ClientError::LocallyClosed);
            let _ = self.sock.shutdown(std::net::Shutdown::Both);
        }
    }

    /// Send a request whose body `body` writes; the reply for twoway calls,
    /// `None` for oneways (once written).
    pub fn request<F>(
        &mut self,
        target: &TargetAddress,
        operation: &str,
        response: ResponseMode,
        body: F,
    ) -> Result<Option<Reply>, ClientError>
    where
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        self.request_with(
            target,
            operation,
            response,
            &[],
            self.setup.request_timeout,
            body,
        )
    }

    /// [`request`](Self::request) with extra service contexts and an
    /// explicit timeout.
    pub fn request_with<F>(
        &mut self,
        target: &TargetAddress,
        operation: &str,
        response: ResponseMode,
        contexts: &[ServiceContext],
        timeout: Option<Duration>,
        body: F,
    ) -> Result<Option<Reply>, ClientError>
    where
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        // A clone only while the context is due (the first request).
        let due = match self.code_sets_sent {
            true => None,
            false => self.setup.code_sets.clone(),
        };
        let contexts = with_code_sets(contexts, due.as_ref());
        let wire = self.setup.wire;
        let inc = self.exchange(Sending::Request(response), timeout, |out, splices, id| {
            let head = RequestHead {
                request_id: id,
                response,
                target,
                operation,
                contexts: &contexts,
            };
            wire.encode_request(out, splices, &head, body)
        })?;
        reply_of(inc, self.addr())
    }

    /// Send a request built by [`Connection::prepare`](super::Connection::prepare)
    /// or [`prepare`](Self::prepare) with a fresh request id.
    pub fn send_prepared(&mut self, p: &Prepared) -> Result<Option<Reply>, ClientError> {
        p.check_for(self.setup.wire.version, self.setup.wire.order)?;
        let inc = self.exchange(
            Sending::Request(p.response()),
            self.setup.request_timeout,
            |out, splices, id| {
                p.append(out, splices, id);
                Ok(())
            },
        )?;
        reply_of(inc, self.addr())
    }

    /// Build a request once for [`send_prepared`](Self::send_prepared).
    pub fn prepare<F>(
        &self,
        target: &TargetAddress,
        operation: &str,
        response: ResponseMode,
        body: F,
    ) -> Result<Prepared, ClientError>
    where
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        Prepared::build(&self.setup, target, operation, response, body)
    }

    /// Send a LocateRequest.
    pub fn locate(&mut self, target: &TargetAddress) -> Result<LocateReply, ClientError> {
        let wire = self.setup.wire;
        let timeout = self.setup.request_timeout;
        let inc = self.exchange(Sending::Locate, timeout, |out, _, id| {
            encode_locate_request(out, wire.version, wire.order, id, target)
                .map(|_| ())
                .map_err(ClientError::Encode)
        })?;
        locate_of(inc, self.addr())
    }

    /// Encode one message with a new request id, write it, and (when a
    /// reply is expected) read until it arrives.
    fn exchange(
        &mut self,
        what: Sending,
        timeout: Option<Duration>,
        encode: impl FnOnce(&mut BytesMut, &mut Splices, u32) -> Result<(), ClientError>,
    ) -> Result<Option<Incoming>, ClientError> {
        if let Some(e) = &self.dead {
            return Err(e.clone());
        }
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        let mut deadline = Deadline::new(timeout, self.poll);
        // Empty after every completed write; kept (with its capacity).
        self.out.clear();
        let (buf, splices) = self.out.parts();
        let (version, fragment_size) = (self.setup.wire.version, self.setup.fragment_size);
        let encoded = encode(buf, splices, id)
            .and_then(|()| fragment_from(version, fragment_size, buf, splices, 0));
        if let Err(e) = encoded {
            self.out.clear();
            return Err(e);
        }
        if self.setup.code_sets.is_some() && matches!(what, Sending::Request(_)) {
            self.code_sets_sent = true;
        }
        let expects_reply = what.expects_reply();
        let head = head_first_for(self.setup.head_first, expects_reply);
        if let Err(e) = self.write_queued(head, &mut deadline) {
            return Err(self.fail(e));
        }
        if !expects_reply {
            return Ok(None);
        }
        match self.read_reply(id, &mut deadline) {
            Ok(inc) => Ok(Some(inc)),
            Err(e @ ClientError::Timeout { .. }) => {
                // Tell the server; its late reply is dropped on arrival.
                self.out.clear();
                let wire = self.setup.wire;
                let _ = encode_cancel_request(self.out.parts().0, wire.version, wire.order, id);
                if let Err(w) = self.write_queued(None, &mut Deadline::new(None, self.poll)) {
                    self.fail(w);
                }
                Err(e)
            }
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Write the queued stream; from `head_first` bytes on its first
    /// [`HEAD_BYTES`] go alone first (the server starts on the headers
    /// while the body is still being copied; see the tokio client).
    fn write_queued(
        &mut self,
        head_first: Option<usize>,
        deadline: &mut Deadline,
    ) -> Result<(), ClientError> {
        let mut limit = self.out.first_write(head_first);
        let mut spin = Spin::new(self.spin);
        while !self.out.is_empty() {
            // Nothing spliced: a plain send from the buffer, as the other
            // ORBs' clients do; else the pieces with writev.
            let mut iov = [IoSlice::new(&[]); MAX_IOV];
            let n = self.out.slices(limit, &mut iov);
            let r = send_spinning(&self.sock, &iov[..n], &mut spin);
            match r {
                Ok(0) => return Err(self.io(std::io::ErrorKind::WriteZero.into())),
                Ok(n) => {
                    self.out.consume(n);
                    limit = usize::MAX;
                }
                Err(e) if waited(&e) => {
                    self.check_abort()?;
                    if deadline.passed() {
                        // Part of a message may be out: the stream is lost.
                        return Err(self.io(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            "the server stopped reading before the request was written",
                        )));
                    }
                }
                // A signal (a timed socket call is not restarted): try again;
                // the abort check comes at the next poll interval, so a reply
                // on its way still completes the call.
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io(e)),
            }
        }
        Ok(())
    }

    /// Read until the reply to `id` is decoded. Replies to other ids (late
    /// ones of cancelled requests) are dropped.
    fn read_reply(&mut self, id: u32, deadline: &mut Deadline) -> Result<Incoming, ClientError> {
        let mut spin = Spin::new(self.spin);
        loop {
            while let Some(frame) = self
                .decoder
                .decode(&mut self.input)
                .map_err(|e| self.protocol(e))?
            {
                let msg = Message::decode_frame(frame, self.setup.wire.opts)
                    .map_err(|e| self.protocol(e))?;
                let (rid, inc) = incoming(msg, &self.setup.addr)?;
                if rid == id {
                    return Ok(inc);
                }
            }
            if self.input.capacity() - self.input.len() < 16 * 1024 {
                self.input.reserve(64 * 1024);
            }
            let spare = self.input.spare_capacity_mut();
            let got = recv_spinning(&self.sock, spare, &mut spin);
            match got {
                Ok(0) => {
                    return Err(ClientError::Closed {
                        addr: self.setup.addr.clone(),
                        retryable: false,
                    })
                }
                Ok(n) => {
                    let len = self.input.len() + n;
                    // SAFETY: `recv` initialised the first `n` bytes of the
                    // spare capacity.
                    unsafe { self.input.set_len(len) };
                }
                Err(e) if waited(&e) => {
                    self.check_abort()?;
                    if let (true, Some(after)) = (deadline.passed(), deadline.timeout) {
                        return Err(ClientError::Timeout {
                            addr: self.setup.addr.clone(),
                            request_id: id,
                            after,
                        });
                    }
                }
                // A signal (a timed socket call is not restarted): try again;
                // the abort check comes at the next poll interval, so a reply
                // on its way still completes the call.
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io(e)),
            }
        }
    }

    fn check_abort(&self) -> Result<(), ClientError> {
        match self.abort {
            Some(f) if f() => Err(ClientError::LocallyClosed),
            _ => Ok(()),
        }
    }

    /// Mark the connection dead with `e` (telling the peer why where GIOP
    /// says so) and return `e`.
    fn fail(&mut self, e: ClientError) -> ClientError {
        if self.dead.is_none() {
            match &e {
                ClientError::Protocol { .. } => self.send_empty(MsgType::MessageError),
                ClientError::LocallyClosed => self.say_goodbye(),
                _ => {}
            }
            self.dead = Some(e.clone());
            let _ = self.sock.shutdown(std::net::Shutdown::Both);
        }
        e
    }

    /// GIOP 1.2 lets a client say it is closing.
    fn say_goodbye(&mut self) {
        if self.setup.wire.version.is_12() {
            self.send_empty(MsgType::CloseConnection);
        }
    }

    /// A header-only message (MessageError, CloseConnection), best effort,
    /// in place of whatever was queued.
    fn send_empty(&mut self, t: MsgType) {
        self.out.clear();
        let wire = self.setup.wire;
        let (buf, _) = self.out.parts();
        encode_empty(buf, wire.version, wire.order, t);
        let _ = (&self.sock).write_all(buf);
    }

    fn io(&self, e: std::io::Error) -> ClientError {
        ClientError::Io {
            addr: self.setup.addr.clone(),
            message: e.to_string(),
        }
    }

    fn protocol(&self, error: GiopError) -> ClientError {
        ClientError::Protocol {
            addr: self.setup.addr.clone(),
            error,
        }
    }
}

impl Drop for BlockingConnection {
    fn drop(&mut self) {
        self.close();
    }
}

/// A call's deadline, found without reading the clock on the fast path:
/// only when a read or write has waited a whole poll interval. It started
/// at least a poll interval before that moment, and the call before it, so
/// the deadline is set from there: never early, late by the time the call
/// took to reach that read or write.
#[derive(Debug)]
struct Deadline {
    timeout: Option<Duration>,
    poll: Duration,
    at: Option<Instant>,
}

impl Deadline {
    fn new(timeout: Option<Duration>, poll: Duration) -> Deadline {
        Deadline {
            timeout,
            poll,
            at: None,
        }
    }

    /// Whether the timeout has passed; call after a poll interval waited.
    fn passed(&mut self) -> bool {
        let Some(t) = self.timeout else {
            return false;
        };
        let now = Instant::now();
        let at = *self
            .at
            .get_or_insert_with(|| now.checked_sub(self.poll).unwrap_or(now) + t);
        now >= at
    }
}

/// The spin phase of one wait (`ClientConfig::spin`): the socket is polled
/// without blocking, the CPU yielded between polls (to a server sharing
/// it, if any), until `limit` has passed since the first poll that found
/// nothing to do; then the caller blocks as usual.
///
/// A spinning caller picks a reply up as it lands, and refills a full send
/// buffer as soon as there is room, without the wake-up of a sleeping
/// thread (on a virtual machine, an idle CPU's wake-up costs tens of
/// microseconds), at the price of keeping its CPU busy: for callers that
/// own a CPU the server does not use. Reads no clock until a poll finds
/// nothing to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spin {
    limit: Duration,
    until: Option<Instant>,
}

impl Spin {
    /// A spin phase of `limit`; none for `None` or zero.
    pub fn new(limit: Option<Duration>) -> Option<Spin> {
        limit
            .filter(|d| !d.is_zero())
            .map(|limit| Spin { limit, until: None })
    }

    /// A poll found nothing to do: yield and say to poll again, or say the
    /// phase is over.
    fn again(&mut self) -> bool {
        let now = Instant::now();
        if now >= *self.until.get_or_insert(now + self.limit) {
            return false;
        }
        std::thread::yield_now();
        true
    }
}

/// Receive into `buf`, spinning first while `spin` lasts (it is cleared
/// when it ends); then a plain blocking `recv`, which SO_RCVTIMEO may end
/// with `WouldBlock`.
pub fn recv_spinning(
    sock: &TcpStream,
    buf: &mut [MaybeUninit<u8>],
    spin: &mut Option<Spin>,
) -> std::io::Result<usize> {
    let s = socket2::SockRef::from(sock);
    while let Some(sp) = spin {
        match s.recv_with_flags(buf, libc::MSG_DONTWAIT) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if !sp.again() {
                    *spin = None;
                }
            }
            r => return r,
        }
    }
    s.recv(buf)
}

/// Send `bufs` (one slice with `send`, more with `sendmsg`), spinning
/// first while `spin` lasts (it is cleared when it ends); then a plain
/// blocking send, which SO_SNDTIMEO may end with `WouldBlock`.
pub fn send_spinning(
    sock: &TcpStream,
    bufs: &[IoSlice<'_>],
    spin: &mut Option<Spin>,
) -> std::io::Result<usize> {
    let s = socket2::SockRef::from(sock);
    let send = |flags: libc::c_int| match bufs {
        [one] => s.send_with_flags(one, flags | libc::MSG_NOSIGNAL),
        _ => s.send_vectored_with_flags(bufs, flags | libc::MSG_NOSIGNAL),
    };
    while let Some(sp) = spin {
        match send(libc::MSG_DONTWAIT) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if !sp.again() {
                    *spin = None;
                }
            }
            r => return r,
        }
    }
    send(0)
}

/// A socket timeout: the poll interval passed with nothing to do.
fn waited(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// How long one blocked read or write waits before looking at deadlines:
/// [`check_interval`] of the request timeout, at most 100 ms.
fn poll_interval(timeout: Option<Duration>) -> Duration {
    timeout.map_or(MAX_POLL, |t| check_interval(t, MAX_POLL))
}
