//! Sampling the next token from logits.
//!
//! The pipeline is llama.cpp's: repeat penalty, then (unless greedy) top-k, temperature,
//! softmax, top-p and min-p, then a weighted draw. It has to stay cheap for 262k-token
//! vocabularies, so nothing sorts the whole vocabulary when top-k is set, and without
//! top-k min-p is applied as a linear pre-filter before the (then small) sort.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::cmp::Ordering;

pub use crate::protocol::SamplingParams;

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
        self.sample_drafted(logits, recent, None)
    }

    /// [`Sampler::sample`] where a drafter guessed `draft` for this position (speculative
    /// decoding). The result is distributed exactly as `sample`'s, whatever the draft: the
    /// draft is taken with its probability p(x) under the final distribution, and otherwise
    /// a token is drawn from that distribution with x left out and the rest renormalised, so
    /// P(x) = p(x) and P(y) = (1 − p(x)) · p(y) / (1 − p(x)) = p(y). The draft only couples
    /// the draw to the guess, so that a likely guess is kept. Greedy is the point mass on
    /// the argmax either way. Without a draft, this is `sample`, random draws included.
    pub fn sample_drafted(
        &mut self,
        logits: &mut [f32],
        recent: &[u32],
        draft: Option<u32>,
    ) -> u32 {
        match self.distribution(logits, recent) {
            Some(token) => token,
            None => self.draw(draft),
        }
    }

    /// The final distribution over the next token: Some(token) when it is a point mass
    /// (greedy, or logits no weight can be made of), else None with the kept candidates and
    /// their unnormalised probabilities in `self.candidates`.
    fn distribution(&mut self, logits: &mut [f32], recent: &[u32]) -> Option<u32> {
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
            return Some(argmax(logits));
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
            return Some(argmax(logits));
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
            return Some(argmax(logits));
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

        None
    }

    /// A weighted draw from `self.candidates`, coupled to `draft` as
    /// [`Sampler::sample_drafted`] says.
    fn draw(&mut self, draft: Option<u32>) -> u32 {
        let candidates = &self.candidates;
        let kept: f64 = candidates.iter().map(|c| f64::from(c.value)).sum();
        let drafted = draft.and_then(|x| candidates.iter().find(|c| c.id == x));
        let Some(&Candidate { id: x, value }) = drafted else {
            // No draft, or one the distribution gives no weight: a plain draw.
            let mut r = self.rng.random::<f64>() * kept;
            for c in candidates.iter() {
                r -= f64::from(c.value);
                if r < 0.0 {
                    return c.id;
                }
            }
            return candidates.last().map_or(0, |c| c.id);
        };
        let weight = f64::from(value);
        if self.rng.random::<f64>() * kept < weight {
            return x;
        }
        // Rejected: the rest of the distribution, renormalised.
        let mut r = self.rng.random::<f64>() * (kept - weight);
        let mut last = x;
        for c in candidates.iter().filter(|c| c.id != x) {
            last = c.id;
            r -= f64::from(c.value);
            if r < 0.0 {
                return c.id;
            }
        }
        last
    }
}

/// The index of the largest logit, the lowest one on ties; NaN is never chosen (all-NaN
/// logits give 0).
fn argmax(logits: &[f32]) -> u32 {
    // Two passes that vectorize rather than one that branches on every logit: on Gemma's
    // 262,144-entry vocabulary the branching loop took a third of a millisecond per token,
    // 3% of a decode step, with the compute threads idle. First the largest value in sixteen
    // independent lanes (a comparison with NaN is false, so NaNs are skipped), then the first
    // position holding it: the first of several equal maxima, as before.
    let mut lanes = [f32::NEG_INFINITY; 16];
    let (chunks, rest) = logits.as_chunks::<16>();
    for chunk in chunks {
        for (lane, &l) in lanes.iter_mut().zip(chunk) {
            *lane = if l > *lane { l } else { *lane };
        }
    }
    let max = lanes
        .iter()
        .chain(rest)
        .fold(f32::NEG_INFINITY, |m, &l| if l > m { l } else { m });
    // All NaN: nothing equals `max` (−∞), and token 0 is as good as any.
    logits
        .iter()
        .position(|&l| l == max)
        .map_or(0, |i| i as u32)
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
#[path = "sampler_tests.rs"]
mod tests;
