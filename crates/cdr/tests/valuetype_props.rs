//! Property tests for valuetypes: random graphs of values (shared
//! references, cycles, nulls, value boxes, a truncatable derived type
//! whose state holds more values) written in every style our writer has
//! (chunked or not, with or without repository ids, ids indirected,
//! end tags coalesced, chunks cut before every member), in both byte
//! orders at every alignment, read back equal; read by a reader that
//! knows only the base type, truncated exactly as a simulation of the
//! wire order predicts; and mutated bytes never panic the decoder.

use std::collections::HashMap;

use bytes::BytesMut;
use iiop_cdr::value::{ValueObj, ValueScope};
use iiop_cdr::{ByteOrder, CdrError, Reader, TypeCode, Value, ValueStyle, Writer};
use proptest::prelude::*;

const NODE: &str = "IDL:P/Node:1.0";
const RICH: &str = "IDL:P/Rich:1.0";
const BOX: &str = "IDL:P/LongBox:1.0";

fn node_tc() -> TypeCode {
    TypeCode::value_tc(
        NODE,
        "Node",
        0,
        None,
        vec![
            ("id", TypeCode::long(), 1),
            ("label", TypeCode::string(0), 1),
            ("next", TypeCode::recursive(NODE), 1),
        ],
    )
}

fn box_tc() -> TypeCode {
    TypeCode::value_box(BOX, "LongBox", TypeCode::long())
}

/// `valuetype Rich : truncatable Node { double d; octet o;
/// sequence<Node> kids; LongBox b; Node other; sequence<double> ds; }`
fn rich_tc() -> TypeCode {
    TypeCode::value_tc(
        RICH,
        "Rich",
        3,
        Some(node_tc()),
        vec![
            ("d", TypeCode::double(), 1),
            ("o", TypeCode::octet(), 1),
            ("kids", TypeCode::sequence(node_tc(), 0), 1),
            ("b", box_tc(), 1),
            ("other", node_tc(), 1),
            ("ds", TypeCode::sequence(TypeCode::double(), 0), 1),
        ],
    )
}

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
}

/// A link to another object of the graph, or null.
type Link = Option<usize>;

/// One object of a random graph.
#[derive(Debug, Clone)]
struct Obj {
    id: i32,
    label: String,
    next: Link,
    /// `Some` for a Rich.
    rich: Option<RichPart>,
}

#[derive(Debug, Clone)]
struct RichPart {
    d: f64,
    o: u8,
    kids: Vec<Link>,
    /// The box: null, a new box, or the box of another Rich (shared).
    b: Option<i32>,
    other: Link,
    ds: Vec<f64>,
}

fn gen_graph(rng: &mut Rng) -> Vec<Obj> {
    let n = 1 + rng.below(6) as usize;
    let link = |rng: &mut Rng| (rng.below(3) > 0).then(|| rng.below(n as u64) as usize);
    (0..n)
        .map(|i| Obj {
            id: i as i32 * 7 - 3,
            label: "L".repeat(rng.below(9) as usize),
            next: link(rng),
            rich: (rng.below(2) == 0).then(|| RichPart {
                d: rng.below(1000) as f64 * 0.25,
                o: rng.below(256) as u8,
                kids: (0..rng.below(4)).map(|_| link(rng)).collect(),
                b: (rng.below(2) == 0).then(|| rng.below(100) as i32),
                other: link(rng),
                ds: (0..rng.below(3)).map(|k| k as f64 + 0.5).collect(),
            }),
        })
        .collect()
}

/// The graph as the value tree our writer writes and a reader that knows
/// every type reads back (`truncate`: as a reader that knows only Node
/// and LongBox reads it), walking in wire order: the first occurrence of
/// an object is the value, numbered in the order of the tags read, the
/// others references. `Err(())` when a kept reference points at an object
/// that was only written inside a skipped part.
struct Walk<'g> {
    g: &'g [Obj],
    truncate: bool,
    /// Object → its number for the reader, if it read its tag.
    numbered: HashMap<usize, u32>,
    /// Objects written (by the writer) so far.
    written: HashMap<usize, ()>,
    next: u32,
    broken: bool,
}

impl Walk<'_> {
    fn link(&mut self, l: Link, skipping: bool) -> Value {
        match l {
            None => Value::Null,
            Some(i) => self.obj(i, skipping),
        }
    }

    fn obj(&mut self, i: usize, skipping: bool) -> Value {
        if self.written.contains_key(&i) {
            return match self.numbered.get(&i) {
                Some(&n) => Value::ValueRef(n),
                None => {
                    if !skipping {
                        self.broken = true;
                    }
                    Value::Null
                }
            };
        }
        self.written.insert(i, ());
        let number = if skipping {
            None
        } else {
            let n = self.next;
            self.next += 1;
            self.numbered.insert(i, n);
            Some(n)
        };
        let o = &self.g[i];
        let mut state = vec![
            Value::Long(o.id),
            Value::String(o.label.clone()),
            self.link(o.next, skipping),
        ];
        let mut type_id = NODE;
        if let Some(r) = &o.rich {
            let skip = skipping || self.truncate;
            let kids: Vec<Value> = r.kids.iter().map(|&k| self.link(k, skip)).collect();
            let b = match r.b {
                None => Value::Null,
                Some(x) => {
                    // Each box is its own value (numbered when read).
                    let n = if skip {
                        0
                    } else {
                        let n = self.next;
                        self.next += 1;
                        n
                    };
                    Value::Valuetype(Box::new(ValueObj {
                        number: n,
                        type_id: BOX.into(),
                        state: vec![Value::Long(x)],
                    }))
                }
            };
            let other = self.link(r.other, skip);
            if !self.truncate {
                type_id = RICH;
                state.extend([
                    Value::Double(r.d),
                    Value::Octet(r.o),
                    Value::Seq(kids),
                    b,
                    other,
                    Value::DoubleSeq(r.ds.clone()),
                ]);
            }
        }
        match number {
            Some(number) => Value::Valuetype(Box::new(ValueObj {
                number,
                type_id: type_id.into(),
                state,
            })),
            None => Value::Null,
        }
    }
}

fn tree(g: &[Obj], truncate: bool) -> Result<Value, ()> {
    let mut w = Walk {
        g,
        truncate,
        numbered: HashMap::new(),
        written: HashMap::new(),
        next: 0,
        broken: false,
    };
    let v = w.obj(0, false);
    if w.broken {
        Err(())
    } else {
        Ok(v)
    }
}

fn order(little: bool) -> ByteOrder {
    if little {
        ByteOrder::Little
    } else {
        ByteOrder::Big
    }
}

fn scope(style: u8) -> ValueScope {
    let mut s = ValueScope::with_types([&rich_tc()]);
    s.chunk_all = style & 1 != 0;
    s.omit_formal_ids = style & 2 != 0;
    s.writer.style = ValueStyle {
        share_ids: style & 4 != 0,
        coalesce_end_tags: style & 8 != 0,
        chunk_size: match style >> 4 & 3 {
            0 => None,
            1 => Some(1),
            2 => Some(7),
            _ => Some(64),
        },
    };
    s
}

fn encode(v: &Value, order: ByteOrder, prefix: usize, style: u8) -> BytesMut {
    let mut buf = BytesMut::new();
    let mut w = Writer::new(&mut buf, order);
    for _ in 0..prefix {
        w.write_u8(0xee);
    }
    v.encode_in(&node_tc(), &mut w, &mut scope(style)).unwrap();
    // A long after the value: the reader must end exactly where the
    // value ends.
    w.write_u32(0x5a5a_5a5a);
    buf
}

fn decode(b: &[u8], order: ByteOrder, prefix: usize, knows_rich: bool) -> Result<Value, CdrError> {
    let mut r = Reader::new(b, order);
    r.take(prefix)?;
    let mut s = if knows_rich {
        ValueScope::with_types([&rich_tc()])
    } else {
        ValueScope::with_types([&node_tc()])
    };
    let v = Value::decode_in(&node_tc(), &mut r, &mut s)?;
    // The value must end where it was written to end.
    if r.read_u32()? != 0x5a5a_5a5a {
        return Err(CdrError::Message(
            "the value did not end where it was written to".into(),
        ));
    }
    r.expect_end()?;
    Ok(v)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn value_graphs_round_trip_in_every_style(seed in 1u64.., little: bool, prefix in 0usize..8, style in 0u8..64) {
        let mut rng = Rng(seed);
        let g = gen_graph(&mut rng);
        let v = tree(&g, false).unwrap();
        let order = order(little);
        let b = encode(&v, order, prefix, style);
        prop_assert_eq!(decode(&b, order, prefix, true).unwrap(), v);
    }

    #[test]
    fn a_reader_that_knows_only_the_base_truncates_as_predicted(seed in 1u64.., little: bool, prefix in 0usize..8, style in 0u8..64) {
        let mut rng = Rng(seed);
        let g = gen_graph(&mut rng);
        let v = tree(&g, false).unwrap();
        let order = order(little);
        let b = encode(&v, order, prefix, style);
        match (tree(&g, true), decode(&b, order, prefix, false)) {
            (Ok(want), Ok(got)) => prop_assert_eq!(got, want),
            (Err(()), Err(CdrError::BadValue { reason, .. })) => {
                prop_assert!(reason.contains("no value read before"), "{}", reason)
            }
            (want, got) => prop_assert!(false, "predicted {:?}, read {:?}", want, got),
        }
    }

    #[test]
    fn mutated_values_never_panic(seed in 1u64.., little: bool, style in 0u8..64, flips in proptest::collection::vec((0usize..4096, any::<u8>()), 1..6)) {
        let mut rng = Rng(seed);
        let g = gen_graph(&mut rng);
        let v = tree(&g, false).unwrap();
        let order = order(little);
        let mut b = encode(&v, order, 0, style);
        for (at, x) in flips {
            let n = b.len();
            b[at % n] ^= x | 1;
        }
        let _ = decode(&b, order, 0, true);
        let _ = decode(&b, order, 0, false);
        let cut = seed as usize % b.len();
        let _ = decode(&b[..cut], order, 0, true);
    }
}
