//! bench.idl's user exception and `any` (its ANY AND USER EXCEPTIONS
//! section): `BenchError` as a TypeCode and as [`BenchErrorData`], the
//! detail `raise_user` fills in, and the `any` values the checks send
//! through `echo_any` ([`samples`]): basic types, strings, sequences, a
//! struct, an alias, an enum, unions, TypeCodes themselves (recursive,
//! indirected, with member names, of an exception) and an exception.

use iiop_cdr::typecode::TCKind;
use iiop_cdr::{Any, CdrError, Reader, TypeCode, Value, Writer};

use crate::bench::elements::Elem;
use crate::bench::types::{element_typecode, seq_typecode};
use crate::bench::values::node_typecode;

/// `Bench::BenchError`.
pub const BENCH_ERROR_ID: &str = "IDL:Bench/BenchError:1.0";

/// The longest detail `raise_user` fills in; a longer one is BAD_PARAM.
pub const DETAIL_MAX: u32 = 1 << 20;

/// `exception BenchError { long code; string reason; OctetSeq detail; };`
pub fn bench_error_typecode() -> TypeCode {
    TypeCode::except_tc(
        BENCH_ERROR_ID,
        "BenchError",
        vec![
            ("code", TypeCode::long()),
            ("reason", TypeCode::string(0)),
            ("detail", seq_typecode(Elem::Octet)),
        ],
    )
}

/// A `BenchError`'s members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchErrorData {
    pub code: i32,
    pub reason: String,
    pub detail: Vec<u8>,
}

/// The detail `raise_user` sends for `n` octets: octet `i` is `i mod 256`.
pub fn detail(n: u32) -> Vec<u8> {
    (0..n).map(|i| i as u8).collect()
}

impl BenchErrorData {
    /// What `raise_user(code, reason, n)` raises.
    pub fn raised(code: i32, reason: &str, n: u32) -> BenchErrorData {
        BenchErrorData {
            code,
            reason: reason.into(),
            detail: detail(n),
        }
    }

    /// The members (no repository id), as a USER_EXCEPTION body has them
    /// after its id.
    pub fn write_members(&self, w: &mut Writer<'_>) -> Result<(), CdrError> {
        w.write_i32(self.code);
        w.write_string(&self.reason)?;
        w.write_octet_seq(&self.detail)
    }

    /// A USER_EXCEPTION body: the repository id, then the members.
    pub fn write(&self, w: &mut Writer<'_>) -> Result<(), CdrError> {
        w.write_string(BENCH_ERROR_ID)?;
        self.write_members(w)
    }

    /// The members, read after the repository id.
    pub fn read_members(r: &mut Reader<'_>) -> Result<BenchErrorData, CdrError> {
        Ok(BenchErrorData {
            code: r.read_i32()?,
            reason: r.read_string()?,
            detail: r.read_octet_bytes()?.to_vec(),
        })
    }

    /// As a dynamic value of [`bench_error_typecode`].
    pub fn value(&self) -> Value {
        Value::Struct(vec![
            Value::Long(self.code),
            Value::String(self.reason.clone()),
            Value::OctetSeq(self.detail.clone().into()),
        ])
    }
}

/// One `any` a check sends through `echo_any`.
#[derive(Debug, Clone)]
pub struct AnySample {
    /// The check's name.
    pub name: &'static str,
    pub any: Any,
    /// It holds a wstring (wchar needs a negotiated code set, and GIOP 1.2
    /// for the layout every ORB reads alike).
    pub wide: bool,
}

/// `struct Tree { long v; sequence<Tree> kids; }`, a recursive struct (its
/// TypeCode refers to itself by an indirection), not in bench.idl: a
/// TypeCode the receiver cannot know beforehand.
pub fn tree_typecode() -> TypeCode {
    const ID: &str = "IDL:iiopbench/Tree:1.0";
    TypeCode::struct_tc(
        ID,
        "Tree",
        vec![
            ("v", TypeCode::long()),
            ("kids", TypeCode::sequence(TypeCode::recursive(ID), 0)),
        ],
    )
}

/// `struct Pair { MyStruct a; MyStruct b; }` with `b`'s TypeCode the same
/// node as `a`'s, so it is written as an indirection back to `a`'s (as
/// omniORB and JacORB write repeated TypeCodes): not recursion, sharing.
pub fn pair_typecode() -> TypeCode {
    let my = element_typecode(Elem::MyStruct);
    TypeCode::struct_tc(
        "IDL:iiopbench/Pair:1.0",
        "Pair",
        vec![("a", my.clone()), ("b", my)],
    )
}

fn any(tc: TypeCode, value: Value) -> Any {
    Any { tc, value }
}

fn tc_any(tc: TypeCode) -> Any {
    any(TypeCode::basic(TCKind::tk_TypeCode), Value::TypeCode(tc))
}

/// Every `any` the checks send, in order: values first, then TypeCodes,
/// then the exception (the one ORBs disagree on).
pub fn samples() -> Vec<AnySample> {
    let s = |name, any| AnySample {
        name,
        any,
        wide: false,
    };
    let my = Value::Struct(vec![
        Value::Boolean(true),
        Value::String("any struct".into()),
        Value::Long(-7),
    ]);
    vec![
        s("any: short", any(TypeCode::short(), Value::Short(-2))),
        s("any: long", any(TypeCode::long(), Value::Long(-123_456))),
        s(
            "any: unsigned long long",
            any(TypeCode::ulonglong(), Value::ULongLong(u64::MAX - 1)),
        ),
        s(
            "any: double",
            any(TypeCode::double(), Value::Double(-0.125)),
        ),
        s(
            "any: boolean",
            any(TypeCode::boolean(), Value::Boolean(true)),
        ),
        s("any: char", any(TypeCode::char(), Value::Char('Z'))),
        s("any: octet", any(TypeCode::octet(), Value::Octet(0xa5))),
        s(
            "any: string",
            any(TypeCode::string(0), Value::String("any string".into())),
        ),
        AnySample {
            name: "any: wstring",
            any: any(
                TypeCode::wstring(0),
                Value::WString("wide \u{e9}\u{20ac}".into()),
            ),
            wide: true,
        },
        s(
            "any: sequence<octet>",
            any(
                TypeCode::sequence(TypeCode::octet(), 0),
                Value::OctetSeq(detail(19).into()),
            ),
        ),
        s(
            "any: struct Bench::MyStruct",
            any(element_typecode(Elem::MyStruct), my.clone()),
        ),
        s(
            "any: alias Bench::LongSeq",
            any(seq_typecode(Elem::Long), Value::LongSeq(vec![1, -2, 3])),
        ),
        s(
            "any: enum Bench::Color",
            any(element_typecode(Elem::Color), Value::Enum(2)),
        ),
        s(
            "any: union Bench::Variant, string branch",
            any(
                element_typecode(Elem::Variant),
                Value::Union {
                    disc: 3,
                    value: Box::new(Value::String("branch".into())),
                },
            ),
        ),
        s(
            "any: union Bench::Variant, default branch",
            any(
                element_typecode(Elem::Variant),
                Value::Union {
                    disc: 9,
                    value: Box::new(Value::Octet(7)),
                },
            ),
        ),
        s(
            "any: any holding a long",
            any(
                TypeCode::basic(TCKind::tk_any),
                Value::Any(Box::new(any(TypeCode::long(), Value::Long(5)))),
            ),
        ),
        s("any: TypeCode long", tc_any(TypeCode::long())),
        s(
            "any: TypeCode struct with member names (Bench::PerfStruct)",
            tc_any(element_typecode(Elem::PerfStruct)),
        ),
        s(
            "any: TypeCode recursive struct (indirection)",
            tc_any(tree_typecode()),
        ),
        s(
            "any: TypeCode recursive valuetype Bench::Node (indirection)",
            tc_any(node_typecode()),
        ),
        s(
            "any: TypeCode repeated struct (indirection to a sibling)",
            tc_any(pair_typecode()),
        ),
        s(
            "any: TypeCode of exception Bench::BenchError (tk_except)",
            tc_any(bench_error_typecode()),
        ),
        s(
            "any: exception Bench::BenchError",
            any(
                bench_error_typecode(),
                BenchErrorData::raised(42, "in an any", 5).value(),
            ),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use iiop_cdr::value::ValueScope;
    use iiop_cdr::ByteOrder;

    fn round_trip(a: &Any, order: ByteOrder) -> Any {
        let tc = TypeCode::basic(TCKind::tk_any);
        let mut buf = BytesMut::new();
        let mut w = Writer::new(&mut buf, order);
        Value::Any(Box::new(a.clone()))
            .encode(&tc, &mut w)
            .expect("encodes");
        let mut r = Reader::new(&buf, order);
        match Value::decode_in(&tc, &mut r, &mut ValueScope::default()).expect("decodes") {
            Value::Any(b) => *b,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_sample_round_trips_in_both_orders() {
        for s in samples() {
            for order in [ByteOrder::Big, ByteOrder::Little] {
                let back = round_trip(&s.any, order);
                assert!(back.tc.equal(&s.any.tc), "{}", s.name);
                let again = round_trip(&back, order);
                assert_eq!(again, back, "{}", s.name);
            }
        }
    }

    #[test]
    fn the_exception_in_an_any_carries_its_repository_id() {
        let s = samples().pop().unwrap();
        let mut buf = BytesMut::new();
        let tc = TypeCode::basic(TCKind::tk_any);
        Value::Any(Box::new(s.any))
            .encode(&tc, &mut Writer::new(&mut buf, ByteOrder::Big))
            .unwrap();
        let id = format!("{BENCH_ERROR_ID}\0");
        let at = buf
            .windows(id.len())
            .rposition(|w| w == id.as_bytes())
            .expect("the id is written");
        // After the TypeCode's encapsulation: length, id, then the members.
        let len = u32::from_be_bytes(buf[at - 4..at].try_into().unwrap()) as usize;
        assert_eq!(len, id.len());
        let code = (at + len + 3) & !3;
        assert_eq!(&buf[code..code + 4], &42i32.to_be_bytes());
    }

    #[test]
    fn raised_detail_and_members_round_trip() {
        let e = BenchErrorData::raised(-3, "why", 300);
        assert_eq!(e.detail[255], 255);
        assert_eq!(e.detail[256], 0);
        let mut buf = BytesMut::new();
        e.write(&mut Writer::new(&mut buf, ByteOrder::Little))
            .unwrap();
        let mut r = Reader::new(&buf, ByteOrder::Little);
        assert_eq!(r.read_string().unwrap(), BENCH_ERROR_ID);
        assert_eq!(BenchErrorData::read_members(&mut r).unwrap(), e);
        // The typed bytes are the dynamic codec's.
        let mut dynamic = BytesMut::new();
        let mut w = Writer::new(&mut dynamic, ByteOrder::Little);
        w.write_string(BENCH_ERROR_ID).unwrap();
        e.value().encode(&bench_error_typecode(), &mut w).unwrap();
        assert_eq!(buf, dynamic);
    }
}
