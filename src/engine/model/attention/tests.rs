use super::*;
use crate::engine::model::kv_cache::{CacheType, KvCache};

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

fn shape(window: Option<usize>, head_dim: usize, capacity: usize) -> AttentionShape {
    AttentionShape {
        heads: 6,
        kv_heads: 2,
        head_dim,
        capacity,
        start: 0,
        window,
        scale: 0.3,
    }
}

/// q, k and v for `tokens` positions of shape `s`.
fn inputs(s: AttentionShape, tokens: usize, seed: u32) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    (
        pseudo_random(tokens * s.heads * s.head_dim, seed),
        pseudo_random(tokens * s.kv_heads * s.head_dim, seed + 1),
        pseudo_random(tokens * s.kv_heads * s.head_dim, seed + 2),
    )
}

fn batched(s: AttentionShape, kind: CacheType, q: &[f32], k: &[f32], v: &[f32]) -> Vec<f32> {
    let mut cache = KvCache::uniform(1, s.kv_heads, s.head_dim, s.capacity, kind).unwrap();
    attention(q, cache.append(0, k, v).unwrap(), s)
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn matches_the_textbook_formula_across_tiles_with_and_without_window() {
    // 600 positions span three tiles; a window of 300 starts inside the first.
    for window in [None, Some(3), Some(300)] {
        let s = shape(window, 20, 640);
        let (q, k, v) = inputs(s, 600, 1);
        let got = batched(s, CacheType::F32, &q, &k, &v);
        let want = reference(&q, &k, &v, s);
        assert!(max_diff(&got, &want) < 1e-5, "window {window:?}");
    }
}

#[test]
fn tiles_merged_a_wave_at_a_time_give_the_same_bits() {
    // 600 positions span three tiles: merged one, two or all three at a time.
    for window in [None, Some(300)] {
        let s = shape(window, 32, 640);
        let (q, k, v) = inputs(s, 600, 7);
        let mut cache =
            KvCache::uniform(1, s.kv_heads, s.head_dim, s.capacity, CacheType::F16).unwrap();
        let layer = cache.append(0, &k, &v).unwrap();
        let in_waves = |budget: usize| {
            // A reused buffer's old contents must not show through.
            let mut out = vec![f32::NAN; q.len()];
            attention_in_waves(&q, layer, s, budget, &mut out);
            out
        };
        let all = in_waves(usize::MAX);
        assert!(all.iter().all(|v| v.is_finite()));
        let tile_bytes = 600 * s.heads * (s.head_dim + 2) * 4;
        for budget in [1, tile_bytes, 2 * tile_bytes] {
            assert_eq!(all, in_waves(budget), "{window:?}, {budget} bytes a wave");
        }
    }
}

#[test]
fn every_cache_type_gives_bit_identical_results_in_a_batch_and_one_at_a_time() {
    for kind in [CacheType::F32, CacheType::F16, CacheType::Q8_0] {
        for window in [None, Some(300)] {
            let s = shape(window, 32, 640);
            let tokens = 560;
            let (q, k, v) = inputs(s, tokens, 4);
            let all = batched(s, kind, &q, &k, &v);
            let (row_q, row_kv) = (s.heads * s.head_dim, s.kv_heads * s.head_dim);
            let mut cache = KvCache::uniform(1, s.kv_heads, s.head_dim, s.capacity, kind).unwrap();
            // Chunks of uneven sizes, then single tokens: every split gives the same bits.
            let mut t = 0;
            for size in [1, 7, 250, 3, 1].into_iter().cycle() {
                if t >= tokens {
                    break;
                }
                let n = size.min(tokens - t);
                let layer = cache
                    .append(
                        0,
                        &k[t * row_kv..][..n * row_kv],
                        &v[t * row_kv..][..n * row_kv],
                    )
                    .unwrap();
                let part = attention(
                    &q[t * row_q..][..n * row_q],
                    layer,
                    AttentionShape { start: t, ..s },
                );
                cache.commit(n);
                assert_eq!(
                    &all[t * row_q..][..n * row_q],
                    &part[..],
                    "{kind}, {window:?}, at {t}"
                );
                t += n;
            }
        }
    }
}

#[test]
fn f16_and_q8_0_caches_stay_close_to_f32() {
    let s = shape(None, 64, 600);
    let (q, k, v) = inputs(s, 600, 9);
    let exact = batched(s, CacheType::F32, &q, &k, &v);
    // Stated bounds, for values in [-1, 1]: f16 keeps 11 bits, q8_0 about 8.
    for (kind, bound) in [(CacheType::F16, 2e-3), (CacheType::Q8_0, 2e-2)] {
        let got = batched(s, kind, &q, &k, &v);
        let d = max_diff(&got, &exact);
        assert!(d < bound, "{kind}: {d}");
        assert!(d > 0.0, "{kind} should round something");
    }
}

#[test]
fn a_head_size_q8_0_cannot_block_is_refused() {
    let err = KvCache::uniform(1, 2, 20, 8, CacheType::Q8_0)
        .err()
        .unwrap();
    assert!(err.to_string().contains("multiple of 32"), "{err}");
}
