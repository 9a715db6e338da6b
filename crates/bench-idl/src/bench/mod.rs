//! bench.idl on our side: element catalogue, objects and operations,
//! counters, service time and the valuetypes — the ORB-independent core that the typed
//! and dynamic skeletons and the client share.

pub mod counters;
pub mod elements;
pub mod ops;
pub mod types;
pub mod values;
pub mod work;

pub use elements::{CallMode, Elem};
pub use ops::{Object, Op};
