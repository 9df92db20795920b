//! Q4_1 weights repacked sixteen rows at a time ("Q4_1×16"), for AVX-512 VNNI and AVX2, as
//! [`super::q5_0_x16`] is for Q5_0: SmolLM2's format. Exactly as large as ggml's layout.
//!
//! One group's block ([`BLOCK_BYTES`] bytes):
//! - `d`, then `m`, of the sixteen rows, f16 (32 bytes each);
//! - the quants: for `h` in 0..4, 64 bytes at `64 + 64 h` whose bytes `4 i .. 4 i + 4` hold
//!   row `i`'s quants `4 h ..` in their low nibbles and `16 + 4 h ..` in their high ones
//!   (ggml's own `qs[4h..4h + 4]`).
//!
//! A row's result is `Σ_b (d·d_a)·Σ q·y + m·s_a` (`s_a` = the activation block's `d_a Σ y`, as
//! ggml's Q8_1 keeps it), accumulated with fused multiply-adds; [`dot`] is the plain reference
//! the SIMD kernel matches bit for bit.

use crate::engine::model::kernels::blocks::Q4_1_BYTES;
use crate::engine::model::kernels::packed::{self, GROUP};
use crate::engine::model::kernels::{read_f16, Q8Block, QK};

/// Bytes of one group's block.
pub const BLOCK_BYTES: usize = GROUP * Q4_1_BYTES;

pub(crate) const D: usize = 0;
pub(crate) const M: usize = 32;
pub(crate) const QS: usize = 64;

/// Repacks `rows` rows of ggml Q4_1 blocks into `out`: whole groups, zeros where rows are
/// missing (padding rows are not written). Groups are repacked in parallel.
pub fn repack_into(w: &[u8], rows: usize, out: &mut [u8]) {
    packed::repack(w, rows, out, repack_block);
}

/// Row `i`'s ggml block (`d`, `m`, 16 bytes of nibbles) into its lanes.
#[inline(always)]
fn repack_block(src: &[u8; Q4_1_BYTES], i: usize, dst: &mut [u8; BLOCK_BYTES]) {
    dst[D + 2 * i..D + 2 * i + 2].copy_from_slice(&src[0..2]);
    dst[M + 2 * i..M + 2 * i + 2].copy_from_slice(&src[2..4]);
    for h in 0..4 {
        let at = QS + 64 * h + 4 * i;
        dst[at..at + 4].copy_from_slice(&src[4 + 4 * h..8 + 4 * h]);
    }
}

/// The plain reference: `out[c][r]` = row `c` · `a[r]` for the `out.len()` rows of `w` (whole
/// groups of [`BLOCK_BYTES`]-byte blocks), in the order the SIMD kernel computes it.
pub fn dot<const R: usize>(w: &[u8], a: &[&[Q8Block]; R], out: &mut [[f32; R]]) {
    let nb = packed::check(w, a, out.len(), BLOCK_BYTES);
    if nb == 0 {
        out.iter_mut().for_each(|o| *o = [0.0; R]);
        return;
    }
    for (g, group) in w.chunks_exact(nb * BLOCK_BYTES).enumerate() {
        for (i, o) in out.iter_mut().skip(g * GROUP).take(GROUP).enumerate() {
            let mut acc = [0f32; R];
            for (b, block) in group.chunks_exact(BLOCK_BYTES).enumerate() {
                let (d, m) = (read_f16(block, D + 2 * i), read_f16(block, M + 2 * i));
                for r in 0..R {
                    let ab = &a[r][b];
                    let isum: i32 = (0..QK)
                        .map(|l| {
                            let byte = block[QS + 64 * (l % 16 / 4) + 4 * i + l % 4];
                            let q = if l < 16 { byte & 0xF } else { byte >> 4 };
                            i32::from(q) * i32::from(ab.qs[l])
                        })
                        .sum();
                    acc[r] = (isum as f32).mul_add(d * ab.d, acc[r]);
                    acc[r] = m.mul_add(ab.s, acc[r]);
                }
            }
            *o = acc;
        }
    }
}
