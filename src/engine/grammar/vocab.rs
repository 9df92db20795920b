//! A model's vocabulary as llguidance sees it: every token's bytes in a token trie, the
//! tokens that are not text (BOS, end-of-turn, turn markers) marked special so that a grammar
//! never produces them, and the end-of-turn token as its end of sequence.

use crate::engine::tokenizer::{Pieces, TextTokenizer};
use anyhow::{bail, Context, Result};
use llguidance::toktrie::{ApproximateTokEnv, TokEnv, TokRxInfo, TokTrie};
use std::sync::Arc;

/// The token environment of `tokenizer`. Only byte-exact vocabularies (every GGUF-built one,
/// tokenizer.json files with a byte-level or sentencepiece decoder) can be constrained.
pub fn token_env(tokenizer: &TextTokenizer) -> Result<TokEnv> {
    if tokenizer.pieces() == Pieces::Decoder {
        bail!("grammars need a byte-exact vocabulary, and this tokenizer.json decodes otherwise");
    }
    let eos = *tokenizer
        .stop_ids()
        .first()
        .context("the model has no end-of-turn token, which a grammar needs to end on")?;
    let vocab_size = tokenizer.vocab_size();
    let mut words = Vec::with_capacity(vocab_size);
    for id in 0..vocab_size as u32 {
        let mut bytes = Vec::new();
        if tokenizer.is_control(id) || tokenizer.stop_ids().contains(&id) {
            // Special: 0xFF then its name; a grammar can only name it, never spell it.
            bytes.push(TokTrie::SPECIAL_TOKEN_MARKER);
            bytes.extend(tokenizer.id_to_token(id).unwrap_or_default().bytes());
        } else {
            tokenizer.push_token_bytes(id, &mut bytes);
        }
        words.push(bytes);
    }
    let info = TokRxInfo {
        tok_bos: tokenizer.bos_id(),
        ..TokRxInfo::new(vocab_size as u32, eos)
    };
    Ok(Arc::new(ApproximateTokEnv::new(TokTrie::from(
        &info, &words,
    ))))
}
