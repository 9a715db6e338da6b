//! Socket helpers every driver shares, below them all: a client socket
//! with the configured options, the segment size and segment count the
//! kernel reports, and the spinning `recv`/`send` of the blocking
//! client, the thread-per-connection server and the raw-TCP baseline, and
//! the timed read of the runtime's reader tasks. Nothing here knows GIOP.

use std::io::IoSlice;
use std::mem::MaybeUninit;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::config::ClientConfig;

/// A TCP socket for `addr` with the configured options, before it
/// connects (the receive buffer sets the window scale offered then).
pub(crate) fn tcp_socket(
    addr: std::net::SocketAddr,
    cfg: &ClientConfig,
) -> std::io::Result<socket2::Socket> {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    if let Some(n) = cfg.send_buffer {
        s.set_send_buffer_size(n as usize)?;
    }
    if let Some(n) = cfg.recv_buffer {
        s.set_recv_buffer_size(n as usize)?;
    }
    s.set_tcp_nodelay(cfg.nodelay)?;
    Ok(s)
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

/// TCP segments carrying data that socket `s` has sent so far
/// (TCP_INFO's `tcpi_data_segs_out`, a counter that wraps at 2^32);
/// `None` where the kernel does not say.
pub fn data_segments_out(s: &impl std::os::fd::AsRawFd) -> Option<u32> {
    // SAFETY: tcp_info is plain integers; the kernel fills at most `len`
    // bytes of it and says how many.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    let end = std::mem::offset_of!(libc::tcp_info, tcpi_data_segs_out) + 4;
    (rc == 0 && len as usize >= end).then_some(info.tcpi_data_segs_out)
}

/// The connection's maximum segment size (TCP_MAXSEG): a message shorter
/// than it gains from Nagle's joining, a longer one only waits for an ACK
/// with its tail (128 KiB oneways on loopback: ~10 % slower).
pub fn segment_size(s: &impl std::os::fd::AsFd) -> std::io::Result<usize> {
    socket2::SockRef::from(s)
        .tcp_mss()
        .map(|v| v.max(1) as usize)
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

/// `read_buf`, calling `on_read` with the start of the poll that read
/// bytes (phase timing: the first poll usually finds nothing and parks;
/// the one after the wake-up reads). Without `on_read`, a plain read.
pub(crate) async fn read_timed<R: AsyncRead + Unpin>(
    rd: &mut R,
    buf: &mut BytesMut,
    limit: usize,
    on_read: Option<&mut (dyn FnMut(Instant) + Send)>,
) -> std::io::Result<usize> {
    let mut buf = bytes::BufMut::limit(buf, limit);
    let Some(on_read) = on_read else {
        return rd.read_buf(&mut buf).await;
    };
    let mut read = std::pin::pin!(rd.read_buf(&mut buf));
    std::future::poll_fn(|cx| {
        let t0 = Instant::now();
        let r = std::future::Future::poll(read.as_mut(), cx);
        if matches!(r, std::task::Poll::Ready(Ok(n)) if n > 0) {
            on_read(t0);
        }
        r
    })
    .await
}
