//! OpenAI's frequency and presence penalties: each token already in the answer loses
//! `frequency × count + presence` from its logit (the sampler's repeat penalty is the other,
//! llama.cpp-style, knob).

use std::collections::HashMap;

/// Applies the penalties for the tokens of `answer` to `logits`.
pub fn apply(logits: &mut [f32], answer: &[u32], frequency: f32, presence: f32) {
    if (frequency == 0.0 && presence == 0.0) || answer.is_empty() {
        return;
    }
    let mut counts: HashMap<u32, u32> = HashMap::new();
    for &id in answer {
        *counts.entry(id).or_default() += 1;
    }
    for (id, count) in counts {
        if let Some(l) = logits.get_mut(id as usize) {
            *l -= frequency * count as f32 + presence;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn repeated_tokens_lose_by_count_and_presence() {
        let mut logits = vec![1.0; 4];
        super::apply(&mut logits, &[1, 1, 2], 0.5, 0.25);
        assert_eq!(logits, vec![1.0, -0.25, 0.25, 1.0]);
    }
}
