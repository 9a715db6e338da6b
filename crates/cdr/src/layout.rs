//! Sequences of structs of primitives laid out from their TypeCode.
//!
//! A struct whose members are all fixed-size primitives (like bench.idl's
//! `PerfStruct`) has, inside a sequence, a layout that repeats: every
//! element after the first starts at the same alignment phase (the one
//! left by its most-aligned member), so from there on its members lie at
//! constant offsets and the elements at a constant stride. [`StructLayout`]
//! computes those offsets once from the struct's [`TypeCode`], by the same
//! rule serde follows member by member (each member aligned naturally,
//! relative to the stream's origin), and [`read_struct_seq`] /
//! [`write_struct_seq`] then decode and encode a whole run of elements with
//! one bounds check.
//!
//! The fast path makes exactly the checks serde makes, no fewer: a
//! `boolean` octet must be 0 or 1, a `char` must fit the negotiated char
//! code set (any octet in ISO-8859-1, below 0x80 in UTF-8, where a `char`
//! is one octet), the nesting depth and the length limit are checked as
//! serde's `deserialize_seq` checks them. When the fast path refuses
//! input, serde decodes it again from the same start, so that the error
//! (and the reader's position after it) is serde's own. Elements before
//! the steady phase, and segmented readers (GIOP 1.1 fragments realign),
//! go through serde too. The bytes and values are identical to serde's,
//! which the property tests of `vendors/tests/fast_path_props.rs`
//! check.

use serde::{de::DeserializeOwned, Serialize};

use crate::error::{CdrError, Result};
use crate::options::{ByteOrder, CharCodeSet};
use crate::prim::Primitive;
use crate::typecode::{TCKind, TypeCode};
use crate::{Reader, Writer};

/// Most members a [`StructLayout`] holds.
pub const MAX_MEMBERS: usize = 16;

/// The steady-phase layout of a struct of primitives inside a sequence:
/// derived from a TypeCode by [`StructLayout::of`], or at compile time from
/// a Rust type's field kinds by [`StructLayout::from_kinds`] (the same
/// rule, so a Rust type whose fields map to the TypeCode's members gets
/// the TypeCode's layout as constants; [`TcStruct::layout`] checks it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StructLayout {
    /// The largest member alignment.
    pub align: usize,
    /// Alignment of the first member.
    pub first_align: usize,
    /// Position modulo `align` of the first member of every element after
    /// the first.
    pub phase: usize,
    /// Distance between the first members of consecutive elements.
    pub stride: usize,
    /// Bytes from the first member to the end of the last one.
    pub size: usize,
    /// Number of members.
    pub len: usize,
    /// Member kinds in declaration order (`len` of them).
    pub kinds: [TCKind; MAX_MEMBERS],
    /// Member offsets from the first member's start (`len` of them).
    pub offsets: [usize; MAX_MEMBERS],
}

/// Size (= alignment) of the primitives a [`StructLayout`] can hold.
const fn prim_size(kind: TCKind) -> Option<usize> {
    use TCKind::*;
    Some(match kind {
        tk_boolean | tk_char | tk_octet => 1,
        tk_short | tk_ushort => 2,
        tk_long | tk_ulong | tk_float => 4,
        tk_longlong | tk_ulonglong | tk_double => 8,
        _ => return None,
    })
}

/// `pos` rounded up to a multiple of `a` (a power of two).
const fn up(pos: usize, a: usize) -> usize {
    (pos + a - 1) & !(a - 1)
}

impl StructLayout {
    /// The layout of a struct with members of `kinds` (1 to
    /// [`MAX_MEMBERS`] of `boolean char octet short … double`), laid out
    /// as serde lays structs out: each member aligned naturally.
    pub const fn from_kinds(kinds: &[TCKind]) -> Option<StructLayout> {
        let n = kinds.len();
        if n == 0 || n > MAX_MEMBERS {
            return None;
        }
        let mut l = StructLayout {
            align: 1,
            first_align: 0,
            phase: 0,
            stride: 0,
            size: 0,
            len: n,
            kinds: [TCKind::tk_null; MAX_MEMBERS],
            offsets: [0; MAX_MEMBERS],
        };
        let mut sizes = [0usize; MAX_MEMBERS];
        let mut i = 0;
        while i < n {
            let Some(s) = prim_size(kinds[i]) else {
                return None;
            };
            sizes[i] = s;
            l.kinds[i] = kinds[i];
            if s > l.align {
                l.align = s;
            }
            i += 1;
        }
        l.first_align = sizes[0];
        // One element laid out from position 0: past its most-aligned
        // member every position modulo `align` is fixed, so the next
        // element's phase does not depend on where this one started.
        let mut pos = 0;
        i = 0;
        while i < n {
            pos = up(pos, sizes[i]) + sizes[i];
            i += 1;
        }
        l.phase = up(pos, l.first_align) % l.align;
        // The steady element, from that phase.
        pos = l.phase;
        i = 0;
        while i < n {
            pos = up(pos, sizes[i]);
            l.offsets[i] = pos - l.phase;
            pos += sizes[i];
            i += 1;
        }
        let next = up(pos, l.first_align);
        if next % l.align != l.phase {
            return None;
        }
        l.size = pos - l.phase;
        l.stride = next - l.phase;
        Some(l)
    }

    /// The layout of `tc` (through aliases) if it is a struct of 1 to
    /// [`MAX_MEMBERS`] primitive members (`boolean char octet short …
    /// double`, each possibly aliased); `None` for anything else (wide or
    /// variable-size members, enums, nested structs, arrays). The stride
    /// agrees with [`TypeCode::wire_stride`] or there is no layout.
    pub fn of(tc: &TypeCode) -> Option<StructLayout> {
        let tc = tc.unalias();
        if tc.kind() != TCKind::tk_struct || tc.is_recursive_ref() {
            return None;
        }
        let kinds = (0..tc.member_count()?)
            .map(|i| tc.member_type(i).map(|m| m.unalias().kind()))
            .collect::<Option<Vec<_>>>()?;
        let l = StructLayout::from_kinds(&kinds)?;
        (tc.wire_stride() == Some(l.stride as u64)).then_some(l)
    }

    /// Where the first member of an element starting at `pos` begins.
    #[inline]
    fn first_member_start(&self, pos: usize) -> usize {
        pos.next_multiple_of(self.first_align)
    }

    /// Whether an element starting at `pos` has the steady layout.
    #[inline]
    fn steady(&self, pos: usize) -> bool {
        self.first_member_start(pos) % self.align == self.phase
    }

    /// Leading padding and bytes taken by `n` (> 0) steady elements
    /// starting at `pos`; `None` on overflow.
    #[inline]
    fn run_bytes(&self, pos: usize, n: usize) -> Option<(usize, usize)> {
        let pad = self.first_member_start(pos) - pos;
        let bytes = (n - 1)
            .checked_mul(self.stride)?
            .checked_add(pad + self.size)?;
        Some((pad, bytes))
    }

    /// Whether the `n` elements in `data` (first member at 0, then every
    /// `stride`) pass serde's member checks under code set `cs`: booleans
    /// 0 or 1, chars below 0x80 in UTF-8.
    #[inline]
    fn valid(&self, data: &[u8], n: usize, cs: CharCodeSet) -> bool {
        // OR of a column: below 0x80 iff every octet is, at most 1 iff
        // every octet is 0 or 1. Branch-free over the elements.
        let column = |off: usize| {
            data.chunks(self.stride)
                .take(n)
                .fold(0u8, |a, e| a | e[off])
        };
        (0..self.len).all(|i| match self.kinds[i] {
            TCKind::tk_boolean => column(self.offsets[i]) <= 1,
            TCKind::tk_char if cs == CharCodeSet::Utf8 => column(self.offsets[i]) < 0x80,
            _ => true,
        })
    }
}

/// A primitive Rust field of a [`TcStruct`], read and written at its
/// member's offset.
pub trait Field: Sized + Copy {
    /// The member kind this Rust type maps to (serde's mapping).
    const KIND: TCKind;
    /// Decode from `b` at `at`. The value was already checked (see
    /// [`StructLayout`]), so this cannot fail.
    fn get(b: &[u8], at: usize, order: ByteOrder) -> Self;
    /// Encode into `b` at `at`, refusing values the code set cannot carry.
    fn put(self, b: &mut [u8], at: usize, order: ByteOrder, cs: CharCodeSet) -> Result<()>;
}

macro_rules! numeric_field {
    ($($t:ty => $k:ident;)*) => {$(
        impl Field for $t {
            const KIND: TCKind = TCKind::$k;
            #[inline(always)]
            fn get(b: &[u8], at: usize, order: ByteOrder) -> Self {
                <$t as Primitive>::from_wire(&b[at..at + <$t as Primitive>::SIZE], order)
            }
            #[inline(always)]
            fn put(self, b: &mut [u8], at: usize, order: ByteOrder, _: CharCodeSet) -> Result<()> {
                self.to_wire(&mut b[at..at + <$t as Primitive>::SIZE], order);
                Ok(())
            }
        }
    )*};
}
numeric_field! {
    i16 => tk_short;
    u16 => tk_ushort;
    i32 => tk_long;
    u32 => tk_ulong;
    i64 => tk_longlong;
    u64 => tk_ulonglong;
    f32 => tk_float;
    f64 => tk_double;
}

impl Field for u8 {
    const KIND: TCKind = TCKind::tk_octet;
    #[inline(always)]
    fn get(b: &[u8], at: usize, _: ByteOrder) -> Self {
        b[at]
    }
    #[inline(always)]
    fn put(self, b: &mut [u8], at: usize, _: ByteOrder, _: CharCodeSet) -> Result<()> {
        b[at] = self;
        Ok(())
    }
}

impl Field for bool {
    const KIND: TCKind = TCKind::tk_boolean;
    #[inline(always)]
    fn get(b: &[u8], at: usize, _: ByteOrder) -> Self {
        b[at] == 1
    }
    #[inline(always)]
    fn put(self, b: &mut [u8], at: usize, _: ByteOrder, _: CharCodeSet) -> Result<()> {
        b[at] = self as u8;
        Ok(())
    }
}

impl Field for char {
    const KIND: TCKind = TCKind::tk_char;
    #[inline(always)]
    fn get(b: &[u8], at: usize, _: ByteOrder) -> Self {
        b[at] as char
    }
    /// `Writer::write_char`'s rule and error: one octet in the char code
    /// set (ISO-8859-1: up to U+00FF; UTF-8: ASCII only).
    #[inline(always)]
    fn put(self, b: &mut [u8], at: usize, _: ByteOrder, cs: CharCodeSet) -> Result<()> {
        let limit = match cs {
            CharCodeSet::Latin1 => 0xFF,
            CharCodeSet::Utf8 => 0x7F,
        };
        if self as u32 <= limit {
            b[at] = self as u32 as u8;
            Ok(())
        } else {
            Err(unrepresentable(self, cs))
        }
    }
}

#[cold]
#[inline(never)]
fn unrepresentable(c: char, cs: CharCodeSet) -> CdrError {
    CdrError::Unrepresentable {
        what: format!("char {c:?}"),
        codeset: cs.name(),
    }
}

/// A Rust struct mapped member for member onto a struct TypeCode of
/// primitives, so that its sequences can take the fast path. Implemented
/// by a macro: `LAYOUT` from the fields' [`Field::KIND`]s through
/// [`StructLayout::from_kinds`], `get` / `put` one field after the other at
/// `LAYOUT.offsets`, and `layout` through [`layout_for`].
pub trait TcStruct: Serialize + DeserializeOwned {
    /// The layout of the Rust fields, as constants for `get` and `put`.
    const LAYOUT: StructLayout;
    /// The layout derived from the type's TypeCode, computed once; equal
    /// to [`LAYOUT`](Self::LAYOUT) or the program is wrong.
    fn layout() -> &'static StructLayout;
    /// Decode one element from exactly `LAYOUT.size` bytes, already
    /// checked (booleans, chars): cannot fail.
    fn get(b: &[u8], order: ByteOrder) -> Self;
    /// Encode one element into exactly `LAYOUT.size` zeroed bytes,
    /// refusing a char the code set cannot carry.
    fn put(&self, b: &mut [u8], order: ByteOrder, cs: CharCodeSet) -> Result<()>;
}

/// The layout of `tc` for the Rust type `T`, for a [`TcStruct::layout`]
/// implementation. Panics (a programming error, not input) unless `tc` is
/// a struct of primitives whose members `T`'s fields map to one by one.
pub fn layout_for<T: TcStruct>(tc: &TypeCode) -> StructLayout {
    let l = StructLayout::of(tc).unwrap_or_else(|| panic!("{tc:?} is not a struct of primitives"));
    assert_eq!(
        l,
        T::LAYOUT,
        "{} does not match the members of {tc:?}",
        std::any::type_name::<T>()
    );
    l
}

/// Read `sequence<T>` as serde would (same values, same errors, same
/// position afterwards), at the offsets of `T`'s layout.
pub fn read_struct_seq<T: TcStruct>(r: &mut Reader<'_>) -> Result<Vec<T>> {
    let start = r.clone();
    if !r.is_segmented() {
        if let Some(v) = fast_read(r) {
            return Ok(v);
        }
        *r = start;
    }
    slow_read(r)
}

/// The serde path, for segmented readers and for the exact error on input
/// the fast path refused.
#[cold]
#[inline(never)]
fn slow_read<T: TcStruct>(r: &mut Reader<'_>) -> Result<Vec<T>> {
    let segmented = r.is_segmented();
    let v = crate::from_reader::<Vec<T>>(r);
    debug_assert!(
        segmented || v.is_err(),
        "the fast path refused a sequence<{}> serde accepts",
        std::any::type_name::<T>()
    );
    v
}

/// `None` where serde would fail (and maybe where it would not: then
/// [`slow_read`] decides).
#[inline]
fn fast_read<T: TcStruct>(r: &mut Reader<'_>) -> Option<Vec<T>> {
    // serde's `deserialize_seq`: one nesting level, then a length each of
    // whose elements takes at least one byte.
    r.enter().ok()?;
    let v = fast_read_body(r);
    r.leave();
    v
}

#[inline]
fn fast_read_body<T: TcStruct>(r: &mut Reader<'_>) -> Option<Vec<T>> {
    let layout = T::layout();
    let n = r.read_len(1).ok()?;
    let mut v = Vec::new();
    while v.len() < n && !layout.steady(r.position()) {
        v.push(crate::from_reader::<T>(r).ok()?);
    }
    let rest = n - v.len();
    if rest == 0 {
        return Some(v);
    }
    let (pad, bytes) = layout.run_bytes(r.position(), rest)?;
    let data = &r.take(bytes).ok()?[pad..];
    if !layout.valid(data, rest, r.opts().char_set) {
        return None;
    }
    let (stride, size, order) = (T::LAYOUT.stride, T::LAYOUT.size, r.order());
    v.reserve_exact(rest);
    // As in `write_struct_seq`: the byte order a constant in each loop.
    if order.is_native() {
        get_run(&mut v, data, rest, stride, size, ByteOrder::NATIVE);
    } else {
        get_run(&mut v, data, rest, stride, size, order);
    }
    Some(v)
}

/// Append the `n` elements of `data`, element `k` at `k * stride`.
#[inline(always)]
fn get_run<T: TcStruct>(
    v: &mut Vec<T>,
    data: &[u8],
    n: usize,
    stride: usize,
    size: usize,
    order: ByteOrder,
) {
    if stride == size {
        v.extend(data.chunks_exact(size).take(n).map(|e| T::get(e, order)));
    } else {
        v.extend((0..n).map(|k| T::get(&data[k * stride..k * stride + size], order)));
    }
}

/// Write `sequence<T>` exactly as serde would (same bytes, same errors),
/// at the offsets of `T`'s layout. On error the buffer holds a partial
/// encoding, as after serde.
pub fn write_struct_seq<T: TcStruct>(w: &mut Writer<'_>, v: &[T]) -> Result<()> {
    let layout = T::layout();
    w.write_len(v.len())?;
    let mut i = 0;
    while i < v.len() && !layout.steady(w.position()) {
        crate::to_writer(w, &v[i])?;
        i += 1;
    }
    let rest = &v[i..];
    if rest.is_empty() {
        return Ok(());
    }
    let (pad, bytes) =
        layout
            .run_bytes(w.position(), rest.len())
            .ok_or_else(|| CdrError::LimitExceeded {
                offset: w.position(),
                len: rest.len() as u64,
                limit: usize::MAX as u64,
            })?;
    let (stride, size, order, char_set) = (
        T::LAYOUT.stride,
        T::LAYOUT.size,
        w.order(),
        w.opts().char_set,
    );
    let buf = w.buffer();
    let start = buf.len();
    buf.resize(start + bytes, 0);
    let out = &mut buf[start + pad..];
    // The byte order as a constant in each loop, so that no field decides
    // it again per element.
    if order.is_native() {
        put_run(out, rest, stride, size, ByteOrder::NATIVE, char_set)
    } else {
        put_run(out, rest, stride, size, order, char_set)
    }
}

/// `rest` into `out`, element `k` at `k * stride`.
#[inline(always)]
fn put_run<T: TcStruct>(
    out: &mut [u8],
    rest: &[T],
    stride: usize,
    size: usize,
    order: ByteOrder,
    cs: CharCodeSet,
) -> Result<()> {
    if stride == size {
        for (o, e) in out.chunks_exact_mut(size).zip(rest) {
            e.put(o, order, cs)?;
        }
    } else {
        for (k, e) in rest.iter().enumerate() {
            e.put(&mut out[k * stride..k * stride + size], order, cs)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(members: Vec<(&str, TypeCode)>) -> TypeCode {
        TypeCode::struct_tc("IDL:T:1.0", "T", members)
    }

    /// `struct { double d; octet o; }`: 9 bytes, then 7 of padding before
    /// the next element (stride 16), unlike bench.idl's structs, whose
    /// stride is their size.
    #[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
    struct DoubleOctet {
        d: f64,
        o: u8,
    }

    impl TcStruct for DoubleOctet {
        const LAYOUT: StructLayout =
            match StructLayout::from_kinds(&[TCKind::tk_double, TCKind::tk_octet]) {
                Some(l) => l,
                None => panic!("a struct of primitives"),
            };
        fn layout() -> &'static StructLayout {
            static L: std::sync::OnceLock<StructLayout> = std::sync::OnceLock::new();
            L.get_or_init(|| {
                layout_for::<DoubleOctet>(&st(vec![
                    ("d", TypeCode::double()),
                    ("o", TypeCode::octet()),
                ]))
            })
        }
        fn get(b: &[u8], order: ByteOrder) -> Self {
            DoubleOctet {
                d: f64::get(b, 0, order),
                o: u8::get(b, 8, order),
            }
        }
        fn put(&self, b: &mut [u8], order: ByteOrder, cs: CharCodeSet) -> Result<()> {
            self.d.put(b, 0, order, cs)?;
            self.o.put(b, 8, order, cs)
        }
    }

    #[test]
    fn struct_sequences_with_and_without_gaps_match_serde() {
        assert_eq!(
            (DoubleOctet::LAYOUT.size, DoubleOctet::LAYOUT.stride),
            (9, 16)
        );
        let v: Vec<DoubleOctet> = (0..7)
            .map(|i| DoubleOctet {
                d: f64::from(i) * 1.5 - 2.0,
                o: 0xF0 | i as u8,
            })
            .collect();
        for n in [0, 1, 2, 3, 7] {
            for lead in 0..8 {
                for order in [ByteOrder::Big, ByteOrder::Little] {
                    let enc = |fast: bool| {
                        let mut buf = bytes::BytesMut::from(&vec![0xAAu8; lead][..]);
                        let mut w = Writer::with_origin(&mut buf, order, 0);
                        if fast {
                            write_struct_seq(&mut w, &v[..n]).unwrap();
                        } else {
                            crate::to_writer(&mut w, &v[..n]).unwrap();
                        }
                        buf
                    };
                    let fast = enc(true);
                    assert_eq!(fast, enc(false), "x{n} after {lead} {order:?}");
                    let mut r = Reader::new(&fast, order);
                    r.take(lead).unwrap();
                    assert_eq!(read_struct_seq::<DoubleOctet>(&mut r).unwrap(), &v[..n]);
                    r.expect_end().unwrap();
                }
            }
        }
    }

    #[test]
    fn layouts_follow_serde_alignment() {
        let perf = st(vec![
            ("s", TypeCode::short()),
            ("c", TypeCode::char()),
            ("l", TypeCode::long()),
            ("o", TypeCode::octet()),
            ("d", TypeCode::double()),
        ]);
        let l = StructLayout::of(&perf).unwrap();
        assert_eq!(
            (l.align, l.first_align, l.phase, l.stride, l.size, l.len),
            (8, 2, 0, 24, 24, 5)
        );
        assert_eq!(l.offsets[..5], [0, 2, 4, 8, 16]);
        // {char c; double d}: 16; {long; short}: phase 2 after the first.
        let cd = StructLayout::of(&st(vec![
            ("c", TypeCode::char()),
            ("d", TypeCode::double()),
        ]))
        .unwrap();
        assert_eq!((cd.stride, cd.size, cd.phase), (16, 16, 0));
        let ls =
            StructLayout::of(&st(vec![("l", TypeCode::long()), ("s", TypeCode::short())])).unwrap();
        assert_eq!((ls.stride, ls.size, ls.phase), (8, 6, 0));
        let sl = StructLayout::of(&st(vec![
            ("o", TypeCode::octet()),
            ("s", TypeCode::short()),
            ("b", TypeCode::boolean()),
        ]))
        .unwrap();
        // o at 0, s at 2..4, b at 4: ends at 5, where the next begins (1
        // mod 2); from then on o at 1, s at 2, b at 4, next at 5 again.
        assert_eq!((sl.stride, sl.size, sl.phase), (4, 4, 1));
        assert_eq!(sl.offsets[..3], [0, 1, 3]);
        // {octet; double}: the octet of every element after the first sits
        // right after the previous double, at phase 0 of 8.
        let od = StructLayout::of(&st(vec![
            ("o", TypeCode::octet()),
            ("d", TypeCode::double()),
        ]))
        .unwrap();
        assert_eq!(
            (od.stride, od.size, od.phase, od.offsets[1]),
            (16, 16, 0, 8)
        );
        // {short; octet}: ends at 3, next starts at 4: stride 4, size 3.
        let so = StructLayout::of(&st(vec![
            ("s", TypeCode::short()),
            ("o", TypeCode::octet()),
        ]))
        .unwrap();
        assert_eq!((so.stride, so.size, so.phase), (4, 3, 0));
        let aliased = TypeCode::alias("IDL:A:1.0", "A", perf.clone());
        assert_eq!(StructLayout::of(&aliased), Some(l));
    }

    #[test]
    fn only_structs_of_primitives_have_one() {
        assert_eq!(StructLayout::of(&TypeCode::long()), None);
        assert_eq!(StructLayout::of(&st(vec![])), None);
        assert_eq!(
            StructLayout::of(&st(vec![("s", TypeCode::string(0))])),
            None
        );
        assert_eq!(StructLayout::of(&st(vec![("w", TypeCode::wchar())])), None);
        let inner = st(vec![("l", TypeCode::long())]);
        assert_eq!(StructLayout::of(&st(vec![("i", inner)])), None);
        let many = (0..=MAX_MEMBERS)
            .map(|_| ("o", TypeCode::octet()))
            .collect();
        assert_eq!(StructLayout::of(&st(many)), None);
    }
}
