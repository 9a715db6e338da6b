//! The benchmark interface of `fixtures/idl/bench.idl` on our side:
//! - [`bench`]: its data model: element types, Rust types and TypeCodes,
//!   objects and operations, counters, service time;
//! - [`client`]: bench.idl's typed operations over one GIOP connection
//!   ([`value_ops`]: the valuetype ones; [`callback`]: the Callback
//!   object a client serves on a connection it offers for callbacks);
//! - [`reference`] and [`run`]: our reference server (typed and dynamic
//!   skeletons), and running it on threads of its own;
//! - [`dispatcher`]: the central dispatcher object of the load-balancing
//!   workloads.
//!
//! The same interface in vendor ORBs (omniORB, TAO, JacORB, omniORBpy) is
//! under `vendors/`; a server for any other IDL is the engine's
//! (`iiopbench_engine::dynamic::server`).

pub mod bench;
pub mod callback;
pub mod client;
pub mod dispatcher;
pub mod reference;
pub mod run;
pub mod value_ops;
