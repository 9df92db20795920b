//! AVX-512 VNNI kernels for ggml's layouts: 512-bit `vpdpbusd` (u8 × i8 → i32) for the 32-element formats, two
//! blocks per instruction, and `vpmaddubsw` + `vpdpwssd` for the k-quants ([`super::kquant`]).
//!
//! The integer sums are exact, as in every kernel; for the 32-element formats the float
//! accumulation runs in sixteen lanes (two blocks at a time), a different order from AVX2's
//! eight, so results differ from AVX2's in the last bits (keeping AVX2's order cost a third of
//! the gain). The k-quant kernels are bit-identical to AVX2's. Within one implementation a
//! row's result never depends on the other rows computed with it.
//!
//! The sign: `vpdpbusd` wants one unsigned operand. The 32-element weights are stored (or
//! turned into) unsigned `u` with a fixed offset, value `u - off` (Q4_0: 8, Q5_0: 16, Q8_0:
//! 128 after flipping the sign bit, Q4_1: 0), so `Σ (u - off)·y = Σ u·y - off·Σ y`; the
//! correction `-off·Σ y` of each group of four activations depends only on the activation row,
//! so it is computed once per call ([`Pair`]) and is the starting value of `vpdpbusd`.
//!
//! Soundness: as in [`super::super::avx2`]: the `#[target_feature]` functions are private and run only
//! from the public wrappers, which take a [`Vnni`] token that exists only if [`Vnni::detect`]
//! found every feature they are compiled for; the wrappers check the lengths, every load and
//! store goes through a function taking a fixed-size array, and none needs alignment.

use super::Vnni;
use crate::engine::model::kernels::blocks::{
    Q4K_BYTES, Q4_0_BYTES, Q4_1_BYTES, Q5_0_BYTES, Q6K_BYTES, Q8_0_BYTES,
};
use crate::engine::model::kernels::x86::avx2::ops::{arr, load32, nibbles};
use crate::engine::model::kernels::x86::prefetch::prefetch_ahead;
use crate::engine::model::kernels::{Q8Block, Q8KBlock, QK};
use core::arch::x86_64::*;
use std::cell::RefCell;

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
pub(super) fn load64<T: Copy>(b: &[T; 64]) -> __m512i {
    const { assert!(std::mem::size_of::<T>() == 1) };
    // SAFETY: `b` is 64 one-byte elements (asserted above); loadu has no alignment requirement.
    unsafe { _mm512_loadu_si512(b.as_ptr().cast()) }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
fn load_i32(b: &[i32; 16]) -> __m512i {
    // SAFETY: `b` is 64 readable bytes; loadu has no alignment requirement.
    unsafe { _mm512_loadu_si512(b.as_ptr().cast()) }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
fn load_f32(b: &[f32; 16]) -> __m512 {
    // SAFETY: `b` is 16 readable f32; loadu has no alignment requirement.
    unsafe { _mm512_loadu_ps(b.as_ptr()) }
}

/// `[lo, hi]` as one 512-bit vector.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
pub(super) fn join(lo: __m256i, hi: __m256i) -> __m512i {
    _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1)
}

/// Lower eight lanes plus upper eight lanes (exact: integers).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
pub(super) fn fold(x: __m512i) -> __m256i {
    _mm256_add_epi32(_mm512_castsi512_si256(x), _mm512_extracti64x4_epi64(x, 1))
}

/// Two consecutive activation blocks laid out for 512-bit loads: their 64 quants, the
/// correction `-off · Σ` of each group of four quants (the lanes of `vpdpbusd`), and their
/// scales, eight lanes each. A missing second block is zeros.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Pair {
    y: [i8; 2 * QK],
    corr: [i32; 16],
    da: [f32; 16],
    /// Q8_1's sums `s` in lanes 0 and 8 (for Q4_1's `m · s`), zeros elsewhere.
    s: [f32; 16],
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
fn store64<T: Copy>(to: &mut [T; 16], v: __m512i) {
    const { assert!(std::mem::size_of::<T>() == 4) };
    // SAFETY: `to` is 64 writable bytes (asserted above); storeu has no alignment requirement.
    unsafe { _mm512_storeu_si512(to.as_mut_ptr().cast(), v) }
}

/// Appends the [`Pair`]s of one activation row to `out`, for weights whose quants are offset
/// by `off` (≤ 255).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
fn prepare(a: &[Q8Block], off: u8, out: &mut Vec<Pair>) {
    let offv = _mm512_set1_epi8(off as i8);
    out.extend(a.chunks(2).map(|blocks| {
        let (b0, b1) = (&blocks[0], blocks.get(1));
        let y1 = b1.map_or(_mm256_setzero_si256(), |b| load32(&b.qs));
        let y = join(load32(&b0.qs), y1);
        let mut p = Pair {
            y: [0; 2 * QK],
            corr: [0; 16],
            da: [0.0; 16],
            s: [0.0; 16],
        };
        // `off` as u8 times the i8 quants, summed by four: the lanes of `vpdpbusd`.
        let sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), offv, y);
        store64(&mut p.corr, _mm512_sub_epi32(_mm512_setzero_si512(), sums));
        p.y[..QK].copy_from_slice(&b0.qs);
        p.da[..8].fill(b0.d);
        p.s[0] = b0.s;
        if let Some(b1) = b1 {
            p.y[QK..].copy_from_slice(&b1.qs);
            p.da[8..].fill(b1.d);
            p.s[8] = b1.s;
        }
        p
    }));
}

thread_local! {
    /// Each thread's [`Pair`]s, reused from call to call: allocating them per call (per chunk of
    /// columns) fragmented the heap, +190 MB peak RSS on SmolLM2-135M.
    static PAIRS: RefCell<Vec<Pair>> = const { RefCell::new(Vec::new()) };
}

/// Weight rows computed together by the tiled kernels.
const TILE_ROWS: usize = 4;

/// The 32-element formats, as const-generic tags (so each kernel is compiled for one).
const Q4_0: u8 = 0;
const Q4_1: u8 = 1;
const Q5_0: u8 = 2;
const Q8_0: u8 = 3;

/// Bytes per block and the offset of the unsigned quants (see the module comment).
const fn layout(kind: u8) -> (usize, u8) {
    match kind {
        Q4_0 => (Q4_0_BYTES, 8),
        Q4_1 => (Q4_1_BYTES, 0),
        Q5_0 => (Q5_0_BYTES, 16),
        _ => (Q8_0_BYTES, 128),
    }
}

/// The unsigned quants of blocks `b0` and `b1` (each one whole block) in bytes 0..32, 32..64.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
fn unpack<const K: u8>(b0: &[u8], b1: &[u8]) -> __m512i {
    match K {
        Q4_0 => join(nibbles(arr(b0, 2)), nibbles(arr(b1, 2))),
        Q4_1 => join(nibbles(arr(b0, 4)), nibbles(arr(b1, 4))),
        Q5_0 => {
            let u = join(nibbles(arr(b0, 6)), nibbles(arr(b1, 6)));
            // Bit i of `qh` is the fifth bit of element i: add 16 there.
            let h0 = u32::from_le_bytes(*arr(b0, 2)) as u64;
            let h1 = u32::from_le_bytes(*arr(b1, 2)) as u64;
            _mm512_mask_add_epi8(u, h0 | (h1 << 32), u, _mm512_set1_epi8(16))
        }
        _ => {
            let x = join(load32::<u8>(arr(b0, 2)), load32::<u8>(arr(b1, 2)));
            // i8 → u8 + 128: flip the sign bit.
            _mm512_xor_si512(x, _mm512_set1_epi8(i8::MIN))
        }
    }
}

/// `M` weight rows of a 32-element format `K` against `R` activation rows (`prep[r]` is
/// [`prepare`]d from `a[r]`), into `out[m][r]`: per pair of blocks, weight row and activation
/// row, one `vpdpbusd` and `acc += Σ · (d · a.d)` in sixteen lanes (even blocks in the low
/// eight, odd in the high), plus Q4_1's `m · s` in lanes 0 and 8. A lone last block meets zero
/// activations in the high half. Each unpacked weight block serves `R` activation rows and each
/// activation load serves `M` weight rows; every `(m, r)` result goes through the same
/// operations whatever `M` and `R` are.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
#[inline]
fn q8_tile<const R: usize, const M: usize, const K: u8>(
    w: &[&[u8]; M],
    prep: &[&[Pair]; R],
    out: &mut [[f32; R]],
) {
    let bytes = layout(K).0;
    let nb = w[0].len() / bytes;
    let mut acc = [[_mm512_setzero_ps(); R]; M];
    for p in 0..nb.div_ceil(2) {
        let mut u = [_mm512_setzero_si512(); M];
        let mut dw = [_mm512_setzero_ps(); M];
        let mut mw = [_mm512_setzero_ps(); M];
        for m in 0..M {
            let b0 = &w[m][2 * p * bytes..(2 * p + 1) * bytes];
            let b1 = if 2 * p + 1 < nb {
                &w[m][(2 * p + 1) * bytes..(2 * p + 2) * bytes]
            } else {
                b0
            };
            u[m] = unpack::<K>(b0, b1);
            // The f16 scales (and Q4_1's mins) of both blocks converted at once, then spread
            // over the two halves: d0 ×8, d1 ×8 (m0 ×8, m1 ×8).
            let h = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]) as u64;
            let mins = if K == Q4_1 {
                (h(b0, 2) << 32) | (h(b1, 2) << 48)
            } else {
                0
            };
            let f = _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi64_si128(
                (h(b0, 0) | (h(b1, 0) << 16) | mins) as i64,
            )));
            let spread = |i: i32| {
                let idx =
                    _mm512_mask_blend_epi32(0xFF00, _mm512_set1_epi32(i), _mm512_set1_epi32(i + 1));
                _mm512_permutexvar_ps(idx, f)
            };
            dw[m] = spread(0);
            if K == Q4_1 {
                mw[m] = spread(2);
            }
        }
        for r in 0..R {
            let pr = &prep[r][p];
            let corr = load_i32(&pr.corr);
            let y = load64(&pr.y);
            let da = load_f32(&pr.da);
            for m in 0..M {
                let s = _mm512_dpbusd_epi32(corr, u[m], y);
                let sc = _mm512_mul_ps(dw[m], da);
                acc[m][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), sc, acc[m][r]);
                if K == Q4_1 {
                    acc[m][r] = _mm512_fmadd_ps(mw[m], load_f32(&pr.s), acc[m][r]);
                }
            }
        }
    }
    for (o, a) in out.iter_mut().zip(&acc) {
        for r in 0..R {
            o[r] = _mm512_reduce_add_ps(a[r]);
        }
    }
}

/// Checks that `w` is `rows` whole rows of `bytes`-byte blocks and each activation row has one
/// block per weight block; returns the bytes of a weight row (0 when there are no rows).
fn check<A, const R: usize>(w: &[u8], bytes: usize, a: &[&[A]; R], rows: usize) -> usize {
    if rows == 0 {
        assert!(w.is_empty(), "weights without outputs");
        return 0;
    }
    let row_bytes = w.len() / rows;
    assert_eq!(row_bytes * rows, w.len(), "weights are not whole rows");
    let nb = row_bytes / bytes;
    assert_eq!(nb * bytes, row_bytes, "weight row is not whole blocks");
    assert!(
        a.iter().all(|row| row.len() == nb),
        "activation rows have the wrong length"
    );
    row_bytes
}

macro_rules! q8_wrapper {
    ($(#[$m:meta])* $name:ident, $kind:expr) => {
        $(#[$m])*
        /// `w` holds `out.len()` weight rows; `out[c][r]` = row `c` of `w` · `a[r]`.
        pub fn $name<const R: usize>(
            _: Vnni,
            w: &[u8],
            a: &[&[Q8Block]; R],
            out: &mut [[f32; R]],
        ) {
            #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
            fn rows<const R: usize>(
                w: &[u8],
                row_bytes: usize,
                prep: &[&[Pair]; R],
                out: &mut [[f32; R]],
            ) {
                // Four weight rows at a time, then the rest one by one.
                let done = out.len() / TILE_ROWS * TILE_ROWS;
                let tile_bytes = TILE_ROWS * row_bytes;
                for (ti, (w4, o)) in w
                    .chunks_exact(tile_bytes)
                    .zip(out.chunks_exact_mut(TILE_ROWS))
                    .enumerate()
                {
                    if R == 1 {
                        prefetch_ahead(w, ti * tile_bytes, tile_bytes);
                    }
                    let ws = std::array::from_fn(|m| &w4[m * row_bytes..(m + 1) * row_bytes]);
                    q8_tile::<R, TILE_ROWS, { $kind }>(&ws, prep, o);
                }
                for (wr, o) in w[done * row_bytes..]
                    .chunks_exact(row_bytes)
                    .zip(out[done..].chunks_exact_mut(1))
                {
                    q8_tile::<R, 1, { $kind }>(&[wr], prep, o);
                }
            }
            let (bytes, off) = layout($kind);
            let row_bytes = check(w, bytes, a, out.len());
            if row_bytes == 0 {
                return;
            }
            let per_row = (row_bytes / bytes).div_ceil(2);
            // The kernels call nothing that could come back here, so the borrow is never nested.
            PAIRS.with_borrow_mut(|pairs| {
                pairs.clear();
                for row in a {
                    // SAFETY: the `Vnni` token proves the CPU has the features `prepare` is
                    // compiled for (every access inside is bounds-checked).
                    unsafe { prepare(row, off, pairs) };
                }
                let prep: [&[Pair]; R] =
                    std::array::from_fn(|r| &pairs[r * per_row..(r + 1) * per_row]);
                // SAFETY: as above, for `rows`; lengths are checked above (and every access
                // inside is bounds-checked).
                unsafe { rows(w, row_bytes, &prep, out) }
            })
        }
    };
}

q8_wrapper!(
    /// Q4_0 weights × Q8_0 activations.
    dot_q4_0, Q4_0
);
q8_wrapper!(
    /// Q4_1 weights × Q8_1 activations.
    dot_q4_1, Q4_1
);
q8_wrapper!(
    /// Q5_0 weights × Q8_0 activations.
    dot_q5_0, Q5_0
);
q8_wrapper!(
    /// Q8_0 weights × Q8_0 activations.
    dot_q8_0, Q8_0
);

macro_rules! k_wrapper {
    ($(#[$m:meta])* $name:ident, $imp:path, $bytes:expr) => {
        $(#[$m])*
        /// `w` holds `out.len()` weight rows; `out[c][r]` = row `c` of `w` · `a[r]`.
        pub fn $name<const R: usize>(
            _: Vnni,
            w: &[u8],
            a: &[&[Q8KBlock]; R],
            out: &mut [[f32; R]],
        ) {
            #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
            fn rows<const R: usize>(
                w: &[u8],
                row_bytes: usize,
                a: &[&[Q8KBlock]; R],
                out: &mut [[f32; R]],
            ) {
                for (i, (wr, o)) in w.chunks_exact(row_bytes).zip(out.iter_mut()).enumerate() {
                    if R == 1 {
                        prefetch_ahead(w, i * row_bytes, row_bytes);
                    }
                    $imp(wr, a, o);
                }
            }
            let row_bytes = check(w, $bytes, a, out.len());
            if row_bytes == 0 {
                return;
            }
            // SAFETY: the `Vnni` token proves the CPU has the features `rows` and `$imp` are
            // compiled for; lengths are checked above (and every access inside is
            // bounds-checked).
            unsafe { rows(w, row_bytes, a, out) }
        }
    };
}

k_wrapper!(
    /// Q4_K weights × Q8_K activations.
    dot_q4k, super::kquant::q4k, Q4K_BYTES
);
k_wrapper!(
    /// Q6_K weights × Q8_K activations.
    dot_q6k, super::kquant::q6k, Q6K_BYTES
);
