//! Causal attention over the KV cache: tiled, with an online softmax ("flash" attention), and
//! written so that a query's result does not depend on how many other queries are computed
//! with it.
//!
//! Keys are taken in tiles of [`TILE`] positions that start at multiples of `TILE`. For each
//! query and tile, one partial result is computed: the tile's highest score `m`, the sum `l`
//! of `exp(score - m)` and the sum of the values weighted by those; the partials of a query
//! are then merged in tile order, a wave of tiles at a time (so a prefill chunk deep in a
//! long context holds a bounded amount of partials, not one per tile). A query's arithmetic
//! depends only on its position and the keys it may see, never on the batch, the chunking of
//! the prompt or the thread count, so a token's output is bit-for-bit the same in a prefill
//! and in a decode step: what lets a cached conversation continue exactly as a fresh prefill
//! of it would.
//!
//! The work is split into units of (KV head, tile, block of queries), so that every thread has
//! work even with few KV heads, deep in a long context (decode: many tiles) or at its start
//! (prefill: many query blocks). Each unit reads its tile of keys and values once, converted
//! to f32 from the cache's format, for all the query heads that share the KV head; those rows
//! are scored and weighted together ([`block`]), each load serving several.

mod block;
pub(super) mod numbers;
mod stream;
mod weigh;

use self::block::{score_rows, softmax_rows, LANES};
use self::weigh::weigh_values;
use super::kv_cache::{LayerCache, TILE};
use super::vecmath::exp_inline;
use rayon::prelude::*;

/// Queries per unit of work.
const QUERY_BLOCK: usize = 16;
/// Rows (queries × the query heads of a KV head) up to which a unit reads an f16 cache in
/// place, converting as it loads: a decode step's few rows would each read a converted copy
/// about once, so the copy (written, then read back) cost more than it saved; a prefill's
/// many rows read each key many times, and convert them once.
const IN_PLACE_ROWS: usize = 8;
/// Below this much arithmetic (multiply-adds of scores) one thread does it all.
const PARALLEL_WORK: usize = 1 << 16;
/// The most memory one wave of tiles' partial results may take (a decode step's partials
/// fit in one wave).
const PARTIALS_BYTES: usize = 32 << 20;

/// Shapes of one attention call.
#[derive(Debug, Clone, Copy)]
pub struct AttentionShape {
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    /// Positions the cache buffers are laid out for.
    pub capacity: usize,
    /// Position of the first query.
    pub start: usize,
    /// A query at position p sees keys p - window + 1 ..= p.
    pub window: Option<usize>,
    pub scale: f32,
}

impl AttentionShape {
    /// The keys the query at `pos` sees: `first..=pos`.
    fn first_seen(&self, pos: usize) -> usize {
        self.window.map_or(0, |w| (pos + 1).saturating_sub(w))
    }
}

/// One unit of work: a KV head, a tile of keys and a block of queries.
#[derive(Debug, Clone, Copy)]
struct Unit {
    kv_head: usize,
    tile: usize,
    /// Queries `tokens.0..tokens.1` of this call.
    tokens: (usize, usize),
}

/// The partial results of a unit: per (query, head of the group), `m` and `l`, and the
/// weighted sum of values (`head_dim` each). An empty partial has `l == 0`.
struct Partials {
    m: Vec<f32>,
    l: Vec<f32>,
    acc: Vec<f32>,
}

/// `q` is `(tokens, heads, head_dim)`; returns `(tokens, heads * head_dim)`.
pub fn attention(q: &[f32], cache: &LayerCache, s: AttentionShape) -> Vec<f32> {
    let mut out = vec![0f32; q.len()];
    attention_into(q, cache, s, &mut out);
    out
}

/// [`attention`] written into `out` (`q.len()` values), a buffer the caller reuses.
pub fn attention_into(q: &[f32], cache: &LayerCache, s: AttentionShape, out: &mut [f32]) {
    attention_in_waves(q, cache, s, PARTIALS_BYTES, out)
}

/// [`attention`] with the tiles' partial results held `partials_bytes` at a time (the same
/// bits for any budget: the merge runs in tile order either way).
fn attention_in_waves(
    q: &[f32],
    cache: &LayerCache,
    s: AttentionShape,
    partials_bytes: usize,
    out: &mut [f32],
) {
    let d = s.head_dim;
    let tokens = q.len() / (s.heads * d);
    assert_eq!(out.len(), q.len(), "attention: one output per query value");
    if tokens == 0 {
        return;
    }
    let last = s.start + tokens - 1;
    let first_tile = s.first_seen(s.start) / TILE;
    let tiles = last / TILE + 1 - first_tile;
    let blocks = tokens.div_ceil(QUERY_BLOCK);
    let run = |scratch: &mut Scratch, unit: &Unit| partials_of(q, cache, &s, *unit, scratch);
    let parallel = tokens * s.heads * (last + 1 - s.first_seen(s.start)) * d > PARALLEL_WORK;
    // The tiles are taken in waves whose partials stay within `partials_bytes` (a prefill
    // chunk deep in a long context would otherwise hold one per tile: half a gigabyte for a
    // 4B model 32k positions in), each wave merged into the running sums in tile order.
    let tile_bytes = tokens * s.heads * (d + 2) * std::mem::size_of::<f32>();
    let wave = (partials_bytes / tile_bytes).clamp(1, tiles);
    let mut merged = Merged::new(out, tokens, &s);
    let mut scratch = Scratch::default();
    for first in (0..tiles).step_by(wave) {
        let count = wave.min(tiles - first);
        let units: Vec<Unit> = (0..s.kv_heads)
            .flat_map(|kv_head| {
                (first..first + count).flat_map(move |t| {
                    (0..blocks).map(move |b| Unit {
                        kv_head,
                        tile: first_tile + t,
                        tokens: (b * QUERY_BLOCK, ((b + 1) * QUERY_BLOCK).min(tokens)),
                    })
                })
            })
            .collect();
        let partials: Vec<Partials> = if parallel {
            units.par_iter().map_init(Scratch::default, run).collect()
        } else {
            units.iter().map(|u| run(&mut scratch, u)).collect()
        };
        merged.add(&partials, &s, count, blocks);
    }
    merged.finish(d);
}

/// Reused buffers of one thread: the tile's keys and values as f32, the unit's query rows,
/// their scores and the range of the tile each row sees.
#[derive(Default)]
struct Scratch {
    keys: Vec<f32>,
    values: Vec<f32>,
    rows: Vec<f32>,
    scores: Vec<f32>,
    ranges: Vec<(usize, usize)>,
}

/// A unit's partials: its tile of keys and values read once (as f32), then every query of
/// its block and every query head of its KV head, as one block of rows, against the keys of
/// the tile each may see.
fn partials_of(
    q: &[f32],
    cache: &LayerCache,
    s: &AttentionShape,
    unit: Unit,
    scratch: &mut Scratch,
) -> Partials {
    let d = s.head_dim;
    let group = s.heads / s.kv_heads;
    let (t0, t1) = unit.tokens;
    let count = (t1 - t0) * group;
    let mut out = Partials {
        m: vec![f32::NEG_INFINITY; count],
        l: vec![0.0; count],
        acc: vec![0.0; count * d],
    };
    // Positions of the tile that some query of the block sees.
    let tile_start = unit.tile * TILE;
    let lo = tile_start.max(s.first_seen(s.start + t0));
    let hi = (tile_start + TILE).min(s.start + t1);
    if lo >= hi {
        return out;
    }
    let in_place = count <= IN_PLACE_ROWS;
    let keys = cache
        .k
        .tile(unit.kv_head, unit.tile, in_place, &mut scratch.keys);
    let values = cache
        .v
        .rows(unit.kv_head, lo, hi, in_place, &mut scratch.values);
    // Rows (query, head of the group), the group's heads side by side in `q` already.
    let (rows, ranges) = (&mut scratch.rows, &mut scratch.ranges);
    rows.clear();
    ranges.clear();
    for t in t0..t1 {
        let pos = s.start + t;
        let h0 = unit.kv_head * group;
        rows.extend_from_slice(&q[(t * s.heads + h0) * d..][..group * d]);
        let first = lo.max(s.first_seen(pos));
        let end = hi.min(pos + 1);
        let seen = if first < end {
            (first - tile_start, end - tile_start)
        } else {
            (0, 0)
        };
        ranges.extend(std::iter::repeat_n(seen, group));
    }
    // Whole groups of sixteen positions from the one holding the first seen position: a
    // score never depends on which others were computed with it.
    let seen = ranges.iter().filter(|r| r.0 < r.1);
    let g0 = seen.clone().map(|r| r.0).min().unwrap_or(0) / LANES;
    let g1 = seen.map(|r| r.1).max().unwrap_or(0).div_ceil(LANES);
    scratch.scores.resize(count * TILE, 0.0);
    let scores = &mut scratch.scores;
    score_rows(rows, d, keys, g0, g1, s.scale, scores);
    softmax_rows(scores, ranges, &mut out.m, &mut out.l);
    weigh_values(scores, ranges, values, lo - tile_start, d, &mut out.acc);
    out
}

/// Each query's partials merged in tile order, `out = Σ e^(mᵢ-M) accᵢ / Σ e^(mᵢ-M) lᵢ`, a
/// wave of tiles at a time: per (query, head) row the running maximum, sum and weighted values.
struct Merged<'o> {
    out: &'o mut [f32],
    max: Vec<f32>,
    sum: Vec<f32>,
}

impl<'o> Merged<'o> {
    /// Running sums in `out` (`tokens × heads × head_dim`, cleared here: a row no key is
    /// seen by stays zero).
    fn new(out: &'o mut [f32], tokens: usize, s: &AttentionShape) -> Self {
        let rows = tokens * s.heads;
        out.fill(0.0);
        Self {
            out,
            max: vec![f32::NEG_INFINITY; rows],
            sum: vec![0f32; rows],
        }
    }

    /// Merges the partials of the next `tiles` tiles (ordered by KV head, tile, block).
    fn add(&mut self, partials: &[Partials], s: &AttentionShape, tiles: usize, blocks: usize) {
        let d = s.head_dim;
        let group = s.heads / s.kv_heads;
        let rows = self
            .out
            .chunks_exact_mut(d)
            .zip(&mut self.max)
            .zip(&mut self.sum);
        for (row, ((dst, max), sum)) in rows.enumerate() {
            let (t, h) = (row / s.heads, row % s.heads);
            let (kv, g) = (h / group, h % group);
            let (b, i) = (t / QUERY_BLOCK, (t % QUERY_BLOCK) * group + g);
            for tile in 0..tiles {
                let p = &partials[(kv * tiles + tile) * blocks + b];
                if p.l[i] == 0.0 {
                    continue;
                }
                let acc = &p.acc[i * d..][..d];
                if *sum == 0.0 {
                    *max = p.m[i];
                    *sum = p.l[i];
                    dst.copy_from_slice(acc);
                    continue;
                }
                let new_max = max.max(p.m[i]);
                let (old_w, new_w) = (exp_inline(*max - new_max), exp_inline(p.m[i] - new_max));
                *sum = *sum * old_w + p.l[i] * new_w;
                for (o, a) in dst.iter_mut().zip(acc) {
                    *o = *o * old_w + a * new_w;
                }
                *max = new_max;
            }
        }
    }

    /// The merged rows divided by their sums, in place: `(tokens, heads * head_dim)`.
    fn finish(self, d: usize) {
        for (dst, &sum) in self.out.chunks_exact_mut(d).zip(&self.sum) {
            let inv = if sum > 0.0 { 1.0 / sum } else { 0.0 };
            for o in dst.iter_mut() {
                *o *= inv;
            }
        }
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
