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

/// A compact Q4_K×16 or Q5_K×16 group's 6-bit scales and mins
/// ([`crate::engine::model::kernels::packed::q4k_x16`]) into `out` as a byte each, `[scales,
/// mins]`, sub-block `s`'s sixteen rows at `16 s` (the byte-per-scale form's order): a row's low
/// four bits from the nibbles the sub-block shares with its pair, its top two moved to bits 4–5
/// from the pair's top-bit byte (the 16-bit shifts' bits that cross into the next byte are masked
/// off). Once per super-block on 256-bit vectors, two pairs of sub-blocks at a time: unpacked a
/// sub-block at a time where the kernels used them, they cost AVX-512's one-row kernel 6% of its
/// speed (L2-resident, 67.7 → 63.4 GMAC/s); this way it is faster than with a byte each (70.7 →
/// 73.9: fewer bytes even from cache).
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn unpack_k4_scales(packed: &[u8; 192], out: &mut [[u8; 128]; 2]) {
    let (low4, top2) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi8(0x30));
    for q in 0..2 {
        // Pairs 2q and 2q + 1 (sub-blocks 4q..4q + 4), one per 128-bit lane.
        let tops = load32(arr(packed, 128 + 32 * q));
        for (m, out) in out.iter_mut().enumerate() {
            let nibbles = load32(arr(packed, 64 * m + 32 * q));
            // Scale 2p's top bits are bits 0–1, scale 2p + 1's 2–3, the mins' 4–5 and 6–7.
            let (even_top, odd_top) = if m == 0 {
                (_mm256_slli_epi16::<4>(tops), _mm256_slli_epi16::<2>(tops))
            } else {
                (tops, _mm256_srli_epi16::<2>(tops))
            };
            let even = _mm256_or_si256(
                _mm256_and_si256(nibbles, low4),
                _mm256_and_si256(even_top, top2),
            );
            let odd = _mm256_or_si256(
                _mm256_and_si256(_mm256_srli_epi16::<4>(nibbles), low4),
                _mm256_and_si256(odd_top, top2),
            );
            // `even` holds sub-blocks 4q and 4q + 2, `odd` 4q + 1 and 4q + 3.
            for (k, v) in [even, odd].into_iter().enumerate() {
                store16(arr_mut(out, 64 * q + 16 * k), _mm256_castsi256_si128(v));
                store16(
                    arr_mut(out, 64 * q + 16 * k + 32),
                    _mm256_extracti128_si256::<1>(v),
                );
            }
        }
    }
}

/// A Q4_K×16 or Q5_K×16 group block's scales and mins a byte each, `(scales, mins)`,
/// sub-block `s`'s sixteen rows at `16 s`: read in place where the layout stores them so,
/// unpacked into `buf` where it keeps them `COMPACT` ([`unpack_k4_scales`]).
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(in crate::engine::model::kernels) fn k4_scales_and_mins<'a, const COMPACT: bool>(
    block: &'a [u8],
    buf: &'a mut [[u8; 128]; 2],
) -> (&'a [u8; 128], &'a [u8; 128]) {
    use crate::engine::model::kernels::packed::q4k_x16::{MINS, SCALES};
    if !COMPACT {
        return (arr(block, SCALES), arr(block, MINS));
    }
    unpack_k4_scales(arr(block, SCALES), buf);
    (&buf[0], &buf[1])
}

#[inline(always)]
fn arr_mut<const N: usize>(s: &mut [u8], at: usize) -> &mut [u8; N] {
    (&mut s[at..at + N])
        .try_into()
        .expect("length checked by the slice")
}

#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn store16(out: &mut [u8; 16], v: __m128i) {
    // SAFETY: `out` is 16 writable bytes; storeu has no alignment requirement.
    unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), v) }
}
