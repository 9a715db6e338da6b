//! The IIOP server, thread per connection: [`serve_threads`] accepts
//! connections (at most `max_connections`) and gives each a thread of its
//! own that blocks in `recv`, as omniORB's default server does.
//!
//! A reply costs one `recv` and one `send` on the connection's thread and
//! no wake-up through an event loop: where the tokio server
//! ([`serve`](super::server::serve)) wakes from `epoll_wait`, schedules
//! the connection's task and only then reads, this one returns from `recv`
//! with the bytes. Requests whose handler must wait
//! ([`Dispatch::Async`](super::server::Dispatch)) still run concurrently,
//! on the tokio runtime whose handle is given; their replies come back
//! through a channel and a wake-up socket, and while any is in flight the
//! thread waits with `poll` on both.
//!
//! The connection's protocol decisions (framing and limits, dispatch,
//! MessageError, the timeouts, CloseConnection) are the pure
//! [`ServerConn`]'s, exactly as under the tokio driver: this module only
//! moves bytes and time. Shutdown ([`StopFlag::stop`]) wakes the accepting
//! thread at once (it waits for connections, or with every slot taken for
//! a connection to end, with no timer, so a server under test does not
//! wake on its own CPU for nothing). A connection's
//! thread blocked in `recv` sees it within [`STOP_CHECK`]; one that has
//! had no bytes for that long waits in `poll` on its socket and the stop
//! instead, with no timer, and wakes at once. Then accepting and reading
//! stop, in-flight requests finish, CloseConnection is sent, and
//! [`serve_threads`] returns once every connection's thread has ended.
//!
//! With [`ThreadsConfig::tls`] every connection is TLS: its thread first
//! runs the handshake, over within [`ServerConfig::handshake_timeout`]
//! (each read waits only for what is left of it, so a client that stalls
//! or trickles mid-handshake gives its thread and slot back then), then
//! serves GIOP through rustls' session exactly as over TCP. Reads through
//! rustls block at once ([`Polling`] applies to plain TCP only), and
//! plaintext rustls already holds counts as input waiting.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::config::ServerConfig;
use crate::socket::{recv_spinning, Spin};
use iiop_giop::conn::server::{
    AsyncCall, AsyncReply, AsyncTicket, Ending, Handler, ServerConn, ServerConnConfig, ServerPhases,
};

/// The most plaintext one read takes from rustls (the room zeroed for it).
const TLS_READ: usize = 64 * 1024;

/// How often a connection's thread blocked in `recv` looks at the stop
/// flag; once a wait that long brought nothing, the connection is quiet
/// and its thread waits for bytes and the stop together (see
/// [`ConnThread::serve_connection`]).
pub const STOP_CHECK: Duration = Duration::from_millis(100);

/// How long a thread with nothing to do (the accepting thread, a quiet
/// connection's) waits in one `poll`: a stop, a connection or bytes wake
/// it sooner, so this is only a bound, in case a wake-up were ever lost.
const LONG_WAIT: Duration = Duration::from_secs(60);

/// How one thread wakes another that sleeps in `poll`: a socket pair,
/// one end rung with a byte, the other polled. Both ends non-blocking: a
/// full socket has a wake-up pending already.
#[derive(Debug)]
struct Bell {
    tx: UnixStream,
    rx: UnixStream,
}

impl Bell {
    fn new() -> std::io::Result<Bell> {
        let (tx, rx) = UnixStream::pair()?;
        tx.set_nonblocking(true)?;
        rx.set_nonblocking(true)?;
        Ok(Bell { tx, rx })
    }

    fn ring(&self) {
        let _ = (&self.tx).write(&[1]);
    }

    /// The end to poll.
    fn fd(&self) -> std::os::fd::RawFd {
        self.rx.as_raw_fd()
    }

    /// Take the wake-ups rung so far: the next poll waits for a new one.
    fn hush(&self) {
        let mut sink = [0u8; 64];
        while matches!((&self.rx).read(&mut sink), Ok(n) if n > 0) {}
    }
}

/// What stops [`serve_threads`]: a flag, and a [`Bell`] that wakes the
/// accepting thread from its wait for connections, and every quiet
/// connection's thread from its wait for bytes (nobody hushes it: once
/// rung, it stays readable for all of them).
#[derive(Debug)]
pub struct StopFlag {
    set: AtomicBool,
    bell: Bell,
}

impl StopFlag {
    pub fn new() -> std::io::Result<StopFlag> {
        Ok(StopFlag {
            set: AtomicBool::new(false),
            bell: Bell::new()?,
        })
    }

    /// Stop the server: no new connections, and every connection ends
    /// once its requests in flight are answered.
    pub fn stop(&self) {
        self.set.store(true, Ordering::SeqCst);
        self.bell.ring();
    }

    /// Whether [`stop`](Self::stop) was called.
    pub fn is_set(&self) -> bool {
        self.set.load(Ordering::Relaxed)
    }
}

/// When a connection's thread polls for its next bytes before it blocks
/// in `recv`: a receiver asleep in `recv` is woken per segment, and its
/// sender pays for each wake-up. For a server with a CPU of its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Polling {
    /// How long one wait polls (`None`: never, always block).
    pub limit: Option<Duration>,
    /// After a reply too, for the next request; else only while oneways
    /// stream in (input that brought oneways and no reply) and while the
    /// rest of a message that has begun is on its way.
    pub after_replies: bool,
}

impl Polling {
    /// Poll up to `limit` (none or zero: never) while oneways stream in
    /// and while a message is incomplete.
    pub fn streams(limit: Option<Duration>) -> Polling {
        Polling {
            limit: limit.filter(|d| !d.is_zero()),
            after_replies: false,
        }
    }

    /// [`streams`](Self::streams), and after every reply as well.
    pub fn after_each_message(limit: Option<Duration>) -> Polling {
        Polling {
            after_replies: true,
            ..Polling::streams(limit)
        }
    }

    /// Whether the next wait polls, after a pass that brought oneways and
    /// wrote no reply (`oneways_only`), served requests of any kind
    /// (`served`), and left a message incomplete (`mid_message`).
    fn next_wait_polls(&self, oneways_only: bool, served: bool, mid_message: bool) -> bool {
        self.limit.is_some() && (oneways_only || (self.after_replies && served) || mid_message)
    }
}

/// What a connection's thread needs besides its socket.
pub struct ThreadsConfig {
    /// Name of every thread this server starts (how CPU time is
    /// attributed to it).
    pub thread_name: String,
    /// Run at the start of every connection's thread (e.g. pinning).
    pub on_thread_start: Arc<dyn Fn() + Send + Sync>,
    /// Where asynchronous handler calls run.
    pub runtime: tokio::runtime::Handle,
    /// When a connection's thread polls for its next bytes before it
    /// blocks (default: never).
    pub polling: Polling,
    /// Serve TLS only, with these settings
    /// ([`server_config`](super::tls::server_config)).
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

impl std::fmt::Debug for ThreadsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadsConfig")
            .field("thread_name", &self.thread_name)
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

/// Accept connections on `listener` and serve each on a thread of its own
/// with `handler` until `stop` is set; then stop accepting, let every
/// connection finish its in-flight requests and close, and return.
pub fn serve_threads<H: Handler>(
    listener: TcpListener,
    handler: Arc<H>,
    cfg: ServerConfig,
    threads: ThreadsConfig,
    stop: Arc<StopFlag>,
) -> std::io::Result<()> {
    let conn_cfg = Arc::new(cfg.conn());
    super::server::set_buffers(socket2::SockRef::from(&listener), &cfg)?;
    let open = Arc::new(AtomicUsize::new(0));
    let threads = Arc::new(threads);
    let mut joins = Vec::new();
    let mut next_conn = 0u64;
    let wake = stop.bell.fd();
    // Rung by each connection's thread as it ends: wakes the accepting
    // thread while every slot is taken.
    let freed = Arc::new(Bell::new()?);
    while !stop.is_set() {
        joins.retain(|j: &std::thread::JoinHandle<()>| !j.is_finished());
        if open.load(Ordering::Acquire) >= cfg.max_connections.max(1) {
            // Full: sleep until a connection ends or the stop. (Rings of
            // connections that ended earlier only cost one more look.)
            readable(freed.fd(), Some(wake), LONG_WAIT)?;
            freed.hush();
            continue;
        }
        if !readable(listener.as_raw_fd(), Some(wake), LONG_WAIT)?.0 {
            continue;
        }
        let (stream, peer) = match listener.accept() {
            Ok(a) => a,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => {
                // EMFILE and friends: back off instead of spinning.
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        next_conn += 1;
        let _ = stream.set_nodelay(cfg.nodelay);
        let _ = super::server::set_buffers(socket2::SockRef::from(&stream), &cfg);
        open.fetch_add(1, Ordering::AcqRel);
        let (h, c, t, s, o, freed) = (
            handler.clone(),
            conn_cfg.clone(),
            threads.clone(),
            stop.clone(),
            open.clone(),
            freed.clone(),
        );
        let (id, handshake) = (next_conn, cfg.handshake_timeout);
        let spawned = std::thread::Builder::new()
            .name(threads.thread_name.clone())
            .spawn(move || {
                (t.on_thread_start)();
                let conn = ConnThread::new(
                    h,
                    c,
                    handshake,
                    id,
                    Some(peer),
                    t.runtime.clone(),
                    t.polling,
                );
                match &t.tls {
                    None => conn.run(Io::Tcp(stream), &s),
                    Some(tls) => conn.run_tls(tls.clone(), stream, &s),
                }
                o.fetch_sub(1, Ordering::AcqRel);
                freed.ring();
            });
        match spawned {
            Ok(j) => joins.push(j),
            // No thread for it: the connection is dropped (closed).
            Err(_) => {
                open.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }
    for j in joins {
        let _ = j.join();
    }
    Ok(())
}

/// Whether `fd` (and `wake`, second) became readable within `timeout`.
fn readable(
    fd: std::os::fd::RawFd,
    wake: Option<std::os::fd::RawFd>,
    timeout: Duration,
) -> std::io::Result<(bool, bool)> {
    let mut fds = [
        libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: wake.unwrap_or(-1),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let ms = libc::c_int::try_from(timeout.as_millis().max(1)).unwrap_or(libc::c_int::MAX);
    // SAFETY: `fds` is a valid array of two pollfd for the call's length
    // (a negative fd is ignored by poll).
    let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() == std::io::ErrorKind::Interrupted {
            return Ok((false, false));
        }
        return Err(e);
    }
    let ready = |p: &libc::pollfd| p.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0;
    Ok((ready(&fds[0]), ready(&fds[1])))
}

/// The way back from the runtime to a connection's thread: replies on a
/// channel, and a [`Bell`] so that `poll` wakes.
struct Wake {
    done_tx: mpsc::Sender<(AsyncTicket, AsyncReply)>,
    done_rx: mpsc::Receiver<(AsyncTicket, AsyncReply)>,
    bell: Arc<Bell>,
}

impl Wake {
    fn new() -> Wake {
        let (done_tx, done_rx) = mpsc::channel();
        Wake {
            done_tx,
            done_rx,
            bell: Arc::new(Bell::new().expect("a socket pair")),
        }
    }
}

/// A connection's bytes: the TCP socket, or a TLS session over it.
enum Io {
    Tcp(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ServerConnection, TcpStream>>),
}

impl Io {
    fn sock(&self) -> &TcpStream {
        match self {
            Io::Tcp(s) => s,
            Io::Tls(t) => &t.sock,
        }
    }

    /// Whether rustls holds plaintext not read yet (a poll on the socket
    /// would not see it).
    fn buffered(&mut self) -> bool {
        match self {
            Io::Tcp(_) => false,
            Io::Tls(t) => t
                .conn
                .process_new_packets()
                .is_ok_and(|s| s.plaintext_bytes_to_read() > 0),
        }
    }

    /// Write all of `buf` (over TLS: and send its records).
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Io::Tcp(s) => (&*s).write_all(buf),
            Io::Tls(t) => {
                t.write_all(buf)?;
                t.flush()
            }
        }
    }

    /// The end of the connection: `how` for TCP; over TLS a close_notify
    /// goes first.
    fn shutdown(&mut self, how: Shutdown) {
        if let Io::Tls(t) = self {
            t.conn.send_close_notify();
            let _ = t.flush();
        }
        let _ = self.sock().shutdown(how);
    }
}

/// Run the server's side of a TLS handshake on `sock`, over within
/// `timeout` however the client paces its bytes.
fn handshake(
    tls: Arc<rustls::ServerConfig>,
    mut sock: TcpStream,
    timeout: Duration,
) -> std::io::Result<rustls::StreamOwned<rustls::ServerConnection, TcpStream>> {
    let mut conn = rustls::ServerConnection::new(tls).map_err(std::io::Error::other)?;
    let deadline = Instant::now() + timeout;
    while conn.is_handshaking() {
        if conn.wants_write() {
            conn.write_tls(&mut sock)?;
            continue;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        sock.set_read_timeout(Some(left))?;
        if conn.read_tls(&mut sock)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        if let Err(e) = conn.process_new_packets() {
            // Tell the client why (the alert rustls queued), then fail.
            while conn.wants_write() && conn.write_tls(&mut sock).is_ok() {}
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, e));
        }
    }
    while conn.wants_write() {
        conn.write_tls(&mut sock)?;
    }
    sock.set_read_timeout(None)?;
    Ok(rustls::StreamOwned::new(conn, sock))
}

/// One connection's thread: moves bytes, asynchronous replies and time
/// between the socket and the connection's [`ServerConn`].
struct ConnThread<H> {
    handler: Arc<H>,
    conn: ServerConn,
    runtime: tokio::runtime::Handle,
    /// How asynchronous replies come back; made with the first such call
    /// (a connection that never has one costs no socket pair).
    wake: Option<Wake>,
    phases: Option<Arc<ServerPhases>>,
    opened: Instant,
    /// The receive timeout set on the socket (set again only on change).
    rcvtimeo: Option<Duration>,
    /// [`ThreadsConfig::polling`].
    polling: Polling,
    /// Whether the next read polls first ([`Polling`] says when).
    streaming: bool,
    /// Whether the last wait for input brought nothing: the next one
    /// waits for the stop too.
    quiet: bool,
    /// [`ServerConfig::handshake_timeout`].
    handshake_timeout: Duration,
}

impl<H: Handler> ConnThread<H> {
    fn new(
        handler: Arc<H>,
        cfg: Arc<ServerConnConfig>,
        handshake_timeout: Duration,
        id: u64,
        peer: Option<std::net::SocketAddr>,
        runtime: tokio::runtime::Handle,
        polling: Polling,
    ) -> Self {
        ConnThread {
            handler,
            handshake_timeout,
            phases: cfg.phases.clone(),
            conn: ServerConn::new(cfg, id, peer, Some(Instant::now)),
            runtime,
            wake: None,
            opened: Instant::now(),
            rcvtimeo: None,
            polling,
            streaming: false,
            quiet: false,
        }
    }

    fn run(mut self, mut stream: Io, stop: &StopFlag) {
        self.serve_connection(&mut stream, stop);
        self.closed();
    }

    /// [`run`](Self::run) after a TLS handshake; a failed or stalled one
    /// closes the connection, and the handler hears of it as of any other.
    fn run_tls(self, tls: Arc<rustls::ServerConfig>, sock: TcpStream, stop: &StopFlag) {
        match handshake(tls, sock, self.handshake_timeout) {
            Ok(s) => self.run(Io::Tls(Box::new(s)), stop),
            Err(_) => self.closed(),
        }
    }

    /// Tell the handler the connection is over.
    fn closed(&self) {
        let mut summary = self.conn.summary().clone();
        summary.seconds = self.opened.elapsed().as_secs_f64();
        self.handler.connection_closed(&summary);
    }

    /// Serve until the connection is done. Waiting for input, the thread
    /// blocks in `recv` for at most [`STOP_CHECK`] (or until the next
    /// deadline), then looks at the stop flag. Once such a wait brought
    /// nothing, the connection is quiet, and the next waits `poll` its
    /// socket and the stop's wake-up socket, bounded by the next deadline
    /// only: an idle connection does not wake its thread on a timer. A
    /// busy one keeps the plain `recv`, one system call per read.
    fn serve_connection(&mut self, stream: &mut Io, stop: &StopFlag) {
        let phases = self.phases.clone();
        let phases = phases.as_deref();
        let stop_fd = stop.bell.fd();
        loop {
            if stop.is_set() && !self.conn.is_closing() {
                self.conn.shutdown();
            }
            // Handle what is buffered (also after async replies freed room).
            let (handler, rt, wake) = (&*self.handler, &self.runtime, &mut self.wake);
            let (requests, oneways) = (self.conn.summary().requests, self.conn.summary().oneways);
            self.conn.process(handler, &mut |call: AsyncCall| {
                spawn_async(rt, call, wake.get_or_insert_with(Wake::new));
            });
            let served = self.conn.summary();
            self.streaming = self.polling.next_wait_polls(
                self.conn.output().is_empty() && served.oneways > oneways,
                served.requests > requests,
                self.conn.mid_message(),
            );
            if !self.conn.output().is_empty() {
                let t = phases.map(|_| Instant::now());
                if stream.write_all(self.conn.output()).is_err() {
                    return;
                }
                if let (Some(p), Some(t)) = (phases, t) {
                    ServerPhases::add(&p.write_ns, t, Instant::now());
                }
                self.conn.sent();
            }
            if self.conn.is_done() {
                break;
            }
            if self.finish_async() {
                continue;
            }
            let deadline = self.conn.next_deadline(Instant::now);
            let until = |cap: Duration| {
                deadline.map_or(cap, |d| {
                    d.saturating_duration_since(Instant::now()).min(cap)
                })
            };
            let wait = until(STOP_CHECK);
            let can_read = self.conn.can_read();
            let only_input = can_read && (self.conn.in_flight() == 0 || stream.buffered());
            let sock = stream.sock().as_raw_fd();
            // What to `poll` for before reading: nothing (block in recv)
            // when only input can come, or it is here already, and the
            // connection is busy; when it is quiet, the bytes or the stop,
            // with no timer but the deadline; with asynchronous calls in
            // flight, the bytes (if it may read) or a reply.
            let poll_for = if only_input && (!self.quiet || stream.buffered()) {
                None
            } else if only_input {
                Some((sock, Some(stop_fd), until(LONG_WAIT)))
            } else {
                let fd = if can_read { sock } else { -1 };
                Some((fd, self.wake.as_ref().map(|w| w.bell.fd()), wait))
            };
            let input = match poll_for.map(|(fd, other, t)| readable(fd, other, t)) {
                None | Some(Ok((true, _))) => self.read(stream, wait, phases),
                Some(Ok((false, _))) => Input::Waited,
                Some(Err(_)) => Input::Gone,
            };
            self.quiet = matches!(input, Input::Waited);
            match input {
                Input::Got(n) => self.conn.received(n),
                Input::Gone => self.conn.on_eof(),
                Input::Waited => {
                    if deadline.is_some_and(|d| d <= Instant::now()) {
                        self.conn.on_timeout(Instant::now());
                    }
                }
            }
        }
        match self.conn.ending() {
            Ending::Abort => stream.shutdown(Shutdown::Both),
            Ending::Close(last) => {
                let _ = stream.write_all(&last);
                stream.shutdown(Shutdown::Write);
            }
            Ending::Quiet => {}
        }
    }

    /// Give the finished asynchronous calls' replies to the connection;
    /// whether there were any.
    fn finish_async(&mut self) -> bool {
        let Some(w) = self.wake.as_ref().filter(|_| self.conn.in_flight() > 0) else {
            return false;
        };
        let mut any = false;
        // Hush the bell first: a reply sent after this rings it for the
        // next poll.
        w.bell.hush();
        while let Ok((ticket, reply)) = w.done_rx.try_recv() {
            self.conn.finish_async(ticket, reply);
            any = true;
        }
        any
    }

    /// One `recv` into the connection's buffer, ended by `wait` at most.
    fn read(&mut self, stream: &mut Io, wait: Duration, phases: Option<&ServerPhases>) -> Input {
        let wait = wait.max(Duration::from_millis(1));
        if self.rcvtimeo != Some(wait) {
            if stream.sock().set_read_timeout(Some(wait)).is_err() {
                return Input::Gone;
            }
            self.rcvtimeo = Some(wait);
        }
        let t0 = phases.map(|_| Instant::now());
        let mut spin = Spin::new(self.polling.limit.filter(|_| self.streaming));
        let limit = self.conn.read_limit();
        let buf = self.conn.read_buf();
        let got = match stream {
            Io::Tcp(s) => {
                let room = buf.spare_capacity_mut();
                let n = room.len().min(limit);
                recv_spinning(s, &mut room[..n], &mut spin)
            }
            .inspect(|&n| {
                // SAFETY: recv initialised the first `n` bytes of the
                // spare capacity.
                unsafe { buf.set_len(buf.len() + n) };
            }),
            Io::Tls(t) => {
                // rustls reads into initialised bytes: the spare room,
                // zeroed (up to what one read takes at most).
                let at = buf.len();
                let room = (buf.capacity() - at).clamp(1, TLS_READ);
                buf.resize(at + room, 0);
                let r = t.read(&mut buf[at..]);
                buf.truncate(at + *r.as_ref().unwrap_or(&0));
                r
            }
        };
        match got {
            Ok(0) => Input::Gone,
            Ok(n) => {
                if let (Some(p), Some(t0)) = (phases, t0) {
                    ServerPhases::add(&p.read_ns, t0, Instant::now());
                }
                Input::Got(n)
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                Input::Waited
            }
            Err(_) => Input::Gone,
        }
    }
}

/// What one wait for input gave.
enum Input {
    Got(usize),
    /// The peer closed, or the socket failed.
    Gone,
    /// Nothing within the wait (or only a wake-up).
    Waited,
}

/// Run an asynchronous handler call on the runtime; its reply (INTERNAL
/// if it panicked) goes back to the connection's thread through `w`, whose socket
/// pair wakes it.
fn spawn_async(rt: &tokio::runtime::Handle, call: AsyncCall, w: &Wake) {
    let (tx, bell) = (w.done_tx.clone(), w.bell.clone());
    let AsyncCall { ticket, future } = call;
    let task = rt.spawn(future);
    rt.spawn(async move {
        let reply = task.await.unwrap_or_else(|_| AsyncReply::handler_failed());
        let _ = tx.send((ticket, reply));
        bell.ring();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polling_says_when_the_next_wait_polls() {
        let ms = Some(Duration::from_millis(1));
        // (oneways only, served, mid-message)
        let cases = [
            (true, true, false),
            (false, true, false),
            (false, false, true),
            (false, false, false),
        ];
        let streams: Vec<bool> = cases
            .iter()
            .map(|&(o, s, m)| Polling::streams(ms).next_wait_polls(o, s, m))
            .collect();
        assert_eq!(streams, [true, false, true, false]);
        let each: Vec<bool> = cases
            .iter()
            .map(|&(o, s, m)| Polling::after_each_message(ms).next_wait_polls(o, s, m))
            .collect();
        assert_eq!(each, [true, true, true, false]);
        // No limit, or a zero one: never.
        for p in [
            Polling::default(),
            Polling::streams(Some(Duration::ZERO)),
            Polling::after_each_message(None),
        ] {
            assert!(!p.next_wait_polls(true, true, true), "{p:?}");
        }
    }
}
