//! The AVX-512 VNNI kernel for Q5_0×16 weights ([`crate::engine::model::kernels::packed::q5_0_x16`]): sixteen weight rows in
//! the lanes of each vector, four activation bytes broadcast per `vpdpbusd`, the `-16 Σ y`
//! offset as the starting value of the integer sums.
//!
//! Per block and activation row: 8 `vpdpbusd` (512 multiply-adds over sixteen rows) and five
//! other operations; unpacking the quants is shared by the `R` activation rows. The
//! operations match [`crate::engine::model::kernels::packed::q5_0_x16::dot`] one for one, so the results are bit-identical
//! to it. Soundness as in [`super::ggml`].

use super::ggml::load64;
use super::groups::{add_scaled, x16_groups};
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
    let m4 = _mm512_set1_epi8(0xF);
    let bit4 = _mm512_set1_epi8(0x10);
    let d = _mm512_cvtph_ps(load32::<u8>(arr(block, D)));
    let packed: [__m512i; 4] = std::array::from_fn(|h| load64::<u8>(arr(block, LOW + 64 * h)));
    let high = load64::<u8>(arr(block, HIGH));
    // Quants 4g.. of every row: the low nibbles of `packed[g]` for g < 4, the high ones of
    // `packed[g - 4]` after, and bit g of `high` moved to bit 4.
    let q: [__m512i; 8] = std::array::from_fn(|g| {
        let p = packed[g % 4];
        let low = _mm512_and_si512(if g < 4 { p } else { _mm512_srli_epi16(p, 4) }, m4);
        let fifth = match g {
            0 => _mm512_slli_epi16(high, 4),
            1 => _mm512_slli_epi16(high, 3),
            2 => _mm512_slli_epi16(high, 2),
            3 => _mm512_slli_epi16(high, 1),
            4 => high,
            5 => _mm512_srli_epi16(high, 1),
            6 => _mm512_srli_epi16(high, 2),
            _ => _mm512_srli_epi16(high, 3),
        };
        _mm512_or_si512(low, _mm512_and_si512(fifth, bit4))
    });
    add_scaled(d, &q, b, a, offset, acc);
}
