//! The physical baseline (E4.3): the same message sizes and patterns as the
//! GIOP benchmarks, carried over plain TCP with a 12-byte frame header —
//! the size of a GIOP header — and no marshalling at all.
//!
//! Frame: `RAWT` magic, one kind octet, three zero octets, u32 little-endian
//! body length, then the body. Kinds: 0 sink (no reply), 1 echo (the whole
//! frame comes back), 2 ack (a header with length 0 comes back), 3 stats (a
//! header then u64 LE body bytes received on this connection so far).
//!
//! Both sides are plain blocking sockets on their own threads: the least
//! work a byte can cost here, which is what a baseline is for. A server
//! with a CPU of its own polls for its next bytes without blocking (for up
//! to its spin limit) before every read instead of sleeping in `recv`: on
//! loopback the sleeping receiver is woken once per segment and paces the
//! sender, and 64 KiB frames then move at about 60 % of what the machine
//! can do (`iiopbench orbs compare`, section 4); a round trip whose server sleeps
//! pays a wake-up per request (an ack of 1 KiB requests came back at
//! about half the rate of one whose server polls). The baseline is meant
//! to be the physical limit, so it takes the fastest receiver for streams
//! and round trips alike; latency comparisons that must wait as a given
//! server waits start it with [`ServerWait::Recv`]`(None)` or
//! [`ServerWait::Epoll`] instead.
//! For the same reason a stream of frames smaller than a segment is sent
//! with Nagle on (TCP_NODELAY off until the closing stats request), as
//! TTCP and iperf3 send by default: the kernel coalesces them into full
//! segments; a stream of frames of 96 KiB or more writes each frame's
//! first KiB alone, then the rest, as our GIOP client writes large
//! oneways (the receiver wakes and starts copying while the sender still
//! copies in: 128 KiB frames move ~15–40 % faster, and without it our own
//! GIOP pair outran this baseline); and the server reads into a 128 KiB
//! buffer. Beside oneways that a GIOP client buffers (`--oneway-buffer`),
//! the stream writes its frames in batches of the same size
//! ([`RawClient::stream_batched`]).
//!
//! The same frames also go through TLS ([`RawServer::start_tls`],
//! [`RawClient::connect_tls`]): the raw TLS-over-TCP baseline, what TLS
//! itself costs these bytes on this machine. Its client has the settings
//! of the benchmark's TLS client (no session resumption: every connection
//! a full handshake) and writes and reads the same sizes; it waits for
//! replies as the TCP client does (spinning first or not), while the
//! server's reads through rustls block at once.

use std::io::{IoSlice, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::hist::Latency;
use iiop_giop::conn::client::DEFAULT_SPLICE_CUTOFF;
use iiop_giop::conn::out::{first_write, head_first_for};
use iiop_transport::blocking::{
    data_segments_out, recv_spinning, segment_size, send_spinning, Spin,
};
use iiop_transport::tls::{rustls, RustlsClientConfig, RustlsServerConfig};

/// Header size, equal to GIOP's.
pub const HEADER: usize = 12;
/// How long a server that has a CPU of its own polls for its next bytes
/// before a read blocks.
pub const SERVER_SPIN: Duration = Duration::from_millis(1);
/// Largest body the server accepts.
pub const MAX_BODY: usize = 512 << 20;

/// What a frame asks of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Sink = 0,
    Echo = 1,
    Ack = 2,
    Stats = 3,
}

pub(crate) fn header(kind: Kind, len: usize) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[..4].copy_from_slice(b"RAWT");
    h[4] = kind as u8;
    h[8..].copy_from_slice(&(len as u32).to_le_bytes());
    h
}

pub(crate) fn parse_header(h: &[u8; HEADER]) -> std::io::Result<(u8, usize)> {
    if &h[..4] != b"RAWT" {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "bad raw-tcp magic",
        ));
    }
    let len = u32::from_le_bytes(h[8..].try_into().expect("4 bytes")) as usize;
    if len > MAX_BODY {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("raw-tcp frame of {len} bytes exceeds {MAX_BODY}"),
        ));
    }
    Ok((h[4], len))
}

/// Socket options applied identically to both ends of every comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketOpts {
    pub nodelay: bool,
    pub sndbuf: Option<usize>,
    pub rcvbuf: Option<usize>,
}

impl Default for SocketOpts {
    fn default() -> Self {
        SocketOpts {
            nodelay: true,
            sndbuf: None,
            rcvbuf: None,
        }
    }
}

impl crate::options::Sockets {
    /// As raw-TCP socket options.
    pub fn raw(&self) -> SocketOpts {
        SocketOpts {
            nodelay: self.nodelay,
            sndbuf: self.sndbuf.map(|v| v as usize),
            rcvbuf: self.rcvbuf.map(|v| v as usize),
        }
    }
}

impl SocketOpts {
    /// Apply to a connected socket.
    pub fn apply(&self, s: &TcpStream) -> std::io::Result<()> {
        s.set_nodelay(self.nodelay)?;
        set_buf(s, libc::SO_SNDBUF, self.sndbuf)?;
        set_buf(s, libc::SO_RCVBUF, self.rcvbuf)
    }
}

/// Set SO_SNDBUF / SO_RCVBUF on any socket.
pub fn set_buf(s: &impl AsRawFd, opt: libc::c_int, size: Option<usize>) -> std::io::Result<()> {
    let Some(size) = size else { return Ok(()) };
    let v = libc::c_int::try_from(size).unwrap_or(libc::c_int::MAX);
    // SAFETY: a valid fd and a pointer to a c_int of the given length.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// A running raw-TCP server (sink / echo / ack / stats).
#[derive(Debug)]
pub struct RawServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl RawServer {
    /// Listen on `addr` and serve on background threads, each pinned to
    /// `cpus` when given.
    /// `spin`: before every read, poll for the next bytes for up to this
    /// long before the read blocks (give it only a server whose CPUs the
    /// client does not share).
    pub fn start(
        addr: &str,
        opts: SocketOpts,
        cpus: Option<Vec<usize>>,
        spin: Option<Duration>,
    ) -> crate::error::Result<RawServer> {
        Self::start_waiting(addr, opts, cpus, ServerWait::Recv(spin))
    }

    /// [`start`](Self::start) with each connection waiting as `wait` says
    /// (with [`ServerWait::Epoll`], the raw round trip that waits the way
    /// our server's default model, `--server-model reactor`, waits).
    pub fn start_waiting(
        addr: &str,
        opts: SocketOpts,
        cpus: Option<Vec<usize>>,
        wait: ServerWait,
    ) -> crate::error::Result<RawServer> {
        Self::start_with(addr, opts, cpus, wait, None)
    }

    /// [`start`](Self::start) serving the frames over TLS with `tls`
    /// (the raw TLS-over-TCP baseline); its reads do not spin.
    pub fn start_tls(
        addr: &str,
        opts: SocketOpts,
        cpus: Option<Vec<usize>>,
        tls: Arc<RustlsServerConfig>,
    ) -> crate::error::Result<RawServer> {
        Self::start_with(addr, opts, cpus, ServerWait::Recv(None), Some(tls))
    }

    fn start_with(
        addr: &str,
        opts: SocketOpts,
        cpus: Option<Vec<usize>>,
        wait: ServerWait,
        tls: Option<Arc<RustlsServerConfig>>,
    ) -> crate::error::Result<RawServer> {
        let listener = TcpListener::bind(addr).map_err(|e| {
            crate::error::fail!(Local, "raw-tcp server cannot listen on {addr}: {e}")
        })?;
        let local = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        std::thread::Builder::new()
            .name("raw-tcp-accept".into())
            .spawn(move || {
                if let Some(c) = &cpus {
                    let _ = crate::sysinfo::pin_current_thread(c);
                }
                for conn in listener.incoming() {
                    if stop2.load(Ordering::Relaxed) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    let (cpus, tls) = (cpus.clone(), tls.clone());
                    let _ = std::thread::Builder::new()
                        .name("raw-tcp-conn".into())
                        .spawn(move || {
                            if let Some(c) = &cpus {
                                let _ = crate::sysinfo::pin_current_thread(c);
                            }
                            let _ = opts.apply(&conn);
                            let _ = match (tls, wait) {
                                (Some(t), _) => {
                                    accept_tls(t, conn).and_then(|s| serve_conn(s, None))
                                }
                                (None, ServerWait::Recv(spin)) => serve_conn(&conn, spin),
                                (None, ServerWait::Epoll) => {
                                    Polled::new(&conn).and_then(|p| serve_conn(p, None))
                                }
                            };
                        });
                }
            })?;
        Ok(RawServer { addr: local, stop })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

/// How a raw server's connection waits for its next bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerWait {
    /// Blocks in recv, as a thread per connection does (omniORB's server,
    /// `--server-model threads`), polling first for up to the given time
    /// (as `--server-model threads --spin-limit` does).
    Recv(Option<Duration>),
    /// Waits in epoll until the socket is readable whenever its last read
    /// did not fill the buffer, then reads: per request the epoll_wait,
    /// recv and send that a reactor's connection task makes (tokio clears
    /// a socket's readiness after a short read, so it waits in epoll next
    /// rather than trying a read that would fail).
    Epoll,
}

impl ServerWait {
    /// Its name in results: `recv`, `poll` (polls, then blocks in recv)
    /// or `epoll`.
    pub fn name(self) -> &'static str {
        match self {
            ServerWait::Recv(None) => "recv",
            ServerWait::Recv(Some(_)) => "poll",
            ServerWait::Epoll => "epoll",
        }
    }
}

/// A connection that waits in its own epoll instance before a read that
/// follows a short one ([`ServerWait::Epoll`]). The socket stays
/// blocking: a read after a full one blocks in recv where a reactor's
/// would fail and then wait, which waits the same.
struct Polled<'a> {
    s: &'a TcpStream,
    ep: std::os::fd::OwnedFd,
    ready: bool,
}

impl<'a> Polled<'a> {
    fn new(s: &'a TcpStream) -> std::io::Result<Polled<'a>> {
        use std::os::fd::FromRawFd;
        // SAFETY: epoll_create1 takes no pointers; a non-negative result
        // is a new descriptor that we own from here on.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor nobody else owns.
        let ep = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: 0,
        };
        // SAFETY: valid epoll and socket descriptors and a live event.
        let rc = unsafe { libc::epoll_ctl(fd, libc::EPOLL_CTL_ADD, s.as_raw_fd(), &mut ev) };
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Polled { s, ep, ready: true })
    }

    /// Until the socket is readable (or closed).
    fn wait(&self) -> std::io::Result<()> {
        let mut ev = [libc::epoll_event { events: 0, u64: 0 }];
        loop {
            // SAFETY: a valid epoll descriptor and room for one event.
            let n = unsafe { libc::epoll_wait(self.ep.as_raw_fd(), ev.as_mut_ptr(), 1, -1) };
            if n >= 0 {
                return Ok(());
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

impl Read for Polled<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        (&*self.s).read(buf)
    }
}

impl Write for Polled<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        (&*self.s).write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl RawIo for Polled<'_> {
    fn recv(&mut self, buf: &mut [u8], _spin: Option<Duration>) -> std::io::Result<usize> {
        if !self.ready {
            self.wait()?;
        }
        let n = recv_into(self.s, buf, None)?;
        self.ready = n == buf.len();
        Ok(n)
    }
}

/// How long either side of the TLS baseline waits for the other's part
/// of the handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A TLS session over an accepted connection, handshake done.
fn accept_tls(
    tls: Arc<RustlsServerConfig>,
    mut sock: TcpStream,
) -> std::io::Result<rustls::StreamOwned<rustls::ServerConnection, TcpStream>> {
    let mut conn = rustls::ServerConnection::new(tls).map_err(std::io::Error::other)?;
    sock.set_read_timeout(Some(HANDSHAKE_TIMEOUT))?;
    while conn.is_handshaking() {
        conn.complete_io(&mut sock)?;
    }
    sock.set_read_timeout(None)?;
    Ok(rustls::StreamOwned::new(conn, sock))
}

/// A raw connection's bytes: the TCP socket itself, or a TLS session
/// over it.
trait RawIo: Read + Write {
    /// One receive, retried when a signal interrupts it; a TCP socket
    /// polls first for up to `spin`.
    fn recv(&mut self, buf: &mut [u8], spin: Option<Duration>) -> std::io::Result<usize>;
}

impl RawIo for &TcpStream {
    fn recv(&mut self, buf: &mut [u8], spin: Option<Duration>) -> std::io::Result<usize> {
        recv_into(self, buf, spin)
    }
}

impl RawIo for rustls::StreamOwned<rustls::ServerConnection, TcpStream> {
    fn recv(&mut self, buf: &mut [u8], _spin: Option<Duration>) -> std::io::Result<usize> {
        loop {
            match self.read(buf) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                r => return r,
            }
        }
    }
}

/// Serve one connection until the peer closes it.
fn serve_conn(mut s: impl RawIo, spin: Option<Duration>) -> std::io::Result<()> {
    // Reads go into one large buffer, as an ORB's do, and a sink frame's
    // body is only counted there, never copied again: a stream of small
    // frames costs one recv per buffer rather than two per frame, and a
    // stream of large ones one copy out of the kernel, so the baseline
    // measures the transport rather than our read pattern.
    let mut buf = vec![0u8; READ_BUFFER];
    let (mut lo, mut hi) = (0usize, 0usize);
    let mut received: u64 = 0;
    loop {
        if lo == hi {
            (lo, hi) = (0, 0);
        }
        while hi - lo < HEADER {
            if buf.len() - lo < HEADER {
                buf.copy_within(lo..hi, 0);
                (lo, hi) = (0, hi - lo);
            }
            match s.recv(&mut buf[hi..], spin)? {
                0 if hi == lo => return Ok(()),
                0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                n => hi += n,
            }
        }
        let h: [u8; HEADER] = buf[lo..lo + HEADER].try_into().expect("HEADER bytes");
        lo += HEADER;
        let (kind, len) = parse_header(&h)?;
        received += len as u64;
        if kind == 0 || kind == 2 {
            // Sink and ack: skip the body, reading on into the buffer.
            let mut left = len;
            let here = left.min(hi - lo);
            lo += here;
            left -= here;
            while left > 0 {
                let n = match s.recv(&mut buf, spin)? {
                    0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                    n => n,
                };
                if n <= left {
                    left -= n;
                    (lo, hi) = (0, 0);
                } else {
                    (lo, hi) = (left, n);
                    left = 0;
                }
            }
            if kind == 2 {
                s.write_all(&header(Kind::Ack, 0))?;
                s.flush()?;
            }
            continue;
        }
        // A request answered at once: one frame in flight, so what follows
        // its body in the buffer (nothing, normally) stays there.
        if kind == 1 {
            // The echo goes back from the read buffer itself, header and
            // body in one write (a single segment train, as a GIOP reply
            // is) and with no copy of its own: the whole frame is read
            // into the buffer, made room for first.
            let start = lo - HEADER;
            let frame = HEADER + len;
            if buf.len() < frame {
                buf.resize(frame, 0);
            }
            let start = if start + frame > buf.len() {
                buf.copy_within(start..hi, 0);
                hi -= start;
                0
            } else {
                start
            };
            while hi < start + frame {
                match s.recv(&mut buf[hi..start + frame], spin)? {
                    0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                    n => hi += n,
                }
            }
            s.write_all(&buf[start..start + frame])?;
            s.flush()?;
            lo = start + frame;
            continue;
        }
        let here = len.min(hi - lo);
        lo += here;
        if here < len {
            // Only the stats request is left here, and it has no body.
            let mut rest = vec![0u8; len - here];
            s.read_exact(&mut rest)?;
        }
        match kind {
            3 => {
                let mut out = header(Kind::Stats, 8).to_vec();
                out.extend_from_slice(&received.to_le_bytes());
                s.write_all(&out)?;
                s.flush()?;
            }
            k => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("unknown raw-tcp kind {k}"),
                ))
            }
        }
    }
}

/// One receive, polling first for up to `spin`, retried when a signal
/// interrupts it.
fn recv_into(s: &TcpStream, buf: &mut [u8], spin: Option<Duration>) -> std::io::Result<usize> {
    let buf = as_uninit(buf);
    let mut spin = Spin::new(spin);
    loop {
        match recv_spinning(s, buf, &mut spin) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            r => return r,
        }
    }
}

/// Initialised bytes viewed as maybe-uninitialised ones, for `recv`.
fn as_uninit(buf: &mut [u8]) -> &mut [std::mem::MaybeUninit<u8>] {
    // SAFETY: same layout; recv only writes initialised bytes into them,
    // so the slice stays initialised for the caller.
    unsafe {
        std::slice::from_raw_parts_mut(
            buf.as_mut_ptr().cast::<std::mem::MaybeUninit<u8>>(),
            buf.len(),
        )
    }
}

/// The raw-TCP server's read buffer.
const READ_BUFFER: usize = 128 * 1024;

/// Where in a 4 KiB span the client's frames start (see [`Placed`]).
const FRAME_OFFSET: usize = 64;

/// The span [`FRAME_OFFSET`] counts in.
const SPAN: usize = 4096;

/// Bytes held at a fixed offset in a 4 KiB span of memory.
///
/// The kernel copies a sent buffer into its own pages, and on this
/// project's machine (AMD EPYC) how fast depends on where the source
/// sits in a 4 KiB span (presumably relative to the destination: the
/// 4 KiB aliasing that makes `rep movsb` slow on these CPUs): 64 KiB
/// frames starting 12 bytes before a span ran at 0.70x of frames
/// starting 64 bytes into one, and frames starting at a span's first
/// byte at 0.87x; 16, 1024, 2048 and 3584 bytes in were within the
/// noise of 64 (alternated runs, same placement). A frame where the
/// allocator happens to put it would make the baseline depend on that
/// luck, which moves with the allocation order (the embedded server's
/// or not, the build): the baseline is the fastest way, so its frames
/// go where the copy is fast.
struct Placed {
    store: Vec<u8>,
    start: usize,
}

impl Placed {
    /// `copies` frames of `kind` with `size` body bytes each, back to
    /// back, starting [`FRAME_OFFSET`] bytes into a 4 KiB span.
    fn frames(kind: Kind, size: usize, copies: usize) -> Placed {
        let one = HEADER + size;
        let mut store = vec![0u8; one * copies + SPAN];
        let start = (FRAME_OFFSET + SPAN - store.as_ptr() as usize % SPAN) % SPAN;
        for frame in store[start..start + one * copies].chunks_exact_mut(one) {
            frame[..HEADER].copy_from_slice(&header(kind, size));
            for (i, b) in frame[HEADER..].iter_mut().enumerate() {
                *b = (i * 7 + 3) as u8;
            }
        }
        Placed { store, start }
    }

    fn bytes(&self) -> &[u8] {
        &self.store[self.start..self.store.len() - SPAN + self.start]
    }
}

/// What a raw-TCP run measured.
#[derive(Debug, Clone, Default)]
pub struct RawRun {
    pub calls: u64,
    pub bytes: u64,
    pub seconds: f64,
    /// Bytes the server says it received (stream mode).
    pub server_bytes: Option<u64>,
    /// TCP segments with data the client sent (stream mode, plain TCP,
    /// where the kernel says): beside `calls`, how many frames the kernel
    /// joined into one segment.
    pub data_segments: Option<u64>,
    pub latency: Latency,
}

impl RawRun {
    /// Add `other`, measured after this run, to it (the slices of one
    /// point as one run).
    pub fn absorb(&mut self, other: &RawRun) {
        self.calls += other.calls;
        self.bytes += other.bytes;
        self.seconds += other.seconds;
        self.server_bytes = match (self.server_bytes, other.server_bytes) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.data_segments = match (self.data_segments, other.data_segments) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        self.latency.merge(&other.latency);
    }
}

/// A raw client's connection: the socket, or a TLS session over it.
#[derive(Debug)]
enum Wire {
    Tcp(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Wire {
    fn sock(&self) -> &TcpStream {
        match self {
            Wire::Tcp(s) => s,
            Wire::Tls(t) => &t.sock,
        }
    }

    fn nodelay(&self) -> std::io::Result<bool> {
        self.sock().nodelay()
    }

    /// Data segments sent so far (plain TCP; a TLS record's segments are
    /// not the frames').
    fn data_segments_out(&self) -> Option<u32> {
        match self {
            Wire::Tcp(s) => data_segments_out(s),
            Wire::Tls(_) => None,
        }
    }

    fn set_nodelay(&self, on: bool) -> std::io::Result<()> {
        self.sock().set_nodelay(on)
    }
}

impl Read for Wire {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Wire::Tcp(s) => s.read(buf),
            Wire::Tls(t) => t.read(buf),
        }
    }
}

impl Write for Wire {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Wire::Tcp(s) => s.write(buf),
            Wire::Tls(t) => t.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Wire::Tcp(s) => s.flush(),
            Wire::Tls(t) => t.flush(),
        }
    }
}

/// Read exactly `buf.len()` decrypted bytes: what rustls holds, else TLS
/// records from the socket, received as the TCP client receives (polling
/// first for up to `spin` per reply), so both baselines wait alike.
fn tls_read_exact(
    t: &mut rustls::StreamOwned<rustls::ClientConnection, TcpStream>,
    buf: &mut [u8],
    spin: Option<Duration>,
) -> std::io::Result<()> {
    /// The socket as rustls reads it: spinning `recv`.
    struct SpinRead<'a> {
        sock: &'a TcpStream,
        spin: &'a mut Option<Spin>,
    }
    impl Read for SpinRead<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            recv_spinning(self.sock, as_uninit(buf), self.spin)
        }
    }
    let mut spin = Spin::new(spin);
    let mut at = 0;
    while at < buf.len() {
        match t.conn.reader().read(&mut buf[at..]) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                at += n;
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        let mut io = SpinRead {
            sock: &t.sock,
            spin: &mut spin,
        };
        match t.conn.read_tls(&mut io) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        t.conn
            .process_new_packets()
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    }
    Ok(())
}

/// A connected raw-TCP (or raw TLS-over-TCP) client.
#[derive(Debug)]
pub struct RawClient {
    s: Wire,
    /// Spin this long before a reply read blocks (`--wait-strategy spin`).
    spin: Option<Duration>,
    /// How a stream's frames go out (see [`StreamWrites`]).
    writes: StreamWrites,
}

/// How a raw stream's frames leave the client.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StreamWrites {
    /// Frames shorter than a segment go with Nagle on, so the kernel joins
    /// those written while earlier bytes await their ACK into fuller
    /// segments: the fastest way this machine moves the bytes.
    #[default]
    Joined,
    /// TCP_NODELAY throughout: each frame leaves when it is written, in
    /// segments of its own unless the window holds it back, as an ORB
    /// client that writes each oneway with TCP_NODELAY (omniORB's, ours by
    /// default) sends them: the limit for one write per call.
    Separate,
}

impl StreamWrites {
    /// Its name in results: `joined` or `separate`.
    pub fn name(self) -> &'static str {
        match self {
            StreamWrites::Joined => "joined",
            StreamWrites::Separate => "separate",
        }
    }
}

impl RawClient {
    /// Connect with a timeout and apply the socket options.
    pub fn connect(
        addr: SocketAddr,
        opts: SocketOpts,
        timeout: Duration,
    ) -> crate::error::Result<RawClient> {
        let s = TcpStream::connect_timeout(&addr, timeout)
            .map_err(|e| crate::error::fail!(Target, "raw-tcp connect to {addr}: {e}"))?;
        opts.apply(&s)?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(RawClient {
            s: Wire::Tcp(s),
            spin: None,
            writes: StreamWrites::default(),
        })
    }

    /// [`connect`](Self::connect), then a full TLS handshake with `tls`
    /// (the server's certificate must name `addr`'s IP address), within
    /// `timeout`. Replies are read as [`spinning`](Self::spinning) says;
    /// frames are written through rustls with blocking sends.
    pub fn connect_tls(
        addr: SocketAddr,
        opts: SocketOpts,
        timeout: Duration,
        tls: Arc<RustlsClientConfig>,
    ) -> crate::error::Result<RawClient> {
        let Wire::Tcp(mut sock) = Self::connect(addr, opts, timeout)?.s else {
            unreachable!("connect makes a TCP client")
        };
        let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
        let mut conn =
            rustls::ClientConnection::new(tls, name).map_err(crate::error::Error::local)?;
        sock.set_read_timeout(Some(timeout))?;
        sock.set_write_timeout(Some(timeout))?;
        while conn.is_handshaking() {
            conn.complete_io(&mut sock).map_err(|e| {
                crate::error::fail!(
                    Target,
                    "raw TLS handshake with {addr}: {}",
                    iiop_transport::tls::handshake_failure(&e, iiop_transport::tls::Side::Client)
                )
            })?;
        }
        sock.set_read_timeout(Some(Duration::from_secs(30)))?;
        sock.set_write_timeout(None)?;
        Ok(RawClient {
            s: Wire::Tls(Box::new(rustls::StreamOwned::new(conn, sock))),
            spin: None,
            writes: StreamWrites::default(),
        })
    }

    /// Wait for replies and for room to send as a spinning GIOP client
    /// does: poll without blocking for up to `spin` first (`None`: block
    /// at once).
    pub fn spinning(mut self, spin: Option<Duration>) -> RawClient {
        self.spin = spin.filter(|d| !d.is_zero());
        self
    }

    /// Send a stream's frames as `writes` says (default: joined).
    pub fn writing(mut self, writes: StreamWrites) -> RawClient {
        self.writes = writes;
        self
    }

    /// How a stream's frames go out.
    pub fn writes(&self) -> StreamWrites {
        self.writes
    }

    /// Whether this client goes through TLS.
    pub fn is_tls(&self) -> bool {
        matches!(self.s, Wire::Tls(_))
    }

    /// Read exactly `buf.len()` bytes of a reply, waiting as configured.
    fn read_reply(&mut self, buf: &mut [u8]) -> std::io::Result<()> {
        let sock = match &mut self.s {
            Wire::Tcp(sock) => sock,
            Wire::Tls(t) => return tls_read_exact(t, buf, self.spin),
        };
        let mut spin = Spin::new(self.spin);
        let mut at = 0;
        while at < buf.len() {
            match recv_spinning(sock, as_uninit(&mut buf[at..]), &mut spin) {
                Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => at += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Write all of `frame`, waiting for room as configured; a frame of at
    /// least `head_first` bytes goes as two writes, its head alone
    /// ([`first_write`], the rule our GIOP client writes a large message
    /// by: [`head_first_for`] says why), so the receiver starts on it
    /// while the rest is still being copied into the kernel.
    fn send_frame(&mut self, frame: &[u8], head_first: Option<usize>) -> std::io::Result<()> {
        let Wire::Tcp(sock) = &self.s else {
            self.s.write_all(frame)?;
            return self.s.flush();
        };
        let mut spin = Spin::new(self.spin);
        let mut at = 0;
        let mut end = first_write(frame.len(), head_first).min(frame.len());
        while at < frame.len() {
            if at == end {
                end = frame.len();
            }
            match send_spinning(sock, &[IoSlice::new(&frame[at..end])], &mut spin) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => at += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Stream frames of `size` body bytes until `total` bytes are sent and
    /// `min_duration` has passed (or `max_duration`), then ask the server
    /// how much arrived. Time is taken after the server confirms.
    pub fn stream(
        &mut self,
        size: usize,
        total: u64,
        min_duration: Duration,
        max_duration: Duration,
    ) -> crate::error::Result<RawRun> {
        self.stream_batched(size, None, total, min_duration, max_duration)
    }

    /// [`stream`](Self::stream), with `batch`: as many frames to each
    /// write as make at least `batch` bytes, as a GIOP client that
    /// buffers oneways writes them (`bench throughput --oneway-buffer`).
    pub fn stream_batched(
        &mut self,
        size: usize,
        batch: Option<usize>,
        total: u64,
        min_duration: Duration,
        max_duration: Duration,
    ) -> crate::error::Result<RawRun> {
        let per_write = batch.map_or(1, |b| b.div_ceil(HEADER + size).max(1));
        let placed = Placed::frames(Kind::Sink, size, per_write);
        let frame = placed.bytes();
        let before = self.stats()?;
        // A stream waits for nothing, so the kernel may coalesce frames
        // smaller than a segment into full ones (Nagle on, as TTCP and
        // iperf3 send): the fastest this machine moves these bytes over
        // TCP. A frame of a segment or more gains nothing from it and loses
        // its tail to the wait for an ACK (128 KiB frames on loopback:
        // ~15 % slower), so it goes out at once. Turning TCP_NODELAY back
        // on before the stats request pushes what is left. Separate
        // writes keep Nagle off throughout.
        let nodelay = self.s.nodelay()?;
        let coalesce = self.writes == StreamWrites::Joined
            && frame.len() < segment_size(self.s.sock()).unwrap_or(1460);
        self.s.set_nodelay(!coalesce)?;
        // The clock is read as the GIOP stream reads it (bench/throughput.rs
        // `send_loop`): every 16th small frame, and when the total is
        // first reached; once per check.
        let every = if frame.len() < 4096 { 16 } else { 1 };
        // (A batch goes in one write, as the buffering client's does.)
        let head_first = match per_write {
            1 => head_first_for(Some(DEFAULT_SPLICE_CUTOFF), false),
            _ => None,
        };
        let segs0 = self.s.data_segments_out();
        let start = Instant::now();
        let mut run = RawRun::default();
        let mut writes = 0u64;
        loop {
            self.send_frame(frame, head_first)?;
            writes += 1;
            run.calls += per_write as u64;
            let before = run.bytes;
            run.bytes += (size * per_write) as u64;
            let reached = run.bytes >= total && before < total;
            if !reached && !writes.is_multiple_of(every) {
                continue;
            }
            let el = start.elapsed();
            if (run.bytes >= total && el >= min_duration) || el >= max_duration {
                break;
            }
        }
        self.s.set_nodelay(true)?;
        // (The stats request, written after this, is not a frame.)
        run.data_segments = segs0
            .zip(self.s.data_segments_out())
            .map(|(a, b)| u64::from(b.wrapping_sub(a)));
        let after = self.stats()?;
        self.s.set_nodelay(nodelay)?;
        run.seconds = start.elapsed().as_secs_f64();
        run.server_bytes = Some(after - before);
        Ok(run)
    }

    /// Ask the server for its received-bytes counter on this connection.
    pub fn stats(&mut self) -> crate::error::Result<u64> {
        self.s.write_all(&header(Kind::Stats, 0))?;
        self.s.flush()?;
        let mut h = [0u8; HEADER];
        self.s.read_exact(&mut h)?;
        let (_, len) = parse_header(&h)?;
        crate::error::ensure!(len == 8, Target, "raw-tcp stats reply of {len} bytes");
        let mut b = [0u8; 8];
        self.s.read_exact(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// Ping-pong: `warmup` unrecorded then `count` recorded round trips (or
    /// until `duration`), each sending `size` bytes and getting them back
    /// (`echo`) or getting an empty ack.
    pub fn pingpong(
        &mut self,
        size: usize,
        echo: bool,
        warmup: u64,
        count: u64,
        duration: Option<Duration>,
    ) -> crate::error::Result<RawRun> {
        self.pingpong_for(size, echo, warmup, count, Duration::ZERO, duration)
    }

    /// [`pingpong`](Self::pingpong) that also goes on, past `count`, until
    /// `min` has passed (a rate, as a stream measures one); `duration`
    /// still ends it.
    pub fn pingpong_for(
        &mut self,
        size: usize,
        echo: bool,
        warmup: u64,
        count: u64,
        min: Duration,
        duration: Option<Duration>,
    ) -> crate::error::Result<RawRun> {
        let kind = if echo { Kind::Echo } else { Kind::Ack };
        let placed = Placed::frames(kind, size, 1);
        let frame = placed.bytes();
        let reply_len = if echo { size } else { 0 };
        let mut reply = vec![0u8; HEADER + reply_len];
        let mut run = RawRun::default();
        // One write per frame: unlike a stream's, a round trip's sender
        // gains nothing from writing the head first (the echo starts only
        // once the whole frame is in; measured: no change at 64 and
        // 128 KiB).
        let head_first = None;
        for _ in 0..warmup {
            self.send_frame(frame, head_first)?;
            self.read_reply(&mut reply)?;
        }
        let start = Instant::now();
        // The clock read that ends a round trip also says how long the
        // run has gone: two reads a round trip, none for the loop.
        let mut elapsed = Duration::ZERO;
        while (run.calls < count || elapsed < min) && duration.is_none_or(|d| elapsed < d) {
            let t0 = Instant::now();
            self.send_frame(frame, head_first)?;
            self.read_reply(&mut reply)?;
            let t1 = Instant::now();
            run.latency.record_ns((t1 - t0).as_nanos() as u64);
            run.calls += 1;
            run.bytes += size as u64;
            elapsed = t1 - start;
        }
        run.seconds = start.elapsed().as_secs_f64();
        crate::error::ensure!(
            !echo || reply[HEADER..] == frame[HEADER..],
            Target,
            "raw-tcp echo returned different bytes"
        );
        Ok(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placed_bytes_start_at_the_frame_offset_and_are_the_same_bytes() {
        for (size, copies) in [
            (0usize, 1usize),
            (1, 1),
            (1024, 1),
            (1000, 5),
            (65536, 1),
            (131072, 1),
        ] {
            let mut bytes = Vec::new();
            for _ in 0..copies {
                bytes.extend_from_slice(&header(Kind::Sink, size));
                bytes.extend((0..size).map(|i| (i * 7 + 3) as u8));
            }
            let p = Placed::frames(Kind::Sink, size, copies);
            assert_eq!(p.bytes(), &bytes[..]);
            assert_eq!(
                p.bytes().as_ptr() as usize % SPAN,
                FRAME_OFFSET,
                "size {size}"
            );
        }
    }

    #[test]
    fn stream_counts_every_byte() {
        let srv = RawServer::start("127.0.0.1:0", SocketOpts::default(), None, None).unwrap();
        let mut c =
            RawClient::connect(srv.addr(), SocketOpts::default(), Duration::from_secs(5)).unwrap();
        let r = c
            .stream(1000, 50_000, Duration::ZERO, Duration::from_secs(10))
            .unwrap();
        assert_eq!(r.calls, 50);
        assert_eq!(r.bytes, 50_000);
        assert_eq!(r.server_bytes, Some(50_000));
    }

    #[test]
    fn a_batched_stream_writes_whole_batches_and_counts_every_byte() {
        let srv = RawServer::start("127.0.0.1:0", SocketOpts::default(), None, None).unwrap();
        let mut c =
            RawClient::connect(srv.addr(), SocketOpts::default(), Duration::from_secs(5)).unwrap();
        // 1 012-byte frames: five make the first 4 KiB or more, and a run
        // ends on a whole batch.
        for (total, calls) in [(50_000, 50), (52_000, 55)] {
            let (min, max) = (Duration::ZERO, Duration::from_secs(10));
            let r = c.stream_batched(1000, Some(4096), total, min, max).unwrap();
            assert_eq!(r.calls, calls);
            assert_eq!(r.bytes, calls * 1000);
            assert_eq!(r.server_bytes, Some(calls * 1000));
        }
    }

    #[test]
    fn separate_writes_leave_a_segment_per_frame() {
        // Nagle on joins frames written back to back while the first
        // awaits its ACK (10 frames: 2 segments here); Nagle off sends
        // each frame in its own segment. Ten fit the initial congestion
        // window and the receive window, so that holds however late the
        // server reads (on a loaded machine, 200 frames went in ~20).
        let srv = RawServer::start("127.0.0.1:0", SocketOpts::default(), None, None).unwrap();
        let c =
            RawClient::connect(srv.addr(), SocketOpts::default(), Duration::from_secs(5)).unwrap();
        let mut c = c.writing(StreamWrites::Separate);
        let r = c
            .stream(1000, 10_000, Duration::ZERO, Duration::from_secs(10))
            .unwrap();
        assert_eq!(r.server_bytes, Some(10_000));
        assert_eq!(r.data_segments, Some(10), "a segment per frame");
        assert!(c.s.nodelay().unwrap(), "Nagle stays off after the stream");
    }

    #[test]
    fn stream_across_the_read_buffer_counts_every_byte() {
        // Frames that straddle the server's read buffer, small and larger
        // than the buffer, then a ping-pong on the same connection; the
        // server polls before its reads, as with a CPU of its own.
        let spin = Some(SERVER_SPIN);
        let srv = RawServer::start("127.0.0.1:0", SocketOpts::default(), None, spin).unwrap();
        let mut c =
            RawClient::connect(srv.addr(), SocketOpts::default(), Duration::from_secs(5)).unwrap();
        for (size, total) in [(1000, 1_000_000), (7, 70_007), (300_000, 900_000), (1, 10)] {
            let r = c
                .stream(size, total, Duration::ZERO, Duration::from_secs(10))
                .unwrap();
            assert_eq!(r.server_bytes, Some(r.bytes), "frames of {size}");
        }
        let r = c.pingpong(70_000, true, 2, 20, None).unwrap();
        assert_eq!(r.calls, 20);
    }

    #[test]
    fn pingpong_records_each_call() {
        let srv = RawServer::start("127.0.0.1:0", SocketOpts::default(), None, None).unwrap();
        let mut c =
            RawClient::connect(srv.addr(), SocketOpts::default(), Duration::from_secs(5)).unwrap();
        let r = c.pingpong(100, true, 5, 200, None).unwrap();
        assert_eq!(r.calls, 200);
        assert_eq!(r.latency.len(), 200);
        let r = c.pingpong(1, false, 0, 50, None).unwrap();
        assert_eq!(r.latency.len(), 50);
    }

    #[test]
    fn epoll_server_echoes_acks_and_counts_a_stream() {
        let srv = RawServer::start_waiting(
            "127.0.0.1:0",
            SocketOpts::default(),
            None,
            ServerWait::Epoll,
        )
        .unwrap();
        let mut c =
            RawClient::connect(srv.addr(), SocketOpts::default(), Duration::from_secs(5)).unwrap();
        let r = c.pingpong(100_000, true, 2, 20, None).unwrap();
        assert_eq!(r.latency.len(), 20);
        let r = c.pingpong(1, false, 0, 50, None).unwrap();
        assert_eq!(r.latency.len(), 50);
        // Frames larger than the read buffer, then small ones.
        let r = c
            .stream(200_000, 2_000_000, Duration::ZERO, Duration::from_secs(10))
            .unwrap();
        assert_eq!(r.server_bytes, Some(r.bytes));
        let r = c
            .stream(100, 100_000, Duration::ZERO, Duration::from_secs(10))
            .unwrap();
        assert_eq!(r.server_bytes, Some(r.bytes));
    }

    #[test]
    fn tls_frames_count_every_byte_and_echo_back() {
        let pki = iiop_transport::tls::EphemeralPki::new().unwrap();
        let srv =
            RawServer::start_tls("127.0.0.1:0", SocketOpts::default(), None, pki.server).unwrap();
        let mut c = RawClient::connect_tls(
            srv.addr(),
            SocketOpts::default(),
            Duration::from_secs(5),
            pki.client,
        )
        .unwrap();
        assert!(c.is_tls());
        // Frames smaller than a record, larger than the server's read
        // buffer and than rustls' plaintext buffer.
        for (size, total) in [(1000, 100_000), (300_000, 900_000)] {
            let r = c
                .stream(size, total, Duration::ZERO, Duration::from_secs(10))
                .unwrap();
            assert_eq!(r.server_bytes, Some(r.bytes), "frames of {size}");
            assert_eq!(r.bytes, total);
        }
        let r = c.pingpong(70_000, true, 2, 20, None).unwrap();
        assert_eq!(r.calls, 20);
        let r = c.pingpong(8, false, 0, 30, None).unwrap();
        assert_eq!(r.latency.len(), 30);
        // Waiting for replies by spinning first, as a spinning GIOP
        // client does.
        let mut c = c.spinning(Some(Duration::from_millis(1)));
        let r = c.pingpong(20_000, true, 0, 30, None).unwrap();
        assert_eq!(r.calls, 30);
    }

    #[test]
    fn a_tls_client_refuses_a_server_its_ca_did_not_sign() {
        let (a, b) = (
            iiop_transport::tls::EphemeralPki::new().unwrap(),
            iiop_transport::tls::EphemeralPki::new().unwrap(),
        );
        let srv =
            RawServer::start_tls("127.0.0.1:0", SocketOpts::default(), None, a.server).unwrap();
        let e = RawClient::connect_tls(
            srv.addr(),
            SocketOpts::default(),
            Duration::from_secs(5),
            b.client,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "raw TLS handshake with {}: we refused the server's certificate: not signed by a CA we trust",
                srv.addr()
            )
        );
    }

    #[test]
    fn oversized_frame_closes_connection_only() {
        let srv = RawServer::start("127.0.0.1:0", SocketOpts::default(), None, None).unwrap();
        let mut bad = TcpStream::connect(srv.addr()).unwrap();
        let mut h = header(Kind::Sink, 0);
        h[8..].copy_from_slice(&u32::MAX.to_le_bytes());
        bad.write_all(&h).unwrap();
        let mut buf = [0u8; 1];
        bad.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        assert_eq!(
            bad.read(&mut buf).unwrap(),
            0,
            "server must close the connection"
        );
        let mut c =
            RawClient::connect(srv.addr(), SocketOpts::default(), Duration::from_secs(5)).unwrap();
        assert_eq!(c.pingpong(8, true, 0, 3, None).unwrap().calls, 3);
    }

    /// What the scheduler counted for the calling thread so far.
    #[derive(Debug, Clone, Copy)]
    struct Sched {
        /// Time on a CPU.
        ran: Duration,
        /// Time runnable but waiting for a CPU (grows with the machine's
        /// load, however little the thread itself does).
        waited: Duration,
        /// Times it went to sleep (blocked) of its own accord.
        slept: u64,
    }

    impl Sched {
        fn now() -> Sched {
            let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
            let mut f = s.split_whitespace().map(|x| x.parse::<u64>().unwrap());
            let (ran, waited) = (f.next().unwrap(), f.next().unwrap());
            let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
            let slept = status
                .lines()
                .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            Sched {
                ran: Duration::from_nanos(ran),
                waited: Duration::from_nanos(waited),
                slept,
            }
        }

        fn since(self, before: Sched) -> Sched {
            Sched {
                ran: self.ran - before.ran,
                waited: self.waited - before.waited,
                slept: self.slept - before.slept,
            }
        }
    }

    /// What the scheduler counted for a connection served with `spin`
    /// while its client, between two `kind` requests, was silent for
    /// `gap`.
    fn served_between_requests(kind: Kind, spin: Option<Duration>, gap: Duration) -> Sched {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (conn, _) = l.accept().unwrap();
        let server = std::thread::spawn(move || {
            let before = Sched::now();
            serve_conn(&conn, spin).unwrap();
            Sched::now().since(before)
        });
        let reply = if kind == Kind::Echo {
            HEADER + 100
        } else {
            HEADER
        };
        let mut buf = vec![0u8; reply];
        for i in 0..2 {
            if i == 1 {
                std::thread::sleep(gap);
            }
            c.write_all(&header(kind, 100)).unwrap();
            c.write_all(&[5u8; 100]).unwrap();
            c.read_exact(&mut buf).unwrap();
        }
        drop(c);
        server.join().unwrap()
    }

    #[test]
    fn a_server_with_a_spin_polls_for_each_request_and_one_without_blocks() {
        // The twoway baseline is the fastest round trip: its server polls
        // for the next request as for a stream's next segment, after
        // acks and echoes alike; without a spin it sleeps in recv.
        let gap = Duration::from_millis(300);
        for kind in [Kind::Ack, Kind::Echo] {
            let polled = served_between_requests(kind, Some(Duration::from_secs(5)), gap);
            let blocked = served_between_requests(kind, None, gap);
            eprintln!("{kind:?}: polling {polled:?}, blocking {blocked:?}");
            // A polling thread wants a CPU all along (on one, or yielded
            // and waiting for one), however busy the machine, and never
            // sleeps; a blocked one sleeps in recv through the gap and
            // runs only to answer. How long the blocked one then waited
            // for a CPU is not asserted: that is the machine's load (a
            // build beside the test makes it a sizeable part of the
            // gap), not the server's doing.
            assert!(
                polled.ran + polled.waited >= gap * 2 / 3 && polled.slept == 0,
                "{kind:?}: polling wanted {:?} of {gap:?} and slept {} times",
                polled.ran + polled.waited,
                polled.slept
            );
            assert!(
                blocked.ran < gap / 30 && blocked.slept >= 1,
                "{kind:?}: blocking ran {:?} of {gap:?} and slept {} times",
                blocked.ran,
                blocked.slept
            );
        }
    }
}
