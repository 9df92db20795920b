//! NEON kernels of the k-quants (Q4_K, Q6_K × Q8_K blocks): a super-block unpacked to 256
//! signed quants in sixteen vectors, each sub-block's integer dot product summed exactly and
//! multiplied by its integer scale (one weight row at a time with [`Dot`], or two weight rows
//! × two activation rows with `smmla`), then the scalar kernels' float step for each row.

use super::ops::{
    arr, dot, each_row, each_row_pair, f32x4, i32x4, load_i16, load_i8, load_u8, pair, untile, Dot,
};
use super::Smmla;
use crate::engine::model::kernels::blocks::{Q4K_BYTES, Q6K_BYTES};
use crate::engine::model::kernels::{read_f16, scale_min_k4, Q8KBlock};
use core::arch::aarch64::*;

/// One super-block of weights: 256 quants as sixteen vectors of 16, and its scales.
pub(super) struct Unpacked {
    q: [int8x16_t; 16],
    /// The integer scale of each vector's 16 quants (Q4_K: of its sub-block of 32).
    sc: [i32; 16],
    /// Q4_K's sub-block mins (as i16 for the multiply); zero for Q6_K.
    mins: int16x8_t,
    d: f32,
    /// Q4_K's `dmin`; 0 for Q6_K.
    dmin: f32,
}

/// The k-quant formats.
#[derive(PartialEq, Eq)]
pub(super) enum Kind {
    Q4K,
    Q6K,
}

/// A k-quant weight format (a type, so that each kernel is compiled for one).
pub(super) trait Format {
    const KIND: Kind;
    /// Bytes per super-block.
    const BYTES: usize;
    /// Whether values carry a min (Q4_K's `- dmin·m`), summed against the activations' bsums.
    const MINS: bool;
}

/// Q4_K: `d`, `dmin` (f16), 12 bytes of 6-bit scales and mins of 8 sub-blocks of 32, 128 bytes
/// of nibbles (bytes 32j..32j+32: sub-block 2j low, 2j+1 high). Value `d·sc·q - dmin·m`.
pub(super) struct Q4K;
/// Q6_K: 128 bytes of low nibbles, 64 bytes of high 2-bit pairs, 16 signed 8-bit scales (one
/// per 16 quants), `d` (f16). Value `d·scale·(q - 32)`.
pub(super) struct Q6K;

impl Format for Q4K {
    const KIND: Kind = Kind::Q4K;
    const BYTES: usize = Q4K_BYTES;
    const MINS: bool = true;
}

impl Format for Q6K {
    const KIND: Kind = Kind::Q6K;
    const BYTES: usize = Q6K_BYTES;
    const MINS: bool = false;
}

/// Super-block `wb` (whole) of format `F`.
#[target_feature(enable = "neon")]
#[inline]
fn unpack<F: Format>(wb: &[u8]) -> Unpacked {
    match F::KIND {
        Kind::Q4K => unpack_q4k(wb),
        Kind::Q6K => unpack_q6k(wb),
    }
}

#[target_feature(enable = "neon")]
#[inline]
fn unpack_q4k(wb: &[u8]) -> Unpacked {
    let scales = arr::<u8, 12>(wb, 4);
    let sm: [(u8, u8); 8] = std::array::from_fn(|j| scale_min_k4(j, scales));
    let m4 = vdupq_n_u8(0xF);
    let mut q = [vdupq_n_s8(0); 16];
    for j in 0..4 {
        let v0 = load_u8(arr(wb, 16 + 32 * j));
        let v1 = load_u8(arr(wb, 32 + 32 * j));
        q[4 * j] = vreinterpretq_s8_u8(vandq_u8(v0, m4));
        q[4 * j + 1] = vreinterpretq_s8_u8(vandq_u8(v1, m4));
        q[4 * j + 2] = vreinterpretq_s8_u8(vshrq_n_u8::<4>(v0));
        q[4 * j + 3] = vreinterpretq_s8_u8(vshrq_n_u8::<4>(v1));
    }
    let mins: [i16; 8] = std::array::from_fn(|j| i16::from(sm[j].1));
    Unpacked {
        q,
        sc: std::array::from_fn(|i| i32::from(sm[i / 2].0)),
        mins: load_i16(&mins),
        d: read_f16(wb, 0),
        dmin: read_f16(wb, 2),
    }
}

#[target_feature(enable = "neon")]
#[inline]
fn unpack_q6k(wb: &[u8]) -> Unpacked {
    let (m4, m30) = (vdupq_n_u8(0xF), vdupq_n_u8(0x30));
    let mut q = [vdupq_n_s8(0); 16];
    // Quants 128n + 16h + 32k, for k = 0..4, come from bytes 16h.. of the low nibbles'
    // halves (64n, 64n + 32) and of the high bits' 32n, two bits per k.
    for n in 0..2 {
        for h in 0..2 {
            let la = load_u8(arr(wb, 64 * n + 16 * h));
            let lb = load_u8(arr(wb, 64 * n + 32 + 16 * h));
            let hb = load_u8(arr(wb, 128 + 32 * n + 16 * h));
            let v = [
                vorrq_u8(
                    vandq_u8(la, m4),
                    vshlq_n_u8::<4>(vandq_u8(hb, vdupq_n_u8(3))),
                ),
                vorrq_u8(vandq_u8(lb, m4), vandq_u8(vshlq_n_u8::<2>(hb), m30)),
                vorrq_u8(vshrq_n_u8::<4>(la), vandq_u8(hb, m30)),
                vorrq_u8(vshrq_n_u8::<4>(lb), vandq_u8(vshrq_n_u8::<2>(hb), m30)),
            ];
            for (k, v) in v.into_iter().enumerate() {
                q[8 * n + 2 * k + h] = vreinterpretq_s8_u8(vsubq_u8(v, vdupq_n_u8(32)));
            }
        }
    }
    Unpacked {
        q,
        sc: std::array::from_fn(|g| i32::from(wb[192 + g] as i8)),
        mins: vdupq_n_s16(0),
        d: read_f16(wb, 208),
        dmin: 0.0,
    }
}

#[target_feature(enable = "neon")]
#[inline]
fn quants(ab: &Q8KBlock) -> [int8x16_t; 16] {
    std::array::from_fn(|i| load_i8(arr(&ab.qs, 16 * i)))
}

/// `Σ_j min_j · mult_j · (bsums[2j] + bsums[2j+1])`, exactly (`min · mult` ≤ 63 · 16, pair
/// sums ≤ 2¹², products ≤ 2²²).
#[target_feature(enable = "neon")]
#[inline]
fn min_sum(mins: int16x8_t, ab: &Q8KBlock) -> i32 {
    let mins = vmulq_s16(mins, load_i16(&ab.mult));
    let pairs = vpaddq_s16(load_i16(arr(&ab.bsums, 0)), load_i16(arr(&ab.bsums, 8)));
    let p = vmull_s16(vget_low_s16(mins), vget_low_s16(pairs));
    vaddvq_s32(vmlal_high_s16(p, mins, pairs))
}

/// The scalar kernels' float step, unfused: `acc + ((d·d_a)·isum - (dmin·d_a)·msum)` for
/// Q4_K, `acc + (d·d_a)·isum` for Q6_K.
#[inline(always)]
fn step<F: Format>(acc: f32, u: &Unpacked, da: f32, isum: i32, msum: i32) -> f32 {
    if F::MINS {
        acc + (u.d * da * isum as f32 - u.dmin * da * msum as f32)
    } else {
        acc + u.d * da * isum as f32
    }
}

/// One weight row against the `R` activation rows.
#[target_feature(enable = "neon")]
#[inline]
fn row<F: Format, D: Dot, const R: usize>(t: D, w: &[u8], a: &[&[Q8KBlock]; R]) -> [f32; R] {
    let mut acc = [0f32; R];
    for (b, wb) in w.chunks_exact(F::BYTES).enumerate() {
        let u = unpack::<F>(wb);
        for r in 0..R {
            let ab = &a[r][b];
            let y = quants(ab);
            let mut isum = vdupq_n_s32(0);
            if F::MINS {
                // Q4_K's scales are per 32: two vectors' products, then the scale.
                for j in 0..8 {
                    let p = dot(t, vdupq_n_s32(0), u.q[2 * j], y[2 * j]);
                    let p = dot(t, p, u.q[2 * j + 1], y[2 * j + 1]);
                    // The weights' scale times the activations' step multiplier.
                    let sc = u.sc[2 * j] * i32::from(ab.mult[j]);
                    isum = vmlaq_n_s32(isum, p, sc);
                }
            } else {
                for (i, ((&q, &y), &sc)) in u.q.iter().zip(&y).zip(&u.sc).enumerate() {
                    let sc = sc * i32::from(ab.mult[i / 2]);
                    isum = vmlaq_n_s32(isum, dot(t, vdupq_n_s32(0), q, y), sc);
                }
            }
            let msum = if F::MINS { min_sum(u.mins, ab) } else { 0 };
            acc[r] = step::<F>(acc[r], &u, ab.d, vaddvq_s32(isum), msum);
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
    a: &[&[Q8KBlock]; R],
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
    a: &[&[Q8KBlock]; R],
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
    a: &[&[Q8KBlock]; R],
) -> [[f32; R]; 2] {
    // The tiles of `untile`, one per pair of activation rows.
    let mut acc = [vdupq_n_f32(0.0); R];
    let blocks = w0.chunks_exact(F::BYTES).zip(w1.chunks_exact(F::BYTES));
    for (b, (b0, b1)) in blocks.enumerate() {
        let (u0, u1) = (unpack::<F>(b0), unpack::<F>(b1));
        let wq: [[int8x16_t; 2]; 16] = std::array::from_fn(|i| pair(u0.q[i], u1.q[i]));
        let sc: [int32x4_t; 16] =
            std::array::from_fn(|i| i32x4([u0.sc[i], u0.sc[i], u1.sc[i], u1.sc[i]]));
        for h in 0..R / 2 {
            let (x, y) = (&a[2 * h][b], &a[2 * h + 1][b]);
            let (xq, yq) = (quants(x), quants(y));
            let mut isum = vdupq_n_s32(0);
            // Q4_K's scales are per 32 (the same for vectors 2j and 2j + 1), Q6_K's per 16.
            let per = if F::MINS { 2 } else { 1 };
            for j in 0..16 / per {
                let mut s = vdupq_n_s32(0);
                for i in per * j..per * (j + 1) {
                    let aq = pair(xq[i], yq[i]);
                    s = t.mmla(s, wq[i][0], aq[0]);
                    s = t.mmla(s, wq[i][1], aq[1]);
                }
                // Each lane's weight scale times its activation row's step multiplier.
                let (mx, my) = (x.mult[per * j / 2], y.mult[per * j / 2]);
                let mult = i32x4([mx, my, mx, my].map(i32::from));
                isum = vmlaq_s32(isum, s, vmulq_s32(sc[per * j], mult));
            }
            let msum = if F::MINS {
                i32x4([
                    min_sum(u0.mins, x),
                    min_sum(u0.mins, y),
                    min_sum(u1.mins, x),
                    min_sum(u1.mins, y),
                ])
            } else {
                vdupq_n_s32(0)
            };
            // Lane by lane the same operations as `step`.
            let da = f32x4([x.d, y.d, x.d, y.d]);
            let dw = vmulq_f32(f32x4([u0.d, u0.d, u1.d, u1.d]), da);
            let mut v = vmulq_f32(dw, vcvtq_f32_s32(isum));
            if F::MINS {
                let dm = vmulq_f32(f32x4([u0.dmin, u0.dmin, u1.dmin, u1.dmin]), da);
                v = vsubq_f32(v, vmulq_f32(dm, vcvtq_f32_s32(msum)));
            }
            acc[h] = vaddq_f32(acc[h], v);
        }
    }
    untile(&acc)
}
