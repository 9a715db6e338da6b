//! One connection of either driver ([`Link`]: the runtime's
//! [`Connection`] or a [`BlockingConnection`]), and the one loop that
//! drives a call over the routing core ([`iiop_giop::conn::route::Call`])
//! on the connections a [`Carriers`] gives it. The pooled
//! [`Client`](crate::Client) and the per-object [`Stub`](crate::stub::Stub)
//! both call it: neither writes a routing step of its own.
//!
//! The loop decides nothing: it sends what the core says, on the
//! connection the core's rules accept, and hands back what came. Which
//! connection that is, is the caller's: a pool, or a stub's own.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use iiop_cdr::{CdrError, Options, Writer};
use iiop_giop::conn::client::{ClientError, ClientSetup, Prepared};
use iiop_giop::conn::endpoint::Endpoint;
use iiop_giop::conn::route::{Answer, Call, Destination, Kind, Next, Progress};
use iiop_giop::message::{LocateReply, Reply, ResponseMode, TargetAddress};

use crate::blocking::BlockingConnection;
use crate::config::ClientConfig;
use crate::connection::{Connection, PhaseTotals};

/// How a connection's caller waits for its replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// On the tokio runtime ([`Connection`]): any number of calls in
    /// flight.
    Reactor,
    /// The calling thread blocks in `recv` ([`BlockingConnection`],
    /// wait-on-read): one call at a time; a caller that shares the thread
    /// with other tasks stalls them.
    Read,
}

/// One open connection, of either driver, with the endpoint it was opened
/// to (the routing rules compare it: [`Destination::carried_by`]).
#[derive(Debug, Clone)]
pub struct Link {
    endpoint: Endpoint,
    way: Way,
}

#[derive(Debug, Clone)]
enum Way {
    Reactor(Connection),
    Read(Arc<Blocking>),
}

/// A blocking connection shared by a stub's clones, and what it fixed
/// when it opened (read without its lock).
#[derive(Debug)]
struct Blocking {
    setup: ClientSetup,
    conn: Mutex<BlockingConnection>,
}

impl Link {
    /// A new connection for calls to `dest`, waiting as `wait` says (a
    /// blocking one checks `abort` while it waits).
    pub async fn open(
        dest: &Destination,
        cfg: &ClientConfig,
        wait: Wait,
        abort: Option<fn() -> bool>,
    ) -> Result<Link, ClientError> {
        let (ep, version, cs) = (&dest.endpoint, dest.version, dest.code_sets.as_ref());
        let way = match wait {
            Wait::Reactor => Way::Reactor(Connection::connect_to(ep, version, cfg, cs).await?),
            Wait::Read => {
                let mut b = BlockingConnection::connect_to(ep, version, cfg, cs)?;
                if let Some(a) = abort {
                    b.set_abort(a);
                }
                Way::Read(Arc::new(Blocking {
                    setup: b.setup().clone(),
                    conn: Mutex::new(b),
                }))
            }
        };
        Ok(Link {
            endpoint: ep.clone(),
            way,
        })
    }

    /// The runtime's connection `c`, opened to `endpoint`.
    pub fn reactor(endpoint: Endpoint, c: Connection) -> Link {
        Link {
            endpoint,
            way: Way::Reactor(c),
        }
    }

    /// Whether this connection is alive and can carry calls to `dest`
    /// (the core's rule).
    pub fn carries(&self, dest: &Destination) -> bool {
        dest.carried_by(&self.endpoint, self.setup()) && !self.is_closed()
    }

    /// Where it was opened to.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// What it fixed when it opened.
    #[inline]
    pub fn setup(&self) -> &ClientSetup {
        match &self.way {
            Way::Reactor(c) => c.setup(),
            Way::Read(b) => &b.setup,
        }
    }

    /// `host:port` of the peer.
    #[inline]
    pub fn addr(&self) -> &str {
        &self.setup().addr
    }

    /// The CDR options (negotiated code sets) replies read with.
    pub fn options(&self) -> Options {
        self.setup().wire.opts
    }

    /// The runtime's connection, if it is one.
    pub fn connection(&self) -> Option<&Connection> {
        match &self.way {
            Way::Reactor(c) => Some(c),
            Way::Read(_) => None,
        }
    }

    /// One request on this connection (nothing followed).
    #[inline]
    pub async fn request<F>(
        &self,
        target: &TargetAddress,
        op: &str,
        response: ResponseMode,
        body: &F,
    ) -> Result<Option<Reply>, ClientError>
    where
        F: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        match &self.way {
            Way::Reactor(c) => c.request(target, op, response, body).await,
            Way::Read(b) => lock(&b.conn).request(target, op, response, body),
        }
    }

    /// One request written from the calling thread, for a blocking
    /// connection only (`None` on the runtime's).
    pub fn request_now<F>(
        &self,
        target: &TargetAddress,
        op: &str,
        response: ResponseMode,
        body: &F,
    ) -> Option<Result<Option<Reply>, ClientError>>
    where
        F: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        match &self.way {
            Way::Reactor(_) => None,
            Way::Read(b) => Some(lock(&b.conn).request(target, op, response, body)),
        }
    }

    /// A prepared request on this connection.
    pub async fn send_prepared(&self, p: &Prepared) -> Result<Option<Reply>, ClientError> {
        match &self.way {
            Way::Reactor(c) => c.send_prepared(p).await,
            Way::Read(b) => lock(&b.conn).send_prepared(p),
        }
    }

    /// A LocateRequest on this connection.
    pub async fn locate(&self, target: &TargetAddress) -> Result<LocateReply, ClientError> {
        match &self.way {
            Way::Reactor(c) => c.locate(target).await,
            Way::Read(b) => lock(&b.conn).locate(target),
        }
    }

    /// Build a request once for [`send_prepared`](Self::send_prepared).
    pub fn prepare<F>(
        &self,
        target: &TargetAddress,
        op: &str,
        response: ResponseMode,
        body: F,
    ) -> Result<Prepared, ClientError>
    where
        F: FnOnce(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        Prepared::build(self.setup(), target, op, response, body)
    }

    /// Whether the connection has failed or was closed.
    pub fn is_closed(&self) -> bool {
        match &self.way {
            Way::Reactor(c) => c.is_closed(),
            Way::Read(b) => lock(&b.conn).is_closed(),
        }
    }

    /// Close the connection.
    pub fn close(&self) {
        match &self.way {
            Way::Reactor(c) => c.close(),
            Way::Read(b) => lock(&b.conn).close(),
        }
    }

    /// Have a blocking connection fail its call (and close) when `abort`
    /// returns true while it waits; no effect on the runtime's.
    pub fn set_abort(&self, abort: fn() -> bool) {
        if let Way::Read(b) = &self.way {
            lock(&b.conn).set_abort(abort);
        }
    }

    /// How long the TLS handshake took (`None`: plain TCP).
    pub fn tls_handshake(&self) -> Option<Duration> {
        match &self.way {
            Way::Reactor(c) => c.tls_handshake(),
            Way::Read(b) => lock(&b.conn).tls_handshake(),
        }
    }

    /// TCP segments with data sent so far (a blocking connection's;
    /// `None` on the runtime's, whose socket its task owns).
    pub fn data_segments_out(&self) -> Option<u32> {
        match &self.way {
            Way::Reactor(_) => None,
            Way::Read(b) => lock(&b.conn).data_segments_out(),
        }
    }

    /// Messages written headers-first so far (a blocking connection's;
    /// `None` on the runtime's).
    pub fn head_first_writes(&self) -> Option<u64> {
        match &self.way {
            Way::Reactor(_) => None,
            Way::Read(b) => Some(lock(&b.conn).head_first_writes()),
        }
    }

    /// The phase totals (only the runtime's connection with phase timing
    /// on counts them).
    pub fn phase_totals(&self) -> PhaseTotals {
        match &self.way {
            Way::Reactor(c) => c.phase_totals(),
            Way::Read(_) => PhaseTotals::default(),
        }
    }

    /// Zero the phase totals.
    pub fn reset_phase_totals(&self) {
        if let Way::Reactor(c) = &self.way {
            c.reset_phase_totals();
        }
    }
}

/// The blocking connection (a poisoned lock only means a caller panicked
/// mid-call; the connection state is still consistent).
fn lock(b: &Mutex<BlockingConnection>) -> MutexGuard<'_, BlockingConnection> {
    b.lock().unwrap_or_else(|e| e.into_inner())
}

/// What one call sends.
pub(crate) enum Op<'a, F> {
    /// A request whose body `body` writes (once per attempt).
    Request {
        operation: &'a str,
        response: ResponseMode,
        body: &'a F,
    },
    /// A request prepared once.
    Prepared(&'a Prepared),
    /// A LocateRequest.
    Locate,
}

impl<F> Op<'_, F> {
    /// What it is to the routing core.
    pub(crate) fn kind(&self) -> Kind {
        match self {
            Op::Request { response, .. } => Kind::Request(*response),
            Op::Prepared(p) => Kind::Prepared(p.response()),
            Op::Locate => Kind::Locate,
        }
    }
}

/// Where a call's connections come from.
pub(crate) trait Carriers {
    /// The connection the call's next message goes on.
    fn link(&self) -> &Link;

    /// The core moved the call ([`Progress::Forwarded`]: a connection the
    /// new destination is carried by) or lost its connection
    /// ([`Progress::Reconnect`]: a new one to the same destination): make
    /// [`link`](Self::link) that connection.
    fn relink(
        &mut self,
        call: &Call<'_>,
        why: &Progress,
    ) -> impl Future<Output = Result<(), ClientError>> + Send;
}

/// No arguments (`_non_existent`).
fn no_body(_: &mut Writer<'_>) -> Result<(), CdrError> {
    Ok(())
}

/// Drive `call` to its end: send what [`Call::next`] says on
/// `carriers`' connection, hand each answer to [`Call::on_answer`], and
/// move where it says. The call's final answer, or why it failed.
pub(crate) async fn drive<C, F>(
    call: &mut Call<'_>,
    op: Op<'_, F>,
    carriers: &mut C,
) -> Result<Answer, ClientError>
where
    C: Carriers,
    F: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
{
    loop {
        let link = carriers.link();
        let answer = match (call.next()?, &op) {
            (Next::Probe(to), _) => link
                .request(&to, "_non_existent", ResponseMode::Twoway, &no_body)
                .await
                .map(Answer::Reply),
            (
                Next::Request(to),
                Op::Request {
                    operation,
                    response,
                    body,
                },
            ) => link
                .request(&to, operation, *response, *body)
                .await
                .map(Answer::Reply),
            (Next::Request(_), Op::Prepared(p)) => link.send_prepared(p).await.map(Answer::Reply),
            // A LocateRequest call's request is a LocateRequest.
            (Next::Locate(to) | Next::Request(to), Op::Locate) | (Next::Locate(to), _) => {
                link.locate(&to).await.map(Answer::Locate)
            }
        };
        match call.on_answer(answer, link.addr())? {
            Progress::Done(a) => return Ok(a),
            Progress::Continue => {}
            why => carriers.relink(call, &why).await?,
        }
    }
}
