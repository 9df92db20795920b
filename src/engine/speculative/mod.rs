//! Speculative decoding by prompt lookup: tokens are guessed ahead from the sequence itself
//! (quoting, editing code and summarising repeat what the prompt or the answer already
//! holds), fed with the last sampled token in one forward pass, and kept while the model's
//! own sampling agrees with them.
//!
//! Why it is exact: a pass's rows are batch-invariant, so the logits of a drafted position
//! are bit for bit those a decode step would have computed there, and each position is
//! sampled by the same [`Decoding`](super::generation::Decoding) step, in order, with the
//! tokens kept before it in its history (penalties, grammar, stop strings and the token
//! limit see exactly what they would see one token at a time). Greedy picks the same argmax;
//! a sampled position draws from the same distribution (`Sampler::sample_drafted`). The
//! first position that disagrees gives the token sampled there, and the cache is cut back to
//! the tokens kept.
//!
//! [`lookup`] drafts, [`pace`] decides how many and when to rest, [`verify`] samples a pass.

mod lookup;
mod pace;
mod verify;

pub use verify::{sample_positions, Verified};

use pace::Pace;

/// One answer's drafter: where to look, how far to guess, what it achieved.
#[derive(Debug, Default)]
pub struct Drafter {
    pace: Pace,
    /// The sequence with the token about to be fed, reused between steps.
    sequence: Vec<u32>,
}

impl Drafter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Tokens to feed after `next` (the token just sampled, which follows `history`), at most
    /// `room` (what the context has left after `next`); empty when there is no match or the
    /// drafter rests.
    pub fn propose(&mut self, history: &[u32], next: u32, room: usize) -> Vec<u32> {
        let most = self.pace.want().min(room);
        if most == 0 {
            return Vec::new();
        }
        self.sequence.clear();
        self.sequence.extend_from_slice(history);
        self.sequence.push(next);
        lookup::continuation(&self.sequence, most).to_vec()
    }

    /// A pass verified `drafted` tokens and kept `accepted` of them.
    pub fn record(&mut self, drafted: usize, accepted: usize) {
        self.pace.record(drafted, accepted);
    }
}
