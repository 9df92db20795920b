//! AVX2 kernels for the sixteen-row layouts ([`crate::engine::model::kernels::packed::q4_1_x16`], [`crate::engine::model::kernels::packed::q5_0_x16`],
//! [`crate::engine::model::kernels::packed::q8_0_x16`], [`crate::engine::model::kernels::packed::q4k_x16`]): the layouts AVX-512 VNNI runs, in two 256-bit
//! halves of eight rows each, four activation bytes broadcast per `vpmaddubsw`.
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

use super::ops::{arr, load16, load32};
use super::Avx2;
use crate::engine::model::kernels::packed::{self, each_group, GROUP};
use crate::engine::model::kernels::packed::{
    q4_1_x16, q4k_x16, q5_0_x16, q5k_x16, q6k_x16, q8_0_x16,
};
use crate::engine::model::kernels::x86::prefetch::prefetch_ahead;
use crate::engine::model::kernels::{Q8Block, Q8KBlock};
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

/// `Q4_1×16` weights × Q8_1 activations: `out[c][r]` = row `c` · `a[r]`.
pub fn dot_q4_1_x16<P: BytePath, const R: usize>(
    t: P,
    w: &[u8],
    a: &[&[Q8Block]; R],
    out: &mut [[f32; R]],
) {
    use q4_1_x16::BLOCK_BYTES;
    let nb = packed::check(w, a, out.len(), BLOCK_BYTES);
    groups(t, w, nb, out, |block: &[u8; BLOCK_BYTES], b, acc| {
        // SAFETY: `groups` runs this with the features `q4_1_block` is compiled for (the
        // `Avx2` token proves them), after checking the lengths.
        unsafe { q4_1_block::<P, R>(block, b, a, acc) }
    })
}

/// `Q5_0×16` weights × Q8_0 activations.
pub fn dot_q5_0_x16<P: BytePath, const R: usize>(
    t: P,
    w: &[u8],
    a: &[&[Q8Block]; R],
    out: &mut [[f32; R]],
) {
    use q5_0_x16::BLOCK_BYTES;
    let offsets = q5_0_x16::offsets(a, q5_0_x16::check(w, a, out.len()));
    groups(
        t,
        w,
        offsets.len(),
        out,
        |block: &[u8; BLOCK_BYTES], b, acc| {
            // SAFETY: as in `dot_q4_1_x16`.
            unsafe { q5_0_block::<P, R>(block, b, a, &offsets[b], acc) }
        },
    )
}

/// `Q8_0×16` weights × Q8_0 activations.
pub fn dot_q8_0_x16<P: BytePath, const R: usize>(
    t: P,
    w: &[u8],
    a: &[&[Q8Block]; R],
    out: &mut [[f32; R]],
) {
    let nb = q8_0_x16::check(w, a, out.len());
    groups(
        t,
        w,
        nb,
        out,
        |block: &[u8; q8_0_x16::BLOCK_BYTES], b, acc| {
            // SAFETY: as in `dot_q4_1_x16`.
            unsafe { q8_0_block::<P, R>(block, b, a, acc) }
        },
    )
}

/// `Q4_K×16` weights × [`Q8KBlock`] activations.
pub fn dot_q4k_x16<P: BytePath, const R: usize>(
    t: P,
    w: &[u8],
    a: &[&[Q8KBlock]; R],
    out: &mut [[f32; R]],
) {
    let nb = packed::check(w, a, out.len(), q4k_x16::BLOCK_BYTES);
    groups(
        t,
        w,
        nb,
        out,
        |block: &[u8; q4k_x16::BLOCK_BYTES], b, acc| {
            // SAFETY: as in `dot_q4_1_x16`.
            unsafe { q4k_block::<P, R, { q4k_x16::BLOCK_BYTES }, false>(block, b, a, acc) }
        },
    )
}

/// `Q5_K×16` weights × [`Q8KBlock`] activations.
pub fn dot_q5k_x16<P: BytePath, const R: usize>(
    t: P,
    w: &[u8],
    a: &[&[Q8KBlock]; R],
    out: &mut [[f32; R]],
) {
    const B: usize = q5k_x16::BLOCK_BYTES;
    let nb = packed::check(w, a, out.len(), B);
    groups(t, w, nb, out, |block: &[u8; B], b, acc| {
        // SAFETY: as in `dot_q4_1_x16`.
        unsafe { q4k_block::<P, R, B, true>(block, b, a, acc) }
    })
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
            // SAFETY: as in `dot_q4_1_x16`.
            unsafe { q6k_block::<P, R>(block, b, a, acc) }
        },
    )
}

/// Per activation row, the two halves' float sums (lane `i` of half `h`: row `8h + i`).
type Acc<const R: usize> = [[__m256; 2]; R];

/// For each group of rows and each of its `nb` blocks of `B` bytes runs `block(bytes, b,
/// acc)`, then writes the sums to `out` (lengths checked by the caller). The loop is compiled
/// with AVX-VNNI enabled for the paths that have it.
fn groups<P: BytePath, const R: usize, const B: usize>(
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
                if R == 1 {
                    // Decode streams the weights once from memory (see `prefetch_ahead`).
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
fn f16x8(block: &[u8], at: usize) -> __m256 {
    _mm256_cvtph_ps(load16(arr(block, at)))
}

/// The four activation bytes `y[4g..4g + 4]` in every 32-bit lane.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn broadcast4(y: &[i8], g: usize) -> __m256i {
    let four: &[i8; 4] = arr(y, 4 * g);
    _mm256_set1_epi32(i32::from_le_bytes(four.map(|v| v as u8)))
}

/// `broadcast4(y, g)` for g = 0..G. A plain loop, not `array::from_fn`: through its closure
/// LLVM left `broadcast4` out of line in the Q6_K kernel, a call, a store and a `vzeroupper`
/// per four bytes.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn broadcasts<const G: usize>(y: &[i8]) -> [__m256i; G] {
    let mut out = [_mm256_setzero_si256(); G];
    for (g, o) in out.iter_mut().enumerate() {
        *o = broadcast4(y, g);
    }
    out
}

/// `start + Σ_g q[g] · y[4g..4g + 4]` per 32-bit lane over `N` (even) groups, for unsigned
/// quants small enough that two `vpmaddubsw` results add in 16 bits (Q4's 15 or Q5's 31 with
/// eight groups, Q6's 63 with four: at most 63 · 128 · 4 < 2¹⁵). With AVX-VNNI one `vpdpbusd`
/// per group does all of it; the sum is the same integer.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn dot_small<P: BytePath, const N: usize>(
    q: &[__m256i; N],
    y: &[__m256i; N],
    start: __m256i,
) -> __m256i {
    let mut sum = start;
    if P::VNNI {
        for (&q, &y) in q.iter().zip(y) {
            // SAFETY: `P::VNNI` proves AVX-VNNI (the `BytePath` contract).
            sum = unsafe { dpbusd(sum, q, y) };
        }
        return sum;
    }
    let ones = _mm256_set1_epi16(1);
    for g in (0..N).step_by(2) {
        let pairs = _mm256_add_epi16(
            _mm256_maddubs_epi16(q[g], y[g]),
            _mm256_maddubs_epi16(q[g + 1], y[g + 1]),
        );
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(ones, pairs));
    }
    sum
}

/// `mult · (start + Σ_g q[g] · y[4g..4g + 4])` per lane as f32, exactly (the callers' sums
/// stay below 2²⁴, as the references need). AVX2 takes `mult` into `vpmaddwd`'s words (its
/// sixteen copies, `mult_words`) instead of ones, for nothing; AVX-VNNI's `vpdpbusd` has no
/// word step, so it converts the sum and multiplies in floats. Both are the same value.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn times_mult<P: BytePath, const N: usize>(
    q: &[__m256i; N],
    y: &[__m256i; N],
    start: i32,
    mult: i16,
    mult_words: &[i16; 16],
) -> __m256 {
    if P::VNNI {
        let isum = _mm256_cvtepi32_ps(dot_small::<P, N>(q, y, _mm256_set1_epi32(start)));
        return _mm256_mul_ps(isum, _mm256_set1_ps(f32::from(mult)));
    }
    // SAFETY: `mult_words` is 32 readable bytes; loadu has no alignment requirement.
    let words = unsafe { _mm256_loadu_si256(mult_words.as_ptr().cast()) };
    let mut sum = _mm256_set1_epi32(start * i32::from(mult));
    for g in (0..N).step_by(2) {
        let pairs = _mm256_add_epi16(
            _mm256_maddubs_epi16(q[g], y[g]),
            _mm256_maddubs_epi16(q[g + 1], y[g + 1]),
        );
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(words, pairs));
    }
    _mm256_cvtepi32_ps(sum)
}

/// `sum + Σ u · s` over each lane's four byte pairs (`u` unsigned, `s` signed, no pair's two
/// products above 2¹⁵ together): `vpdpbusd` with AVX-VNNI, else `vpmaddubsw` + `vpmaddwd`.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn add_dot4<P: BytePath>(sum: __m256i, u: __m256i, s: __m256i) -> __m256i {
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
unsafe fn dpbusd(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
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

/// One half's quants `q` (scales `d`) against every activation row: `acc[r] += (Σ q·y +
/// offset[r]) · d · d_a`, plus `m · s_a` when the format has mins.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
#[allow(clippy::too_many_arguments)]
fn add_half<P: BytePath, const R: usize>(
    h: usize,
    d: __m256,
    m: Option<__m256>,
    q: &[__m256i; 8],
    b: usize,
    a: &[&[Q8Block]; R],
    offset: &[i32; R],
    acc: &mut Acc<R>,
) {
    for ((ar, acc), &start) in a.iter().zip(acc).zip(offset) {
        let ab = &ar[b];
        let y: [__m256i; 8] = broadcasts(&ab.qs);
        let isum = _mm256_cvtepi32_ps(dot_small::<P, 8>(q, &y, _mm256_set1_epi32(start)));
        acc[h] = _mm256_fmadd_ps(isum, _mm256_mul_ps(d, _mm256_set1_ps(ab.d)), acc[h]);
        if let Some(m) = m {
            acc[h] = _mm256_fmadd_ps(m, _mm256_set1_ps(ab.s), acc[h]);
        }
    }
}

/// Quant bytes `at + 64 g ..` of half `h` (32 bytes: rows `8h..8h + 8`, four bytes each).
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn half_bytes(block: &[u8], at: usize, h: usize) -> __m256i {
    load32::<u8>(arr(block, at + 32 * h))
}

/// Quants `4g..` of each row of half `h`, g = 0..8, from the four 64-byte runs at `at + 64 k`:
/// the low nibbles of run `g` for g < 4, then the high ones (the layouts' shared packing).
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn nibbles8(block: &[u8], at: usize, h: usize) -> [__m256i; 8] {
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
fn with_fifth_bits(nib: [__m256i; 8], hi: __m256i) -> [__m256i; 8] {
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

#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn q4_1_block<P: BytePath, const R: usize>(
    block: &[u8; q4_1_x16::BLOCK_BYTES],
    b: usize,
    a: &[&[Q8Block]; R],
    acc: &mut Acc<R>,
) {
    use q4_1_x16::{D, M, QS};
    for h in 0..2 {
        let (d, m) = (f16x8(block, D + 16 * h), f16x8(block, M + 16 * h));
        let q = nibbles8(block, QS, h);
        add_half::<P, R>(h, d, Some(m), &q, b, a, &[0; R], acc);
    }
}

#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn q5_0_block<P: BytePath, const R: usize>(
    block: &[u8; q5_0_x16::BLOCK_BYTES],
    b: usize,
    a: &[&[Q8Block]; R],
    offset: &[i32; R],
    acc: &mut Acc<R>,
) {
    use q5_0_x16::{D, HIGH, LOW};
    for h in 0..2 {
        let d = f16x8(block, D + 16 * h);
        let q = with_fifth_bits(nibbles8(block, LOW, h), half_bytes(block, HIGH, h));
        add_half::<P, R>(h, d, None, &q, b, a, offset, acc);
    }
}

/// Q8_0's quants are stored `q + 128`; taken back to signed, `|q| · sign(y, q)` pairs fit
/// `vpmaddubsw` (at most 2 · 128 · 127), so the sums need no bias offset.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn q8_0_block<P: BytePath, const R: usize>(
    block: &[u8; q8_0_x16::BLOCK_BYTES],
    b: usize,
    a: &[&[Q8Block]; R],
    acc: &mut Acc<R>,
) {
    use q8_0_x16::{D, QS};
    let flip = _mm256_set1_epi8(-128);
    for h in 0..2 {
        let d = f16x8(block, D + 16 * h);
        let s: [__m256i; 8] =
            std::array::from_fn(|g| _mm256_xor_si256(half_bytes(block, QS + 64 * g, h), flip));
        let abs: [__m256i; 8] = std::array::from_fn(|g| _mm256_sign_epi8(s[g], s[g]));
        for (ar, acc) in a.iter().zip(acc.iter_mut()) {
            let ab = &ar[b];
            let mut sum = _mm256_setzero_si256();
            for g in 0..8 {
                let y = _mm256_sign_epi8(broadcast4(&ab.qs, g), s[g]);
                sum = add_dot4::<P>(sum, abs[g], y);
            }
            let isum = _mm256_cvtepi32_ps(sum);
            acc[h] = _mm256_fmadd_ps(isum, _mm256_mul_ps(d, _mm256_set1_ps(ab.d)), acc[h]);
        }
    }
}

/// Eight bytes at `at` (one half's rows) as f32.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn u8x8(block: &[u8], at: usize) -> __m256 {
    let bytes = _mm_cvtsi64_si128(i64::from_le_bytes(*arr(block, at)));
    _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes))
}

/// As the VNNI kernel, per half: each sub-block's integer sums times the activations' step
/// multiplier, times the weights' scale, less their min times the sub-block's sum, then the
/// super-block's sum times the activations' base step.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn q4k_block<P: BytePath, const R: usize, const B: usize, const FIFTH: bool>(
    block: &[u8; B],
    b: usize,
    a: &[&[Q8KBlock]; R],
    acc: &mut Acc<R>,
) {
    use q4k_x16::{D, DMIN, MINS, QS, SCALES};
    for h in 0..2 {
        let d = f16x8(block, D + 16 * h);
        let dmin = f16x8(block, DMIN + 16 * h);
        let mut sum = [_mm256_setzero_ps(); R];
        for s in 0..8 {
            let scale = _mm256_mul_ps(u8x8(block, SCALES + 16 * s + 8 * h), d);
            let min = _mm256_mul_ps(u8x8(block, MINS + 16 * s + 8 * h), dmin);
            let q = nibbles8(block, QS + 256 * s, h);
            let q = if FIFTH {
                with_fifth_bits(q, half_bytes(block, q5k_x16::HIGH + 64 * s, h))
            } else {
                q
            };
            for (ar, sum) in a.iter().zip(sum.iter_mut()) {
                let ab = &ar[b];
                let y: [__m256i; 8] = broadcasts(&ab.qs[32 * s..]);
                // Exact, as in the reference: |isum · mult| < 2²⁴.
                let words = arr(&ab.mult_words, 16 * s);
                let isum = times_mult::<P, 8>(&q, &y, 0, ab.mult[s], words);
                *sum = _mm256_fmadd_ps(isum, scale, *sum);
                *sum = _mm256_fnmadd_ps(min, _mm256_set1_ps(ab.sums_f32[s]), *sum);
            }
        }
        for ((ar, acc), sum) in a.iter().zip(acc.iter_mut()).zip(sum) {
            acc[h] = _mm256_fmadd_ps(sum, _mm256_set1_ps(ar[b].d), acc[h]);
        }
    }
}

/// As the VNNI kernel, per half: the 6-bit quants (nibbles, and the two high bits moved to
/// bits 4 and 5), each 16-element sub-block's integer sum less 32 Σ y, times the activations'
/// step multiplier and the sub-block's scale, then the super-block's sum times their base
/// step.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn q6k_block<P: BytePath, const R: usize>(
    block: &[u8; q6k_x16::BLOCK_BYTES],
    b: usize,
    a: &[&[Q8KBlock]; R],
    acc: &mut Acc<R>,
) {
    use q6k_x16::{D, QH, QL, SCALES};
    let m2 = _mm256_set1_epi8(0x30);
    for h in 0..2 {
        let d = f16x8(block, D + 16 * h);
        let mut sum = [_mm256_setzero_ps(); R];
        for s in 0..8 {
            let scale = |t: usize| {
                let bytes =
                    _mm_cvtsi64_si128(i64::from_le_bytes(*arr(block, SCALES + 16 * t + 8 * h)));
                _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)), d)
            };
            let scales = [scale(2 * s), scale(2 * s + 1)];
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
            for (ar, sum) in a.iter().zip(sum.iter_mut()) {
                let ab = &ar[b];
                for (k, (q, scale)) in halves.into_iter().zip(scales).enumerate() {
                    let t = 2 * s + k;
                    let y: [__m256i; 4] = broadcasts(&ab.qs[16 * t..]);
                    // The quants are stored +32: start from -32 Σ y. Exact, as in the
                    // reference: |isum · mult| < 2²⁴.
                    let start = -32 * i32::from(ab.bsums[t]);
                    let words = arr(&ab.mult_words, 16 * s);
                    let isum = times_mult::<P, 4>(q, &y, start, ab.mult[s], words);
                    *sum = _mm256_fmadd_ps(isum, scale, *sum);
                }
            }
        }
        for ((ar, acc), sum) in a.iter().zip(acc.iter_mut()).zip(sum) {
            acc[h] = _mm256_fmadd_ps(sum, _mm256_set1_ps(ar[b].d), acc[h]);
        }
    }
}
