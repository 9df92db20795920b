//! Q8_0 weights repacked sixteen rows at a time ("Q8_0×16"), for AVX-512 VNNI and AVX2: the layout of
//! [`super::q5_0_x16`] for the format of Gemma 3's output head (its 262,144 rows are most of
//! a perplexity run and of a decode step). Exactly as large as ggml's layout.
//!
//! One group's block ([`BLOCK_BYTES`] bytes):
//! - `d` of the sixteen rows, f16 (32 bytes);
//! - the quants: for `g` in 0..8, 64 bytes at `32 + 64 g` whose bytes `4 i .. 4 i + 4` hold
//!   row `i`'s quants `4 g .. 4 g + 4`, each plus 128: `vpdpbusd` takes its first operand
//!   unsigned, so the weights carry the bias and `-128 Σ y` takes it off again.
//!
//! A row's result is `Σ_b (d·d_a) · (Σ (q + 128)·y − 128 Σ y)`, the integer sum exact (so equal
//! to ggml's `Σ q·y`), accumulated with fused multiply-adds; [`dot`] is the plain reference
//! the SIMD kernel matches bit for bit.

use crate::engine::model::kernels::blocks::Q8_0_BYTES;
use crate::engine::model::kernels::packed::{self, GROUP};
use crate::engine::model::kernels::{read_f16, Q8Block, QK};

/// Bytes of one group's block.
pub const BLOCK_BYTES: usize = GROUP * Q8_0_BYTES;

pub(crate) const D: usize = 0;
pub(crate) const QS: usize = 32;
/// What each stored quant carries on top of ggml's.
const BIAS: i32 = 128;

/// Repacks `rows` rows of ggml Q8_0 blocks into `out`: whole groups, zeros where rows are
/// missing (padding rows are not written). Groups are repacked in parallel.
pub fn repack_into(w: &[u8], rows: usize, out: &mut [u8]) {
    packed::repack(w, rows, out, repack_block);
}

/// Row `i`'s ggml block (`d`, 32 signed quants) into its lanes, each quant biased by 128.
#[inline(always)]
fn repack_block(src: &[u8; Q8_0_BYTES], i: usize, dst: &mut [u8; BLOCK_BYTES]) {
    dst[D + 2 * i..D + 2 * i + 2].copy_from_slice(&src[0..2]);
    for g in 0..8 {
        let at = QS + 64 * g + 4 * i;
        let four = u32::from_le_bytes([
            src[2 + 4 * g],
            src[3 + 4 * g],
            src[4 + 4 * g],
            src[5 + 4 * g],
        ]);
        // Two's complement plus 128 is the sign bit flipped.
        dst[at..at + 4].copy_from_slice(&(four ^ 0x8080_8080).to_le_bytes());
    }
}

/// The biased quant of row `i` at position `l` of a group's block.
fn quant_at(block: &[u8], i: usize, l: usize) -> i32 {
    i32::from(block[QS + 64 * (l / 4) + 4 * i + l % 4])
}

pub(crate) fn check<const R: usize>(w: &[u8], a: &[&[Q8Block]; R], rows: usize) -> usize {
    packed::check(w, a, rows, BLOCK_BYTES)
}

/// `-128 Σ y` of each activation block: the bias of the stored quants, taken off.
pub(crate) fn offsets<const R: usize>(a: &[&[Q8Block]; R], nb: usize) -> Vec<[i32; R]> {
    packed::block_offsets(a, nb, -BIAS)
}

/// The plain reference: `out[c][r]` = row `c` · `a[r]` for the `out.len()` rows of `w` (whole
/// groups of [`BLOCK_BYTES`]-byte blocks), in the order the SIMD kernel computes it.
pub fn dot<const R: usize>(w: &[u8], a: &[&[Q8Block]; R], out: &mut [[f32; R]]) {
    let nb = check(w, a, out.len());
    let offsets = offsets(a, nb);
    packed::dot_q8_reference::<R, BLOCK_BYTES>(w, a, out, nb, D, &offsets, quant_at);
}

/// Row `row` of a matrix of `nb` blocks a row, dequantized onto `out`: `d · q`, as ggml's
/// Q8_0 dequantization gives it (a tied output head serves the token embeddings from here,
/// so their lookups never map the file's pages back).
pub fn dequantize_row(packed: &[u8], nb: usize, row: usize, out: &mut Vec<f32>) {
    let (g, i) = (row / GROUP, row % GROUP);
    for b in 0..nb {
        let at = (g * nb + b) * BLOCK_BYTES;
        let block = &packed[at..at + BLOCK_BYTES];
        let d = read_f16(block, D + 2 * i);
        out.extend((0..QK).map(|l| (quant_at(block, i, l) - BIAS) as f32 * d));
    }
}
