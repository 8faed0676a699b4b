//! The digits of a radix sort: each pass's shift and width, planned over
//! the key bits that vary. Both the LSD sort and the top-digit-first sort
//! plan with it.

/// One counting-sort pass of a radix sort: the digit is
/// `(key >> shift) & (2^bits − 1)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DigitPass {
    /// Position of the digit's lowest bit.
    pub shift: u32,
    /// Width of the digit.
    pub bits: u32,
}

/// The digits to sort on: the span of varying bits cut into passes of at
/// most `max_bits`, widths balanced, digits without varying bits dropped.
pub(crate) fn plan(varying: u64, max_bits: u32) -> Vec<DigitPass> {
    if varying == 0 {
        return Vec::new();
    }
    let lo = varying.trailing_zeros();
    let span = 64 - varying.leading_zeros() - lo;
    let count = span.div_ceil(max_bits);
    let mut shift = lo;
    let mut passes = Vec::new();
    for i in 0..count {
        let bits = span / count + u32::from(i < span % count);
        let digit_mask = ((1u64 << bits) - 1) << shift;
        if varying & digit_mask != 0 {
            passes.push(DigitPass { shift, bits });
        }
        shift += bits;
    }
    passes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_cover_the_varying_bits() {
        assert!(plan(0, 8).is_empty());
        let p = plan(0x7fff_ffff, 11);
        let widths: Vec<u32> = p.iter().map(|d| d.bits).collect();
        assert_eq!(widths, [11, 10, 10]);
        // Bits 0 and 40 vary: the digits in between are skipped.
        let p = plan(1 | 1 << 40, 8);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].shift, 0);
        assert!(p[1].shift <= 40 && 40 < p[1].shift + p[1].bits);
    }
}
