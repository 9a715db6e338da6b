//! The benchmark interface of `fixtures/idl/bench.idl`: our reference
//! server (typed and dynamic skeletons) and, beside it in this directory,
//! the same interface for vendor ORBs (omniORB, JacORB, omniORBpy, TAO).

pub mod affinity;
pub mod bench;
pub mod client;
pub mod dispatcher;
pub mod idl_server;
pub mod reference;
pub mod run;
