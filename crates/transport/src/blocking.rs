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
//! Every protocol decision (request ids, code sets, fragmenting, reply
//! matching, timeouts and CancelRequest, MessageError, CloseConnection)
//! is the pure [`ClientConn`]'s, as for the tokio client (also which
//! Requests of the server's may arrive on a connection offered for
//! callbacks: the waiting call answers them with the servant and writes
//! the Reply before it reads on). This driver only moves bytes and time:
//! - SO_RCVTIMEO/SO_SNDTIMEO are set to a short poll interval, so a call
//!   that waits can see its deadline and the abort check
//!   ([`BlockingConnection::set_abort`]) without a timer;
//! - the clock is read only once a read or write has waited a whole poll
//!   interval: the wait began at least that long before, and the core's
//!   timers are armed from there (never early, no clock read on the fast
//!   path).
//!
//! Over TLS ([`iiop_giop::conn::endpoint`] decides), rustls' connection sits
//! between the core's bytes and the socket: requests are encrypted into
//! its buffer and its records sent with the same spinning `send`; records
//! are read with the same `recv` and decrypted into the core's read
//! buffer. The plain path is unchanged (one branch per system call).

use std::io::{BufRead, IoSlice, Read, Write};
use std::mem::MaybeUninit;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use iiop_cdr::{CdrError, Writer};

use crate::config::{Callbacks, ClientConfig};
use crate::socket::tcp_socket;
pub use crate::socket::{data_segments_out, recv_spinning, segment_size, send_spinning, Spin};
use crate::tls::{handshake_failure, server_name, Side};
use iiop_giop::conn::client::{
    Arrival, ClientConn, ClientError, ClientSetup, Coalescing, Incoming, Outgoing,
};
use iiop_giop::conn::deadline::check_interval;
use iiop_giop::conn::endpoint::Endpoint;
use iiop_giop::conn::out::HeadFirstTuner;
use iiop_giop::context::CodeSetComponentInfo;
use iiop_giop::header::Version;

/// Longest a blocked read or write goes before it looks at its deadline
/// and the abort check.
const MAX_POLL: Duration = Duration::from_millis(100);

/// Longest `close` spends writing buffered oneways when the connection
/// has no request timeout.
const FLUSH_ON_CLOSE: Duration = Duration::from_secs(10);

/// One IIOP connection used by one thread at a time, waiting on read.
#[derive(Debug)]
pub struct BlockingConnection {
    sock: TcpStream,
    /// The TLS session over `sock`, for TLS endpoints.
    tls: Option<Box<rustls::ClientConnection>>,
    /// How long the TLS handshake took (after the TCP connect).
    handshake: Option<Duration>,
    local: SocketAddr,
    /// The connection's protocol state.
    conn: ClientConn,
    /// SO_RCVTIMEO/SO_SNDTIMEO: how long a blocked call waits before it
    /// looks at its deadline and the abort check.
    poll: Duration,
    abort: Option<fn() -> bool>,
    /// Poll without blocking this long before a reply read blocks.
    spin: Option<Duration>,
    /// The socket was shut down (after the core's last words were written).
    hung_up: bool,
    /// Nagle between oneways ([`ClientSetup::coalesce_oneways`]).
    coalescing: Coalescing,
    /// How large twoways are written ([`HeadFirstTuner`]).
    head_first: HeadFirstTuner,
    /// Messages written headers-first so far.
    head_first_writes: u64,
    /// The servant of a connection offered for callbacks
    /// ([`ClientConfig::callbacks`]): the server's Requests that arrive
    /// while a call waits are answered with it.
    callbacks: Option<Callbacks>,
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
        let ep = Endpoint {
            host: host.to_string(),
            port,
            tls: cfg.tls.always(),
        };
        Self::connect_to(&ep, version, cfg, code_sets)
    }

    /// Connect to `ep` (TLS when it says so, with [`ClientConfig::tls`])
    /// speaking `version`; code sets as [`connect`](Self::connect).
    pub fn connect_to(
        ep: &Endpoint,
        version: Version,
        cfg: &ClientConfig,
        code_sets: Option<&CodeSetComponentInfo>,
    ) -> Result<BlockingConnection, ClientError> {
        let (host, port) = (ep.host.as_str(), ep.port);
        let addr = ep.addr();
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
        let t0 = Instant::now();
        let tls = match ep.tls {
            true => Some(
                tls_handshake(&sock, ep, cfg).map_err(|reason| ClientError::Tls {
                    addr: addr.clone(),
                    reason,
                })?,
            ),
            false => None,
        };
        let handshake = tls.is_some().then(|| t0.elapsed());
        let poll = poll_interval(cfg.request_timeout);
        sock.set_read_timeout(Some(poll)).map_err(connect_err)?;
        sock.set_write_timeout(Some(poll)).map_err(connect_err)?;
        let local = sock.local_addr().map_err(connect_err)?;
        let mut setup = ClientSetup::negotiate(addr, version, &cfg.conn(), code_sets);
        // Offered for callbacks: our own end is the listen point.
        if cfg.callbacks.is_some() {
            setup.offer_callbacks(&local.ip().to_string(), local.port())?;
        }
        let coalescing = Coalescing::new(&setup, || segment_size(&sock).ok());
        Ok(BlockingConnection {
            sock,
            tls,
            handshake,
            local,
            conn: ClientConn::new(setup, &cfg.conn()),
            poll,
            abort: None,
            // Bounded by the poll interval, so the deadline and the abort
            // check are looked at no later than without it.
            spin: cfg.spin.filter(|d| !d.is_zero()).map(|d| d.min(poll)),
            hung_up: false,
            coalescing,
            head_first: HeadFirstTuner::default(),
            head_first_writes: 0,
            callbacks: cfg.callbacks.clone(),
        })
    }

    /// Check `abort` whenever a blocked read or write wakes to look at its
    /// deadline (at least every 100 ms): when it returns true, the call
    /// fails with [`ClientError::LocallyClosed`] and the connection closes
    /// (e.g. on Ctrl-C while a server does not answer).
    pub fn set_abort(&mut self, abort: fn() -> bool) {
        self.abort = Some(abort);
    }

    /// Our end of the TCP connection.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The socket's TCP_NODELAY now: off only between coalesced oneways
    /// ([`ClientConfig::coalesce_oneways`]) or with `nodelay: false`.
    pub fn nodelay(&self) -> std::io::Result<bool> {
        self.sock.nodelay()
    }

    /// TCP segments carrying data that this connection has sent so far
    /// ([`data_segments_out`]): set beside the calls made, how many calls
    /// one segment carried.
    pub fn data_segments_out(&self) -> Option<u32> {
        data_segments_out(&self.sock)
    }

    /// Messages this connection has written headers-first so far: their
    /// head alone, then the rest (large twoways where that got replies
    /// sooner, [`HeadFirstTuner`]; oneways from 96 KiB on).
    pub fn head_first_writes(&self) -> u64 {
        self.head_first_writes
    }

    /// How long the TLS handshake took, after the TCP connect (`None`:
    /// plain TCP).
    pub fn tls_handshake(&self) -> Option<Duration> {
        self.handshake
    }

    /// Whether the connection has failed or was closed.
    pub fn is_closed(&self) -> bool {
        self.conn.dead().is_some()
    }

    /// Close the connection (GIOP 1.2: with CloseConnection); later calls
    /// fail with `LocallyClosed`.
    pub fn close(&mut self) {
        if self.conn.dead().is_none() {
            // Buffered oneways ([`ClientConfig::oneway_buffer`]) leave
            // before the goodbye, within the request timeout.
            // Nothing of ours waits for an ACK behind the goodbye.
            let sock = &self.sock;
            self.coalescing
                .before_write(false, 0, |d| sock.set_nodelay(d));
            if self.conn.queued() > 0 {
                let t = self.setup().request_timeout.unwrap_or(FLUSH_ON_CLOSE);
                self.conn.write_within(t);
                if let Err(e) = self.write_queued(usize::MAX) {
                    self.end(e);
                    return;
                }
            }
            self.end(ClientError::LocallyClosed);
        }
    }

    client_api!(async: [], self: [&mut], await: []);

    /// What the connection fixed when it opened.
    pub(crate) fn setup(&self) -> &ClientSetup {
        self.conn.setup()
    }

    /// Queue `out` with a new request id, write it, and (when a reply is
    /// expected) read until it arrives. `timeout` also bounds the write:
    /// the core's write-deadline rule says what missing it means.
    fn exchange<F>(
        &mut self,
        out: Outgoing<'_, F>,
        timeout: Option<Duration>,
    ) -> Result<Option<Incoming>, ClientError>
    where
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let what = out.sending();
        // An encoding error leaves nothing queued and the connection as it
        // was; a dead connection says why.
        let id = self.conn.send(out, timeout, None)?;
        if self.conn.holds() {
            return Ok(None);
        }
        // Nagle on for small oneways, off before anything answered.
        let sock = &self.sock;
        self.conn
            .before_write(&mut self.coalescing, |d| sock.set_nodelay(d));
        let mut first = self.conn.first_write(what);
        // A large twoway: its head alone first or not, whichever has got
        // replies sooner on this connection (HeadFirstTuner says why).
        let split = (first != usize::MAX && what.expects_reply()).then(|| {
            let split = self.head_first.split(self.conn.outbox().len());
            (split, Instant::now())
        });
        if let Some((false, _)) = split {
            first = usize::MAX;
        }
        self.head_first_writes += u64::from(first != usize::MAX);
        if let Err(e) = self.write_queued(first) {
            return Err(self.end(e));
        }
        if !what.expects_reply() {
            return Ok(None);
        }
        match self.read_reply(id) {
            Ok(inc) => {
                if let Some((s, t0)) = split {
                    self.head_first.record(s, t0.elapsed());
                }
                Ok(Some(inc))
            }
            Err(e @ ClientError::Timeout { .. }) => {
                // The core queued CancelRequest; the late reply is dropped
                // on arrival.
                if let Err(w) = self.write_queued(usize::MAX) {
                    self.end(w);
                }
                Err(e)
            }
            Err(e) => Err(self.end(e)),
        }
    }

    /// Write what the core queued, the first write at most `first` bytes
    /// (a large message's head goes alone: see the core's
    /// `head_first_for`). A write that waits asks the core what the
    /// deadlines passed mean (a request not written whole in its time
    /// loses the stream).
    fn write_queued(&mut self, first: usize) -> Result<(), ClientError> {
        let mut limit = first;
        let mut spin = Spin::new(self.spin);
        loop {
            let out = self.conn.outbox();
            let r = if out.is_empty() {
                // TLS: the records of what was written must leave too.
                match flush_tls(self.tls.as_deref_mut(), &self.sock, &mut spin) {
                    Ok(()) => return Ok(()),
                    Err(e) => Err(e),
                }
            } else {
                // Nothing spliced: a plain send from the buffer, as the
                // other ORBs' clients do; else the pieces with writev.
                out.with_slices(limit, |bufs| match self.tls.as_deref_mut() {
                    None => send_spinning(&self.sock, bufs, &mut spin),
                    Some(t) => send_tls(t, &self.sock, bufs, &mut spin),
                })
            };
            match r {
                Ok(0) => return Err(self.io(std::io::ErrorKind::WriteZero.into())),
                Ok(n) => {
                    self.conn.outbox().consume(n);
                    limit = usize::MAX;
                }
                Err(e) if waited(&e) => {
                    self.check_abort()?;
                    let now = Instant::now();
                    // The write's and the reply's timers count from the
                    // same start.
                    self.conn.arm(self.began_by(now));
                    self.conn.on_timeout(now)?;
                }
                // A signal (a timed socket call is not restarted): try again;
                // the abort check comes at the next poll interval, so a reply
                // on its way still completes the call.
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io(e)),
            }
        }
    }

    /// Read until the answer to `id` is complete (the core drops answers
    /// nobody waits for: late ones of cancelled requests), or its timer
    /// runs out.
    fn read_reply(&mut self, id: u32) -> Result<Incoming, ClientError> {
        let mut spin = Spin::new(self.spin);
        loop {
            if let Some(inc) = self.take_answer(id)? {
                return Ok(inc);
            }
            let buf = self.conn.read_buf();
            let got = match self.tls.as_deref_mut() {
                None => recv_spinning(&self.sock, buf.spare_capacity_mut(), &mut spin),
                Some(t) => recv_tls(t, &self.sock, buf.spare_capacity_mut(), &mut spin),
            };
            if let Ok(n @ 1..) = got {
                let len = buf.len() + n;
                // SAFETY: `recv` initialised the first `n` bytes of the
                // spare capacity.
                unsafe { buf.set_len(len) };
                continue;
            }
            match got {
                Ok(_) => return Err(self.conn.on_eof()),
                Err(e) if waited(&e) => {
                    self.check_abort()?;
                    let now = Instant::now();
                    self.conn.arm(self.began_by(now));
                    let expired = self.conn.on_timeout(now)?;
                    if let Some((_, e)) = expired.into_iter().find(|(rid, _)| *rid == id) {
                        return Err(e);
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

    /// The answer to `id` among what arrived, if it has; answers to others
    /// are dropped. On a connection offered for callbacks the server's
    /// Requests and LocateRequests among it are answered with the servant
    /// on the way (written at once: the server waits for them before it
    /// answers us).
    fn take_answer(&mut self, id: u32) -> Result<Option<Incoming>, ClientError> {
        let Some(Callbacks(servant)) = self.callbacks.clone() else {
            while let Some((rid, inc)) = self.conn.poll()? {
                if rid == id {
                    return Ok(Some(inc));
                }
            }
            return Ok(None);
        };
        while let Some(a) = self.conn.poll_arrival()? {
            match a {
                Arrival::Answer(rid, inc) if rid == id => return Ok(Some(inc)),
                Arrival::Answer(..) => continue,
                Arrival::Request(req) => self.conn.answer(&req, &*servant)?,
                Arrival::Locate(l) => self.conn.answer_locate(&l, &*servant)?,
            }
            self.write_queued(usize::MAX)?;
        }
        Ok(None)
    }

    /// A read or write that just waited a whole poll interval began no
    /// later than this.
    fn began_by(&self, now: Instant) -> Instant {
        now.checked_sub(self.poll).unwrap_or(now)
    }

    fn check_abort(&self) -> Result<(), ClientError> {
        match self.abort {
            Some(f) if f() => Err(ClientError::LocallyClosed),
            _ => Ok(()),
        }
    }

    /// The connection ends with `e`: the core fails it (if it has not
    /// already) and queues what GIOP tells the peer, written here best
    /// effort before the socket shuts down. Returns `e`.
    fn end(&mut self, e: ClientError) -> ClientError {
        let e = self.conn.fail(e);
        if !self.hung_up {
            self.hung_up = true;
            if let Some(last) = self.conn.outbox().contiguous() {
                match self.tls.as_deref_mut() {
                    None => {
                        let _ = (&self.sock).write_all(last);
                    }
                    Some(t) => {
                        let _ = t.writer().write_all(last);
                    }
                }
            }
            if let Some(t) = self.tls.as_deref_mut() {
                t.send_close_notify();
                let _ = flush_tls(Some(t), &self.sock, &mut None);
            }
            let _ = self.sock.shutdown(std::net::Shutdown::Both);
        }
        e
    }

    fn io(&self, e: std::io::Error) -> ClientError {
        crate::tls::client_io_error(self.conn.setup(), &e)
    }
}

impl Drop for BlockingConnection {
    fn drop(&mut self) {
        self.close();
    }
}

/// The TLS handshake over a connected socket, bounded by the connect
/// timeout; the error is [`handshake_failure`]'s line.
fn tls_handshake(
    sock: &TcpStream,
    ep: &Endpoint,
    cfg: &ClientConfig,
) -> Result<Box<rustls::ClientConnection>, String> {
    let config = cfg.tls.for_connection()?;
    let name = server_name(&ep.host)?;
    let mut t = rustls::ClientConnection::new(config, name).map_err(|e| e.to_string())?;
    let fail = |e: std::io::Error| handshake_failure(&e, Side::Client);
    // One deadline for the whole handshake, as the tokio client has:
    // every read and write waits only for what is left of it, however
    // the server paces its bytes.
    let limit = cfg.connect_timeout;
    let deadline = Instant::now() + limit;
    let late = || format!("the server did not finish the handshake in {limit:?}");
    let mut io = SpinIo {
        sock,
        spin: &mut None,
    };
    while t.is_handshaking() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(late());
        }
        sock.set_read_timeout(Some(left))
            .and_then(|()| sock.set_write_timeout(Some(left)))
            .map_err(fail)?;
        let step = if t.wants_write() {
            t.write_tls(&mut io)
        } else {
            match t.read_tls(&mut io) {
                Ok(0) => Err(std::io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => t
                    .process_new_packets()
                    .map(|_| n)
                    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
                Err(e) => Err(e),
            }
        };
        match step {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if waited(&e) => return Err(late()),
            Err(e) => {
                // Tell the server why (the alert rustls queued).
                while t.wants_write() && t.write_tls(&mut io).is_ok() {}
                return Err(fail(e));
            }
        }
    }
    // TLS 1.3: the client's Finished may still be in the buffer.
    flush_tls(Some(&mut t), sock, &mut None).map_err(fail)?;
    Ok(Box::new(t))
}

/// The socket as rustls reads and writes TLS records: the same spinning
/// `recv`/`send` as the plain path.
struct SpinIo<'a> {
    sock: &'a TcpStream,
    spin: &'a mut Option<Spin>,
}

impl Read for SpinIo<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // SAFETY: initialised bytes are valid `MaybeUninit`s, and `recv`
        // only writes into the slice.
        let uninit = unsafe { &mut *(buf as *mut [u8] as *mut [MaybeUninit<u8>]) };
        recv_spinning(self.sock, uninit, self.spin)
    }
}

impl Write for SpinIo<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        send_spinning(self.sock, &[IoSlice::new(buf)], self.spin)
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> std::io::Result<usize> {
        send_spinning(self.sock, bufs, self.spin)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Send every TLS record rustls holds (nothing to do without TLS); a
/// socket timeout comes back as the plain path's would.
fn flush_tls(
    tls: Option<&mut rustls::ClientConnection>,
    sock: &TcpStream,
    spin: &mut Option<Spin>,
) -> std::io::Result<()> {
    let Some(t) = tls else { return Ok(()) };
    let mut io = SpinIo { sock, spin };
    while t.wants_write() {
        if t.write_tls(&mut io)? == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
    }
    Ok(())
}

/// Encrypt what rustls takes of `bufs` and send its records; returns the
/// plaintext bytes taken. Records left over (the socket was full) go with
/// the next send or flush.
fn send_tls(
    t: &mut rustls::ClientConnection,
    sock: &TcpStream,
    bufs: &[IoSlice<'_>],
    spin: &mut Option<Spin>,
) -> std::io::Result<usize> {
    // Records waiting from before first: rustls' buffer is bounded.
    flush_tls(Some(t), sock, spin)?;
    let n = t.writer().write_vectored(bufs)?;
    match flush_tls(Some(t), sock, spin) {
        Err(e) if waited(&e) => Ok(n),
        r => r.map(|()| n),
    }
}

/// Read decrypted bytes into `buf`: what rustls already holds, else TLS
/// records from the socket (the same spinning `recv`, which SO_RCVTIMEO
/// may end with `WouldBlock`). `Ok(0)`: the server closed.
fn recv_tls(
    t: &mut rustls::ClientConnection,
    sock: &TcpStream,
    buf: &mut [MaybeUninit<u8>],
    spin: &mut Option<Spin>,
) -> std::io::Result<usize> {
    loop {
        match t.reader().fill_buf() {
            Ok(plain) => {
                let n = plain.len().min(buf.len());
                for (d, s) in buf.iter_mut().zip(&plain[..n]) {
                    d.write(*s);
                }
                t.reader().consume(n);
                return Ok(n);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            // Closed without close_notify: an end of stream all the same.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(0),
            Err(e) => return Err(e),
        }
        if t.read_tls(&mut SpinIo { sock, spin })? == 0 {
            return Ok(0);
        }
        t.process_new_packets()
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        // Alerts, key updates: best effort, the next send flushes too.
        match flush_tls(Some(t), sock, &mut None) {
            Err(e) if !waited(&e) => return Err(e),
            _ => {}
        }
    }
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
