//! The AVX-512 VNNI kernel for Q4_K×16 weights ([`super::q4k_x16`]): sixteen weight rows in
//! the lanes of each vector, four activation bytes broadcast per `vpdpbusd`.
//!
//! Per super-block and activation row: 64 `vpdpbusd` (4096 multiply-adds over sixteen rows)
//! and about 40 other operations, where the ggml-layout kernel spends ~27 operations on each
//! row's 256. The nibble unpacking and the scales are shared by the `R` activation rows. The operations match
//! [`super::q4k_x16::dot`] one for one, so the results are bit-identical to it. Soundness as
//! in [`super::vnni`]: the `#[target_feature]` functions run only behind the [`Vnni`] token,
//! after the wrapper checked the lengths.

use super::avx2::{arr, load16, load32};
use super::prefetch::prefetch_ahead;
use super::q4k_x16::{self, BLOCK_BYTES, D, DMIN, MINS, QS, SCALES};
use super::row_groups::{each_group, GROUP};
use super::vnni::{dot_broadcast8, load64, Vnni};
use super::Q8KBlock;
use core::arch::x86_64::*;

/// `out[c][r]` = row `c` · `a[r]` for the `out.len()` rows whose groups `w` holds.
pub fn dot_q4k_x16<const R: usize>(_: Vnni, w: &[u8], a: &[&[Q8KBlock]; R], out: &mut [[f32; R]]) {
    let nb = q4k_x16::check(w, a, out.len());
    if nb == 0 {
        out.iter_mut().for_each(|o| *o = [0.0; R]);
        return;
    }
    // SAFETY: the `Vnni` token proves the CPU has the features `groups` is compiled for; the
    // lengths are checked above, and every access inside is bounds-checked.
    unsafe { groups(w, nb, a, out) }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
fn groups<const R: usize>(w: &[u8], nb: usize, a: &[&[Q8KBlock]; R], out: &mut [[f32; R]]) {
    each_group(out, |g, lanes| group(w, g * nb * BLOCK_BYTES, nb, a, lanes));
}

/// One group of sixteen rows, starting at byte `start` of `w`, into `lanes[r][i]`.
// `b` indexes the weight blocks and the blocks of every activation row alike.
#[allow(clippy::needless_range_loop)]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
fn group<const R: usize>(
    w: &[u8],
    start: usize,
    nb: usize,
    a: &[&[Q8KBlock]; R],
    lanes: &mut [[f32; GROUP]; R],
) {
    let m4 = _mm512_set1_epi8(0xF);
    let mut acc = [_mm512_setzero_ps(); R];
    for b in 0..nb {
        let at = start + b * BLOCK_BYTES;
        if R == 1 {
            // Decode streams the weights once from memory (see `prefetch_ahead`).
            prefetch_ahead(w, at, BLOCK_BYTES);
        }
        let block: &[u8; BLOCK_BYTES] = arr(w, at);
        let d = _mm512_cvtph_ps(load32::<u8>(arr(block, D)));
        let dmin = _mm512_cvtph_ps(load32::<u8>(arr(block, DMIN)));
        let mut sum = [_mm512_setzero_ps(); R];
        for s in 0..8 {
            let bytes_f32 = |at| _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(load16(arr(block, at))));
            let scale = _mm512_mul_ps(bytes_f32(SCALES + 16 * s), d);
            let min = _mm512_mul_ps(bytes_f32(MINS + 16 * s), dmin);
            // Quants 32s + 4g.. of every row, g = 0..8: low nibbles for g < 4, high after.
            let packed: [__m512i; 4] =
                std::array::from_fn(|h| load64::<u8>(arr(block, QS + 256 * s + 64 * h)));
            let q: [__m512i; 8] = std::array::from_fn(|g| {
                let p = packed[g % 4];
                let p = if g < 4 { p } else { _mm512_srli_epi16(p, 4) };
                _mm512_and_si512(p, m4)
            });
            for r in 0..R {
                let ab = &a[r][b];
                let y = arr(&ab.qs, 32 * s);
                let isum = _mm512_cvtepi32_ps(dot_broadcast8(&q, y, _mm512_setzero_si512()));
                let bsum = (i32::from(ab.bsums[2 * s]) + i32::from(ab.bsums[2 * s + 1])) as f32;
                sum[r] = _mm512_fmadd_ps(isum, scale, sum[r]);
                sum[r] = _mm512_fnmadd_ps(min, _mm512_set1_ps(bsum), sum[r]);
            }
        }
        for r in 0..R {
            acc[r] = _mm512_fmadd_ps(sum[r], _mm512_set1_ps(a[r][b].d), acc[r]);
        }
    }
    for r in 0..R {
        // SAFETY: `lanes[r]` is 16 writable f32; storeu has no alignment requirement.
        unsafe { _mm512_storeu_ps(lanes[r].as_mut_ptr(), acc[r]) };
    }
}
