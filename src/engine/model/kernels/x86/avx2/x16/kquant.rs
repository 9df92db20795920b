//! The AVX2 kernels of the k-quant sixteen-row layouts: Q4_K×16, Q5_K×16 and Q6_K×16, whose
//! super-blocks of 256 carry a scale per sub-block. Soundness as in [`super`].

use super::{broadcasts, f16x8, groups, half_bytes, nibbles8, times_mult, u8x8};
use super::{with_fifth_bits, Acc, BytePath};
use crate::engine::model::kernels::packed::{self, q4k_x16, q5k_x16, q6k_x16};
use crate::engine::model::kernels::x86::avx2::ops::arr;
use crate::engine::model::kernels::Q8KBlock;
use core::arch::x86_64::*;

/// `Q4_K×16` weights × [`Q8KBlock`] activations.
pub fn dot_q4k_x16<P: BytePath, const R: usize>(
    t: P,
    w: &[u8],
    a: &[&[Q8KBlock]; R],
    out: &mut [[f32; R]],
) {
    let nb = packed::check(w, a, out.len(), q4k_x16::BLOCK_BYTES);
    groups(
        t,
        w,
        nb,
        out,
        |block: &[u8; q4k_x16::BLOCK_BYTES], b, acc| {
            // SAFETY: as in `q8::dot_q4_1_x16`.
            unsafe { q4k_block::<P, R, { q4k_x16::BLOCK_BYTES }, false>(block, b, a, acc) }
        },
    )
}

/// `Q5_K×16` weights × [`Q8KBlock`] activations.
pub fn dot_q5k_x16<P: BytePath, const R: usize>(
    t: P,
    w: &[u8],
    a: &[&[Q8KBlock]; R],
    out: &mut [[f32; R]],
) {
    const B: usize = q5k_x16::BLOCK_BYTES;
    let nb = packed::check(w, a, out.len(), B);
    groups(t, w, nb, out, |block: &[u8; B], b, acc| {
        // SAFETY: as in `q8::dot_q4_1_x16`.
        unsafe { q4k_block::<P, R, B, true>(block, b, a, acc) }
    })
}

/// `Q6_K×16` weights × [`Q8KBlock`] activations.
pub fn dot_q6k_x16<P: BytePath, const R: usize>(
    t: P,
    w: &[u8],
    a: &[&[Q8KBlock]; R],
    out: &mut [[f32; R]],
) {
    let nb = packed::check(w, a, out.len(), q6k_x16::BLOCK_BYTES);
    groups(
        t,
        w,
        nb,
        out,
        |block: &[u8; q6k_x16::BLOCK_BYTES], b, acc| {
            // SAFETY: as in `q8::dot_q4_1_x16`.
            unsafe { q6k_block::<P, R>(block, b, a, acc) }
        },
    )
}

/// As the VNNI kernel, per half: each sub-block's integer sums times the activations' step
/// multiplier, times the weights' scale, less their min times the sub-block's sum, then the
/// super-block's sum times the activations' base step.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn q4k_block<P: BytePath, const R: usize, const B: usize, const FIFTH: bool>(
    block: &[u8; B],
    b: usize,
    a: &[&[Q8KBlock]; R],
    acc: &mut Acc<R>,
) {
    use q4k_x16::{D, DMIN, MINS, QS, SCALES};
    for h in 0..2 {
        let d = f16x8(block, D + 16 * h);
        let dmin = f16x8(block, DMIN + 16 * h);
        let mut sum = [_mm256_setzero_ps(); R];
        for s in 0..8 {
            let scale = _mm256_mul_ps(u8x8(block, SCALES + 16 * s + 8 * h), d);
            let min = _mm256_mul_ps(u8x8(block, MINS + 16 * s + 8 * h), dmin);
            let q = nibbles8(block, QS + 256 * s, h);
            let q = if FIFTH {
                with_fifth_bits(q, half_bytes(block, q5k_x16::HIGH + 64 * s, h))
            } else {
                q
            };
            for (ar, sum) in a.iter().zip(sum.iter_mut()) {
                let ab = &ar[b];
                let y: [__m256i; 8] = broadcasts(&ab.qs[32 * s..]);
                // Exact, as in the reference: |isum · mult| < 2²⁴.
                let words = arr(&ab.mult_words, 16 * s);
                // Q5_K's five-bit quants add four byte-pair products in 16 bits, Q4_K's eight.
                let isum = if FIFTH {
                    times_mult::<P, 8, 4>(&q, &y, 0, ab.mult[s], words)
                } else {
                    times_mult::<P, 8, 8>(&q, &y, 0, ab.mult[s], words)
                };
                *sum = _mm256_fmadd_ps(isum, scale, *sum);
                *sum = _mm256_fnmadd_ps(min, _mm256_set1_ps(ab.sums_f32[s]), *sum);
            }
        }
        for ((ar, acc), sum) in a.iter().zip(acc.iter_mut()).zip(sum) {
            acc[h] = _mm256_fmadd_ps(sum, _mm256_set1_ps(ar[b].d), acc[h]);
        }
    }
}

/// As the VNNI kernel, per half: the 6-bit quants (nibbles, and the two high bits moved to
/// bits 4 and 5), each 16-element sub-block's integer sum less 32 Σ y, times the activations'
/// step multiplier and the sub-block's scale, then the super-block's sum times their base
/// step.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn q6k_block<P: BytePath, const R: usize>(
    block: &[u8; q6k_x16::BLOCK_BYTES],
    b: usize,
    a: &[&[Q8KBlock]; R],
    acc: &mut Acc<R>,
) {
    use q6k_x16::{D, QH, QL, SCALES};
    let m2 = _mm256_set1_epi8(0x30);
    for h in 0..2 {
        let d = f16x8(block, D + 16 * h);
        let mut sum = [_mm256_setzero_ps(); R];
        for s in 0..8 {
            let scale = |t: usize| {
                let bytes =
                    _mm_cvtsi64_si128(i64::from_le_bytes(*arr(block, SCALES + 16 * t + 8 * h)));
                _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)), d)
            };
            let scales = [scale(2 * s), scale(2 * s + 1)];
            let nib = nibbles8(block, QL + 256 * s, h);
            let high = [
                half_bytes(block, QH + 128 * s, h),
                half_bytes(block, QH + 128 * s + 64, h),
            ];
            let q: [__m256i; 8] = std::array::from_fn(|g| {
                let hi = high[g / 4];
                let hi = match g % 4 {
                    0 => _mm256_slli_epi16(hi, 4),
                    1 => _mm256_slli_epi16(hi, 2),
                    2 => hi,
                    _ => _mm256_srli_epi16(hi, 2),
                };
                _mm256_or_si256(nib[g], _mm256_and_si256(hi, m2))
            });
            let halves: [&[__m256i; 4]; 2] = [arr(&q, 0), arr(&q, 4)];
            for (ar, sum) in a.iter().zip(sum.iter_mut()) {
                let ab = &ar[b];
                for (k, (q, scale)) in halves.into_iter().zip(scales).enumerate() {
                    let t = 2 * s + k;
                    let y: [__m256i; 4] = broadcasts(&ab.qs[16 * t..]);
                    // The quants are stored +32: start from -32 Σ y. Exact, as in the
                    // reference: |isum · mult| < 2²⁴.
                    let start = -32 * i32::from(ab.bsums[t]);
                    let words = arr(&ab.mult_words, 16 * s);
                    let isum = times_mult::<P, 4, 2>(q, &y, start, ab.mult[s], words);
                    *sum = _mm256_fmadd_ps(isum, scale, *sum);
                }
            }
        }
        for ((ar, acc), sum) in a.iter().zip(acc.iter_mut()).zip(sum) {
            acc[h] = _mm256_fmadd_ps(sum, _mm256_set1_ps(ar[b].d), acc[h]);
        }
    }
}
