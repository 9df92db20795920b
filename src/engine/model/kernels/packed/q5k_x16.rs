//! Q5_K weights repacked sixteen rows at a time ("Q5_K×16"), for AVX-512 VNNI and AVX2: the
//! format of Phi-4-mini's fused `attn_qkv` in its Q4_K_M file, and of Q5_K_M files.
//!
//! Q5_K is Q4_K with a fifth bit per quant, so the layout is [`super::q4k_x16`]'s (its fields
//! at the same offsets) followed by the high bits: for each 32-element chunk `s`, 64 bytes at
//! [`high`]` + 64 s` whose byte `4 i + j` holds in bit `g` the fifth bit of the quant of row
//! `i` that byte `j` of group `g`'s nibbles holds (as [`super::q5_0_x16`] stores Q5_0's). A
//! group's quants are then the nibbles with one shift and mask of that byte each. 180 bytes a
//! row and super-block, against ggml's 176, with the scales a byte each; compact, as
//! Q4_K×16's, exactly ggml's 176.
//!
//! A row's result is Q4_K×16's sum with the five-bit quants; [`dot`] is the plain reference
//! the SIMD kernels match bit for bit.

use super::q4k_x16;
use crate::engine::model::kernels::blocks::Q5K_BYTES;
use crate::engine::model::kernels::packed::{self, GROUP};
use crate::engine::model::kernels::{Q8KBlock, QK_K};

/// Bytes of one group's super-block, the scales a byte each.
pub const BLOCK_BYTES: usize = high(false) + 8 * 64;
/// Bytes per row and super-block (what a matmul slices rows by; a group is 16 of them).
pub const ROW_BLOCK_BYTES: usize = BLOCK_BYTES / GROUP;
/// [`BLOCK_BYTES`] of the compact form.
pub const COMPACT_BLOCK_BYTES: usize = high(true) + 8 * 64;
/// [`ROW_BLOCK_BYTES`] of the compact form: ggml's 176.
pub const COMPACT_ROW_BLOCK_BYTES: usize = COMPACT_BLOCK_BYTES / GROUP;
/// Bytes of ggml's block of one row.
const GGML_BYTES: usize = Q5K_BYTES;

/// Where the fifth bits start: after Q4_K×16's block.
pub(crate) const fn high(compact: bool) -> usize {
    q4k_x16::block_bytes(compact)
}

/// Repacks `rows` rows of ggml Q5_K blocks into `out`: whole groups, zeros where rows are
/// missing (padding rows are not written). Groups are repacked in parallel.
pub fn repack_into(w: &[u8], rows: usize, out: &mut [u8]) {
    packed::repack(w, rows, out, repack_block::<false, BLOCK_BYTES>);
}

/// [`repack_into`] the compact form.
pub fn repack_compact_into(w: &[u8], rows: usize, out: &mut [u8]) {
    packed::repack(w, rows, out, repack_block::<true, COMPACT_BLOCK_BYTES>);
}

/// Row `i`'s ggml block (`d`, `dmin`, 12 bytes of scales, 32 of fifth bits, 128 of nibbles)
/// into its lanes of a group's block.
#[inline(always)]
fn repack_block<const COMPACT: bool, const B: usize>(
    src: &[u8; GGML_BYTES],
    i: usize,
    dst: &mut [u8; B],
) {
    q4k_x16::put_row::<COMPACT>(
        src[0..16].try_into().expect("16 bytes"),
        &src[48..176],
        i,
        dst,
    );
    // ggml: bit s of byte l of the 32 is the fifth bit of quant 32s + l. Group g of chunk s
    // holds quants 32s + 4g.. (g < 4) and 32s + 16 + 4(g - 4).. (after).
    let qh = &src[16..48];
    for s in 0..8 {
        for j in 0..4 {
            let bits = (0..8).fold(0u8, |acc, g| {
                let l = if g < 4 { 4 * g } else { 16 + 4 * (g - 4) } + j;
                acc | (qh[l] >> s & 1) << g
            });
            dst[high(COMPACT) + 64 * s + 4 * i + j] = bits;
        }
    }
}

/// The quant (0..31) of row `i` at position `l` of a group's block.
fn quant_at<const COMPACT: bool>(block: &[u8], i: usize, l: usize) -> u8 {
    let (s, g, j) = q4k_x16::group_and_byte(l);
    let fifth = block[high(COMPACT) + 64 * s + 4 * i + j] >> g & 1;
    q4k_x16::quant_at::<COMPACT>(block, i, l) | fifth << 4
}

/// The plain reference: `out[c][r]` = row `c` · `a[r]` for the `out.len()` rows of `w` (whole
/// groups of [`BLOCK_BYTES`]-byte blocks), in the order the SIMD kernels compute it.
pub fn dot<const R: usize>(w: &[u8], a: &[&[Q8KBlock]; R], out: &mut [[f32; R]]) {
    q4k_x16::dot_with::<R, BLOCK_BYTES, false>(w, a, out, quant_at::<false>)
}

/// [`dot`] for the compact form.
pub fn dot_compact<const R: usize>(w: &[u8], a: &[&[Q8KBlock]; R], out: &mut [[f32; R]]) {
    q4k_x16::dot_with::<R, COMPACT_BLOCK_BYTES, true>(w, a, out, quant_at::<true>)
}

const _: () = assert!(BLOCK_BYTES.is_multiple_of(GROUP) && QK_K == 256);
const _: () = assert!(COMPACT_BLOCK_BYTES == GROUP * GGML_BYTES);
