//! f32 arithmetic on slices (dot products, exp, GELU/SiLU gating), vectorised for the CPU at
//! run time.
//!
//! Each function is written once, as plain arithmetic over fixed-size lanes that LLVM turns into
//! vector instructions, and compiled three times: for AVX-512, for AVX2 + FMA, and for the
//! baseline. No step uses a fused multiply-add (Rust never contracts `a * b + c`), and every sum
//! runs in the same lane order, so the three versions give bit-identical results: which one runs
//! never changes an answer, and a row's result never depends on what else is in the batch.
//! `exp` is our own (a degree-6 polynomial after range reduction, within 2 ulp of libm's) so
//! that it vectorises: libm's `expf`/`tanhf` were 9% of a Gemma 3 prefill.

use std::sync::OnceLock;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Level {
    Baseline,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

/// The best level this CPU has ([`super::cpu`], the features the quantized kernels
/// read too), within what `TAPER_KERNELS` allows ([`super::cpu::forced`]).
pub(crate) fn level() -> Level {
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            use super::cpu::{forced, Forced};
            let forced = forced();
            if forced == Forced::Scalar {
                return Level::Baseline;
            }
            let capped = matches!(forced, Forced::Avx2 | Forced::AvxVnni);
            // F16C (every AVX2 and AVX-512 CPU has it) is part of both levels, for the bodies
            // that read f16 numbers (the KV cache) with its conversion.
            let cpu = super::cpu::features();
            let f16c = cpu.f16c;
            if !capped && f16c && cpu.avx512f {
                return Level::Avx512;
            }
            if f16c && cpu.avx2 && cpu.fma {
                return Level::Avx2;
            }
        }
        Level::Baseline
    })
}

/// The instruction set a [`multiversion`] body is compiled for, as its `ISA` constant, so that
/// it can pick intrinsics its level guarantees (F16C's conversion, AVX-512's width).
pub(crate) mod isa {
    pub const BASELINE: u8 = 0;
    // Only x86 has the level (ARM's bodies compare against the other two).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub const AVX2: u8 = 1;
    pub const AVX512: u8 = 2;
}

/// Defines `pub fn $name` that runs `$body` compiled for the best instruction set this CPU has.
/// The body may call only `#[inline(always)]` helpers (or code LLVM inlines anyway) for them to
/// be compiled for that instruction set too; it sees which one as the constant `ISA` (an
/// [`isa`] value).
macro_rules! multiversion {
    ($(#[$meta:meta])* pub fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$meta])*
        pub fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            #[allow(clippy::extra_unused_type_parameters)]
            fn body<const ISA: u8>($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,f16c")]
            fn avx512($($arg: $ty),*) $(-> $ret)? {
                body::<{ $crate::engine::model::vecmath::isa::AVX512 }>($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma,f16c")]
            fn avx2($($arg: $ty),*) $(-> $ret)? {
                body::<{ $crate::engine::model::vecmath::isa::AVX2 }>($($arg),*)
            }
            use $crate::engine::model::vecmath::{level, Level};
            match level() {
                // SAFETY: `level()` returned these only after detecting the features at run time.
                #[cfg(target_arch = "x86_64")]
                Level::Avx512 => unsafe { avx512($($arg),*) },
                // SAFETY: as above.
                #[cfg(target_arch = "x86_64")]
                Level::Avx2 => unsafe { avx2($($arg),*) },
                Level::Baseline => body::<{ $crate::engine::model::vecmath::isa::BASELINE }>($($arg),*),
            }
        }
    };
}

pub(crate) use multiversion;

/// Lanes of the accumulators (one AVX-512 register of f32).
const LANES: usize = 16;

/// `Σ a[i]·b[i]`, summed in 16 lanes and then in a fixed tree.
#[inline(always)]
pub fn dot_inline(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "dot: lengths differ");
    let (ca, ta) = a.as_chunks::<LANES>();
    let (cb, tb) = b.as_chunks::<LANES>();
    let mut acc = [0f32; LANES];
    for (x, y) in ca.iter().zip(cb) {
        for l in 0..LANES {
            acc[l] += x[l] * y[l];
        }
    }
    let mut tail = 0f32;
    for (x, y) in ta.iter().zip(tb) {
        tail += x * y;
    }
    sum_lanes(&acc) + tail
}

/// The largest of `x` (NaN-free input), lane by lane then across the lanes.
#[inline(always)]
pub fn max_inline(x: &[f32]) -> f32 {
    let (chunks, tail) = x.as_chunks::<LANES>();
    let mut acc = [f32::NEG_INFINITY; LANES];
    for c in chunks {
        for l in 0..LANES {
            acc[l] = if c[l] > acc[l] { c[l] } else { acc[l] };
        }
    }
    let mut m = f32::NEG_INFINITY;
    for &v in acc.iter().chain(tail) {
        m = if v > m { v } else { m };
    }
    m
}

/// `Σ x[i]`, summed in 16 lanes and then in a fixed tree.
#[inline(always)]
pub fn sum_inline(x: &[f32]) -> f32 {
    let (chunks, tail) = x.as_chunks::<LANES>();
    let mut acc = [0f32; LANES];
    for c in chunks {
        for l in 0..LANES {
            acc[l] += c[l];
        }
    }
    sum_lanes(&acc) + tail.iter().sum::<f32>()
}

#[inline(always)]
fn sum_lanes(acc: &[f32; LANES]) -> f32 {
    let mut half = [0f32; LANES / 2];
    for l in 0..LANES / 2 {
        half[l] = acc[l] + acc[l + LANES / 2];
    }
    let mut quarter = [0f32; LANES / 4];
    for l in 0..LANES / 4 {
        quarter[l] = half[l] + half[l + LANES / 4];
    }
    (quarter[0] + quarter[2]) + (quarter[1] + quarter[3])
}

/// e^x for finite x (NaN stays NaN); results overflow to no more than e^88 and underflow to
/// e^-87.
#[inline(always)]
pub fn exp_inline(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split so that n·LN2_HI is exact for |n| < 2^10.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Adding and subtracting 1.5·2^23 rounds to an integer without a call to `round`.
    const ROUNDER: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 88.0);
    let t = x * LOG2E + ROUNDER;
    let n = t - ROUNDER;
    // The same integer, read off the mantissa bits of `t` (no float-to-int conversion).
    let ni = t.to_bits() as i32 - ROUNDER.to_bits() as i32;
    let r = (x - n * LN2_HI) - n * LN2_LO;
    // Taylor coefficients to r^6 (|r| ≤ ln2/2, relative error below 2e-7).
    let p = 1.0 / 720.0;
    let p = p * r + 1.0 / 120.0;
    let p = p * r + 1.0 / 24.0;
    let p = p * r + 1.0 / 6.0;
    let p = p * r + 0.5;
    let p = p * r + 1.0;
    let p = p * r + 1.0;
    // 2^n from its exponent bits; n is within -126..=127 after the clamp.
    let scale = f32::from_bits(((ni + 127) as u32) << 23);
    p * scale
}

/// `x` rounded to the nearest integer, ties to even (as ggml's x86 quantizers round), for
/// |x| < 2^22, without a call that would stop vectorisation.
#[inline(always)]
pub fn round_inline(x: f32) -> f32 {
    const ROUNDER: f32 = 12_582_912.0;
    (x + ROUNDER) - ROUNDER
}

/// The tanh-approximated GELU, written as `x·σ(2u)`, which equals `½x(1 + tanh u)`.
#[inline(always)]
fn gelu_inline(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    let u = SQRT_2_OVER_PI * (x + 0.044_715 * x * x * x);
    x / (1.0 + exp_inline(-2.0 * u))
}

#[inline(always)]
fn silu_inline(x: f32) -> f32 {
    x / (1.0 + exp_inline(-x))
}

multiversion! {
    /// `gate[i] = gelu(gate[i]) · up[i]` (the gated feed-forward of the Gemma models).
    pub fn gelu_mul(gate: &mut [f32], up: &[f32]) {
        assert_eq!(gate.len(), up.len(), "gelu_mul: lengths differ");
        for (g, u) in gate.iter_mut().zip(up) {
            *g = gelu_inline(*g) * u;
        }
    }
}

multiversion! {
    /// `gate[i] = silu(gate[i]) · up[i]` (the gated feed-forward of Llama-style models).
    pub fn silu_mul(gate: &mut [f32], up: &[f32]) {
        assert_eq!(gate.len(), up.len(), "silu_mul: lengths differ");
        for (g, u) in gate.iter_mut().zip(up) {
            *g = silu_inline(*g) * u;
        }
    }
}

multiversion! {
    /// RMS-normalises each row of `width` values of `x` in place, then multiplies by `weight`
    /// (one value per column) if there is one: `x / sqrt(mean(x²) + eps) · w`.
    pub fn rms_norm_rows(x: &mut [f32], width: usize, weight: Option<&[f32]>, eps: f32) {
        assert!(width > 0 && x.len().is_multiple_of(width), "rms_norm: ragged rows");
        for row in x.chunks_exact_mut(width) {
            let ss = dot_inline(row, row);
            let inv = 1.0 / (ss / width as f32 + eps).sqrt();
            match weight {
                Some(w) => {
                    assert_eq!(w.len(), width, "rms_norm: weight length");
                    for (v, g) in row.iter_mut().zip(w) {
                        *v = *v * inv * g;
                    }
                }
                None => {
                    for v in row.iter_mut() {
                        *v *= inv;
                    }
                }
            }
        }
    }
}

multiversion! {
    /// `x[i] += y[i]`.
    pub fn add_assign(x: &mut [f32], y: &[f32]) {
        assert_eq!(x.len(), y.len(), "add: lengths differ");
        for (a, b) in x.iter_mut().zip(y) {
            *a += b;
        }
    }
}

multiversion! {
    /// Adds `bias` to every row of `x` (rows of `bias.len()`).
    pub fn add_to_rows(x: &mut [f32], bias: &[f32]) {
        assert!(x.len().is_multiple_of(bias.len()), "bias: ragged rows");
        for row in x.chunks_exact_mut(bias.len()) {
            for (a, b) in row.iter_mut().zip(bias) {
                *a += b;
            }
        }
    }
}

multiversion! {
    /// `x[i] *= s`.
    pub fn scale(x: &mut [f32], s: f32) {
        for v in x.iter_mut() {
            *v *= s;
        }
    }
}

multiversion! {
    /// `x[i] = cap · tanh(x[i] / cap)` (Gemma's logit softcapping).
    pub fn softcap(x: &mut [f32], cap: f32) {
        for v in x.iter_mut() {
            // tanh u = 1 - 2 / (e^{2u} + 1), exact enough at the scale of logits.
            let e = exp_inline(2.0 * (*v / cap));
            *v = cap * (1.0 - 2.0 / (e + 1.0));
        }
    }
}

#[cfg(test)]
mod tests;
