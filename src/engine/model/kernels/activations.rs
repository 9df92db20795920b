//! The quantized activations the kernels multiply: Q8 blocks of 32 (with ggml's Q8_1 sum)
//! and Q8_K super-blocks of 256 (with sums of 16), and the quantizers that make them.

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

/// 256 activations as `d * qs[i]`, with the sums of each group of 16 quants (ggml's Q8_K).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct Q8KBlock {
    pub d: f32,
    pub qs: [i8; QK_K],
    pub bsums: [i16; QK_K / 16],
}

impl Default for Q8KBlock {
    fn default() -> Self {
        Self {
            d: 0.0,
            qs: [0; QK_K],
            bsums: [0; QK_K / 16],
        }
    }
}

/// Symmetric 8-bit quantization of `x` (`amax / 127` per block, rounding ties to even as
/// ggml's x86 code does); returns the unrounded scale.
#[inline(always)]
fn quantize_block(x: &[f32; QK], qs: &mut [i8; QK]) -> f32 {
    let mut amax = [0f32; 8];
    for c in x.as_chunks::<8>().0 {
        for l in 0..8 {
            amax[l] = amax[l].max(c[l].abs());
        }
    }
    let amax = amax.iter().fold(0f32, |m, &v| m.max(v));
    let d = amax / 127.0;
    let id = if d > 0.0 { 1.0 / d } else { 0.0 };
    for (q, &v) in qs.iter_mut().zip(x) {
        *q = vecmath::round_inline(v * id).clamp(-127.0, 127.0) as i8;
    }
    d
}

vecmath::multiversion! {
    /// Quantizes one row of activations (length `32 * out.len()`) to Q8_0/Q8_1 blocks as ggml
    /// does, scales rounded to f16 included: llama.cpp's logits are the reference.
    pub fn quantize_q8(x: &[f32], out: &mut [Q8Block]) {
        assert_eq!(x.len(), out.len() * QK, "quantize_q8: length mismatch");
        for (xb, b) in x.as_chunks::<QK>().0.iter().zip(out.iter_mut()) {
            let d = quantize_block(xb, &mut b.qs);
            let sum: i32 = b.qs.iter().map(|&q| q as i32).sum();
            b.d = round_to_f16(d);
            b.s = round_to_f16(d * sum as f32);
        }
    }
}

vecmath::multiversion! {
    /// Quantizes one row of activations (length `256 * out.len()`) to Q8_K blocks as ggml's
    /// `quantize_row_q8_K` does: the scale is `max / -127` for the signed value of largest
    /// magnitude (the first one, on a tie).
    pub fn quantize_q8k(x: &[f32], out: &mut [Q8KBlock]) {
        assert_eq!(x.len(), out.len() * QK_K, "quantize_q8k: length mismatch");
        for (xb, b) in x.as_chunks::<QK_K>().0.iter().zip(out.iter_mut()) {
            let amax = xb.iter().fold(0f32, |m, v| m.max(v.abs()));
            if amax == 0.0 {
                *b = Q8KBlock::default();
                continue;
            }
            let max = xb.iter().copied().find(|v| v.abs() == amax).unwrap_or(amax);
            let iscale = -127.0 / max;
            for (q, &v) in b.qs.iter_mut().zip(xb) {
                *q = vecmath::round_inline(iscale * v).clamp(-128.0, 127.0) as i8;
            }
            for (s, g) in b.bsums.iter_mut().zip(b.qs.as_chunks::<16>().0) {
                *s = g.iter().map(|&q| q as i16).sum();
            }
            b.d = 1.0 / iscale;
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
