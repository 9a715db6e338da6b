//! The raw-TCP baseline of loops with many callers: the frames of
//! [`crate::rawtcp`] (a 12-byte header, the size of GIOP's, and no
//! marshalling) carried by the same tokio machinery as the benchmark's
//! own calls, so that a sweep step or a latency point of N connections,
//! closed or open loop, has a raw round trip "written and waited the same
//! way" to be measured against.
//!
//! - [`RawReactor`]: a server on one thread of its own (placed where the
//!   embedded server would be), a current-thread tokio runtime with one
//!   task per connection, as our reactor server is. Each task reads what
//!   has arrived into one buffer, answers every whole frame in it with a
//!   single write, and reads again: per round trip the epoll wait, recv and
//!   send our reactor makes, without decoding anything.
//! - [`RawCaller`]: one connection of the generator, an [`Invoke`] that the
//!   latency loops drive exactly as they drive a bench.idl caller. Calls
//!   on one connection may overlap (an open loop through few connections):
//!   a reader task completes them in order, as GIOP's reader completes
//!   replies by request id; the server answers in order, so the order is
//!   the id.
//!
//! Every frame's declared length is checked against the raw baseline's
//! limit ([`crate::rawtcp::MAX_BODY`]) before
//! anything is read or allocated for it; a bad frame closes that
//! connection only.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::{Buf, BytesMut};
use iiop_bench_idl::client::BenchError;
use iiop_transport::client::ClientError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use crate::bench::loops::Invoke;
#[cfg(test)]
use crate::rawtcp::MAX_BODY;
use crate::rawtcp::{header, parse_header, Kind, SocketOpts, HEADER};

/// Bytes each side reads at most at once (reads that find many frames
/// waiting take them all, as GIOP's readers do).
const READ_BUF: usize = 64 << 10;

/// The kind and body length of the frame whose header starts `b`, or why
/// it is refused ([`parse_header`]: the length checked against the limit).
fn parse(b: &[u8]) -> Result<(u8, usize), String> {
    parse_header(b[..HEADER].try_into().expect("HEADER bytes")).map_err(|e| e.to_string())
}

/// The replies to every whole frame at the front of `buf`, taken off it,
/// appended to `out`; a frame not yet whole stays. Echo frames come back
/// whole, ack frames as a header alone, sink frames not at all.
fn answer(buf: &mut BytesMut, out: &mut Vec<u8>) -> Result<(), String> {
    while buf.len() >= HEADER {
        let (kind, len) = parse(&buf[..HEADER])?;
        if buf.len() < HEADER + len {
            // Room for the rest of it, at once.
            buf.reserve(HEADER + len - buf.len());
            break;
        }
        match kind {
            k if k == Kind::Echo as u8 => out.extend_from_slice(&buf[..HEADER + len]),
            k if k == Kind::Ack as u8 => out.extend_from_slice(&header(Kind::Ack, 0)),
            k if k == Kind::Sink as u8 => {}
            k => {
                return Err(format!(
                    "raw-tcp frame of kind {k}: not one this server answers"
                ))
            }
        }
        buf.advance(HEADER + len);
    }
    Ok(())
}

/// One connection of the server: read, answer every whole frame, write.
async fn serve(mut s: TcpStream) {
    let mut buf = BytesMut::with_capacity(READ_BUF);
    let mut out = Vec::with_capacity(READ_BUF);
    loop {
        buf.reserve(READ_BUF / 2);
        match s.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if answer(&mut buf, &mut out).is_err() {
            return;
        }
        if !out.is_empty() {
            if s.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
    }
}

/// The raw-TCP server of a baseline with many callers: a thread of its
/// own, one tokio task per connection. Stops when dropped.
#[derive(Debug)]
pub struct RawReactor {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RawReactor {
    /// Listen on 127.0.0.1 (port 0), the serving thread pinned to `cpus`
    /// where given, its sockets set as `opts` says.
    pub fn start(cpus: Option<Vec<usize>>, opts: SocketOpts) -> std::io::Result<RawReactor> {
        let l = std::net::TcpListener::bind("127.0.0.1:0")?;
        l.set_nonblocking(true)?;
        let addr = l.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        // Placed and serving before `start` returns, so that a watch
        // started after it sees the thread only where it was placed.
        let (ready, is_ready) = std::sync::mpsc::channel::<()>();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()?;
        let thread = std::thread::Builder::new()
            .name("raw-reactor".into())
            .spawn(move || {
                if let Some(c) = &cpus {
                    let _ = crate::sysinfo::pin_current_thread(c);
                }
                rt.block_on(async move {
                    let Ok(l) = tokio::net::TcpListener::from_std(l) else {
                        return;
                    };
                    let _ = ready.send(());
                    let accept = async {
                        loop {
                            if let Ok((s, _)) = l.accept().await {
                                if let Ok(std) = s.into_std() {
                                    let _ = opts.apply(&std);
                                    if let Ok(s) = TcpStream::from_std(std) {
                                        tokio::spawn(serve(s));
                                    }
                                }
                            }
                        }
                    };
                    tokio::select! {
                        _ = stopped => {}
                        _ = accept => {}
                    }
                });
            })?;
        is_ready
            .recv_timeout(std::time::Duration::from_secs(10))
            .map_err(|_| std::io::Error::other("the raw-TCP server did not start"))?;
        Ok(RawReactor {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for RawReactor {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The calls of one connection waiting for their replies, oldest first,
/// and why the connection ended once it has (no call waits after that).
#[derive(Default)]
struct Queue {
    calls: VecDeque<oneshot::Sender<Result<(), String>>>,
    ended: Option<String>,
}

impl Queue {
    /// The connection ended: every waiting call fails with `why`, and so
    /// does every later one.
    fn end(&mut self, why: String) {
        for t in self.calls.drain(..) {
            let _ = t.send(Err(why.clone()));
        }
        self.ended.get_or_insert(why);
    }
}

type Waiters = Arc<Mutex<Queue>>;

/// Frames queued for the wire and not yet written, and whether a caller
/// is writing them now. (The buffer trades places with the writer's,
/// [`Out`], so neither is allocated again per write.)
#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    flushing: bool,
}

/// One raw connection of the generator: each call queues one frame (an
/// echo of `size` bytes, or for ping an ack of a 1-byte frame, as the
/// latency baseline's) and waits for its reply. Written as our GIOP
/// connection writes: a call with nothing else in flight writes its frame
/// itself; with company, a writer task takes whatever accumulated and
/// writes it at once, so frames issued together leave together.
#[derive(Clone)]
pub struct RawCaller {
    addr: SocketAddr,
    frame: Arc<[u8]>,
    write: Arc<tokio::sync::Mutex<Out>>,
    pending: Arc<Mutex<Pending>>,
    out_ready: Arc<tokio::sync::Notify>,
    waiting: Waiters,
    reader: Arc<tokio::task::AbortHandle>,
    writer: Arc<tokio::task::AbortHandle>,
}

/// The write half and the buffer its writer writes from: whoever holds
/// the lock writes.
struct Out {
    wr: OwnedWriteHalf,
    buf: Vec<u8>,
}

/// Write everything queued in `pending` to `out` until nothing is left
/// (the flag held meanwhile); on failure, the connection's calls end.
async fn flush(
    out: &mut Out,
    pending: &Mutex<Pending>,
    waiting: &Mutex<Queue>,
) -> std::io::Result<()> {
    loop {
        {
            let mut p = pending.lock().expect("pending");
            if p.bytes.is_empty() {
                p.flushing = false;
                return Ok(());
            }
            p.flushing = true;
            // The queued frames to the writer; its emptied buffer back.
            std::mem::swap(&mut p.bytes, &mut out.buf);
        }
        let r = out.wr.write_all(&out.buf).await;
        out.buf.clear();
        if let Err(e) = r {
            pending.lock().expect("pending").flushing = false;
            waiting.lock().expect("waiters").end(e.to_string());
            return Err(e);
        }
    }
}

impl std::fmt::Debug for RawCaller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawCaller")
            .field("addr", &self.addr)
            .finish()
    }
}

fn io_error(addr: SocketAddr, message: impl std::fmt::Display) -> BenchError {
    BenchError::Call(ClientError::Io {
        addr: addr.to_string(),
        message: message.to_string(),
    })
}

impl RawCaller {
    /// Connect to a raw server at `addr`; each call carries `size` body
    /// bytes, echoed back when `echo`, else acknowledged by a header.
    pub async fn connect(
        addr: SocketAddr,
        opts: SocketOpts,
        size: usize,
        echo: bool,
    ) -> std::io::Result<RawCaller> {
        let s = TcpStream::connect(addr).await?;
        let s = {
            let std = s.into_std()?;
            opts.apply(&std)?;
            TcpStream::from_std(std)?
        };
        let (mut rd, wr) = s.into_split();
        let kind = if echo { Kind::Echo } else { Kind::Ack };
        let mut frame = header(kind, size).to_vec();
        frame.extend((0..size).map(|i| i as u8));
        let reply = if echo { HEADER + size } else { HEADER };
        let waiting: Waiters = Arc::default();
        let w = waiting.clone();
        let reader = tokio::spawn(async move {
            let mut buf = BytesMut::with_capacity(READ_BUF.max(reply));
            let fail = |why: String| w.lock().expect("waiters").end(why);
            loop {
                while buf.len() >= HEADER {
                    let len = match parse(&buf[..HEADER]) {
                        Ok((_, len)) => len,
                        Err(e) => return fail(e),
                    };
                    if buf.len() < HEADER + len {
                        break;
                    }
                    buf.advance(HEADER + len);
                    match w.lock().expect("waiters").calls.pop_front() {
                        Some(t) => {
                            let _ = t.send(Ok(()));
                        }
                        None => return fail("a raw-tcp reply to no call".into()),
                    }
                }
                // Room for many replies per read, as GIOP's reader has.
                buf.reserve(READ_BUF / 2);
                match rd.read_buf(&mut buf).await {
                    Ok(0) => return fail("closed by the raw-tcp server".into()),
                    Err(e) => return fail(e.to_string()),
                    Ok(_) => {}
                }
            }
        });
        let write = Arc::new(tokio::sync::Mutex::new(Out {
            wr,
            buf: Vec::new(),
        }));
        let pending: Arc<Mutex<Pending>> = Arc::default();
        let out_ready = Arc::new(tokio::sync::Notify::new());
        let writer = {
            let (write, pending, out_ready, waiting) = (
                write.clone(),
                pending.clone(),
                out_ready.clone(),
                waiting.clone(),
            );
            tokio::spawn(async move {
                loop {
                    out_ready.notified().await;
                    let mut w = write.lock().await;
                    if flush(&mut w, &pending, &waiting).await.is_err() {
                        return;
                    }
                }
            })
        };
        Ok(RawCaller {
            addr,
            frame: frame.into(),
            write,
            pending,
            out_ready,
            waiting,
            reader: Arc::new(reader.abort_handle()),
            writer: Arc::new(writer.abort_handle()),
        })
    }
}

impl Invoke for RawCaller {
    async fn invoke(&self) -> Result<(), BenchError> {
        let (tx, rx) = oneshot::channel();
        // The waiter goes in the queue in the order its frame goes on the
        // wire: both under the same locks.
        let direct = {
            let mut q = self.waiting.lock().expect("waiters");
            if let Some(why) = &q.ended {
                return Err(io_error(self.addr, why));
            }
            let alone = q.calls.is_empty();
            let mut p = self.pending.lock().expect("pending");
            q.calls.push_back(tx);
            p.bytes.extend_from_slice(&self.frame);
            let direct = alone && !p.flushing;
            p.flushing |= direct;
            direct
        };
        if direct {
            // Nothing else in flight and no write under way: this task
            // writes, saving a switch to the writer task.
            let mut w = self.write.lock().await;
            flush(&mut w, &self.pending, &self.waiting)
                .await
                .map_err(|e| io_error(self.addr, e))?;
        } else {
            self.out_ready.notify_one();
        }
        match rx.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(io_error(self.addr, e)),
            Err(_) => Err(io_error(self.addr, "the connection's reader ended")),
        }
    }

    fn close(&self) {
        self.reader.abort();
        self.writer.abort();
        self.waiting.lock().expect("waiters").end("closed".into());
    }
}

impl Drop for RawCaller {
    fn drop(&mut self) {
        // The last clone ends the reader and the writer (which hold the
        // halves).
        if Arc::strong_count(&self.reader) == 1 {
            self.reader.abort();
            self.writer.abort();
        }
    }
}

/// Raw connections to one raw server, each call a frame of `size` body
/// bytes (echoed, or acknowledged by a header), opened as a loop needs
/// more of them and kept for the next.
#[derive(Debug)]
pub struct RawCallers {
    addr: SocketAddr,
    opts: SocketOpts,
    size: usize,
    echo: bool,
    open: Vec<RawCaller>,
}

impl RawCallers {
    pub fn new(addr: SocketAddr, opts: SocketOpts, size: usize, echo: bool) -> RawCallers {
        RawCallers {
            addr,
            opts,
            size,
            echo,
            open: Vec::new(),
        }
    }

    /// The first `n` connections, opening those not open yet; or which
    /// one could not be opened, and why.
    pub async fn first(&mut self, n: usize) -> Result<&[RawCaller], String> {
        while self.open.len() < n {
            let c = RawCaller::connect(self.addr, self.opts, self.size, self.echo)
                .await
                .map_err(|e| format!("raw-TCP connection {} of {n}: {e}", self.open.len() + 1))?;
            self.open.push(c);
        }
        Ok(&self.open[..n])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_frames_are_answered_and_a_partial_one_waits() {
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&header(Kind::Echo, 3));
        buf.extend_from_slice(b"abc");
        buf.extend_from_slice(&header(Kind::Ack, 2));
        buf.extend_from_slice(b"xy");
        buf.extend_from_slice(&header(Kind::Sink, 1));
        buf.extend_from_slice(b"s");
        buf.extend_from_slice(&header(Kind::Echo, 4));
        buf.extend_from_slice(b"pa");
        let mut out = Vec::new();
        answer(&mut buf, &mut out).unwrap();
        let mut want = header(Kind::Echo, 3).to_vec();
        want.extend_from_slice(b"abc");
        want.extend_from_slice(&header(Kind::Ack, 0));
        assert_eq!(out, want);
        // The partial echo stays, whole header and all.
        assert_eq!(buf.len(), HEADER + 2);
    }

    #[test]
    fn a_length_beyond_the_limit_is_refused_before_anything_is_read() {
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&header(Kind::Echo, 0)[..8]);
        buf.extend_from_slice(&((MAX_BODY as u32) + 1).to_le_bytes());
        let e = answer(&mut buf, &mut Vec::new()).unwrap_err();
        assert!(e.contains("exceeds"), "{e}");
        let mut bad = BytesMut::from(&b"GIOP\x01\x02\x00\x00\x00\x00\x00\x00"[..]);
        assert!(answer(&mut bad, &mut Vec::new())
            .unwrap_err()
            .contains("magic"));
    }

    /// Many calls at once on one connection complete, each by its own
    /// reply, and a stopped server fails the next call instead of hanging.
    #[test]
    fn overlapping_calls_on_one_connection_each_get_their_reply() {
        let srv = RawReactor::start(None, SocketOpts::default()).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let c = RawCaller::connect(srv.addr(), SocketOpts::default(), 100, true)
                .await
                .unwrap();
            let calls: Vec<_> = (0..64)
                .map(|_| {
                    let c = c.clone();
                    tokio::spawn(async move { c.invoke().await })
                })
                .collect();
            for t in calls {
                tokio::time::timeout(std::time::Duration::from_secs(10), t)
                    .await
                    .expect("a reply within 10 s")
                    .unwrap()
                    .unwrap();
            }
            assert!(c.waiting.lock().unwrap().calls.is_empty());
            let ack = RawCaller::connect(srv.addr(), SocketOpts::default(), 1, false)
                .await
                .unwrap();
            ack.invoke().await.unwrap();
            drop(srv);
            let r = tokio::time::timeout(std::time::Duration::from_secs(10), ack.invoke())
                .await
                .expect("a stopped server fails the call within 10 s");
            assert!(r.is_err());
        });
    }
}
