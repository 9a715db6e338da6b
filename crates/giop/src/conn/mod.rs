//! The GIOP connection state machine, pure: no sockets, no runtime, no
//! clock. Bytes received and the current time (`now`, an argument) go in;
//! bytes to write (a buffer with shared runs spliced in), completed
//! requests and replies, forward and retry decisions, and the next
//! deadline come out. Every protocol decision of a connection is made
//! here, once, for all drivers (the `iiop-transport` crate): request ids, the
//! CodeSets context sent once, reply matching, timeouts and
//! CancelRequest, what a missed write deadline means, fragment
//! reassembly, MessageError and CloseConnection; and for every client,
//! where its calls go: forwards, retries, probes, locates, connection
//! reuse, the version for a profile.
//!
//! - [`client`]: the client side ([`client::ClientConn`] for a driver that
//!   owns a connection alone, and its parts for drivers that share one
//!   between tasks);
//! - [`server`]: the server side ([`server::ServerConn`]), dispatching to
//!   a [`server::Handler`];
//! - [`observer`]: neither side — a connection seen from outside
//!   ([`observer::Observer`]): requests paired with their answers, and
//!   conformance findings, for captures and their replay;
//! - [`out`]: bytes to write and how they are handed to a vectored write
//!   (zero-copy runs, "headers first");
//! - [`deadline`]: timers computed from instants passed in;
//! - [`endpoint`]: plain TCP or TLS, and on which port, for a profile;
//! - [`route`]: where a client's calls go and what each answer means for
//!   a call (the one routing policy: [`route::Call`], [`route::Route`]).

pub mod client;
pub mod deadline;
pub mod endpoint;
pub mod error;
pub mod observer;
pub mod out;
pub mod route;
pub mod server;

/// Tests drive time by hand from one base instant: the only clock read in
/// this module tree, and it decides nothing (every test time is an offset
/// from it).
#[cfg(test)]
pub(crate) fn epoch() -> std::time::Instant {
    std::time::Instant::now()
}

/// A Request to the object key `Bench` whose body is the u32 `arg`, for
/// the tests of the server and the observer.
#[cfg(test)]
pub(crate) fn request_to_bench(
    version: crate::header::Version,
    order: iiop_cdr::ByteOrder,
    id: u32,
    op: &str,
    response: crate::message::ResponseMode,
    contexts: &[crate::context::ServiceContext],
    arg: u32,
) -> bytes::BytesMut {
    use crate::message::{encode_request, RequestHead, TargetAddress};
    let mut b = bytes::BytesMut::new();
    let target = TargetAddress::Key(bytes::Bytes::from_static(b"Bench"));
    let head = RequestHead {
        request_id: id,
        response,
        target: &target,
        operation: op,
        contexts,
    };
    encode_request(
        &mut b,
        version,
        order,
        iiop_cdr::Options::default(),
        &head,
        |w| {
            w.write_u32(arg);
            Ok(())
        },
    )
    .expect("a request to Bench encodes");
    b
}
