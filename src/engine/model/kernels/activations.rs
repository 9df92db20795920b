//! The quantized activations the kernels multiply: Q8 blocks of 32 (with ggml's Q8_1 sum)
//! and Q8_K-like super-blocks of 256 (a step per 32, sums of 16), and the quantizers that
//! make them.

use super::{QK, QK_K};
use crate::engine::model::vecmath;

/// 32 activations as `d * qs[i]`; `s = d * Σ qs` (ggml's Q8_1 sum, used by Q4_1's offset).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct Q8Block {
    pub d: f32,
    pub s: f32,
    pub qs: [i8; QK],
}

impl Default for Q8Block {
    fn default() -> Self {
        Self {
            d: 0.0,
            s: 0.0,
            qs: [0; QK],
        }
    }
}

/// 256 activations as `d * mult[i / 32] * qs[i]`: each sub-block of 32 gets a step of its own,
/// a whole multiple (1..=16) of the super-block's base step `d`, with the sums of each group
/// of 16 quants (as ggml's Q8_K).
///
/// ggml's Q8_K has one step per 256 (`amax / 127`), so a sub-block whose values are ten times
/// smaller than the super-block's largest keeps only a tenth of the 8-bit range: on Gemma 3's
/// `ffn_down` inputs that was two thirds of the divergence from exact arithmetic. A step per
/// 32 wins that back; keeping it an integer multiple of one base step lets the kernels fold
/// it into the weights' integer scales (`sc · mult` fits an i16) and keep summing a
/// super-block in integers, instead of paying a float multiply-add per sub-block.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct Q8KBlock {
    pub d: f32,
    /// Each sub-block's step as a multiple of `d`, 1..=16 (0 only in an all-zero block).
    pub mult: [i16; QK_K / 32],
    /// The same multipliers laid out for the SIMD kernels' loads, each sixteen times over: 256
    /// or 512 bits of words line up with the 16-bit products of 32 or 64 quants.
    pub mult_words: [i16; QK_K / 2],
    /// For the sixteen-row kernels' mins, which they sum in floats: each sub-block's quant
    /// sum times its multiplier (exact: at most 32 · 128 · 16 < 2²⁴).
    pub sums_f32: [f32; QK_K / 32],
    /// Each sum of 16 quants times its sub-block's multiplier (at most 16 · 128 · 16 = 2¹⁵
    /// in magnitude, an i16): Q6_K×16's offset of its +32 quants, in 16-bit words.
    pub mult_bsums: [i16; QK_K / 16],
    pub qs: [i8; QK_K],
    pub bsums: [i16; QK_K / 16],
}

impl Default for Q8KBlock {
    fn default() -> Self {
        Self {
            d: 0.0,
            mult: [0; QK_K / 32],
            mult_words: [0; QK_K / 2],
            sums_f32: [0.0; QK_K / 32],
            mult_bsums: [0; QK_K / 16],
            qs: [0; QK_K],
            bsums: [0; QK_K / 16],
        }
    }
}

impl Q8KBlock {
    /// Sets sub-block `j`'s step multiplier in each of its layouts.
    pub fn set_mult(&mut self, j: usize, mult: i16) {
        self.mult[j] = mult;
        self.mult_words[16 * j..16 * j + 16].fill(mult);
    }

    /// Fills [`Self::sums_f32`] and [`Self::mult_bsums`] from the sums of 16 and the
    /// multipliers.
    pub fn set_scaled_sums(&mut self) {
        for (j, s) in self.sums_f32.iter_mut().enumerate() {
            let sum = i32::from(self.bsums[2 * j]) + i32::from(self.bsums[2 * j + 1]);
            *s = (sum * i32::from(self.mult[j])) as f32;
        }
        for (t, m) in self.mult_bsums.iter_mut().enumerate() {
            // In range: |Σ y| ≤ 16 · 128 and the multiplier at most 16 (see the field).
            *m = self.bsums[t].wrapping_mul(self.mult[t / 2]);
        }
    }
}

/// The largest sub-block step multiplier: `sc · mult` for Q6_K's signed 8-bit scales must
/// stay within an i16, and so must the kernels' 16-bit products after it.
pub const MAX_MULT: i16 = 16;

/// Symmetric 8-bit quantization of `x` (`amax / 127` per block, rounding ties to even as
/// ggml's x86 code does); returns the unrounded scale.
///
/// Written in lanes of plain compares (not `f32::max`/`clamp`, whose NaN rules LLVM does not
/// vectorise): compiled as scalar code this was 9% of a SmolLM2 prefill. For the finite
/// inputs a model produces the results are those of `max`/`clamp`.
#[inline(always)]
fn quantize_block(x: &[f32; QK], qs: &mut [i8; QK]) -> f32 {
    let d = abs_max32(x) / 127.0;
    let id = if d > 0.0 { 1.0 / d } else { 0.0 };
    for (q, &v) in qs.iter_mut().zip(x) {
        *q = clamp_to_i8(vecmath::round_inline(v * id));
    }
    d
}

/// The largest magnitude of 32 values: in 16 lanes, then by a tree.
#[inline(always)]
fn abs_max32(x: &[f32; 32]) -> f32 {
    let mut m = [0f32; 16];
    for c in x.as_chunks::<16>().0 {
        for l in 0..16 {
            let a = c[l].abs();
            m[l] = if a > m[l] { a } else { m[l] };
        }
    }
    max_of_lanes(&m)
}

/// The largest of 16 non-negative lanes, by a tree.
#[inline(always)]
fn max_of_lanes(m: &[f32; 16]) -> f32 {
    let pick = |a: f32, b: f32| if a > b { a } else { b };
    let m8: [f32; 8] = std::array::from_fn(|l| pick(m[l], m[l + 8]));
    let m4: [f32; 4] = std::array::from_fn(|l| pick(m8[l], m8[l + 4]));
    pick(pick(m4[0], m4[2]), pick(m4[1], m4[3]))
}

/// `Σ qs`, in 16 lanes (vectorised; a plain iterator sum stays scalar).
#[inline(always)]
fn sum_quants(qs: &[i8; QK]) -> i32 {
    let mut acc = [0i32; 16];
    for c in qs.as_chunks::<16>().0 {
        for l in 0..16 {
            acc[l] += i32::from(c[l]);
        }
    }
    acc.iter().sum()
}

/// A whole-valued `v` clamped to ±127, as an i8 (NaN gives 0, as `as` does).
#[inline(always)]
fn clamp_to_i8(v: f32) -> i8 {
    let v = if v > 127.0 { 127.0 } else { v };
    let v = if v < -127.0 { -127.0 } else { v };
    #[allow(clippy::eq_op)] // NaN is the one value unequal to itself.
    let v = if v == v { v } else { 0.0 };
    // SAFETY: `v` is finite and within ±127 here, so it fits an i32 (`as` would add the
    // saturating checks that keep this loop scalar).
    unsafe { v.to_int_unchecked::<i32>() as i8 }
}

vecmath::multiversion! {
    /// Quantizes one row of activations (length `32 * out.len()`) to Q8_0/Q8_1 blocks as ggml
    /// does, scales rounded to f16 included: llama.cpp's logits are the reference.
    pub fn quantize_q8(x: &[f32], out: &mut [Q8Block]) {
        assert_eq!(x.len(), out.len() * QK, "quantize_q8: length mismatch");
        for (xb, b) in x.as_chunks::<QK>().0.iter().zip(out.iter_mut()) {
            let d = quantize_block(xb, &mut b.qs);
            let sum = sum_quants(&b.qs);
            b.d = round_to_f16(d);
            b.s = round_to_f16(d * sum as f32);
        }
    }
}

vecmath::multiversion! {
    /// Quantizes one row of activations (length `256 * out.len()`) to [`Q8KBlock`]s: the base
    /// step is `amax / (127 · 16)` of the super-block, each sub-block of 32 takes the smallest
    /// multiple of it that keeps its own largest magnitude within ±127, and values are rounded
    /// to the nearest quant (ties to even).
    pub fn quantize_q8k(x: &[f32], out: &mut [Q8KBlock]) {
        assert_eq!(x.len(), out.len() * QK_K, "quantize_q8k: length mismatch");
        for (xb, b) in x.as_chunks::<QK_K>().0.iter().zip(out.iter_mut()) {
            let subs = xb.as_chunks::<32>().0;
            let sub_amax: [f32; QK_K / 32] = std::array::from_fn(|j| abs_max32(&subs[j]));
            let amax = sub_amax.iter().fold(0f32, |m, &v| if v > m { v } else { m });
            if amax == 0.0 {
                *b = Q8KBlock::default();
                continue;
            }
            let step = amax / (127.0 * MAX_MULT as f32);
            for (j, (&sub, chunk)) in sub_amax.iter().zip(subs).enumerate() {
                // The ratio is at most 16 (exactly 16 for the largest sub-block); rounding up
                // keeps every quant within ±127, and the clamp catches a ratio that rounded
                // just past a whole number.
                let mult = (sub / amax * MAX_MULT as f32).ceil().clamp(1.0, MAX_MULT as f32);
                let inv = 1.0 / (step * mult);
                for (q, &v) in b.qs[32 * j..32 * j + 32].iter_mut().zip(chunk) {
                    *q = clamp_to_i8(vecmath::round_inline(v * inv));
                }
                b.set_mult(j, mult as i16);
            }
            for (s, q) in b.bsums.iter_mut().zip(b.qs.as_chunks::<16>().0) {
                *s = q.iter().map(|&q| q as i16).sum();
            }
            b.set_scaled_sums();
            b.d = step;
        }
    }
}

/// `x` rounded to the nearest IEEE half (ties to even), as an f32.
pub fn round_to_f16(x: f32) -> f32 {
    let a = x.abs();
    if a.is_nan() {
        return x;
    }
    if a >= 65520.0 {
        return f32::INFINITY.copysign(x);
    }
    if a < 6.103_515_6e-5 {
        // Half subnormals are multiples of 2⁻²⁴; scaling by a power of two is exact.
        return ((a * 16_777_216.0).round_ties_even() / 16_777_216.0).copysign(x);
    }
    // Keep 10 of the 23 mantissa bits, rounding to nearest even (a carry moves the exponent).
    let bits = x.to_bits();
    let rounded = bits + 0xFFF + ((bits >> 13) & 1);
    f32::from_bits(rounded & !0x1FFF)
}
