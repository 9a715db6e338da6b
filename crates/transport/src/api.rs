//! The public API both clients share, written once: the tokio
//! [`Connection`](super::Connection) gets it `async` on `&self`, the
//! [`BlockingConnection`](super::BlockingConnection) blocking on
//! `&mut self`. Everything it does is the core's
//! ([`iiop_giop::conn::client`]); a driver supplies two methods:
//!
//! - `fn setup(&self) -> &ClientSetup`, what the connection fixed when it
//!   opened;
//! - `[async] fn exchange<F>(&[mut] self, out: Outgoing<'_, F>, timeout:
//!   Option<Duration>) -> Result<Option<Incoming>, ClientError>`: queue
//!   `out` with a new request id, write it, and wait for its answer when
//!   one is expected.

/// Expands to the shared methods inside a driver's `impl` block:
/// `client_api!(async: [async], self: [&], await: [await])` for an
/// asynchronous driver, `client_api!(async: [], self: [&mut], await: [])`
/// for a blocking one.
macro_rules! client_api {
    (async: [$($async:tt)?], self: [& $($mut:tt)?], await: [$($await:tt)?]) => {
        /// `host:port` of the peer.
        pub fn addr(&self) -> &str {
            &self.setup().addr
        }

        /// The GIOP version spoken.
        pub fn version(&self) -> ::iiop_giop::header::Version {
            self.setup().wire.version
        }

        /// Our byte order.
        pub fn order(&self) -> iiop_cdr::ByteOrder {
            self.setup().wire.order
        }

        /// The CDR options (negotiated code sets) for bodies on this
        /// connection.
        pub fn options(&self) -> iiop_cdr::Options {
            self.setup().wire.opts
        }

        /// Send a request whose body `body` writes directly into the
        /// outgoing buffer (alignment relative to the message start, as
        /// CDR wants), with the connection's request timeout. Returns the
        /// reply for twoway calls, `None` for oneways (once handed to the
        /// connection).
        pub $($async)? fn request<F>(
            & $($mut)? self,
            target: &::iiop_giop::message::TargetAddress,
            operation: &str,
            response: ::iiop_giop::message::ResponseMode,
            body: F,
        ) -> Result<Option<::iiop_giop::message::Reply>, ::iiop_giop::conn::client::ClientError>
        where
            F: FnOnce(&mut iiop_cdr::Writer<'_>) -> Result<(), iiop_cdr::CdrError>,
        {
            let timeout = self.setup().request_timeout;
            self.request_with(target, operation, response, &[], timeout, body) $(.$await)?
        }

        /// [`request`](Self::request) with extra service contexts and an
        /// explicit timeout.
        pub $($async)? fn request_with<F>(
            & $($mut)? self,
            target: &::iiop_giop::message::TargetAddress,
            operation: &str,
            response: ::iiop_giop::message::ResponseMode,
            contexts: &[::iiop_giop::context::ServiceContext],
            timeout: Option<std::time::Duration>,
            body: F,
        ) -> Result<Option<::iiop_giop::message::Reply>, ::iiop_giop::conn::client::ClientError>
        where
            F: FnOnce(&mut iiop_cdr::Writer<'_>) -> Result<(), iiop_cdr::CdrError>,
        {
            let out = ::iiop_giop::conn::client::Outgoing::Request {
                target,
                operation,
                response,
                contexts,
                body,
            };
            let inc = self.exchange(out, timeout) $(.$await)? ?;
            ::iiop_giop::conn::client::reply_of(inc, self.addr())
        }

        /// Send a request whose body was marshalled beforehand (e.g. once,
        /// for many calls) by a [`Writer`](iiop_cdr::Writer) with an
        /// 8-aligned origin. The bytes are copied in as they are, which is
        /// only right where the body starts 8-aligned: always in GIOP 1.2;
        /// in 1.0/1.1 only when the request header happens to end
        /// 8-aligned, otherwise this fails with
        /// [`ClientError::Encode`](iiop_giop::conn::client::ClientError::Encode)
        /// instead of sending misaligned data.
        pub $($async)? fn request_bytes(
            & $($mut)? self,
            target: &::iiop_giop::message::TargetAddress,
            operation: &str,
            response: ::iiop_giop::message::ResponseMode,
            body: &[u8],
        ) -> Result<Option<::iiop_giop::message::Reply>, ::iiop_giop::conn::client::ClientError> {
            self.request(target, operation, response, |w| {
                if !body.is_empty() && w.position() % 8 != 0 {
                    return Err(iiop_cdr::CdrError::Message(format!(
                        "pre-marshalled body would start at offset {}, not 8-aligned",
                        w.position()
                    )));
                }
                w.write_bytes(body);
                Ok(())
            }) $(.$await)?
        }

        /// Build a request once for [`send_prepared`](Self::send_prepared)
        /// on any connection with this one's version and byte order (it
        /// carries the CodeSets context when this connection has one: it
        /// may be a connection's first request).
        pub fn prepare<F>(
            &self,
            target: &::iiop_giop::message::TargetAddress,
            operation: &str,
            response: ::iiop_giop::message::ResponseMode,
            body: F,
        ) -> Result<::iiop_giop::conn::client::Prepared, ::iiop_giop::conn::client::ClientError>
        where
            F: FnOnce(&mut iiop_cdr::Writer<'_>) -> Result<(), iiop_cdr::CdrError>,
        {
            ::iiop_giop::conn::client::Prepared::build(self.setup(), target, operation, response, body)
        }

        /// Send a [`Prepared`](iiop_giop::conn::client::Prepared) request with
        /// a fresh request id; nothing is re-marshalled. The bytes up to
        /// the request id are copied (and the id patched there); the rest
        /// is spliced when it reaches the splice cutoff, copied otherwise.
        pub $($async)? fn send_prepared(
            & $($mut)? self,
            p: &::iiop_giop::conn::client::Prepared,
        ) -> Result<Option<::iiop_giop::message::Reply>, ::iiop_giop::conn::client::ClientError> {
            let timeout = self.setup().request_timeout;
            let out = ::iiop_giop::conn::client::Outgoing::prepared(p);
            let inc = self.exchange(out, timeout) $(.$await)? ?;
            ::iiop_giop::conn::client::reply_of(inc, self.addr())
        }

        /// Send a LocateRequest.
        pub $($async)? fn locate(
            & $($mut)? self,
            target: &::iiop_giop::message::TargetAddress,
        ) -> Result<::iiop_giop::message::LocateReply, ::iiop_giop::conn::client::ClientError> {
            let timeout = self.setup().request_timeout;
            let out = ::iiop_giop::conn::client::Outgoing::locate(target);
            let inc = self.exchange(out, timeout) $(.$await)? ?;
            ::iiop_giop::conn::client::locate_of(inc, self.addr())
        }
    };
}
