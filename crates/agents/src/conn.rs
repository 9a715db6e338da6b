//! One protocol connection over a blocking TCP stream: whole messages out,
//! whole messages in before a deadline. The thin I/O under [`crate::wire`].

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::wire::{self, WireError};

/// Why no message came.
#[derive(Debug, thiserror::Error)]
pub enum ConnError {
    #[error("connection closed by the peer")]
    Closed,
    #[error("no message before the deadline")]
    TimedOut,
    #[error("{0}")]
    Wire(#[from] WireError),
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// A stream and the bytes read from it but not yet decoded.
#[derive(Debug)]
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    pub fn new(stream: TcpStream) -> io::Result<Conn> {
        stream.set_nonblocking(false)?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            stream,
            buf: Vec::new(),
        })
    }

    /// The peer's address, for messages.
    pub fn peer(&self) -> String {
        self.stream
            .peer_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| "?".into())
    }

    pub fn send<T: Serialize>(&mut self, msg: &T) -> io::Result<()> {
        let mut out = Vec::new();
        wire::encode(msg, &mut out);
        self.stream.write_all(&out)
    }

    /// The next message, waiting at most until `deadline`.
    pub fn recv<T: for<'de> Deserialize<'de>>(
        &mut self,
        deadline: Instant,
    ) -> Result<T, ConnError> {
        let mut chunk = [0u8; 64 * 1024];
        loop {
            if let Some(m) = wire::decode(&mut self.buf)? {
                return Ok(m);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ConnError::TimedOut);
            }
            self.stream.set_read_timeout(Some(left))?;
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(ConnError::Closed),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(ConnError::TimedOut)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
                    return Err(ConnError::Closed)
                }
                Err(e) => return Err(ConnError::Io(e)),
            }
        }
    }
}
