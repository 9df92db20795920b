//! `taper perplexity`: how well a model predicts a text, computed as llama.cpp's
//! `llama-perplexity` does by default, so the two programs' numbers can be compared.
//!
//! The whole text is tokenized once (BOS first when the model adds one) and cut into
//! windows of `n_ctx` tokens; each window is evaluated from an empty KV cache, its first
//! token replaced by BOS when the model adds one. Only the second half is scored (every
//! position from `n_ctx/2` on predicts the next token of the window), so each scored token
//! has at least half a window of context. PPL = exp(mean NLL) with the standard error of the
//! mean carried through the exponential. With a base file, each scored position's
//! distribution is also compared with the base's ([`kld`], [`kld_file`]).

pub mod kld;
pub mod kld_file;
pub mod report;
mod scoring;
pub mod stats;

pub use scoring::{Scoring, Summary};

use crate::engine::generation::{Generator, Unobserved};
use anyhow::{bail, Result};

/// llama-perplexity's default window.
pub const DEFAULT_CTX: usize = 512;
/// The smallest window with a scored position in each half.
pub const MIN_CTX: usize = 4;

/// Positions scored in a window of `n_ctx`: from `n_ctx/2` to the one before the last (the
/// last has no next token inside the window).
pub fn scored_per_window(n_ctx: usize) -> usize {
    n_ctx.saturating_sub(1 + n_ctx / 2)
}

/// How a token stream is cut into windows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Windows {
    pub n_ctx: usize,
    pub n_chunk: usize,
}

impl Windows {
    /// Every whole window of `n_tokens` (at most `chunks`); at least two must fit, as
    /// llama.cpp requires.
    pub fn plan(n_tokens: usize, n_ctx: usize, chunks: Option<usize>) -> Result<Self> {
        if n_ctx < MIN_CTX {
            bail!("--ctx-size must be at least {MIN_CTX}");
        }
        if n_tokens < 2 * n_ctx {
            bail!(
                "the text is too short: it is {n_tokens} tokens, and perplexity with a \
                 --ctx-size of {n_ctx} needs at least {} (two windows)",
                2 * n_ctx
            );
        }
        if chunks == Some(0) {
            bail!("--chunks must be at least 1");
        }
        let whole = n_tokens / n_ctx;
        Ok(Self {
            n_ctx,
            n_chunk: chunks.map_or(whole, |c| c.min(whole)),
        })
    }

    /// The first scored position of a window.
    pub fn first(&self) -> usize {
        self.n_ctx / 2
    }

    /// Positions scored over all windows.
    pub fn scored(&self) -> usize {
        self.n_chunk * scored_per_window(self.n_ctx)
    }

    /// The tokens window `i` evaluates: BOS in place of its first token when given, and
    /// without its last token (whose prediction would fall outside the window).
    pub fn input(&self, tokens: &[u32], i: usize, bos: Option<u32>) -> Vec<u32> {
        let start = i * self.n_ctx;
        let mut input = tokens[start..start + self.n_ctx - 1].to_vec();
        if let Some(bos) = bos {
            input[0] = bos;
        }
        input
    }

    /// The tokens window `i`'s scored positions predict.
    pub fn targets<'t>(&self, tokens: &'t [u32], i: usize) -> &'t [u32] {
        let start = i * self.n_ctx;
        &tokens[start + self.first() + 1..start + self.n_ctx]
    }
}

/// Evaluates every window through the engine's generation driver and scores it;
/// `after_window(done)` runs after each (progress, running estimate).
pub fn evaluate(
    generator: &mut Generator<'_>,
    tokens: &[u32],
    windows: Windows,
    bos: Option<u32>,
    scoring: &mut Scoring,
    after_window: &mut dyn FnMut(usize, &Scoring),
) -> Result<()> {
    let vocab = generator.model.config().vocab_size;
    for i in 0..windows.n_chunk {
        let input = windows.input(tokens, i, bos);
        let targets = windows.targets(tokens, i);
        let mut at = 0;
        let mut score_rows = |logits: &[f32]| {
            let rows = logits.len() / vocab;
            let Some(these) = targets.get(at..at + rows) else {
                bail!("the model returned more logit rows than the window has positions");
            };
            at += rows;
            scoring.rows(logits, these, vocab)
        };
        generator.prefill_fresh_all_logits(
            &input,
            windows.first(),
            &mut Unobserved,
            &mut score_rows,
        )?;
        if at != targets.len() {
            bail!(
                "the model returned {at} logit rows for {} positions",
                targets.len()
            );
        }
        after_window(i + 1, scoring);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_whole_and_at_least_two() {
        let w = Windows::plan(1000, 128, None).expect("plan");
        assert_eq!((w.n_chunk, w.first(), w.scored()), (7, 64, 7 * 63));
        assert_eq!(Windows::plan(1000, 128, Some(2)).expect("plan").n_chunk, 2);
        assert_eq!(Windows::plan(1000, 128, Some(50)).expect("plan").n_chunk, 7);
        let short = Windows::plan(255, 128, None).expect_err("short");
        assert!(short.to_string().contains("255 tokens"), "{short}");
        assert!(Windows::plan(1000, 2, None).is_err());
        assert!(Windows::plan(1000, 128, Some(0)).is_err());
    }

    #[test]
    fn a_window_starts_with_bos_and_scores_its_second_half() {
        let tokens: Vec<u32> = (100..120).collect();
        let w = Windows::plan(tokens.len(), 8, None).expect("plan");
        assert_eq!(
            w.input(&tokens, 1, Some(1)),
            [1, 109, 110, 111, 112, 113, 114]
        );
        assert_eq!(w.input(&tokens, 1, None)[0], 108);
        // Positions 4, 5, 6 predict tokens 5, 6, 7 of the window.
        assert_eq!(w.targets(&tokens, 1), [113, 114, 115]);
        assert_eq!(scored_per_window(8), 3);
        assert_eq!(scored_per_window(9), 4);
    }
}
