use super::*;

fn params(temperature: f32, top_k: usize, top_p: f32, min_p: f32, seed: u64) -> SamplingParams {
    SamplingParams {
        temperature,
        top_k,
        top_p,
        min_p,
        repeat_penalty: 1.0,
        repeat_last_n: 64,
        seed: Some(seed),
        ..SamplingParams::default()
    }
}

/// Logits whose softmax (at temperature 1) is the given distribution.
fn logits_for(probs: &[f32]) -> Vec<f32> {
    probs
        .iter()
        .map(|p| if *p > 0.0 { p.ln() } else { f32::NEG_INFINITY })
        .collect()
}

fn counts(params: SamplingParams, logits: &[f32], draws: usize) -> Vec<usize> {
    let mut sampler = Sampler::new(params);
    let mut counts = vec![0; logits.len()];
    for _ in 0..draws {
        counts[sampler.sample(&mut logits.to_vec(), &[]) as usize] += 1;
    }
    counts
}

#[test]
fn greedy_picks_the_argmax_and_the_lowest_id_on_ties() {
    let mut s = Sampler::new(params(0.0, 40, 0.95, 0.05, 1));
    assert_eq!(s.sample(&mut [0.1, 3.0, -1.0, 2.9], &[]), 1);
    assert_eq!(s.sample(&mut [1.0, 5.0, 5.0, 2.0], &[]), 1);
    assert_eq!(s.sample(&mut [-3.0, -1.0, -2.0], &[]), 1);
}

/// The first position of the largest non-NaN value, one logit at a time.
fn plain_argmax(logits: &[f32]) -> u32 {
    let mut best: Option<(usize, f32)> = None;
    for (i, &l) in logits.iter().enumerate() {
        if !l.is_nan() && best.is_none_or(|(_, b)| l > b) {
            best = Some((i, l));
        }
    }
    best.map_or(0, |(i, _)| i as u32)
}

#[test]
fn argmax_agrees_with_a_plain_scan_across_lanes_nans_and_ties() {
    let n = 1000;
    let wave = |i: usize| ((i * 7919) % 613) as f32 / 100.0 - 3.0;
    let mut cases: Vec<Vec<f32>> = vec![
        vec![],
        vec![f32::NAN; 37],
        vec![f32::NEG_INFINITY; 37],
        (0..n).map(wave).collect(),
    ];
    // Ties of the maximum in different lanes and in the tail past the last whole chunk.
    let mut ties: Vec<f32> = (0..n).map(wave).collect();
    for at in [999, 517, 18, 3] {
        ties[at] = 50.0;
    }
    cases.push(ties);
    // NaN where the maximum would be, and a NaN first.
    let mut nans: Vec<f32> = (0..n).map(wave).collect();
    nans[0] = f32::NAN;
    let best = plain_argmax(&nans) as usize;
    nans[best] = f32::NAN;
    cases.push(nans);
    let mut neg: Vec<f32> = vec![f32::NEG_INFINITY; 40];
    neg[33] = f32::NAN;
    cases.push(neg);
    for (i, logits) in cases.iter().enumerate() {
        assert_eq!(argmax(logits), plain_argmax(logits), "case {i}");
    }
}

#[test]
fn the_same_seed_gives_the_same_sequence() {
    let logits: Vec<f32> = (0..1000)
        .map(|i| ((i * 7919) % 1000) as f32 / 200.0)
        .collect();
    let run = |seed| {
        let mut s = Sampler::new(params(1.0, 0, 1.0, 0.0, seed));
        (0..50)
            .map(|_| s.sample(&mut logits.clone(), &[]))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(42), run(42));
    assert_ne!(run(42), run(43));
}

#[test]
fn top_k_of_one_equals_greedy() {
    let logits: Vec<f32> = (0..5000).map(|i| ((i * 31) % 977) as f32 / 100.0).collect();
    let expected = argmax(&logits);
    let mut s = Sampler::new(params(1.5, 1, 1.0, 0.0, 7));
    for _ in 0..100 {
        assert_eq!(s.sample(&mut logits.clone(), &[]), expected);
    }
}

#[test]
fn top_k_never_draws_outside_the_k_best() {
    let logits = logits_for(&[0.05, 0.3, 0.05, 0.25, 0.05, 0.3]);
    let c = counts(params(1.0, 3, 1.0, 0.0, 3), &logits, 3000);
    assert_eq!((c[0], c[2], c[4]), (0, 0, 0), "{c:?}");
    assert!(c[1] > 500 && c[3] > 500 && c[5] > 500, "{c:?}");
}

#[test]
fn min_p_excludes_tokens_far_below_the_best() {
    // Relative to the best (0.5): 0.3 and 0.15 pass min_p = 0.25, 0.05 does not.
    let logits = logits_for(&[0.5, 0.3, 0.15, 0.05]);
    let c = counts(params(1.0, 0, 1.0, 0.25, 11), &logits, 4000);
    assert_eq!(c[3], 0, "{c:?}");
    assert!(c[0] > 1500 && c[1] > 800 && c[2] > 300, "{c:?}");
}

#[test]
fn top_p_keeps_the_smallest_set_reaching_p() {
    // 0.5 + 0.3 = 0.8 reaches top_p = 0.75: the rest is excluded.
    let logits = logits_for(&[0.3, 0.1, 0.5, 0.06, 0.04]);
    let c = counts(params(1.0, 0, 0.75, 0.0, 5), &logits, 4000);
    assert_eq!((c[1], c[3], c[4]), (0, 0, 0), "{c:?}");
    // Renormalized to 5/8 and 3/8.
    assert!(
        (2200..2800).contains(&c[2]) && (1200..1800).contains(&c[0]),
        "{c:?}"
    );
    // A tiny top_p still keeps the best token.
    let c = counts(params(1.0, 0, 0.0, 0.0, 5), &logits, 100);
    assert_eq!(c[2], 100);
}

#[test]
fn low_temperature_sharpens_the_distribution() {
    let logits = logits_for(&[0.6, 0.4]);
    let c = counts(params(0.1, 0, 1.0, 0.0, 9), &logits, 2000);
    // (0.6/0.4)^10 ≈ 57.7 : 1, so token 1 gets about 34 of 2000.
    assert!(c[1] < 100, "{c:?}");
}

#[test]
fn repeat_penalty_divides_positive_and_multiplies_negative_logits_once_per_token() {
    let mut logits = vec![2.0, -2.0, 1.0, 0.5];
    let mut scratch = Vec::new();
    apply_repeat_penalty(&mut logits, &[0, 1, 0, 0, 9999], 2.0, &mut scratch);
    assert_eq!(logits, vec![1.0, -4.0, 1.0, 0.5]);
}

#[test]
fn repeat_penalty_only_looks_at_the_last_n_tokens() {
    let mut p = params(0.0, 0, 1.0, 0.0, 1);
    p.repeat_penalty = 4.0;
    p.repeat_last_n = 2;
    let mut s = Sampler::new(p);
    // Token 0 is penalized (2.0 → 0.5) and token 1 (1.0) wins; token 2 is too old.
    let mut logits = vec![2.0, 1.0, 0.9];
    assert_eq!(s.sample(&mut logits, &[2, 0, 0]), 1);
    assert_eq!(logits, vec![0.5, 1.0, 0.9]);
}

#[test]
fn nan_and_infinite_logits_do_not_panic() {
    let cases: [Vec<f32>; 5] = [
        vec![f32::NAN; 4],
        vec![f32::NAN, 1.0, f32::NAN, 0.5],
        vec![f32::NEG_INFINITY; 3],
        vec![0.0, f32::INFINITY, 1.0],
        vec![],
    ];
    for temperature in [0.0, 0.8] {
        for top_k in [0, 2] {
            for logits in &cases {
                let mut s = Sampler::new(params(temperature, top_k, 0.9, 0.05, 1));
                let id = s.sample(&mut logits.clone(), &[0, 1]);
                assert!(logits.is_empty() || (id as usize) < logits.len());
            }
        }
    }
    let mut s = Sampler::new(params(0.8, 0, 1.0, 0.0, 1));
    assert_eq!(s.sample(&mut [f32::NAN, 1.0, f32::NAN], &[]), 1);
    assert_eq!(s.sample(&mut [0.0, f32::INFINITY, 1.0], &[]), 1);
}

#[test]
fn a_large_vocabulary_with_top_k_is_fast_enough() {
    let logits: Vec<f32> = (0..262_144u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 8) as f32 / 1e6)
        .collect();
    let mut s = Sampler::new(SamplingParams {
        seed: Some(1),
        ..SamplingParams::default()
    });
    let started = std::time::Instant::now();
    for _ in 0..20 {
        s.sample(&mut logits.clone(), &[1, 2, 3]);
    }
    // Generous: about 1 ms per call in release builds; this only catches a full sort
    // or quadratic behaviour in debug builds too.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

/// Pearson's chi-square of `counts` against the exact probabilities `probs`.
fn chi_square(counts: &[usize], probs: &[f64]) -> f64 {
    let n: usize = counts.iter().sum();
    counts
        .iter()
        .zip(probs)
        .filter(|(_, p)| **p > 0.0)
        .map(|(&c, &p)| {
            let expected = p * n as f64;
            (c as f64 - expected).powi(2) / expected
        })
        .sum()
}

#[test]
fn a_drafted_draw_keeps_the_distribution_whatever_the_draft() {
    // The final distribution after top-k 4 and temperature 0.8 of five tokens, computed
    // here in f64; the fifth token is outside it (a draft of it is always rejected).
    let base = [0.4f32, 0.25, 0.2, 0.1, 0.05];
    let logits = logits_for(&base);
    let weights: Vec<f64> = base[..4]
        .iter()
        .map(|&p| f64::from(p).powf(1.0 / 0.8))
        .collect();
    let total: f64 = weights.iter().sum();
    let mut exact: Vec<f64> = weights.iter().map(|w| w / total).collect();
    exact.push(0.0);
    let draws = 200_000;
    for draft in [None, Some(0), Some(1), Some(3), Some(4)] {
        let mut sampler = Sampler::new(params(0.8, 4, 1.0, 0.0, 7));
        let mut counts = vec![0; base.len()];
        for _ in 0..draws {
            let token = sampler.sample_drafted(&mut logits.clone(), &[], draft);
            counts[token as usize] += 1;
        }
        assert_eq!(counts[4], 0, "draft {draft:?} drew a token outside top-k");
        // 3 degrees of freedom: above 40 has a probability under 1e-8 for a right draw;
        // keeping the draft when it is the argmax, or always, lands in the thousands.
        let chi = chi_square(&counts, &exact);
        assert!(
            chi < 40.0,
            "draft {draft:?}: {counts:?} against {exact:?}: χ² {chi}"
        );
    }
}

#[test]
fn a_drafted_draw_keeps_the_draft_with_its_probability() {
    // Coupling: the draft is kept with its own probability, more often than two independent
    // draws would agree (p(x) against p(x)²).
    let logits = logits_for(&[0.5, 0.3, 0.2]);
    let mut sampler = Sampler::new(params(1.0, 0, 1.0, 0.0, 3));
    let kept = (0..20_000)
        .filter(|_| sampler.sample_drafted(&mut logits.clone(), &[], Some(0)) == 0)
        .count();
    assert!((9_400..10_600).contains(&kept), "kept {kept} of 20000");
}

#[test]
fn a_greedy_drafted_draw_is_the_argmax_whatever_the_draft() {
    let logits = vec![0.1, 2.0, 1.9, -1.0];
    let mut sampler = Sampler::new(params(0.0, 0, 1.0, 0.0, 1));
    for draft in [None, Some(0), Some(1), Some(2), Some(99)] {
        assert_eq!(sampler.sample_drafted(&mut logits.clone(), &[], draft), 1);
    }
}
