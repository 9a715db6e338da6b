//! Fixed-size numeric primitives and their bulk (memcpy) paths.
//!
//! A sequence of a primitive type is a run of naturally aligned values with
//! no gaps, so once the first element is aligned the whole run is one copy
//! when the wire order is the host's, and one copy plus an in-place swap
//! loop otherwise.

use crate::ByteOrder;

mod sealed {
    pub trait Sealed {}
}

/// A CDR primitive of fixed size whose alignment equals its size.
///
/// Sealed: implemented for `i16 u16 i32 u32 i64 u64 f32 f64` only, types
/// with no padding and no invalid bit patterns, which is what makes the
/// bulk byte copies in this module sound.
pub trait Primitive:
    Copy + Default + PartialEq + std::fmt::Debug + sealed::Sealed + 'static
{
    /// Size (and alignment) on the wire.
    const SIZE: usize;
    /// Reverse the byte order of one value.
    fn swap(self) -> Self;
    /// Decode one value from exactly `SIZE` bytes.
    fn from_wire(bytes: &[u8], order: ByteOrder) -> Self;
    /// Encode one value into exactly `SIZE` bytes.
    fn to_wire(self, out: &mut [u8], order: ByteOrder);
}

macro_rules! int_primitive {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Primitive for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn swap(self) -> Self { self.swap_bytes() }
            #[inline(always)]
            fn from_wire(bytes: &[u8], order: ByteOrder) -> Self {
                let arr = bytes[..Self::SIZE].try_into().expect("exact size");
                match order {
                    ByteOrder::Big => <$t>::from_be_bytes(arr),
                    ByteOrder::Little => <$t>::from_le_bytes(arr),
                }
            }
            #[inline(always)]
            fn to_wire(self, out: &mut [u8], order: ByteOrder) {
                let b = match order {
                    ByteOrder::Big => self.to_be_bytes(),
                    ByteOrder::Little => self.to_le_bytes(),
                };
                out[..Self::SIZE].copy_from_slice(&b);
            }
        }
    )*};
}
int_primitive!(i16, u16, i32, u32, i64, u64);

macro_rules! float_primitive {
    ($($t:ty => $bits:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Primitive for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn swap(self) -> Self { <$t>::from_bits(self.to_bits().swap_bytes()) }
            #[inline(always)]
            fn from_wire(bytes: &[u8], order: ByteOrder) -> Self {
                <$t>::from_bits(<$bits as Primitive>::from_wire(bytes, order))
            }
            #[inline(always)]
            fn to_wire(self, out: &mut [u8], order: ByteOrder) {
                self.to_bits().to_wire(out, order)
            }
        }
    )*};
}
float_primitive!(f32 => u32, f64 => u64);

/// View a slice of primitives as its raw (host-order) bytes.
#[inline]
pub fn as_bytes<T: Primitive>(values: &[T]) -> &[u8] {
    // SAFETY: T is one of the sealed plain numeric types: no padding, every
    // byte initialised; u8 has alignment 1 and the length is exact.
    unsafe {
        std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
    }
}

/// Decode `bytes` (a whole number of `T`s in `order`) into a new vector,
/// one copy plus an optional swap pass.
pub fn decode_slice<T: Primitive>(bytes: &[u8], order: ByteOrder) -> Vec<T> {
    debug_assert_eq!(bytes.len() % T::SIZE, 0);
    let n = bytes.len() / T::SIZE;
    let mut out: Vec<T> = Vec::with_capacity(n);
    // SAFETY: capacity is n elements = bytes.len() bytes; every bit pattern
    // is a valid T (sealed numeric types), so the elements are initialised
    // by the copy before set_len.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.as_mut_ptr().cast::<u8>(), bytes.len());
        out.set_len(n);
    }
    if !order.is_native() {
        for v in out.iter_mut() {
            *v = v.swap();
        }
    }
    out
}

/// Append `values` to `out` in `order`: one copy in host order, a tight
/// swap loop otherwise.
pub fn encode_slice<T: Primitive>(values: &[T], order: ByteOrder, out: &mut bytes::BytesMut) {
    if order.is_native() {
        out.extend_from_slice(as_bytes(values));
    } else {
        let len = std::mem::size_of_val(values);
        out.reserve(len);
        let start = out.len();
        // SAFETY: reserved above; every byte in start..start+len is written
        // by the loop below before anyone can read it.
        unsafe { out.set_len(start + len) };
        for (chunk, v) in out[start..].chunks_exact_mut(T::SIZE).zip(values) {
            v.swap().to_wire(chunk, ByteOrder::NATIVE);
        }
    }
}

/// Reverse the byte order of every `size`-byte value in `bytes` (size 1,
/// 2, 4 or 8; a whole number of values).
pub fn swap_in_place(bytes: &mut [u8], size: usize) {
    match size {
        1 => {}
        2 => bytes.chunks_exact_mut(2).for_each(|c| c.swap(0, 1)),
        4 => bytes.chunks_exact_mut(4).for_each(|c| c.reverse()),
        _ => bytes.chunks_exact_mut(8).for_each(|c| c.reverse()),
    }
}

/// A sequence of one primitive type kept in shared, reference-counted
/// memory in host byte order, to be written many times without copying:
/// in host order [`Writer::write_shared_seq`](crate::Writer::write_shared_seq)
/// hands the memory itself to a splicing writer (as omniORB sends a
/// sequence's own buffer); in the other order it is copied and swapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedSeq {
    bytes: bytes::Bytes,
    size: usize,
}

impl SharedSeq {
    /// A copy of `values` in shared memory.
    pub fn new<T: Primitive>(values: &[T]) -> SharedSeq {
        SharedSeq {
            bytes: bytes::Bytes::copy_from_slice(as_bytes(values)),
            size: T::SIZE,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.size
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Size (and alignment) of one element.
    pub fn elem_size(&self) -> usize {
        self.size
    }

    /// The elements' bytes in host order.
    pub fn host_bytes(&self) -> &bytes::Bytes {
        &self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_swaps_foreign_order() {
        let be = [0x01, 0x02, 0x03, 0x04];
        assert_eq!(
            decode_slice::<u16>(&be, ByteOrder::Big),
            vec![0x0102, 0x0304]
        );
        assert_eq!(
            decode_slice::<u16>(&be, ByteOrder::Little),
            vec![0x0201, 0x0403]
        );
        assert_eq!(decode_slice::<u32>(&be, ByteOrder::Big), vec![0x0102_0304]);
    }

    #[test]
    fn encode_then_decode_both_orders() {
        let vals = [1.5f64, -2.25, f64::MAX, 0.0];
        for order in [ByteOrder::Big, ByteOrder::Little] {
            let mut buf = bytes::BytesMut::new();
            encode_slice(&vals, order, &mut buf);
            assert_eq!(buf.len(), 32);
            assert_eq!(decode_slice::<f64>(&buf, order), vals);
        }
        let mut buf = bytes::BytesMut::new();
        encode_slice(&[0x0102i16], ByteOrder::Big, &mut buf);
        assert_eq!(&buf[..], &[1, 2]);
    }
}
