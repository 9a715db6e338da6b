//! The JSON mapping of IDL values (docs/json-mapping.md): exact renderings
//! of each kind, and the property that for random TypeCodes and values
//! `from_json(tc, to_json(tc, v))` gives back `v` (same representation,
//! same CDR bytes).

use bytes::{Bytes, BytesMut};
use iiop_cdr::{Any, ByteOrder, Reader, TCKind, TypeCode, Value, Writer};
use iiopbench_engine::dynamic::json::{
    from_json, to_json, typecode_from_json, typecode_to_json, NoNames,
};
use proptest::prelude::*;
use serde_json::json;

fn enc(tc: &TypeCode, v: &Value) -> Vec<u8> {
    let mut b = BytesMut::new();
    v.encode(tc, &mut Writer::new(&mut b, ByteOrder::Big))
        .expect("encodes");
    b.to_vec()
}

/// The value as a CDR decode produces it (the canonical representation).
fn canonical(tc: &TypeCode, v: &Value) -> Value {
    let b = enc(tc, v);
    Value::decode(tc, &mut Reader::new(&b, ByteOrder::Big)).expect("decodes")
}

fn round_trip(tc: &TypeCode, v: &Value) -> serde_json::Value {
    let v = canonical(tc, v);
    let j = to_json(tc, &v).expect("to_json");
    // Through text, as a user would see it.
    let text = serde_json::to_string(&j).unwrap();
    let j2: serde_json::Value = serde_json::from_str(&text).unwrap();
    let back = from_json(tc, &j2, &NoNames).expect("from_json");
    // Debug equality also treats NaN as equal to NaN.
    assert_eq!(format!("{back:?}"), format!("{v:?}"), "json {text}");
    assert_eq!(enc(tc, &back), enc(tc, &v));
    j
}

fn variant() -> TypeCode {
    TypeCode::union_tc(
        "IDL:Bench/Variant:1.0",
        "Variant",
        TypeCode::long(),
        3,
        vec![
            (1, "l", TypeCode::long()),
            (2, "d", TypeCode::double()),
            (3, "s", TypeCode::string(0)),
            (0, "o", TypeCode::octet()),
        ],
    )
    .unwrap()
}

#[test]
fn each_kind_renders_as_documented() {
    let cases: Vec<(TypeCode, Value, serde_json::Value)> = vec![
        (
            TypeCode::longlong(),
            Value::LongLong(1 << 53),
            json!(9007199254740992i64),
        ),
        (
            TypeCode::longlong(),
            Value::LongLong(-(1 << 53) - 1),
            json!("-9007199254740993"),
        ),
        (
            TypeCode::ulonglong(),
            Value::ULongLong(u64::MAX),
            json!("18446744073709551615"),
        ),
        (TypeCode::double(), Value::Double(f64::NAN), json!("NaN")),
        (
            TypeCode::float(),
            Value::Float(f32::NEG_INFINITY),
            json!("-Infinity"),
        ),
        (TypeCode::float(), Value::Float(0.1), json!(0.1)),
        (TypeCode::char(), Value::Char('é'), json!("é")),
        (TypeCode::wchar(), Value::WChar('ж'), json!("ж")),
        (
            TypeCode::wstring(0),
            Value::WString("añ€".into()),
            json!("añ€"),
        ),
        (
            TypeCode::sequence(TypeCode::octet(), 0),
            Value::OctetSeq(Bytes::from_static(b"\x00\x01\xff")),
            json!("AAH/"),
        ),
        (
            TypeCode::sequence(TypeCode::char(), 0),
            Value::CharSeq(b"ab".to_vec()),
            json!("ab"),
        ),
        (
            TypeCode::fixed(5, 2).unwrap(),
            Value::Fixed("-123.45".into()),
            json!("-123.45"),
        ),
        (
            TypeCode::longdouble(),
            Value::LongDouble([0x3f, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            json!("3fff8000000000000000000000000000"),
        ),
        (
            TypeCode::enum_tc("IDL:Bench/Color:1.0", "Color", &["RED", "GREEN", "BLUE"]),
            Value::Enum(2),
            json!("BLUE"),
        ),
        (
            variant(),
            Value::Union {
                disc: 3,
                value: Box::new(Value::String("x".into())),
            },
            json!({"_d": 3, "s": "x"}),
        ),
        (
            variant(),
            Value::Union {
                disc: 9,
                value: Box::new(Value::Octet(7)),
            },
            json!({"_d": 9, "o": 7}),
        ),
        (
            TypeCode::any(),
            Value::Any(Box::new(Any {
                tc: TypeCode::long(),
                value: Value::Long(-5),
            })),
            json!({"type": "long", "value": -5}),
        ),
        (
            TypeCode::tc_typecode(),
            Value::TypeCode(TypeCode::sequence(TypeCode::string(4), 2)),
            json!({"kind": "sequence", "element": {"kind": "string", "bound": 4}, "bound": 2}),
        ),
        (
            TypeCode::except_tc("IDL:X/Bad:1.0", "Bad", vec![("code", TypeCode::long())]),
            Value::Struct(vec![Value::Long(4)]),
            json!({"_id": "IDL:X/Bad:1.0", "code": 4}),
        ),
        (
            TypeCode::objref("IDL:X/I:1.0", "I"),
            Value::ObjRef(Box::default()),
            json!(null),
        ),
        (
            TypeCode::array(TypeCode::array(TypeCode::short(), 2), 2),
            Value::Seq(vec![
                Value::ShortSeq(vec![1, 2]),
                Value::ShortSeq(vec![3, 4]),
            ]),
            json!([[1, 2], [3, 4]]),
        ),
    ];
    for (tc, v, want) in cases {
        assert_eq!(round_trip(&tc, &v), want, "{tc:?}");
    }
}

#[test]
fn input_accepts_the_alternative_forms() {
    let octets = TypeCode::sequence(TypeCode::octet(), 0);
    assert_eq!(
        from_json(&octets, &json!([0, 1, 255]), &NoNames).unwrap(),
        Value::OctetSeq(Bytes::from_static(b"\x00\x01\xff"))
    );
    assert_eq!(
        from_json(&TypeCode::ulonglong(), &json!("0xff"), &NoNames).unwrap(),
        Value::ULongLong(255)
    );
    // A union by member name alone takes that member's label.
    assert_eq!(
        from_json(&variant(), &json!({"d": 1.5}), &NoNames).unwrap(),
        Value::Union {
            disc: 2,
            value: Box::new(Value::Double(1.5))
        }
    );
    // A struct as an array in member order.
    let cd = TypeCode::struct_tc(
        "IDL:CD:1.0",
        "CD",
        vec![("c", TypeCode::char()), ("d", TypeCode::double())],
    );
    assert_eq!(
        from_json(&cd, &json!(["x", 2]), &NoNames).unwrap(),
        Value::Struct(vec![Value::Char('x'), Value::Double(2.0)])
    );
    let e = from_json(
        &TypeCode::sequence(cd, 0),
        &json!([{"c": "x", "d": 1}, {"c": "y"}]),
        &NoNames,
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "[1].d: missing member");
    let e = from_json(&TypeCode::short(), &json!(70000), &NoNames).unwrap_err();
    assert_eq!(e.to_string(), "value: 70000 is out of range for short");
}

// ------------------------------------------------------------ property

fn leaf_tc() -> impl Strategy<Value = TypeCode> {
    prop_oneof![
        Just(TypeCode::short()),
        Just(TypeCode::ushort()),
        Just(TypeCode::long()),
        Just(TypeCode::ulong()),
        Just(TypeCode::longlong()),
        Just(TypeCode::ulonglong()),
        Just(TypeCode::float()),
        Just(TypeCode::double()),
        Just(TypeCode::longdouble()),
        Just(TypeCode::boolean()),
        Just(TypeCode::char()),
        Just(TypeCode::wchar()),
        Just(TypeCode::octet()),
        Just(TypeCode::string(0)),
        Just(TypeCode::wstring(0)),
        Just(TypeCode::fixed(7, 3).unwrap()),
        Just(TypeCode::tc_typecode()),
        Just(TypeCode::objref("IDL:X/I:1.0", "I")),
        Just(TypeCode::enum_tc("IDL:E:1.0", "E", &["A", "B", "C"])),
        Just(TypeCode::any()),
    ]
}

fn any_tc() -> impl Strategy<Value = TypeCode> {
    leaf_tc().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            (inner.clone(), 0u32..3).prop_map(|(e, b)| TypeCode::sequence(e, b * 4)),
            (inner.clone(), 1u32..4).prop_map(|(e, n)| TypeCode::array(e, n)),
            inner
                .clone()
                .prop_map(|c| TypeCode::alias("IDL:A:1.0", "A", c)),
            prop::collection::vec(inner.clone(), 1..4).prop_map(|ms| {
                let names = ["a", "b", "c", "d"];
                TypeCode::struct_tc(
                    "IDL:S:1.0",
                    "S",
                    ms.into_iter()
                        .enumerate()
                        .map(|(i, t)| (names[i], t))
                        .collect(),
                )
            }),
            (prop::collection::vec(inner, 1..4), any::<bool>(), 0usize..3).prop_map(
                |(ms, def, disc)| {
                    let names = ["a", "b", "c", "d"];
                    let (dtc, labels): (TypeCode, Vec<i64>) = match disc {
                        0 => (TypeCode::long(), vec![-1, 5, 100, 7]),
                        1 => (
                            TypeCode::enum_tc("IDL:D:1.0", "D", &["P", "Q", "R", "S", "T"]),
                            vec![0, 1, 2, 3],
                        ),
                        _ => (TypeCode::char(), vec![97, 98, 99, 100]),
                    };
                    let n = ms.len();
                    let members = ms
                        .into_iter()
                        .enumerate()
                        .map(|(i, t)| (labels[i], names[i], t))
                        .collect();
                    TypeCode::union_tc(
                        "IDL:U:1.0",
                        "U",
                        dtc,
                        if def { n as i32 - 1 } else { -1 },
                        members,
                    )
                    .unwrap()
                }
            ),
        ]
    })
}

/// Random values with edge cases, driven by a seed.
struct G(u64);

impl G {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[(self.next() % xs.len() as u64) as usize]
    }
    fn text(&mut self) -> String {
        let n = self.next() % 5;
        (0..n)
            .map(|_| self.pick(&['a', 'Z', 'é', 'ж', '€', '"', '\\', ' ', '😀']))
            .collect()
    }
    fn value(&mut self, tc: &TypeCode, depth: u32) -> Value {
        use iiop_cdr::TcDef;
        match tc.def() {
            TcDef::Alias { content, .. } => self.value(content, depth),
            TcDef::Basic(k) => match k {
                TCKind::tk_short => Value::Short(self.pick(&[0, -1, i16::MIN, i16::MAX, 12])),
                TCKind::tk_ushort => Value::UShort(self.pick(&[0, u16::MAX, 7])),
                TCKind::tk_long => {
                    Value::Long(self.pick(&[0, i32::MIN, i32::MAX]) ^ (self.next() as i32 & 0xff))
                }
                TCKind::tk_ulong => Value::ULong(self.next() as u32),
                TCKind::tk_longlong => {
                    let r = self.next() as i64;
                    Value::LongLong(self.pick(&[i64::MIN, i64::MAX, 1 << 53, -(1 << 53) - 1, r, 0]))
                }
                TCKind::tk_ulonglong => {
                    let r = self.next();
                    Value::ULongLong(self.pick(&[u64::MAX, 1 << 53, (1 << 53) + 1, r, 0]))
                }
                TCKind::tk_float => {
                    let r = f32::from_bits(self.next() as u32 & 0x7f7f_ffff);
                    Value::Float(self.pick(&[
                        f32::NAN,
                        f32::INFINITY,
                        -0.0,
                        0.1,
                        f32::MIN_POSITIVE,
                        f32::MAX,
                        r,
                        1e-45,
                    ]))
                }
                TCKind::tk_double => {
                    let r = f64::from_bits(self.next() & 0x7fef_ffff_ffff_ffff);
                    Value::Double(self.pick(&[
                        f64::NAN,
                        f64::NEG_INFINITY,
                        -0.0,
                        0.1,
                        5e-324,
                        f64::MAX,
                        r,
                    ]))
                }
                TCKind::tk_longdouble => {
                    let mut b = [0u8; 16];
                    b[..8].copy_from_slice(&self.next().to_be_bytes());
                    Value::LongDouble(b)
                }
                TCKind::tk_boolean => Value::Boolean(self.next() & 1 == 1),
                TCKind::tk_char => Value::Char(self.pick(&['a', 'é', '\0', 'ÿ'])),
                TCKind::tk_wchar => Value::WChar(self.pick(&['a', 'ж', '€'])),
                TCKind::tk_octet => Value::Octet(self.next() as u8),
                TCKind::tk_TypeCode => {
                    let i = self.pick(&[0usize, 1, 2]);
                    Value::TypeCode(
                        [
                            TypeCode::long(),
                            variant(),
                            TypeCode::sequence(TypeCode::string(3), 0),
                        ][i]
                            .clone(),
                    )
                }
                TCKind::tk_any => {
                    let t = self.pick(&[0, 1, 2]);
                    let at = [
                        TypeCode::double(),
                        variant(),
                        TypeCode::sequence(TypeCode::wstring(0), 0),
                    ][t]
                        .clone();
                    let v = self.value(&at, depth + 1);
                    Value::Any(Box::new(Any { tc: at, value: v }))
                }
                other => panic!("no generator for {other:?}"),
            },
            TcDef::String { .. } => Value::String(
                self.text()
                    .chars()
                    .filter(|c| (*c as u32) < 0x100)
                    .collect(),
            ),
            TcDef::WString { .. } => Value::WString(self.text()),
            TcDef::Fixed { .. } => Value::Fixed(
                self.pick(&["0.000", "-1234.567", "12.500", "9999.999"])
                    .into(),
            ),
            TcDef::Interface { .. } => Value::ObjRef(Box::default()),
            TcDef::Enum { members, .. } => Value::Enum((self.next() % members.len() as u64) as u32),
            TcDef::Struct { members, .. } => Value::Struct(
                members
                    .iter()
                    .map(|m| self.value(&m.tc, depth + 1))
                    .collect(),
            ),
            TcDef::Union {
                members,
                default_index,
                discriminator,
                ..
            } => {
                let i = (self.next() % members.len() as u64) as usize;
                let disc = if i as i32 == *default_index {
                    iiopbench_engine::dynamic::json::default_disc(
                        discriminator,
                        members,
                        *default_index,
                    )
                    .unwrap()
                } else {
                    members[i].label
                };
                Value::Union {
                    disc,
                    value: Box::new(self.value(&members[i].tc, depth + 1)),
                }
            }
            TcDef::Sequence { element, bound } => {
                let max = if *bound == 0 { 4 } else { *bound as u64 + 1 };
                let n = if depth > 3 { 0 } else { self.next() % max };
                let items = (0..n).map(|_| self.value(element, depth + 1)).collect();
                Value::from_elements(element, items)
            }
            TcDef::Array { element, length } => {
                let items = (0..*length)
                    .map(|_| self.value(element, depth + 1))
                    .collect();
                Value::from_elements(element, items)
            }
            other => panic!("no generator for {other:?}"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

    #[test]
    fn random_values_round_trip(tc in any_tc(), seed in any::<u64>()) {
        let v = G(seed).value(&tc, 0);
        round_trip(&tc, &v);
        // The TypeCode itself round-trips through its JSON description.
        let back = typecode_from_json(&typecode_to_json(&tc), &NoNames).unwrap();
        prop_assert!(back.equal(&tc));
    }
}
