//! GIOP 1.0, 1.1 and 1.2 over TCP (IIOP): pure message types and codec,
//! a pure connection state machine (no I/O, no clock), IOR and corbaloc
//! references, and the drivers that put connections on sockets.
//!
//! Layers, bottom up (CDR itself is the `iiop-cdr` crate):
//! - [`header`]: the 12-byte message header.
//! - [`message`]: the messages of each version, encoded into a caller-owned
//!   buffer and decoded from a complete frame.
//! - [`context`]: service contexts and code set negotiation.
//! - [`exception`]: system exceptions and minor codes.
//! - [`codec`]: framing, size limits, fragment reassembly and splitting.
//! - [`ior`], [`corbaloc`]: object references and their textual forms
//!   (the [`Ior`] type is `iiop_cdr::ior`'s, re-exported: the same one a
//!   dynamic value holds).
//! - [`conn`]: the connection state machine, client side and server side:
//!   bytes and `now` in; bytes to write, events and the next deadline out.
//!   Every protocol decision of a connection is made there.
//! - [`transport`]: the drivers, the only modules with I/O or a clock:
//!   the tokio client (connections, pool), the blocking client, the tokio
//!   server loop.
//!
//! A call through the client, from a textual reference:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use iiop_giop::transport::{resolve_target, Client, ClientConfig};
//! use iiop_giop::Target;
//!
//! let client = Client::new(ClientConfig::default());
//! let target: Target = "corbaloc:iiop:1.2@127.0.0.1:2809/Bench".parse()?;
//! let ior = resolve_target(&client, &target).await?;
//! let body = client.call(&ior, "echo_long", |w| { w.write_i32(42); Ok(()) }).await?;
//! assert_eq!(body.reader(iiop_cdr::Options::default()).read_i32()?, 42);
//! # Ok(()) }
//! ```

pub mod codec;
pub mod conn;
pub mod context;
pub mod corbaloc;
pub mod error;
pub mod exception;
pub mod header;
pub mod ior;
pub mod memo;
pub mod message;
pub mod transport;

pub use codec::{CodecConfig, Decoder, Frame};
pub use corbaloc::{Corbaloc, Corbaname, Target};
pub use error::{GiopError, Result};
pub use exception::{Completion, SystemException};
pub use header::{Header, MsgType, Version};
pub use ior::Ior;
pub use message::{Message, ReplyStatus, ResponseMode, TargetAddress};
