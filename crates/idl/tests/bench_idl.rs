//! Facts about `fixtures/idl/bench.idl` that the CLI and servers rely on.

mod common;

use iiop_idl::{DefKind, Direction, Options, Type};

fn spec() -> iiop_idl::Spec {
    iiop_idl::parse_file(common::bench_idl(), &Options::default()).unwrap()
}

#[test]
fn perf_has_10_control_78_payload_4_valuetype_2_any_and_1_callback_operations() {
    let spec = spec();
    let perf = spec.lookup("Bench::Perf").unwrap();
    assert_eq!(spec.def(perf).repo_id, "IDL:Bench/Perf:1.0");
    let ops = spec.operations(perf);
    assert_eq!(ops.len(), 95);
    let values: Vec<&str> = ops[88..92].iter().map(|o| o.name.as_str()).collect();
    assert_eq!(values, ["echo_node", "echo_nodes", "echo_box", "same_node"]);
    let anys: Vec<&str> = ops[92..94].iter().map(|o| o.name.as_str()).collect();
    assert_eq!(anys, ["raise_user", "echo_any"]);
    // CALLBACKS: the last operation, in a block of its own.
    let cb = &ops[94];
    assert_eq!(cb.name, "call_back");
    assert_eq!(cb.params.len(), 2);
    let callback = spec.lookup("Bench::Callback").unwrap();
    assert_eq!(spec.def(callback).repo_id, "IDL:Bench/Callback:1.0");
    let cb_ops = spec.operations(callback);
    let notify: Vec<&str> = cb_ops.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(notify, ["notify"]);
    let names: Vec<&str> = ops.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(
        &names[..10],
        &[
            "ping",
            "reset",
            "get_stats",
            "mark",
            "work",
            "get_single",
            "pass_cd",
            "pass_both",
            "pass_chars",
            "pass_doubles"
        ]
    );
    let payload = ops[10..88]
        .iter()
        .filter(|o| o.name.starts_with("send_") || o.name.starts_with("echo_"))
        .count();
    assert_eq!(payload, 78);
    assert_eq!(ops.iter().filter(|o| o.oneway).count(), 27);

    let echo = spec
        .find_operation("Bench::Perf", "echo_perfstruct")
        .unwrap();
    assert_eq!(spec.type_name(&echo.result), "::Bench::PerfStructSeq");
    assert_eq!(echo.params.len(), 1);
    assert_eq!(echo.params[0].dir, Direction::In);
    assert_eq!(echo.params[0].name, "s");
    // The typedef resolves to a sequence of the struct.
    match spec.unalias(&echo.result) {
        Type::Sequence(elem, None) => {
            assert_eq!(spec.type_name(elem), "::Bench::PerfStruct");
            let Type::Named(id) = **elem else {
                panic!("{elem:?}")
            };
            let DefKind::Struct(s) = &spec.def(id).kind else {
                panic!()
            };
            let members: Vec<(String, String)> = s
                .members
                .iter()
                .map(|m| (m.name.clone(), spec.type_name(&m.ty)))
                .collect();
            assert_eq!(
                members,
                [
                    ("s", "short"),
                    ("c", "char"),
                    ("l", "long"),
                    ("o", "octet"),
                    ("d", "double")
                ]
                .map(|(a, b)| (a.to_string(), b.to_string()))
            );
        }
        other => panic!("{other:?}"),
    }

    let mark = spec.find_operation("::Bench::Perf", "mark").unwrap();
    assert!(mark.oneway);
    assert_eq!(mark.params[0].ty, Type::ULongLong);
    let work = spec.find_operation("Bench::Perf", "work").unwrap();
    assert_eq!(work.result, Type::Double);
    assert_eq!(
        work.params
            .iter()
            .map(|p| spec.type_name(&p.ty))
            .collect::<Vec<_>>(),
        ["double", "::Bench::ServiceDist", "::Bench::ServiceKind"]
    );
    assert_eq!(spec.lookup_repo_id("IDL:Bench/Perf:1.0"), Some(perf));
    assert_eq!(spec.lookup_repo_id("IDL:Bench/Nope:1.0"), None);
    assert!(spec.find_operation("Bench::Perf", "no_such_op").is_none());
    assert!(spec.find_operation("Bench::Nope", "ping").is_none());
}

#[test]
fn dispatch500_has_m000_to_m499_in_order() {
    let spec = spec();
    let id = spec.lookup("Bench::Dispatch500").unwrap();
    let names: Vec<String> = spec.operations(id).into_iter().map(|o| o.name).collect();
    let expected: Vec<String> = (0..500).map(|i| format!("m{i:03}")).collect();
    assert_eq!(names, expected);
    let d50 = spec.lookup("Bench::Dispatch50").unwrap();
    assert_eq!(spec.operations(d50).len(), 50);
    assert_eq!(spec.operations(d50)[49].name, "m49");
}

#[test]
fn variant_union_and_color_enum() {
    let spec = spec();
    let v = spec.lookup("Bench::Variant").unwrap();
    let DefKind::Union(u) = &spec.def(v).kind else {
        panic!()
    };
    assert_eq!(u.discriminator, Type::Long);
    assert_eq!(u.cases.len(), 4);
    assert_eq!(
        u.cases[2].labels,
        vec![iiop_idl::CaseLabel::Value(iiop_idl::ConstValue::Int(3))]
    );
    assert_eq!(u.cases[2].ty, Type::String(None));
    assert_eq!(u.cases[3].labels, vec![iiop_idl::CaseLabel::Default]);
    let c = spec.lookup("Bench::Color").unwrap();
    let DefKind::Enum(names) = &spec.def(c).kind else {
        panic!()
    };
    assert_eq!(names, &["RED", "GREEN", "BLUE"]);
    let blue = spec.lookup("Bench::BLUE").unwrap();
    assert!(matches!(spec.def(blue).kind, DefKind::Enumerator { of, index: 2 } if of == c));
}
