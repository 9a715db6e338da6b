//! The exporter: a small HTTP/1.1 server on threads of its own that
//! answers `GET /metrics` (and `HEAD`) with a [`Registry`]'s scrape, in
//! the format the `Accept` header asks for. Nothing else is served: other
//! paths get 404, other methods 405, a request with a body 400.
//!
//! Bounded everywhere: a request head of at most [`MAX_HEAD`] bytes that
//! must arrive within [`HEAD_TIMEOUT`] of its first byte, an idle
//! keep-alive connection closed after [`IDLE_TIMEOUT`], at most
//! [`MAX_CONNECTIONS`] connections at once (more are answered 503 and
//! closed), writes that give up after [`WRITE_TIMEOUT`]. Connections
//! stay open between requests (HTTP/1.1 keep-alive, as Prometheus
//! scrapes) unless the client says `Connection: close` or speaks
//! HTTP/1.0 without keep-alive.
//!
//! Its threads are named [`THREAD_NAME`] (the run's thread watch leaves
//! them out of the observed placement, as its own sampler) and move to
//! the CPUs [`Registry::place_exporter`] names before each request.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::exposition::negotiate;
use super::Registry;

/// The name of the exporter's threads.
pub const THREAD_NAME: &str = crate::noise::EXPORTER_NAME;
/// Largest request head (request line and headers) read.
pub const MAX_HEAD: usize = 8 * 1024;
/// A request head must be whole this long after its first byte.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// An idle connection is closed after this long without a request.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// A response that cannot be written within this long is dropped.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 8;

/// The open connections, to close them at stop.
#[derive(Debug, Default)]
struct Open {
    next: u64,
    conns: Vec<(u64, TcpStream, JoinHandle<()>)>,
}

#[derive(Debug)]
struct Shared {
    registry: Arc<Registry>,
    stop: AtomicBool,
    open: Mutex<Open>,
}

/// A running exporter; [`stop`](Exporter::stop) (or drop) ends it.
#[derive(Debug)]
pub struct Exporter {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl Exporter {
    /// Listen on `listen` (`host:port`; port 0 picks a free one) and
    /// serve `registry` until stopped.
    pub fn start(listen: &str, registry: Arc<Registry>) -> std::io::Result<Exporter> {
        let listener = TcpListener::bind(listen)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            registry,
            stop: AtomicBool::new(false),
            open: Mutex::new(Open::default()),
        });
        let s = shared.clone();
        let accept = std::thread::Builder::new()
            .name(THREAD_NAME.into())
            .spawn(move || accept_loop(listener, s))?;
        Ok(Exporter {
            addr,
            shared,
            accept: Some(accept),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL a scraper reads (`http://127.0.0.1:9464/metrics`).
    pub fn url(&self) -> String {
        format!("http://{}/metrics", self.addr)
    }

    /// Stop accepting, close every connection, join the threads.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let Some(accept) = self.accept.take() else {
            return;
        };
        self.shared.stop.store(true, Ordering::Release);
        // Wake the accept loop with a connection of our own.
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
        let _ = accept.join();
        let open = std::mem::take(&mut *lock(&self.shared.open));
        for (_, stream, _) in &open.conns {
            let _ = stream.shutdown(Shutdown::Both);
        }
        for (_, _, t) in open.conns {
            let _ = t.join();
        }
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Move this thread where the registry says, if that changed.
fn follow_placement(reg: &Registry, seen: &mut u64) {
    if let Some(cpus) = reg.exporter_cpus_since(seen) {
        let cpus = if cpus.is_empty() {
            crate::placement::process_cpus()
        } else {
            cpus
        };
        // Not allowed there (a cpuset without them): stay.
        let _ = crate::sysinfo::pin_current_thread(&cpus);
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut seen = 0;
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        let Ok(stream) = stream else {
            // Out of descriptors and the like: let it pass.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        follow_placement(&shared.registry, &mut seen);
        let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
        let _ = stream.set_nodelay(true);
        let mut open = lock(&shared.open);
        // Forget the connections that ended.
        open.conns.retain(|(_, _, t)| !t.is_finished());
        if open.conns.len() >= MAX_CONNECTIONS {
            drop(open);
            let mut s = stream;
            let body = b"too many connections\n";
            let _ = s.write_all(&response(
                503,
                "Service Unavailable",
                PLAIN,
                body,
                false,
                true,
            ));
            // Without waiting: whatever the client sent is dropped.
            let _ = s.set_nonblocking(true);
            close(s);
            continue;
        }
        let Ok(clone) = stream.try_clone() else {
            continue;
        };
        let id = open.next;
        open.next += 1;
        let s = shared.clone();
        let spawned = std::thread::Builder::new()
            .name(THREAD_NAME.into())
            .spawn(move || serve_connection(stream, &s));
        if let Ok(t) = spawned {
            open.conns.push((id, clone, t));
        }
    }
}

/// One parsed request head.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    method: String,
    path: String,
    /// Whether the connection stays open after the response.
    keep_alive: bool,
    accept: Option<String>,
    /// A body was announced (we take none).
    has_body: bool,
}

/// Parse a request head (without its final blank line).
fn parse_head(head: &str) -> Option<Request> {
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, target, version) = (first.next()?, first.next()?, first.next()?);
    if first.next().is_some() || !version.starts_with("HTTP/1.") {
        return None;
    }
    let mut keep_alive = version != "HTTP/1.0";
    let (mut accept, mut has_body) = (None, false);
    for l in lines {
        let (k, v) = l.split_once(':')?;
        let v = v.trim();
        match k.trim().to_ascii_lowercase().as_str() {
            "connection" => {
                let tokens = v.split(',').map(|t| t.trim().to_ascii_lowercase());
                for t in tokens {
                    match t.as_str() {
                        "close" => keep_alive = false,
                        "keep-alive" => keep_alive = true,
                        _ => {}
                    }
                }
            }
            "accept" => accept = Some(v.to_string()),
            "content-length" => has_body |= v != "0",
            "transfer-encoding" => has_body = true,
            _ => {}
        }
    }
    let path = target.split('?').next().unwrap_or("").to_string();
    Some(Request {
        method: method.to_string(),
        path,
        keep_alive,
        accept,
        has_body,
    })
}

/// Read one request head into `buf` (which may already hold bytes of
/// it); returns the head's length, or `None` when the connection ended,
/// idled out, or sent a head too large or too slow.
fn read_head(stream: &mut TcpStream, buf: &mut Vec<u8>, shared: &Shared) -> Option<usize> {
    let mut started: Option<Instant> = (!buf.is_empty()).then(Instant::now);
    let mut chunk = [0u8; 1024];
    loop {
        let end = buf.windows(4).position(|w| w == b"\r\n\r\n");
        if buf.len() > MAX_HEAD && end.is_none_or(|e| e > MAX_HEAD) {
            return None;
        }
        if let Some(end) = end {
            return Some(end);
        }
        if shared.stop.load(Ordering::Acquire) {
            return None;
        }
        let wait = match started {
            None => IDLE_TIMEOUT,
            Some(t) => HEAD_TIMEOUT.checked_sub(t.elapsed())?,
        };
        stream
            .set_read_timeout(Some(wait.max(Duration::from_millis(1))))
            .ok()?;
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => {
                started.get_or_insert_with(Instant::now);
                buf.extend_from_slice(&chunk[..n]);
            }
        }
    }
}

fn serve_connection(mut stream: TcpStream, shared: &Shared) {
    let mut seen = 0;
    let mut buf = Vec::with_capacity(1024);
    loop {
        let Some(end) = read_head(&mut stream, &mut buf, shared) else {
            if buf.len() > MAX_HEAD {
                let body = b"request head too large\n";
                let r = response(
                    431,
                    "Request Header Fields Too Large",
                    PLAIN,
                    body,
                    false,
                    true,
                );
                let _ = stream.write_all(&r);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
                close(stream);
            }
            return;
        };
        follow_placement(&shared.registry, &mut seen);
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        buf.drain(..end + 4);
        let (bytes, keep) = answer(parse_head(&head), &shared.registry);
        if stream.write_all(&bytes).is_err() || !keep {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
            close(stream);
            return;
        }
    }
}

/// Close after the response: our side first, then what the client still
/// sends is read and dropped (at most 64 KiB, within the stream's read
/// timeout), so that unread bytes do not make the kernel reset the
/// connection before the client has read the response.
fn close(mut stream: TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
    let mut sink = [0u8; 4096];
    for _ in 0..16 {
        match stream.read(&mut sink) {
            Ok(n) if n > 0 => {}
            _ => break,
        }
    }
}

const PLAIN: &str = "text/plain; charset=utf-8";

/// The response to a request (or to an unparsable head: `None`), and
/// whether the connection stays open.
fn answer(req: Option<Request>, registry: &Registry) -> (Vec<u8>, bool) {
    let plain = PLAIN;
    let Some(req) = req else {
        return (
            response(400, "Bad Request", plain, b"bad request\n", false, true),
            false,
        );
    };
    if req.has_body {
        return (
            response(
                400,
                "Bad Request",
                plain,
                b"no request body is taken\n",
                false,
                true,
            ),
            false,
        );
    }
    let keep = req.keep_alive;
    let head_only = req.method == "HEAD";
    let r = match (req.path.as_str(), req.method.as_str()) {
        ("/metrics", "GET" | "HEAD") => {
            let format = negotiate(req.accept.as_deref());
            let body = registry.render(format);
            response(
                200,
                "OK",
                format.content_type(),
                body.as_bytes(),
                head_only,
                !keep,
            )
        }
        ("/metrics", _) => {
            let mut r = response(
                405,
                "Method Not Allowed",
                plain,
                b"GET or HEAD\n",
                head_only,
                !keep,
            );
            // Before the blank line: an Allow header.
            let at = r.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(0);
            r.splice(at..at, b"\r\nAllow: GET, HEAD".iter().copied());
            r
        }
        _ => response(
            404,
            "Not Found",
            plain,
            b"not found: the metrics are at /metrics\n",
            head_only,
            !keep,
        ),
    };
    (r, keep)
}

/// An HTTP/1.1 response with a body of `body` (left out for HEAD, its
/// length still given).
fn response(
    code: u16,
    reason: &str,
    content_type: &str,
    body: &[u8],
    head_only: bool,
    close: bool,
) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{}\r\n",
        body.len(),
        if close { "Connection: close\r\n" } else { "" }
    )
    .into_bytes();
    if !head_only {
        r.extend_from_slice(body);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::CaseLabels;

    #[test]
    fn heads_parse_into_method_path_and_connection() {
        let r = parse_head("GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept: text/plain").unwrap();
        assert_eq!(
            r,
            Request {
                method: "GET".into(),
                path: "/metrics".into(),
                keep_alive: true,
                accept: Some("text/plain".into()),
                has_body: false,
            }
        );
        assert!(
            !parse_head("GET / HTTP/1.1\r\nConnection: Close")
                .unwrap()
                .keep_alive
        );
        assert!(!parse_head("GET / HTTP/1.0").unwrap().keep_alive);
        assert!(
            parse_head("GET / HTTP/1.0\r\nConnection: keep-alive")
                .unwrap()
                .keep_alive
        );
        assert!(
            parse_head("POST /metrics HTTP/1.1\r\nContent-Length: 3")
                .unwrap()
                .has_body
        );
        assert!(parse_head("GET /metrics HTTP/2.0").is_none());
        assert!(parse_head("GET /metrics").is_none());
        assert!(parse_head("GET /metrics HTTP/1.1\r\nno colon").is_none());
    }

    fn exchange(s: &mut TcpStream, req: &str) -> String {
        s.write_all(req.as_bytes()).unwrap();
        // One response: the head, then Content-Length bytes (none for HEAD).
        let mut got = Vec::new();
        let mut byte = [0u8; 1];
        while !got.ends_with(b"\r\n\r\n") {
            assert_eq!(
                s.read(&mut byte).unwrap(),
                1,
                "{}",
                String::from_utf8_lossy(&got)
            );
            got.push(byte[0]);
        }
        let head = String::from_utf8(got).unwrap();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let mut body = vec![0u8; if req.starts_with("HEAD") { 0 } else { len }];
        s.read_exact(&mut body).unwrap();
        head + &String::from_utf8(body).unwrap()
    }

    #[test]
    fn it_serves_scrapes_on_one_connection_and_refuses_the_rest() {
        let reg = Registry::new();
        reg.case(CaseLabels {
            bench: "latency".into(),
            case: "ping".into(),
            target: "embedded".into(),
        })
        .call(2_000);
        let ex = Exporter::start("127.0.0.1:0", reg.clone()).unwrap();
        let mut s = TcpStream::connect(ex.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let text = exchange(&mut s, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(
            text.starts_with(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("\r\n\r\n# HELP iiopbench_calls_total "),
            "{text}"
        );
        assert!(
            text.contains(
                "\niiopbench_calls_total{bench=\"latency\",case=\"ping\",target=\"embedded\"} 1\n"
            ),
            "{text}"
        );
        // The same connection again: OpenMetrics on request, with what was
        // recorded in between.
        reg.case(CaseLabels {
            bench: "latency".into(),
            case: "ping".into(),
            target: "embedded".into(),
        })
        .call(2_000);
        let open = exchange(
            &mut s,
            "GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text; version=1.0.0\r\n\r\n",
        );
        assert!(
            open.contains(
                "Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n"
            ),
            "{open}"
        );
        assert!(
            open.contains(
                "\niiopbench_calls_total{bench=\"latency\",case=\"ping\",target=\"embedded\"} 2\n"
            ),
            "{open}"
        );
        assert!(open.ends_with("# EOF\n"), "{open}");
        // HEAD: the length of the body, no body.
        let head = exchange(&mut s, "HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(
            head.starts_with("HTTP/1.1 200 OK\r\n") && head.ends_with("\r\n\r\n"),
            "{head}"
        );
        let not_found = exchange(&mut s, "GET /other HTTP/1.1\r\n\r\n");
        assert!(
            not_found.starts_with("HTTP/1.1 404 Not Found\r\n"),
            "{not_found}"
        );
        let post = exchange(&mut s, "DELETE /metrics HTTP/1.1\r\n\r\n");
        assert!(
            post.starts_with("HTTP/1.1 405 Method Not Allowed\r\n")
                && post.contains("\r\nAllow: GET, HEAD\r\n"),
            "{post}"
        );
        // Connection: close is honoured: the response, then the end.
        let last = exchange(&mut s, "GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
        assert!(last.contains("\r\nConnection: close\r\n"), "{last}");
        let mut rest = Vec::new();
        assert_eq!(s.read_to_end(&mut rest).unwrap(), 0);
        // A head larger than the limit: 431 and the end.
        let mut big = TcpStream::connect(ex.addr()).unwrap();
        big.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let huge = format!(
            "GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n",
            "a".repeat(MAX_HEAD)
        );
        let _ = big.write_all(huge.as_bytes());
        let mut answer = String::new();
        let _ = big.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 431 "), "{answer}");
        // A body is refused.
        let mut b = TcpStream::connect(ex.addr()).unwrap();
        b.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let bad = exchange(
            &mut b,
            "POST /metrics HTTP/1.1\r\nContent-Length: 2\r\n\r\nab",
        );
        assert!(bad.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{bad}");
        ex.stop();
    }

    #[test]
    fn stop_ends_idle_keep_alive_connections_at_once() {
        let ex = Exporter::start("127.0.0.1:0", Registry::new()).unwrap();
        let mut idle: Vec<TcpStream> = (0..3)
            .map(|_| TcpStream::connect(ex.addr()).unwrap())
            .collect();
        // Each is being served (a request answered) before the stop.
        for s in &mut idle {
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            exchange(s, "GET /metrics HTTP/1.1\r\n\r\n");
        }
        let t = Instant::now();
        ex.stop();
        assert!(t.elapsed() < IDLE_TIMEOUT / 2, "{:?}", t.elapsed());
        for mut s in idle {
            let mut rest = Vec::new();
            assert_eq!(s.read_to_end(&mut rest).map(|_| rest.len()).unwrap_or(0), 0);
        }
    }

    #[test]
    fn connections_past_the_limit_get_503() {
        let ex = Exporter::start("127.0.0.1:0", Registry::new()).unwrap();
        let mut held: Vec<TcpStream> = Vec::new();
        for _ in 0..MAX_CONNECTIONS {
            let mut s = TcpStream::connect(ex.addr()).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            exchange(&mut s, "GET /metrics HTTP/1.1\r\n\r\n");
            held.push(s);
        }
        let mut over = TcpStream::connect(ex.addr()).unwrap();
        over.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut answer = String::new();
        let _ = over.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
        // One closes: the next is served.
        drop(held.pop());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let mut s = TcpStream::connect(ex.addr()).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
            let mut r = String::new();
            let _ = s.read_to_string(&mut r);
            if r.starts_with("HTTP/1.1 200 ") {
                break;
            }
            assert!(Instant::now() < deadline, "{r}");
            std::thread::sleep(Duration::from_millis(20));
        }
        ex.stop();
    }
}
