//! Drafting with a second, smaller model that shares the target's vocabulary (qwen3-0.6b for
//! qwen3-4b, SmolLM2-135M for SmolLM2-1.7B): it decodes a few tokens greedily, one cheap pass
//! each, and the target verifies them in one pass. The draft model keeps a KV cache of its
//! own per sequence, brought up to the target's tokens before each draft, so it reads only
//! what is new since the last one.

use crate::engine::generation::PREFILL_CHUNK;
use crate::engine::loader::{self, OpenOptions};
use crate::engine::model::{CacheOptions, KvCache, LanguageModel, SlotStep};
use crate::engine::prefix_cache::PrefixCache;
use crate::engine::prompt::ModelText;
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// A draft model, shared by every sequence that drafts with it (one host thread drives them
/// all, so the lock is never contended; it only lets slots hold the model without borrowing
/// the scheduler).
pub type SharedDraft = Arc<Mutex<Box<dyn LanguageModel>>>;

/// Drafting stops at a token the draft model gives less than this probability: such guesses
/// are rarely kept, and each costs a draft pass and a verify row. (Most of a draft's misses
/// on SmolLM2 were at tokens its own model doubted.)
const CONFIDENT: f32 = 0.5;

/// Loads the model at `path` as a draft for `target` (whose tokenizer it must share) with a
/// context of `context` positions. The error says why it cannot draft.
pub fn open(path: &Path, target: &ModelText, cache: CacheOptions) -> Result<SharedDraft> {
    let what = || format!("draft model {}", path.display());
    let loaded = loader::open(path, &OpenOptions::new(cache)).with_context(what)?;
    let (model, text) = loaded.into_text().with_context(what)?;
    same_vocabulary(&text, target).with_context(what)?;
    Ok(Arc::new(Mutex::new(model)))
}

/// Drafts are the target's token ids: both tokenizers must map every id to the same text.
fn same_vocabulary(draft: &ModelText, target: &ModelText) -> Result<()> {
    let (d, t) = (&draft.tokenizer, &target.tokenizer);
    if d.vocab_size() != t.vocab_size() {
        bail!(
            "its vocabulary has {} tokens and the model's {}: a draft model must share the \
             model's tokenizer",
            d.vocab_size(),
            t.vocab_size()
        );
    }
    for id in 0..t.vocab_size() as u32 {
        let (a, b) = (d.id_to_token(id), t.id_to_token(id));
        if a != b {
            bail!(
                "token {id} is {} in it and {} in the model: a draft model must share the \
                 model's tokenizer",
                a.as_deref().unwrap_or("missing"),
                b.as_deref().unwrap_or("missing")
            );
        }
    }
    Ok(())
}

/// One sequence's drafting with a draft model: its cache and the tokens the cache holds.
pub struct ModelDrafter {
    model: SharedDraft,
    memory: DraftMemory,
}

/// A draft model's cache for one sequence and the tokens in it: kept by a slot between
/// requests, so the next turn of a conversation drafts without re-reading it.
pub struct DraftMemory {
    cache: KvCache,
    tokens: PrefixCache,
}

impl DraftMemory {
    /// An empty cache of the draft model's.
    pub fn new(model: &SharedDraft) -> Result<Self> {
        let cache = lock(model).new_cache()?;
        Ok(Self {
            cache,
            tokens: PrefixCache::default(),
        })
    }
}

impl ModelDrafter {
    pub fn new(model: SharedDraft, memory: DraftMemory) -> Self {
        Self { model, memory }
    }

    /// The cache, for the next request of the same sequence.
    pub fn into_memory(self) -> DraftMemory {
        self.memory
    }

    /// Up to `most` tokens the draft model expects after `sequence`, greedily; fewer where it
    /// doubts its guess, none when `sequence` does not fit in its context.
    pub fn propose(&mut self, sequence: &[u32], most: usize) -> Result<Vec<u32>> {
        let mut model = lock(&self.model);
        let memory = &mut self.memory;
        if most == 0 || sequence.len() + most > memory.cache.capacity() {
            return Ok(Vec::new());
        }
        // What the cache holds that still matches: the rest (rejected drafts, a new turn)
        // goes. At least the last token is fed again, for its logits.
        let shared = memory.tokens.reusable_prefix(sequence);
        memory.tokens.truncate(shared);
        memory.cache.truncate(shared);
        let mut logits = Vec::new();
        for chunk in sequence[shared..].chunks(PREFILL_CHUNK) {
            logits = feed(model.as_mut(), &mut memory.cache, chunk)?;
            memory.tokens.extend(chunk);
        }
        let mut drafts = Vec::with_capacity(most);
        while let Some(token) = confident_argmax(&logits) {
            drafts.push(token);
            if drafts.len() == most {
                break;
            }
            logits = feed(model.as_mut(), &mut memory.cache, &[token])?;
            memory.tokens.extend(&[token]);
        }
        Ok(drafts)
    }
}

fn lock(model: &SharedDraft) -> std::sync::MutexGuard<'_, Box<dyn LanguageModel>> {
    // A panic while drafting left the model as it was between passes: still usable.
    model
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The last token's logits after feeding `tokens` into `cache`.
fn feed(model: &mut dyn LanguageModel, cache: &mut KvCache, tokens: &[u32]) -> Result<Vec<f32>> {
    model.forward_batch(&mut [SlotStep {
        cache,
        tokens,
        all_logits: false,
    }])
}

/// The likeliest token, when its probability reaches [`CONFIDENT`].
fn confident_argmax(logits: &[f32]) -> Option<u32> {
    let (best, &top) = logits
        .iter()
        .enumerate()
        .filter(|(_, l)| l.is_finite())
        .max_by(|a, b| a.1.total_cmp(b.1))?;
    // p(best) = 1 / Σ exp(l − top).
    let total: f32 = logits
        .iter()
        .filter(|l| l.is_finite())
        .map(|l| (l - top).exp())
        .sum();
    (1.0 / total >= CONFIDENT).then_some(best as u32)
}

#[cfg(test)]
mod tests {
    use super::confident_argmax;

    #[test]
    fn a_doubted_guess_is_not_drafted() {
        assert_eq!(confident_argmax(&[0.0, 5.0, 1.0]), Some(1));
        // Two equally likely tokens: 0.5 each, just enough.
        assert!(confident_argmax(&[3.0, 3.0]).is_some());
        assert_eq!(confident_argmax(&[1.0, 1.0, 1.0]), None);
        assert_eq!(confident_argmax(&[f32::NAN, f32::NEG_INFINITY]), None);
    }
}
