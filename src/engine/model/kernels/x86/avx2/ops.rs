//! The AVX2 helpers every x86 kernel shares (AVX-512 VNNI's included): fixed-size loads, the
//! horizontal sums, nibble and scale unpacking. Each takes a fixed-size array, so a load reads
//! only memory its borrow covers, and none needs alignment.

use crate::engine::model::kernels::QK_K;
use core::arch::x86_64::*;

#[inline(always)]
pub(in crate::engine::model::kernels) fn arr<T, const N: usize>(s: &[T], at: usize) -> &[T; N] {
    s[at..at + N]
        .try_into()
        .expect("length checked by the slice")
}

#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(in crate::engine::model::kernels) fn load16(b: &[u8; 16]) -> __m128i {
    // SAFETY: `b` is 16 readable bytes; loadu has no alignment requirement.
    unsafe { _mm_loadu_si128(b.as_ptr().cast()) }
}

/// The eight step multipliers of an activation super-block ([`crate::engine::model::kernels::Q8KBlock::mult`]) as words.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(in crate::engine::model::kernels) fn load_mult(mult: &[i16; QK_K / 32]) -> __m128i {
    // SAFETY: `mult` is 16 readable bytes; loadu has no alignment requirement.
    unsafe { _mm_loadu_si128(mult.as_ptr().cast()) }
}

#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(in crate::engine::model::kernels) fn load32<T>(b: &[T; 32]) -> __m256i
where
    T: Copy + Into<i32>,
{
    const { assert!(std::mem::size_of::<T>() == 1) };
    // SAFETY: `b` is 32 one-byte elements (asserted above); loadu has no alignment requirement.
    unsafe { _mm256_loadu_si256(b.as_ptr().cast()) }
}

#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(in crate::engine::model::kernels) fn f16_at(b: &[u8], at: usize) -> f32 {
    let h = u16::from_le_bytes([b[at], b[at + 1]]);
    _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h as i32)))
}

#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(in crate::engine::model::kernels) fn hsum(x: __m256) -> f32 {
    let r = _mm_add_ps(_mm256_extractf128_ps(x, 1), _mm256_castps256_ps128(x));
    let r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    let r = _mm_add_ss(r, _mm_movehdup_ps(r));
    _mm_cvtss_f32(r)
}

/// 32 nibbles: low nibbles to bytes 0..16, high nibbles to bytes 16..32.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(in crate::engine::model::kernels) fn nibbles(q: &[u8; 16]) -> __m256i {
    let t = load16(q);
    let b = _mm256_insertf128_si256::<1>(_mm256_castsi128_si256(t), _mm_srli_epi16(t, 4));
    _mm256_and_si256(_mm256_set1_epi8(0xF), b)
}

#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(in crate::engine::model::kernels) fn load_i16x16(b: &[i16; 16]) -> __m256i {
    // SAFETY: `b` is 32 readable bytes; loadu has no alignment requirement.
    unsafe { _mm256_loadu_si256(b.as_ptr().cast()) }
}

#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(in crate::engine::model::kernels) fn hsum128(x: __m128) -> f32 {
    let r = _mm_add_ps(x, _mm_movehl_ps(x, x));
    _mm_cvtss_f32(_mm_add_ss(r, _mm_movehdup_ps(r)))
}

/// Q4_K's 12 bytes of packed 6-bit values to 8 scales then 8 mins (ggml's `utmp` trick; the
/// same values as [`crate::engine::model::kernels::scale_min_k4`]).
#[inline(always)]
pub(in crate::engine::model::kernels) fn unpack_scales_k4(b: &[u8; 12]) -> [u8; 16] {
    const KMASK1: u32 = 0x3f3f3f3f;
    const KMASK2: u32 = 0x0f0f0f0f;
    const KMASK3: u32 = 0x03030303;
    let w = |i: usize| u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]);
    let (u0, u1, u2) = (w(0), w(1), w(2));
    let t = [
        u0 & KMASK1,
        (u2 & KMASK2) | (((u0 >> 6) & KMASK3) << 4),
        u1 & KMASK1,
        ((u2 >> 4) & KMASK2) | (((u1 >> 6) & KMASK3) << 4),
    ];
    let mut out = [0u8; 16];
    for (o, v) in out.chunks_exact_mut(4).zip(t) {
        o.copy_from_slice(&v.to_le_bytes());
    }
    out
}

/// For i < 8: bytes `2i` ×8 then `2i+1` ×8 (selects the two 16-element scales of 32 quants).
pub(in crate::engine::model::kernels) const SCALE_SHUFFLE: [[u8; 16]; 8] = {
    let mut t = [[0u8; 16]; 8];
    let mut i = 0;
    while i < 8 {
        let mut k = 0;
        while k < 16 {
            t[i][k] = (2 * i + k / 8) as u8;
            k += 1;
        }
        i += 1;
    }
    t
};
