//! Quantized dot-product kernels for [`super::linear::QLinear`].
//!
//! Weights stay in ggml's block layouts, read from the raw bytes of the tensor (except Q4_K,
//! Q5_0, Q4_1 and Q8_0 on AVX-512 VNNI and AVX2, repacked sixteen rows at a time at load:
//! [`q4k_x16`], [`q5_0_x16`], [`q4_1_x16`], [`q8_0_x16`]); activations are
//! quantized per row to 8-bit blocks: like ggml does for the 32-element formats (Q8_0/Q8_1),
//! and for the 256-element k-quants in super-blocks like ggml's Q8_K but with a step per 32
//! ([`Q8KBlock`]), which keeps activations several times closer to exact arithmetic.
//!
//! Every kernel computes weight rows against `R` activation rows at once (`R` = 1 or 4), so a
//! weight block is unpacked once for several rows during prefill; one call covers many weight
//! rows, so the per-call checks and dispatch are paid once per chunk, not per output. The arithmetic done for
//! one activation row is the same sequence of operations whatever `R` is, so a row's result is
//! bit-identical whether it is computed alone or in a batch (the decoder's cached and fresh
//! prefills must give the same greedy tokens).

mod activations;
#[cfg(test)]
mod activations_tests;
#[cfg(target_arch = "x86_64")]
pub mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx2_x16;
#[cfg(target_arch = "aarch64")]
pub mod neon;
#[cfg(target_arch = "aarch64")]
mod neon_kquant;
#[cfg(target_arch = "aarch64")]
mod neon_ops;
#[cfg(target_arch = "aarch64")]
mod neon_q8;
#[cfg(target_arch = "x86_64")]
mod prefetch;
pub mod q4_1_x16;
pub mod q4k_x16;
pub mod q5_0_x16;
pub mod q8_0_x16;
mod row_groups;
pub mod scalar;
#[cfg(test)]
mod test_rng;
#[cfg(test)]
mod tests;
#[cfg(target_arch = "x86_64")]
pub mod vnni;
#[cfg(target_arch = "x86_64")]
mod vnni_groups;
#[cfg(target_arch = "x86_64")]
mod vnni_kquant;
#[cfg(target_arch = "x86_64")]
mod vnni_q4_1_x16;
#[cfg(target_arch = "x86_64")]
mod vnni_q4k_x16;
#[cfg(target_arch = "x86_64")]
mod vnni_q5_0_x16;
#[cfg(target_arch = "x86_64")]
mod vnni_q8_0_x16;

use candle_core::quantized::GgmlDType;

/// The weight formats with kernels of our own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightKind {
    Q4_0,
    Q4_1,
    Q5_0,
    Q8_0,
    Q4K,
    Q6K,
    /// Q4_K repacked sixteen rows at a time ([`q4k_x16`]); never a file's format.
    Q4KX16,
    /// Q5_0 repacked sixteen rows at a time ([`q5_0_x16`]); never a file's format.
    Q5_0X16,
    /// Q4_1 repacked sixteen rows at a time ([`q4_1_x16`]); never a file's format.
    Q4_1X16,
    /// Q8_0 repacked sixteen rows at a time ([`q8_0_x16`]); never a file's format.
    Q8_0X16,
}

impl WeightKind {
    pub fn from_dtype(dtype: GgmlDType) -> Option<Self> {
        Some(match dtype {
            GgmlDType::Q4_0 => Self::Q4_0,
            GgmlDType::Q4_1 => Self::Q4_1,
            GgmlDType::Q5_0 => Self::Q5_0,
            GgmlDType::Q8_0 => Self::Q8_0,
            GgmlDType::Q4K => Self::Q4K,
            GgmlDType::Q6K => Self::Q6K,
            _ => return None,
        })
    }

    /// Elements per block.
    pub fn block_elems(self) -> usize {
        match self {
            Self::Q4K | Self::Q6K | Self::Q4KX16 => QK_K,
            _ => QK,
        }
    }

    /// Bytes per block, as ggml stores it.
    pub fn block_bytes(self) -> usize {
        match self {
            Self::Q4_0 => 18,
            Self::Q4_1 | Self::Q4_1X16 => 20,
            Self::Q5_0 | Self::Q5_0X16 => 22,
            Self::Q8_0 | Self::Q8_0X16 => 34,
            Self::Q4K => 144,
            Self::Q6K => 210,
            Self::Q4KX16 => q4k_x16::ROW_BLOCK_BYTES,
        }
    }

    /// Rows stored together: a matmul splits a matrix's rows only at multiples of this.
    pub fn row_group(self) -> usize {
        match self {
            Self::Q4KX16 | Self::Q5_0X16 | Self::Q4_1X16 | Self::Q8_0X16 => row_groups::GROUP,
            _ => 1,
        }
    }

    /// Whether the activations are quantized to [`Q8KBlock`]s (else [`Q8Block`]s).
    pub fn uses_q8k(self) -> bool {
        matches!(self, Self::Q4K | Self::Q6K | Self::Q4KX16)
    }
}

pub use activations::{quantize_q8, quantize_q8k, round_to_f16, Q8Block, Q8KBlock, MAX_MULT};

/// Elements of a 32-element block.
pub const QK: usize = 32;
/// Elements of a k-quant super-block.
pub const QK_K: usize = 256;

/// IEEE half to single precision, exactly (ggml stores block scales as f16).
#[inline]
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let mant = (h & 0x3ff) as u32;
    if exp == 0 {
        // Zero or subnormal: mant · 2⁻²⁴, exact in f32.
        let v = mant as f32 * (1.0 / 16_777_216.0);
        return f32::from_bits(v.to_bits() | sign);
    }
    let bits = if exp == 0x1f {
        sign | 0x7f80_0000 | (mant << 13)
    } else {
        sign | ((exp + 112) << 23) | (mant << 13)
    };
    f32::from_bits(bits)
}

#[inline]
pub(crate) fn read_f16(b: &[u8], at: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([b[at], b[at + 1]]))
}

/// Q4_K's 6-bit scale and min of sub-block `j` (ggml's `get_scale_min_k4`).
#[inline(always)]
pub(crate) fn scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

/// Which implementation runs the kernels.
#[derive(Clone, Copy, Debug)]
pub enum Isa {
    Scalar,
    #[cfg(target_arch = "x86_64")]
    Avx2(avx2::Avx2),
    /// AVX-512 VNNI (with AVX2, FMA, F16C).
    #[cfg(target_arch = "x86_64")]
    Vnni(vnni::Vnni),
    /// NEON, plain or with dotprod or i8mm (the token says which).
    #[cfg(target_arch = "aarch64")]
    Neon(neon::Neon),
}

impl Isa {
    /// The fastest implementation this CPU supports.
    pub fn best() -> Self {
        #[cfg(target_arch = "x86_64")]
        if let Some(t) = vnni::Vnni::detect() {
            return Self::Vnni(t);
        }
        #[cfg(target_arch = "aarch64")]
        let best = Self::Neon(neon::Neon::best());
        #[cfg(not(target_arch = "aarch64"))]
        let best = Self::best_avx2();
        best
    }

    /// The AVX2 kernels if the CPU has them (else scalar): the path before AVX-512, kept for
    /// comparisons. On ARM, with no AVX-512 to leave out, the best path.
    pub fn best_avx2() -> Self {
        #[cfg(target_arch = "x86_64")]
        if let Some(t) = avx2::Avx2::detect() {
            return Self::Avx2(t);
        }
        #[cfg(target_arch = "aarch64")]
        let without = Self::best();
        #[cfg(not(target_arch = "aarch64"))]
        let without = Self::Scalar;
        without
    }

    /// Every implementation this CPU supports (for tests).
    pub fn all() -> Vec<Self> {
        #[allow(unused_mut)]
        let mut v = vec![Self::Scalar];
        #[cfg(target_arch = "x86_64")]
        if let Some(t) = avx2::Avx2::detect() {
            v.push(Self::Avx2(t));
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(t) = vnni::Vnni::detect() {
            v.push(Self::Vnni(t));
        }
        #[cfg(target_arch = "aarch64")]
        v.extend(neon::Neon::detect_all().into_iter().map(Self::Neon));
        v
    }
}

/// Checks that `w` is `rows` whole rows of blocks and each activation row has a row's worth
/// of blocks; returns the bytes of one weight row.
fn check<A, const R: usize>(kind: WeightKind, w: &[u8], a: &[&[A]; R], rows: usize) -> usize {
    if rows == 0 {
        assert!(w.is_empty(), "weights without outputs");
        return 0;
    }
    let row_bytes = w.len() / rows;
    assert_eq!(row_bytes * rows, w.len(), "weights are not whole rows");
    let nb = row_bytes / kind.block_bytes();
    assert_eq!(
        nb * kind.block_bytes(),
        row_bytes,
        "weight row is not whole blocks"
    );
    for row in a {
        assert_eq!(
            row.len(),
            nb,
            "activation row has the wrong number of blocks"
        );
    }
    row_bytes
}

type Kernel<A, const R: usize> = fn(&[u8], &[&[A]; R], &mut [f32; R]);

fn scalar_rows<A, const R: usize>(
    f: Kernel<A, R>,
    w: &[u8],
    row_bytes: usize,
    a: &[&[A]; R],
    out: &mut [[f32; R]],
) {
    if row_bytes == 0 {
        return;
    }
    for (wr, o) in w.chunks_exact(row_bytes).zip(out.iter_mut()) {
        f(wr, a, o);
    }
}

/// `out[c][r] = w[c] · a[r]` for the `out.len()` weight rows in `w` (raw ggml blocks of a
/// 32-element `kind`) and `R` activation rows. Panics if the lengths disagree or `kind` uses
/// Q8_K activations.
pub fn dot_q8<const R: usize>(
    isa: Isa,
    kind: WeightKind,
    w: &[u8],
    a: &[&[Q8Block]; R],
    out: &mut [[f32; R]],
) {
    // The sixteen-row layouts have VNNI and AVX2 kernels (weights are repacked only where
    // those run); the plain references compute them anywhere else.
    match (kind, isa) {
        #[cfg(target_arch = "x86_64")]
        (WeightKind::Q5_0X16, Isa::Avx2(t)) => return avx2_x16::dot_q5_0_x16(t, w, a, out),
        #[cfg(target_arch = "x86_64")]
        (WeightKind::Q4_1X16, Isa::Avx2(t)) => return avx2_x16::dot_q4_1_x16(t, w, a, out),
        #[cfg(target_arch = "x86_64")]
        (WeightKind::Q8_0X16, Isa::Avx2(t)) => return avx2_x16::dot_q8_0_x16(t, w, a, out),
        #[cfg(target_arch = "x86_64")]
        (WeightKind::Q5_0X16, Isa::Vnni(t)) => return vnni_q5_0_x16::dot_q5_0_x16(t, w, a, out),
        #[cfg(target_arch = "x86_64")]
        (WeightKind::Q4_1X16, Isa::Vnni(t)) => return vnni_q4_1_x16::dot_q4_1_x16(t, w, a, out),
        #[cfg(target_arch = "x86_64")]
        (WeightKind::Q8_0X16, Isa::Vnni(t)) => return vnni_q8_0_x16::dot_q8_0_x16(t, w, a, out),
        (WeightKind::Q5_0X16, _) => return q5_0_x16::dot(w, a, out),
        (WeightKind::Q8_0X16, _) => return q8_0_x16::dot(w, a, out),
        (WeightKind::Q4_1X16, _) => return q4_1_x16::dot(w, a, out),
        _ => {}
    }
    let row_bytes = check(kind, w, a, out.len());
    match isa {
        Isa::Scalar => {
            let f: Kernel<Q8Block, R> = match kind {
                WeightKind::Q4_0 => scalar::dot_q4_0,
                WeightKind::Q4_1 => scalar::dot_q4_1,
                WeightKind::Q5_0 => scalar::dot_q5_0,
                WeightKind::Q5_0X16 | WeightKind::Q4_1X16 | WeightKind::Q8_0X16 => {
                    unreachable!("repacked weights are handled above")
                }
                WeightKind::Q8_0 => scalar::dot_q8_0,
                WeightKind::Q4K | WeightKind::Q6K | WeightKind::Q4KX16 => {
                    panic!("{kind:?} takes Q8_K activations")
                }
            };
            scalar_rows(f, w, row_bytes, a, out)
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2(t) => match kind {
            WeightKind::Q4_0 => avx2::dot_q4_0(t, w, a, out),
            WeightKind::Q4_1 => avx2::dot_q4_1(t, w, a, out),
            WeightKind::Q5_0 => avx2::dot_q5_0(t, w, a, out),
            WeightKind::Q5_0X16 | WeightKind::Q4_1X16 | WeightKind::Q8_0X16 => {
                unreachable!("repacked weights are handled above")
            }
            WeightKind::Q8_0 => avx2::dot_q8_0(t, w, a, out),
            WeightKind::Q4K | WeightKind::Q6K | WeightKind::Q4KX16 => {
                panic!("{kind:?} takes Q8_K activations")
            }
        },
        #[cfg(target_arch = "x86_64")]
        Isa::Vnni(t) => match kind {
            WeightKind::Q4_0 => vnni::dot_q4_0(t, w, a, out),
            WeightKind::Q4_1 => vnni::dot_q4_1(t, w, a, out),
            WeightKind::Q5_0 => vnni::dot_q5_0(t, w, a, out),
            WeightKind::Q5_0X16 | WeightKind::Q4_1X16 | WeightKind::Q8_0X16 => {
                unreachable!("repacked weights are handled above")
            }
            WeightKind::Q8_0 => vnni::dot_q8_0(t, w, a, out),
            WeightKind::Q4K | WeightKind::Q6K | WeightKind::Q4KX16 => {
                panic!("{kind:?} takes Q8_K activations")
            }
        },
        #[cfg(target_arch = "aarch64")]
        Isa::Neon(t) => neon::dot_q8(t, kind, w, row_bytes, a, out),
    }
}

/// As [`dot_q8`] for k-quant weight rows. Panics if the lengths disagree or `kind` is not a
/// k-quant.
pub fn dot_q8k<const R: usize>(
    isa: Isa,
    kind: WeightKind,
    w: &[u8],
    a: &[&[Q8KBlock]; R],
    out: &mut [[f32; R]],
) {
    if kind == WeightKind::Q4KX16 {
        #[cfg(target_arch = "x86_64")]
        match isa {
            Isa::Vnni(t) => return vnni_q4k_x16::dot_q4k_x16(t, w, a, out),
            Isa::Avx2(t) => return avx2_x16::dot_q4k_x16(t, w, a, out),
            Isa::Scalar => {}
        }
        return q4k_x16::dot(w, a, out);
    }
    let row_bytes = check(kind, w, a, out.len());
    match isa {
        Isa::Scalar => {
            let f: Kernel<Q8KBlock, R> = match kind {
                WeightKind::Q4K => scalar::dot_q4k,
                WeightKind::Q6K => scalar::dot_q6k,
                _ => panic!("{kind:?} takes Q8 activations"),
            };
            scalar_rows(f, w, row_bytes, a, out)
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2(t) => match kind {
            WeightKind::Q4K => avx2::dot_q4k(t, w, a, out),
            WeightKind::Q6K => avx2::dot_q6k(t, w, a, out),
            _ => panic!("{kind:?} takes Q8 activations"),
        },
        #[cfg(target_arch = "x86_64")]
        Isa::Vnni(t) => match kind {
            WeightKind::Q4K => vnni::dot_q4k(t, w, a, out),
            WeightKind::Q6K => vnni::dot_q6k(t, w, a, out),
            _ => panic!("{kind:?} takes Q8 activations"),
        },
        #[cfg(target_arch = "aarch64")]
        Isa::Neon(t) => neon::dot_q8k(t, kind, w, row_bytes, a, out),
    }
}
