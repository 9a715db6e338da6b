//! Where a client's calls go, and what every answer means for a call: the
//! one routing policy of every client, pure. The `iiop-transport` crate's
//! pooled `Client` and its `Stub` for one object (which the bench client
//! is built on) only carry it out.
//!
//! Each decision is made in one function here:
//! - the GIOP version spoken to a profile ([`version_for`]);
//! - where a reference's calls go ([`Destination::of`]): its first IIOP
//!   profile, reached as [`endpoint_for`] says, in that version, with the
//!   reference's code sets;
//! - whether an open connection can carry them ([`Destination::carried_by`]);
//! - what one call sends, in which order, and what each answer means
//!   ([`Call`]): a `_non_existent` probe before a oneway no reply has
//!   confirmed the destination of; a LocateRequest first when wide
//!   characters cannot be encoded for a reference that names no code sets;
//!   LOCATION_FORWARD and OBJECT_FORWARD followed up to the hop limit, each
//!   hop recorded ([`Hop`]); one retry on a new connection after
//!   CloseConnection; one resend in the addressing disposition
//!   NEEDS_ADDRESSING_MODE asks for; what a prepared request cannot follow;
//! - where later calls start ([`Route`]): where the last forward pointed.
//!
//! Order of use: a [`Route`] for a reference (or [`Call::to`] a bare
//! reference, for a client that keeps no routes); per call
//! [`Route::call`]; then until the call is over: send what
//! [`Call::next`] says on a connection the call's
//! [`destination`](Call::destination) is
//! [carried by](Destination::carried_by), and hand the answer (or the
//! error) to [`Call::on_answer`]. [`Progress`] says what the driver does
//! next: nothing more ([`Done`](Progress::Done)), send the next message on
//! the same connection ([`Continue`](Progress::Continue)), find a
//! connection for the new destination ([`Forwarded`](Progress::Forwarded);
//! [`Route::after`] is where later calls start), or open a new one to the
//! same destination ([`Reconnect`](Progress::Reconnect)).

use std::borrow::Cow;

use iiop_cdr::CdrError;

use super::client::{Again, ClientError, ClientSetup, ConnConfig, Follow, Step};
use super::endpoint::{endpoint_for, Endpoint, TlsWanted};
use crate::context::CodeSetComponentInfo;
use crate::error::GiopError;
use crate::header::Version;
use crate::ior::{IiopProfile, Ior};
use crate::message::{LocateReply, LocateStatus, Reply, ResponseMode, TargetAddress};

/// The GIOP version to speak to profile `p`: the `configured` one when
/// the user chose one, else the profile's own, capped at 1.2 (the
/// highest GIOP there is; a profile may announce a later IIOP minor). A
/// corbaloc without `1.2@` makes a 1.0 profile, as every ORB reads it.
pub fn version_for(p: &IiopProfile, configured: Option<Version>) -> Version {
    configured.unwrap_or(Version {
        major: 1,
        minor: p.version.minor.min(2),
    })
}

/// Where a reference's calls go: what a connection to its first IIOP
/// profile must be, and the address requests there carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    /// Where to connect, and whether over TLS.
    pub endpoint: Endpoint,
    /// The GIOP version to speak there ([`version_for`]).
    pub version: Version,
    /// The reference's TAG_CODE_SETS, wherever it carried them (see
    /// [`Ior::code_sets`]): what a new connection negotiates from.
    pub code_sets: Option<CodeSetComponentInfo>,
    /// The profile's object key, as a KeyAddr.
    pub key: TargetAddress,
}

impl Destination {
    /// Where calls to `ior` go, with the client's settings `cfg` (its
    /// GIOP version, its TLS). [`ClientError::NoProfile`] without an IIOP
    /// profile; [`ClientError::TlsNotConfigured`] where only TLS would do.
    pub fn of(ior: &Ior, cfg: &ConnConfig) -> Result<Destination, ClientError> {
        Destination::with(ior, cfg.version, cfg.tls)
    }

    fn with(
        ior: &Ior,
        version: Option<Version>,
        tls: TlsWanted,
    ) -> Result<Destination, ClientError> {
        let p = ior.iiop_profile().ok_or(ClientError::NoProfile)?;
        Ok(Destination {
            endpoint: endpoint_for(&p, tls)?,
            version: version_for(&p, version),
            code_sets: ior.code_sets().map(|(cs, _)| cs),
            key: TargetAddress::Key(p.object_key),
        })
    }

    /// Whether a new connection here negotiates code sets (the reference
    /// names some, and GIOP 1.1 or later can say so).
    pub fn negotiates(&self) -> bool {
        self.code_sets.is_some() && self.version.minor >= 1
    }

    /// Whether a live connection to `ep`, set up as `s`, can carry calls
    /// here: the same endpoint and version, and code sets negotiated if a
    /// new connection here would negotiate them. A connection opened
    /// without code sets (for a corbaloc, which names none) cannot carry
    /// wide characters for a reference that brings code sets (TAO answers
    /// its short keys with such a forward): that one gets a connection of
    /// its own. One that negotiated code sets carries any reference to
    /// the same endpoint: the same server.
    pub fn carried_by(&self, ep: &Endpoint, s: &ClientSetup) -> bool {
        *ep == self.endpoint
            && s.wire.version == self.version
            && (s.code_sets.is_some() || !self.negotiates())
    }
}

/// One forward a call followed: who answered with what, and where to.
/// Printed as `LOCATION_FORWARD from h:1 key "K" to h:2 key "L"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    /// `LOCATION_FORWARD`, `LOCATION_FORWARD_PERM`, `OBJECT_FORWARD` or
    /// `OBJECT_FORWARD_PERM`.
    pub status: &'static str,
    /// `host:port` that answered, and the object key it was asked for.
    pub from: String,
    /// `host:port` and object key of the forwarded reference.
    pub to: String,
}

impl std::fmt::Display for Hop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} from {} to {}", self.status, self.from, self.to)
    }
}

/// `host:port key` with the key as text where it is printable, else hex.
fn location(addr: &str, target: &TargetAddress) -> String {
    match target {
        TargetAddress::Key(k) => format!("{addr} key {}", key_text(k)),
        _ => format!("{addr} (profile/reference address)"),
    }
}

/// An object key for messages: quoted text where printable, else hex.
pub fn key_text(k: &[u8]) -> String {
    if !k.is_empty() && k.iter().all(|b| (0x20..0x7f).contains(b)) {
        format!("{:?}", String::from_utf8_lossy(k))
    } else {
        let hex: String = k.iter().map(|b| format!("{b:02x}")).collect();
        format!("0x{hex}")
    }
}

/// Where one object's calls go now, and how they got there: a client's
/// memory of forwards. A call starts from it; after a forward, later calls
/// start where the forward pointed ([`Route::after`]).
#[derive(Debug, Clone)]
pub struct Route {
    /// What calls start from: the reference the client was given, or the
    /// one the last forward named.
    reference: Ior,
    dest: Destination,
    /// The forwards followed from the reference the client was given.
    chain: Vec<Hop>,
    /// `reference` is a forward's.
    forwarded: bool,
}

impl Route {
    /// Calls to `reference`, with the client's settings `cfg`.
    pub fn new(reference: Ior, cfg: &ConnConfig) -> Result<Route, ClientError> {
        Ok(Route {
            dest: Destination::of(&reference, cfg)?,
            reference,
            chain: Vec::new(),
            forwarded: false,
        })
    }

    /// The reference calls start from.
    pub fn reference(&self) -> &Ior {
        &self.reference
    }

    /// Where calls go.
    pub fn destination(&self) -> &Destination {
        &self.dest
    }

    /// The forwards followed so far, in order.
    pub fn chain(&self) -> &[Hop] {
        &self.chain
    }

    /// The reference the last forward named (`None`: not forwarded).
    pub fn forwarded_to(&self) -> Option<&Ior> {
        self.forwarded.then_some(&self.reference)
    }

    /// One call of `kind` from here; `confirmed`: a reply has already
    /// come from this destination (no probe before a oneway).
    #[inline]
    pub fn call(&self, kind: Kind, confirmed: bool, cfg: &ConnConfig) -> Call<'_> {
        Call::starting(&self.reference, Dest::At(&self.dest), kind, confirmed, cfg)
    }

    /// Where later calls start after `call`, which started here, followed
    /// forwards: the reference it went to, this chain and its hops.
    pub fn after(&self, call: &Call<'_>) -> Route {
        let mut chain = self.chain.clone();
        chain.extend_from_slice(&call.hops);
        Route {
            reference: call.follow.target().clone(),
            dest: Destination::clone(&call.dest),
            chain,
            forwarded: self.forwarded || !call.hops.is_empty(),
        }
    }

    /// The same destination, another object key: the reference with its
    /// first IIOP profile's key replaced; no forwards followed yet.
    pub fn with_key(&self, key: &[u8]) -> Route {
        let mut reference = self.reference.clone();
        if let Some(slot) = reference
            .profiles
            .iter_mut()
            .find(|p| matches!(p.iiop(), Some(Ok(_))))
        {
            if let Some(Ok(mut p)) = slot.iiop() {
                p.object_key = bytes::Bytes::copy_from_slice(key);
                *slot = p.to_tagged();
            }
        }
        Route {
            reference,
            dest: Destination {
                key: TargetAddress::Key(bytes::Bytes::copy_from_slice(key)),
                ..self.dest.clone()
            },
            chain: Vec::new(),
            forwarded: false,
        }
    }
}

/// What a call sends, as far as routing cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A Request encoded anew for each attempt: it can go anywhere,
    /// addressed any way.
    Request(ResponseMode),
    /// A Request prepared once: its bytes carry their target address, so
    /// it cannot follow a forward or another addressing disposition (a
    /// retry on a new connection to the same destination it can).
    Prepared(ResponseMode),
    /// A LocateRequest.
    Locate,
}

/// What to send next, on a connection the call's destination is carried
/// by, addressed as it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next<'c> {
    /// `_non_existent`, twoway, no arguments: any reply confirms where the
    /// object is before a oneway goes there (a oneway gets no reply, so no
    /// forward could reach it).
    Probe(Cow<'c, TargetAddress>),
    /// The call's own request (a prepared one goes as it was prepared).
    Request(Cow<'c, TargetAddress>),
    /// A LocateRequest.
    Locate(Cow<'c, TargetAddress>),
}

/// The answer to what [`Call::next`] said to send.
#[derive(Debug)]
pub enum Answer {
    /// A Request's: its reply, `None` for a oneway.
    Reply(Option<Reply>),
    /// A LocateRequest's.
    Locate(LocateReply),
}

impl Answer {
    /// Whether it is a Reply that ends its call
    /// ([`Follow::settles`]).
    #[inline]
    fn settles(&self) -> bool {
        matches!(self, Answer::Reply(Some(r)) if Follow::settles(r.header.status))
    }

    /// A Request call's answer: its reply (`None` for a oneway), or a
    /// protocol error for a LocateReply in its place.
    #[inline]
    pub fn into_reply(self, addr: &str) -> Result<Option<Reply>, ClientError> {
        match self {
            Answer::Reply(r) => Ok(r),
            Answer::Locate(_) => Err(wrong(addr, "LocateReply to a Request")),
        }
    }

    /// A LocateRequest call's answer, or a protocol error.
    pub fn into_locate(self, addr: &str) -> Result<LocateReply, ClientError> {
        match self {
            Answer::Locate(l) => Ok(l),
            Answer::Reply(_) => Err(wrong(addr, "Reply to a LocateRequest")),
        }
    }
}

fn wrong(addr: &str, what: &'static str) -> ClientError {
    ClientError::Protocol {
        addr: addr.to_owned(),
        error: GiopError::BadValue {
            what,
            value: 0,
            offset: 0,
        },
    }
}

/// What a call's driver does after an answer.
#[derive(Debug)]
pub enum Progress {
    /// The call is over: its answer (the final reply, NO_EXCEPTION,
    /// USER_EXCEPTION or SYSTEM_EXCEPTION, `None` for a oneway; or the
    /// final LocateReply).
    Done(Answer),
    /// Send [`Call::next`] on the same connection (a probe was answered,
    /// a LocateRequest goes first, another addressing disposition).
    Continue,
    /// A forward moved the call to a new [`Call::destination`]: the next
    /// message goes on a connection that one is carried by. The hop, for
    /// the client's chain.
    Forwarded(Hop),
    /// The server closed the connection with CloseConnection before it
    /// answered (nothing was processed): the same destination, on a new
    /// connection.
    Reconnect,
}

/// One call through the routing rules (see the module's order of use).
///
/// It borrows the reference and destination it starts from, and owns
/// them only once a forward names new ones: a call that is not forwarded
/// copies nothing.
#[derive(Debug)]
pub struct Call<'r> {
    kind: Kind,
    /// The reference (forwards, retry, addressing disposition).
    follow: Follow<'r>,
    dest: Dest<'r>,
    /// The client's GIOP version and TLS, for the destination of a
    /// forward.
    version: Option<Version>,
    tls: TlsWanted,
    /// A reply has come from the destination: a oneway needs no probe.
    confirmed: bool,
    /// Wide characters could not be encoded for the destination, which
    /// names no code sets: the error, while a LocateRequest goes first.
    locating: Option<Box<ClientError>>,
    /// A LocateRequest went first once already.
    located: bool,
    /// The call can go no further; `next` says why (after a hop the
    /// driver still records).
    failed: Option<Box<ClientError>>,
    /// The forwards this call followed.
    hops: Vec<Hop>,
}

impl<'r> Call<'r> {
    /// A call of `kind` to `reference`, for a client that keeps no route:
    /// unconfirmed (a oneway goes after a probe).
    pub fn to(reference: &'r Ior, kind: Kind, cfg: &ConnConfig) -> Result<Call<'r>, ClientError> {
        let dest = Destination::of(reference, cfg)?;
        Ok(Call::starting(
            reference,
            Dest::Moved(Box::new(dest)),
            kind,
            false,
            cfg,
        ))
    }

    #[inline]
    fn starting(
        reference: &'r Ior,
        dest: Dest<'r>,
        kind: Kind,
        confirmed: bool,
        cfg: &ConnConfig,
    ) -> Call<'r> {
        Call {
            kind,
            follow: Follow::new(reference, cfg.max_forwards),
            dest,
            version: cfg.version,
            tls: cfg.tls,
            confirmed,
            locating: None,
            located: false,
            failed: None,
            hops: Vec::new(),
        }
    }

    /// Where the next message goes.
    pub fn destination(&self) -> &Destination {
        &self.dest
    }

    /// The reference the call is at (after any forward).
    pub fn target(&self) -> &Ior {
        self.follow.target()
    }

    /// Whether a reply has come from the destination the call is at.
    #[inline]
    pub fn confirmed(&self) -> bool {
        self.confirmed
    }

    /// The forwards this call followed, in order.
    pub fn hops(&self) -> &[Hop] {
        &self.hops
    }

    /// What to send next, or why the call can go no further.
    #[inline]
    pub fn next(&self) -> Result<Next<'_>, ClientError> {
        if let Some(e) = &self.failed {
            return Err(e.as_ref().clone());
        }
        let address = self.follow.address(&self.dest.key)?;
        Ok(match self.planned() {
            Planned::Probe => Next::Probe(address),
            Planned::Request => Next::Request(address),
            Planned::Locate => Next::Locate(address),
        })
    }

    #[inline]
    fn planned(&self) -> Planned {
        match self.kind {
            Kind::Locate => Planned::Locate,
            _ if self.locating.is_some() => Planned::Locate,
            Kind::Request(r) | Kind::Prepared(r) if !r.expects_reply() && !self.confirmed => {
                Planned::Probe
            }
            _ => Planned::Request,
        }
    }

    /// What the message [`next`](Self::next) said to send got back at
    /// `addr` (the peer's `host:port`), and what the driver does next.
    #[inline]
    pub fn on_answer(
        &mut self,
        answer: Result<Answer, ClientError>,
        addr: &str,
    ) -> Result<Progress, ClientError> {
        match answer {
            // The call's own reply, and final: the common case, decided
            // without taking the reply apart.
            Ok(a @ Answer::Reply(Some(_))) if a.settles() && self.planned() == Planned::Request => {
                self.confirmed = true;
                Ok(Progress::Done(a))
            }
            Ok(Answer::Locate(l)) => self.on_locate(l, addr),
            Ok(Answer::Reply(r)) => self.on_reply(Ok(r), addr),
            Err(e) if self.locates_first(&e) => {
                self.located = true;
                self.locating = Some(Box::new(e));
                Ok(Progress::Continue)
            }
            Err(e) => self.on_reply(Err(e), addr),
        }
    }

    /// Whether `e` calls for a LocateRequest first: wide characters
    /// without negotiated code sets, for a destination that names none
    /// (a corbaloc). A forward to a reference with TAG_CODE_SETS gives
    /// the code sets to negotiate, on a connection of its own. Once.
    fn locates_first(&self, e: &ClientError) -> bool {
        let wchar = matches!(
            e,
            ClientError::Encode(GiopError::Cdr {
                source: CdrError::WcharNotNegotiated { .. },
                ..
            })
        );
        wchar
            && matches!(self.kind, Kind::Request(_))
            && !self.located
            && self.dest.code_sets.is_none()
    }

    fn on_reply(
        &mut self,
        r: Result<Option<Reply>, ClientError>,
        addr: &str,
    ) -> Result<Progress, ClientError> {
        let probe = self.planned() == Planned::Probe;
        match self.follow.on_reply(r, addr)? {
            Step::Done(reply) => {
                self.confirmed |= reply.is_some();
                Ok(match probe {
                    true => Progress::Continue,
                    false => Progress::Done(Answer::Reply(reply)),
                })
            }
            Step::Again(Again::Forward(status)) => self.forwarded(status, addr),
            Step::Again(Again::Retry) => Ok(Progress::Reconnect),
            Step::Again(Again::Readdress) => match self.kind {
                Kind::Prepared(_) => Err(ClientError::PreparedCannotFollow {
                    addr: addr.to_owned(),
                    what: "NEEDS_ADDRESSING_MODE".into(),
                }),
                _ => Ok(Progress::Continue),
            },
        }
    }

    fn on_locate(&mut self, l: LocateReply, addr: &str) -> Result<Progress, ClientError> {
        let request_id = l.request_id;
        match self.follow.on_locate(l, addr)? {
            Step::Again(Again::Forward(status)) => self.forwarded(status, addr),
            Step::Again(_) => unreachable!("a LocateReply is done or forwarded"),
            // Located first, and not forwarded to where code sets are
            // known: the wide characters still cannot be encoded.
            Step::Done(status) => match self.locating.take() {
                Some(e) => Err(*e),
                None => {
                    self.confirmed |= status == LocateStatus::ObjectHere;
                    Ok(Progress::Done(Answer::Locate(LocateReply {
                        request_id,
                        status,
                    })))
                }
            },
        }
    }

    /// A forward from `addr` moved the call to [`Follow::target`].
    fn forwarded(&mut self, status: &'static str, addr: &str) -> Result<Progress, ClientError> {
        let dest = match Destination::with(self.follow.target(), self.version, self.tls) {
            Ok(d) => d,
            Err(ClientError::NoProfile) => {
                return Err(ClientError::ForwardedNowhere {
                    addr: addr.to_owned(),
                })
            }
            Err(e) => return Err(e),
        };
        let hop = Hop {
            status,
            from: location(addr, &self.dest.key),
            to: location(&dest.endpoint.addr(), &dest.key),
        };
        self.dest = Dest::Moved(Box::new(dest));
        self.confirmed = false;
        self.hops.push(hop.clone());
        if let Some(e) = self.locating.take() {
            // Located first: the forward brings code sets to negotiate,
            // or the wide characters still cannot be encoded.
            if self.dest.code_sets.is_none() {
                self.failed = Some(e);
            }
        }
        if let Kind::Prepared(_) = self.kind {
            self.failed = Some(Box::new(ClientError::PreparedCannotFollow {
                addr: addr.to_owned(),
                what: hop.to_string(),
            }));
        }
        Ok(Progress::Forwarded(hop))
    }
}

/// Where a call goes: the route's destination, borrowed, until a forward
/// names one of its own (boxed: a call that stays is small to make).
#[derive(Debug)]
enum Dest<'r> {
    At(&'r Destination),
    Moved(Box<Destination>),
}

impl std::ops::Deref for Dest<'_> {
    type Target = Destination;

    fn deref(&self) -> &Destination {
        match self {
            Dest::At(d) => d,
            Dest::Moved(d) => d,
        }
    }
}

/// Which message a call sends next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Planned {
    Probe,
    Request,
    Locate,
}

#[cfg(test)]
mod tests;
