//! The IIOP client for calls by reference: [`Client`], a pool of the
//! runtime's connections per endpoint, over which each call follows the
//! routing core's rules ([`iiop_giop::conn::route`]: forwards, the retry
//! after CloseConnection, the addressing disposition asked for, a probe
//! before a oneway, a LocateRequest first for wide characters). The
//! pool decides only which of its connections carries a call (round robin
//! among those the core's reuse rule accepts).
//!
//! A `Client` keeps no memory of forwards: each call starts from the
//! reference it is given (so a oneway always goes after a probe). A
//! [`Stub`](crate::stub::Stub) keeps one object's route and its own
//! connection instead.
//!
//! Also re-exported here, as the client's vocabulary: the runtime's
//! [`Connection`], the settings, the error, prepared requests.

use std::collections::HashMap;
use std::sync::Mutex;

use iiop_cdr::{CdrError, Writer};
use iiop_giop::conn::endpoint::Endpoint;
use iiop_giop::conn::route::{Answer, Call, Destination, Progress};
use iiop_giop::header::Version;
use iiop_giop::ior::Ior;
use iiop_giop::message::{Body, LocateStatus, Reply, ResponseMode, TargetAddress};

pub use crate::config::{ClientConfig, TlsMode};
pub use crate::connection::{Connection, PhaseTotals};
use crate::link::{drive, Carriers, Link, Op};
pub use iiop_giop::conn::client::{
    reply_result, reply_result_from, ClientError, Prepared, DEFAULT_SPLICE_CUTOFF,
};

/// Connections to one endpoint in one GIOP version, created on demand.
#[derive(Debug, Default)]
struct Pool {
    conns: Vec<Connection>,
    next: usize,
}

/// A client: pooled connections per endpoint, calls by reference.
#[derive(Debug)]
pub struct Client {
    cfg: ClientConfig,
    pools: Mutex<HashMap<(Endpoint, Version), Pool>>,
}

/// Where a call goes: the connection and the address to put in requests.
#[derive(Debug, Clone)]
pub struct Route {
    pub connection: Connection,
    pub target: TargetAddress,
}

impl Client {
    /// A client with these settings.
    pub fn new(cfg: ClientConfig) -> Client {
        Client {
            cfg,
            pools: Mutex::new(HashMap::new()),
        }
    }

    /// The settings.
    pub fn config(&self) -> &ClientConfig {
        &self.cfg
    }

    /// A pooled connection for calls to `ior` and the KeyAddr for it.
    pub async fn route(&self, ior: &Ior) -> Result<Route, ClientError> {
        let dest = Destination::of(ior, &self.cfg.conn())?;
        Ok(Route {
            connection: self.connection_for(&dest).await?,
            target: dest.key,
        })
    }

    /// A pooled connection that carries calls to `dest` (the core's
    /// rule: [`Destination::carried_by`]), round robin over up to
    /// [`ClientConfig::pool_size`] live ones; a new one negotiates the
    /// destination's code sets.
    pub async fn connection_for(&self, dest: &Destination) -> Result<Connection, ClientError> {
        let key = (dest.endpoint.clone(), dest.version);
        {
            let mut pools = self.pools.lock().unwrap_or_else(|e| e.into_inner());
            let pool = pools.entry(key.clone()).or_default();
            pool.conns.retain(|c| !c.is_closed());
            let carriers: Vec<usize> = (0..pool.conns.len())
                .filter(|&i| dest.carried_by(&key.0, pool.conns[i].setup()))
                .collect();
            if carriers.len() >= self.cfg.pool_size.max(1) {
                pool.next = (pool.next + 1) % carriers.len();
                return Ok(pool.conns[carriers[pool.next]].clone());
            }
        }
        let c = Connection::connect_to(
            &dest.endpoint,
            dest.version,
            &self.cfg,
            dest.code_sets.as_ref(),
        )
        .await?;
        let mut pools = self.pools.lock().unwrap_or_else(|e| e.into_inner());
        pools.entry(key).or_default().conns.push(c.clone());
        Ok(c)
    }

    /// [`connection_for`](Self::connection_for) as a [`Link`].
    async fn link_for(&self, dest: &Destination) -> Result<Link, ClientError> {
        let c = self.connection_for(dest).await?;
        Ok(Link::reactor(dest.endpoint.clone(), c))
    }

    /// Invoke `operation` on `ior` as the routing core says (forwards up
    /// to `max_forwards`, one retry after CloseConnection, one resend in
    /// the addressing disposition asked for, a `_non_existent` before a
    /// oneway, a LocateRequest first for wide characters a reference
    /// without code sets cannot carry). `body` may run once per attempt.
    /// Returns the final reply (NO_EXCEPTION, USER_EXCEPTION or
    /// SYSTEM_EXCEPTION), `None` for a oneway.
    pub async fn invoke<F>(
        &self,
        ior: &Ior,
        operation: &str,
        response: ResponseMode,
        body: F,
    ) -> Result<Option<Reply>, ClientError>
    where
        F: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        Ok(self.invoke_reading(ior, operation, response, body).await?.0)
    }

    /// [`invoke`](Self::invoke), and how the reply's body reads: the
    /// options (code sets, GIOP version) of the connection that carried
    /// the final attempt, which after a forward is not the one `ior`
    /// routes to.
    pub async fn invoke_reading<F>(
        &self,
        ior: &Ior,
        operation: &str,
        response: ResponseMode,
        body: F,
    ) -> Result<(Option<Reply>, iiop_cdr::Options), ClientError>
    where
        F: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let op = Op::Request {
            operation,
            response,
            body: &body,
        };
        let mut call = Call::to(ior, op.kind(), &self.cfg.conn())?;
        let (answer, link) = self.drive(&mut call, op).await?;
        Ok((answer.into_reply(link.addr())?, link.options()))
    }

    /// [`invoke`](Self::invoke) a twoway call and turn exception replies
    /// into errors: `Ok` holds the NO_EXCEPTION body.
    pub async fn call<F>(&self, ior: &Ior, operation: &str, body: F) -> Result<Body, ClientError>
    where
        F: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let reply = self
            .invoke(ior, operation, ResponseMode::Twoway, body)
            .await?
            .ok_or(ClientError::LocallyClosed)?;
        reply_result(reply)
    }

    /// LocateRequest, following OBJECT_FORWARD(_PERM). Returns the final
    /// status and the IOR it applies to.
    pub async fn locate(&self, ior: &Ior) -> Result<(LocateStatus, Ior), ClientError> {
        let op = Op::<fn(&mut Writer<'_>) -> Result<(), CdrError>>::Locate;
        let mut call = Call::to(ior, op.kind(), &self.cfg.conn())?;
        let (answer, link) = self.drive(&mut call, op).await?;
        Ok((
            answer.into_locate(link.addr())?.status,
            call.target().clone(),
        ))
    }

    /// Drive `call` (of `op`) on pooled connections: its answer and the
    /// connection that carried the last attempt.
    async fn drive<F>(
        &self,
        call: &mut Call<'_>,
        op: Op<'_, F>,
    ) -> Result<(Answer, Link), ClientError>
    where
        F: Fn(&mut Writer<'_>) -> Result<(), CdrError>,
    {
        let mut pooled = Pooled {
            link: self.link_for(call.destination()).await?,
            client: self,
        };
        let answer = drive(call, op, &mut pooled).await?;
        Ok((answer, pooled.link))
    }
}

/// A call's connections from the pool.
struct Pooled<'c> {
    client: &'c Client,
    link: Link,
}

impl Carriers for Pooled<'_> {
    fn link(&self) -> &Link {
        &self.link
    }

    /// A forward's destination, or a live connection after the server
    /// closed this one: from the pool either way (it drops dead ones).
    async fn relink(&mut self, call: &Call<'_>, _: &Progress) -> Result<(), ClientError> {
        self.link = self.client.link_for(call.destination()).await?;
        Ok(())
    }
}
