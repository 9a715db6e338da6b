//! The GIOP benchmarks: `bench throughput` (CORBA-TTCP, E0/E4.1),
//! `bench latency` (ping-pong, closed or open loop, E3.1/E2.1) and
//! `bench connect` (set-up cost, E1.1), `bench sweep` (latency against
//! rising load, to the knee), and the application-level
//! workloads of seed 001 on the [`workload`] engine: `bench closed`,
//! `setup` (E1.1 across server states), `params` (E1.2), `dispatch`
//! (E1.3), `packing` (E1.4), `balance` (E1.5).
//!
//! Every benchmark runs the same way: check its job, resolve the target (or start the
//! embedded server, before pinning the client so it does not inherit the
//! client's CPUs), pin the client thread, run a current-thread tokio
//! runtime on it (so `RUSAGE_THREAD` is exactly the client's CPU), measure
//! case after case, and always hand back the results measured so far with
//! the error that stopped the run, if any.

pub mod balance;
pub mod closed;
pub mod connect;
pub mod dispatch;
pub mod latency;
pub mod loops;
pub mod packing;
pub mod params;
pub mod replicas;
pub mod session;
pub mod setup;
pub mod stats;
pub mod sweep;
pub mod sweep_servers;
pub mod tcp_baseline;
pub mod throughput;
pub mod workload;

use std::collections::BTreeMap;

use iiop_bench_idl::bench::elements::{CallMode, Elem};

use crate::error::JobError;

/// Parse a comma list of element tokens (`all` for every type), as users
/// write them.
pub fn parse_types(s: &str) -> Result<Vec<Elem>, JobError> {
    if s.trim() == "all" {
        return Ok(Elem::ALL.to_vec());
    }
    s.split(',')
        .map(|t| t.trim().parse::<Elem>().map_err(JobError::new))
        .collect()
}

/// Parse a comma list of call modes (`oneway,twoway,echo`).
pub fn parse_modes(s: &str) -> Result<Vec<CallMode>, JobError> {
    s.split(',')
        .map(|t| t.trim().parse::<CallMode>().map_err(JobError::new))
        .collect()
}

/// The serde form of a list of element types: bench.idl's tokens
/// (`["octet", "perfstruct"]`); also read from one comma list or `all`.
pub mod elems {
    use iiop_bench_idl::bench::elements::Elem;
    use serde::ser::SerializeSeq;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[Elem], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(v.len()))?;
        for e in v {
            seq.serialize_element(e.token())?;
        }
        seq.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Elem>, D::Error> {
        super::words(d, super::parse_types)
    }
}

/// The serde form of a list of call modes (`["oneway", "twoway"]`); also
/// read from one comma list.
pub mod modes {
    use iiop_bench_idl::bench::elements::CallMode;
    use serde::ser::SerializeSeq;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[CallMode], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(v.len()))?;
        for m in v {
            seq.serialize_element(m.name())?;
        }
        seq.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<CallMode>, D::Error> {
        super::words(d, super::parse_modes)
    }
}

/// A list read from a list of words or one comma list, each word parsed
/// by `parse` (a comma list).
fn words<'de, D, T>(d: D, parse: fn(&str) -> Result<Vec<T>, JobError>) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Form {
        List(Vec<String>),
        One(String),
    }
    let text = match <Form as serde::Deserialize>::deserialize(d)? {
        Form::List(v) => v.join(","),
        Form::One(s) => s,
    };
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    parse(&text).map_err(serde::de::Error::custom)
}

/// A short stable name for an error, used as the key of `errors`.
pub fn error_kind(e: &iiop_bench_idl::client::BenchError) -> String {
    use iiop_bench_idl::client::BenchError as B;
    use iiop_transport::client::ClientError as C;
    match e {
        B::Call(C::System(s)) => s.repo_id.to_string(),
        B::Call(C::User { repo_id, .. }) => repo_id.clone(),
        B::Call(C::Timeout { .. }) => "timeout".into(),
        B::Call(C::Closed { .. }) => "connection-closed".into(),
        B::Call(C::Io { .. }) => "io-error".into(),
        B::Call(C::Connect { .. }) | B::Call(C::ConnectTimeout { .. }) => "connect-failed".into(),
        B::Call(C::PeerMessageError { .. }) => "peer-message-error".into(),
        B::Call(C::Protocol { .. }) => "malformed-reply".into(),
        B::Call(C::ReplyVersion { .. }) => "reply-version".into(),
        B::Call(C::TooManyForwards { .. }) => "too-many-forwards".into(),
        B::Call(_) => "call-failed".into(),
        B::Decode { .. } => "undecodable-reply".into(),
        B::Reference(_) => "bad-reference".into(),
    }
}

/// Count one error of `kind`.
pub fn count_error(errors: &mut BTreeMap<String, u64>, kind: String) {
    *errors.entry(kind).or_insert(0) += 1;
}

/// While alive, runs `close` once Ctrl-C (or SIGTERM) is seen (woken by
/// it, not by a timer on the client's CPU): calls that wait on the runtime
/// for a server that does not answer then end at once instead of at their
/// timeout. (A connection that waits on read checks the flag itself.)
#[derive(Debug)]
pub(crate) struct CloseOnInterrupt(tokio::task::JoinHandle<()>);

impl CloseOnInterrupt {
    pub(crate) fn new(close: impl FnOnce() + Send + 'static) -> CloseOnInterrupt {
        CloseOnInterrupt(tokio::spawn(async move {
            crate::interrupt::stopped().await;
            close();
        }))
    }

    /// Close `c`'s connection on Ctrl-C.
    pub(crate) fn closing(c: &iiop_bench_idl::client::BenchClient) -> CloseOnInterrupt {
        let c = c.clone();
        CloseOnInterrupt::new(move || c.close())
    }
}

impl Drop for CloseOnInterrupt {
    fn drop(&mut self) {
        self.0.abort();
    }
}
