//! AVX2 kernels for the sixteen-row layouts ([`crate::engine::model::kernels::packed`]): the
//! layouts AVX-512 VNNI runs, in two 256-bit halves of eight rows each, four activation bytes
//! broadcast per `vpmaddubsw`. [`q8`] holds the 32-element layouts' kernels, [`kquant`] the
//! k-quants'; here is what they share: the driver over groups and blocks, and the byte products.
//!
//! In ggml's layout every weight row needs its own unpacking, horizontal sum and float
//! multiply-add per block; here one unpacking, one conversion and one multiply-add serve eight
//! rows, so a block of sixteen rows costs about half the operations.
//!
//! The integer sums are exact (Q4_1's, Q4_K's and Q5_0's pairs stay far below `i16`'s limit; Q8_0's
//! biased quants are taken back to signed ones first, so `|q| ≤ 128` pairs reach at most
//! 32,512), and the float steps are the plain references' in their order, so the results are
//! bit-identical to them and to the VNNI kernels. Soundness as in [`crate::engine::model::kernels::x86::avx2`]: every
//! `#[target_feature]` function runs only behind an [`Avx2`] token, after the lengths are
//! checked, and every load goes through fixed-size arrays.

mod kquant;
mod q8;

pub use kquant::{dot_q4k_x16, dot_q5k_x16, dot_q6k_x16};
pub use q8::{dot_q4_1_x16, dot_q5_0_x16, dot_q8_0_x16};

use super::ops::{arr, load16, load32};
use super::Avx2;
use crate::engine::model::kernels::packed::{each_group, GROUP};
use crate::engine::model::kernels::x86::prefetch::prefetch_ahead;
use core::arch::x86_64::*;

/// Rows in one 256-bit half of a group.
const HALF: usize = GROUP / 2;

/// A token for these kernels, and how they multiply bytes: `vpmaddubsw` + `vpmaddwd` on AVX2,
/// AVX-VNNI's `vpdpbusd` where `VNNI` says the CPU has it. The integer sums are the same, so
/// the two paths give the same bits.
///
/// # Safety
/// A value of the type must exist only on a CPU with AVX2, FMA and F16C, and, if `VNNI` is
/// true, AVX-VNNI.
pub unsafe trait BytePath: Copy {
    const VNNI: bool;
}

// SAFETY: an `Avx2` exists only where `Avx2::detect` found AVX2, FMA and F16C.
unsafe impl BytePath for Avx2 {
    const VNNI: bool = false;
}

/// Per activation row, the two halves' float sums (lane `i` of half `h`: row `8h + i`).
pub(super) type Acc<const R: usize> = [[__m256; 2]; R];

/// For each group of rows and each of its `nb` blocks of `B` bytes runs `block(bytes, b,
/// acc)`, then writes the sums to `out` (lengths checked by the caller). The loop is compiled
/// with AVX-VNNI enabled for the paths that have it.
pub(super) fn groups<P: BytePath, const R: usize, const B: usize>(
    _: P,
    w: &[u8],
    nb: usize,
    out: &mut [[f32; R]],
    block: impl FnMut(&[u8; B], usize, &mut Acc<R>),
) {
    // Compiled for AVX2 alone, so it inlines into both entry points below.
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    fn each<const R: usize, const B: usize>(
        w: &[u8],
        nb: usize,
        out: &mut [[f32; R]],
        mut block: impl FnMut(&[u8; B], usize, &mut Acc<R>),
    ) {
        each_group(out, |g, lanes| {
            let mut acc = [[_mm256_setzero_ps(); 2]; R];
            for b in 0..nb {
                let at = (g * nb + b) * B;
                if R <= 2 {
                    // Decode (and a verify pass of two, or two streams) reads each weight
                    // once from memory (see `prefetch_ahead`).
                    prefetch_ahead(w, at, B);
                }
                block(arr(w, at), b, &mut acc);
            }
            for (lane, halves) in lanes.iter_mut().zip(acc) {
                for (h, sum) in halves.into_iter().enumerate() {
                    let dst: &mut [f32; HALF] = (&mut lane[HALF * h..HALF * (h + 1)])
                        .try_into()
                        .expect("a half is eight lanes");
                    // SAFETY: `dst` is 8 writable f32; storeu has no alignment requirement.
                    unsafe { _mm256_storeu_ps(dst.as_mut_ptr(), sum) };
                }
            }
        });
    }
    #[target_feature(enable = "avx2,fma,f16c")]
    fn plain<const R: usize, const B: usize>(
        w: &[u8],
        nb: usize,
        out: &mut [[f32; R]],
        block: impl FnMut(&[u8; B], usize, &mut Acc<R>),
    ) {
        each(w, nb, out, block)
    }
    // The same loop with AVX-VNNI on: `dpbusd`'s assembly needs no feature, but the
    // attribute keeps the CPU's requirement written where the instruction runs.
    #[target_feature(enable = "avx2,fma,f16c,avxvnni")]
    fn vnni<const R: usize, const B: usize>(
        w: &[u8],
        nb: usize,
        out: &mut [[f32; R]],
        block: impl FnMut(&[u8; B], usize, &mut Acc<R>),
    ) {
        each(w, nb, out, block)
    }
    if P::VNNI {
        // SAFETY: a `BytePath` with `VNNI` proves AVX-VNNI as well (its contract).
        unsafe { vnni(w, nb, out, block) }
    } else {
        // SAFETY: every `BytePath` token proves AVX2, FMA and F16C.
        unsafe { plain(w, nb, out, block) }
    }
}

/// The eight f16 values at `at` (one half's rows) as f32.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn f16x8(block: &[u8], at: usize) -> __m256 {
    _mm256_cvtph_ps(load16(arr(block, at)))
}

/// The four activation bytes `y[4g..4g + 4]` in every 32-bit lane.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn broadcast4(y: &[i8], g: usize) -> __m256i {
    let four: &[i8; 4] = arr(y, 4 * g);
    _mm256_set1_epi32(i32::from_le_bytes(four.map(|v| v as u8)))
}

/// `broadcast4(y, g)` for g = 0..G. A plain loop, not `array::from_fn`: through its closure
/// LLVM left `broadcast4` out of line in the Q6_K kernel, a call, a store and a `vzeroupper`
/// per four bytes.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn broadcasts<const G: usize>(y: &[i8]) -> [__m256i; G] {
    let mut out = [_mm256_setzero_si256(); G];
    for (g, o) in out.iter_mut().enumerate() {
        *o = broadcast4(y, g);
    }
    out
}

/// `start + Σ_g q[g] · y[4g..4g + 4]` per 32-bit lane over `N` groups of unsigned quants.
/// With AVX-VNNI one `vpdpbusd` per group does it; on AVX2 [`word_sums`] with ones. The sum
/// is the same integer. `IN16`: see [`word_sums`].
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn dot_small<P: BytePath, const N: usize, const IN16: usize>(
    q: &[__m256i; N],
    y: &[__m256i; N],
    start: __m256i,
) -> __m256i {
    if P::VNNI {
        let mut sum = start;
        for (&q, &y) in q.iter().zip(y) {
            // SAFETY: `P::VNNI` proves AVX-VNNI (the `BytePath` contract).
            sum = unsafe { dpbusd(sum, q, y) };
        }
        return sum;
    }
    word_sums::<N, IN16>(q, y, _mm256_set1_epi16(1), start)
}

/// `start + Σ_g words · (q[g] · y[4g..4g + 4])` per 32-bit lane (`words`: the same `i16` in
/// both halves of a lane), exactly, with `vpmaddubsw` and `vpmaddwd`. `IN16` byte-pair
/// products are added in 16 bits before each `vpmaddwd`, as many as the quants allow: each
/// `vpmaddubsw` word is at most 2 · q_max · 128, so 8 for 4-bit quants (30,720), 4 for 5-bit
/// (31,744), 2 for 6-bit (32,256), all below 2¹⁵. Fewer `vpmaddwd`s and 32-bit adds: for
/// 4-bit quants 17 operations per eight groups instead of 20.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn word_sums<const N: usize, const IN16: usize>(
    q: &[__m256i; N],
    y: &[__m256i; N],
    words: __m256i,
    start: __m256i,
) -> __m256i {
    const { assert!(IN16.is_power_of_two() && N.is_multiple_of(IN16)) };
    let mut sum = start;
    for c in (0..N).step_by(IN16) {
        let mut p = [_mm256_setzero_si256(); IN16];
        for (i, p) in p.iter_mut().enumerate() {
            *p = _mm256_maddubs_epi16(q[c + i], y[c + i]);
        }
        // A tree, so the additions do not wait on each other in a chain.
        let mut width = IN16;
        while width > 1 {
            width /= 2;
            for i in 0..width {
                p[i] = _mm256_add_epi16(p[2 * i], p[2 * i + 1]);
            }
        }
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(words, p[0]));
    }
    sum
}

/// `sum + Σ u · s` over each lane's four byte pairs (`u` unsigned, `s` signed, no pair's two
/// products above 2¹⁵ together): `vpdpbusd` with AVX-VNNI, else `vpmaddubsw` + `vpmaddwd`.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn add_dot4<P: BytePath>(sum: __m256i, u: __m256i, s: __m256i) -> __m256i {
    if P::VNNI {
        // SAFETY: `P::VNNI` proves AVX-VNNI (the `BytePath` contract).
        return unsafe { dpbusd(sum, u, s) };
    }
    let pairs = _mm256_maddubs_epi16(u, s);
    _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_set1_epi16(1), pairs))
}

/// `acc + Σ u·s` per 32-bit lane (four unsigned × signed byte products, exact): AVX-VNNI's
/// `vpdpbusd`, VEX-encoded (an EVEX one would need AVX-512). Inline assembly, so the
/// functions around it stay compiled for AVX2 alone and serve both paths.
///
/// # Safety
/// The CPU must have AVX-VNNI.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) unsafe fn dpbusd(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
    let mut acc = acc;
    // SAFETY: the caller guarantees AVX-VNNI; the instruction reads and writes registers only.
    unsafe {
        std::arch::asm!(
            "{{vex}} vpdpbusd {acc}, {u}, {s}",
            acc = inout(ymm_reg) acc,
            u = in(ymm_reg) u,
            s = in(ymm_reg) s,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    acc
}

/// Quant bytes `at + 64 g ..` of half `h` (32 bytes: rows `8h..8h + 8`, four bytes each).
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn half_bytes(block: &[u8], at: usize, h: usize) -> __m256i {
    load32::<u8>(arr(block, at + 32 * h))
}

/// Quants `4g..` of each row of half `h`, g = 0..8, from the four 64-byte runs at `at + 64 k`:
/// the low nibbles of run `g` for g < 4, then the high ones (the layouts' shared packing).
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn nibbles8(block: &[u8], at: usize, h: usize) -> [__m256i; 8] {
    let m4 = _mm256_set1_epi8(0xF);
    let packed: [__m256i; 4] = std::array::from_fn(|k| half_bytes(block, at + 64 * k, h));
    std::array::from_fn(|g| {
        let p = packed[g % 4];
        _mm256_and_si256(if g < 4 { p } else { _mm256_srli_epi16(p, 4) }, m4)
    })
}

/// The five-bit quants of a half: the nibbles `nib`, and bit `g` of the high-bit bytes `hi`
/// moved to bit 4 of group `g` (the Q5_0×16 and Q5_K×16 layouts' packing).
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn with_fifth_bits(nib: [__m256i; 8], hi: __m256i) -> [__m256i; 8] {
    let bit4 = _mm256_set1_epi8(0x10);
    std::array::from_fn(|g| {
        let fifth = match g {
            0 => _mm256_slli_epi16(hi, 4),
            1 => _mm256_slli_epi16(hi, 3),
            2 => _mm256_slli_epi16(hi, 2),
            3 => _mm256_slli_epi16(hi, 1),
            4 => hi,
            5 => _mm256_srli_epi16(hi, 1),
            6 => _mm256_srli_epi16(hi, 2),
            _ => _mm256_srli_epi16(hi, 3),
        };
        _mm256_or_si256(nib[g], _mm256_and_si256(fifth, bit4))
    })
}

/// Eight bytes at `at` (one half's rows) in the low half of a 128-bit vector.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn bytes8(block: &[u8], at: usize) -> __m128i {
    _mm_cvtsi64_si128(i64::from_le_bytes(*arr(block, at)))
}

/// Eight bytes at `at` (one half's rows), one per 32-bit lane.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
pub(super) fn u8x8_i32(block: &[u8], at: usize) -> __m256i {
    _mm256_cvtepu8_epi32(bytes8(block, at))
}
