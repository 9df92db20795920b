//! What generation needs to know about a vocabulary's special tokens: BOS and EOS, whether a
//! prompt starts with BOS, which tokens end a turn and which are control tokens.

use super::vocabulary::Pipeline;
use crate::engine::gguf::GgufHeader;
use anyhow::{bail, Result};

#[derive(Clone)]
pub(super) struct Specials {
    /// Indexed by id: special (control) tokens, skipped when decoding.
    pub control: Vec<bool>,
    pub stop_ids: Vec<u32>,
    pub bos_id: Option<u32>,
    pub eos_id: Option<u32>,
    pub add_bos: bool,
}

impl Specials {
    /// Ids from the GGUF header, checked against `tokenizer`; control tokens are the ones the
    /// tokenizer treats as special.
    pub fn read(tokenizer: &Pipeline, vocab_size: usize, header: &GgufHeader) -> Result<Self> {
        let id_key = |key: &str| -> Result<Option<u32>> {
            match header.get_u64(key) {
                Some(id) if id < vocab_size as u64 => Ok(Some(id as u32)),
                Some(id) => bail!("{key} = {id} is outside the vocabulary of {vocab_size} tokens"),
                None => Ok(None),
            }
        };
        let bos_id = id_key("tokenizer.ggml.bos_token_id")?;
        let eos_id = id_key("tokenizer.ggml.eos_token_id")?;
        let eot_id = id_key("tokenizer.ggml.eot_token_id")?;
        let eom_id = id_key("tokenizer.ggml.eom_token_id")?;
        let model = header.get_str("tokenizer.ggml.model").unwrap_or("");
        // Without the flag llama.cpp adds BOS to sentencepiece vocabularies only. Gemma 4's chat
        // template writes `<bos>` itself, so transformers turns the flag off there.
        let add_bos = model != "gemma4"
            && header
                .get("tokenizer.ggml.add_bos_token")
                .and_then(|v| v.as_bool())
                .unwrap_or(model == "llama");
        let mut control = vec![false; vocab_size];
        for (&id, token) in tokenizer.get_added_vocabulary().get_added_tokens_decoder() {
            if let Some(flag) = control.get_mut(id as usize) {
                *flag = token.special;
            }
        }
        let stop_ids = stop_ids(tokenizer, [eos_id, eot_id, eom_id].into_iter().flatten());
        Ok(Self {
            control,
            stop_ids,
            bos_id,
            eos_id,
            add_bos,
        })
    }
}

/// The end-of-generation tokens llama.cpp recognises by their text (llama-vocab.cpp), with the
/// file's EOS/EOT/EOM ids; sorted.
fn stop_ids(tokenizer: &Pipeline, from_metadata: impl Iterator<Item = u32>) -> Vec<u32> {
    #[rustfmt::skip]
    const END_OF_TURN: &[&str] = &[
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
        "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
        "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
        // Fill-in-the-middle padding, repository and file separators end generation there too.
        "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", "<|fim_repo|>", "<|repo_name|>",
        "<fim-repo>", "<REPO>", "<reponame>", "<|file_sep|>",
    ];
    let id = |text: &str| tokenizer.token_to_id(text);
    let mut ids: Vec<u32> = END_OF_TURN
        .iter()
        .filter_map(|t| id(t))
        .chain(from_metadata)
        .collect();
    // llama.cpp's exceptions: with gpt-oss's `<|return|>`/`<|call|>` (or Solar's
    // `<|calls|>`/`<|flush|>`), `<|end|>` only ends a message; with Gemma 4's
    // `<|tool_response>`, `</s>` is plain text.
    let has = |text: &str| id(text).is_some();
    let mut drop = Vec::new();
    let call = has("<|call|>") || has("<|calls|>");
    if has("<|end|>") && call && (has("<|return|>") || has("<|flush|>")) {
        drop.extend(id("<|end|>"));
    }
    if has("<|tool_response>") {
        drop.extend(id("</s>"));
    }
    ids.retain(|i| !drop.contains(i));
    ids.sort_unstable();
    ids.dedup();
    ids
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokenizers::models::bpe::{Vocab, BPE};

    fn vocabulary(tokens: &[&str]) -> Pipeline {
        let vocab: Vocab = (0u32..)
            .zip(tokens)
            .map(|(i, t)| (t.to_string(), i))
            .collect();
        let bpe = BPE::builder().vocab_and_merges(vocab, Vec::new()).build();
        Pipeline::new(bpe.expect("a vocabulary without merges").into())
    }

    #[test]
    fn end_of_turn_tokens_are_found_by_their_text() {
        let tok = vocabulary(&["a", "<|im_end|>", "<|endoftext|>", "<|im_start|>"]);
        assert_eq!(stop_ids(&tok, [3].into_iter()), [1, 2, 3]);
    }

    #[test]
    fn gpt_oss_end_is_not_a_stop_when_return_and_call_exist() {
        let tok = vocabulary(&["<|end|>", "<|return|>", "<|call|>"]);
        assert_eq!(stop_ids(&tok, std::iter::empty()), [1, 2]);
        let phi = vocabulary(&["<|end|>", "<|endoftext|>"]);
        assert_eq!(stop_ids(&phi, std::iter::empty()), [0, 1]);
    }

    #[test]
    fn gemma4_closing_s_is_text_not_a_stop() {
        let tok = vocabulary(&["</s>", "<turn|>", "<|tool_response>"]);
        assert_eq!(stop_ids(&tok, std::iter::empty()), [1, 2]);
    }
}
