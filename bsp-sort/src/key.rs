//! Order-preserving maps from key types to unsigned integers, so that a
//! radix sort on the integer sorts the keys.

/// A key the radix sort can order: a map to `u64` that preserves order.
///
/// `a < b` implies `a.radix() < b.radix()`, and equal keys map to equal
/// integers. Only the low [`BITS`](RadixKey::BITS) bits of the image may be
/// set. Implemented for the unsigned and signed integers (the sign bit is
/// flipped) and for `f32`/`f64`, where the order is that of
/// [`f32::total_cmp`] (so `-0.0 < +0.0`) except that every NaN, whatever its
/// sign or payload, is mapped to the largest value: NaNs come after `+inf`
/// and keep their input order among themselves.
///
/// # Examples
///
/// ```
/// use bsp_sort::RadixKey;
///
/// assert!((-3i32).radix() < 2i32.radix());
/// assert!((-0.5f64).radix() < 0.25f64.radix());
/// assert!(f32::INFINITY.radix() < f32::NAN.radix());
/// assert_eq!(u16::BITS, 16);
/// ```
pub trait RadixKey: Copy {
    /// Width of the image in bits (at most 64).
    const BITS: u32;
    /// The order-preserving image of the key.
    fn radix(self) -> u64;
}

macro_rules! unsigned_key {
    ($($t:ty),*) => {$(
        impl RadixKey for $t {
            const BITS: u32 = <$t>::BITS;
            #[inline(always)]
            fn radix(self) -> u64 {
                self as u64
            }
        }
    )*};
}

macro_rules! signed_key {
    ($($t:ty => $u:ty),*) => {$(
        impl RadixKey for $t {
            const BITS: u32 = <$t>::BITS;
            #[inline(always)]
            fn radix(self) -> u64 {
                // Flipping the sign bit turns two's complement order into
                // unsigned order.
                ((self as $u) ^ (1 << (<$u>::BITS - 1))) as u64
            }
        }
    )*};
}

macro_rules! float_key {
    ($($t:ty => $u:ty),*) => {$(
        impl RadixKey for $t {
            const BITS: u32 = <$u>::BITS;
            #[inline(always)]
            fn radix(self) -> u64 {
                if self.is_nan() {
                    return <$u>::MAX as u64;
                }
                let bits = self.to_bits();
                let sign = 1 << (<$u>::BITS - 1);
                // Negative numbers: reverse their order by inverting all bits;
                // non-negative numbers: lift them above the negatives.
                let image = if bits & sign != 0 { !bits } else { bits | sign };
                image as u64
            }
        }
    )*};
}

unsigned_key!(u8, u16, u32, u64, usize);
signed_key!(i8 => u8, i16 => u16, i32 => u32, i64 => u64, isize => usize);
float_key!(f32 => u32, f64 => u64);

#[cfg(test)]
mod tests {
    use super::RadixKey;

    #[test]
    fn images_follow_the_key_order() {
        let ints = [i64::MIN, -5, -1, 0, 1, 7, i64::MAX];
        assert!(ints.windows(2).all(|w| w[0].radix() < w[1].radix()));
        let floats = [
            f32::NEG_INFINITY,
            -1.5,
            -f32::MIN_POSITIVE,
            -0.0,
            0.0,
            f32::MIN_POSITIVE,
            2.0,
            f32::INFINITY,
            f32::NAN,
        ];
        assert!(floats.windows(2).all(|w| w[0].radix() < w[1].radix()));
        assert_eq!((-f32::NAN).radix(), f32::NAN.radix());
        assert!(u8::MAX.radix() < 256 && i8::MIN.radix() == 0);
    }
}
