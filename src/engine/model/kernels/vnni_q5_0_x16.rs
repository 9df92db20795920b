//! The AVX-512 VNNI kernel for Q5_0×16 weights ([`super::q5_0_x16`]): sixteen weight rows in
//! the lanes of each vector, four activation bytes broadcast per `vpdpbusd`, the `-16 Σ y`
//! offset as the starting value of the integer sums.
//!
//! Per block and activation row: 8 `vpdpbusd` (512 multiply-adds over sixteen rows) and five
//! other operations; unpacking the quants is shared by the `R` activation rows. The
//! operations match [`super::q5_0_x16::dot`] one for one, so the results are bit-identical
//! to it. Soundness as in [`super::vnni`].

use super::avx2::{arr, load32};
use super::prefetch::prefetch_ahead;
use super::q5_0_x16::{self, BLOCK_BYTES, D, HIGH, LOW};
use super::row_groups::{each_group, GROUP};
use super::vnni::{dot_broadcast8, load64, Vnni};
use super::Q8Block;
use core::arch::x86_64::*;

/// `out[c][r]` = row `c` · `a[r]` for the `out.len()` rows whose groups `w` holds.
pub fn dot_q5_0_x16<const R: usize>(_: Vnni, w: &[u8], a: &[&[Q8Block]; R], out: &mut [[f32; R]]) {
    let nb = q5_0_x16::check(w, a, out.len());
    if nb == 0 {
        out.iter_mut().for_each(|o| *o = [0.0; R]);
        return;
    }
    let offsets = q5_0_x16::offsets(a, nb);
    // SAFETY: the `Vnni` token proves the CPU has the features `groups` is compiled for; the
    // lengths are checked above, and every access inside is bounds-checked.
    unsafe { groups(w, nb, a, &offsets, out) }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
fn groups<const R: usize>(
    w: &[u8],
    nb: usize,
    a: &[&[Q8Block]; R],
    offsets: &[[i32; R]],
    out: &mut [[f32; R]],
) {
    each_group(out, |g, lanes| {
        group(w, g * nb * BLOCK_BYTES, a, offsets, lanes)
    });
}

/// One group of sixteen rows, starting at byte `start` of `w`, into `lanes[r][i]`.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
fn group<const R: usize>(
    w: &[u8],
    start: usize,
    a: &[&[Q8Block]; R],
    offsets: &[[i32; R]],
    lanes: &mut [[f32; GROUP]; R],
) {
    let m4 = _mm512_set1_epi8(0xF);
    let bit4 = _mm512_set1_epi8(0x10);
    let mut acc = [_mm512_setzero_ps(); R];
    for (b, offset) in offsets.iter().enumerate() {
        let at = start + b * BLOCK_BYTES;
        if R == 1 {
            // Decode streams the weights once from memory (see `prefetch_ahead`).
            prefetch_ahead(w, at, BLOCK_BYTES);
        }
        let block: &[u8; BLOCK_BYTES] = arr(w, at);
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
        for r in 0..R {
            let ab = &a[r][b];
            let isum = dot_broadcast8(&q, &ab.qs, _mm512_set1_epi32(offset[r]));
            let isum = _mm512_cvtepi32_ps(isum);
            let scale = _mm512_mul_ps(d, _mm512_set1_ps(ab.d));
            acc[r] = _mm512_fmadd_ps(isum, scale, acc[r]);
        }
    }
    for r in 0..R {
        // SAFETY: `lanes[r]` is 16 writable f32; storeu has no alignment requirement.
        unsafe { _mm512_storeu_ps(lanes[r].as_mut_ptr(), acc[r]) };
    }
}
