//! Property tests: random TypeCodes (up to a small depth, every kind the
//! value codec supports, recursive ones included) with random values
//! round-trip through encode/decode in both byte orders at random
//! alignment origins, as plain values and inside an `any`.

use bytes::{Bytes, BytesMut};
use iiop_cdr::{
    Any, ByteOrder, Ior, Reader, TCKind, TaggedProfile, TcDef, TypeCode, Value, Writer,
};
use proptest::prelude::*;

/// A small deterministic generator (xorshift64*), seeded by proptest.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }
}

fn name(rng: &mut Rng, prefix: &str) -> String {
    format!("{prefix}{}", rng.below(1000))
}

fn gen_tc(rng: &mut Rng, depth: u32) -> TypeCode {
    let basic = [
        TCKind::tk_short,
        TCKind::tk_long,
        TCKind::tk_ushort,
        TCKind::tk_ulong,
        TCKind::tk_float,
        TCKind::tk_double,
        TCKind::tk_boolean,
        TCKind::tk_char,
        TCKind::tk_octet,
        TCKind::tk_longlong,
        TCKind::tk_ulonglong,
        TCKind::tk_longdouble,
        TCKind::tk_wchar,
        TCKind::tk_null,
        TCKind::tk_void,
        TCKind::tk_TypeCode,
        TCKind::tk_Principal,
    ];
    let choice = if depth == 0 {
        rng.below(4)
    } else {
        rng.below(14)
    };
    match choice {
        0 => TypeCode::basic(basic[rng.below(basic.len() as u64) as usize]),
        1 => {
            if rng.coin() {
                TypeCode::string(rng.below(3) as u32 * 8)
            } else {
                TypeCode::wstring(rng.below(3) as u32 * 8)
            }
        }
        2 => {
            let d = 1 + rng.below(31) as u16;
            TypeCode::fixed(d, rng.below(d as u64 + 1) as i16).unwrap()
        }
        3 => {
            let n = 1 + rng.below(4) as usize;
            let names: Vec<String> = (0..n).map(|i| format!("E{i}")).collect();
            let refs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
            TypeCode::enum_tc(&name(rng, "IDL:En"), "En", &refs)
        }
        4 | 5 => {
            let n = rng.below(4) as usize;
            let ms: Vec<(String, TypeCode)> = (0..n)
                .map(|i| (format!("m{i}"), gen_tc(rng, depth - 1)))
                .collect();
            let ms = ms.iter().map(|(n, t)| (n.as_str(), t.clone())).collect();
            if rng.below(4) == 0 {
                TypeCode::except_tc(&name(rng, "IDL:Ex"), "Ex", ms)
            } else {
                TypeCode::struct_tc(&name(rng, "IDL:St"), "St", ms)
            }
        }
        6 => gen_union(rng, depth),
        7 | 8 => TypeCode::sequence(gen_tc(rng, depth - 1), rng.below(2) as u32 * 10),
        9 => TypeCode::array(gen_tc(rng, depth - 1), 1 + rng.below(3) as u32),
        10 => TypeCode::alias(&name(rng, "IDL:Al"), "Al", gen_tc(rng, depth - 1)),
        11 => TypeCode::any(),
        12 => TypeCode::objref(&name(rng, "IDL:If"), "If"),
        _ => {
            // Recursive: struct R { <x> v; sequence<R> next; }
            let id = name(rng, "IDL:Rec");
            TypeCode::struct_tc(
                &id,
                "Rec",
                vec![
                    ("v", gen_tc(rng, depth - 1)),
                    ("next", TypeCode::sequence(TypeCode::recursive(&id), 0)),
                ],
            )
        }
    }
}

fn gen_union(rng: &mut Rng, depth: u32) -> TypeCode {
    let discs = [
        TypeCode::short(),
        TypeCode::long(),
        TypeCode::ushort(),
        TypeCode::ulong(),
        TypeCode::longlong(),
        TypeCode::ulonglong(),
        TypeCode::char(),
        TypeCode::boolean(),
        TypeCode::wchar(),
        TypeCode::enum_tc("IDL:D:1.0", "D", &["A", "B", "C", "D"]),
    ];
    let disc = discs[rng.below(discs.len() as u64) as usize].clone();
    // Labels: distinct values legal for every discriminator type.
    let pool: Vec<i64> = match disc.kind() {
        TCKind::tk_boolean => vec![0, 1],
        TCKind::tk_enum => vec![0, 1, 2, 3],
        TCKind::tk_char | TCKind::tk_wchar => vec![b'a' as i64, b'b' as i64, b'z' as i64],
        _ => vec![0, 1, 7, 100],
    };
    let n = 1 + rng.below(pool.len() as u64 - 1) as usize; // leave one value free
    let mut members: Vec<(i64, String, TypeCode)> = (0..n)
        .map(|i| (pool[i], format!("u{i}"), gen_tc(rng, depth - 1)))
        .collect();
    let default_index = if rng.coin() {
        members.push((0, "dflt".into(), gen_tc(rng, depth - 1)));
        members.len() as i32 - 1
    } else {
        -1
    };
    let ms = members
        .iter()
        .map(|(l, n, t)| (*l, n.as_str(), t.clone()))
        .collect();
    TypeCode::union_tc(&name(rng, "IDL:Un"), "Un", disc, default_index, ms).unwrap()
}

fn latin1(rng: &mut Rng, len: usize) -> String {
    (0..len)
        .map(|_| char::from_u32(1 + rng.below(255) as u32).unwrap())
        .collect()
}

fn wide(rng: &mut Rng, len: usize) -> String {
    (0..len)
        .map(|_| match rng.below(3) {
            0 => 'x',
            1 => 'é',
            _ => '😀',
        })
        .collect()
}

fn gen_value(rng: &mut Rng, tc: &TypeCode, enclosing: &mut Vec<TypeCode>, depth: u32) -> Value {
    use TCKind::*;
    match tc.def() {
        TcDef::Basic(k) => match k {
            tk_null => Value::Null,
            tk_void => Value::Void,
            tk_short => Value::Short(rng.next() as i16),
            tk_long => Value::Long(rng.next() as i32),
            tk_ushort => Value::UShort(rng.next() as u16),
            tk_ulong => Value::ULong(rng.next() as u32),
            tk_longlong => Value::LongLong(rng.next() as i64),
            tk_ulonglong => Value::ULongLong(rng.next()),
            tk_float => Value::Float((rng.next() as i32) as f32 / 7.0),
            tk_double => Value::Double((rng.next() as i64) as f64 / 3.0),
            tk_longdouble => Value::LongDouble((rng.next() as u128 * 0x1_0000_0001).to_le_bytes()),
            tk_boolean => Value::Boolean(rng.coin()),
            tk_char => Value::Char(char::from_u32(rng.below(256) as u32).unwrap()),
            tk_octet => Value::Octet(rng.next() as u8),
            tk_wchar => Value::WChar(if rng.coin() { 'w' } else { 'Ж' }),
            tk_any => {
                let t = gen_tc(rng, 1);
                let v = gen_value(rng, &t, &mut Vec::new(), 1);
                Value::Any(Box::new(Any { tc: t, value: v }))
            }
            tk_TypeCode => Value::TypeCode(gen_tc(rng, 2)),
            tk_Principal => Value::Principal(Bytes::from(vec![7u8; rng.below(4) as usize])),
            other => panic!("no value for {other:?}"),
        },
        TcDef::String { bound } => {
            let max = if *bound == 0 { 12 } else { *bound as u64 + 1 };
            let n = rng.below(max) as usize;
            Value::String(latin1(rng, n))
        }
        TcDef::WString { bound } => {
            let max = if *bound == 0 { 12 } else { *bound as u64 + 1 };
            let n = rng.below(max) as usize;
            Value::WString(wide(rng, n))
        }
        TcDef::Fixed { digits, scale } => {
            let int_digits = (*digits - *scale as u16) as usize;
            let int: String = (0..int_digits)
                .map(|_| (b'0' + rng.below(10) as u8) as char)
                .collect();
            let frac: String = (0..*scale)
                .map(|_| (b'0' + rng.below(10) as u8) as char)
                .collect();
            let int = int.trim_start_matches('0');
            let int = if int.is_empty() { "0" } else { int };
            let sign = if rng.coin() { "-" } else { "" };
            if frac.is_empty() {
                Value::Fixed(format!("{sign}{int}"))
            } else {
                Value::Fixed(format!("{sign}{int}.{frac}"))
            }
        }
        TcDef::Interface { .. } => Value::ObjRef(Box::new(if rng.coin() {
            Ior::nil()
        } else {
            Ior::new(
                "IDL:If:1.0",
                vec![TaggedProfile {
                    tag: rng.below(3) as u32,
                    data: Bytes::from(vec![1, 2, 3]),
                }],
            )
        })),
        TcDef::Struct { members, .. } => {
            let pushed = tc.is_recursion_target();
            if pushed {
                enclosing.push(tc.clone());
            }
            let v = Value::Struct(
                members
                    .iter()
                    .map(|m| gen_value(rng, &m.tc, enclosing, depth + 1))
                    .collect(),
            );
            if pushed {
                enclosing.pop();
            }
            v
        }
        TcDef::Union {
            default_index,
            members,
            discriminator,
            ..
        } => {
            let i = rng.below(members.len() as u64) as usize;
            let disc = if i as i32 == *default_index {
                // A value no label takes.
                let labels: Vec<i64> = members
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j as i32 != *default_index)
                    .map(|(_, m)| m.label)
                    .collect();
                let cands: Vec<i64> = match discriminator.kind() {
                    TCKind::tk_boolean => vec![0, 1],
                    TCKind::tk_enum => vec![0, 1, 2, 3],
                    TCKind::tk_char | TCKind::tk_wchar => {
                        vec![b'a' as i64, b'b' as i64, b'z' as i64]
                    }
                    _ => vec![0, 1, 7, 100],
                };
                *cands.iter().find(|c| !labels.contains(c)).unwrap()
            } else {
                members[i].label
            };
            Value::Union {
                disc,
                value: Box::new(gen_value(rng, &members[i].tc, enclosing, depth + 1)),
            }
        }
        TcDef::Enum { members, .. } => Value::Enum(rng.below(members.len() as u64) as u32),
        TcDef::Sequence { element, bound } => {
            let max = if *bound == 0 { 5 } else { *bound as u64 + 1 };
            // Recursion ends after a few levels.
            let n = if depth > 4 {
                0
            } else {
                rng.below(max.min(5)) as usize
            };
            gen_elements(rng, element, n, enclosing, depth)
        }
        TcDef::Array { element, length } => {
            gen_elements(rng, element, *length as usize, enclosing, depth)
        }
        TcDef::Alias { content, .. } => gen_value(rng, content, enclosing, depth),
        TcDef::Recursive { id } => {
            let t = enclosing
                .iter()
                .rev()
                .find(|t| t.id() == Some(&**id))
                .cloned()
                .unwrap();
            gen_value(rng, &t, enclosing, depth)
        }
        other => panic!("no value for {other:?}"),
    }
}

fn gen_elements(
    rng: &mut Rng,
    element: &TypeCode,
    n: usize,
    enclosing: &mut Vec<TypeCode>,
    depth: u32,
) -> Value {
    use TCKind::*;
    let e = element.unalias();
    match e.def() {
        TcDef::Basic(k) => {
            let mut one = |f: &mut dyn FnMut(&mut Rng) -> Value| -> Vec<Value> {
                (0..n).map(|_| f(rng)).collect()
            };
            macro_rules! packed {
                ($variant:ident, $inner:ident) => {
                    Value::$variant(
                        one(&mut |r| gen_value(r, e, &mut Vec::new(), depth))
                            .into_iter()
                            .map(|v| match v {
                                Value::$inner(x) => x,
                                _ => unreachable!(),
                            })
                            .collect(),
                    )
                };
            }
            match k {
                tk_short => packed!(ShortSeq, Short),
                tk_ushort => packed!(UShortSeq, UShort),
                tk_long => packed!(LongSeq, Long),
                tk_ulong => packed!(ULongSeq, ULong),
                tk_longlong => packed!(LongLongSeq, LongLong),
                tk_ulonglong => packed!(ULongLongSeq, ULongLong),
                tk_float => packed!(FloatSeq, Float),
                tk_double => packed!(DoubleSeq, Double),
                tk_boolean => packed!(BooleanSeq, Boolean),
                tk_char => Value::CharSeq((0..n).map(|_| rng.next() as u8).collect()),
                tk_octet => Value::OctetSeq((0..n).map(|_| rng.next() as u8).collect()),
                _ => Value::Seq(
                    (0..n)
                        .map(|_| gen_value(rng, element, enclosing, depth + 1))
                        .collect(),
                ),
            }
        }
        TcDef::Enum { members, .. } => Value::EnumSeq(
            (0..n)
                .map(|_| rng.below(members.len() as u64) as u32)
                .collect(),
        ),
        _ => Value::Seq(
            (0..n)
                .map(|_| gen_value(rng, element, enclosing, depth + 1))
                .collect(),
        ),
    }
}

/// Equality up to representation: a sequence of struct rows equals the
/// column form with the same elements.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Struct(x), Value::Struct(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (
            Value::Union {
                disc: d1,
                value: v1,
            },
            Value::Union {
                disc: d2,
                value: v2,
            },
        ) => d1 == d2 && same(v1, v2),
        (Value::Any(x), Value::Any(y)) => x.tc.equal(&y.tc) && same(&x.value, &y.value),
        _ => match (a.len(), b.len()) {
            (Some(n), Some(m)) => {
                n == m && (0..n).all(|i| same(&a.element(i).unwrap(), &b.element(i).unwrap()))
            }
            _ => a == b,
        },
    }
}

fn order(little: bool) -> ByteOrder {
    if little {
        ByteOrder::Little
    } else {
        ByteOrder::Big
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn typecodes_and_values_round_trip(seed in 1u64.., little: bool, prefix in 0usize..8) {
        let mut rng = Rng(seed);
        let tc = gen_tc(&mut rng, 3);
        let v = gen_value(&mut rng, &tc, &mut Vec::new(), 0);
        let order = order(little);

        // TypeCode alone, after `prefix` bytes of an outer stream.
        let mut buf = BytesMut::new();
        let mut w = Writer::new(&mut buf, order);
        for _ in 0..prefix { w.write_u8(0xee); }
        tc.encode(&mut w).unwrap();
        let mut r = Reader::new(&buf, order);
        r.take(prefix).unwrap();
        let back = TypeCode::decode(&mut r).unwrap();
        r.expect_end().unwrap();
        prop_assert!(back.equal(&tc), "{:?} != {:?}", back, tc);

        // Value alone and inside an any.
        let any = Value::Any(Box::new(Any { tc: tc.clone(), value: v.clone() }));
        for (t, val) in [(&tc, &v), (&TypeCode::any(), &any)] {
            let mut buf = BytesMut::new();
            let mut w = Writer::new(&mut buf, order);
            for _ in 0..prefix { w.write_u8(0xee); }
            val.encode(t, &mut w).unwrap();
            let mut r = Reader::new(&buf, order);
            r.take(prefix).unwrap();
            let got = Value::decode(t, &mut r).unwrap();
            r.expect_end().unwrap();
            // Rows of structs come back as columns: compare by element.
            prop_assert!(same(&got, val), "{:?} vs {:?}", got, val);
            // Re-encoding the decoded value gives the same bytes, and
            // decodes to the very same representation.
            let mut buf2 = BytesMut::new();
            let mut w2 = Writer::new(&mut buf2, order);
            for _ in 0..prefix { w2.write_u8(0xee); }
            got.encode(t, &mut w2).unwrap();
            prop_assert_eq!(&buf[..], &buf2[..]);
            let mut r2 = Reader::new(&buf2, order);
            r2.take(prefix).unwrap();
            prop_assert_eq!(&Value::decode(t, &mut r2).unwrap(), &got);
        }
    }
}
