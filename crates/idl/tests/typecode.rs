//! `Spec::to_typecode` against TypeCodes omniORB itself marshalled
//! (`fixtures/cdr/omniorb-any/`: each `.bin` starts with the TypeCode of
//! the Any's value, types from `anyfx.idl`), and structural facts for
//! bench.idl and the feature corpus.

mod common;

use iiop_cdr::{ByteOrder, Reader, TCKind, TcDef, TypeCode};
use iiop_idl::{Options, Spec, Type};

fn fixture_dir() -> std::path::PathBuf {
    common::crate_dir().join("../../fixtures/cdr/omniorb-any")
}

fn omniorb_tc(file: &str) -> TypeCode {
    let data = std::fs::read(fixture_dir().join(file)).unwrap();
    let mut r = Reader::new(&data, ByteOrder::Little);
    TypeCode::decode(&mut r).unwrap()
}

fn ours(spec: &Spec, name: &str) -> TypeCode {
    spec.def_typecode(spec.lookup(name).unwrap_or_else(|| panic!("{name}")))
        .unwrap()
}

#[test]
fn typecodes_equal_what_omniorb_marshals() {
    let spec = iiop_idl::parse_file(fixture_dir().join("anyfx.idl"), &Options::default()).unwrap();
    for (file, name) in [
        ("cd.bin", "Fx::CD"),
        ("cdseq.bin", "Fx::CDSeq"),
        ("union_green.bin", "Fx::U"),
        ("union_default.bin", "Fx::U"),
        ("node.bin", "Fx::Node"),
        ("mixed.bin", "Fx::Mixed"),
        ("pair.bin", "Fx::Pair"),
        ("outer.bin", "Fx::Outer"),
    ] {
        let theirs = omniorb_tc(file);
        let mine = ours(&spec, name);
        assert!(
            mine.equal(&theirs),
            "{file}: ours {mine:?}\n omniORB {theirs:?}"
        );
    }
    assert!(ours(&spec, "Fx::Node").is_recursion_target());
    assert!(omniorb_tc("long.bin").equal(&spec.to_typecode(&Type::Long).unwrap()));
}

#[test]
fn bench_typecodes() {
    let spec = iiop_idl::parse_file(common::bench_idl(), &Options::default()).unwrap();
    let op = spec
        .find_operation("Bench::Perf", "echo_perfstruct")
        .unwrap();
    let tc = spec.to_typecode(&op.result).unwrap();
    assert_eq!(tc.kind(), TCKind::tk_alias);
    assert_eq!(tc.id(), Some("IDL:Bench/PerfStructSeq:1.0"));
    assert_eq!(tc.name(), Some("PerfStructSeq"));
    let seq = tc.content_type().unwrap();
    assert_eq!(seq.kind(), TCKind::tk_sequence);
    assert_eq!(seq.length(), Some(0));
    let st = seq.content_type().unwrap();
    assert_eq!(st.kind(), TCKind::tk_struct);
    assert_eq!(st.id(), Some("IDL:Bench/PerfStruct:1.0"));
    let names: Vec<&str> = (0..st.member_count().unwrap())
        .map(|i| st.member_name(i).unwrap())
        .collect();
    assert_eq!(names, ["s", "c", "l", "o", "d"]);
    assert_eq!(st.member_type(4).unwrap().kind(), TCKind::tk_double);

    let v = ours(&spec, "Bench::Variant");
    assert_eq!(v.kind(), TCKind::tk_union);
    assert_eq!(v.default_index(), Some(3));
    assert_eq!(v.member_count(), Some(4));
    assert_eq!(
        (0..3)
            .map(|i| v.member_label(i).unwrap())
            .collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!(v.discriminator_type().unwrap().kind(), TCKind::tk_long);

    let single = spec.find_operation("Bench::Perf", "get_single").unwrap();
    let tc = spec.to_typecode(&single.result).unwrap();
    assert_eq!(tc.kind(), TCKind::tk_objref);
    assert_eq!(tc.id(), Some("IDL:Bench/Single:1.0"));
    assert_eq!(tc.name(), Some("Single"));
}

#[test]
fn feature_corpus_typecodes() {
    let file = common::crate_dir().join("../../fixtures/idl/corpus/features.idl");
    let spec = iiop_idl::parse_file(file, &Options::default()).unwrap();
    // long Grid[3][4] is array<array<long,4>,3> under the alias.
    let grid = ours(&spec, "Top::Grid");
    let outer = grid.content_type().unwrap();
    assert_eq!((outer.kind(), outer.length()), (TCKind::tk_array, Some(3)));
    let inner = outer.content_type().unwrap();
    assert_eq!((inner.kind(), inner.length()), (TCKind::tk_array, Some(4)));
    assert_eq!(inner.content_type().unwrap().kind(), TCKind::tk_long);

    let money = ours(&spec, "Top::Money");
    assert_eq!(
        money.content_type().unwrap().fixed_digits_scale(),
        Some((9, 2))
    );

    // Multiple labels give one member each; enum labels are ordinals.
    let by_enum = ours(&spec, "Top::ByEnum");
    assert_eq!(by_enum.member_count(), Some(3));
    assert_eq!(
        (0..3)
            .map(|i| by_enum.member_label(i).unwrap())
            .collect::<Vec<_>>(),
        [0, 1, 2]
    );
    assert_eq!(by_enum.member_name(2), Some("big"));
    assert_eq!(by_enum.default_index(), Some(-1));
    let by_char = ours(&spec, "Top::ByChar");
    assert_eq!(by_char.member_label(1), Some(b'b' as i64));
    assert_eq!(by_char.default_index(), Some(2));

    // Recursion through a forward-declared union and a typedef'd sequence.
    let u = ours(&spec, "Top::U");
    assert!(u.is_recursion_target());
    let more = u
        .member_type(0)
        .unwrap()
        .content_type()
        .unwrap()
        .content_type()
        .unwrap();
    assert!(more.is_recursive_ref());

    let node = ours(&spec, "Top::Node");
    assert!(node.is_recursion_target());
    assert!(!node.has_unbound_recursion());
    // Recursive TypeCodes go out as indirections and come back equal.
    for tc in [&node, &u] {
        let mut buf = bytes::BytesMut::new();
        tc.encode(&mut iiop_cdr::Writer::new(&mut buf, ByteOrder::Big))
            .unwrap();
        assert!(
            buf.windows(4).any(|w| w == [0xff, 0xff, 0xff, 0xff]),
            "no indirection"
        );
        let back = TypeCode::decode(&mut Reader::new(&buf, ByteOrder::Big)).unwrap();
        assert!(back.equal(tc));
    }

    let v2 = ours(&spec, "Top::V2");
    match v2.def() {
        TcDef::Value {
            modifier,
            base,
            members,
            ..
        } => {
            assert_eq!(*modifier, 3);
            assert_eq!(base.as_ref().unwrap().id(), Some("IDL:Top/V1:1.0"));
            assert_eq!(members.len(), 1);
            assert_eq!(members[0].visibility, 1);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        ours(&spec, "Top::Abs").kind(),
        TCKind::tk_abstract_interface
    );
    assert_eq!(ours(&spec, "Top::Loc").kind(), TCKind::tk_local_interface);
    assert_eq!(ours(&spec, "Top::Opaque").kind(), TCKind::tk_native);
    assert_eq!(ours(&spec, "Top::Boxed").kind(), TCKind::tk_value_box);
    assert_eq!(
        spec.to_typecode(&Type::Object).unwrap().id(),
        Some("IDL:omg.org/CORBA/Object:1.0")
    );

    // A struct declared but never defined has no TypeCode.
    let spec = iiop_idl::parse_str(
        "t.idl",
        "struct S;\ntypedef sequence<S> SSeq;",
        &Options::default(),
    )
    .unwrap();
    let e = spec.def_typecode(spec.lookup("S").unwrap()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.idl:1:8: '::S' is declared but never defined"
    );
}

/// Every type of every omniORB IDL file converts, and its TypeCode
/// survives a CDR encode/decode round trip unchanged (recursive ones
/// would go out as indirections; the corpus has none, `feature_corpus_typecodes`
/// and the omniORB fixtures cover them).
#[test]
fn every_omniorb_type_converts_and_round_trips() {
    use iiop_idl::DefKind;
    let mut converted = 0;
    let mut recursive = 0;
    for f in common::idl_files(std::path::Path::new(common::OMNI)) {
        let rel = f
            .strip_prefix(common::OMNI)
            .unwrap()
            .to_string_lossy()
            .to_string();
        if common::BROKEN_AS_SHIPPED.contains(&rel.as_str()) {
            continue;
        }
        let spec = iiop_idl::parse_file(&f, &common::omni_opts()).unwrap();
        for (id, d) in spec.iter() {
            let is_type = match &d.kind {
                DefKind::Struct(s) | DefKind::Exception(s) => s.defined,
                DefKind::Union(u) => u.defined,
                DefKind::Value(v) => v.defined,
                DefKind::Enum(_)
                | DefKind::Typedef(_)
                | DefKind::Interface(_)
                | DefKind::ValueBox(_)
                | DefKind::Native => true,
                _ => false,
            };
            if !is_type {
                continue;
            }
            let tc = spec
                .def_typecode(id)
                .unwrap_or_else(|e| panic!("{rel}: {}: {e}", d.scoped_name));
            assert_eq!(tc.id(), Some(d.repo_id.as_str()), "{}", d.scoped_name);
            assert!(!tc.has_unbound_recursion(), "{}", d.scoped_name);
            recursive += tc.is_recursion_target() as usize;
            for order in [ByteOrder::Big, ByteOrder::Little] {
                let mut buf = bytes::BytesMut::new();
                tc.encode(&mut iiop_cdr::Writer::new(&mut buf, order))
                    .unwrap();
                let back = TypeCode::decode(&mut Reader::new(&buf, order)).unwrap();
                assert!(back.equal(&tc), "{rel}: {} round trip", d.scoped_name);
            }
            converted += 1;
        }
    }
    // Counted over all files, so definitions from shared includes repeat.
    println!("{converted} TypeCodes, {recursive} recursive");
    assert!(converted > 3500, "{converted}");
}

#[test]
fn eventtype_and_custom_value_typecodes() {
    let spec = iiop_idl::parse_str(
        "e.idl",
        "abstract valuetype A {};\nvaluetype C : A { public long x; };\neventtype E { private string s; };\n\
         custom valuetype K { public short k; };",
        &Options::default(),
    )
    .unwrap();
    let e = ours(&spec, "E");
    assert_eq!(e.kind(), TCKind::tk_event);
    assert_eq!(e.id(), Some("IDL:E:1.0"));
    let c = ours(&spec, "C");
    match c.def() {
        TcDef::Value {
            modifier,
            base,
            members,
            ..
        } => {
            // An abstract base is not the concrete base of the TypeCode.
            assert_eq!(*modifier, 0);
            assert!(base.is_none());
            assert_eq!(members[0].name, "x");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        ours(&spec, "K").def(),
        TcDef::Value { modifier: 1, .. }
    ));
    assert!(matches!(
        ours(&spec, "A").def(),
        TcDef::Value { modifier: 2, .. }
    ));
}
