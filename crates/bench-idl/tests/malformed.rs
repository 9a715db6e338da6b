//! Hostile input over real TCP against our reference server: each case
//! sends bytes a broken or malicious client might send and asserts the
//! server's exact reaction (a MessageError with its 12 header bytes, a
//! system exception reply with repository id and minor code, a specific
//! reply, silence, or the connection closed), then that the server still
//! answers `ping` on a new connection and on a connection that was open
//! all along. The table of expected reactions is docs/robustness.md.
//! The whole table also runs over TLS: a TLS server must react to bad
//! GIOP exactly as a plain one does.
//!
//! This file runs the suite on the tokio server (task per connection);
//! tests/malformed_threads.rs runs the same cases, over TCP and TLS, on
//! the thread-per-connection server.

const MODEL: ServerModel = ServerModel::Reactor;

include!("malformed/cases.rs");
