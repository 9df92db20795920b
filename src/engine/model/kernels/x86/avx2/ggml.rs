//! AVX2 + FMA (+ F16C for the block scales) kernels, after ggml's x86 ones.
//!
//! Soundness: the `#[target_feature]` functions may only run on a CPU with those features. They
//! are private and called only from the public wrappers, which take an [`Avx2`] token; the token
//! has a private field, so it exists only if [`Avx2::detect`] found AVX2, FMA and F16C at run
//! time. The wrappers also check the lengths (weight row = whole blocks, one activation block
//! per weight block); inside, every load goes through `load16`/`load32`/`load_i16x16`, which take
//! fixed-size arrays, so each load reads memory the borrow covers. Loads are unaligned
//! (`loadu`), so there is no alignment precondition.

use super::ops::{
    arr, f16_at, hsum, hsum128, load16, load32, load_i16x16, load_mult, nibbles, unpack_scales_k4,
    SCALE_SHUFFLE,
};
use super::Avx2;
use crate::engine::model::kernels::blocks::{
    Q4K_BYTES, Q4_0_BYTES, Q4_1_BYTES, Q5_0_BYTES, Q6K_BYTES, Q8_0_BYTES,
};
use crate::engine::model::kernels::x86::prefetch::prefetch_ahead;
use crate::engine::model::kernels::{Q8Block, Q8KBlock, QK_K};
use core::arch::x86_64::*;

/// Byte i is 0xFF where bit i of `x` is set.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn bytes_from_bits(x: u32) -> __m256i {
    let shuf = _mm256_set_epi64x(
        0x0303030303030303,
        0x0202020202020202,
        0x0101010101010101,
        0,
    );
    let bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(x as i32), shuf);
    let bytes = _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe_u64 as i64));
    _mm256_cmpeq_epi8(bytes, _mm256_set1_epi64x(-1))
}

/// Σ of 32 `u8 × i8` products as 8 f32 lanes.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn dot_us8(ax: __m256i, sy: __m256i) -> __m256 {
    let p = _mm256_maddubs_epi16(ax, sy);
    _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_set1_epi16(1), p))
}

/// One block of signed weights `bx` (scale `d`) against block `b` of every row.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn signed_block<const R: usize>(
    bx: __m256i,
    d: f32,
    b: usize,
    a: &[&[Q8Block]; R],
    acc: &mut [__m256; R],
) {
    let ax = _mm256_sign_epi8(bx, bx);
    for r in 0..R {
        let ab = &a[r][b];
        let sy = _mm256_sign_epi8(load32(&ab.qs), bx);
        acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * ab.d), dot_us8(ax, sy), acc[r]);
    }
}

#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn q4_0<const R: usize>(w: &[u8], a: &[&[Q8Block]; R], out: &mut [f32; R]) {
    let mut acc = [_mm256_setzero_ps(); R];
    for (b, wb) in w.chunks_exact(Q4_0_BYTES).enumerate() {
        let bx = _mm256_sub_epi8(nibbles(arr(wb, 2)), _mm256_set1_epi8(8));
        signed_block(bx, f16_at(wb, 0), b, a, &mut acc);
    }
    for r in 0..R {
        out[r] = hsum(acc[r]);
    }
}

#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn q5_0<const R: usize>(w: &[u8], a: &[&[Q8Block]; R], out: &mut [f32; R]) {
    let mut acc = [_mm256_setzero_ps(); R];
    for (b, wb) in w.chunks_exact(Q5_0_BYTES).enumerate() {
        let qh = u32::from_le_bytes(*arr(wb, 2));
        // Where the fifth bit is clear, set the high nibble: q | 0xF0 = q - 16 as i8.
        let hi = _mm256_andnot_si256(bytes_from_bits(qh), _mm256_set1_epi8(0xF0u8 as i8));
        let bx = _mm256_or_si256(nibbles(arr(wb, 6)), hi);
        signed_block(bx, f16_at(wb, 0), b, a, &mut acc);
    }
    for r in 0..R {
        out[r] = hsum(acc[r]);
    }
}

#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn q8_0<const R: usize>(w: &[u8], a: &[&[Q8Block]; R], out: &mut [f32; R]) {
    let mut acc = [_mm256_setzero_ps(); R];
    for (b, wb) in w.chunks_exact(Q8_0_BYTES).enumerate() {
        let bx = load32::<u8>(arr(wb, 2));
        signed_block(bx, f16_at(wb, 0), b, a, &mut acc);
    }
    for r in 0..R {
        out[r] = hsum(acc[r]);
    }
}

#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn q4_1<const R: usize>(w: &[u8], a: &[&[Q8Block]; R], out: &mut [f32; R]) {
    let mut acc = [_mm256_setzero_ps(); R];
    let mut mins = [0f32; R];
    for (b, wb) in w.chunks_exact(Q4_1_BYTES).enumerate() {
        let d = f16_at(wb, 0);
        let m = f16_at(wb, 2);
        let qx = nibbles(arr(wb, 4));
        for r in 0..R {
            let ab = &a[r][b];
            let p = dot_us8(qx, load32(&ab.qs));
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * ab.d), p, acc[r]);
            mins[r] += m * ab.s;
        }
    }
    for r in 0..R {
        out[r] = hsum(acc[r]) + mins[r];
    }
}

#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn q4k<const R: usize>(w: &[u8], a: &[&[Q8KBlock]; R], out: &mut [f32; R]) {
    let m4 = _mm256_set1_epi8(0xF);
    let mut acc = [_mm256_setzero_ps(); R];
    let mut acc_m = [_mm_setzero_ps(); R];
    for (b, wb) in w.chunks_exact(Q4K_BYTES).enumerate() {
        let d = f16_at(wb, 0);
        let dmin = f16_at(wb, 2);
        // ggml's unpacking of the eight 6-bit scales (bytes 0..8) and mins (bytes 8..16).
        let sm = unpack_scales_k4(arr(wb, 4));
        let mins = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(i64::from_le_bytes(*arr(&sm, 8))));
        let mut sumi = [_mm256_setzero_si256(); R];
        for j in 0..QK_K / 64 {
            let bits = load32::<u8>(arr(wb, 16 + 32 * j));
            let ql = _mm256_and_si256(bits, m4);
            let qh = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
            let sl = _mm256_set1_epi16(sm[2 * j] as i16);
            let sh = _mm256_set1_epi16(sm[2 * j + 1] as i16);
            for r in 0..R {
                let ab = &a[r][b];
                let qs = &ab.qs;
                // The weights' scales times the activations' step multipliers (at most 63·16).
                let words = |s: usize| load_i16x16(arr(&ab.mult_words, 16 * s));
                let sl = _mm256_mullo_epi16(sl, words(2 * j));
                let sh = _mm256_mullo_epi16(sh, words(2 * j + 1));
                let pl = _mm256_madd_epi16(sl, _mm256_maddubs_epi16(ql, load32(arr(qs, 64 * j))));
                let ph =
                    _mm256_madd_epi16(sh, _mm256_maddubs_epi16(qh, load32(arr(qs, 64 * j + 32))));
                sumi[r] = _mm256_add_epi32(sumi[r], _mm256_add_epi32(pl, ph));
            }
        }
        for r in 0..R {
            let ab = &a[r][b];
            // Σ_j min_j · (bsums[2j] + bsums[2j+1]), four lanes.
            let bs = load_i16x16(&ab.bsums);
            let pair_sums =
                _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
            // The mins times the step multipliers (at most 63 · 16).
            let mins = _mm_mullo_epi16(mins, load_mult(&ab.mult));
            let prod = _mm_madd_epi16(mins, pair_sums);
            acc_m[r] = _mm_fmadd_ps(_mm_set1_ps(dmin * ab.d), _mm_cvtepi32_ps(prod), acc_m[r]);
            acc[r] = _mm256_fmadd_ps(
                _mm256_set1_ps(d * ab.d),
                _mm256_cvtepi32_ps(sumi[r]),
                acc[r],
            );
        }
    }
    for r in 0..R {
        out[r] = hsum(acc[r]) - hsum128(acc_m[r]);
    }
}

#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn q6k<const R: usize>(w: &[u8], a: &[&[Q8KBlock]; R], out: &mut [f32; R]) {
    let m4 = _mm256_set1_epi8(0xF);
    let m2 = _mm256_set1_epi8(3);
    let m32s = _mm256_set1_epi8(32);
    let mut acc = [_mm256_setzero_ps(); R];
    for (b, wb) in w.chunks_exact(Q6K_BYTES).enumerate() {
        let d = f16_at(wb, 208);
        let scales = load16(arr(wb, 192));
        let mut sumi = [_mm256_setzero_si256(); R];
        for j in 0..QK_K / 128 {
            let sc: [__m256i; 4] = std::array::from_fn(|k| {
                _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, load16(&SCALE_SHUFFLE[4 * j + k])))
            });
            let b1 = load32::<u8>(arr(wb, 64 * j));
            let b2 = load32::<u8>(arr(wb, 64 * j + 32));
            let bh = load32::<u8>(arr(wb, 128 + 32 * j));
            let h = |s: i32| {
                let v = match s {
                    0 => bh,
                    2 => _mm256_srli_epi16(bh, 2),
                    4 => _mm256_srli_epi16(bh, 4),
                    _ => _mm256_srli_epi16(bh, 6),
                };
                _mm256_slli_epi16(_mm256_and_si256(v, m2), 4)
            };
            let q = [
                _mm256_or_si256(_mm256_and_si256(b1, m4), h(0)),
                _mm256_or_si256(_mm256_and_si256(b2, m4), h(2)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b1, 4), m4), h(4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b2, 4), m4), h(6)),
            ];
            for r in 0..R {
                let ab = &a[r][b];
                for k in 0..4 {
                    // (q - 32) · y as q · y - 32 · y, in this order as in ggml (and candle):
                    // the 16-bit sums stay centred, so the lanes stay small.
                    let y = load32(arr(&ab.qs, 128 * j + 32 * k));
                    let p = _mm256_sub_epi16(
                        _mm256_maddubs_epi16(q[k], y),
                        _mm256_maddubs_epi16(m32s, y),
                    );
                    // Both scales of these 32 quants times their step multiplier.
                    let words = load_i16x16(arr(&ab.mult_words, 16 * (4 * j + k)));
                    let sc = _mm256_mullo_epi16(sc[k], words);
                    sumi[r] = _mm256_add_epi32(sumi[r], _mm256_madd_epi16(sc, p));
                }
            }
        }
        for r in 0..R {
            let ab = &a[r][b];
            acc[r] = _mm256_fmadd_ps(
                _mm256_set1_ps(d * ab.d),
                _mm256_cvtepi32_ps(sumi[r]),
                acc[r],
            );
        }
    }
    for r in 0..R {
        out[r] = hsum(acc[r]);
    }
}

macro_rules! wrapper {
    ($(#[$m:meta])* $name:ident, $imp:ident, $act:ty, $bytes:expr) => {
        $(#[$m])*
        /// `w` holds `out.len()` weight rows; `out[c][r]` = row `c` of `w` · `a[r]`.
        pub fn $name<const R: usize>(_: Avx2, w: &[u8], a: &[&[$act]; R], out: &mut [[f32; R]]) {
            #[target_feature(enable = "avx2,fma,f16c")]
            fn rows<const R: usize>(
                w: &[u8],
                row_bytes: usize,
                a: &[&[$act]; R],
                out: &mut [[f32; R]],
            ) {
                for (i, (wr, o)) in w.chunks_exact(row_bytes).zip(out.iter_mut()).enumerate() {
                    if R == 1 {
                        prefetch_ahead(w, i * row_bytes, row_bytes);
                    }
                    $imp(wr, a, o);
                }
            }
            if out.is_empty() {
                assert!(w.is_empty(), "weights without outputs");
                return;
            }
            let row_bytes = w.len() / out.len();
            assert_eq!(row_bytes * out.len(), w.len(), "weights are not whole rows");
            let nb = row_bytes / $bytes;
            assert_eq!(nb * $bytes, row_bytes, "weight row is not whole blocks");
            assert!(a.iter().all(|row| row.len() == nb), "activation rows have the wrong length");
            // SAFETY: the `Avx2` token proves the CPU has the features `rows` and `$imp` are
            // compiled for; lengths are checked above (and every access inside is
            // bounds-checked).
            unsafe { rows(w, row_bytes, a, out) }
        }
    };
}

wrapper!(
    /// Q4_0 weights × Q8_0 activations.
    dot_q4_0, q4_0, Q8Block, Q4_0_BYTES
);
wrapper!(
    /// Q4_1 weights × Q8_1 activations.
    dot_q4_1, q4_1, Q8Block, Q4_1_BYTES
);
wrapper!(
    /// Q5_0 weights × Q8_0 activations.
    dot_q5_0, q5_0, Q8Block, Q5_0_BYTES
);
wrapper!(
    /// Q8_0 weights × Q8_0 activations.
    dot_q8_0, q8_0, Q8Block, Q8_0_BYTES
);
wrapper!(
    /// Q4_K weights × Q8_K activations.
    dot_q4k, q4k, Q8KBlock, Q4K_BYTES
);
wrapper!(
    /// Q6_K weights × Q8_K activations.
    dot_q6k, q6k, Q8KBlock, Q6K_BYTES
);
