//! The objects and operations of bench.idl, resolved from what arrives on
//! the wire (object key, operation name) to small enums, once per request,
//! with one hash lookup.

use std::sync::OnceLock;

use fnv::FnvHashMap;

use super::elements::{CallMode, Elem};

/// Number of `Bench::Single` objects (keys `Single0` … `Single499`).
pub const SINGLES: u32 = 500;

/// Repository ids of the interfaces.
pub const PERF_ID: &str = "IDL:Bench/Perf:1.0";
pub const DISPATCH50_ID: &str = "IDL:Bench/Dispatch50:1.0";
pub const DISPATCH500_ID: &str = "IDL:Bench/Dispatch500:1.0";
pub const SINGLE_ID: &str = "IDL:Bench/Single:1.0";
pub const CALLBACK_ID: &str = "IDL:Bench/Callback:1.0";
pub const OBJECT_ID: &str = "IDL:omg.org/CORBA/Object:1.0";

/// The prefix of the long, POA-style object keys that the objects also
/// answer to: shaped like TAO's POA keys (`14 01 0F 00`, then a POA path),
/// followed by the short key. A server in forwarding mode (the way TAO's
/// IORTable and Yoko's BootManager behave) answers requests on the short
/// keys with a forward to these.
pub const POA_KEY_PREFIX: &[u8] = b"\x14\x01\x0f\x00IIOPBENCH\x00RootPOA/BenchPOA\x00";

/// One of bench.idl's objects, from its object key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Object {
    /// Key `Bench`.
    Perf,
    /// Key `Dispatch50`.
    Dispatch50,
    /// Key `Dispatch500`.
    Dispatch500,
    /// Key `Single<i>`.
    Single(u32),
}

impl Object {
    /// Resolve an object key, short (`Bench`) or long
    /// ([`POA_KEY_PREFIX`] + short); `None` for keys we do not serve.
    pub fn from_key(key: &[u8]) -> Option<Object> {
        Object::from_short_key(key.strip_prefix(POA_KEY_PREFIX).unwrap_or(key))
    }

    /// Whether `key` is one of the short keys (`Bench`, `Single0` …), not
    /// a long POA-style one.
    pub fn is_short_key(key: &[u8]) -> bool {
        !key.starts_with(POA_KEY_PREFIX)
    }

    /// The long, POA-style object key ([`POA_KEY_PREFIX`] + short key).
    pub fn long_key(self) -> Vec<u8> {
        let mut k = POA_KEY_PREFIX.to_vec();
        k.extend_from_slice(&self.key());
        k
    }

    fn from_short_key(key: &[u8]) -> Option<Object> {
        match key {
            b"Bench" => Some(Object::Perf),
            b"Dispatch50" => Some(Object::Dispatch50),
            b"Dispatch500" => Some(Object::Dispatch500),
            _ => {
                let rest = key.strip_prefix(b"Single")?;
                if rest.is_empty() || rest.len() > 3 || (rest.len() > 1 && rest[0] == b'0') {
                    return None;
                }
                let n = std::str::from_utf8(rest).ok()?.parse::<u32>().ok()?;
                (n < SINGLES).then_some(Object::Single(n))
            }
        }
    }

    /// The object key.
    pub fn key(self) -> Vec<u8> {
        match self {
            Object::Perf => b"Bench".to_vec(),
            Object::Dispatch50 => b"Dispatch50".to_vec(),
            Object::Dispatch500 => b"Dispatch500".to_vec(),
            Object::Single(i) => format!("Single{i}").into_bytes(),
        }
    }

    /// The most derived interface's repository id.
    pub fn repo_id(self) -> &'static str {
        match self {
            Object::Perf => PERF_ID,
            Object::Dispatch50 => DISPATCH50_ID,
            Object::Dispatch500 => DISPATCH500_ID,
            Object::Single(_) => SINGLE_ID,
        }
    }

    /// `_is_a`: the interface itself or CORBA::Object.
    pub fn is_a(self, id: &str) -> bool {
        id == self.repo_id() || id == OBJECT_ID
    }

    /// Resolve an operation name on this object.
    pub fn op(self, name: &str) -> Option<Op> {
        if let Some(op) = builtin(name) {
            return Some(op);
        }
        match self {
            Object::Perf => perf_ops().get(name).copied(),
            Object::Dispatch50 => method_index(name, 2, 50),
            Object::Dispatch500 => method_index(name, 3, 500),
            Object::Single(_) => (name == "op").then_some(Op::Noop(0)),
        }
    }
}

/// An operation of bench.idl (or of CORBA::Object).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `_is_a(in string id)`.
    IsA,
    /// `_non_existent()` (and the pre-2.3 spelling `_not_existent`).
    NonExistent,
    /// `_interface()`: we have no Interface Repository.
    Interface,
    /// `_repository_id()` (CORBA 3).
    RepositoryId,
    Ping,
    Reset,
    GetStats,
    Mark,
    Work,
    GetSingle,
    PassCd,
    PassBoth,
    PassChars,
    PassDoubles,
    /// `echo_node(in Node n)`.
    EchoNode,
    /// `echo_nodes(in NodeSeq s)`.
    EchoNodes,
    /// `echo_box(in LongBox b)`.
    EchoBox,
    /// `same_node(in Node a, in Node b)`.
    SameNode,
    /// `raise_user(in long code, in string reason, in unsigned long
    /// detail_len)`, which raises `BenchError`.
    RaiseUser,
    /// `echo_any(in any a)`.
    EchoAny,
    /// `call_back(in Callback cb, in long n)`: bidirectional GIOP.
    CallBack,
    /// A payload operation.
    Payload(Elem, CallMode),
    /// A no-op dispatch method (`m00` … / `op`), with its position.
    Noop(u16),
}

impl Op {
    /// Whether the operation is declared oneway in bench.idl.
    pub fn is_oneway(self) -> bool {
        matches!(self, Op::Mark | Op::Payload(_, CallMode::Oneway))
    }
}

fn builtin(name: &str) -> Option<Op> {
    Some(match name {
        "_is_a" => Op::IsA,
        "_non_existent" | "_not_existent" => Op::NonExistent,
        "_interface" => Op::Interface,
        "_repository_id" => Op::RepositoryId,
        _ => return None,
    })
}

fn method_index(name: &str, digits: usize, n: u16) -> Option<Op> {
    let d = name.strip_prefix('m')?;
    if d.len() != digits || !d.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let i: u16 = d.parse().ok()?;
    (i < n).then_some(Op::Noop(i))
}

/// The operation table: FNV-1a, not SipHash. Its keys are fixed when it
/// is built, so a peer's names cannot crowd one bucket, and a short name
/// hashes faster (once per request).
type OpTable = FnvHashMap<String, Op>;

fn perf_ops() -> &'static OpTable {
    static OPS: OnceLock<OpTable> = OnceLock::new();
    OPS.get_or_init(|| {
        let mut m = OpTable::default();
        for (name, op) in [
            ("ping", Op::Ping),
            ("reset", Op::Reset),
            ("get_stats", Op::GetStats),
            ("mark", Op::Mark),
            ("work", Op::Work),
            ("get_single", Op::GetSingle),
            ("pass_cd", Op::PassCd),
            ("pass_both", Op::PassBoth),
            ("pass_chars", Op::PassChars),
            ("pass_doubles", Op::PassDoubles),
            ("echo_node", Op::EchoNode),
            ("echo_nodes", Op::EchoNodes),
            ("echo_box", Op::EchoBox),
            ("same_node", Op::SameNode),
            ("raise_user", Op::RaiseUser),
            ("echo_any", Op::EchoAny),
            ("call_back", Op::CallBack),
        ] {
            m.insert(name.to_string(), op);
        }
        for e in Elem::ALL {
            for mode in [CallMode::Oneway, CallMode::Twoway, CallMode::Echo] {
                m.insert(e.op_name(mode).to_string(), Op::Payload(e, mode));
            }
        }
        m
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        assert_eq!(Object::from_key(b"Bench"), Some(Object::Perf));
        assert_eq!(Object::from_key(b"Single0"), Some(Object::Single(0)));
        assert_eq!(Object::from_key(b"Single499"), Some(Object::Single(499)));
        for bad in [
            &b"Single500"[..],
            b"Single",
            b"Single07",
            b"Single-1",
            b"bench",
            b"",
        ] {
            assert_eq!(Object::from_key(bad), None, "{bad:?}");
        }
        for o in [
            Object::Perf,
            Object::Dispatch50,
            Object::Dispatch500,
            Object::Single(42),
        ] {
            assert_eq!(Object::from_key(&o.key()), Some(o));
            assert_eq!(Object::from_key(&o.long_key()), Some(o));
            assert!(Object::is_short_key(&o.key()));
            assert!(!Object::is_short_key(&o.long_key()));
        }
        let mut bad = POA_KEY_PREFIX.to_vec();
        bad.extend_from_slice(b"Single500");
        assert_eq!(Object::from_key(&bad), None);
        assert_eq!(Object::from_key(POA_KEY_PREFIX), None);
    }

    #[test]
    fn operations() {
        let p = Object::Perf;
        assert_eq!(
            p.op("echo_perfstruct"),
            Some(Op::Payload(Elem::PerfStruct, CallMode::Echo))
        );
        assert_eq!(
            p.op("send_oneway_octet"),
            Some(Op::Payload(Elem::Octet, CallMode::Oneway))
        );
        assert_eq!(p.op("get_stats"), Some(Op::GetStats));
        assert_eq!(p.op("echo_node"), Some(Op::EchoNode));
        assert_eq!(p.op("same_node"), Some(Op::SameNode));
        assert_eq!(p.op("raise_user"), Some(Op::RaiseUser));
        assert_eq!(p.op("echo_any"), Some(Op::EchoAny));
        assert_eq!(p.op("_non_existent"), Some(Op::NonExistent));
        assert_eq!(p.op("m00"), None);
        assert_eq!(p.op("echo_quaternion"), None);
        assert_eq!(Object::Dispatch50.op("m49"), Some(Op::Noop(49)));
        assert_eq!(Object::Dispatch50.op("m50"), None);
        assert_eq!(Object::Dispatch50.op("m5"), None);
        assert_eq!(Object::Dispatch500.op("m499"), Some(Op::Noop(499)));
        assert_eq!(Object::Dispatch500.op("m49"), None);
        assert_eq!(Object::Single(3).op("op"), Some(Op::Noop(0)));
        assert!(Op::Mark.is_oneway() && !Op::Ping.is_oneway());
        assert!(p.is_a(PERF_ID) && p.is_a(OBJECT_ID) && !p.is_a(SINGLE_ID));
    }
}
