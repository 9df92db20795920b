//! A decode step's attention arithmetic, read in memory order: the few rows of one token
//! (the query heads of a KV head) against a tile of keys and its values.
//!
//! The blocked loops of [`super::block`] keep every sum in registers and walk the
//! keys sixteen positions at a time across all the dimensions: for a tile in the cache's
//! transposed layout that is one 32-byte piece of each of `head_dim` runs, 512 bytes apart,
//! and the values likewise a column block of each position. From memory, deep in a context,
//! those strided reads kept too few cache misses in flight: a Gemma 3 decode at 8,192 tokens
//! read its f16 cache at about 10 GB/s. Here the sums live in a small buffer in the
//! first-level cache instead, and the loops go through the keys run by run and the values row
//! by row, two at a time, each exactly once and in address order, asking a few runs or rows
//! ahead for the lines they will read next.
//!
//! Every score and every weighted sum is still the same chain of fused multiply-adds in the
//! same order as in [`super::block`] (dimension order from zero; position order
//! onto the running sum), so the results are the same bits: a token's output does not depend
//! on which of the two computed it.

use super::block::LANES;
use super::numbers::{Keys, Source};
use crate::engine::model::kv_cache::TILE;

/// The most rows these loops take: their weights for two positions (or query values for two
/// dimensions) stay in registers, four rows at a time.
pub(super) const STREAM_ROWS: usize = 8;

/// How far ahead the loops ask for the keys' runs and the values' rows they will read: four
/// runs or rows (2 KB for heads of 256 in f16) measured best of 2, 4, 8 and 16.
const AHEAD: usize = 4;

/// Rows taken in one pass over the keys or values.
const PASS_ROWS: usize = 4;

/// `out[r][p] = scale · q[r] · keys[.., p]` for every row of `q` and every position `p` of
/// groups `g0..g1` (as [`super::block::score_rows`]), reading the keys run by run.
/// `head_dim` must be even.
#[inline(always)]
pub(super) fn score_stream<S: Source>(
    q: &[f32],
    d: usize,
    keys: Keys<S>,
    g0: usize,
    g1: usize,
    scale: f32,
    out: &mut [f32],
) {
    for (r, n) in passes(q.len() / d) {
        let (q, out) = (&q[r * d..][..n * d], &mut out[r * TILE..]);
        match n {
            4 => score_pass::<4, S>(q, d, keys, g0, g1, scale, out),
            3 => score_pass::<3, S>(q, d, keys, g0, g1, scale, out),
            2 => score_pass::<2, S>(q, d, keys, g0, g1, scale, out),
            _ => score_pass::<1, S>(q, d, keys, g0, g1, scale, out),
        }
    }
}

/// The passes over `rows` rows: the first row of each and how many it takes.
fn passes(rows: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..rows)
        .step_by(PASS_ROWS)
        .map(move |r| (r, PASS_ROWS.min(rows - r)))
}

/// [`score_stream`] for `R` rows: every position's sum starts at zero in `out` and takes the
/// dimensions in order, two runs of keys per sweep.
#[inline(always)]
fn score_pass<const R: usize, S: Source>(
    q: &[f32],
    d: usize,
    keys: Keys<S>,
    g0: usize,
    g1: usize,
    scale: f32,
    out: &mut [f32],
) {
    let (p0, p1) = (g0 * LANES, g1 * LANES);
    for r in 0..R {
        out[r * TILE + p0..r * TILE + p1].fill(0.0);
    }
    for i in (0..d).step_by(2) {
        let qs: [[f32; 2]; R] = std::array::from_fn(|r| [q[r * d + i], q[r * d + i + 1]]);
        let (run0, run1) = (i * keys.stride, (i + 1) * keys.stride);
        for p in (p0..p1).step_by(LANES) {
            keys.src.prefetch(run0 + p + AHEAD * keys.stride);
            keys.src.prefetch(run1 + p + AHEAD * keys.stride);
            let k0: [f32; LANES] = keys.src.lanes(run0 + p);
            let k1: [f32; LANES] = keys.src.lanes(run1 + p);
            for (r, q) in qs.iter().enumerate() {
                let acc: &mut [f32; LANES] = (&mut out[r * TILE + p..][..LANES])
                    .try_into()
                    .expect("a group of lanes");
                for l in 0..LANES {
                    acc[l] = q[1].mul_add(k1[l], q[0].mul_add(k0[l], acc[l]));
                }
            }
        }
    }
    for r in 0..R {
        for x in &mut out[r * TILE + p0..r * TILE + p1] {
            *x *= scale;
        }
    }
}

/// `acc[r] += Σ_{c0 ≤ j < c1} p[r][j] · values[j - first]` for every row (all seeing the same
/// positions `c0..c1`), summed in position order (as
/// [`super::weigh::weigh_values`]), reading the values row by row. `d` must be a
/// multiple of [`LANES`].
#[inline(always)]
pub(super) fn weigh_stream<S: Source>(
    p: &[f32],
    (c0, c1): (usize, usize),
    values: S,
    first: usize,
    d: usize,
    acc: &mut [f32],
) {
    for (r, n) in passes(acc.len() / d) {
        let (p, acc) = (&p[r * TILE..], &mut acc[r * d..][..n * d]);
        match n {
            4 => weigh_pass::<4, S>(p, (c0, c1), values, first, d, acc),
            3 => weigh_pass::<3, S>(p, (c0, c1), values, first, d, acc),
            2 => weigh_pass::<2, S>(p, (c0, c1), values, first, d, acc),
            _ => weigh_pass::<1, S>(p, (c0, c1), values, first, d, acc),
        }
    }
}

/// [`weigh_stream`] for `R` rows, two rows of values per sweep (and the last alone).
#[inline(always)]
fn weigh_pass<const R: usize, S: Source>(
    p: &[f32],
    (c0, c1): (usize, usize),
    values: S,
    first: usize,
    d: usize,
    acc: &mut [f32],
) {
    let mut j = c0;
    while j + 2 <= c1 {
        let w: [[f32; 2]; R] = std::array::from_fn(|r| [p[r * TILE + j], p[r * TILE + j + 1]]);
        let (row0, row1) = ((j - first) * d, (j + 1 - first) * d);
        for x in (0..d).step_by(LANES) {
            values.prefetch(row0 + x + AHEAD * d);
            values.prefetch(row1 + x + AHEAD * d);
            let v0: [f32; LANES] = values.lanes(row0 + x);
            let v1: [f32; LANES] = values.lanes(row1 + x);
            for (r, w) in w.iter().enumerate() {
                let a: &mut [f32; LANES] = (&mut acc[r * d + x..][..LANES])
                    .try_into()
                    .expect("a group of lanes");
                for l in 0..LANES {
                    a[l] = w[1].mul_add(v1[l], w[0].mul_add(v0[l], a[l]));
                }
            }
        }
        j += 2;
    }
    if j < c1 {
        let w: [f32; R] = std::array::from_fn(|r| p[r * TILE + j]);
        let row = (j - first) * d;
        for x in (0..d).step_by(LANES) {
            let v: [f32; LANES] = values.lanes(row + x);
            for (r, &w) in w.iter().enumerate() {
                let a = &mut acc[r * d + x..][..LANES];
                for l in 0..LANES {
                    a[l] = w.mul_add(v[l], a[l]);
                }
            }
        }
    }
}
