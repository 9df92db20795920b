//! Tokenizers rebuilt from GGUF metadata (or read from a tokenizer.json), with the model's
//! special tokens, end-of-turn tokens and a byte-exact decoder that the streaming
//! [`Detokenizer`](super::detokenizer::Detokenizer) shares.

mod merges;
mod pieces;
mod rebuild;
mod scored;
mod special;
mod vocabulary;

pub(crate) use pieces::{byte_to_char, Pieces};

use crate::engine::gguf::GgufHeader;
use anyhow::{anyhow, bail, Context, Result};
use std::path::Path;
use vocabulary::Pipeline;

/// A model's tokenizer with what generation needs to know about its special tokens.
#[derive(Clone)]
pub struct TextTokenizer {
    inner: Pipeline,
    pieces: Pieces,
    vocab_size: usize,
    special: special::Specials,
}

impl TextTokenizer {
    /// Rebuilds the tokenizer the file's `tokenizer.ggml.*` metadata describes. Errors do not
    /// name the file; callers add that.
    pub fn from_gguf(header: &GgufHeader) -> Result<Self> {
        let model = header.get_str("tokenizer.ggml.model").unwrap_or("");
        if model.is_empty() || model == "none" || model == "no_vocab" {
            bail!(
                "the file has no vocabulary (tokenizer.ggml.model = {model:?}); \
                 pass the model's tokenizer.json with --tokenizer"
            );
        }
        let vocab = rebuild::GgufVocab::read(header).context("cannot rebuild the tokenizer")?;
        let (inner, pieces) =
            rebuild::rebuild(header, &vocab).context("cannot rebuild the tokenizer")?;
        Self::assemble(inner, pieces, vocab.tokens.len(), header)
    }

    /// Reads a tokenizer.json; the GGUF header still says which tokens are BOS, EOS and stops.
    pub fn from_tokenizer_json(path: &Path, header: &GgufHeader) -> Result<Self> {
        let mut inner = Pipeline::from_file(path)
            .map_err(|e| anyhow!("cannot read the tokenizer {}: {e}", path.display()))?;
        // A tokenizer.json may carry training-time truncation or padding; prompts need neither.
        inner
            .with_truncation(None)
            .map_err(|e| anyhow!("{}: {e}", path.display()))?;
        inner.with_padding(None);
        let pieces = pieces::recognise_decoder(&inner);
        let vocab_size = inner.get_vocab_size(true);
        Self::assemble(inner, pieces, vocab_size, header)
    }

    fn assemble(
        inner: Pipeline,
        pieces: Pieces,
        vocab_size: usize,
        header: &GgufHeader,
    ) -> Result<Self> {
        let special = special::Specials::read(&inner, vocab_size, header)?;
        Ok(Self {
            inner,
            pieces,
            vocab_size,
            special,
        })
    }

    /// Ids of `text`, special tokens in the text parsed as such, no BOS added.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let encoding = self
            .inner
            .encode_fast(text, false)
            .map_err(|e| anyhow!("cannot tokenize the text: {e}"))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// From now on, reads special-token strings in a text (`<|im_end|>`, `<bos>`) as plain
    /// characters, as llama.cpp tokenizes a text to score (`parse_special = false`): such a
    /// text is data, not a prompt.
    pub fn read_specials_as_text(&mut self) {
        self.inner.set_encode_special_tokens(true);
    }

    /// The text of `ids`: control tokens (BOS, EOS, turn markers) are skipped, other added
    /// tokens are text. Ids outside the vocabulary decode to nothing. Equals the concatenation
    /// of a [`Detokenizer`](super::detokenizer::Detokenizer)'s pieces.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        let ids: Vec<u32> = ids
            .iter()
            .copied()
            .filter(|&id| !self.is_control(id))
            .collect();
        match self.pieces {
            Pieces::Decoder => self.decode_with_decoder(&ids),
            Pieces::ByteLevel | Pieces::SentencePiece { .. } => {
                let mut bytes = Vec::new();
                for &id in &ids {
                    self.push_token_bytes(id, &mut bytes);
                }
                if self.strips_first_space() && bytes.first() == Some(&b' ') {
                    bytes.remove(0);
                }
                Ok(String::from_utf8_lossy(&bytes).into_owned())
            }
        }
    }

    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// The id of a token as the vocabulary spells it (`▁word`, `Ġword`, `<|im_end|>`).
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// A token as the vocabulary spells it.
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        self.inner.id_to_token(id)
    }

    pub fn bos_id(&self) -> Option<u32> {
        self.special.bos_id
    }

    pub fn bos_token(&self) -> Option<String> {
        self.special.bos_id.and_then(|id| self.id_to_token(id))
    }

    pub fn eos_token(&self) -> Option<String> {
        self.special.eos_id.and_then(|id| self.id_to_token(id))
    }

    /// Whether a prompt starts with BOS (`tokenizer.ggml.add_bos_token`).
    pub fn add_bos(&self) -> bool {
        self.special.add_bos
    }

    /// Every token that ends a turn, sorted.
    pub fn stop_ids(&self) -> &[u32] {
        &self.special.stop_ids
    }

    /// The text a control token that delimits thinking stands for when an answer is shown:
    /// Gemma 4's thought channel (`<|channel>` … `<channel|>`) becomes `<think>` … `</think>`,
    /// the markers Qwen3 writes as text, so both are shown (and folded) the same way.
    pub fn thinking_marker(&self, id: u32) -> Option<&'static str> {
        if !self.is_control(id) {
            return None;
        }
        match self.inner.id_to_token(id)?.as_str() {
            "<|channel>" => Some("<think>"),
            "<channel|>" => Some("</think>"),
            _ => None,
        }
    }

    /// A special token (skipped when decoding).
    pub fn is_control(&self, id: u32) -> bool {
        self.special
            .control
            .get(id as usize)
            .copied()
            .unwrap_or(false)
    }

    /// The tokenizer as tokenizer.json text, which `from_tokenizer_json` reads back.
    pub fn to_json(&self) -> Result<String> {
        self.inner
            .to_string(false)
            .map_err(|e| anyhow!("cannot serialize the tokenizer: {e}"))
    }

    pub(crate) fn pieces(&self) -> Pieces {
        self.pieces
    }

    pub(crate) fn strips_first_space(&self) -> bool {
        matches!(
            self.pieces,
            Pieces::SentencePiece {
                strip_first_space: true
            }
        )
    }

    /// Appends the bytes a token stands for; false for an id outside the vocabulary.
    /// Only for [`Pieces::ByteLevel`] and [`Pieces::SentencePiece`].
    pub(crate) fn push_token_bytes(&self, id: u32, out: &mut Vec<u8>) -> bool {
        match self.inner.id_to_token(id) {
            Some(token) => {
                self.pieces.append(&token, out);
                true
            }
            None => false,
        }
    }

    /// The tokenizer's own decoder, for [`Pieces::Decoder`].
    pub(crate) fn decode_with_decoder(&self, ids: &[u32]) -> Result<String> {
        self.inner
            .decode(ids, false)
            .map_err(|e| anyhow!("cannot decode tokens: {e}"))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::engine::gguf::MetaValue;

    pub(crate) fn header(entries: Vec<(&str, MetaValue)>) -> GgufHeader {
        GgufHeader {
            path: "test.gguf".into(),
            version: 3,
            file_size: 0,
            metadata: entries
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            tensors: Vec::new(),
        }
    }

    fn strings(items: &[&str]) -> MetaValue {
        MetaValue::Array(
            items
                .iter()
                .map(|s| MetaValue::String(s.to_string()))
                .collect(),
        )
    }

    fn numbers(items: impl Iterator<Item = i32>) -> MetaValue {
        MetaValue::Array(items.map(MetaValue::I32).collect())
    }

    /// A byte-level vocabulary: the 256 bytes, "hello" by merges, two control tokens.
    pub(crate) fn byte_level() -> TextTokenizer {
        let bytes: Vec<String> = (0..=255u8)
            .map(|b| pieces::byte_to_char(b).to_string())
            .collect();
        let mut tokens: Vec<&str> = bytes.iter().map(String::as_str).collect();
        tokens.extend(["he", "ll", "hell", "hello", "<|im_end|>", "<|endoftext|>"]);
        let types = (0..tokens.len()).map(|i| if i >= 260 { 3 } else { 1 });
        TextTokenizer::from_gguf(&header(vec![
            ("tokenizer.ggml.model", MetaValue::String("gpt2".into())),
            ("tokenizer.ggml.tokens", strings(&tokens)),
            ("tokenizer.ggml.token_type", numbers(types)),
            (
                "tokenizer.ggml.merges",
                strings(&["h e", "l l", "he ll", "hell o"]),
            ),
            ("tokenizer.ggml.eos_token_id", MetaValue::U32(260)),
        ]))
        .expect("test vocabulary builds")
    }

    /// A sentencepiece vocabulary with byte fallback, llama flavour (adds and strips a space).
    pub(crate) fn sentencepiece(arch: &str) -> TextTokenizer {
        let bytes: Vec<String> = (0..=255u8).map(|b| format!("<0x{b:02X}>")).collect();
        let mut tokens = vec!["<unk>", "<s>", "</s>"];
        tokens.extend(bytes.iter().map(String::as_str));
        tokens.extend([
            "\u{2581}",
            "a",
            "b",
            "\u{2581}a",
            "ab",
            "\u{2581}ab",
            "<end_of_turn>",
            "<|channel>",
            "<channel|>",
        ]);
        let n = tokens.len();
        let types = (0..n).map(|i| match i {
            0 => 2,
            1 | 2 => 3,
            3..=258 => 6,
            _ if i >= n - 3 => 3,
            _ => 1,
        });
        TextTokenizer::from_gguf(&header(vec![
            ("general.architecture", MetaValue::String(arch.into())),
            ("tokenizer.ggml.model", MetaValue::String("llama".into())),
            ("tokenizer.ggml.tokens", strings(&tokens)),
            (
                "tokenizer.ggml.scores",
                MetaValue::Array((0..n).map(|i| MetaValue::F32(-(i as f32))).collect()),
            ),
            ("tokenizer.ggml.token_type", numbers(types)),
            ("tokenizer.ggml.bos_token_id", MetaValue::U32(1)),
            ("tokenizer.ggml.eos_token_id", MetaValue::U32(2)),
        ]))
        .expect("test vocabulary builds")
    }

    #[test]
    fn control_tokens_in_text_are_matched_whole_and_skipped_when_decoding() {
        let tok = byte_level();
        assert_eq!(tok.encode("hello<|im_end|>").unwrap(), [259, 260]);
        assert!(tok.is_control(260) && !tok.is_control(259));
        assert_eq!(tok.decode(&[259, 260, 261]).unwrap(), "hello");
    }

    #[test]
    fn byte_level_round_trips_any_text() {
        let tok = byte_level();
        for text in ["", "hello hello", "héllo 🚀\n\t\u{0}", "日本語"] {
            assert_eq!(tok.decode(&tok.encode(text).unwrap()).unwrap(), text);
        }
    }

    #[test]
    fn stop_ids_include_eos_and_end_of_turn_tokens() {
        assert_eq!(byte_level().stop_ids(), [260, 261]);
        assert_eq!(sentencepiece("llama").stop_ids(), [2, 265]);
    }

    #[test]
    fn sentencepiece_spells_unknown_characters_as_bytes_and_drops_the_added_space() {
        let tok = sentencepiece("llama");
        let ids = tok.encode("ab é").unwrap();
        // "▁ab", "▁", then é as the bytes C3 A9 (ids 3 + byte).
        assert_eq!(ids, [264, 259, 3 + 0xC3, 3 + 0xA9]);
        assert_eq!(tok.decode(&ids).unwrap(), "ab é");
        assert_eq!(tok.bos_token().as_deref(), Some("<s>"));
        assert_eq!(tok.eos_token().as_deref(), Some("</s>"));
    }

    #[test]
    fn add_bos_defaults_to_the_vocabulary_kind_unless_the_file_says() {
        assert!(!byte_level().add_bos());
        assert!(sentencepiece("llama").add_bos());
    }

    #[test]
    fn a_file_without_vocabulary_asks_for_a_tokenizer_json() {
        let bare = header(vec![(
            "tokenizer.ggml.model",
            MetaValue::String("no_vocab".into()),
        )]);
        let err = TextTokenizer::from_gguf(&bare)
            .err()
            .expect("no vocabulary")
            .to_string();
        assert!(err.contains("--tokenizer"), "{err}");
    }

    #[test]
    fn a_special_id_outside_the_vocabulary_is_an_error() {
        let mut bad = header(vec![
            ("tokenizer.ggml.model", MetaValue::String("gpt2".into())),
            ("tokenizer.ggml.tokens", strings(&["a", "b", "ab"])),
            ("tokenizer.ggml.merges", strings(&["a b"])),
        ]);
        bad.metadata
            .insert("tokenizer.ggml.eos_token_id".into(), MetaValue::U32(7));
        let err = format!(
            "{:#}",
            TextTokenizer::from_gguf(&bad).err().expect("bad id")
        );
        assert!(err.contains("eos_token_id = 7"), "{err}");
    }
}
