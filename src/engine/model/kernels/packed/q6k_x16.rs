//! Q6_K weights repacked sixteen rows at a time ("Q6_K×16"), for AVX-512 VNNI and AVX2: the
//! format of a Q4_K_M file's output head and of half its `ffn_down` and `attn_v` matrices.
//! Exactly as large as ggml's layout.
//!
//! As in [`super::q4k_x16`], lane `i` of every vector is row `i` of a group of sixteen, so one
//! multiply-add against four activation bytes broadcast to all lanes advances sixteen rows,
//! and the float steps serve sixteen rows per instruction.
//!
//! One group's super-block ([`BLOCK_BYTES`] bytes):
//! - `d` of the sixteen rows, f16 (32 bytes);
//! - each of the sixteen 16-element sub-blocks' signed scale, a byte per row (sub-block `t`
//!   at `16 t`);
//! - the low four bits of the quants: for each 32-element chunk `s` and `h` in 0..4, 64 bytes
//!   at `256 s + 64 h` whose bytes `4 i .. 4 i + 4` hold row `i`'s quants `32 s + 4 h ..` in
//!   their low nibbles and `32 s + 16 + 4 h ..` in their high ones (as Q4_K×16);
//! - their high two bits: for chunk `s` and `k` in 0..2, 64 bytes at `128 s + 64 k` whose
//!   byte `4 i + j` holds, in bits `2 m ..`, those of row `i`'s quant `j` of the four that
//!   the nibbles of group `4 k + m` hold (so group `g` is one shift and mask away).
//!
//! Quants are stored unsigned (`q + 32`, 0..63), as a `vpdpbusd` takes them. A row's result
//! is `Σ_b d_a·d·Σ_t sc_t·mult_t·(Σ q·y − 32·Σ y)` over the sixteen sub-blocks (`mult_t` the
//! activations' step multiplier of the sub-block's 32): the super-block's sum in integers
//! (`sc_t·mult_t` fits AVX2's 16-bit words), then one conversion and two float steps;
//! [`dot`] is the plain reference the SIMD kernels match bit for bit. The rows
//! past the end of a matrix are zeros, and their lanes are never read back.

use super::q4k_x16;
use crate::engine::model::kernels::blocks::Q6K_BYTES;
use crate::engine::model::kernels::packed::{self, GROUP};
use crate::engine::model::kernels::{read_f16, Q8KBlock, QK_K};

/// Bytes of one group's super-block.
pub const BLOCK_BYTES: usize = QH + 8 * 128;
/// Bytes of ggml's block of one row.
const GGML_BYTES: usize = Q6K_BYTES;

pub(crate) const D: usize = 0;
pub(crate) const SCALES: usize = 32;
pub(crate) const QL: usize = 288;
pub(crate) const QH: usize = QL + 8 * 256;

/// Repacks `rows` rows of ggml Q6_K blocks into `out`: whole groups, zeros where rows are
/// missing (padding rows are not written). Groups are repacked in parallel.
pub fn repack_into(w: &[u8], rows: usize, out: &mut [u8]) {
    packed::repack(w, rows, out, repack_block);
}

/// ggml's 256 quants of one block (0..63, not yet less 32), in element order.
fn ggml_quants(src: &[u8; GGML_BYTES]) -> [u8; QK_K] {
    let (ql, qh) = (&src[0..128], &src[128..192]);
    let mut q = [0u8; QK_K];
    for n in 0..2 {
        let (ql, qh, y) = (&ql[64 * n..], &qh[32 * n..], &mut q[128 * n..]);
        for l in 0..32 {
            y[l] = (ql[l] & 0xF) | ((qh[l] & 3) << 4);
            y[l + 32] = (ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4);
            y[l + 64] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
            y[l + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
        }
    }
    q
}

/// Row `i`'s ggml block into its lanes of a group's block. Four quants at a time, as u32:
/// the quants of group `g` of chunk `s` are elements `32 s + 4 g ..` for g < 4 and
/// `32 s + 16 + 4 (g - 4) ..` after.
#[inline(always)]
fn repack_block(src: &[u8; GGML_BYTES], i: usize, dst: &mut [u8; BLOCK_BYTES]) {
    dst[D + 2 * i..D + 2 * i + 2].copy_from_slice(&src[208..210]);
    for t in 0..16 {
        dst[SCALES + 16 * t + i] = src[192 + t];
    }
    let q = ggml_quants(src);
    let group = |s: usize, g: usize| {
        let at = 32 * s + if g < 4 { 4 * g } else { 16 + 4 * (g - 4) };
        u32::from_le_bytes([q[at], q[at + 1], q[at + 2], q[at + 3]])
    };
    const LOW: u32 = 0x0F0F_0F0F;
    const TWO: u32 = 0x0303_0303;
    let mut put = |at: usize, word: u32| dst[at..at + 4].copy_from_slice(&word.to_le_bytes());
    for s in 0..8 {
        for h in 0..4 {
            let nibbles = (group(s, h) & LOW) | (group(s, h + 4) & LOW) << 4;
            put(QL + 256 * s + 64 * h + 4 * i, nibbles);
        }
        for k in 0..2 {
            let high = (0..4).fold(0, |acc, m| {
                acc | (group(s, 4 * k + m) >> 4 & TWO) << (2 * m)
            });
            put(QH + 128 * s + 64 * k + 4 * i, high);
        }
    }
}

/// The quant (0..63) of row `i` at position `l` of a group's block.
fn quant_at(block: &[u8], i: usize, l: usize) -> u8 {
    let (s, g, j) = q4k_x16::group_and_byte(l);
    let low = block[QL + 256 * s + 64 * (g % 4) + 4 * i + j];
    let low = if g < 4 { low & 0xF } else { low >> 4 };
    let high = block[QH + 128 * s + 64 * (g / 4) + 4 * i + j] >> (2 * (g % 4)) & 3;
    low | high << 4
}

pub(crate) fn check<const R: usize>(w: &[u8], a: &[&[Q8KBlock]; R], rows: usize) -> usize {
    packed::check(w, a, rows, BLOCK_BYTES)
}

/// The plain reference: `out[c][r]` = row `c` · `a[r]` for the `out.len()` rows of `w` (whole
/// groups of [`BLOCK_BYTES`]-byte blocks), in the order the SIMD kernels compute it.
pub fn dot<const R: usize>(w: &[u8], a: &[&[Q8KBlock]; R], out: &mut [[f32; R]]) {
    let nb = check(w, a, out.len());
    if nb == 0 {
        out.iter_mut().for_each(|o| *o = [0.0; R]);
        return;
    }
    for (g, group) in w.chunks_exact(nb * BLOCK_BYTES).enumerate() {
        for (i, o) in out.iter_mut().skip(g * GROUP).take(GROUP).enumerate() {
            let mut acc = [0f32; R];
            for (b, block) in group.chunks_exact(BLOCK_BYTES).enumerate() {
                let d = read_f16(block, D + 2 * i);
                for r in 0..R {
                    let ab = &a[r][b];
                    // Each sub-block's integer sum weighted by its scale times the step
                    // multiplier (|sc · mult| ≤ 2¹¹), less the +32 offset of the stored quants
                    // as the scaled sums of 16, all in integers. The result is at most
                    // 256 · 32 · 128 · 2¹¹ = 2³¹ in magnitude (only -2³¹ reaches it), so it is
                    // an i32; the partial sums may wrap, as the SIMD kernels' do.
                    let mut isum = 0i32;
                    let mut offset = 0i32;
                    for t in 0..16 {
                        let dot: i32 = (0..16)
                            .map(|l| {
                                let q = quant_at(block, i, 16 * t + l) as i32;
                                q * ab.qs[16 * t + l] as i32
                            })
                            .sum();
                        let scale = i32::from(block[SCALES + 16 * t + i] as i8);
                        let weight = scale * i32::from(ab.mult[t / 2]);
                        isum = isum.wrapping_add(weight.wrapping_mul(dot));
                        offset += scale * i32::from(ab.mult_bsums[t]);
                    }
                    let isum = isum.wrapping_sub(offset.wrapping_mul(32));
                    acc[r] = (isum as f32 * d).mul_add(ab.d, acc[r]);
                }
            }
            *o = acc;
        }
    }
}

const _: () = assert!(BLOCK_BYTES == GROUP * GGML_BYTES && QK_K == 256);
