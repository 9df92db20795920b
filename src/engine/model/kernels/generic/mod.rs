//! The portable path: every layout in plain Rust, bounds-checked. These are the references
//! each SIMD kernel is tested against ([`ggml`] for the files' blocks, each repacked layout's
//! own in [`crate::engine::model::kernels::packed`]), and what runs where no SIMD path does.

pub mod ggml;

use super::layout::{Layout, Q8KLayout, Q8Layout};
use super::packed::{q4_1_x16, q4k_x16, q5_0_x16, q5k_x16, q6k_x16, q8_0_x16};
use super::{Q8Block, Q8KBlock};

/// Checks that `w` is `rows` whole rows of `layout`'s blocks (a ggml layout) and each
/// activation row has a row's worth of blocks; returns the bytes of one weight row.
pub fn check_rows<A, const R: usize>(
    layout: Layout,
    w: &[u8],
    a: &[&[A]; R],
    rows: usize,
) -> usize {
    if rows == 0 {
        assert!(w.is_empty(), "weights without outputs");
        return 0;
    }
    let row_bytes = w.len() / rows;
    assert_eq!(row_bytes * rows, w.len(), "weights are not whole rows");
    let block_bytes = layout.block_bytes();
    let nb = row_bytes / block_bytes;
    assert_eq!(
        nb * block_bytes,
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

/// A kernel of [`ggml`]: one weight row against `R` activation rows.
type RowKernel<A, const R: usize> = fn(&[u8], &[&[A]; R], &mut [f32; R]);

/// Runs `f` on each weight row of a ggml layout, after checking the lengths.
fn each_row<A, const R: usize>(
    f: RowKernel<A, R>,
    layout: Layout,
    w: &[u8],
    a: &[&[A]; R],
    out: &mut [[f32; R]],
) {
    let row_bytes = check_rows(layout, w, a, out.len());
    if row_bytes == 0 {
        return;
    }
    for (wr, o) in w.chunks_exact(row_bytes).zip(out.iter_mut()) {
        f(wr, a, o);
    }
}

/// `out[c][r]` = weight row `c` of `w` · `a[r]`: every layout that takes [`Q8Block`]s.
pub fn dot_q8<const R: usize>(
    layout: Q8Layout,
    w: &[u8],
    a: &[&[Q8Block]; R],
    out: &mut [[f32; R]],
) {
    let f: RowKernel<Q8Block, R> = match layout {
        Q8Layout::Q4_0 => ggml::dot_q4_0,
        Q8Layout::Q4_1 => ggml::dot_q4_1,
        Q8Layout::Q5_0 => ggml::dot_q5_0,
        Q8Layout::Q8_0 => ggml::dot_q8_0,
        Q8Layout::Q4_1X16 => return q4_1_x16::dot(w, a, out),
        Q8Layout::Q5_0X16 => return q5_0_x16::dot(w, a, out),
        Q8Layout::Q8_0X16 => return q8_0_x16::dot(w, a, out),
    };
    each_row(f, layout.into(), w, a, out)
}

/// As [`dot_q8`] for the layouts that take [`Q8KBlock`]s.
pub fn dot_q8k<const R: usize>(
    layout: Q8KLayout,
    w: &[u8],
    a: &[&[Q8KBlock]; R],
    out: &mut [[f32; R]],
) {
    let f: RowKernel<Q8KBlock, R> = match layout {
        Q8KLayout::Q4K => ggml::dot_q4k,
        Q8KLayout::Q6K => ggml::dot_q6k,
        Q8KLayout::Q4KX16 => return q4k_x16::dot(w, a, out),
        Q8KLayout::Q5KX16 => return q5k_x16::dot(w, a, out),
        Q8KLayout::Q4KX16Compact => return q4k_x16::dot_compact(w, a, out),
        Q8KLayout::Q5KX16Compact => return q5k_x16::dot_compact(w, a, out),
        Q8KLayout::Q6KX16 => return q6k_x16::dot(w, a, out),
    };
    each_row(f, layout.into(), w, a, out)
}
