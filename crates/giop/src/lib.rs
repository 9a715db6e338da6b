//! GIOP 1.0, 1.1 and 1.2, pure: message types and codec, the connection
//! state machines (no I/O, no clock), IOR and corbaloc references.
//!
//! Layers, bottom up (CDR itself is the `iiop-cdr` crate):
//! - [`header`]: the 12-byte message header.
//! - [`message`]: the messages of each version, encoded into a caller-owned
//!   buffer and decoded from a complete frame.
//! - [`context`]: service contexts and code set negotiation.
//! - [`exception`]: system exceptions and minor codes.
//! - [`codec`]: framing, size limits, fragment reassembly and splitting.
//! - [`ior`], [`corbaloc`], [`key`]: object references and their textual
//!   forms, and object keys as text
//!   (the [`Ior`] type is `iiop_cdr::ior`'s, re-exported: the same one a
//!   dynamic value holds).
//! - [`conn`]: the connection state machine, client side and server side:
//!   bytes and `now` in; bytes to write, events and the next deadline out.
//!   Every protocol decision of a connection is made there. Beside them
//!   the observer, which sends nothing: both sides' bytes in, requests
//!   paired with their answers and conformance findings out (captures and
//!   their replay).
//!
//! Nothing here does I/O or reads a clock: the drivers that put these
//! state machines on sockets are the `iiop-transport` crate.

pub mod codec;
pub mod conn;
pub mod context;
pub mod corbaloc;
pub mod error;
pub mod exception;
pub mod header;
pub mod ior;
pub mod key;
pub mod memo;
pub mod message;

pub use codec::{CodecConfig, Decoder, Frame};
pub use corbaloc::{Corbaloc, Corbaname, Target};
pub use error::{GiopError, Result};
pub use exception::{Completion, SystemException};
pub use header::{Header, MsgType, Version};
pub use ior::Ior;
pub use message::{Message, ReplyStatus, ResponseMode, TargetAddress};
