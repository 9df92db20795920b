//! NEON kernels of the 32-element formats (Q4_0, Q4_1, Q5_0, Q8_0 × Q8 blocks): each block
//! unpacked to 32 signed quants in two vectors, its integer dot products summed exactly
//! (one weight row at a time with [`Dot`], or two weight rows × two activation rows with
//! `smmla`), then the scalar kernels' float step for each row, in their order.

use super::ops::{arr, dot, each_row, each_row_pair, f32x4, load_i8, load_u8, pair, untile, Dot};
use super::Smmla;
use crate::engine::model::kernels::blocks::{Q4_0_BYTES, Q4_1_BYTES, Q5_0_BYTES, Q8_0_BYTES};
use crate::engine::model::kernels::{read_f16, Q8Block};
use core::arch::aarch64::*;

/// One block of weights: 32 signed quants (elements 0..16, 16..32), scale and offset.
pub(super) struct Unpacked {
    q: [int8x16_t; 2],
    d: f32,
    /// Q4_1's `m` (value `d·q + m`); 0 for the others.
    m: f32,
}

/// The 32-element formats.
#[derive(PartialEq, Eq)]
pub(super) enum Kind {
    Q4_0,
    Q4_1,
    Q5_0,
    Q8_0,
}

/// A 32-element weight format (a type, so that each kernel is compiled for one).
pub(super) trait Format {
    const KIND: Kind;
    /// Bytes per block.
    const BYTES: usize;
    /// Whether values carry an offset (Q4_1), summed against the activations' `s`.
    const OFFSET: bool = false;
}

/// Q4_0: `d` (f16), 16 bytes of nibbles, value `d·(q - 8)`.
pub(super) struct Q4_0;
/// Q4_1: `d`, `m` (f16), 16 bytes of nibbles, value `d·q + m`.
pub(super) struct Q4_1;
/// Q5_0: `d` (f16), `qh` (bit i is element i's fifth bit), 16 bytes of nibbles, value
/// `d·(q - 16)`.
pub(super) struct Q5_0;
/// Q8_0: `d` (f16), 32 signed bytes, value `d·q`.
pub(super) struct Q8_0;

impl Format for Q4_0 {
    const KIND: Kind = Kind::Q4_0;
    const BYTES: usize = Q4_0_BYTES;
}

impl Format for Q4_1 {
    const KIND: Kind = Kind::Q4_1;
    const BYTES: usize = Q4_1_BYTES;
    const OFFSET: bool = true;
}

impl Format for Q5_0 {
    const KIND: Kind = Kind::Q5_0;
    const BYTES: usize = Q5_0_BYTES;
}

impl Format for Q8_0 {
    const KIND: Kind = Kind::Q8_0;
    const BYTES: usize = Q8_0_BYTES;
}

/// Block `wb` (whole) of format `F`.
#[target_feature(enable = "neon")]
#[inline]
fn unpack<F: Format>(wb: &[u8]) -> Unpacked {
    let d = read_f16(wb, 0);
    match F::KIND {
        Kind::Q4_0 => {
            let [lo, hi] = nibbles(arr(wb, 2));
            Unpacked {
                q: [minus(lo, 8), minus(hi, 8)],
                d,
                m: 0.0,
            }
        }
        Kind::Q4_1 => {
            let [lo, hi] = nibbles(arr(wb, 4));
            Unpacked {
                q: [vreinterpretq_s8_u8(lo), vreinterpretq_s8_u8(hi)],
                d,
                m: read_f16(wb, 2),
            }
        }
        Kind::Q5_0 => {
            let [lo, hi] = nibbles(arr(wb, 6));
            let lo = vorrq_u8(lo, fifth_bits(wb[2], wb[3]));
            let hi = vorrq_u8(hi, fifth_bits(wb[4], wb[5]));
            Unpacked {
                q: [minus(lo, 16), minus(hi, 16)],
                d,
                m: 0.0,
            }
        }
        Kind::Q8_0 => Unpacked {
            q: [
                vreinterpretq_s8_u8(load_u8(arr(wb, 2))),
                vreinterpretq_s8_u8(load_u8(arr(wb, 18))),
            ],
            d,
            m: 0.0,
        },
    }
}

/// 16 bytes of a 32-nibble block as low nibbles (elements 0..16), high nibbles (16..32).
#[target_feature(enable = "neon")]
#[inline]
fn nibbles(b: &[u8; 16]) -> [uint8x16_t; 2] {
    let v = load_u8(b);
    [vandq_u8(v, vdupq_n_u8(0xF)), vshrq_n_u8::<4>(v)]
}

#[target_feature(enable = "neon")]
#[inline]
fn minus(q: uint8x16_t, off: u8) -> int8x16_t {
    vreinterpretq_s8_u8(vsubq_u8(q, vdupq_n_u8(off)))
}

/// Byte `i` is 0x10 where bit `i % 8` of `lo` (`i < 8`) or `hi` (`i >= 8`) is set, else 0.
#[target_feature(enable = "neon")]
#[inline]
fn fifth_bits(lo: u8, hi: u8) -> uint8x16_t {
    const BIT: [u8; 16] = [1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128];
    let spread = vcombine_u8(vdup_n_u8(lo), vdup_n_u8(hi));
    vandq_u8(vtstq_u8(spread, load_u8(&BIT)), vdupq_n_u8(0x10))
}

#[target_feature(enable = "neon")]
#[inline]
fn quants(ab: &Q8Block) -> [int8x16_t; 2] {
    [load_i8(arr(&ab.qs, 0)), load_i8(arr(&ab.qs, 16))]
}

/// The scalar kernels' float step: `acc + isum·(d·d_a)` (plus `m·s_a` for an offset format,
/// added to the product before the accumulator), unfused.
#[inline(always)]
fn step<F: Format>(acc: f32, isum: i32, dd: f32, ms: f32) -> f32 {
    if F::OFFSET {
        acc + (isum as f32 * dd + ms)
    } else {
        acc + isum as f32 * dd
    }
}

/// One weight row against the `R` activation rows.
#[target_feature(enable = "neon")]
#[inline]
fn row<F: Format, D: Dot, const R: usize>(t: D, w: &[u8], a: &[&[Q8Block]; R]) -> [f32; R] {
    let mut acc = [0f32; R];
    for (b, wb) in w.chunks_exact(F::BYTES).enumerate() {
        let u = unpack::<F>(wb);
        for r in 0..R {
            let ab = &a[r][b];
            let [y0, y1] = quants(ab);
            let p = dot(t, dot(t, vdupq_n_s32(0), u.q[0], y0), u.q[1], y1);
            acc[r] = step::<F>(acc[r], vaddvq_s32(p), u.d * ab.d, u.m * ab.s);
        }
    }
    acc
}

/// `out[c][r]` = weight row `c` (`row_bytes` each, `row_bytes > 0`) · `a[r]`, a weight row at a
/// time.
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn rows<F: Format, D: Dot, const R: usize>(
    t: D,
    w: &[u8],
    row_bytes: usize,
    a: &[&[Q8Block]; R],
    out: &mut [[f32; R]],
) {
    each_row(w, row_bytes, out, |wr| row::<F, D, R>(t, wr, a));
}

/// As [`rows`] for an even `R`, two weight rows × two activation rows per `smmla` (an odd last
/// weight row on its own, with the same arithmetic).
#[target_feature(enable = "neon")]
#[inline]
pub(super) fn rows_mmla<F: Format, const R: usize>(
    t: Smmla,
    w: &[u8],
    row_bytes: usize,
    a: &[&[Q8Block]; R],
    out: &mut [[f32; R]],
) {
    each_row_pair(
        w,
        row_bytes,
        out,
        |w0, w1| row_pair::<F, R>(t, w0, w1, a),
        |wr| row::<F, Smmla, R>(t, wr, a),
    );
}

/// Weight rows `w0`, `w1` against the `R` (even) activation rows.
#[target_feature(enable = "neon")]
#[inline]
fn row_pair<F: Format, const R: usize>(
    t: Smmla,
    w0: &[u8],
    w1: &[u8],
    a: &[&[Q8Block]; R],
) -> [[f32; R]; 2] {
    // The tiles of `untile`, one per pair of activation rows.
    let mut acc = [vdupq_n_f32(0.0); R];
    let blocks = w0.chunks_exact(F::BYTES).zip(w1.chunks_exact(F::BYTES));
    for (b, (b0, b1)) in blocks.enumerate() {
        let (u0, u1) = (unpack::<F>(b0), unpack::<F>(b1));
        let wq = [pair(u0.q[0], u1.q[0]), pair(u0.q[1], u1.q[1])];
        let dw = f32x4([u0.d, u0.d, u1.d, u1.d]);
        let mw = f32x4([u0.m, u0.m, u1.m, u1.m]);
        for h in 0..R / 2 {
            let (x, y) = (&a[2 * h][b], &a[2 * h + 1][b]);
            let (xq, yq) = (quants(x), quants(y));
            let mut s = vdupq_n_s32(0);
            for k in 0..2 {
                let aq = pair(xq[k], yq[k]);
                s = t.mmla(s, wq[k][0], aq[0]);
                s = t.mmla(s, wq[k][1], aq[1]);
            }
            // Lane by lane the same operations as `step`.
            let dd = vmulq_f32(dw, f32x4([x.d, y.d, x.d, y.d]));
            let mut v = vmulq_f32(vcvtq_f32_s32(s), dd);
            if F::OFFSET {
                v = vaddq_f32(v, vmulq_f32(mw, f32x4([x.s, y.s, x.s, y.s])));
            }
            acc[h] = vaddq_f32(acc[h], v);
        }
    }
    untile(&acc)
}
