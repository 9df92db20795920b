use super::super::weigh::weigh_values;
use super::*;
use crate::engine::model::kv_cache::KEY_STRIDE;

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

/// `rows` rows of `d` through the three steps, given the tile's keys (transposed) and values.
fn attend(
    q: &[f32],
    d: usize,
    keys: &[f32],
    values: &[f32],
    first: usize,
    ranges: &[(usize, usize)],
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let rows = ranges.len();
    let seen = ranges.iter().filter(|r| r.0 < r.1);
    let g0 = seen.clone().map(|r| r.0).min().unwrap_or(0) / LANES;
    let g1 = seen.map(|r| r.1).max().unwrap_or(0).div_ceil(LANES);
    let mut scores = vec![0f32; rows * TILE];
    let keys = KeyRuns {
        numbers: Numbers::F32(keys),
        stride: KEY_STRIDE,
    };
    score_rows(q, d, keys, g0, g1, 0.5, &mut scores);
    let (mut m, mut l) = (vec![0f32; rows], vec![0f32; rows]);
    softmax_rows(&mut scores, ranges, &mut m, &mut l);
    let mut acc = vec![0f32; rows * d];
    weigh_values(&scores, ranges, Numbers::F32(values), first, d, &mut acc);
    (m, l, acc)
}

/// Keys of positions `first..` of a tile, transposed as the cache keeps them; the rest 9.
fn tile_of(k: &[f32], d: usize, first: usize) -> Vec<f32> {
    let mut keys = vec![9.0f32; d * KEY_STRIDE];
    for (j, row) in k.chunks(d).enumerate() {
        for (i, &x) in row.iter().enumerate() {
            keys[i * KEY_STRIDE + first + j] = x;
        }
    }
    keys
}

#[test]
fn a_row_gets_the_unnormalised_softmax_and_its_sum() {
    let d = 40;
    let q = pseudo_random(d, 5);
    let k = pseudo_random(d * 7, 6);
    let v = pseudo_random(d * 7, 7);
    // The seven keys at positions 21..28 of a tile.
    let keys = tile_of(&k, d, 21);
    let (m, l, acc) = attend(&q, d, &keys, &v, 21, &[(21, 28)]);
    let scores: Vec<f64> = k
        .chunks(d)
        .map(|kr| 0.5 * kr.iter().zip(&q).map(|(a, b)| (a * b) as f64).sum::<f64>())
        .collect();
    let max = scores.iter().cloned().fold(f64::MIN, f64::max);
    assert!((m[0] as f64 - max).abs() < 1e-5);
    let e: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
    assert!((l[0] as f64 - e.iter().sum::<f64>()).abs() < 1e-4);
    for (i, a) in acc.iter().enumerate() {
        let want: f64 = e
            .iter()
            .zip(v.chunks(d))
            .map(|(p, vr)| p * vr[i] as f64)
            .sum();
        assert!((*a as f64 - want).abs() < 1e-4, "{a} vs {want}");
    }
}

#[test]
fn a_row_gives_the_same_bits_alone_and_in_any_block() {
    // Uneven ranges (a causal edge, a window's start, empty rows) in blocks of every size.
    for d in [20, 64, 128, 256] {
        let first = 3;
        let positions = TILE - first;
        let keys = tile_of(&pseudo_random(d * positions, 1), d, first);
        let values = pseudo_random(d * positions, 2);
        let rows = 23;
        let q = pseudo_random(rows * d, 3);
        let ranges: Vec<(usize, usize)> = (0..rows)
            .map(|r| match r % 5 {
                0 => (first, first + 200 + r),
                1 => (first + r, first + 201),
                2 => (0, 0),
                3 => (first + 17, TILE),
                _ => (first + 2 * r, first + 2 * r + 1),
            })
            .collect();
        let all = attend(&q, d, &keys, &values, first, &ranges);
        for (r, &range) in ranges.iter().enumerate() {
            let one = attend(&q[r * d..][..d], d, &keys, &values, first, &[range]);
            assert_eq!(one.0[0].to_bits(), all.0[r].to_bits(), "m, d {d}, row {r}");
            assert_eq!(one.1[0].to_bits(), all.1[r].to_bits(), "l, d {d}, row {r}");
            assert_eq!(one.2, all.2[r * d..][..d], "acc, d {d}, row {r}");
        }
    }
}

#[test]
fn a_decode_steps_rows_give_the_same_bits_read_in_memory_order() {
    // Up to eight rows seeing the same positions (a decode step's query heads) take the
    // streaming loops; the same rows among more than eight take the blocked ones.
    for d in [64, 128, 256] {
        let first = 5;
        let positions = TILE - first;
        let keys = tile_of(&pseudo_random(d * positions, 11), d, first);
        let values = pseudo_random(d * positions, 12);
        let q = pseudo_random(12 * d, 13);
        // An odd number of positions (the last taken alone), from inside a group of lanes.
        for range in [(first, TILE), (first + 20, first + 151), (first, first + 1)] {
            let many = attend(&q, d, &keys, &values, first, &[range; 12]);
            for n in 1..=8 {
                let few = attend(&q[..n * d], d, &keys, &values, first, &vec![range; n]);
                for r in 0..n {
                    let at = format!("d {d}, {n} rows, row {r}, range {range:?}");
                    assert_eq!(few.0[r].to_bits(), many.0[r].to_bits(), "m, {at}");
                    assert_eq!(few.1[r].to_bits(), many.1[r].to_bits(), "l, {at}");
                    assert_eq!(few.2[r * d..][..d], many.2[r * d..][..d], "acc, {at}");
                }
            }
        }
    }
}
