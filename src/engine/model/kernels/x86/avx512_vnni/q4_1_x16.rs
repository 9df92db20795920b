//! The AVX-512 VNNI kernel for Q4_1×16 weights ([`crate::engine::model::kernels::packed::q4_1_x16`]): sixteen weight rows in
//! the lanes of each vector, four activation bytes broadcast per `vpdpbusd`.
//!
//! Per block and activation row: 8 `vpdpbusd` (512 multiply-adds over sixteen rows) and five
//! other operations; unpacking the quants is shared by the `R` activation rows. The
//! operations match [`crate::engine::model::kernels::packed::q4_1_x16::dot`] one for one, so the results are bit-identical
//! to it. Soundness as in [`super::ggml`].

use super::groups::{dot_broadcast, nibbles8, x16_groups};
use super::Vnni;
use crate::engine::model::kernels::packed::q4_1_x16::{BLOCK_BYTES, D, M, QS};
use crate::engine::model::kernels::x86::avx2::ops::{arr, load32};
use crate::engine::model::kernels::Q8Block;
use core::arch::x86_64::*;

/// `out[c][r]` = row `c` · `a[r]` for the `out.len()` rows whose groups `w` holds.
pub fn dot_q4_1_x16<const R: usize>(t: Vnni, w: &[u8], a: &[&[Q8Block]; R], out: &mut [[f32; R]]) {
    x16_groups(t, w, a, out, |block, b, acc| {
        // SAFETY: `x16_groups` runs this with the features `add_block` is compiled for (the
        // `Vnni` token proves them), after checking the lengths.
        unsafe { add_block(block, b, a, acc) }
    })
}

/// Block `b` of a group of sixteen rows against every activation row, into `acc`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
fn add_block<const R: usize>(
    block: &[u8; BLOCK_BYTES],
    b: usize,
    a: &[&[Q8Block]; R],
    acc: &mut [__m512; R],
) {
    let d = _mm512_cvtph_ps(load32::<u8>(arr(block, D)));
    let m = _mm512_cvtph_ps(load32::<u8>(arr(block, M)));
    let q = nibbles8(block, QS);
    for (ar, acc) in a.iter().zip(acc) {
        let ab = &ar[b];
        let isum = _mm512_cvtepi32_ps(dot_broadcast(&q, &ab.qs, _mm512_setzero_si512()));
        *acc = _mm512_fmadd_ps(isum, _mm512_mul_ps(d, _mm512_set1_ps(ab.d)), *acc);
        *acc = _mm512_fmadd_ps(m, _mm512_set1_ps(ab.s), *acc);
    }
}
