//! The arithmetic of one unit of attention: a block of query rows against one tile of keys
//! (the scores), each row's softmax over the keys it sees, and the values weighted by it (that
//! last step in [`super::weigh`]).
//!
//! The loops are blocked so that a key or a value, once loaded, serves several rows, and so
//! that several independent sums run side by side: one row alone is a single chain of
//! dependent adds, which waits on the adder's latency instead of using its throughput.
//! Blocking only decides which *independent* sums share a loop; every score and every weighted
//! sum is computed by the same operations in the same order as a row taken alone would be,
//! so a row's result never depends on the rows beside it, the block sizes or the instruction
//! set.
//!
//! Unlike `vecmath`, the two products use fused multiply-adds: one instruction instead
//! of two for most of attention's arithmetic, which is what bounds its speed. A fused
//! multiply-add is exactly rounded by definition, so the paths still agree bit for bit: the
//! instruction on AVX2 and AVX-512 (and NEON), and libm's correctly rounded `fmaf` on an x86
//! baseline, slower but only taken by CPUs without AVX2 or with `TAPER_KERNELS=scalar`.

use super::numbers::{F16s, F32s, Keys, Source};
use super::stream::{score_stream, STREAM_ROWS};
use crate::engine::model::kv_cache::TILE;
use crate::engine::model::kv_cache::{KeyRuns, Numbers};
use crate::engine::model::vecmath::{exp_inline, isa, multiversion};

/// Lanes of a group of positions scored together (one AVX-512 register of f32).
pub(super) const LANES: usize = 16;

multiversion! {
    /// `out[r][16g..16g+16] = scale · q[r] · keys[.., 16g..16g+16]` for every row `r` of `q`
    /// (rows of `d` values) and every group `g` in `g0..g1` of sixteen positions of the tile
    /// (`keys`: `d` runs of [`TILE`] positions). `out` has [`TILE`] scores a row.
    pub fn score_rows(q: &[f32], d: usize, keys: KeyRuns, g0: usize, g1: usize, scale: f32, out: &mut [f32]) {
        let stride = keys.stride;
        // A decode step's few rows read the keys in memory order (`attention_stream`).
        let stream = q.len() / d <= STREAM_ROWS && d.is_multiple_of(2);
        match (keys.numbers, stream) {
            (Numbers::F32(k), false) => score_any::<ISA, _>(q, d, Keys { src: F32s(k), stride }, g0, g1, scale, out),
            (Numbers::F16(k), false) => score_any::<ISA, _>(q, d, Keys { src: F16s::<ISA>(k), stride }, g0, g1, scale, out),
            (Numbers::F32(k), true) => score_stream(q, d, Keys { src: F32s(k), stride }, g0, g1, scale, out),
            (Numbers::F16(k), true) => score_stream(q, d, Keys { src: F16s::<ISA>(k), stride }, g0, g1, scale, out),
        }
    }
}

/// [`score_rows`] for one source, by head size: four rows by three groups where AVX-512's 32
/// registers hold their sums; elsewhere six rows by one group, twelve sums in AVX2's sixteen
/// registers (four rows kept the two fused multiply-add units exactly as busy as their
/// latency allows, so any late load stalled them; six made Zen 3's scoring about a fifth
/// faster).
#[inline(always)]
fn score_any<const ISA: u8, S: Source>(
    q: &[f32],
    d: usize,
    keys: Keys<S>,
    g0: usize,
    g1: usize,
    scale: f32,
    out: &mut [f32],
) {
    match (d, ISA == isa::AVX512) {
        (64, true) => score_sized::<64, 4, 3, S>(q, d, keys, g0, g1, scale, out),
        (64, false) => score_sized::<64, 6, 1, S>(q, d, keys, g0, g1, scale, out),
        (128, true) => score_sized::<128, 4, 3, S>(q, d, keys, g0, g1, scale, out),
        (128, false) => score_sized::<128, 6, 1, S>(q, d, keys, g0, g1, scale, out),
        (256, true) => score_sized::<256, 4, 3, S>(q, d, keys, g0, g1, scale, out),
        (256, false) => score_sized::<256, 6, 1, S>(q, d, keys, g0, g1, scale, out),
        (_, true) => score_sized::<0, 4, 3, S>(q, d, keys, g0, g1, scale, out),
        (_, false) => score_sized::<0, 6, 1, S>(q, d, keys, g0, g1, scale, out),
    }
}

/// [`score_rows`] for heads of `D` values (0: any size), `R` rows by `G` groups at a time:
/// each block of `G` groups of keys (12 KB for heads of 64) against every row before the next
/// block, so that the keys are read from L1 by all the rows but the first.
#[inline(always)]
fn score_sized<const D: usize, const R: usize, const G: usize, S: Source>(
    q: &[f32],
    d: usize,
    keys: Keys<S>,
    g0: usize,
    g1: usize,
    scale: f32,
    out: &mut [f32],
) {
    let d = if D == 0 { d } else { D };
    let mut g = g0;
    while g < g1 {
        if g + G <= g1 {
            score_groups::<D, R, G, S>(q, d, keys, g, scale, out);
            g += G;
        } else {
            score_groups::<D, R, 1, S>(q, d, keys, g, scale, out);
            g += 1;
        }
    }
}

/// Every row against `G` groups from group `g`, `R` rows at a time.
#[inline(always)]
fn score_groups<const D: usize, const R: usize, const G: usize, S: Source>(
    q: &[f32],
    d: usize,
    keys: Keys<S>,
    g: usize,
    scale: f32,
    out: &mut [f32],
) {
    let rows = q.len() / d;
    let mut r = 0;
    while r + R <= rows {
        let (q, out) = (&q[r * d..][..R * d], &mut out[r * TILE..]);
        score_block::<D, R, G, S>(q, d, keys, g, scale, out);
        r += R;
    }
    if R > 4 && r + 4 <= rows {
        let (q, out) = (&q[r * d..][..4 * d], &mut out[r * TILE..]);
        score_block::<D, 4, G, S>(q, d, keys, g, scale, out);
        r += 4;
    }
    while r < rows {
        let (q, out) = (&q[r * d..][..d], &mut out[r * TILE..]);
        score_block::<D, 1, G, S>(q, d, keys, g, scale, out);
        r += 1;
    }
}

/// The scores of `R` rows and `G` groups from group `g`: `R·G` sums in registers, each
/// `Σ_i q[i]·k[i]` accumulated in dimension order from zero, then scaled.
#[inline(always)]
fn score_block<const D: usize, const R: usize, const G: usize, S: Source>(
    q: &[f32],
    d: usize,
    keys: Keys<S>,
    g: usize,
    scale: f32,
    out: &mut [f32],
) {
    let d = if D == 0 { d } else { D };
    let rows: [&[f32]; R] = std::array::from_fn(|r| &q[r * d..][..d]);
    let mut acc = [[[0f32; LANES]; G]; R];
    // The whole range checked once, so that the loop's loads need no check of their own (a
    // compare and a branch per load were a third of its instructions).
    assert!(d > 0, "heads have values");
    let end = (d - 1) * keys.stride + (g + G) * LANES;
    assert!(end <= keys.src.len(), "keys end before the block's groups");
    // `i` is the dimension: it picks each row's value and the keys' run.
    #[allow(clippy::needless_range_loop)]
    for i in 0..d {
        let run = i * keys.stride + g * LANES;
        // Loaded once for all the rows (LLVM would otherwise read them again for each).
        // SAFETY: `run + (j + 1) · LANES <= end <= len`, as `i < d` and `j < G`.
        let k: [[f32; LANES]; G] =
            std::array::from_fn(|j| unsafe { keys.src.lanes_unchecked(run + j * LANES) });
        for r in 0..R {
            // SAFETY: every row has `d` values (sliced above) and `i < d`.
            let qi = unsafe { *rows[r].get_unchecked(i) };
            for j in 0..G {
                for l in 0..LANES {
                    acc[r][j][l] = qi.mul_add(k[j][l], acc[r][j][l]);
                }
            }
        }
    }
    for r in 0..R {
        let dst = &mut out[r * TILE + g * LANES..][..G * LANES];
        for j in 0..G {
            for l in 0..LANES {
                dst[j * LANES + l] = acc[r][j][l] * scale;
            }
        }
    }
}

multiversion! {
    /// Each row's softmax, unnormalised, in place: for row `r` with `ranges[r] = (c0, c1)`,
    /// `scores[r][c0..c1]` become `exp(score - m)`; `m[r]` is the highest score and `l[r]` the
    /// sum of the weights. An empty range leaves `m = -∞`, `l = 0`.
    pub fn softmax_rows(scores: &mut [f32], ranges: &[(usize, usize)], m: &mut [f32], l: &mut [f32]) {
        for (r, &(c0, c1)) in ranges.iter().enumerate() {
            if c0 >= c1 {
                m[r] = f32::NEG_INFINITY;
                l[r] = 0.0;
                continue;
            }
            let row = &mut scores[r * TILE + c0..r * TILE + c1];
            let max = row_max(row);
            // The weights and their sum in one pass (the maximum by a tree: a chain of scalar
            // maxima at the end of every row cost more than its exps). The sum adds exactly
            // as `vecmath::sum_inline` does: lanes, a tree, then the tail in order.
            let mut sum = [0f32; LANES];
            let (chunks, tail) = row.as_chunks_mut::<LANES>();
            for c in chunks {
                for j in 0..LANES {
                    c[j] = exp_inline(c[j] - max);
                    sum[j] += c[j];
                }
            }
            for x in tail.iter_mut() {
                *x = exp_inline(*x - max);
            }
            m[r] = max;
            l[r] = tree(sum, |a, b| a + b) + tail.iter().sum::<f32>();
        }
    }
}

/// The largest of `x` (NaN-free), by lanes then a tree.
#[inline(always)]
fn row_max(x: &[f32]) -> f32 {
    let max = |a: f32, b: f32| if b > a { b } else { a };
    let mut acc = [f32::NEG_INFINITY; LANES];
    let (chunks, tail) = x.as_chunks::<LANES>();
    for c in chunks {
        for j in 0..LANES {
            acc[j] = max(acc[j], c[j]);
        }
    }
    for (j, &v) in tail.iter().enumerate() {
        acc[j] = max(acc[j], v);
    }
    tree(acc, max)
}

/// `lanes` reduced pairwise by `f`: halves, then quarters, down to one.
#[inline(always)]
fn tree(mut lanes: [f32; LANES], f: impl Fn(f32, f32) -> f32) -> f32 {
    let mut width = LANES / 2;
    while width > 0 {
        for j in 0..width {
            lanes[j] = f(lanes[j], lanes[j + width]);
        }
        width /= 2;
    }
    lanes[0]
}

#[cfg(test)]
#[path = "block_tests.rs"]
mod tests;
