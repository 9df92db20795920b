//! Speculative decoding: tokens are guessed ahead, fed with the last sampled token in one
//! forward pass, and kept while the model's own sampling agrees with them. The guesses come
//! from the sequence itself (prompt lookup: quoting, editing code and summarising repeat
//! what the prompt or the answer already holds) or from a smaller draft model that shares
//! the model's vocabulary.
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
//! [`lookup`] and [`draft_model`] draft, [`pace`] decides how many and when to rest,
//! [`verify`] samples a pass.

pub mod draft_model;
mod lookup;
mod pace;
mod verify;

pub use draft_model::{DraftMemory, SharedDraft};
pub use verify::{sample_positions, Verified};

use draft_model::ModelDrafter;
use lookup::Lookup;
use pace::Pace;

/// One answer's drafter: where its guesses come from, how far to guess, what it achieved.
pub struct Drafter {
    pace: Pace,
    source: Source,
    /// The sequence with the token about to be fed, reused between steps.
    sequence: Vec<u32>,
}

enum Source {
    Lookup(Lookup),
    Model(ModelDrafter),
    /// A draft model whose pass failed: the answer goes on a token at a time.
    Broken,
}

impl Drafter {
    /// Drafts by prompt lookup.
    pub fn lookup() -> Self {
        Self::with(Source::Lookup(Lookup::default()))
    }

    /// Drafts with `model`, its cache for this sequence in `memory`.
    pub fn model(model: SharedDraft, memory: DraftMemory) -> Self {
        Self::with(Source::Model(ModelDrafter::new(model, memory)))
    }

    fn with(source: Source) -> Self {
        Self {
            pace: Pace::default(),
            source,
            sequence: Vec::new(),
        }
    }

    /// The draft model's cache, for the sequence's next request (None for prompt lookup).
    pub fn into_memory(self) -> Option<DraftMemory> {
        match self.source {
            Source::Model(drafter) => Some(drafter.into_memory()),
            Source::Lookup(_) | Source::Broken => None,
        }
    }

    /// Tokens to feed after `next` (the token just sampled, which follows `history`), at most
    /// `room` (what the context has left after `next`); empty when there is no guess or the
    /// drafter rests.
    pub fn propose(&mut self, history: &[u32], next: u32, room: usize) -> Vec<u32> {
        let most = self.pace.want().min(room);
        if most == 0 {
            return Vec::new();
        }
        self.sequence.clear();
        self.sequence.extend_from_slice(history);
        self.sequence.push(next);
        match &mut self.source {
            Source::Lookup(lookup) => lookup.propose(&self.sequence, most).to_vec(),
            Source::Model(drafter) => match drafter.propose(&self.sequence, most) {
                Ok(drafts) => drafts,
                // Drafting only ever saves time; the answer itself is not at stake.
                Err(_) => {
                    self.source = Source::Broken;
                    Vec::new()
                }
            },
            Source::Broken => Vec::new(),
        }
    }

    /// A pass verified `drafted` tokens and kept `accepted` of them.
    pub fn record(&mut self, drafted: usize, accepted: usize) {
        let rests = self.pace.record(drafted, accepted);
        if let Source::Lookup(lookup) = &mut self.source {
            lookup.record(drafted, accepted);
            // Drafts that keep nothing end the copy as they end drafting for a while.
            if rests {
                lookup.forget_copy();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Drafter;

    #[test]
    fn drafts_that_keep_nothing_end_the_copy_with_the_drafter_s_rest() {
        let quote: Vec<u32> = (10..=25).collect();
        let answer = |tokens: &[u32]| [&quote[..], &[0], tokens].concat();
        let mut drafter = Drafter::lookup();
        // [10, 11, 12] matches the quote: a copy begins and its first draft is kept.
        assert_eq!(
            drafter.propose(&answer(&[10, 11]), 12, 100),
            [13, 14, 15, 16]
        );
        drafter.record(4, 4);
        // Then the answer goes its own way: 17 alone, near the copy, is still a clue.
        let wandered = answer(&[10, 11, 12, 13, 14, 15, 16, 77]);
        assert_eq!(drafter.propose(&wandered, 17, 100)[..2], [18, 19]);
        drafter.record(8, 0);
        assert_eq!(drafter.propose(&wandered, 17, 100), [18]);
        drafter.record(1, 0);
        // Two passes kept nothing: the drafter rests, and the copy is forgotten, so after
        // the rest 17 alone is no clue any more...
        for _ in 0..64 {
            assert!(drafter.propose(&wandered, 17, 100).is_empty());
        }
        // ...while three tokens that match anywhere are.
        let elsewhere = [&wandered[..], &[17, 19, 20]].concat();
        assert_eq!(drafter.propose(&elsewhere, 21, 100), [22]);
    }
}
