//! Hostile input over real TCP against our reference server running thread
//! per connection (`ServerModel::Threads`): the very cases of
//! tests/malformed.rs (their table is docs/robustness.md), over TCP and
//! over TLS, so both server drivers are held to one set of reactions.

const MODEL: ServerModel = ServerModel::Threads;

include!("malformed/cases.rs");
