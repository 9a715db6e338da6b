//! GIOP 1.0, 1.1 and 1.2 over TCP (IIOP): pure message types and codec
//! (no I/O, no clock), IOR and corbaloc references, and one tokio
//! transport module for clients and servers.
//!
//! Layers, bottom up:
//! - [`header`]: the 12-byte message header.
//! - [`message`]: the messages of each version, encoded into a caller-owned
//!   buffer and decoded from a complete frame.
//! - [`context`]: service contexts and code set negotiation.
//! - [`exception`]: system exceptions and minor codes.
//! - [`codec`]: framing, size limits, fragment reassembly and splitting.
//! - [`ior`], [`corbaloc`]: object references in their textual forms.
//! - [`transport`]: the only module with I/O (tokio): client connections,
//!   pool, forwarding, and the server loop.

pub mod codec;
pub mod context;
pub mod corbaloc;
pub mod error;
pub mod exception;
pub mod header;
pub mod ior;
pub mod message;
pub mod transport;

pub use codec::{CodecConfig, Decoder, Frame};
pub use corbaloc::{Corbaloc, Corbaname, Target};
pub use error::{GiopError, Result};
pub use exception::{Completion, SystemException};
pub use header::{Header, MsgType, Version};
pub use ior::Ior;
pub use message::{Message, ReplyStatus, ResponseMode, TargetAddress};
