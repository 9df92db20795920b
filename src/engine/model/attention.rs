//! Causal attention over the KV cache: tiled, with an online softmax ("flash" attention), and
//! written so that a query's result does not depend on how many other queries are computed
//! with it.
//!
//! Keys are taken in tiles of [`TILE`] positions that start at multiples of `TILE`. For each
//! query and tile, one partial result is computed: the tile's highest score `m`, the sum `l`
//! of `exp(score - m)` and the sum of the values weighted by those; the partials of a query
//! are then merged in tile order. A query's arithmetic depends only on its position and the
//! keys it may see, never on the batch, the chunking of the prompt or the thread count, so a
//! token's output is bit-for-bit the same in a prefill and in a decode step: what lets a
//! cached conversation continue exactly as a fresh prefill of it would.
//!
//! The work is split into units of (KV head, tile, block of queries), so that every thread has
//! work even with few KV heads, deep in a long context (decode: many tiles) or at its start
//! (prefill: many query blocks). Each unit reads its tile of keys and values once, converted
//! to f32 from the cache's format, for all the query heads that share the KV head.

use super::kv_cache::LayerCache;
use super::vecmath::{self, axpy_inline, exp_inline, multiversion};
use rayon::prelude::*;

/// Positions per tile of keys.
pub const TILE: usize = 256;
/// Queries per unit of work.
const QUERY_BLOCK: usize = 16;
/// Below this much arithmetic (multiply-adds of scores) one thread does it all.
const PARALLEL_WORK: usize = 1 << 16;

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
    let d = s.head_dim;
    let tokens = q.len() / (s.heads * d);
    if tokens == 0 {
        return Vec::new();
    }
    let last = s.start + tokens - 1;
    let first_tile = s.first_seen(s.start) / TILE;
    let tiles = last / TILE + 1 - first_tile;
    let blocks = tokens.div_ceil(QUERY_BLOCK);
    let units: Vec<Unit> = (0..s.kv_heads)
        .flat_map(|kv_head| {
            (0..tiles).flat_map(move |t| {
                (0..blocks).map(move |b| Unit {
                    kv_head,
                    tile: first_tile + t,
                    tokens: (b * QUERY_BLOCK, ((b + 1) * QUERY_BLOCK).min(tokens)),
                })
            })
        })
        .collect();
    let run =
        |scratch: &mut (Vec<f32>, Vec<f32>), unit: &Unit| partials_of(q, cache, &s, *unit, scratch);
    let work = tokens * s.heads * (last + 1 - s.first_seen(s.start)) * d;
    let partials: Vec<Partials> = if work > PARALLEL_WORK {
        units
            .par_iter()
            .map_init(|| (Vec::new(), Vec::new()), run)
            .collect()
    } else {
        let mut scratch = (Vec::new(), Vec::new());
        units.iter().map(|u| run(&mut scratch, u)).collect()
    };
    merge(&partials, &s, tokens, tiles, blocks)
}

/// A unit's partials: its tile of keys and values read once (as f32), then every query of
/// its block and every query head of its KV head against the keys of the tile it may see.
fn partials_of(
    q: &[f32],
    cache: &LayerCache,
    s: &AttentionShape,
    unit: Unit,
    (k_scratch, v_scratch): &mut (Vec<f32>, Vec<f32>),
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
    let keys = cache.k.tile(unit.kv_head, unit.tile, k_scratch);
    let values = cache.v.rows(unit.kv_head, lo, hi, v_scratch);
    for t in t0..t1 {
        let pos = s.start + t;
        let first = lo.max(s.first_seen(pos));
        let end = hi.min(pos + 1);
        if first >= end {
            continue;
        }
        let seen = (first - tile_start, end - tile_start);
        let v = &values[(first - lo) * d..(end - lo) * d];
        for g in 0..group {
            let h = unit.kv_head * group + g;
            let i = (t - t0) * group + g;
            let query = &q[(t * s.heads + h) * d..][..d];
            let acc = &mut out.acc[i * d..][..d];
            let (m, l) = attend_tile(query, keys, seen.0, seen.1, v, s.scale, acc);
            out.m[i] = m;
            out.l[i] = l;
        }
    }
    out
}

/// Lanes of a group of positions scored together.
const LANES: usize = 16;

multiversion! {
    /// One query against positions `c0..c1` of a tile of keys (`keys`: `head_dim` runs of
    /// `TILE` positions) and their `values` (rows): into `acc`, the values weighted by
    /// `exp(score - m)`; returns `m` (the highest score) and `l` (the sum of the weights).
    /// The usual head sizes get a copy compiled for their size (the query and the sums stay
    /// in registers); every copy does the same operations in the same order.
    pub fn attend_tile(q: &[f32], keys: &[f32], c0: usize, c1: usize, values: &[f32], scale: f32, acc: &mut [f32]) -> (f32, f32) {
        match q.len() {
            64 => attend_tile_sized::<64>(q, keys, c0, c1, values, scale, acc),
            128 => attend_tile_sized::<128>(q, keys, c0, c1, values, scale, acc),
            256 => attend_tile_sized::<256>(q, keys, c0, c1, values, scale, acc),
            _ => attend_tile_sized::<0>(q, keys, c0, c1, values, scale, acc),
        }
    }
}

/// [`attend_tile`] for heads of `D` values (0: any size). Scores are computed sixteen
/// positions at a time, from the group of sixteen that holds `c0`, every lane of a group
/// whatever the range, so a score never depends on which others were computed with it.
#[inline(always)]
fn attend_tile_sized<const D: usize>(
    q: &[f32],
    keys: &[f32],
    c0: usize,
    c1: usize,
    values: &[f32],
    scale: f32,
    acc: &mut [f32],
) -> (f32, f32) {
    let d = if D == 0 { q.len() } else { D };
    let (q, acc) = (&q[..d], &mut acc[..d]);
    let mut scores = [0f32; TILE];
    let mut group = c0 / LANES * LANES;
    while group < c1 {
        let mut lanes = [0f32; LANES];
        for (i, &qi) in q.iter().enumerate() {
            let column = &keys[i * TILE + group..][..LANES];
            for l in 0..LANES {
                lanes[l] += qi * column[l];
            }
        }
        for l in 0..LANES {
            scores[group + l] = lanes[l] * scale;
        }
        group += LANES;
    }
    let scores = &mut scores[c0..c1];
    let m = vecmath::max_inline(scores);
    for s in scores.iter_mut() {
        *s = exp_inline(*s - m);
    }
    let l = vecmath::sum_inline(scores);
    for (p, v) in scores.iter().zip(values.chunks_exact(d)) {
        axpy_inline(acc, *p, &v[..d]);
    }
    (m, l)
}

/// Merges each query's partials in tile order: `out = Σ e^(mᵢ-M) accᵢ / Σ e^(mᵢ-M) lᵢ`.
fn merge(
    partials: &[Partials],
    s: &AttentionShape,
    tokens: usize,
    tiles: usize,
    blocks: usize,
) -> Vec<f32> {
    let d = s.head_dim;
    let group = s.heads / s.kv_heads;
    let mut out = vec![0f32; tokens * s.heads * d];
    for (row, dst) in out.chunks_exact_mut(d).enumerate() {
        let (t, h) = (row / s.heads, row % s.heads);
        let (kv, g) = (h / group, h % group);
        let (b, i) = (t / QUERY_BLOCK, (t % QUERY_BLOCK) * group + g);
        let mut max = f32::NEG_INFINITY;
        let mut sum = 0f32;
        for tile in 0..tiles {
            let p = &partials[(kv * tiles + tile) * blocks + b];
            if p.l[i] == 0.0 {
                continue;
            }
            let acc = &p.acc[i * d..][..d];
            if sum == 0.0 {
                max = p.m[i];
                sum = p.l[i];
                dst.copy_from_slice(acc);
                continue;
            }
            let new_max = max.max(p.m[i]);
            let (old_w, new_w) = (exp_inline(max - new_max), exp_inline(p.m[i] - new_max));
            sum = sum * old_w + p.l[i] * new_w;
            for (o, a) in dst.iter_mut().zip(acc) {
                *o = *o * old_w + a * new_w;
            }
            max = new_max;
        }
        let inv = if sum > 0.0 { 1.0 / sum } else { 0.0 };
        for o in dst.iter_mut() {
            *o *= inv;
        }
    }
    out
}

#[cfg(test)]
#[path = "attention_tests.rs"]
mod tests;
