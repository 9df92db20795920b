//! AVX-512 VNNI Q4_K and Q6_K kernels: 64 quants per `vpmaddubsw` + `vpdpwssd` (the scales
//! are per 32 or 16 quants, so the products are scaled as 16-bit pairs, not by `vpdpbusd`).
//!
//! The 512-bit integer sums, folded to eight lanes, are exactly the AVX2 kernels' (lane `i`
//! sums bytes `4i..4i+4` of every 32-byte chunk either way), and the float work after them is
//! the same, so the results are bit-identical to [`crate::engine::model::kernels::x86::avx2`]'s. Called only from the
//! wrappers in [`super::ggml`] (see its soundness note).

use super::ggml::{fold, join, load64};
use crate::engine::model::kernels::blocks::{Q4K_BYTES, Q6K_BYTES};
use crate::engine::model::kernels::x86::avx2::ops::{
    arr, f16_at, hsum, hsum128, load16, load32, load_i16x16, load_mult, unpack_scales_k4,
    SCALE_SHUFFLE,
};
use crate::engine::model::kernels::{Q8KBlock, QK_K};
use core::arch::x86_64::*;

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
pub(super) fn q4k<const R: usize>(w: &[u8], a: &[&[Q8KBlock]; R], out: &mut [f32; R]) {
    let m4 = _mm512_set1_epi8(0xF);
    let mut acc = [_mm256_setzero_ps(); R];
    let mut acc_m = [_mm_setzero_ps(); R];
    for (b, wb) in w.chunks_exact(Q4K_BYTES).enumerate() {
        let d = f16_at(wb, 0);
        let dmin = f16_at(wb, 2);
        let sm = unpack_scales_k4(arr(wb, 4));
        let mins = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(i64::from_le_bytes(*arr(&sm, 8))));
        // Chunk j: bytes 32j..32j+32 hold sub-block 2j in their low nibbles, 2j+1 in their
        // high ones; as 64 bytes they line up with activations 64j..64j+64.
        let q: [__m512i; QK_K / 64] = std::array::from_fn(|j| {
            let bits = load32::<u8>(arr(wb, 16 + 32 * j));
            _mm512_and_si512(join(bits, _mm256_srli_epi16(bits, 4)), m4)
        });
        // Scale of sub-block 2j in the low 16 words, of 2j+1 in the high ones.
        let words = _mm512_castsi256_si512(_mm256_cvtepu8_epi16(load16(&sm)));
        let sc: [__m512i; QK_K / 64] = std::array::from_fn(|j| halves(words, 2 * j));
        for r in 0..R {
            let ab = &a[r][b];
            let mut sumi = _mm512_setzero_si512();
            for j in 0..QK_K / 64 {
                let p = _mm512_maddubs_epi16(q[j], load64(arr(&ab.qs, 64 * j)));
                // Times the activations' step multipliers, lined up the same way.
                let sc = _mm512_mullo_epi16(sc[j], load_i16x32(arr(&ab.mult_words, 32 * j)));
                sumi = _mm512_dpwssd_epi32(sumi, sc, p);
            }
            // From here on, the AVX2 kernel's operations.
            let bs = load_i16x16(&ab.bsums);
            let pair_sums =
                _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
            let prod = _mm_madd_epi16(_mm_mullo_epi16(mins, load_mult(&ab.mult)), pair_sums);
            acc_m[r] = _mm_fmadd_ps(_mm_set1_ps(dmin * ab.d), _mm_cvtepi32_ps(prod), acc_m[r]);
            acc[r] = _mm256_fmadd_ps(
                _mm256_set1_ps(d * ab.d),
                _mm256_cvtepi32_ps(fold(sumi)),
                acc[r],
            );
        }
    }
    for r in 0..R {
        out[r] = hsum(acc[r]) - hsum128(acc_m[r]);
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
pub(super) fn q6k<const R: usize>(w: &[u8], a: &[&[Q8KBlock]; R], out: &mut [f32; R]) {
    let m4 = _mm512_set1_epi8(0xF);
    let m2 = _mm512_set1_epi8(3);
    let m32s = _mm512_set1_epi8(32);
    let mut acc = [_mm256_setzero_ps(); R];
    for (b, wb) in w.chunks_exact(Q6K_BYTES).enumerate() {
        let d = f16_at(wb, 208);
        let scales = load16(arr(wb, 192));
        let mut sumi = [_mm512_setzero_si512(); R];
        for j in 0..QK_K / 128 {
            // The 16-bit scales of quants 128j + 32k.., k = 0..4, two per register.
            let sc: [__m256i; 4] = std::array::from_fn(|k| {
                _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, load16(&SCALE_SHUFFLE[4 * j + k])))
            });
            let sc = [join(sc[0], sc[1]), join(sc[2], sc[3])];
            // Low nibbles of quants 128j..128j+64 (low) and 128j+64.. (high), and the two
            // high bits of each, as in the AVX2 kernel.
            let l = load64::<u8>(arr(wb, 64 * j));
            let bh = load32::<u8>(arr(wb, 128 + 32 * j));
            let h = [
                join(bh, _mm256_srli_epi16(bh, 2)),
                join(_mm256_srli_epi16(bh, 4), _mm256_srli_epi16(bh, 6)),
            ];
            let lo = [
                _mm512_and_si512(l, m4),
                _mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
            ];
            let q: [__m512i; 2] = std::array::from_fn(|i| {
                _mm512_or_si512(lo[i], _mm512_slli_epi16(_mm512_and_si512(h[i], m2), 4))
            });
            for r in 0..R {
                let ab = &a[r][b];
                for i in 0..2 {
                    // (q - 32) · y as q · y - 32 · y, as the AVX2 kernel (same 16-bit lanes).
                    let y = load64(arr(&ab.qs, 128 * j + 64 * i));
                    let p = _mm512_sub_epi16(
                        _mm512_maddubs_epi16(q[i], y),
                        _mm512_maddubs_epi16(m32s, y),
                    );
                    let words = load_i16x32(arr(&ab.mult_words, 16 * (4 * j + 2 * i)));
                    let sc = _mm512_mullo_epi16(sc[i], words);
                    sumi[r] = _mm512_dpwssd_epi32(sumi[r], sc, p);
                }
            }
        }
        for r in 0..R {
            let ab = &a[r][b];
            let sumi = _mm256_cvtepi32_ps(fold(sumi[r]));
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * ab.d), sumi, acc[r]);
        }
    }
    for r in 0..R {
        out[r] = hsum(acc[r]);
    }
}

/// Word `k` of `words` in the low 16 words and word `k + 1` in the high ones: the values of
/// sub-blocks `k` and `k + 1`, lined up with 64 quants.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
fn halves(words: __m512i, k: usize) -> __m512i {
    let idx = _mm512_mask_blend_epi16(
        0xFFFF_0000,
        _mm512_set1_epi16(k as i16),
        _mm512_set1_epi16(k as i16 + 1),
    );
    _mm512_permutexvar_epi16(idx, words)
}

/// 32 words (64 bytes).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
fn load_i16x32(b: &[i16; 32]) -> __m512i {
    // SAFETY: `b` is 64 readable bytes; loadu has no alignment requirement.
    unsafe { _mm512_loadu_si512(b.as_ptr().cast()) }
}
