//! bench.idl on our side: element catalogue, objects and operations,
//! counters, service time, the valuetypes, the user exception and `any` — the ORB-independent core that the typed
//! and dynamic skeletons and the client share.

pub mod anys;
pub mod counters;
pub mod elements;
pub mod ops;
pub mod types;
pub mod values;
pub mod work;

pub use elements::{CallMode, Elem};
pub use ops::{Object, Op};
