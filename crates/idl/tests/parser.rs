//! Parser behaviour on small IDL texts: repository ids, scoping, constant
//! evaluation, inheritance, skipped constructs and diagnostics.

use iiop_idl::{parse_str, CaseLabel, ConstValue, DefKind, Options, Spec, Type};

fn parse(text: &str) -> Spec {
    parse_str("t.idl", text, &Options::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str) -> String {
    parse_str("t.idl", text, &Options::default())
        .unwrap_err()
        .to_string()
}

fn rid(spec: &Spec, name: &str) -> String {
    spec.def(
        spec.lookup(name)
            .unwrap_or_else(|| panic!("{name} not found")),
    )
    .repo_id
    .clone()
}

fn const_value(spec: &Spec, name: &str) -> ConstValue {
    match &spec.def(spec.lookup(name).unwrap()).kind {
        DefKind::Const { value, .. } => value.clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn pragma_example_from_the_corba_spec() {
    // CORBA 3.0 section 10.7.5 (RepositoryId examples).
    let spec = parse(
        "module M1 { typedef long T1; typedef long T2;\n#pragma ID T2 \"DCE:d62207a2-011e-11ce-88b4-0800090b5d3e:3\"\n};\n\
         #pragma prefix \"P1\"\nmodule M2 { module M3 {\n#pragma prefix \"P2\"\n typedef long T3; }; typedef long T4;\n\
         #pragma version T4 2.4\n};\n",
    );
    assert_eq!(rid(&spec, "M1::T1"), "IDL:M1/T1:1.0");
    assert_eq!(
        rid(&spec, "M1::T2"),
        "DCE:d62207a2-011e-11ce-88b4-0800090b5d3e:3"
    );
    assert_eq!(rid(&spec, "M2::M3::T3"), "IDL:P2/T3:1.0");
    assert_eq!(rid(&spec, "M2::T4"), "IDL:P1/M2/T4:2.4");
    assert_eq!(rid(&spec, "M2"), "IDL:P1/M2:1.0");
    assert_eq!(rid(&spec, "M2::M3"), "IDL:P1/M2/M3:1.0");
}

#[test]
fn typeprefix_and_typeid() {
    let spec = parse(
        "module A { typeprefix A \"org.example\"; struct S { long x; }; };\n\
         module B { typedef long T; typeid T \"IDL:custom/T:9.9\"; };\n\
         typeprefix B \"late.example\";\nmodule B { typedef long U; };\n",
    );
    assert_eq!(rid(&spec, "A::S"), "IDL:org.example/S:1.0");
    assert_eq!(rid(&spec, "B::T"), "IDL:custom/T:9.9");
    assert_eq!(rid(&spec, "B::U"), "IDL:late.example/U:1.0");
}

#[test]
fn inherited_operations_in_order_with_attributes() {
    let spec = parse(
        "interface A { void a(); attribute long x; };\n\
         interface B : A { void b(); };\ninterface C : A { void c(); };\n\
         interface D : B, C { readonly attribute string r; void d(in long v, out short o, inout string s); };",
    );
    let d = spec.lookup("D").unwrap();
    let names: Vec<String> = spec.operations(d).into_iter().map(|o| o.name).collect();
    assert_eq!(names, ["a", "_get_x", "_set_x", "b", "c", "_get_r", "d"]);
    let set = spec.find_operation("D", "_set_x").unwrap();
    assert_eq!(set.result, Type::Void);
    assert_eq!(set.params.len(), 1);
    assert_eq!(set.params[0].ty, Type::Long);
    assert_eq!(spec.def(set.defined_in).scoped_name, "::A");
    assert!(spec.find_operation("D", "_set_r").is_none());
    let op = spec.find_operation("D", "d").unwrap();
    let dirs: Vec<_> = op.params.iter().map(|p| p.dir).collect();
    use iiop_idl::Direction::*;
    assert_eq!(dirs, [In, Out, InOut]);
}

#[test]
fn names_resolve_through_inherited_and_enclosing_scopes() {
    let spec = parse(
        "module M { typedef short Outer;\n interface Base { typedef long Inner; exception E {}; const long N = 3; };\n\
         interface Derived : Base { Inner f(in Outer o) raises (E); };\n\
         typedef sequence<long, Base::N> Bounded; };",
    );
    let f = spec.find_operation("M::Derived", "f").unwrap();
    assert_eq!(spec.type_name(&f.result), "::M::Base::Inner");
    assert_eq!(spec.type_name(&f.params[0].ty), "::M::Outer");
    assert_eq!(spec.def(f.raises[0]).repo_id, "IDL:M/Base/E:1.0");
    let b = spec.lookup("M::Bounded").unwrap();
    assert!(matches!(
        &spec.def(b).kind,
        DefKind::Typedef(Type::Sequence(_, Some(3)))
    ));
}

#[test]
fn constant_expressions() {
    let spec = parse(
        "const long A = (1 + 2) * 3 - 4 / 2 % 3;\nconst unsigned long B = ~0;\nconst long C = ~0;\n\
         const long long D = 1 << 40;\nconst short E = -A;\nconst unsigned short F = 0xF0 | 0x0F & 0x3;\n\
         const double G = 1.0 / 4.0;\nconst float H = 0.1;\nconst string S = \"a\" \"b\";\nconst char CH = '\\x41';\n\
         enum Col { R, G2 };\nconst Col K = G2;\nconst unsigned long long BIG = 18446744073709551615;\n",
    );
    assert_eq!(const_value(&spec, "A"), ConstValue::Int(7));
    assert_eq!(const_value(&spec, "B"), ConstValue::Int(4294967295));
    assert_eq!(const_value(&spec, "C"), ConstValue::Int(-1));
    assert_eq!(const_value(&spec, "D"), ConstValue::Int(1 << 40));
    assert_eq!(const_value(&spec, "E"), ConstValue::Int(-7));
    assert_eq!(const_value(&spec, "F"), ConstValue::Int(0xF3));
    assert_eq!(const_value(&spec, "G"), ConstValue::Float(0.25));
    assert_eq!(const_value(&spec, "H"), ConstValue::Float(0.1f32 as f64));
    assert_eq!(const_value(&spec, "S"), ConstValue::Str("ab".into()));
    assert_eq!(const_value(&spec, "CH"), ConstValue::Char(65));
    assert_eq!(
        const_value(&spec, "K"),
        ConstValue::Enum(spec.lookup("G2").unwrap())
    );
    assert_eq!(const_value(&spec, "BIG"), ConstValue::Int(u64::MAX as i128));
}

#[test]
fn unions_with_enum_char_boolean_and_typedef_discriminators() {
    let spec = parse(
        "enum E { X, Y, Z };\ntypedef E EAlias;\nunion U1 switch (EAlias) { case X: case Y: long a; default: string b; };\n\
         union U2 switch (char) { case 'a': long a; };\nunion U3 switch (boolean) { case TRUE: long t; };\n\
         union U4 switch (unsigned long long) { case 18446744073709551615: octet m; };",
    );
    let DefKind::Union(u1) = &spec.def(spec.lookup("U1").unwrap()).kind else {
        panic!()
    };
    assert_eq!(spec.type_name(&u1.discriminator), "::EAlias");
    assert_eq!(
        u1.cases[0].labels,
        vec![
            CaseLabel::Value(ConstValue::Enum(spec.lookup("X").unwrap())),
            CaseLabel::Value(ConstValue::Enum(spec.lookup("Y").unwrap()))
        ]
    );
    assert_eq!(u1.cases[1].labels, vec![CaseLabel::Default]);
    let DefKind::Union(u4) = &spec.def(spec.lookup("U4").unwrap()).kind else {
        panic!()
    };
    assert_eq!(
        u4.cases[0].labels,
        vec![CaseLabel::Value(ConstValue::Int(u64::MAX as i128))]
    );
}

#[test]
fn recursive_struct_via_sequence_and_forward_declaration() {
    let spec = parse("struct Tree;\ntypedef sequence<Tree> Forest;\nstruct Tree { long v; Forest kids; sequence<Tree> direct; };");
    let t = spec.lookup("Tree").unwrap();
    let DefKind::Struct(s) = &spec.def(t).kind else {
        panic!()
    };
    assert!(s.defined);
    assert_eq!(
        s.members[2].ty,
        Type::Sequence(Box::new(Type::Named(t)), None)
    );
    assert_eq!(spec.type_name(&s.members[1].ty), "::Forest");
}

#[test]
fn ccm_constructs_are_skipped_with_a_note() {
    let spec = parse(
        "module M {\n  component Widget { provides Foo f; attribute long x; };\n  home WidgetHome manages Widget {};\n  typedef long After;\n};",
    );
    assert!(spec.lookup("M::After").is_some());
    assert!(spec.lookup("M::Widget").is_none());
    let notes: Vec<String> = spec.notes.iter().map(|n| n.to_string()).collect();
    assert_eq!(
        notes,
        [
            "t.idl:2:3: note: skipped component 'Widget' (CCM constructs are not modelled)",
            "t.idl:3:3: note: skipped home 'WidgetHome' (CCM constructs are not modelled)"
        ]
    );
}

#[test]
fn valuetype_state_members_are_kept() {
    let spec = parse(
        "interface I { void op(); };\nvaluetype Base { public long id; };\n\
         valuetype Derived : truncatable Base supports I { private string secret; public long a, b[2]; factory make(in long id); void vop(); };\n\
         valuetype Box sequence<long>;",
    );
    let DefKind::Value(v) = &spec.def(spec.lookup("Derived").unwrap()).kind else {
        panic!()
    };
    assert!(v.truncatable);
    assert_eq!(v.factories, ["make"]);
    let state: Vec<(bool, &str, String)> = v
        .state
        .iter()
        .map(|s| (s.public, s.name.as_str(), spec.type_name(&s.ty)))
        .collect();
    assert_eq!(
        state,
        [
            (false, "secret", "string".to_string()),
            (true, "a", "long".to_string()),
            (true, "b", "long[2]".to_string())
        ]
    );
    let d = spec.lookup("Derived").unwrap();
    let ops: Vec<String> = spec.operations(d).into_iter().map(|o| o.name).collect();
    assert_eq!(ops, ["op", "vop"]);
    assert!(matches!(
        &spec.def(spec.lookup("Box").unwrap()).kind,
        DefKind::ValueBox(Type::Sequence(..))
    ));
}

#[test]
fn diagnostics_say_file_line_column() {
    assert_eq!(
        err("module M {\n  typedef long T\n  interface I {};\n};"),
        "t.idl:3:3: expected ';', found 'interface'"
    );
    assert_eq!(
        err("struct S { Missing m; };"),
        "t.idl:1:12: 'Missing' is not declared"
    );
    assert_eq!(
        err("typedef long T;\nstruct T { long x; };"),
        "t.idl:2:8: 'T' redefined (previous declaration at t.idl:1:14)"
    );
    assert_eq!(
        err("typedef long Foo;\ntypedef long foo;"),
        "t.idl:2:14: 'foo' collides with 'Foo' declared at t.idl:1:14 (IDL identifiers differing only in case clash)"
    );
    assert_eq!(
        err("const short S = 40000;"),
        "t.idl:1:17: value 40000 out of range for short"
    );
    assert_eq!(
        err("const double D = 1.0 + 2;"),
        "t.idl:1:22: operator '+' mixes integer and floating-point operands"
    );
    assert_eq!(
        err("interface I { oneway void f(out long x); };"),
        "t.idl:1:27: oneway operation 'f' must return void, take only in parameters and raise nothing"
    );
    assert_eq!(
        err("union U switch (long) { case 1: long a; case 1: long b; };"),
        "t.idl:1:41: duplicate case label"
    );
    assert_eq!(
        err("union U switch (float) { case 1: long a; };"),
        "t.idl:1:17: 'float' cannot be a union discriminator"
    );
    assert_eq!(
        err("#frobnicate\n"),
        "t.idl:1:1: unknown preprocessor directive #frobnicate"
    );
    assert_eq!(
        err("module M {\n"),
        "t.idl:1:10: expected '}', found end of file"
    );
    assert_eq!(
        err("interface I { void f() raises (I); };"),
        "t.idl:1:32: '::I' is not an exception"
    );
    assert_eq!(
        err("const unsigned short U = ~1;"),
        "t.idl:1:26: value 4294967294 out of range for unsigned short"
    );
    assert_eq!(
        err("union U switch (octet) { case 1: long a; };"),
        "t.idl:1:17: 'octet' cannot be a union discriminator"
    );
    assert_eq!(
        err("interface F;\ninterface X : F {};"),
        "t.idl:2:15: base interface: 'F' is only forward-declared"
    );
    assert_eq!(
        err("valuetype V;\nvaluetype W : V {};"),
        "t.idl:2:15: base valuetype '::V' is only forward-declared"
    );
}

#[test]
fn escaped_identifiers_and_bounded_strings() {
    let spec = parse("interface _module { string<8> _get(in wstring<4> _in); };");
    let op = spec.find_operation("module", "get").unwrap();
    assert_eq!(op.result, Type::String(Some(8)));
    assert_eq!(op.params[0].ty, Type::WString(Some(4)));
    assert_eq!(op.params[0].name, "in");
}

#[test]
fn feature_corpus_repository_ids() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/idl/corpus/features.idl"
    );
    let spec = iiop_idl::parse_file(file, &Options::default()).unwrap();
    assert_eq!(rid(&spec, "Inc::Base"), "IDL:inc.example/Inc/Base:1.0");
    assert_eq!(rid(&spec, "Top::Node"), "IDL:Top/Node:1.0");
    assert_eq!(rid(&spec, "Top::Node::Inner"), "IDL:Top/Node/Inner:1.0");
    assert_eq!(
        rid(&spec, "Top::Nested::InNested"),
        "IDL:nested.example/InNested:1.0"
    );
    assert_eq!(
        rid(&spec, "Top::Nested::Versioned"),
        "IDL:nested.example/Versioned:2.7"
    );
    assert_eq!(rid(&spec, "Top::Nested::Renamed"), "LOCAL:renamed");
    assert_eq!(rid(&spec, "Top::AfterNested"), "IDL:Top/AfterNested:1.0");
    assert_eq!(rid(&spec, "Top::Inline::Color"), "IDL:Top/Inline/Color:1.0");
    assert_eq!(const_value(&spec, "FromMacro"), ConstValue::Int(17));
    // C inherits A (which inherits Inc::Base) and B.
    let c = spec.lookup("Top::C").unwrap();
    let names: Vec<String> = spec.operations(c).into_iter().map(|o| o.name).collect();
    assert_eq!(
        names,
        [
            "base_op",
            "_get_base_attr",
            "a_op",
            "_get_name",
            "_set_name",
            "b_op",
            "uses_inherited",
            "raises_inherited",
            "fire",
            "_get_r1",
            "_get_r2",
            "get_fwd",
            "arrays",
            "echo",
            "bounded_by_inherited_const"
        ]
    );
    let get_fwd = spec.find_operation("Top::C", "get_fwd").unwrap();
    assert_eq!(get_fwd.contexts, ["user", "lang*"]);
    assert_eq!(spec.type_name(&get_fwd.result), "::Top::Fwd");
}

#[test]
fn attribute_raises_clauses() {
    let spec = parse(
        "exception G {}; exception S {}; exception R {};\n\
         interface I { attribute long a getraises (G) setraises (S, R); readonly attribute long b raises (R);\n\
         attribute long c setraises (S); };",
    );
    let ids = |names: &[&str]| {
        names
            .iter()
            .map(|n| spec.lookup(n).unwrap())
            .collect::<Vec<_>>()
    };
    let op = |n: &str| spec.find_operation("I", n).unwrap();
    assert_eq!(op("_get_a").raises, ids(&["G"]));
    assert_eq!(op("_set_a").raises, ids(&["S", "R"]));
    assert_eq!(op("_get_b").raises, ids(&["R"]));
    assert!(spec.find_operation("I", "_set_b").is_none());
    assert_eq!(op("_get_c").raises, ids(&[]));
    assert_eq!(op("_set_c").raises, ids(&["S"]));
    assert_eq!(
        err("interface I { readonly attribute long b setraises (X); };"),
        "t.idl:1:41: expected ';', found 'setraises'"
    );
}

#[test]
fn eventtypes_and_imports() {
    let spec = parse(
        "import ::Foo;\nabstract eventtype Base { };\neventtype Tick : Base { public unsigned long long n; };\n\
         custom eventtype Raw { private octet b; };",
    );
    let DefKind::Value(v) = &spec.def(spec.lookup("Tick").unwrap()).kind else {
        panic!()
    };
    assert!(v.event && !v.is_abstract && v.defined);
    assert_eq!(v.bases, vec![spec.lookup("Base").unwrap()]);
    assert_eq!(v.state[0].ty, Type::ULongLong);
    let DefKind::Value(raw) = &spec.def(spec.lookup("Raw").unwrap()).kind else {
        panic!()
    };
    assert!(raw.custom && raw.event && !raw.state[0].public);
    assert_eq!(
        spec.notes.iter().map(|n| n.to_string()).collect::<Vec<_>>(),
        ["t.idl:1:1: note: skipped import declaration (imports are not supported; use #include)"]
    );
}
