//! Q5_0 weights repacked sixteen rows at a time ("Q5_0×16"), for AVX-512 VNNI and AVX2: the same idea
//! as [`super::q4k_x16`] (lane `i` of every vector is row `i` of a group of sixteen, one
//! `vpdpbusd` against four broadcast activation bytes advances sixteen rows), for the format
//! of most of Gemma 3's layers. The layout is exactly as large as ggml's.
//!
//! One group's block ([`BLOCK_BYTES`] bytes):
//! - `d` of the sixteen rows, f16 (32 bytes);
//! - the low four bits: for `h` in 0..4, 64 bytes at `32 + 64 h` whose bytes `4 i .. 4 i + 4`
//!   hold row `i`'s quants `4 h ..` in their low nibbles and `16 + 4 h ..` in their high ones
//!   (ggml's own `qs[4h..4h + 4]`);
//! - the fifth bits: 64 bytes at 288; byte `4 i + k` has, in bit `g`, the fifth bit of row
//!   `i`'s quant `4 g + k`.
//!
//! A row's result is `Σ_b (d·d_a) · Σ (q − 16)·y`, the integer sum exact, accumulated with
//! fused multiply-adds; [`dot`] is the plain reference the SIMD kernel matches bit for bit.

use crate::engine::model::kernels::blocks::Q5_0_BYTES;
use crate::engine::model::kernels::packed::{self, GROUP};
use crate::engine::model::kernels::Q8Block;
/// Bytes of one group's block.
pub const BLOCK_BYTES: usize = GROUP * Q5_0_BYTES;

pub(crate) const D: usize = 0;
pub(crate) const LOW: usize = 32;
pub(crate) const HIGH: usize = 288;

/// Repacks `rows` rows of ggml Q5_0 blocks into `out`: whole groups, zeros where rows are
/// missing (padding rows are not written). Groups are repacked in parallel.
pub fn repack_into(w: &[u8], rows: usize, out: &mut [u8]) {
    packed::repack(w, rows, out, repack_block);
}

/// Row `i`'s ggml block (`d`, 32 fifth bits, 16 bytes of nibbles) into its lanes.
#[inline(always)]
fn repack_block(src: &[u8; Q5_0_BYTES], i: usize, dst: &mut [u8; BLOCK_BYTES]) {
    dst[D + 2 * i..D + 2 * i + 2].copy_from_slice(&src[0..2]);
    for h in 0..4 {
        let at = LOW + 64 * h + 4 * i;
        dst[at..at + 4].copy_from_slice(&src[6 + 4 * h..10 + 4 * h]);
    }
    let qh = u32::from_le_bytes([src[2], src[3], src[4], src[5]]);
    for k in 0..4 {
        // Bits k, k + 4, ..., k + 28 of `qh` packed into one byte, halving the gaps thrice.
        let x = (qh >> k) & 0x1111_1111;
        let x = (x | x >> 3) & 0x0303_0303;
        let x = (x | x >> 6) & 0x000F_000F;
        dst[HIGH + 4 * i + k] = ((x | x >> 12) & 0xFF) as u8;
    }
}

/// The 5-bit quant of row `i` at position `l` of a group's block.
fn quant_at(block: &[u8], i: usize, l: usize) -> i32 {
    let nibbles = block[LOW + 64 * (l % 16 / 4) + 4 * i + l % 4];
    let low = if l < 16 { nibbles & 0xF } else { nibbles >> 4 };
    let high = (block[HIGH + 4 * i + l % 4] >> (l / 4)) & 1;
    i32::from(low | high << 4)
}

pub(crate) fn check<const R: usize>(w: &[u8], a: &[&[Q8Block]; R], rows: usize) -> usize {
    packed::check(w, a, rows, BLOCK_BYTES)
}

/// `-16 Σ y` of each activation block: the offset of Q5_0's quants, as an integer.
pub(crate) fn offsets<const R: usize>(a: &[&[Q8Block]; R], nb: usize) -> Vec<[i32; R]> {
    packed::block_offsets(a, nb, -16)
}

/// The plain reference: `out[c][r]` = row `c` · `a[r]` for the `out.len()` rows of `w` (whole
/// groups of [`BLOCK_BYTES`]-byte blocks), in the order the SIMD kernel computes it.
pub fn dot<const R: usize>(w: &[u8], a: &[&[Q8Block]; R], out: &mut [[f32; R]]) {
    let nb = check(w, a, out.len());
    let offsets = offsets(a, nb);
    packed::dot_q8_reference::<R, BLOCK_BYTES>(w, a, out, nb, D, &offsets, quant_at);
}
