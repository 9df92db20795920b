//! Causal attention over the KV cache, written so that a query's result does not depend on how
//! many other queries are computed with it.
//!
//! A token's output is bit-for-bit the same whether it was read in a batch (prefill) or one at
//! a time (decode): each query only ever touches the keys it may see, in a fixed order. That is
//! what lets a cached conversation continue exactly as a fresh prefill of it would.

use super::kv_cache::LayerCache;
use super::vecmath;
use rayon::prelude::*;

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

/// `q` is `(tokens, heads, head_dim)`; returns `(tokens, heads * head_dim)`.
pub fn attention(q: &[f32], cache: &LayerCache, s: AttentionShape) -> Vec<f32> {
    let d = s.head_dim;
    let tokens = q.len() / (s.heads * d);
    let group = s.heads / s.kv_heads;
    let mut out = vec![0f32; q.len()];
    // Work units are (token, head) pairs; each writes its own d outputs.
    let run = |scores: &mut Vec<f32>, (unit, dst): (usize, &mut [f32])| {
        let (t, h) = (unit / s.heads, unit % s.heads);
        let pos = s.start + t;
        let first = s.window.map_or(0, |w| (pos + 1).saturating_sub(w));
        let kv = h / group;
        let base = kv * s.capacity * d;
        let keys = &cache.k[base + first * d..base + (pos + 1) * d];
        let values = &cache.v[base + first * d..base + (pos + 1) * d];
        let query = &q[(t * s.heads + h) * d..][..d];
        vecmath::attend(query, keys, values, s.scale, scores, dst);
    };
    let work = tokens * s.heads * (s.start + tokens) * d;
    if work > 1 << 16 {
        out.par_chunks_mut(d)
            .enumerate()
            .for_each_init(Vec::new, |scores, unit| run(scores, unit));
    } else {
        let mut scores = Vec::new();
        out.chunks_mut(d)
            .enumerate()
            .for_each(|unit| run(&mut scores, unit));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::kv_cache::KvCache;

    fn pseudo_random(n: usize, seed: u32) -> Vec<f32> {
        let mut x = seed.wrapping_mul(2654435761).wrapping_add(1);
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x % 2000) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    /// The textbook computation in f64, for comparison.
    fn reference(q: &[f32], k: &[f32], v: &[f32], s: AttentionShape) -> Vec<f32> {
        let d = s.head_dim;
        let tokens = q.len() / (s.heads * d);
        let mut out = vec![0f32; q.len()];
        for t in 0..tokens {
            let pos = s.start + t;
            for h in 0..s.heads {
                let kv = h / (s.heads / s.kv_heads);
                let seen: Vec<usize> = (0..=pos)
                    .filter(|&j| s.window.is_none_or(|w| pos - j < w))
                    .collect();
                let qv = &q[(t * s.heads + h) * d..][..d];
                let scores: Vec<f64> = seen
                    .iter()
                    .map(|&j| {
                        let kj = &k[(j * s.kv_heads + kv) * d..][..d];
                        qv.iter()
                            .zip(kj)
                            .map(|(a, b)| (*a as f64) * (*b as f64))
                            .sum::<f64>()
                            * s.scale as f64
                    })
                    .collect();
                let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let exps: Vec<f64> = scores.iter().map(|x| (x - max).exp()).collect();
                let sum: f64 = exps.iter().sum();
                for dd in 0..d {
                    let val: f64 = seen
                        .iter()
                        .zip(&exps)
                        .map(|(&j, e)| e / sum * v[(j * s.kv_heads + kv) * d + dd] as f64)
                        .sum();
                    out[(t * s.heads + h) * d + dd] = val as f32;
                }
            }
        }
        out
    }

    fn shape(window: Option<usize>) -> AttentionShape {
        AttentionShape {
            heads: 4,
            kv_heads: 2,
            head_dim: 20,
            capacity: 32,
            start: 0,
            window,
            scale: 0.3,
        }
    }

    #[test]
    fn matches_the_textbook_formula_with_and_without_window() {
        for window in [None, Some(3)] {
            let s = shape(window);
            let tokens = 9;
            let q = pseudo_random(tokens * s.heads * s.head_dim, 1);
            let k = pseudo_random(tokens * s.kv_heads * s.head_dim, 2);
            let v = pseudo_random(tokens * s.kv_heads * s.head_dim, 3);
            let mut cache = KvCache::uniform(1, s.kv_heads, s.head_dim, s.capacity);
            let layer = cache.append(0, &k, &v).unwrap();
            let got = attention(&q, layer, s);
            let want = reference(&q, &k, &v, s);
            for (a, b) in got.iter().zip(&want) {
                assert!((a - b).abs() < 1e-5, "{a} vs {b}");
            }
        }
    }

    #[test]
    fn a_batch_gives_bit_identical_results_to_one_token_at_a_time() {
        let s = shape(Some(5));
        let tokens = 12;
        let row_q = s.heads * s.head_dim;
        let row_kv = s.kv_heads * s.head_dim;
        let q = pseudo_random(tokens * row_q, 4);
        let k = pseudo_random(tokens * row_kv, 5);
        let v = pseudo_random(tokens * row_kv, 6);
        let mut batched_cache = KvCache::uniform(1, s.kv_heads, s.head_dim, s.capacity);
        let batched = attention(&q, batched_cache.append(0, &k, &v).unwrap(), s);
        let mut cache = KvCache::uniform(1, s.kv_heads, s.head_dim, s.capacity);
        for t in 0..tokens {
            let layer = cache
                .append(0, &k[t * row_kv..][..row_kv], &v[t * row_kv..][..row_kv])
                .unwrap();
            let one = attention(
                &q[t * row_q..][..row_q],
                layer,
                AttentionShape { start: t, ..s },
            );
            cache.commit(1);
            assert_eq!(&batched[t * row_q..][..row_q], &one[..], "token {t}");
        }
    }
}
