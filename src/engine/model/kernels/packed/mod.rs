//! The repacked weight layouts: a matrix's rows stored sixteen at a time ([`q4k_x16`],
//! [`q5_0_x16`], [`q8_0_x16`], [`q4_1_x16`]), a concept of their own, apart from the file
//! formats they hold ([`super::format`]). Here is what they share: repacking ggml rows group by group,
//! checking a call's lengths, handing a group's lanes out, and the plain reference of the
//! layouts with one f16 scale per row and block.

pub mod q4_1_x16;
pub mod q4k_x16;
pub mod q5_0_x16;
pub mod q5k_x16;
pub mod q6k_x16;
pub mod q8_0_x16;

use crate::engine::model::kernels::{read_f16, Q8Block, QK};
use rayon::prelude::*;

/// Rows per group: one per 32-bit lane of a 512-bit vector.
pub const GROUP: usize = 16;

/// Repacks `rows` rows of a format's ggml blocks into a layout's groups (`out` is the whole
/// packed matrix).
pub type Repack = fn(&[u8], usize, &mut [u8]);

/// Repacks `rows` rows of ggml blocks (`S` bytes each) into `out`, one group of rows (`G`
/// bytes per block) per rayon task: `block(src, i, dst)` puts row `i`'s block into its lanes
/// of the group's block. Rows past the end are left as they are in `out`. (Generic, not a
/// function pointer: inlined with its sizes known, the repack of a 4.5 GB model took half the
/// time.)
pub(crate) fn repack<const S: usize, const G: usize>(
    w: &[u8],
    rows: usize,
    out: &mut [u8],
    block: impl Fn(&[u8; S], usize, &mut [u8; G]) + Sync,
) {
    let (src_block, group_block) = (S, G);
    let row_bytes = w.len().checked_div(rows).unwrap_or(0);
    assert_eq!(row_bytes * rows, w.len(), "weights are not whole rows");
    assert!(row_bytes.is_multiple_of(src_block), "a row is whole blocks");
    let nb = row_bytes / src_block;
    let len = rows.div_ceil(GROUP) * nb * group_block;
    assert_eq!(out.len(), len, "repacked size");
    if nb == 0 {
        return;
    }
    out.par_chunks_mut(nb * group_block)
        .enumerate()
        .for_each(|(g, group)| {
            for (b, dst) in group.as_chunks_mut::<G>().0.iter_mut().enumerate() {
                for i in 0..GROUP.min(rows - g * GROUP) {
                    let at = (g * GROUP + i) * row_bytes + b * src_block;
                    let src = w[at..at + S].try_into().expect("S bytes");
                    block(src, i, dst);
                }
            }
        });
}

/// Checks that `w` holds the groups of `rows` rows (`group_block` bytes per block) and every
/// activation row as many blocks as a weight row; returns the blocks per row.
pub(crate) fn check<A, const R: usize>(
    w: &[u8],
    a: &[&[A]; R],
    rows: usize,
    group_block: usize,
) -> usize {
    let groups = rows.div_ceil(GROUP);
    let nb = w.len().checked_div(groups * group_block).unwrap_or(0);
    assert_eq!(
        groups * nb * group_block,
        w.len(),
        "weights are not whole groups"
    );
    for row in a {
        assert_eq!(
            row.len(),
            nb,
            "activation row has the wrong number of blocks"
        );
    }
    nb
}

/// Runs `group(g, lanes)` for each group of the `out.len()` rows and writes `lanes[r][i]`
/// (row `i` of the group against activation row `r`) to `out[16 g + i][r]`. Only the VNNI
/// and AVX2 kernels hand lanes out (elsewhere the plain references run the layouts).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn each_group<const R: usize>(
    out: &mut [[f32; R]],
    mut group: impl FnMut(usize, &mut [[f32; GROUP]; R]),
) {
    for (g, o) in out.chunks_mut(GROUP).enumerate() {
        let mut lanes = [[0f32; GROUP]; R];
        group(g, &mut lanes);
        for (i, oc) in o.iter_mut().enumerate() {
            for r in 0..R {
                oc[r] = lanes[r][i];
            }
        }
    }
}

/// `bias · Σ y` of each activation block of every row: the layouts whose quants are stored
/// biased (unsigned, as `vpdpbusd` takes its first operand) start their integer sums here.
pub(crate) fn block_offsets<const R: usize>(
    a: &[&[Q8Block]; R],
    nb: usize,
    bias: i32,
) -> Vec<[i32; R]> {
    (0..nb)
        .map(|b| {
            std::array::from_fn(|r| bias * a[r][b].qs.iter().map(|&y| i32::from(y)).sum::<i32>())
        })
        .collect()
}

/// The plain reference of a 32-element layout whose group block holds each row's f16 scale at
/// `d_at + 2 i` and its quants as `quant(block, i, l)`: `out[c][r]` = `Σ_b (d·d_a)·(Σ_l
/// quant·y + offset)` over the `nb` blocks, accumulated with fused multiply-adds in block
/// order, as the SIMD kernels do.
pub(crate) fn dot_q8_reference<const R: usize, const B: usize>(
    w: &[u8],
    a: &[&[Q8Block]; R],
    out: &mut [[f32; R]],
    nb: usize,
    d_at: usize,
    offsets: &[[i32; R]],
    quant: impl Fn(&[u8], usize, usize) -> i32,
) {
    if nb == 0 {
        out.iter_mut().for_each(|o| *o = [0.0; R]);
        return;
    }
    for (g, group) in w.chunks_exact(nb * B).enumerate() {
        for (i, o) in out.iter_mut().skip(g * GROUP).take(GROUP).enumerate() {
            let mut acc = [0f32; R];
            for (b, block) in group.chunks_exact(B).enumerate() {
                let d = read_f16(block, d_at + 2 * i);
                for r in 0..R {
                    let ab = &a[r][b];
                    let isum: i32 = (0..QK)
                        .map(|l| quant(block, i, l) * i32::from(ab.qs[l]))
                        .sum::<i32>()
                        + offsets[b][r];
                    acc[r] = (isum as f32).mul_add(d * ab.d, acc[r]);
                }
            }
            *o = acc;
        }
    }
}
