//! Number conversions of the KV cache, vectorised like `vecmath` (one body compiled for
//! AVX-512, AVX2 and the baseline): f16 and q8_0 rows read back as f32, and a q8_0 block
//! quantized. Every conversion is exact or rounds the same way on every path.

use super::f16_lanes::f16_bits_to_f32;
use super::layout::Q8_BLOCK;
use crate::engine::model::vecmath::{multiversion, round_inline};

/// `dst[i] = src[i]` for f16 bits `src`: with F16C's conversion instruction where the CPU has
/// it (exact, as the portable conversion is).
pub fn f16_to_f32(src: &[u16], dst: &mut [f32]) {
    assert_eq!(src.len(), dst.len(), "f16_to_f32: lengths differ");
    #[cfg(target_arch = "x86_64")]
    if has_f16c() {
        // SAFETY: the CPU has AVX and F16C (checked at run time).
        unsafe { f16_to_f32_f16c(src, dst) };
        return;
    }
    f16_to_f32_portable(src, dst);
}

#[cfg(target_arch = "x86_64")]
fn has_f16c() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| {
        let allowed =
            crate::engine::model::cpu::forced() != crate::engine::model::cpu::Forced::Scalar;
        let cpu = crate::engine::model::cpu::features();
        allowed && cpu.avx && cpu.f16c
    })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn f16_to_f32_f16c(src: &[u16], dst: &mut [f32]) {
    use std::arch::x86_64::{__m128i, _mm256_cvtph_ps, _mm256_storeu_ps, _mm_loadu_si128};
    let (src8, src_tail) = src.as_chunks::<8>();
    let (dst8, dst_tail) = dst.as_chunks_mut::<8>();
    for (s, d) in src8.iter().zip(dst8) {
        // SAFETY: unaligned loads and stores of exactly 8 values inside the two arrays.
        unsafe {
            let halves = _mm_loadu_si128(s.as_ptr().cast::<__m128i>());
            _mm256_storeu_ps(d.as_mut_ptr(), _mm256_cvtph_ps(halves));
        }
    }
    for (d, &s) in dst_tail.iter_mut().zip(src_tail) {
        *d = f16_bits_to_f32(s);
    }
}

multiversion! {
    /// The portable `f16_to_f32`.
    pub fn f16_to_f32_portable(src: &[u16], dst: &mut [f32]) {
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = f16_bits_to_f32(s);
        }
    }
}

/// `dst[i] = src[i]` rounded to f16 (to nearest, ties to even), as bits.
pub fn f32_to_f16(src: &[f32], dst: &mut [u16]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = half::f16::from_f32(s).to_bits();
    }
}

multiversion! {
    /// Transposed q8_0 keys as f32: `quants` is `(dimension, position)` with
    /// `TILE` positions a dimension, `scales` is `(block of 32 dimensions, position)`; `dst`
    /// has a run of `KEY_STRIDE` a dimension.
    pub fn q8_0_columns_to_f32(scales: &[u16], quants: &[i8], dst: &mut [f32]) {
        use crate::engine::model::kv_cache::{KEY_STRIDE, TILE};
        for (i, (q, d)) in quants.chunks_exact(TILE).zip(dst.chunks_exact_mut(KEY_STRIDE)).enumerate() {
            let s = &scales[(i / Q8_BLOCK) * TILE..][..TILE];
            for ((x, &v), &scale) in d.iter_mut().zip(q).zip(s) {
                *x = f32::from(v) * f16_bits_to_f32(scale);
            }
        }
    }
}

multiversion! {
    /// q8_0 blocks (one f16 scale per 32 bytes) as f32.
    pub fn q8_0_to_f32(scales: &[u16], quants: &[i8], dst: &mut [f32]) {
        assert_eq!(quants.len(), dst.len(), "q8_0_to_f32: lengths differ");
        assert_eq!(scales.len() * Q8_BLOCK, quants.len(), "q8_0_to_f32: blocks");
        for ((&scale, q), d) in scales.iter().zip(quants.chunks_exact(Q8_BLOCK)).zip(dst.chunks_exact_mut(Q8_BLOCK)) {
            let scale = f16_bits_to_f32(scale);
            for (x, &v) in d.iter_mut().zip(q) {
                *x = f32::from(v) * scale;
            }
        }
    }
}

/// Quantizes 32 values as ggml's q8_0 does: the scale is the largest magnitude over 127 (as
/// an f16), each value divided by it and rounded to the nearest, ties to even. Returns the
/// scale's f16 bits.
pub fn quantize_q8_0(x: &[f32], q: &mut [i8]) -> u16 {
    let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
    let scale = amax / 127.0;
    let inverse = if scale != 0.0 { 1.0 / scale } else { 0.0 };
    for (dst, &v) in q.iter_mut().zip(x) {
        *dst = round_inline(v * inverse).clamp(-127.0, 127.0) as i8;
    }
    half::f16::from_f32(scale).to_bits()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_half_converts_exactly_on_every_path() {
        let bits: Vec<u16> = (0..=u16::MAX).collect();
        let (mut fast, mut portable) = (vec![0f32; bits.len()], vec![0f32; bits.len()]);
        f16_to_f32(&bits, &mut fast);
        f16_to_f32_portable(&bits, &mut portable);
        for ((&b, &got), &other) in bits.iter().zip(&fast).zip(&portable) {
            let want = half::f16::from_bits(b).to_f32();
            if want.is_nan() {
                assert!(got.is_nan() && other.is_nan(), "{b:#06x}");
            } else {
                assert_eq!(got.to_bits(), want.to_bits(), "{b:#06x}");
                assert_eq!(other.to_bits(), want.to_bits(), "{b:#06x}");
            }
        }
    }

    #[test]
    fn q8_0_round_trips_within_half_a_step() {
        let x: Vec<f32> = (0..32).map(|i| (i as f32 - 15.5) * 0.37).collect();
        let mut q = [0i8; 32];
        let scale = quantize_q8_0(&x, &mut q);
        let mut back = [0f32; 32];
        q8_0_to_f32(&[scale], &q, &mut back);
        let step = half::f16::from_bits(scale).to_f32();
        for (a, b) in x.iter().zip(&back) {
            assert!((a - b).abs() <= step * 0.5 + 1e-6, "{a} vs {b}");
        }
        assert_eq!(q.iter().map(|v| v.unsigned_abs()).max(), Some(127));
    }

    #[test]
    fn a_block_of_zeros_has_a_zero_scale() {
        let mut q = [1i8; 32];
        assert_eq!(quantize_q8_0(&[0.0; 32], &mut q), 0);
        assert_eq!(q, [0; 32]);
    }
}
