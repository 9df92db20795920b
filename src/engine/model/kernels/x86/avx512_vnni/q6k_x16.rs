//! The AVX-512 VNNI kernel for Q6_K×16 weights
//! ([`crate::engine::model::kernels::packed::q6k_x16`]): sixteen weight rows in the lanes of
//! each vector, four activation bytes broadcast per `vpdpbusd`.
//!
//! Per super-block and activation row: 64 `vpdpbusd` (4096 multiply-adds over sixteen rows)
//! and sixteen sub-blocks' integer weighting (`vpmulld`), summed in integers; the unpacking
//! of the 6-bit quants (nibble, two high bits, one shift and mask each) and the scales are
//! shared by the `R` activation rows.
//! The operations match [`crate::engine::model::kernels::packed::q6k_x16::dot`] one for one,
//! so the results are bit-identical to it. Soundness as in [`super::ggml`]: the
//! `#[target_feature]` functions run only behind the [`Vnni`] token, after the wrapper checked
//! the lengths.

use super::ggml::load64;
use super::groups::{dot_broadcast, nibbles8, x16_groups};
use super::Vnni;
use crate::engine::model::kernels::packed::q6k_x16::{BLOCK_BYTES, D, QH, QL, SCALES};
use crate::engine::model::kernels::x86::avx2::ops::{arr, load16, load32};
use crate::engine::model::kernels::Q8KBlock;
use core::arch::x86_64::*;

/// `out[c][r]` = row `c` · `a[r]` for the `out.len()` rows whose groups `w` holds.
pub fn dot_q6k_x16<const R: usize>(t: Vnni, w: &[u8], a: &[&[Q8KBlock]; R], out: &mut [[f32; R]]) {
    x16_groups(t, w, a, out, |block, b, acc| {
        // SAFETY: `x16_groups` runs this with the features `add_block` is compiled for (the
        // `Vnni` token proves them), after checking the lengths.
        unsafe { add_block(block, b, a, acc) }
    })
}

/// Quants `32 s + ..` of every row for the eight groups `g` of chunk `s`, 0..63: the nibbles
/// of run `g % 4` (low for g < 4) with the two bits `2 (g % 4)..` of high-bit run `g / 4`
/// moved to bits 4 and 5.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
fn quants(block: &[u8; BLOCK_BYTES], s: usize) -> [__m512i; 8] {
    let m2 = _mm512_set1_epi8(0x30);
    let nib = nibbles8(block, QL + 256 * s);
    let high: [__m512i; 2] =
        std::array::from_fn(|k| load64::<u8>(arr(block, QH + 128 * s + 64 * k)));
    std::array::from_fn(|g| {
        let h = high[g / 4];
        let h = match g % 4 {
            0 => _mm512_slli_epi16(h, 4),
            1 => _mm512_slli_epi16(h, 2),
            2 => h,
            _ => _mm512_srli_epi16(h, 2),
        };
        _mm512_or_si512(nib[g], _mm512_and_si512(h, m2))
    })
}

/// Super-block `b` of a group of sixteen rows against every activation row, into `acc`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
fn add_block<const R: usize>(
    block: &[u8; BLOCK_BYTES],
    b: usize,
    a: &[&[Q8KBlock]; R],
    acc: &mut [__m512; R],
) {
    let scales = |t: usize| _mm512_cvtepi8_epi32(load16(arr(block, SCALES + 16 * t)));
    let mut isum = [_mm512_setzero_si512(); R];
    for s in 0..8 {
        let scales = [scales(2 * s), scales(2 * s + 1)];
        let q = quants(block, s);
        let halves: [&[__m512i; 4]; 2] = [arr(&q, 0), arr(&q, 4)];
        for (ar, isum) in a.iter().zip(isum.iter_mut()) {
            let ab = &ar[b];
            let mult = _mm512_set1_epi32(i32::from(ab.mult[s]));
            for (k, (q, scale)) in halves.into_iter().zip(scales).enumerate() {
                let t = 2 * s + k;
                // The quants are stored +32: start from -32 Σ y. The sub-block's exact sum
                // times its weight is the reference's integer (which may wrap as it does).
                let start = _mm512_set1_epi32(-32 * i32::from(ab.bsums[t]));
                let dot = dot_broadcast(q, &ab.qs[16 * t..16 * t + 16], start);
                let weight = _mm512_mullo_epi32(scale, mult);
                *isum = _mm512_add_epi32(*isum, _mm512_mullo_epi32(dot, weight));
            }
        }
    }
    let d = _mm512_cvtph_ps(load32::<u8>(arr(block, D)));
    let sum: [__m512; R] = std::array::from_fn(|r| _mm512_mul_ps(_mm512_cvtepi32_ps(isum[r]), d));
    for ((ar, acc), sum) in a.iter().zip(acc).zip(sum) {
        *acc = _mm512_fmadd_ps(sum, _mm512_set1_ps(ar[b].d), *acc);
    }
}
