//! iiop-agents: one iiopbench experiment run from many hosts at once.
//! A coordinator waits at a start barrier (with a deadline) for N agents,
//! measures each agent's clock offset, sends all of them the same job
//! (of whatever serde type the caller's jobs are) and one start instant,
//! and collects each agent's results file; who did not run, and why, is
//! always reported. Kubernetes is the
//! engine that places agents on many hosts: [`k8s`] writes the manifests.
//!
//! Modules:
//! * `wire` — the messages and their framing (pure).
//! * `clock` — NTP-style offset estimation (pure) and the [`clock::Clock`]
//!   the I/O reads time from.
//! * `roster` — the coordinator's bookkeeping: ids, the barrier, who ran
//!   (pure; time comes in as `now`).
//! * `conn` — one blocking TCP connection carrying whole messages.
//! * `coordinator` — the coordinator's I/O around the roster.
//! * `agent` — an agent's I/O; running the job is the caller's runner.
//! * `k8s` — Kubernetes manifests from typed API structs (pure).
//!
//! Merging the agents' results is done where the results schema lives
//! (the engine's `agents::merge`): this crate carries results files as JSON values.

pub mod agent;
pub mod clock;
pub mod conn;
pub mod coordinator;
pub mod k8s;
pub mod roster;
pub mod wire;

pub use agent::{join, JoinConfig, Joined, Order};
pub use clock::{Clock, SystemClock};
pub use coordinator::{coordinate, Config, Outcome};
pub use roster::{AgentReport, Status};
