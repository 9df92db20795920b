//! The generation driver: sampling, penalties, stop tokens and detokenizing, token by token
//! ([`Decoding`]), which every answer goes through (each slot of the engine host drives one),
//! and a prompt through one model in chunks then decoded ([`Generator`]), which the in-process
//! measurements use (`taper bench`, `taper perplexity`). So a fix here is a fix for all.

use super::detokenizer::Detokenizer;
use super::grammar::Grammar;
use super::model::LanguageModel;
use super::penalties;
use super::prefix_cache::PrefixCache;
use super::sampler::Sampler;
use super::speculative::{sample_positions, Drafter};
use super::tokenizer::TextTokenizer;
use crate::protocol::{SamplingParams, Speculation};
use crate::protocol::{StopReason, TurnObserver, Usage};
use crate::stats::secs;
use anyhow::{bail, Context, Result};
use std::time::Instant;

/// Prompt tokens computed per forward pass; progress is reported, and a stop seen, between
/// chunks.
pub const PREFILL_CHUNK: usize = 256;

/// Most logits (rows × vocabulary) one forward pass returns when every row is wanted.
const LOGIT_FLOATS_PER_PASS: usize = 1 << 24;

/// How a turn decodes.
#[derive(Debug, Clone)]
pub struct TurnOptions {
    pub sampling: SamplingParams,
    /// Most tokens to generate (the end-of-turn token not counted).
    pub max_tokens: usize,
    /// End at the model's end-of-turn tokens; the bench decodes through them.
    pub stop_at_end_of_turn: bool,
}

/// What a turn produced.
#[derive(Debug, Clone, Default)]
pub struct TurnOutcome {
    pub usage: Usage,
    /// The generated ids, end-of-turn token excluded.
    pub ids: Vec<u32>,
    /// Their text: every piece the observer heard, joined.
    pub text: String,
}

/// A model with the record of what its KV cache holds, and the tokenizer that reads its ids.
pub struct Generator<'a> {
    pub model: &'a mut dyn LanguageModel,
    pub cache: &'a mut PrefixCache,
    /// None for a file without a vocabulary (a bench shape): ids only, no text and no
    /// end-of-turn tokens.
    pub tokenizer: Option<&'a TextTokenizer>,
}

impl Generator<'_> {
    /// Answers `prompt`: reuses the cached prefix, computes the rest in chunks, then samples
    /// until an end-of-turn token, `max_tokens`, a full context or a stop request. Time to
    /// first token counts from `asked` (so a client's templating and tokenizing count too).
    pub fn run(
        &mut self,
        prompt: &[u32],
        options: &TurnOptions,
        asked: Instant,
        observer: &mut dyn TurnObserver,
    ) -> Result<TurnOutcome> {
        self.run_held(prompt, options, None, asked, observer)
    }

    /// [`Generator::run`] with the answer held to `grammar` (the bench's `--json-schema`).
    pub fn run_held(
        &mut self,
        prompt: &[u32],
        options: &TurnOptions,
        grammar: Option<Grammar>,
        asked: Instant,
        observer: &mut dyn TurnObserver,
    ) -> Result<TurnOutcome> {
        self.run_speculative(prompt, options, grammar, Speculation::Off, asked, observer)
    }

    /// [`Generator::run_held`], drafting by prompt lookup when `speculation` says so (a
    /// draft model needs [`Generator::run_drafted`]).
    pub fn run_speculative(
        &mut self,
        prompt: &[u32],
        options: &TurnOptions,
        grammar: Option<Grammar>,
        speculation: Speculation,
        asked: Instant,
        observer: &mut dyn TurnObserver,
    ) -> Result<TurnOutcome> {
        let drafter = (speculation == Speculation::Ngram).then(Drafter::lookup);
        self.run_drafted(prompt, options, grammar, drafter, asked, observer)
    }

    /// [`Generator::run_held`], with `drafter` guessing tokens ahead (the bench compares
    /// decoding with and without).
    pub fn run_drafted(
        &mut self,
        prompt: &[u32],
        options: &TurnOptions,
        grammar: Option<Grammar>,
        mut drafter: Option<Drafter>,
        asked: Instant,
        observer: &mut dyn TurnObserver,
    ) -> Result<TurnOutcome> {
        let context = self.model.context_size();
        let reused = self.cache.reusable_prefix(prompt);
        let mut outcome = TurnOutcome {
            usage: Usage {
                prompt_tokens: prompt.len(),
                cached_tokens: reused,
                context_size: context,
                ..Usage::default()
            },
            ..TurnOutcome::default()
        };
        let prefill_started = Instant::now();
        let Some(mut rows) = self.prefill_after(reused, &prompt[reused..], observer)? else {
            outcome.usage.stop = Some(StopReason::Cancelled);
            return Ok(outcome);
        };
        outcome.usage.prefill_s = secs(prefill_started.elapsed());

        let mut decoding =
            Decoding::new(self.tokenizer, options, asked, outcome.usage).with_grammar(grammar);
        let mut drafts = Vec::new();
        let mut first = true;
        let stop = loop {
            let verified =
                sample_positions(&mut decoding, &mut rows, &drafts, self.cache, observer)?;
            if !first {
                decoding.count_pass(drafts.len(), verified.accepted);
            }
            first = false;
            if let Some(drafter) = drafter.as_mut() {
                drafter.record(drafts.len(), verified.accepted);
            }
            // The rejected drafts' positions leave the cache.
            self.model.truncate_cache(self.cache.tokens().len());
            let next = match verified.step {
                Step::Next(next) => next,
                Step::Stop(stop) => break stop,
            };
            let cached = self.model.cached_len();
            if cached + 1 > context {
                break StopReason::ContextFull;
            }
            // Drafts never run past the context: the pass writes next and every draft.
            let room = context - cached - 1;
            drafts = match drafter.as_mut() {
                Some(drafter) => drafter.propose(self.cache.tokens(), next, room),
                None => Vec::new(),
            };
            let feed = [&[next][..], &drafts].concat();
            rows = self.model.forward(&feed, !drafts.is_empty())?;
            self.cache.extend(&[next]);
        };
        decoding.finish(stop, observer)
    }

    /// Computes `tokens` on a cache emptied first; the last token's logits (None when the
    /// observer asked to stop first). The bench's prefill sweeps.
    pub fn prefill_fresh(
        &mut self,
        tokens: &[u32],
        observer: &mut dyn TurnObserver,
    ) -> Result<Option<Vec<f32>>> {
        self.prefill_after(0, tokens, observer)
    }

    /// Computes `tokens` on a cache emptied first and hands `rows` the logits of every
    /// position from `from` on, in order, one forward pass at a time (row-major,
    /// `passed × vocab`). Positions before `from` are computed without their logits. False
    /// when the observer asked to stop. Perplexity windows.
    pub fn prefill_fresh_all_logits(
        &mut self,
        tokens: &[u32],
        from: usize,
        observer: &mut dyn TurnObserver,
        rows: &mut dyn FnMut(&[f32]) -> Result<()>,
    ) -> Result<bool> {
        if from >= tokens.len() {
            bail!("no position from {from} on in {} tokens", tokens.len());
        }
        self.model.truncate_cache(0);
        self.cache.truncate(0);
        // Rows of a big vocabulary are large (Gemma 3: 1 MiB each): passes with logits are
        // kept to LOGIT_FLOATS_PER_PASS. Batch invariance makes the split invisible.
        let vocab = self.model.config().vocab_size.max(1);
        let per_pass = (LOGIT_FLOATS_PER_PASS / vocab).clamp(1, PREFILL_CHUNK);
        let (head, tail) = tokens.split_at(from);
        let passes = head.chunks(PREFILL_CHUNK).map(|c| (c, false));
        let passes = passes.chain(tail.chunks(per_pass).map(|c| (c, true)));
        let mut done = 0;
        for (chunk, wanted) in passes {
            if observer.stop_requested() {
                return Ok(false);
            }
            let logits = self.model.forward(chunk, wanted)?;
            self.cache.extend(chunk);
            if wanted {
                ensure_finite(&logits)?;
                rows(&logits)?;
            }
            done += chunk.len();
            observer.prompt_progress(done, tokens.len())?;
        }
        Ok(true)
    }

    /// Keeps the first `keep` cached positions and computes `tokens` after them, a chunk per
    /// forward pass.
    fn prefill_after(
        &mut self,
        keep: usize,
        tokens: &[u32],
        observer: &mut dyn TurnObserver,
    ) -> Result<Option<Vec<f32>>> {
        self.model.truncate_cache(keep);
        self.cache.truncate(keep);
        let mut logits = None;
        let mut done = 0;
        for chunk in tokens.chunks(PREFILL_CHUNK) {
            if observer.stop_requested() {
                return Ok(None);
            }
            logits = Some(self.model.forward(chunk, false)?);
            self.cache.extend(chunk);
            done += chunk.len();
            observer.prompt_progress(done, tokens.len())?;
        }
        logits.context("the prompt is empty").map(Some)
    }
}

/// What one sampling step decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// This token was generated: feed it next (unless the context is full).
    Next(u32),
    /// The answer is over.
    Stop(StopReason),
}

/// The sampling half of a turn, one token at a time: its sampler, detokenizer, stop tokens
/// and usage. [`Generator::run`] drives one; each slot of the engine host drives one, so every
/// answer samples, stops and detokenizes the same way.
pub struct Decoding<'t> {
    sampler: Sampler,
    /// The grammar the answer is held to, if any.
    grammar: Option<Grammar>,
    detok: Option<Detokenizer<'t>>,
    stop_ids: &'t [u32],
    options: TurnOptions,
    asked: Instant,
    first_token_at: Option<Instant>,
    outcome: TurnOutcome,
}

impl<'t> Decoding<'t> {
    /// A turn whose prompt is computed; `usage` already holds its prompt figures. Time to
    /// first token counts from `asked`.
    pub fn new(
        tokenizer: Option<&'t TextTokenizer>,
        options: &TurnOptions,
        asked: Instant,
        usage: Usage,
    ) -> Self {
        Self {
            sampler: Sampler::new(options.sampling.clone()),
            grammar: None,
            detok: tokenizer.map(Detokenizer::new),
            stop_ids: tokenizer.map(TextTokenizer::stop_ids).unwrap_or_default(),
            options: options.clone(),
            asked,
            first_token_at: None,
            outcome: TurnOutcome {
                usage,
                ..TurnOutcome::default()
            },
        }
    }

    /// Holds the answer to `grammar`.
    pub fn with_grammar(mut self, grammar: Option<Grammar>) -> Self {
        self.grammar = grammar;
        self
    }

    /// Goes on with an answer already begun: its text is not the start of the reply.
    pub fn continuing(mut self) -> Self {
        self.detok = self.detok.map(Detokenizer::continuing);
        self
    }

    /// What the turn has produced so far.
    pub fn outcome(&self) -> &TurnOutcome {
        &self.outcome
    }

    /// Samples the next token from `logits` (the last position's; `history` is every token
    /// in the sequence's cache, for the repeat penalty), tells the observer, and says whether
    /// to go on.
    pub fn step(
        &mut self,
        logits: &mut [f32],
        history: &[u32],
        observer: &mut dyn TurnObserver,
    ) -> Result<Step> {
        self.step_drafted(logits, history, None, observer)
    }

    /// [`Decoding::step`] at a position a drafter guessed `draft` for: the token is sampled
    /// as `Sampler::sample_drafted` says (the same distribution; greedy the same token).
    pub fn step_drafted(
        &mut self,
        logits: &mut [f32],
        history: &[u32],
        draft: Option<u32>,
        observer: &mut dyn TurnObserver,
    ) -> Result<Step> {
        if observer.stop_requested() {
            return Ok(Step::Stop(StopReason::Cancelled));
        }
        ensure_finite(logits)?;
        let sampling = self.sampler.params();
        let (frequency, presence) = (sampling.frequency_penalty, sampling.presence_penalty);
        penalties::apply(logits, &self.outcome.ids, frequency, presence);
        let masked = Instant::now();
        if let Some(grammar) = self.grammar.as_mut() {
            grammar.mask(logits)?;
        }
        let grammar_s = secs(masked.elapsed());
        let next = self.sampler.sample_drafted(logits, history, draft);
        if let Some(grammar) = self.grammar.as_mut() {
            let advanced = Instant::now();
            grammar.accept(next)?;
            self.outcome.usage.grammar_s += grammar_s + secs(advanced.elapsed());
        }
        let now = Instant::now();
        let usage = &mut self.outcome.usage;
        let asked = self.asked;
        let first = *self.first_token_at.get_or_insert_with(|| {
            usage.ttft_s = secs(now - asked);
            now
        });
        if self.options.stop_at_end_of_turn && self.stop_ids.contains(&next) {
            return Ok(Step::Stop(StopReason::EndOfTurn));
        }
        usage.generated_tokens += 1;
        usage.decode_s = secs(now - first);
        self.outcome.ids.push(next);
        observer.token(next);
        if let Some(piece) = self
            .detok
            .as_mut()
            .map(|d| d.push(next))
            .transpose()?
            .flatten()
        {
            self.outcome.text.push_str(&piece);
            observer.text(&piece)?;
        }
        if usage.generated_tokens >= self.options.max_tokens {
            return Ok(Step::Stop(StopReason::MaxTokens));
        }
        Ok(Step::Next(next))
    }

    /// A forward pass after the first token fed `drafted` drafts and `accepted` were kept.
    pub fn count_pass(&mut self, drafted: usize, accepted: usize) {
        let usage = &mut self.outcome.usage;
        usage.decode_passes += 1;
        usage.drafted_tokens += drafted;
        usage.accepted_tokens += accepted;
    }

    /// Ends the turn: the detokenizer's held-back text goes to the observer.
    pub fn finish(
        mut self,
        stop: StopReason,
        observer: &mut dyn TurnObserver,
    ) -> Result<TurnOutcome> {
        if let Some(piece) = self
            .detok
            .as_mut()
            .map(Detokenizer::finish)
            .transpose()?
            .flatten()
        {
            self.outcome.text.push_str(&piece);
            observer.text(&piece)?;
        }
        self.outcome.usage.stop = Some(stop);
        Ok(self.outcome)
    }
}

/// Non-finite logits mean a broken model or file: an error, not a token.
fn ensure_finite(logits: &[f32]) -> Result<()> {
    // A test that vectorizes (all exponent bits set: infinite or NaN) before the search that
    // stops at the first bad value, which does not: a branch per logit over Gemma's 262,144
    // cost a tenth of a millisecond every token.
    const EXPONENT: u32 = 0x7F80_0000;
    let all_finite = logits.chunks(1024).all(|chunk| {
        let bad = chunk.iter().fold(0u32, |acc, v| {
            acc | u32::from(v.to_bits() & EXPONENT == EXPONENT)
        });
        bad == 0
    });
    if all_finite {
        return Ok(());
    }
    match logits.iter().position(|v| !v.is_finite()) {
        Some(i) => bail!(
            "the model produced a non-finite logit ({}) for token {i}",
            logits[i]
        ),
        None => Ok(()),
    }
}

/// An observer that hears nothing and never stops a turn.
pub struct Unobserved;

impl TurnObserver for Unobserved {}

#[cfg(test)]
mod tests {
    use super::ensure_finite;

    #[test]
    fn a_non_finite_logit_anywhere_is_named_with_its_token() {
        let mut logits: Vec<f32> = (0..5000).map(|i| (i % 97) as f32 - 48.0).collect();
        assert!(ensure_finite(&logits).is_ok());
        for (at, bad) in [
            (0, f32::NAN),
            (1023, f32::INFINITY),
            (4999, f32::NEG_INFINITY),
        ] {
            let kept = logits[at];
            logits[at] = bad;
            let message = ensure_finite(&logits).expect_err("a bad logit").to_string();
            assert!(message.contains(&format!("token {at}")), "{message}");
            logits[at] = kept;
        }
        assert!(ensure_finite(&[f32::MAX, f32::MIN, f32::MIN_POSITIVE, -0.0]).is_ok());
    }
}
