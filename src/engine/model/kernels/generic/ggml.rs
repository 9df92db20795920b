//! The portable kernels of ggml's layouts: plain integer dot products per block, one f32 accumulator per row.
//!
//! Callers ([`super::dot_q8`], [`super::dot_q8k`]) have checked that `w` is whole blocks and
//! every activation row has as many blocks; all indexing is bounds-checked safe code.

use crate::engine::model::kernels::blocks::{
    Q4K_BYTES, Q4_0_BYTES, Q4_1_BYTES, Q5_0_BYTES, Q6K_BYTES, Q8_0_BYTES,
};
use crate::engine::model::kernels::{read_f16, scale_min_k4, Q8Block, Q8KBlock, QK, QK_K};

#[inline]
fn dot_i8(w: &[i8; QK], a: &[i8; QK]) -> i32 {
    w.iter().zip(a).map(|(&x, &y)| x as i32 * y as i32).sum()
}

/// Q4_0: `d` (f16), 16 bytes of nibbles (low nibbles are elements 0..16, high 16..32), value
/// `d * (q - 8)`.
pub fn dot_q4_0<const R: usize>(w: &[u8], a: &[&[Q8Block]; R], out: &mut [f32; R]) {
    let mut acc = [0f32; R];
    let mut q = [0i8; QK];
    for (b, wb) in w.chunks_exact(Q4_0_BYTES).enumerate() {
        let d = read_f16(wb, 0);
        for j in 0..16 {
            q[j] = (wb[2 + j] & 0xF) as i8 - 8;
            q[j + 16] = (wb[2 + j] >> 4) as i8 - 8;
        }
        for r in 0..R {
            let ab = &a[r][b];
            acc[r] += dot_i8(&q, &ab.qs) as f32 * (d * ab.d);
        }
    }
    *out = acc;
}

/// Q4_1: `d`, `m` (f16), 16 bytes of nibbles, value `d * q + m`.
pub fn dot_q4_1<const R: usize>(w: &[u8], a: &[&[Q8Block]; R], out: &mut [f32; R]) {
    let mut acc = [0f32; R];
    let mut q = [0i8; QK];
    for (b, wb) in w.chunks_exact(Q4_1_BYTES).enumerate() {
        let d = read_f16(wb, 0);
        let m = read_f16(wb, 2);
        for j in 0..16 {
            q[j] = (wb[4 + j] & 0xF) as i8;
            q[j + 16] = (wb[4 + j] >> 4) as i8;
        }
        for r in 0..R {
            let ab = &a[r][b];
            acc[r] += dot_i8(&q, &ab.qs) as f32 * (d * ab.d) + m * ab.s;
        }
    }
    *out = acc;
}

/// Q5_0: `d` (f16), `qh` (u32, bit i is the fifth bit of element i), 16 bytes of nibbles,
/// value `d * (q - 16)`.
pub fn dot_q5_0<const R: usize>(w: &[u8], a: &[&[Q8Block]; R], out: &mut [f32; R]) {
    let mut acc = [0f32; R];
    let mut q = [0i8; QK];
    for (b, wb) in w.chunks_exact(Q5_0_BYTES).enumerate() {
        let d = read_f16(wb, 0);
        let qh = u32::from_le_bytes([wb[2], wb[3], wb[4], wb[5]]);
        for j in 0..16 {
            let h0 = (((qh >> j) & 1) << 4) as u8;
            let h1 = (((qh >> (j + 16)) & 1) << 4) as u8;
            q[j] = ((wb[6 + j] & 0xF) | h0) as i8 - 16;
            q[j + 16] = ((wb[6 + j] >> 4) | h1) as i8 - 16;
        }
        for r in 0..R {
            let ab = &a[r][b];
            acc[r] += dot_i8(&q, &ab.qs) as f32 * (d * ab.d);
        }
    }
    *out = acc;
}

/// Q8_0: `d` (f16), 32 signed bytes, value `d * q`.
pub fn dot_q8_0<const R: usize>(w: &[u8], a: &[&[Q8Block]; R], out: &mut [f32; R]) {
    let mut acc = [0f32; R];
    let mut q = [0i8; QK];
    for (b, wb) in w.chunks_exact(Q8_0_BYTES).enumerate() {
        let d = read_f16(wb, 0);
        for (x, &y) in q.iter_mut().zip(&wb[2..34]) {
            *x = y as i8;
        }
        for r in 0..R {
            let ab = &a[r][b];
            acc[r] += dot_i8(&q, &ab.qs) as f32 * (d * ab.d);
        }
    }
    *out = acc;
}

/// Q4_K: `d`, `dmin` (f16), 12 bytes of 6-bit scales and mins for 8 sub-blocks of 32, then
/// 128 bytes of nibbles: bytes 32j..32j+32 hold sub-block 2j (low) and 2j+1 (high). Value
/// `d * sc * q - dmin * m`.
pub fn dot_q4k<const R: usize>(w: &[u8], a: &[&[Q8KBlock]; R], out: &mut [f32; R]) {
    let mut acc = [0f32; R];
    let mut q = [0u8; QK_K];
    for (b, wb) in w.chunks_exact(Q4K_BYTES).enumerate() {
        let d = read_f16(wb, 0);
        let dmin = read_f16(wb, 2);
        let scales = &wb[4..16];
        let qs = &wb[16..144];
        for j in 0..4 {
            for l in 0..32 {
                q[64 * j + l] = qs[32 * j + l] & 0xF;
                q[64 * j + 32 + l] = qs[32 * j + l] >> 4;
            }
        }
        let sm: [(u8, u8); 8] = std::array::from_fn(|j| scale_min_k4(j, scales));
        for r in 0..R {
            let ab = &a[r][b];
            let mut isum = 0i32;
            let mut msum = 0i32;
            for (j, &(sc, m)) in sm.iter().enumerate() {
                let s: i32 = q[32 * j..32 * j + 32]
                    .iter()
                    .zip(&ab.qs[32 * j..32 * j + 32])
                    .map(|(&x, &y)| x as i32 * y as i32)
                    .sum();
                isum += sc as i32 * ab.mult[j] as i32 * s;
                msum += m as i32
                    * ab.mult[j] as i32
                    * (ab.bsums[2 * j] as i32 + ab.bsums[2 * j + 1] as i32);
            }
            acc[r] += d * ab.d * isum as f32 - dmin * ab.d * msum as f32;
        }
    }
    *out = acc;
}

/// Q6_K: 128 bytes of low nibbles, 64 bytes of high 2-bit pairs, 16 signed 8-bit scales (one
/// per 16 elements), `d` (f16). Value `d * scale * (q - 32)`.
pub fn dot_q6k<const R: usize>(w: &[u8], a: &[&[Q8KBlock]; R], out: &mut [f32; R]) {
    let mut acc = [0f32; R];
    let mut q = [0i8; QK_K];
    for (b, wb) in w.chunks_exact(Q6K_BYTES).enumerate() {
        let (ql, qh, sc) = (&wb[0..128], &wb[128..192], &wb[192..208]);
        let d = read_f16(wb, 208);
        for n in 0..2 {
            let (ql, qh, y) = (&ql[64 * n..], &qh[32 * n..], &mut q[128 * n..]);
            for l in 0..32 {
                y[l] = ((ql[l] & 0xF) | ((qh[l] & 3) << 4)) as i8 - 32;
                y[l + 32] = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) as i8 - 32;
                y[l + 64] = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) as i8 - 32;
                y[l + 96] = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) as i8 - 32;
            }
        }
        for r in 0..R {
            let ab = &a[r][b];
            let mut isum = 0i32;
            for g in 0..16 {
                let s: i32 = q[16 * g..16 * g + 16]
                    .iter()
                    .zip(&ab.qs[16 * g..16 * g + 16])
                    .map(|(&x, &y)| x as i32 * y as i32)
                    .sum();
                isum += sc[g] as i8 as i32 * ab.mult[g / 2] as i32 * s;
            }
            acc[r] += d * ab.d * isum as f32;
        }
    }
    *out = acc;
}
