//! The AVX2 kernels of the 32-element sixteen-row layouts: Q4_1×16, Q5_0×16 and Q8_0×16, one
//! scale (and Q4_1's min) per row and block. Soundness as in [`super`].

use super::{add_dot4, broadcast4, broadcasts, dot_small, f16x8, groups, half_bytes, nibbles8};
use super::{with_fifth_bits, Acc, BytePath};
use crate::engine::model::kernels::packed::{self, q4_1_x16, q5_0_x16, q8_0_x16};
use crate::engine::model::kernels::Q8Block;
use core::arch::x86_64::*;

/// `Q4_1×16` weights × Q8_1 activations: `out[c][r]` = row `c` · `a[r]`.
pub fn dot_q4_1_x16<P: BytePath, const R: usize>(
    t: P,
    w: &[u8],
    a: &[&[Q8Block]; R],
    out: &mut [[f32; R]],
) {
    use q4_1_x16::BLOCK_BYTES;
    let nb = packed::check(w, a, out.len(), BLOCK_BYTES);
    groups(t, w, nb, out, |block: &[u8; BLOCK_BYTES], b, acc| {
        // SAFETY: `groups` runs this with the features `q4_1_block` is compiled for (the
        // `Avx2` token proves them), after checking the lengths.
        unsafe { q4_1_block::<P, R>(block, b, a, acc) }
    })
}

/// `Q5_0×16` weights × Q8_0 activations.
pub fn dot_q5_0_x16<P: BytePath, const R: usize>(
    t: P,
    w: &[u8],
    a: &[&[Q8Block]; R],
    out: &mut [[f32; R]],
) {
    use q5_0_x16::BLOCK_BYTES;
    let offsets = q5_0_x16::offsets(a, q5_0_x16::check(w, a, out.len()));
    groups(
        t,
        w,
        offsets.len(),
        out,
        |block: &[u8; BLOCK_BYTES], b, acc| {
            // SAFETY: as in `dot_q4_1_x16`.
            unsafe { q5_0_block::<P, R>(block, b, a, &offsets[b], acc) }
        },
    )
}

/// `Q8_0×16` weights × Q8_0 activations.
pub fn dot_q8_0_x16<P: BytePath, const R: usize>(
    t: P,
    w: &[u8],
    a: &[&[Q8Block]; R],
    out: &mut [[f32; R]],
) {
    let nb = q8_0_x16::check(w, a, out.len());
    groups(
        t,
        w,
        nb,
        out,
        |block: &[u8; q8_0_x16::BLOCK_BYTES], b, acc| {
            // SAFETY: as in `dot_q4_1_x16`.
            unsafe { q8_0_block::<P, R>(block, b, a, acc) }
        },
    )
}

/// One half's quants `q` (scales `d`) against every activation row: `acc[r] += (Σ q·y +
/// offset[r]) · d · d_a`, plus `m · s_a` when the format has mins. `IN16`: as in
/// [`super::dot_small`], 8 for Q4_1's 4-bit quants, 4 for Q5_0's 5-bit ones.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
#[allow(clippy::too_many_arguments)]
fn add_half<P: BytePath, const R: usize, const IN16: usize>(
    h: usize,
    d: __m256,
    m: Option<__m256>,
    q: &[__m256i; 8],
    b: usize,
    a: &[&[Q8Block]; R],
    offset: &[i32; R],
    acc: &mut Acc<R>,
) {
    for ((ar, acc), &start) in a.iter().zip(acc).zip(offset) {
        let ab = &ar[b];
        let y: [__m256i; 8] = broadcasts(&ab.qs);
        let isum = _mm256_cvtepi32_ps(dot_small::<P, 8, IN16>(q, &y, _mm256_set1_epi32(start)));
        acc[h] = _mm256_fmadd_ps(isum, _mm256_mul_ps(d, _mm256_set1_ps(ab.d)), acc[h]);
        if let Some(m) = m {
            acc[h] = _mm256_fmadd_ps(m, _mm256_set1_ps(ab.s), acc[h]);
        }
    }
}

#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn q4_1_block<P: BytePath, const R: usize>(
    block: &[u8; q4_1_x16::BLOCK_BYTES],
    b: usize,
    a: &[&[Q8Block]; R],
    acc: &mut Acc<R>,
) {
    use q4_1_x16::{D, M, QS};
    for h in 0..2 {
        let (d, m) = (f16x8(block, D + 16 * h), f16x8(block, M + 16 * h));
        let q = nibbles8(block, QS, h);
        add_half::<P, R, 8>(h, d, Some(m), &q, b, a, &[0; R], acc);
    }
}

#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn q5_0_block<P: BytePath, const R: usize>(
    block: &[u8; q5_0_x16::BLOCK_BYTES],
    b: usize,
    a: &[&[Q8Block]; R],
    offset: &[i32; R],
    acc: &mut Acc<R>,
) {
    use q5_0_x16::{D, HIGH, LOW};
    for h in 0..2 {
        let d = f16x8(block, D + 16 * h);
        let q = with_fifth_bits(nibbles8(block, LOW, h), half_bytes(block, HIGH, h));
        add_half::<P, R, 4>(h, d, None, &q, b, a, offset, acc);
    }
}

/// Q8_0's quants are stored `q + 128`; taken back to signed, `|q| · sign(y, q)` pairs fit
/// `vpmaddubsw` (at most 2 · 128 · 127), so the sums need no bias offset.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn q8_0_block<P: BytePath, const R: usize>(
    block: &[u8; q8_0_x16::BLOCK_BYTES],
    b: usize,
    a: &[&[Q8Block]; R],
    acc: &mut Acc<R>,
) {
    use q8_0_x16::{D, QS};
    let flip = _mm256_set1_epi8(-128);
    for h in 0..2 {
        let d = f16x8(block, D + 16 * h);
        let s: [__m256i; 8] =
            std::array::from_fn(|g| _mm256_xor_si256(half_bytes(block, QS + 64 * g, h), flip));
        let abs: [__m256i; 8] = std::array::from_fn(|g| _mm256_sign_epi8(s[g], s[g]));
        for (ar, acc) in a.iter().zip(acc.iter_mut()) {
            let ab = &ar[b];
            let mut sum = _mm256_setzero_si256();
            for g in 0..8 {
                let y = _mm256_sign_epi8(broadcast4(&ab.qs, g), s[g]);
                sum = add_dot4::<P>(sum, abs[g], y);
            }
            let isum = _mm256_cvtepi32_ps(sum);
            acc[h] = _mm256_fmadd_ps(isum, _mm256_mul_ps(d, _mm256_set1_ps(ab.d)), acc[h]);
        }
    }
}
