//! f16 numbers (IEEE halves, as their bits) read as f32, exactly, inside the bodies that
//! `vecmath::multiversion` compiles: with F16C's conversion instruction on the levels
//! that guarantee it, the portable conversion on the baseline. Both give the same bits, so a
//! loop that reads the KV cache's f16 numbers in place computes what it would from an f32 copy.

/// The f32 value of an IEEE half given by its bits, without branches, so that a loop of
/// them vectorises (half's own conversion is a call per value without F16C at compile time).
#[inline(always)]
pub fn f16_bits_to_f32(h: u16) -> f32 {
    let h = u32::from(h);
    let sign = (h & 0x8000) << 16;
    let magnitude = h & 0x7fff;
    // Normal numbers: re-bias the exponent (15 -> 127) and widen the mantissa.
    let normal = (magnitude << 13) + ((127 - 15) << 23);
    // Zero and subnormals: the mantissa times 2^-24, exact in f32.
    let subnormal = (magnitude as f32 * (1.0 / 16_777_216.0)).to_bits();
    // Infinities and NaNs keep their payload under an all-ones exponent.
    let special = (magnitude << 13) | 0x7f80_0000;
    let bits = if magnitude < 0x0400 {
        subnormal
    } else if magnitude >= 0x7c00 {
        special
    } else {
        normal
    };
    f32::from_bits(bits | sign)
}

/// The first `N` halves of `bits` as f32. `ISA` is the calling body's instruction set (a
/// `vecmath::isa` value): on AVX2 and AVX-512, whose levels require F16C, eight or
/// sixteen at a time with `vcvtph2ps`.
#[inline(always)]
pub fn f16_lanes<const N: usize, const ISA: u8>(bits: &[u16]) -> [f32; N] {
    let bits: &[u16; N] = bits[..N].try_into().expect("N halves");
    let mut out = [0f32; N];
    #[cfg(target_arch = "x86_64")]
    {
        use crate::engine::model::vecmath::isa;
        use std::arch::x86_64::*;
        if ISA == isa::AVX512 && N.is_multiple_of(16) {
            for (o, b) in out.chunks_exact_mut(16).zip(bits.chunks_exact(16)) {
                // SAFETY: the AVX-512 level exists only where AVX-512F was detected (and the
                // body runs compiled for it); the loads and stores are of exactly 16 values
                // inside the two arrays, unaligned.
                unsafe {
                    let h = _mm256_loadu_si256(b.as_ptr().cast::<__m256i>());
                    _mm512_storeu_ps(o.as_mut_ptr(), _mm512_cvtph_ps(h));
                }
            }
            return out;
        }
        if ISA != isa::BASELINE && N.is_multiple_of(8) {
            for (o, b) in out.chunks_exact_mut(8).zip(bits.chunks_exact(8)) {
                // SAFETY: both vector levels require F16C and AVX (`vecmath::level`); exactly
                // 8 values inside the two arrays, unaligned.
                unsafe {
                    let h = _mm_loadu_si128(b.as_ptr().cast::<__m128i>());
                    _mm256_storeu_ps(o.as_mut_ptr(), _mm256_cvtph_ps(h));
                }
            }
            return out;
        }
    }
    for (o, &b) in out.iter_mut().zip(bits) {
        *o = f16_bits_to_f32(b);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::vecmath::{isa, multiversion};

    multiversion! {
        /// Every group of sixteen halves of `bits` through `f16_lanes` on this CPU's level.
        pub fn convert_all(bits: &[u16], out: &mut [f32]) {
            for (o, b) in out.chunks_exact_mut(16).zip(bits.chunks_exact(16)) {
                o.copy_from_slice(&f16_lanes::<16, ISA>(b));
            }
        }
    }

    #[test]
    fn every_half_converts_exactly() {
        let bits: Vec<u16> = (0..=u16::MAX).collect();
        let mut vector = vec![0f32; bits.len()];
        convert_all(&bits, &mut vector);
        for (&b, &got) in bits.iter().zip(&vector) {
            let want = half::f16::from_bits(b).to_f32();
            let portable = f16_bits_to_f32(b);
            let one = f16_lanes::<1, { isa::BASELINE }>(&[b])[0];
            if want.is_nan() {
                assert!(
                    got.is_nan() && portable.is_nan() && one.is_nan(),
                    "{b:#06x}"
                );
            } else {
                assert_eq!(got.to_bits(), want.to_bits(), "{b:#06x}");
                assert_eq!(portable.to_bits(), want.to_bits(), "{b:#06x}");
                assert_eq!(one.to_bits(), want.to_bits(), "{b:#06x}");
            }
        }
    }
}
