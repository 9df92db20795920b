//! The AVX-512 VNNI kernel for Q5_0×16 weights ([`crate::engine::model::kernels::packed::q5_0_x16`]): sixteen weight rows in
//! the lanes of each vector, four activation bytes broadcast per `vpdpbusd`, the `-16 Σ y`
//! offset as the starting value of the integer sums.
//!
//! Per block and activation row: 8 `vpdpbusd` (512 multiply-adds over sixteen rows) and five
//! other operations; unpacking the quants is shared by the `R` activation rows. The
//! operations match [`crate::engine::model::kernels::packed::q5_0_x16::dot`] one for one, so the results are bit-identical
//! to it. Soundness as in [`super::ggml`].

use super::ggml::load64;
use super::groups::{add_scaled, nibbles8, with_fifth_bits, x16_groups};
use super::Vnni;
use crate::engine::model::kernels::packed::q5_0_x16::{self, BLOCK_BYTES, D, HIGH, LOW};
use crate::engine::model::kernels::x86::avx2::ops::{arr, load32};
use crate::engine::model::kernels::Q8Block;
use core::arch::x86_64::*;

/// `out[c][r]` = row `c` · `a[r]` for the `out.len()` rows whose groups `w` holds.
pub fn dot_q5_0_x16<const R: usize>(t: Vnni, w: &[u8], a: &[&[Q8Block]; R], out: &mut [[f32; R]]) {
    let offsets = q5_0_x16::offsets(a, q5_0_x16::check(w, a, out.len()));
    x16_groups(t, w, a, out, |block, b, acc| {
        // SAFETY: `x16_groups` runs this with the features `add_block` is compiled for (the
        // `Vnni` token proves them), after checking the lengths.
        unsafe { add_block(block, b, a, &offsets[b], acc) }
    })
}

/// Block `b` of a group of sixteen rows against every activation row (`offset[r]`: its
/// `-16 Σ y`), into `acc`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
fn add_block<const R: usize>(
    block: &[u8; BLOCK_BYTES],
    b: usize,
    a: &[&[Q8Block]; R],
    offset: &[i32; R],
    acc: &mut [__m512; R],
) {
    let d = _mm512_cvtph_ps(load32::<u8>(arr(block, D)));
    let q = with_fifth_bits(nibbles8(block, LOW), load64::<u8>(arr(block, HIGH)));
    add_scaled(d, &q, b, a, offset, acc);
}
