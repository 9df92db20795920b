//! The AVX2 kernels of the k-quant sixteen-row layouts: Q4_K×16, Q5_K×16 and Q6_K×16, whose
//! super-blocks of 256 carry a scale per sub-block. Soundness as in [`super`].

use super::{broadcast4, broadcasts, dot_small, dpbusd, f16x8, groups, half_bytes, nibbles8};
use super::{bytes8, u8x8_i32, with_fifth_bits, word_sums, Acc, BytePath};
use crate::engine::model::kernels::packed::{self, q4k_x16, q5k_x16, q6k_x16};
use crate::engine::model::kernels::x86::avx2::ops::{arr, k4_scales_and_mins, load16, load_i16x16};
use crate::engine::model::kernels::Q8KBlock;
use core::arch::x86_64::*;

/// `Q4_K×16` weights × [`Q8KBlock`] activations, the scales compact or a byte each.
pub fn dot_q4k_x16<P: BytePath, const R: usize, const COMPACT: bool>(
    t: P,
    w: &[u8],
    a: &[&[Q8KBlock]; R],
    out: &mut [[f32; R]],
) {
    if COMPACT {
        const B: usize = q4k_x16::COMPACT_BLOCK_BYTES;
        let nb = packed::check(w, a, out.len(), B);
        groups(t, w, nb, out, |block: &[u8; B], b, acc| {
            // SAFETY: as in `q8::dot_q4_1_x16`.
            unsafe { q4k_block::<P, R, B, false, true>(block, b, a, acc) }
        })
    } else {
        const B: usize = q4k_x16::BLOCK_BYTES;
        let nb = packed::check(w, a, out.len(), B);
        groups(t, w, nb, out, |block: &[u8; B], b, acc| {
            // SAFETY: as in `q8::dot_q4_1_x16`.
            unsafe { q4k_block::<P, R, B, false, false>(block, b, a, acc) }
        })
    }
}

/// `Q5_K×16` weights × [`Q8KBlock`] activations, the scales compact or a byte each.
pub fn dot_q5k_x16<P: BytePath, const R: usize, const COMPACT: bool>(
    t: P,
    w: &[u8],
    a: &[&[Q8KBlock]; R],
    out: &mut [[f32; R]],
) {
    if COMPACT {
        const B: usize = q5k_x16::COMPACT_BLOCK_BYTES;
        let nb = packed::check(w, a, out.len(), B);
        groups(t, w, nb, out, |block: &[u8; B], b, acc| {
            // SAFETY: as in `q8::dot_q4_1_x16`.
            unsafe { q4k_block::<P, R, B, true, true>(block, b, a, acc) }
        })
    } else {
        const B: usize = q5k_x16::BLOCK_BYTES;
        let nb = packed::check(w, a, out.len(), B);
        groups(t, w, nb, out, |block: &[u8; B], b, acc| {
            // SAFETY: as in `q8::dot_q4_1_x16`.
            unsafe { q4k_block::<P, R, B, true, false>(block, b, a, acc) }
        })
    }
}

/// `Q6_K×16` weights × [`Q8KBlock`] activations.
pub fn dot_q6k_x16<P: BytePath, const R: usize>(
    t: P,
    w: &[u8],
    a: &[&[Q8KBlock]; R],
    out: &mut [[f32; R]],
) {
    let nb = packed::check(w, a, out.len(), q6k_x16::BLOCK_BYTES);
    groups(
        t,
        w,
        nb,
        out,
        |block: &[u8; q6k_x16::BLOCK_BYTES], b, acc| {
            // SAFETY: as in `q8::dot_q4_1_x16`.
            unsafe { q6k_block::<P, R>(block, b, a, acc) }
        },
    )
}

/// As the reference: each sub-block's quant · activation sums, weighted by the weights'
/// scale times the activations' step multiplier, summed over the super-block in integers;
/// the mins' term in floats; then `d`, `dmin` and the activations' base step.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn q4k_block<
    P: BytePath,
    const R: usize,
    const B: usize,
    const FIFTH: bool,
    const COMPACT: bool,
>(
    block: &[u8; B],
    b: usize,
    a: &[&[Q8KBlock]; R],
    acc: &mut Acc<R>,
) {
    use q4k_x16::{D, DMIN};
    let mut unpacked = [[0; 128]; 2];
    let (scales, mins) = k4_scales_and_mins::<COMPACT>(block, &mut unpacked);
    let qs = q4k_x16::qs(COMPACT);
    let mut isum = [[_mm256_setzero_si256(); 2]; R];
    for s in 0..8 {
        let scales = row_bytes_i32::<COMPACT>(scales, 16 * s);
        if FIFTH {
            // Q5_K's fifth bits make a group's quants dearer to unpack: a half's eight groups
            // are unpacked once for all the rows (eight at a time, `Isa::wide_tiles`).
            for h in 0..2 {
                let q = nibbles8(block, qs + 256 * s, h);
                let q = with_fifth_bits(q, half_bytes(block, q5k_x16::high(COMPACT) + 64 * s, h));
                for (ar, isum) in a.iter().zip(isum.iter_mut()) {
                    let y: [__m256i; 8] = broadcasts(&ar[b].qs[32 * s..]);
                    let mult = load_i16x16(arr(&ar[b].mult_words, 16 * s));
                    // Five-bit quants: four byte-pair products in 16 bits.
                    isum[h] = weighted_dot::<P, 4>(&q, &y, scales[h], mult, isum[h]);
                }
            }
        } else {
            sub_block_dots::<P, R, B>(block, qs + 256 * s, s, a, b, scales, &mut isum);
        }
    }
    for h in 0..2 {
        let mut msum = [_mm256_setzero_ps(); R];
        for s in 0..8 {
            let mins = if COMPACT {
                row_bytes_i32::<true>(mins, 16 * s)[h]
            } else {
                u8x8_i32(mins, 16 * s + 8 * h)
            };
            let mins = _mm256_cvtepi32_ps(mins);
            for (ar, msum) in a.iter().zip(msum.iter_mut()) {
                *msum = _mm256_fmadd_ps(mins, _mm256_set1_ps(ar[b].sums_f32[s]), *msum);
            }
        }
        let d = f16x8(block, D + 16 * h);
        let dmin = f16x8(block, DMIN + 16 * h);
        for (r, ar) in a.iter().enumerate() {
            let sum = _mm256_mul_ps(_mm256_cvtepi32_ps(isum[r][h]), d);
            let sum = _mm256_fnmadd_ps(dmin, msum[r], sum);
            acc[r][h] = _mm256_fmadd_ps(sum, _mm256_set1_ps(ar[b].d), acc[r][h]);
        }
    }
}

/// The sixteen bytes at `at` of a group's scales or mins (one per row), each half's eight as
/// `i32` lanes. `UNPACKED`: the bytes were just stored, sixteen at a time, by
/// [`k4_scales_and_mins`]; they are then loaded as they were stored, sixteen at a time, since
/// a load of the upper eight alone is not forwarded from the store and waits for it to reach
/// the cache, which it does only after every older load, the block's misses among them. So
/// read, a one-row product over a matrix larger than the caches ran at half the memory's
/// speed (two threads, a 116 MB compact Q4_K×16 matrix: 4.6 ms, against 2.4 with a byte
/// each; read as stored, 2.3 ms).
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn row_bytes_i32<const UNPACKED: bool>(bytes: &[u8; 128], at: usize) -> [__m256i; 2] {
    if !UNPACKED {
        return [u8x8_i32(bytes, at), u8x8_i32(bytes, at + 8)];
    }
    let both = load16(arr(bytes, at));
    let high = _mm_unpackhi_epi64(both, both);
    [_mm256_cvtepu8_epi32(both), _mm256_cvtepu8_epi32(high)]
}

/// `isum[r][h] += Σ_g (scale · mult) · (q[g] · y[4g..4g + 4])` per 32-bit lane of half `h`,
/// exactly, for sub-block `s` (its quants at `at`) of a group's Q4_K×16 super-block and of
/// each activation row's super-block `b` (quants `y`, step multiplier `mult`): the weights'
/// integer scales (`scales[h]`: one per lane, below 2⁸) times the row's multiplier (at most
/// 16) fit a word.
///
/// One group of four quants at a time, for both halves and every row: a row's broadcast
/// serves two `vpmaddubsw`, and only a group's quants and a 16-bit sum per row and half are
/// live (all eight groups' byte-pair products add up in 16 bits: 8 · 2 · 15 · 128 < 2¹⁵, as
/// in [`super::word_sums`]). Unpacking all eight
/// groups of a half first left no registers for the rows. With AVX-VNNI `vpdpbusd` sums a
/// row's groups and the weight multiplies the 32-bit sum; the integers are the same.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn sub_block_dots<P: BytePath, const R: usize, const B: usize>(
    block: &[u8; B],
    at: usize,
    s: usize,
    a: &[&[Q8KBlock]; R],
    b: usize,
    scales: [__m256i; 2],
    isum: &mut [[__m256i; 2]; R],
) {
    if P::VNNI {
        let mut dots = [[_mm256_setzero_si256(); 2]; R];
        for g in 0..8 {
            // Plain calls, not a closure: through one LLVM left them out of line.
            let q = [group_quants(block, at, g, 0), group_quants(block, at, g, 1)];
            for (ar, dots) in a.iter().zip(dots.iter_mut()) {
                let yg = broadcast4(&ar[b].qs[32 * s..], g);
                for h in 0..2 {
                    // SAFETY: `P::VNNI` proves AVX-VNNI (the `BytePath` contract).
                    dots[h] = unsafe { dpbusd(dots[h], q[h], yg) };
                }
            }
        }
        for ((ar, isum), dots) in a.iter().zip(isum.iter_mut()).zip(dots) {
            let m = load_i16x16(arr(&ar[b].mult_words, 16 * s));
            for h in 0..2 {
                isum[h] = add_weighted_dot(isum[h], dots[h], scales[h], m);
            }
        }
        return;
    }
    let scale_words = [both_words(scales[0]), both_words(scales[1])];
    let mut pairs = [[_mm256_setzero_si256(); 2]; R];
    for g in 0..8 {
        // Plain calls, not a closure: through one LLVM left them out of line.
        let q = [group_quants(block, at, g, 0), group_quants(block, at, g, 1)];
        for (ar, pairs) in a.iter().zip(pairs.iter_mut()) {
            let yg = broadcast4(&ar[b].qs[32 * s..], g);
            for h in 0..2 {
                let p = _mm256_maddubs_epi16(q[h], yg);
                pairs[h] = if g == 0 {
                    p
                } else {
                    _mm256_add_epi16(pairs[h], p)
                };
            }
        }
    }
    for ((ar, isum), pairs) in a.iter().zip(isum.iter_mut()).zip(pairs) {
        let m = load_i16x16(arr(&ar[b].mult_words, 16 * s));
        for h in 0..2 {
            let weight = _mm256_mullo_epi16(scale_words[h], m);
            isum[h] = _mm256_add_epi32(isum[h], _mm256_madd_epi16(pairs[h], weight));
        }
    }
}

/// Quants `4g..` of each row of half `h` of a sub-block whose four 64-byte runs of nibbles
/// start at `at` (one group of [`nibbles8`]).
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn group_quants(block: &[u8], at: usize, g: usize, h: usize) -> __m256i {
    let packed = half_bytes(block, at + 64 * (g % 4), h);
    let nib = if g < 4 {
        packed
    } else {
        _mm256_srli_epi16(packed, 4)
    };
    _mm256_and_si256(nib, _mm256_set1_epi8(0xF))
}

/// `isum + Σ_g (scale · mult) · (q[g] · y[4g..4g + 4])` per 32-bit lane, exactly: one half's
/// sub-block against one activation row, weighted by the weights' integer scales (`scales`:
/// one per lane, below 2⁸, high words zero) times the row's step multiplier (`mult`: sixteen
/// copies, at most 16), which fit a word. `IN16` as in [`super::word_sums`]. With AVX-VNNI
/// `vpdpbusd` sums the groups and the weight multiplies the 32-bit sum: the same integer.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn weighted_dot<P: BytePath, const IN16: usize>(
    q: &[__m256i; 8],
    y: &[__m256i; 8],
    scales: __m256i,
    mult: __m256i,
    isum: __m256i,
) -> __m256i {
    if P::VNNI {
        let dot = dot_small::<P, 8, IN16>(q, y, _mm256_setzero_si256());
        return add_weighted_dot(isum, dot, scales, mult);
    }
    word_sums::<8, IN16>(q, y, _mm256_mullo_epi16(both_words(scales), mult), isum)
}

/// Each 32-bit lane's value (below 2¹⁵, high word zero) in both of its words, as `vpmaddwd`
/// pairs them.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn both_words(x: __m256i) -> __m256i {
    _mm256_or_si256(x, _mm256_slli_epi32(x, 16))
}

/// `isum + (scale · mult) · dot` per 32-bit lane, for AVX-VNNI's 32-bit sums: `scales` has
/// zero high words, so its word products with the multipliers (`mult`, sixteen copies) are
/// the 32-bit ones.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn add_weighted_dot(isum: __m256i, dot: __m256i, scales: __m256i, mult: __m256i) -> __m256i {
    let weight = _mm256_mullo_epi16(scales, mult);
    _mm256_add_epi32(isum, _mm256_mullo_epi32(dot, weight))
}

/// As the reference, per half: the 6-bit quants (nibbles, and the two high bits moved to
/// bits 4 and 5), each 16-element sub-block's integer sum weighted by its scale times the
/// activations' step multiplier, less the +32 offset of the quants (the scales against the
/// activations' scaled sums of 16, `vpmaddwd`), all summed over the super-block in integers;
/// then `d` and the activations' base step.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn q6k_block<P: BytePath, const R: usize>(
    block: &[u8; q6k_x16::BLOCK_BYTES],
    b: usize,
    a: &[&[Q8KBlock]; R],
    acc: &mut Acc<R>,
) {
    use q6k_x16::{D, QH, QL};
    let m2 = _mm256_set1_epi8(0x30);
    for h in 0..2 {
        let mut isum = [_mm256_setzero_si256(); R];
        for s in 0..8 {
            let (first, second) = sub_block_scales(block, s, h);
            // Each lane's scale in both of its words, as the weights' `vpmaddwd` takes it.
            let scale_words = [
                _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(first, first)),
                _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(second, second)),
            ];
            let nib = nibbles8(block, QL + 256 * s, h);
            let high = [
                half_bytes(block, QH + 128 * s, h),
                half_bytes(block, QH + 128 * s + 64, h),
            ];
            let q: [__m256i; 8] = std::array::from_fn(|g| {
                let hi = high[g / 4];
                let hi = match g % 4 {
                    0 => _mm256_slli_epi16(hi, 4),
                    1 => _mm256_slli_epi16(hi, 2),
                    2 => hi,
                    _ => _mm256_srli_epi16(hi, 2),
                };
                _mm256_or_si256(nib[g], _mm256_and_si256(hi, m2))
            });
            let halves: [&[__m256i; 4]; 2] = [arr(&q, 0), arr(&q, 4)];
            for (ar, isum) in a.iter().zip(isum.iter_mut()) {
                let ab = &ar[b];
                let mult = load_i16x16(arr(&ab.mult_words, 16 * s));
                for (k, (q, scale_words)) in halves.into_iter().zip(scale_words).enumerate() {
                    let y: [__m256i; 4] = broadcasts(&ab.qs[16 * (2 * s + k)..]);
                    *isum = if P::VNNI {
                        // `vpdpbusd`'s 32-bit sum times the weight: the same integer.
                        let dot = dot_small::<P, 4, 2>(q, &y, _mm256_setzero_si256());
                        let low = _mm256_and_si256(mult, _mm256_set1_epi32(0xFFFF));
                        let weight = _mm256_madd_epi16(scale_words, low);
                        _mm256_add_epi32(*isum, _mm256_mullo_epi32(dot, weight))
                    } else {
                        // Six-bit quants: two byte-pair products in 16 bits.
                        let weight = _mm256_mullo_epi16(scale_words, mult);
                        word_sums::<4, 2>(q, &y, weight, *isum)
                    };
                }
            }
        }
        // The quants' +32 offset in a pass of its own: it does not depend on the quants,
        // and summed beside the products it held a register per activation row in a loop
        // that already spills (a single-thread 128-row Q6_K×16 matmul, 4096 × 3072: 43 →
        // 50 GMAC/s, the means of ~25 alternating runs; decode unchanged within noise).
        let scale_pairs: [__m256i; 8] = std::array::from_fn(|s| {
            let (first, second) = sub_block_scales(block, s, h);
            _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(first, second))
        });
        for (ar, isum) in a.iter().zip(isum.iter_mut()) {
            let mut offset = _mm256_setzero_si256();
            for (s, &pairs) in scale_pairs.iter().enumerate() {
                offset = _mm256_add_epi32(offset, offset_sums(pairs, &ar[b], s));
            }
            // The quants are stored +32 (wrapping, as the reference's sums).
            *isum = _mm256_sub_epi32(*isum, _mm256_slli_epi32(offset, 5));
        }
        let d = f16x8(block, D + 16 * h);
        for ((ar, acc), isum) in a.iter().zip(acc.iter_mut()).zip(isum) {
            let sum = _mm256_mul_ps(_mm256_cvtepi32_ps(isum), d);
            acc[h] = _mm256_fmadd_ps(sum, _mm256_set1_ps(ar[b].d), acc[h]);
        }
    }
}

/// Half `h`'s scales of the two 16-element sub-blocks of chunk `s` of a Q6_K×16 super-block:
/// eight signed bytes each (one per row), in the low half of a vector.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn sub_block_scales(block: &[u8], s: usize, h: usize) -> (__m128i, __m128i) {
    let at = q6k_x16::SCALES + 32 * s + 8 * h;
    (bytes8(block, at), bytes8(block, at + 16))
}

/// The +32 offset's share of chunk `s`, over 32: `Σ_t sc_t · mult_t · Σ y` over its two
/// sub-blocks (the scales `pairs`, side by side per lane, against the activations' scaled
/// sums of 16, `vpmaddwd`).
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn offset_sums(pairs: __m256i, ab: &Q8KBlock, s: usize) -> __m256i {
    let sums: &[i16; 2] = arr(&ab.mult_bsums, 2 * s);
    let sums = i32::from(sums[0] as u16) | i32::from(sums[1]) << 16;
    _mm256_madd_epi16(pairs, _mm256_set1_epi32(sums))
}
