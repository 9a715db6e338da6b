//! Client and server settings: what the pure state machines read (built
//! here as a [`ConnConfig`] / [`ServerConnConfig`]) beside what only the
//! drivers need: socket options, TLS, the connection pool, connection
//! counts, and how a caller waits for its reply.

use std::sync::Arc;
use std::time::Duration;

use iiop_cdr::ByteOrder;
use iiop_giop::codec::CodecConfig;
use iiop_giop::conn::client::{ConnConfig, DEFAULT_SPLICE_CUTOFF};
use iiop_giop::conn::endpoint::TlsWanted;
use iiop_giop::conn::server::{Handler, ServerConnConfig, ServerPhases};
use iiop_giop::header::Version;

/// A client's settings: the protocol's choices, which the state machine
/// reads ([`conn`](ClientConfig::conn)), and the drivers' own (sockets,
/// TLS, the pool, how a caller waits).
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// GIOP version to speak; `None` uses the IOR profile's version (which
    /// is 1.0 for a corbaloc without `1.2@`, as every ORB does).
    pub version: Option<Version>,
    /// Byte order of our messages.
    pub order: ByteOrder,
    /// TCP_NODELAY (on by default: request/reply traffic).
    pub nodelay: bool,
    /// SO_SNDBUF, if set.
    pub send_buffer: Option<u32>,
    /// SO_RCVBUF, if set.
    pub recv_buffer: Option<u32>,
    pub connect_timeout: Duration,
    /// Default per-request timeout (`None`: wait forever).
    pub request_timeout: Option<Duration>,
    /// Most LOCATION_FORWARD / OBJECT_FORWARD hops followed per call.
    pub max_forwards: u32,
    /// Limits on incoming messages.
    pub codec: CodecConfig,
    /// Fragment outgoing GIOP 1.2 messages longer than this.
    pub fragment_size: Option<usize>,
    /// Connections per endpoint in a [`Client`]'s pool (round robin).
    /// Oneways keep their order only within one connection.
    ///
    /// [`Client`]: crate::Client
    pub pool_size: usize,
    /// When a request is the only one in flight and nothing is queued,
    /// write it from the calling task instead of waking the writer task.
    pub direct_write: bool,
    /// Write requests at least this long in two parts, headers first
    /// ([`head_first_for`](iiop_giop::conn::out::head_first_for); oneways only from 96 KiB on); `None` writes
    /// each message with one call.
    pub head_first: Option<usize>,
    /// Time each twoway call's phases
    /// ([`PhaseTotals`](crate::PhaseTotals)): a few clock reads
    /// per call, so off by default.
    pub phase_timing: bool,
    /// Send shared byte runs at least this long (octet/char sequences in
    /// request bodies, prepared message bodies) by reference with vectored
    /// writes instead of copying them into the output buffer; `None`
    /// always copies.
    pub splice_cutoff: Option<usize>,
    /// Wait-on-read connections only ([`BlockingConnection`]): before a
    /// reply read or a send would block, poll the socket without blocking,
    /// yielding the CPU between polls, for up to this long
    /// ([`Spin`](crate::socket::Spin)). The caller's CPU stays
    /// busy while it waits; a reply is picked up the moment it lands and a
    /// full send buffer refilled the moment there is room, without the
    /// wake-up of a sleeping thread. `None` blocks at once.
    ///
    /// [`BlockingConnection`]: crate::BlockingConnection
    pub spin: Option<Duration>,
    /// Which connections go over TLS, with which settings
    /// ([`endpoint_for`](iiop_giop::conn::endpoint::endpoint_for) decides).
    pub tls: TlsMode,
    /// Buffer oneways (CORBA Messaging's `SYNC_NONE` with a
    /// `BUFFER_MESSAGE_BYTES` constraint, as TAO offers it): a oneway
    /// stays queued while fewer than this many bytes are, and the queue
    /// is written, in one vectored call where it can be, by the oneway
    /// that fills it, by the next request that expects an answer, or when
    /// the connection closes. There is no flush timer: a caller that
    /// stops sending oneways must make a twoway call or close the
    /// connection. `None` (the default, `SYNC_WITH_TRANSPORT`, what
    /// omniORB and TAO do by default) writes each oneway when it is made.
    pub oneway_buffer: Option<usize>,
    /// Let the kernel join oneways (Nagle's algorithm while only oneways
    /// go out): each oneway is still written when it is made
    /// (`SYNC_WITH_TRANSPORT`), but with TCP_NODELAY off, so while earlier
    /// bytes wait for their ACK the next ones join them into full
    /// segments; a request that expects an answer turns TCP_NODELAY back
    /// on before it is written, which pushes everything queued at once
    /// (no Nagle wait behind it, unlike `nodelay: false`, whose answer
    /// can wait for a delayed ACK). Only with `nodelay` on, and only for
    /// oneways shorter than a TCP segment (a longer one gains nothing and
    /// its tail would wait for an ACK: 128 KiB oneways on loopback ran at
    /// 0.73-0.82x). Both drivers honour it for every oneway: the
    /// runtime's also when its writer task writes a batch of oneways that
    /// callers queued while it was busy, and pushes any batch with
    /// something answered in it.
    pub coalesce_oneways: bool,
    /// Offer every connection for callbacks (bidirectional GIOP, GIOP 1.2
    /// only) and serve this object on it: the core puts a BI_DIR_IIOP
    /// context naming the connection's local address on every request
    /// ([`ClientSetup::offer_callbacks`](iiop_giop::conn::client::ClientSetup::offer_callbacks)),
    /// and both drivers answer the server's Requests and LocateRequests
    /// over the connection with it, on the connection itself (no socket
    /// listens). `None`: a Request from the server is its protocol error.
    pub callbacks: Option<Callbacks>,
}

/// The servant a client serves to the servers it calls, over its own
/// connections ([`ClientConfig::callbacks`]). A reference to it is the
/// connection's [`ClientSetup::callback_reference`](iiop_giop::conn::client::ClientSetup::callback_reference).
#[derive(Clone)]
pub struct Callbacks(pub Arc<dyn Handler>);

impl std::fmt::Debug for Callbacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Callbacks(..)")
    }
}

/// Whether and where a client uses TLS: no settings, settings used where
/// a reference offers TLS, or settings used on every connection. (`--tls`
/// without settings cannot be said.)
#[derive(Debug, Clone, Default)]
pub enum TlsMode {
    /// No TLS settings: plain TCP, and a reference that accepts only TLS
    /// is an error before connecting.
    #[default]
    Off,
    /// TLS (CA, client certificate) wherever a profile offers it.
    Offered(Arc<rustls::ClientConfig>),
    /// TLS on every connection, also where the reference does not offer
    /// it (`--tls`, for `corbaloc:iiop:` references).
    Always(Arc<rustls::ClientConfig>),
}

impl TlsMode {
    /// The settings, if any.
    pub fn config(&self) -> Option<&Arc<rustls::ClientConfig>> {
        match self {
            TlsMode::Off => None,
            TlsMode::Offered(c) | TlsMode::Always(c) => Some(c),
        }
    }

    /// Whether every connection uses TLS.
    pub fn always(&self) -> bool {
        matches!(self, TlsMode::Always(_))
    }

    /// What the endpoint decision needs to know.
    pub fn wanted(&self) -> TlsWanted {
        match self {
            TlsMode::Off => TlsWanted::Off,
            TlsMode::Offered(_) => TlsWanted::Offered,
            TlsMode::Always(_) => TlsWanted::Always,
        }
    }

    /// The settings for a connection that must be TLS; without any, the
    /// reason both drivers give.
    pub fn for_connection(&self) -> Result<Arc<rustls::ClientConfig>, String> {
        self.config().cloned().ok_or_else(|| {
            "this client has no TLS settings (a CA to verify the server: --tls-ca)".to_string()
        })
    }
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            version: None,
            order: ByteOrder::NATIVE,
            nodelay: true,
            send_buffer: None,
            recv_buffer: None,
            connect_timeout: Duration::from_secs(5),
            request_timeout: None,
            max_forwards: 8,
            codec: CodecConfig::default(),
            fragment_size: None,
            pool_size: 1,
            direct_write: true,
            splice_cutoff: Some(DEFAULT_SPLICE_CUTOFF),
            head_first: Some(DEFAULT_SPLICE_CUTOFF),
            phase_timing: false,
            spin: None,
            tls: TlsMode::Off,
            oneway_buffer: None,
            coalesce_oneways: false,
            callbacks: None,
        }
    }
}

impl ClientConfig {
    /// What the connection state machine reads of these settings. Oneways
    /// are joined by the kernel only where TCP_NODELAY is otherwise on.
    pub fn conn(&self) -> ConnConfig {
        ConnConfig {
            version: self.version,
            order: self.order,
            request_timeout: self.request_timeout,
            max_forwards: self.max_forwards,
            codec: self.codec,
            fragment_size: self.fragment_size,
            head_first: self.head_first,
            splice_cutoff: self.splice_cutoff,
            oneway_buffer: self.oneway_buffer,
            coalesce_oneways: self.coalesce_oneways && self.nodelay,
            tls: self.tls.wanted(),
        }
    }
}

/// A server's settings: the connection state machine's part
/// ([`conn`](ServerConfig::conn)) and the drivers' own (sockets, TLS,
/// how many connections at once).
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Connections served at once; further accepts wait.
    pub max_connections: usize,
    /// Close a connection (with CloseConnection) after this long without
    /// a message and with nothing in flight.
    pub idle_timeout: Option<Duration>,
    /// A message whose first byte has arrived (and a fragmented message
    /// whose first fragment has) must be complete within this time, or the
    /// connection is closed (no MessageError: nothing was malformed).
    pub read_timeout: Option<Duration>,
    /// A TLS server's handshake must be over within this time, or the
    /// connection is closed and its slot freed (a client that stops
    /// mid-handshake holds nothing longer).
    pub handshake_timeout: Duration,
    /// Asynchronous handler calls running at once per connection.
    pub max_in_flight: usize,
    /// Limits on incoming messages (maximum message size).
    pub codec: CodecConfig,
    /// Fragment GIOP 1.2 replies longer than this.
    pub fragment_size: Option<usize>,
    /// TCP_NODELAY on accepted sockets.
    pub nodelay: bool,
    /// SO_SNDBUF of accepted sockets, if set.
    pub send_buffer: Option<u32>,
    /// SO_RCVBUF of accepted sockets, if set (applied to the listener as
    /// well, so that the window scale agreed at connect time allows it).
    pub recv_buffer: Option<u32>,
    /// Byte order of replies; `None` answers in the request's order.
    pub reply_order: Option<ByteOrder>,
    /// Time the server's phases into these totals (shared by every
    /// connection). `None`: no clock reads.
    pub phases: Option<Arc<ServerPhases>>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        let conn = ServerConnConfig::default();
        ServerConfig {
            max_connections: 1024,
            idle_timeout: conn.idle_timeout,
            read_timeout: conn.read_timeout,
            handshake_timeout: Duration::from_secs(10),
            max_in_flight: conn.max_in_flight,
            codec: conn.codec,
            fragment_size: conn.fragment_size,
            nodelay: true,
            send_buffer: None,
            recv_buffer: None,
            reply_order: conn.reply_order,
            phases: conn.phases,
        }
    }
}

impl ServerConfig {
    /// What the connection state machine reads of these settings.
    pub fn conn(&self) -> ServerConnConfig {
        ServerConnConfig {
            idle_timeout: self.idle_timeout,
            read_timeout: self.read_timeout,
            max_in_flight: self.max_in_flight,
            codec: self.codec,
            fragment_size: self.fragment_size,
            reply_order: self.reply_order,
            phases: self.phases.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oneways are joined by the kernel only where TCP_NODELAY is on
    /// otherwise: with Nagle on throughout there is nothing to switch.
    #[test]
    fn coalescing_needs_nodelay() {
        for (coalesce, nodelay, want) in [
            (true, true, true),
            (true, false, false),
            (false, true, false),
            (false, false, false),
        ] {
            let cfg = ClientConfig {
                coalesce_oneways: coalesce,
                nodelay,
                ..ClientConfig::default()
            };
            assert_eq!(cfg.conn().coalesce_oneways, want, "{coalesce} {nodelay}");
        }
    }
}
