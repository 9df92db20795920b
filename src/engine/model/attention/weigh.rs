//! The third step of a unit of attention (see [`super::block`]): each row's values
//! weighted by its softmax over the tile's positions, in blocks of rows and columns whose sums
//! stay in registers, every row's sum in position order whatever the block.

use super::block::LANES;
use super::numbers::{F16s, F32s, Source};
use super::stream::{weigh_stream, STREAM_ROWS};
use crate::engine::model::kv_cache::Numbers;
use crate::engine::model::kv_cache::TILE;
use crate::engine::model::vecmath::{isa, multiversion};

multiversion! {
    /// `acc[r] += Σ_{c0 ≤ j < c1} p[r][j] · values[j - first]` for each row `r` and its
    /// `ranges[r] = (c0, c1)` (tile positions; `p` has [`TILE`] a row, `values` rows of `d`
    /// from tile position `first`), summed in position order. Rows whose ranges overlap are
    /// taken together over the common part, alone over the rest (before it, then after it).
    pub fn weigh_values(p: &[f32], ranges: &[(usize, usize)], values: Numbers, first: usize, d: usize, acc: &mut [f32]) {
        // A decode step's few rows, all seeing the same positions, read the values in memory
        // order (`attention_stream`).
        let shared = ranges
            .first()
            .filter(|&r0| ranges.len() <= STREAM_ROWS && ranges.iter().all(|r| r == r0))
            .filter(|_| d.is_multiple_of(LANES));
        match (values, shared.copied()) {
            (Numbers::F32(v), None) => weigh_any::<ISA, _>(p, ranges, F32s(v), first, d, acc),
            (Numbers::F16(v), None) => weigh_any::<ISA, _>(p, ranges, F16s::<ISA>(v), first, d, acc),
            (Numbers::F32(v), Some(range)) => weigh_stream(p, range, F32s(v), first, d, acc),
            (Numbers::F16(v), Some(range)) => weigh_stream(p, range, F16s::<ISA>(v), first, d, acc),
        }
    }
}

/// [`weigh_values`] for one source, by head size: four rows and 64 columns at a time where
/// AVX-512's 32 registers hold their sums; six rows and 16 columns elsewhere (twelve sums, as
/// in the scoring loops: each value loaded serves six rows instead of two; on Zen 3 a fifth to a
/// third faster than two rows and 32 columns).
#[inline(always)]
fn weigh_any<const ISA: u8, S: Source>(
    p: &[f32],
    ranges: &[(usize, usize)],
    values: S,
    first: usize,
    d: usize,
    acc: &mut [f32],
) {
    match (d, ISA == isa::AVX512) {
        (64, true) => weigh_sized::<64, 4, 64, S>(p, ranges, values, first, d, acc),
        (64, false) => weigh_sized::<64, 6, 16, S>(p, ranges, values, first, d, acc),
        (128, true) => weigh_sized::<128, 4, 64, S>(p, ranges, values, first, d, acc),
        (128, false) => weigh_sized::<128, 6, 16, S>(p, ranges, values, first, d, acc),
        (256, true) => weigh_sized::<256, 4, 64, S>(p, ranges, values, first, d, acc),
        (256, false) => weigh_sized::<256, 6, 16, S>(p, ranges, values, first, d, acc),
        (_, true) => weigh_sized::<0, 4, 64, S>(p, ranges, values, first, d, acc),
        (_, false) => weigh_sized::<0, 6, 16, S>(p, ranges, values, first, d, acc),
    }
}

/// [`weigh_values`] for heads of `D` values (0: any size), `R` rows and `C` columns at a time.
#[inline(always)]
fn weigh_sized<const D: usize, const R: usize, const C: usize, S: Source>(
    p: &[f32],
    ranges: &[(usize, usize)],
    values: S,
    first: usize,
    d: usize,
    acc: &mut [f32],
) {
    let d = if D == 0 { d } else { D };
    let v = Values { values, first, d };
    // Spans of positions whose values (16 KB) stay in L1 while every row takes them; a row
    // still adds its positions in order, span after span.
    let span = (4096 / d).clamp(LANES, TILE);
    let seen = ranges.iter().filter(|x| x.0 < x.1);
    let start = seen.clone().map(|x| x.0).min().unwrap_or(0);
    let end = seen.map(|x| x.1).max().unwrap_or(0);
    let mut clipped = [(0, 0); R];
    for p0 in (start..end).step_by(span) {
        let p1 = (p0 + span).min(end);
        for r in (0..ranges.len()).step_by(R) {
            let n = R.min(ranges.len() - r);
            for (c, x) in clipped.iter_mut().zip(&ranges[r..r + n]) {
                *c = (x.0.max(p0), x.1.min(p1));
            }
            let (p, acc) = (&p[r * TILE..], &mut acc[r * d..]);
            weigh_span::<D, R, C, S>(p, &clipped[..n], &v, acc);
        }
    }
}

/// Up to `R` rows over their `ranges`: together over the part common to all, alone before it
/// and after it.
#[inline(always)]
fn weigh_span<const D: usize, const R: usize, const C: usize, S: Source>(
    p: &[f32],
    block: &[(usize, usize)],
    v: &Values<S>,
    acc: &mut [f32],
) {
    let (d, n) = (v.d, block.len());
    {
        let lo = block.iter().map(|x| x.0).max().unwrap_or(0);
        let hi = block.iter().map(|x| x.1).min().unwrap_or(0);
        if n == R && lo < hi {
            for (i, &(c0, _)) in block.iter().enumerate() {
                weigh_rows::<D, 1, C, S>(&p[i * TILE..], c0, lo, v, &mut acc[i * d..]);
            }
            weigh_rows::<D, R, C, S>(p, lo, hi, v, acc);
            for (i, &(_, c1)) in block.iter().enumerate() {
                weigh_rows::<D, 1, C, S>(&p[i * TILE..], hi, c1, v, &mut acc[i * d..]);
            }
        } else {
            for (i, &(c0, c1)) in block.iter().enumerate() {
                weigh_rows::<D, 1, C, S>(&p[i * TILE..], c0, c1, v, &mut acc[i * d..]);
            }
        }
    }
}

/// Rows of values from tile position `first` on, `d` numbers each.
struct Values<S> {
    values: S,
    first: usize,
    d: usize,
}

/// `R` rows over positions `c0..c1`: columns `C` at a time, the rest one by one.
#[inline(always)]
fn weigh_rows<const D: usize, const R: usize, const C: usize, S: Source>(
    p: &[f32],
    c0: usize,
    c1: usize,
    v: &Values<S>,
    acc: &mut [f32],
) {
    if c0 >= c1 {
        return;
    }
    let d = if D == 0 { v.d } else { D };
    let mut c = 0;
    while c + C <= d {
        weigh_block::<R, C, S>(p, c0, c1, v, c, acc);
        c += C;
    }
    while c < d {
        weigh_block::<R, 1, S>(p, c0, c1, v, c, acc);
        c += 1;
    }
}

/// Columns `c..c + C` of `R` rows' sums, in registers across positions `c0..c1`.
#[inline(always)]
fn weigh_block<const R: usize, const C: usize, S: Source>(
    p: &[f32],
    c0: usize,
    c1: usize,
    v: &Values<S>,
    c: usize,
    acc: &mut [f32],
) {
    if c0 >= c1 {
        return;
    }
    let d = v.d;
    let mut a = [[0f32; C]; R];
    for r in 0..R {
        a[r].copy_from_slice(&acc[r * d + c..][..C]);
    }
    // The whole range checked once, as in `score_block`.
    assert!(c0 >= v.first, "values start after the block's positions");
    let end = (c1 - 1 - v.first) * d + c + C;
    assert!(
        end <= v.values.len(),
        "values end before the block's positions"
    );
    assert!(
        (R - 1) * TILE + c1 <= p.len(),
        "weights end before the block's positions"
    );
    for j in c0..c1 {
        // SAFETY: `(j - first) · d + c + C <= end <= len`, as `first <= c0 <= j < c1`.
        let row: [f32; C] = unsafe { v.values.lanes_unchecked((j - v.first) * d + c) };
        for (r, a) in a.iter_mut().enumerate() {
            // SAFETY: `r · TILE + j < (R - 1) · TILE + c1 <= p.len()`, checked above.
            let w = unsafe { *p.get_unchecked(r * TILE + j) };
            for x in 0..C {
                a[x] = w.mul_add(row[x], a[x]);
            }
        }
    }
    for r in 0..R {
        acc[r * d + c..][..C].copy_from_slice(&a[r]);
    }
}
