//! The AVX-512 VNNI kernels for Q4_K×16 and Q5_K×16 weights
//! ([`crate::engine::model::kernels::packed::q4k_x16`],
//! [`crate::engine::model::kernels::packed::q5k_x16`], the same but for a fifth bit): sixteen
//! weight rows in the lanes of each vector, four activation bytes broadcast per `vpdpbusd`.
//!
//! Per super-block and activation row: 64 `vpdpbusd` (4096 multiply-adds over sixteen rows)
//! and about 40 other operations, where the ggml-layout kernel spends ~27 operations on each
//! row's 256. Each sub-block's 32-bit sum is weighted by the weights' scale times the
//! activations' step multiplier and the super-block summed in integers, as the reference
//! does. The nibble unpacking and the scales are shared by the `R` activation rows. The
//! operations match [`crate::engine::model::kernels::packed::q4k_x16::dot`] one for one, so
//! the results are bit-identical to it. Soundness as in [`super::ggml`]: the
//! `#[target_feature]` functions run only behind the [`Vnni`] token, after the wrapper
//! checked the lengths.

use super::ggml::load64;
use super::groups::{dot_broadcast, nibbles8, with_fifth_bits, x16_groups};
use super::Vnni;
use crate::engine::model::kernels::packed::q4k_x16::{self, D, DMIN};
use crate::engine::model::kernels::packed::q5k_x16;
use crate::engine::model::kernels::x86::avx2::ops::{arr, k4_scales_and_mins, load16, load32};
use crate::engine::model::kernels::Q8KBlock;
use core::arch::x86_64::*;

/// `out[c][r]` = row `c` · `a[r]` for the `out.len()` rows whose groups `w` holds, the
/// scales compact or a byte each.
pub fn dot_q4k_x16<const R: usize, const COMPACT: bool>(
    t: Vnni,
    w: &[u8],
    a: &[&[Q8KBlock]; R],
    out: &mut [[f32; R]],
) {
    const FULL: usize = q4k_x16::BLOCK_BYTES;
    const SMALL: usize = q4k_x16::COMPACT_BLOCK_BYTES;
    if COMPACT {
        x16_groups(t, w, a, out, |block, b, acc| {
            // SAFETY: `x16_groups` runs this with the features `add_block` is compiled
            // for (the `Vnni` token proves them), after checking the lengths.
            unsafe { add_block::<R, SMALL, false, true>(block, b, a, acc) }
        })
    } else {
        x16_groups(t, w, a, out, |block, b, acc| {
            // SAFETY: as above.
            unsafe { add_block::<R, FULL, false, false>(block, b, a, acc) }
        })
    }
}

/// As [`dot_q4k_x16`] for Q5_K×16 weights.
pub fn dot_q5k_x16<const R: usize, const COMPACT: bool>(
    t: Vnni,
    w: &[u8],
    a: &[&[Q8KBlock]; R],
    out: &mut [[f32; R]],
) {
    const FULL: usize = q5k_x16::BLOCK_BYTES;
    const SMALL: usize = q5k_x16::COMPACT_BLOCK_BYTES;
    if COMPACT {
        x16_groups(t, w, a, out, |block, b, acc| {
            // SAFETY: as in `dot_q4k_x16`.
            unsafe { add_block::<R, SMALL, true, true>(block, b, a, acc) }
        })
    } else {
        x16_groups(t, w, a, out, |block, b, acc| {
            // SAFETY: as above.
            unsafe { add_block::<R, FULL, true, false>(block, b, a, acc) }
        })
    }
}

/// Super-block `b` of a group of sixteen rows against every activation row, into `acc`; with
/// `FIFTH`, each quant's fifth bit from the Q5_K×16 high-bit run of its chunk.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
fn add_block<const R: usize, const B: usize, const FIFTH: bool, const COMPACT: bool>(
    block: &[u8; B],
    b: usize,
    a: &[&[Q8KBlock]; R],
    acc: &mut [__m512; R],
) {
    let mut unpacked = [[0; 128]; 2];
    let (scales, mins) = k4_scales_and_mins::<COMPACT>(block, &mut unpacked);
    let bytes_i32 = |bytes: &[u8; 128], s: usize| _mm512_cvtepu8_epi32(load16(arr(bytes, 16 * s)));
    let qs = q4k_x16::qs(COMPACT);
    let mut isum = [_mm512_setzero_si512(); R];
    let mut msum = [_mm512_setzero_ps(); R];
    for s in 0..8 {
        // One per lane, high words zero: its word products with the multipliers are the
        // 32-bit ones.
        let scales = bytes_i32(scales, s);
        let mins = _mm512_cvtepi32_ps(bytes_i32(mins, s));
        // Quants 32s + 4g.. of every row, g = 0..8, with the fifth bits for Q5_K×16.
        let q = nibbles8(block, qs + 256 * s);
        let q = if FIFTH {
            with_fifth_bits(q, load64::<u8>(arr(block, q5k_x16::high(COMPACT) + 64 * s)))
        } else {
            q
        };
        for ((ar, isum), msum) in a.iter().zip(isum.iter_mut()).zip(msum.iter_mut()) {
            let ab = &ar[b];
            let dot = dot_broadcast(&q, &ab.qs[32 * s..32 * s + 32], _mm512_setzero_si512());
            let weight = _mm512_mullo_epi16(scales, _mm512_set1_epi32(i32::from(ab.mult[s])));
            *isum = _mm512_add_epi32(*isum, _mm512_mullo_epi32(dot, weight));
            *msum = _mm512_fmadd_ps(mins, _mm512_set1_ps(ab.sums_f32[s]), *msum);
        }
    }
    let d = _mm512_cvtph_ps(load32::<u8>(arr(block, D)));
    let dmin = _mm512_cvtph_ps(load32::<u8>(arr(block, DMIN)));
    let sum: [__m512; R] = std::array::from_fn(|r| {
        _mm512_fnmadd_ps(dmin, msum[r], _mm512_mul_ps(_mm512_cvtepi32_ps(isum[r]), d))
    });
    for ((ar, acc), sum) in a.iter().zip(acc).zip(sum) {
        *acc = _mm512_fmadd_ps(sum, _mm512_set1_ps(ar[b].d), *acc);
    }
}
