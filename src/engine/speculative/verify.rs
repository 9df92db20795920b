//! Sampling a verify pass: its rows are the logits after the fed token and after each draft,
//! sampled in order by the answer's own [`Decoding`] step while the drafts are kept.

use crate::engine::generation::{Decoding, Step};
use crate::engine::prefix_cache::PrefixCache;
use crate::protocol::TurnObserver;
use anyhow::{bail, Result};

/// What a verify pass gave: the last step (the token to feed next, or why the answer ended)
/// and how many drafts were kept before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified {
    pub step: Step,
    pub accepted: usize,
}

/// Samples the positions of a pass that fed a token and then `drafts`: `rows` holds
/// `drafts.len() + 1` rows of logits, `prefix` the sequence up to the fed token. A position
/// whose sampled token is its draft keeps it (into `prefix`, so the next position's
/// penalties see it) and goes on; the first that is not, or that ends the answer, is the
/// pass's result. Without drafts this is one ordinary decode step.
pub fn sample_positions(
    decoding: &mut Decoding,
    rows: &mut [f32],
    drafts: &[u32],
    prefix: &mut PrefixCache,
    observer: &mut dyn TurnObserver,
) -> Result<Verified> {
    let positions = drafts.len() + 1;
    if rows.is_empty() || !rows.len().is_multiple_of(positions) {
        bail!(
            "internal error: {} logits for {positions} positions",
            rows.len()
        );
    }
    let vocab = rows.len() / positions;
    for (accepted, row) in rows.chunks_exact_mut(vocab).enumerate() {
        let draft = drafts.get(accepted).copied();
        let step = decoding.step_drafted(row, prefix.tokens(), draft, observer)?;
        match step {
            Step::Next(token) if Some(token) == draft => prefix.extend(&[token]),
            step => return Ok(Verified { step, accepted }),
        }
    }
    // The last row has no draft, so its step always returned above.
    bail!("internal error: a verify pass ended without a step")
}
