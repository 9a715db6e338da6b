//! Which local process listens on a TCP port (from /proc/net/tcp{,6} and
//! the processes' file descriptors): a benchmark against a vendor server
//! on this machine counts that server's CPU time as the server's, not as
//! background noise, and watches where its threads run.

use std::path::Path;

/// TCP segments carrying new data that this machine has sent so far
/// (`TcpExt: TCPOrigDataSent` of /proc/net/netstat); `None` where the
/// kernel does not say. Over a run in which nothing else sends, the
/// difference is the run's.
pub fn data_segments_sent() -> Option<u64> {
    parse_orig_data_sent(&std::fs::read_to_string("/proc/net/netstat").ok()?)
}

/// `TCPOrigDataSent` from the text of /proc/net/netstat (a `TcpExt:`
/// line of names, then one of values).
pub fn parse_orig_data_sent(text: &str) -> Option<u64> {
    let mut lines = text.lines().filter(|l| l.starts_with("TcpExt:"));
    let names = lines.next()?.split_whitespace();
    let values = lines.next()?.split_whitespace();
    names
        .zip(values)
        .find(|(n, _)| *n == "TCPOrigDataSent")
        .and_then(|(_, v)| v.parse().ok())
}

/// The socket inodes listening on `port` (any local address).
fn listening_inodes(port: u16) -> Vec<u64> {
    let mut out = Vec::new();
    for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(f) {
            out.extend(parse_listeners(&text, port));
        }
    }
    out
}

/// From the text of /proc/net/tcp: inodes of sockets in LISTEN (state
/// 0A) whose local port is `port`.
pub fn parse_listeners(text: &str, port: u16) -> Vec<u64> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let local = f.get(1)?;
            let p = u16::from_str_radix(local.rsplit(':').next()?, 16).ok()?;
            (p == port && *f.get(3)? == "0A")
                .then(|| f.get(9)?.parse().ok())
                .flatten()
        })
        .collect()
}

/// Processes (other than this one) holding a socket that listens on
/// `port`, found by scanning /proc/*/fd; empty when none is visible.
pub fn listening_pids(port: u16) -> Vec<u32> {
    let inodes = listening_inodes(port);
    if inodes.is_empty() {
        return Vec::new();
    }
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    let me = std::process::id();
    let mut pids = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        if holds_any(&e.path().join("fd"), &wanted) {
            pids.push(pid);
        }
    }
    pids
}

fn holds_any(fd_dir: &Path, wanted: &[String]) -> bool {
    let Ok(fds) = std::fs::read_dir(fd_dir) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path())
            .ok()
            .and_then(|t| t.to_str().map(|s| wanted.iter().any(|w| w == s)))
            .unwrap_or(false)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orig_data_sent_is_read_by_name() {
        let text = "TcpExt: SyncookiesSent TCPOrigDataSent TCPHystartTrainDetect\n\
                    TcpExt: 0 12345 7\nIpExt: InNoRoutes\nIpExt: 0\n";
        assert_eq!(parse_orig_data_sent(text), Some(12345));
        assert_eq!(parse_orig_data_sent("IpExt: a\nIpExt: 1\n"), None);
    }

    #[test]
    fn parses_listeners() {
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:0AF9 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 12345 1 0000000000000000 100 0 0 10 0\n\
   1: 0100007F:0AF9 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 23456 1 0000000000000000 20 4 30 10 -1\n\
   2: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 999 1 0000000000000000 100 0 0 10 0\n";
        assert_eq!(parse_listeners(text, 2809), vec![12345]);
        assert_eq!(parse_listeners(text, 22), vec![999]);
        assert!(parse_listeners(text, 80).is_empty());
    }

    #[test]
    fn finds_a_child_listening() {
        // A child process listening on a port we pick: python3 is on every
        // machine this project supports.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let mut child = std::process::Command::new("python3")
            .args([
                "-c",
                &format!(
                    "import socket,time\ns=socket.socket()\ns.bind(('127.0.0.1',{port}))\ns.listen()\nprint('up',flush=True)\ntime.sleep(5)"
                ),
            ])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let pids = listening_pids(port);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(pids, vec![child.id()]);
    }
}
