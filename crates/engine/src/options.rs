//! The options every benchmark shares, as plain values: where client and
//! server run ([`PlacementOpts`]), socket options ([`Sockets`]) and size
//! sweeps ([`Sizes`]). The command line converts its flags into these;
//! a harness builds them directly (all have a `Default` equal to the
//! command line's defaults).

/// Where the client and an embedded server run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlacementOpts {
    /// How to place client and embedded server when no CPU list is given.
    pub pin: Pin,
    /// Pin the client to these CPUs (taskset syntax, e.g. `0` or `0-1`);
    /// overrides `pin`.
    pub client_cpus: Option<String>,
    /// Pin the embedded server to these CPUs; overrides `pin`. With a
    /// target given, where that server runs: recorded, and what
    /// [`WaitStrategy::Auto`](crate::target::WaitStrategy::Auto) decides by.
    pub server_cpus: Option<String>,
    /// Measure every case as N independent runs, interleaved across cases;
    /// `None`: [`default_runs`](crate::bench::session::default_runs) of the
    /// benchmark.
    pub runs: Option<u32>,
}

/// Placement of client and embedded server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Pin {
    /// When the run starts the server, client and server on two different
    /// CPUs where there are two, else both on one; a client facing a server
    /// it did not start is left where the kernel puts it.
    #[default]
    Auto,
    /// Wherever the kernel puts them.
    None,
    /// Both on the first available CPU.
    Same,
    /// Client on the first available CPU, server on the second.
    Cross,
}

/// Socket options, applied the same way to both ends we control.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sockets {
    /// TCP_NODELAY (Nagle off) on every connection.
    pub nodelay: bool,
    /// SO_SNDBUF in bytes; kernel default when `None`.
    pub sndbuf: Option<u64>,
    /// SO_RCVBUF in bytes; kernel default when `None`.
    pub rcvbuf: Option<u64>,
}

impl Default for Sockets {
    fn default() -> Self {
        Sockets {
            nodelay: true,
            sndbuf: None,
            rcvbuf: None,
        }
    }
}

impl Sockets {
    /// SO_SNDBUF and SO_RCVBUF as GIOP client and server settings take
    /// them (u32, larger values clamped: the kernel caps them far lower).
    pub fn buffers_u32(&self) -> (Option<u32>, Option<u32>) {
        let clamp = |v: u64| v.min(u32::MAX as u64) as u32;
        (self.sndbuf.map(clamp), self.rcvbuf.map(clamp))
    }

    /// As raw-TCP socket options.
    pub fn raw(&self) -> crate::rawtcp::SocketOpts {
        crate::rawtcp::SocketOpts {
            nodelay: self.nodelay,
            sndbuf: self.sndbuf.map(|v| v as usize),
            rcvbuf: self.rcvbuf.map(|v| v as usize),
        }
    }
}

/// A list of payload sizes (a sweep).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sizes(pub Vec<u64>);

impl std::str::FromStr for Sizes {
    type Err = crate::units::ParseError;

    /// A size, a comma list or a sweep (`1KiB..128KiB`), as
    /// [`parse_sizes`](crate::units::parse_sizes) reads them.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        crate::units::parse_sizes(s).map(Sizes)
    }
}
