//! The servers crate describes bench.idl by hand (element TypeCodes,
//! operation names and oneway flags). The model parsed from the IDL must
//! agree with it exactly, so the dynamic path and the hand-written one
//! can never drift apart.

mod common;

use iiop_bench_idl::bench::types::seq_typecode;
use iiop_bench_idl::bench::{CallMode, Elem};
use iiop_idl::{Direction, Options, Type};

#[test]
fn payload_operations_and_typecodes_match_the_servers_tables() {
    let spec = iiop_idl::parse_file(common::bench_idl(), &Options::default()).unwrap();
    for elem in Elem::ALL {
        let seq = spec.lookup(&format!("Bench::{}", elem.seq_name())).unwrap();
        assert_eq!(spec.def(seq).repo_id, elem.seq_repo_id());
        let ours = spec.def_typecode(seq).unwrap();
        let theirs = seq_typecode(elem);
        assert!(
            ours.equal(&theirs),
            "{elem}: ours {ours:?}\n servers {theirs:?}"
        );
        for mode in [CallMode::Oneway, CallMode::Twoway, CallMode::Echo] {
            let name = elem.op_name(mode);
            let op = spec
                .find_operation("Bench::Perf", name)
                .unwrap_or_else(|| panic!("Perf::{name} missing"));
            assert_eq!(op.oneway, mode == CallMode::Oneway, "{name}");
            assert_eq!(op.params.len(), 1, "{name}");
            assert_eq!(op.params[0].dir, Direction::In);
            assert!(
                spec.to_typecode(&op.params[0].ty).unwrap().equal(&theirs),
                "{name}"
            );
            match mode {
                CallMode::Echo => assert!(spec.to_typecode(&op.result).unwrap().equal(&theirs)),
                _ => assert_eq!(op.result, Type::Void, "{name}"),
            }
        }
    }
}

#[test]
fn every_idl_operation_is_served_with_the_same_oneway_flag() {
    use iiop_bench_idl::bench::{Object, Op};
    let spec = iiop_idl::parse_file(common::bench_idl(), &Options::default()).unwrap();
    for (obj, iface) in [
        (Object::Perf, "Bench::Perf"),
        (Object::Dispatch50, "Bench::Dispatch50"),
        (Object::Dispatch500, "Bench::Dispatch500"),
        (Object::Single(7), "Bench::Single"),
    ] {
        let id = spec.lookup(iface).unwrap();
        assert_eq!(spec.def(id).repo_id, obj.repo_id());
        let ops = spec.operations(id);
        assert!(!ops.is_empty());
        for (i, op) in ops.iter().enumerate() {
            let served = obj
                .op(&op.name)
                .unwrap_or_else(|| panic!("{iface}::{} not served", op.name));
            assert_eq!(served.is_oneway(), op.oneway, "{iface}::{}", op.name);
            if let Op::Noop(pos) = served {
                assert_eq!(pos as usize, i, "{iface}::{}", op.name);
            }
        }
    }
}

#[test]
fn valuetype_typecodes_and_operations_match_the_servers_tables() {
    use iiop_bench_idl::bench::values::*;
    let spec = iiop_idl::parse_file(common::bench_idl(), &Options::default()).unwrap();
    for (name, theirs) in [
        ("Bench::Node", node_typecode()),
        ("Bench::TaggedNode", tagged_node_typecode()),
        ("Bench::LongBox", long_box_typecode()),
        ("Bench::NodeSeq", node_seq_typecode()),
    ] {
        let id = spec.lookup(name).unwrap();
        let ours = spec.def_typecode(id).unwrap();
        assert!(
            ours.equal(&theirs),
            "{name}: ours {ours:?}\n servers {theirs:?}"
        );
        assert_eq!(Some(spec.def(id).repo_id.as_str()), theirs.id(), "{name}");
    }
    let tc = |op: &str, i: usize| {
        let op = spec.find_operation("Bench::Perf", op).unwrap();
        (
            spec.to_typecode(&op.params[i].ty).unwrap(),
            spec.to_typecode(&op.result).unwrap(),
        )
    };
    let (p, r) = tc("echo_node", 0);
    assert!(p.equal(&node_typecode()) && r.equal(&node_typecode()));
    let (p, r) = tc("echo_nodes", 0);
    assert!(p.equal(&node_seq_typecode()) && r.equal(&node_seq_typecode()));
    let (p, r) = tc("echo_box", 0);
    assert!(p.equal(&long_box_typecode()) && r.equal(&long_box_typecode()));
    let (a, r) = tc("same_node", 0);
    let (b, _) = tc("same_node", 1);
    assert!(a.equal(&node_typecode()) && b.equal(&node_typecode()));
    assert_eq!(r.kind(), iiop_cdr::TCKind::tk_boolean);
}

#[test]
fn bench_error_and_the_any_operations_match_the_servers_tables() {
    use iiop_bench_idl::bench::anys::*;
    let spec = iiop_idl::parse_file(common::bench_idl(), &Options::default()).unwrap();
    let id = spec.lookup("Bench::BenchError").unwrap();
    let ours = spec.def_typecode(id).unwrap();
    let theirs = bench_error_typecode();
    assert!(ours.equal(&theirs), "ours {ours:?}\n servers {theirs:?}");
    assert_eq!(spec.def(id).repo_id, BENCH_ERROR_ID);
    let raise = spec.find_operation("Bench::Perf", "raise_user").unwrap();
    assert_eq!(raise.raises.len(), 1);
    let kinds: Vec<_> = raise
        .params
        .iter()
        .map(|p| spec.to_typecode(&p.ty).unwrap().kind())
        .collect();
    use iiop_cdr::TCKind::*;
    assert_eq!(kinds, [tk_long, tk_string, tk_ulong]);
    let echo = spec.find_operation("Bench::Perf", "echo_any").unwrap();
    assert_eq!(spec.to_typecode(&echo.result).unwrap().kind(), tk_any);
    assert_eq!(spec.to_typecode(&echo.params[0].ty).unwrap().kind(), tk_any);
}
