//! The dynamic skeleton's answer rules (`IdlHandler::answer`) and default
//! values, on an IDL given inline.

use std::collections::HashMap;

use iiop_cdr::{TypeCode, Value};
use iiopbench_engine::dynamic::server::{default_value, Behaviour, FixedReply, IdlHandler};

const IDL: &str = r#"
module M {
  enum E { A, B };
  struct P { short s; string t; };
  union U switch (E) { case B: long l; default: string x; };
  typedef octet Key[3];
  interface Base { void b(); };
  interface I : Base {
    P mix(in long a, inout P p, out P q, out double d, in E e);
    U pick(in U u);
    Key key();
  };
};
"#;

fn handler(b: Behaviour) -> IdlHandler {
    let spec = iiop_idl::parse_str("inline.idl", IDL, &Default::default()).unwrap();
    let id = spec.lookup("M::I").unwrap();
    IdlHandler::new(&spec, id, b).unwrap()
}

fn p(s: i16, t: &str) -> Value {
    Value::Struct(vec![Value::Short(s), Value::String(t.into())])
}

#[test]
fn echo_copies_inputs_of_the_same_type() {
    let h = handler(Behaviour::Echo);
    assert_eq!(h.repo_id(), "IDL:M/I:1.0");
    let mut names: Vec<&String> = h.operations().keys().collect();
    names.sort();
    assert_eq!(names, ["b", "key", "mix", "pick"]);
    let op = &h.operations()["mix"];
    // inputs: a (0), p (1), e (4)
    let inputs = vec![(0, Value::Long(5)), (1, p(7, "x")), (4, Value::Enum(1))];
    // return P <- p; inout p <- itself; out q <- p; out d: no double input.
    assert_eq!(
        h.answer(op, &inputs),
        vec![p(7, "x"), p(7, "x"), p(7, "x"), Value::Double(0.0)]
    );
}

#[test]
fn sink_and_fixed() {
    let h = handler(Behaviour::Sink);
    let op = &h.operations()["mix"];
    let inputs = vec![(0, Value::Long(5)), (1, p(7, "x")), (4, Value::Enum(1))];
    assert_eq!(
        h.answer(op, &inputs),
        vec![p(0, ""), p(0, ""), p(0, ""), Value::Double(0.0)]
    );
    let mut m = HashMap::new();
    m.insert(
        "mix".to_string(),
        FixedReply {
            result: Some(p(1, "r")),
            params: [("d".to_string(), Value::Double(2.5))]
                .into_iter()
                .collect(),
            raise: None,
        },
    );
    let h = handler(Behaviour::Fixed(m));
    let op = &h.operations()["mix"];
    assert_eq!(
        h.answer(op, &inputs),
        vec![p(1, "r"), p(7, "x"), p(7, "x"), Value::Double(2.5)]
    );
}

#[test]
fn defaults_of_every_shape() {
    let h = handler(Behaviour::Sink);
    // Union on an enum: its first non-default member with its label.
    assert_eq!(
        h.answer(&h.operations()["pick"], &[]),
        vec![Value::Union {
            disc: 1,
            value: Box::new(Value::Long(0))
        }]
    );
    // An array of octets is packed like the decoder's representation.
    assert_eq!(
        h.answer(&h.operations()["key"], &[]),
        vec![Value::OctetSeq(bytes::Bytes::from_static(&[0, 0, 0]))]
    );
    assert_eq!(
        default_value(&TypeCode::fixed(5, 2).unwrap()),
        Value::Fixed("0.00".into())
    );
    assert_eq!(
        default_value(&TypeCode::sequence(TypeCode::double(), 0)),
        Value::DoubleSeq(vec![])
    );
    let only_default = TypeCode::union_tc(
        "IDL:V:1.0",
        "V",
        TypeCode::boolean(),
        0,
        vec![(0, "x", TypeCode::long())],
    )
    .unwrap();
    assert_eq!(
        default_value(&only_default),
        Value::Union {
            disc: 0,
            value: Box::new(Value::Long(0))
        }
    );
}
