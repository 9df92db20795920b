//! The NEON building blocks the ARM kernels share: loads from fixed-size arrays, the three ways
//! of summing `i8 × i8` products (widening multiplies, `sdot`, `smmla`) behind the tokens of
//! [`super`], and the pairing of two rows' halves that `smmla` multiplies.
//!
//! Everything SIMD here is compiled for `neon`, part of every aarch64 CPU (the ARM entry points
//! of [`super`] are the only callers that are not); only the pointer loads and the two
//! instructions in assembly are `unsafe`, each with its reason.

use super::{Plain, Sdot, Smmla};
use core::arch::aarch64::*;
use core::arch::asm;

/// `s[at..at + N]` as an array (panics if out of range: never, for whole blocks).
#[inline(always)]
pub(super) fn arr<T, const N: usize>(s: &[T], at: usize) -> &[T; N] {
    s[at..at + N]
        .try_into()
        .expect("length checked by the slice")
}

#[target_feature(enable = "neon")]
#[inline]
pub(super) fn load_u8(b: &[u8; 16]) -> uint8x16_t {
    // SAFETY: `b` is 16 readable bytes; `ld1` has no alignment requirement.
    unsafe { vld1q_u8(b.as_ptr()) }
}

#[target_feature(enable = "neon")]
#[inline]
pub(super) fn load_i8(b: &[i8; 16]) -> int8x16_t {
    // SAFETY: `b` is 16 readable bytes; `ld1` has no alignment requirement.
    unsafe { vld1q_s8(b.as_ptr()) }
}

#[target_feature(enable = "neon")]
#[inline]
pub(super) fn load_i16(b: &[i16; 8]) -> int16x8_t {
    // SAFETY: `b` is 8 readable i16; `ld1` has no alignment requirement.
    unsafe { vld1q_s16(b.as_ptr()) }
}

#[target_feature(enable = "neon")]
#[inline]
pub(super) fn f32x4(v: [f32; 4]) -> float32x4_t {
    // SAFETY: `v` is 4 readable f32; `ld1` has no alignment requirement.
    unsafe { vld1q_f32(v.as_ptr()) }
}

#[target_feature(enable = "neon")]
#[inline]
pub(super) fn i32x4(v: [i32; 4]) -> int32x4_t {
    // SAFETY: `v` is 4 readable i32; `ld1` has no alignment requirement.
    unsafe { vld1q_s32(v.as_ptr()) }
}

#[target_feature(enable = "neon")]
#[inline]
pub(super) fn lanes_f32(v: float32x4_t) -> [f32; 4] {
    let mut out = [0f32; 4];
    // SAFETY: `out` is 4 writable f32; `st1` has no alignment requirement.
    unsafe { vst1q_f32(out.as_mut_ptr(), v) };
    out
}

/// The tokens whose kernels sum `i8 × i8` products with [`dot`]: whether they may use `sdot`.
pub(super) trait Dot: Copy {
    /// `true` only for tokens proving FEAT_DotProd.
    const SDOT: bool;
}

impl Dot for Plain {
    const SDOT: bool = false;
}

impl Dot for Sdot {
    const SDOT: bool = true;
}

impl Dot for Smmla {
    const SDOT: bool = true;
}

/// `acc` plus the sixteen products `a[i]·b[i]`, in four i32 lanes: with `sdot` (lane `l` gains
/// `Σ_k a[4l + k]·b[4l + k]`) where the token proves it, else with widening multiplies to i16
/// (|a·b| ≤ 2¹⁴, exact) added pairwise into the lanes. Which lane a product lands in differs, so
/// callers use only the sum of the four lanes, or scale all four alike before summing: the exact
/// integer dot product either way (no sum of a 32- or 256-element block can overflow).
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn dot<D: Dot>(_: D, acc: int32x4_t, a: int8x16_t, b: int8x16_t) -> int32x4_t {
    if !D::SDOT {
        let acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
        return vpadalq_s16(acc, vmull_high_s8(a, b));
    }
    let mut acc = acc;
    // SAFETY: `D::SDOT` holds only for the `Sdot` and `Smmla` tokens, which prove the CPU has
    // FEAT_DotProd (see `super::neon`); the instruction touches only these registers. Assembly
    // because `vdotq_s32` is not stable Rust; `.arch_extension` lets it assemble in functions
    // not compiled for the feature (unoptimised builds do not inline this one).
    unsafe {
        asm!(
            ".arch_extension dotprod",
            "sdot {acc:v}.4s, {a:v}.16b, {b:v}.16b",
            acc = inout(vreg) acc,
            a = in(vreg) a,
            b = in(vreg) b,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    acc
}

impl Smmla {
    /// `smmla`: with `w` the rows `w0 = w[0..8]`, `w1 = w[8..16]` and `x` the rows `x0`, `x1`
    /// likewise, adds `[w0·x0, w0·x1, w1·x0, w1·x1]` to `acc`.
    #[target_feature(enable = "neon")]
    #[inline]
    pub(super) fn mmla(self, acc: int32x4_t, w: int8x16_t, x: int8x16_t) -> int32x4_t {
        let mut acc = acc;
        // SAFETY: the `Smmla` token proves the CPU has FEAT_I8MM (see `super::neon`); the
        // instruction touches only these registers. Assembly because `vmmlaq_s32` is not
        // stable Rust (`.arch_extension`: as in `dot`).
        unsafe {
            asm!(
                ".arch_extension i8mm",
                "smmla {acc:v}.4s, {w:v}.16b, {x:v}.16b",
                acc = inout(vreg) acc,
                w = in(vreg) w,
                x = in(vreg) x,
                options(pure, nomem, nostack, preserves_flags)
            );
        }
        acc
    }
}

/// The first eight bytes of `a` then the first eight of `b`: two rows' halves for `smmla`.
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn zip_lo(a: int8x16_t, b: int8x16_t) -> int8x16_t {
    vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)))
}

/// The last eight bytes of `a` then the last eight of `b`.
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn zip_hi(a: int8x16_t, b: int8x16_t) -> int8x16_t {
    vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)))
}

/// Two rows' 16 bytes as `smmla` takes them: `[a[0..8], b[0..8]]`, `[a[8..16], b[8..16]]`.
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn pair(a: int8x16_t, b: int8x16_t) -> [int8x16_t; 2] {
    [zip_lo(a, b), zip_hi(a, b)]
}

/// `out[c] = one(row c)` for the weight rows of `w` (`row_bytes` each, `row_bytes > 0`).
#[inline(always)]
pub(super) fn each_row<const R: usize>(
    w: &[u8],
    row_bytes: usize,
    out: &mut [[f32; R]],
    mut one: impl FnMut(&[u8]) -> [f32; R],
) {
    for (wr, o) in w.chunks_exact(row_bytes).zip(out.iter_mut()) {
        *o = one(wr);
    }
}

/// As [`each_row`], two weight rows at a time through `two` (an odd last row through `one`).
#[inline(always)]
pub(super) fn each_row_pair<const R: usize>(
    w: &[u8],
    row_bytes: usize,
    out: &mut [[f32; R]],
    mut two: impl FnMut(&[u8], &[u8]) -> [[f32; R]; 2],
    mut one: impl FnMut(&[u8]) -> [f32; R],
) {
    let last = out.len().saturating_sub(1) * row_bytes;
    let mut pairs = out.chunks_exact_mut(2);
    for (wp, o) in w.chunks_exact(2 * row_bytes).zip(&mut pairs) {
        let (w0, w1) = wp.split_at(row_bytes);
        [o[0], o[1]] = two(w0, w1);
    }
    if let [o] = pairs.into_remainder() {
        *o = one(&w[last..last + row_bytes]);
    }
}

/// The results of two weight rows from the `smmla` tiles `acc[h]` (`h < R / 2`), whose lanes
/// are `(w0·a[2h], w0·a[2h+1], w1·a[2h], w1·a[2h+1])`.
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn untile<const R: usize>(acc: &[float32x4_t; R]) -> [[f32; R]; 2] {
    let mut out = [[0f32; R]; 2];
    for h in 0..R / 2 {
        let l = lanes_f32(acc[h]);
        [out[0][2 * h], out[0][2 * h + 1]] = [l[0], l[1]];
        [out[1][2 * h], out[1][2 * h + 1]] = [l[2], l[3]];
    }
    out
}
