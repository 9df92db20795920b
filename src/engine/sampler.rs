//! Sampling the next token from logits.
//!
//! The pipeline is llama.cpp's: repeat penalty, then (unless greedy) top-k, temperature,
//! softmax, top-p and min-p, then a weighted draw. It has to stay cheap for 262k-token
//! vocabularies, so nothing sorts the whole vocabulary when top-k is set, and without
//! top-k min-p is applied as a linear pre-filter before the (then small) sort.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::cmp::Ordering;

/// How the next token is chosen.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SamplingParams {
    /// 0 (or less) = greedy.
    pub temperature: f32,
    /// 0 = off.
    pub top_k: usize,
    /// 1 = off.
    pub top_p: f32,
    /// 0 = off.
    pub min_p: f32,
    /// 1 = off.
    pub repeat_penalty: f32,
    /// How many of the most recent tokens the repeat penalty looks at (0 = off).
    pub repeat_last_n: usize,
    /// None = a different sequence every run.
    pub seed: Option<u64>,
}

impl Default for SamplingParams {
    fn default() -> Self {
        Self {
            temperature: 0.7,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            repeat_penalty: 1.1,
            repeat_last_n: 64,
            seed: None,
        }
    }
}

impl SamplingParams {
    /// Always the most likely token, nothing penalised (benchmarks, references).
    pub fn greedy() -> Self {
        Self {
            temperature: 0.0,
            repeat_penalty: 1.0,
            ..Self::default()
        }
    }
}

/// Chooses tokens according to [`SamplingParams`], with its own random number generator.
pub struct Sampler {
    params: SamplingParams,
    rng: StdRng,
    /// Reused between calls so a 262k vocabulary does not cost an allocation per token.
    candidates: Vec<Candidate>,
    distinct_recent: Vec<u32>,
}

#[derive(Debug, Clone, Copy)]
struct Candidate {
    id: u32,
    /// The logit, later the (unnormalized) probability.
    value: f32,
}

/// Highest value first; equal values by lowest id, so results never depend on how a
/// partial sort happened to arrange ties.
fn by_value_desc(a: &Candidate, b: &Candidate) -> Ordering {
    b.value.total_cmp(&a.value).then(a.id.cmp(&b.id))
}

impl Sampler {
    pub fn new(params: SamplingParams) -> Self {
        let rng = match params.seed {
            Some(seed) => StdRng::seed_from_u64(seed),
            None => StdRng::try_from_os_rng().unwrap_or_else(|_| {
                // No OS randomness (very unusual): the clock still varies between runs.
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(0);
                StdRng::seed_from_u64(nanos ^ u64::from(std::process::id()))
            }),
        };
        Self {
            params,
            rng,
            candidates: Vec::new(),
            distinct_recent: Vec::new(),
        }
    }

    pub fn params(&self) -> &SamplingParams {
        &self.params
    }

    /// `recent`: the last tokens of the sequence (the caller passes the whole history; use
    /// the last repeat_last_n). `logits` is modified by the repeat penalty.
    pub fn sample(&mut self, logits: &mut [f32], recent: &[u32]) -> u32 {
        let p = &self.params;
        let start = recent.len().saturating_sub(p.repeat_last_n);
        apply_repeat_penalty(
            logits,
            &recent[start..],
            p.repeat_penalty,
            &mut self.distinct_recent,
        );

        // A NaN temperature cannot scale anything either.
        if p.temperature.is_nan() || p.temperature <= 0.0 {
            return argmax(logits);
        }
        // NaN and -inf can never be drawn; dropping them up front keeps the arithmetic sane.
        self.candidates.clear();
        self.candidates.extend(
            logits
                .iter()
                .enumerate()
                .filter(|(_, l)| !l.is_nan() && **l != f32::NEG_INFINITY)
                .map(|(i, &value)| Candidate {
                    id: i as u32,
                    value,
                }),
        );
        if self.candidates.is_empty() {
            return argmax(logits);
        }
        let candidates = &mut self.candidates;
        let mut sorted = false;
        if p.top_k > 0 && p.top_k < candidates.len() {
            candidates.select_nth_unstable_by(p.top_k - 1, by_value_desc);
            candidates.truncate(p.top_k);
            candidates.sort_unstable_by(by_value_desc);
            sorted = true;
        }

        // Temperature and softmax. The maximum is subtracted for stability; a +inf logit
        // would make every probability NaN, so it wins outright instead.
        let max = candidates
            .iter()
            .map(|c| c.value)
            .fold(f32::NEG_INFINITY, f32::max);
        if max == f32::INFINITY {
            return argmax(logits);
        }
        let mut total = 0.0f64;
        for c in candidates.iter_mut() {
            c.value = ((c.value - max) / p.temperature).exp();
            total += f64::from(c.value);
        }
        // Now the largest probability (before normalizing) is exactly 1.

        // min-p keeps tokens at least min_p times as likely as the best one. llama.cpp
        // applies it after top-p, but both keep the most likely tokens and min-p's threshold
        // does not depend on what top-p removed, so filtering first gives the same set and
        // leaves far fewer tokens to sort.
        if p.min_p > 0.0 {
            let threshold = p.min_p.min(1.0);
            candidates.retain(|c| c.value >= threshold);
        }
        // top-p keeps the smallest prefix of the sorted tokens whose probability (measured
        // against all candidates, as in llama.cpp) reaches top_p; at least one token stays.
        if p.top_p < 1.0 {
            if !sorted {
                candidates.sort_unstable_by(by_value_desc);
            }
            let target = f64::from(p.top_p.max(0.0)) * total;
            let mut cumulative = 0.0f64;
            let mut keep = candidates.len();
            for (i, c) in candidates.iter().enumerate() {
                cumulative += f64::from(c.value);
                if cumulative >= target {
                    keep = i + 1;
                    break;
                }
            }
            candidates.truncate(keep.max(1));
        }

        let kept: f64 = candidates.iter().map(|c| f64::from(c.value)).sum();
        let mut r = self.rng.random::<f64>() * kept;
        for c in candidates.iter() {
            r -= f64::from(c.value);
            if r < 0.0 {
                return c.id;
            }
        }
        // Rounding can leave r a hair above zero after the last token.
        candidates.last().map_or(0, |c| c.id)
    }
}

/// The index of the largest logit, the lowest one on ties; NaN is never chosen (all-NaN
/// logits give 0).
fn argmax(logits: &[f32]) -> u32 {
    let mut best: Option<(usize, f32)> = None;
    for (i, &l) in logits.iter().enumerate() {
        if l.is_nan() {
            continue;
        }
        if best.is_none_or(|(_, b)| l > b) {
            best = Some((i, l));
        }
    }
    best.map_or(0, |(i, _)| i as u32)
}

/// llama.cpp's repeat penalty: every distinct recent token (once, however often it
/// occurred) has a positive logit divided by the penalty and a negative one multiplied, so
/// it always becomes less likely. `scratch` holds the distinct tokens.
fn apply_repeat_penalty(logits: &mut [f32], recent: &[u32], penalty: f32, scratch: &mut Vec<u32>) {
    if penalty == 1.0 || !penalty.is_finite() || penalty <= 0.0 || recent.is_empty() {
        return;
    }
    scratch.clear();
    scratch.extend_from_slice(recent);
    scratch.sort_unstable();
    scratch.dedup();
    for &id in scratch.iter() {
        if let Some(l) = logits.get_mut(id as usize) {
            *l = if *l > 0.0 { *l / penalty } else { *l * penalty };
        }
    }
}

#[cfg(test)]
mod tests {
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
}
