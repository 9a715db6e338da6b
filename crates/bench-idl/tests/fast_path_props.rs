//! The fast path for sequences of structs of primitives (what
//! `Payload::decode` / `Payload::encode` use for perfstruct, cd,
//! charstruct, … : `iiop_cdr::layout`) against the serde path
//! (`from_reader` / `to_writer` of a `Vec` of the struct), as properties:
//! in both byte orders, both char code sets, at every alignment phase,
//! under tight and default limits,
//! - decoding arbitrary bytes, and valid encodings with bytes flipped,
//!   cut short or followed by extra bytes, gives the same values (bit for
//!   bit) or the same error, and leaves the reader at the same position;
//! - encoding arbitrary values (chars beyond what the code set carries
//!   included) gives the same bytes, or the same error.
//!
//! Cases come from a seeded RNG (`rand`, a dependency of this crate), so a
//! failure names its seed and input and reruns identically; every property
//! runs a fixed number of cases ([`CASES`]).

use bytes::BytesMut;
use iiop_bench_idl::bench::elements::Elem;
use iiop_bench_idl::bench::types::{
    Cd, CharStruct, DoubleStruct, FloatPair, FloatStruct, LongQuad, LongStruct, MixedQuad, Payload,
    PerfStruct,
};
use iiop_cdr::{ByteOrder, CharCodeSet, Limits, Options, Reader, Writer};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Cases per property and element type.
const CASES: u64 = 512;

/// The element types whose sequences take the fast path.
use iiop_bench_idl::bench::types::FAST_PATH as FAST;

/// Run `case` for `CASES` seeds per fast element type; a failure names
/// the element and seed. `case` says whether both paths accepted (true)
/// or both refused (false); each element type must see both verdicts
/// (where `refusable` says it can be refused at all), so that no property
/// holds only because every case fails (or succeeds).
fn property(
    name: &str,
    refusable: fn(Elem) -> bool,
    case: impl Fn(Elem, &mut SmallRng) -> Result<bool, String>,
) {
    for (e, elem) in FAST.into_iter().enumerate() {
        let mut accepted = 0;
        for seed in 0..CASES {
            let seed = (e as u64) << 32 | seed;
            let mut rng = SmallRng::seed_from_u64(seed);
            match case(elem, &mut rng) {
                Ok(ok) => accepted += ok as u64,
                Err(why) => panic!("{name}: {elem}, seed {seed:#x}: {why}"),
            }
        }
        let refused = CASES - accepted;
        assert!(
            accepted >= CASES / 16 && (refused >= CASES / 16 || !refusable(elem)),
            "{name}: {elem}: {accepted} of {CASES} cases accepted"
        );
    }
}

/// Whether `elem` has a `char` member (the only member an encoding can
/// refuse).
fn has_char(elem: Elem) -> bool {
    matches!(elem, Elem::PerfStruct | Elem::Cd | Elem::CharStruct)
}

/// The serde path: the struct's `Vec` through `from_reader`.
fn serde_decode(elem: Elem, r: &mut Reader<'_>) -> iiop_cdr::Result<Payload> {
    use iiop_cdr::from_reader as d;
    Ok(match elem {
        Elem::PerfStruct => Payload::PerfStruct(d(r)?),
        Elem::Cd => Payload::Cd(d(r)?),
        Elem::CharStruct => Payload::CharStruct(d(r)?),
        Elem::FloatStruct => Payload::FloatStruct(d(r)?),
        Elem::LongStruct => Payload::LongStruct(d(r)?),
        Elem::DoubleStruct => Payload::DoubleStruct(d(r)?),
        Elem::LongQuad => Payload::LongQuad(d(r)?),
        Elem::MixedQuad => Payload::MixedQuad(d(r)?),
        Elem::FloatPair => Payload::FloatPair(d(r)?),
        other => unreachable!("{other} has no fast path"),
    })
}

/// The serde path: the struct's `Vec` through `to_writer`.
fn serde_encode(p: &Payload, w: &mut Writer<'_>) -> iiop_cdr::Result<()> {
    use iiop_cdr::to_writer as e;
    match p {
        Payload::PerfStruct(v) => e(w, v),
        Payload::Cd(v) => e(w, v),
        Payload::CharStruct(v) => e(w, v),
        Payload::FloatStruct(v) => e(w, v),
        Payload::LongStruct(v) => e(w, v),
        Payload::DoubleStruct(v) => e(w, v),
        Payload::LongQuad(v) => e(w, v),
        Payload::MixedQuad(v) => e(w, v),
        Payload::FloatPair(v) => e(w, v),
        other => unreachable!("{:?} has no fast path", other.elem()),
    }
}

/// A payload's values as bytes (serde, big-endian, ISO-8859-1), so that
/// values compare bit for bit, NaN payloads included.
fn bits(p: &Payload) -> Vec<u8> {
    let mut buf = BytesMut::new();
    serde_encode(p, &mut Writer::new(&mut buf, ByteOrder::Big)).expect("decoded values re-encode");
    buf.to_vec()
}

/// A char: mostly ASCII, often ISO-8859-1's upper half, sometimes any.
fn any_char(rng: &mut SmallRng) -> char {
    match rng.gen_range(0..8) {
        0..=3 => rng.gen_range(0u8..0x80) as char,
        4..=6 => rng.gen_range(0x80u8..=0xFF) as char,
        _ => rng.gen(),
    }
}

/// A double or float's bits, special values (NaNs, infinities, zeros,
/// subnormals) included.
fn any_f64(rng: &mut SmallRng) -> f64 {
    f64::from_bits(rng.gen())
}
fn any_f32(rng: &mut SmallRng) -> f32 {
    f32::from_bits(rng.gen())
}

/// `n` arbitrary elements of `elem`; chars only those `only` can carry,
/// or any with `None`.
fn values(elem: Elem, n: usize, only: Option<CharCodeSet>, rng: &mut SmallRng) -> Payload {
    let c = |rng: &mut SmallRng| match only {
        Some(CharCodeSet::Utf8) => rng.gen_range(0u8..0x80) as char,
        Some(CharCodeSet::Latin1) => rng.gen::<u8>() as char,
        None => any_char(rng),
    };
    let mut v = |f: &mut dyn FnMut(&mut SmallRng) -> Payload| f(rng);
    v(&mut |rng| match elem {
        Elem::PerfStruct => Payload::PerfStruct(
            (0..n)
                .map(|_| PerfStruct {
                    s: rng.gen(),
                    c: c(rng),
                    l: rng.gen(),
                    o: rng.gen(),
                    d: any_f64(rng),
                })
                .collect(),
        ),
        Elem::Cd => Payload::Cd(
            (0..n)
                .map(|_| Cd {
                    c: c(rng),
                    d: any_f64(rng),
                })
                .collect(),
        ),
        Elem::CharStruct => Payload::CharStruct((0..n).map(|_| CharStruct { c: c(rng) }).collect()),
        Elem::FloatStruct => {
            Payload::FloatStruct((0..n).map(|_| FloatStruct { f: any_f32(rng) }).collect())
        }
        Elem::LongStruct => {
            Payload::LongStruct((0..n).map(|_| LongStruct { l: rng.gen() }).collect())
        }
        Elem::DoubleStruct => {
            Payload::DoubleStruct((0..n).map(|_| DoubleStruct { d: any_f64(rng) }).collect())
        }
        Elem::LongQuad => Payload::LongQuad(
            (0..n)
                .map(|_| LongQuad {
                    a: rng.gen(),
                    b: rng.gen(),
                    c: rng.gen(),
                    d: rng.gen(),
                })
                .collect(),
        ),
        Elem::MixedQuad => Payload::MixedQuad(
            (0..n)
                .map(|_| MixedQuad {
                    d: any_f64(rng),
                    f: any_f32(rng),
                    s1: rng.gen(),
                    s2: rng.gen(),
                })
                .collect(),
        ),
        Elem::FloatPair => Payload::FloatPair(
            (0..n)
                .map(|_| FloatPair {
                    a: any_f32(rng),
                    b: any_f32(rng),
                })
                .collect(),
        ),
        other => unreachable!("{other} has no fast path"),
    })
}

/// Where and how one case reads or writes.
#[derive(Debug, Clone, Copy)]
struct Setting {
    order: ByteOrder,
    opts: Options,
    /// Bytes before the sequence (its alignment phase).
    lead: usize,
}

fn setting(rng: &mut SmallRng) -> Setting {
    let order = if rng.gen() {
        ByteOrder::Big
    } else {
        ByteOrder::Little
    };
    let char_set = if rng.gen() {
        CharCodeSet::Latin1
    } else {
        CharCodeSet::Utf8
    };
    // Mostly the defaults; sometimes a length limit a short sequence can
    // exceed, or a nesting limit the sequence itself reaches.
    let limits = match rng.gen_range(0..8) {
        0 => Limits {
            max_len: rng.gen_range(0..16),
            ..Limits::default()
        },
        1 => Limits {
            max_depth: rng.gen_range(0..2),
            ..Limits::default()
        },
        _ => Limits::default(),
    };
    Setting {
        order,
        opts: Options {
            char_set,
            limits,
            ..Options::default()
        },
        lead: rng.gen_range(0..8),
    }
}

/// Decode `data` (after `lead` bytes) through both paths and compare;
/// whether they accepted it.
fn same_decoding(elem: Elem, data: &[u8], s: Setting) -> Result<bool, String> {
    let reader = || {
        let mut r = Reader::new(data, s.order).options(s.opts);
        r.take(s.lead.min(data.len())).expect("lead fits");
        r
    };
    let (mut rf, mut rs) = (reader(), reader());
    let fast = Payload::decode(elem, &mut rf);
    let slow = serde_decode(elem, &mut rs);
    let verdict = match (&fast, &slow) {
        (Ok(f), Ok(s)) if bits(f) == bits(s) => Ok(true),
        (Err(f), Err(s)) if f == s => Ok(false),
        _ => Err(format!("fast {fast:?}, serde {slow:?}")),
    };
    verdict
        .and_then(|ok| {
            (rf.position() == rs.position())
                .then_some(ok)
                .ok_or(format!(
                    "fast ends at {}, serde at {}",
                    rf.position(),
                    rs.position()
                ))
        })
        .map_err(|why| format!("{why}\n  {s:?}\n  input {data:02x?}"))
}

/// A u32 in `order`.
fn u32_bytes(v: u32, order: ByteOrder) -> [u8; 4] {
    match order {
        ByteOrder::Big => v.to_be_bytes(),
        ByteOrder::Little => v.to_le_bytes(),
    }
}

#[test]
fn arbitrary_bytes_decode_alike() {
    property(
        "arbitrary bytes",
        |_| true,
        |elem, rng| {
            let s = setting(rng);
            let mut data: Vec<u8> = (0..s.lead).map(|_| rng.gen()).collect();
            // A plausible count most of the time (else nearly every case would
            // stop at the length), then bytes of any value.
            let count = match rng.gen_range(0..8) {
                0 => rng.gen(),
                _ => rng.gen_range(0..12),
            };
            data.extend(u32_bytes(count, s.order));
            let body = rng.gen_range(0..300);
            data.extend((0..body).map(|_| rng.gen::<u8>()));
            same_decoding(elem, &data, s)
        },
    );
}

#[test]
fn mutated_encodings_decode_alike() {
    property(
        "mutated encodings",
        |_| true,
        |elem, rng| {
            let s = setting(rng);
            let n = rng.gen_range(0..12);
            let p = values(elem, n, Some(s.opts.char_set), rng);
            let mut buf = BytesMut::from(&vec![0xA5u8; s.lead][..]);
            serde_encode(&p, &mut Writer::new(&mut buf, s.order).options(s.opts))
                .expect("ASCII and ISO-8859-1 values encode");
            let mut data = buf.to_vec();
            // Unchanged, or with flipped bytes, cut short, or extended.
            match rng.gen_range(0..4) {
                0 => {}
                1 => {
                    for _ in 0..rng.gen_range(1..4) {
                        let i = rng.gen_range(0..data.len());
                        data[i] = match rng.gen_range(0..3) {
                            0 => data[i] ^ 0x80,
                            1 => data[i] ^ (1 << rng.gen_range(0..8)),
                            _ => rng.gen(),
                        };
                    }
                }
                2 => data.truncate(rng.gen_range(s.lead..=data.len())),
                _ => data.extend((0..rng.gen_range(1..16)).map(|_| rng.gen::<u8>())),
            }
            if data.len() > s.lead && rng.gen_range(0..4) == 0 {
                // A count off by a little from the true one.
                let at = s.lead.next_multiple_of(4);
                if at + 4 <= data.len() {
                    let delta: i32 = rng.gen_range(-2..=2);
                    let count = (n as i64 + delta as i64).max(0) as u32;
                    data[at..at + 4].copy_from_slice(&u32_bytes(count, s.order));
                }
            }
            same_decoding(elem, &data, s)
        },
    );
}

#[test]
fn arbitrary_values_encode_alike() {
    property("encoding", has_char, |elem, rng| {
        let s = setting(rng);
        let n = rng.gen_range(0..12);
        let p = values(elem, n, None, rng);
        let encode = |f: &dyn Fn(&mut Writer<'_>) -> iiop_cdr::Result<()>| {
            let mut buf = BytesMut::from(&vec![0xA5u8; s.lead][..]);
            let r = f(&mut Writer::new(&mut buf, s.order).options(s.opts));
            (r, buf)
        };
        let (fr, fb) = encode(&|w| p.encode(w));
        let (sr, sb) = encode(&|w| serde_encode(&p, w));
        match (&fr, &sr) {
            (Ok(()), Ok(())) if fb == sb => Ok(true),
            (Err(f), Err(s)) if f == s => Ok(false),
            _ => Err(format!(
                "fast {fr:?} {:02x?}\n  serde {sr:?} {:02x?}\n  {s:?}\n  values {p:?}",
                &fb[..],
                &sb[..]
            )),
        }
    });
}
