//! Rebuilding a Hugging Face tokenizer from a GGUF file's `tokenizer.ggml.*` metadata.
//!
//! The reference is transformers' own GGUF loader (5.x, `integrations/gguf/
//! gguf_tokenizer_mapping.py`): ids must equal its `encode(text, add_special_tokens=False)`, so
//! every step below mirrors a step there, including its quirks (noted where they matter).

use super::merges::generate_merges;
use super::pieces::{byte_to_char, char_to_byte, Pieces};
use super::scored::{MergeOrder, ScoredBpe};
use super::vocabulary::{Pipeline, Vocabulary};
use crate::engine::gguf::{GgufHeader, MetaValue};
use anyhow::{anyhow, bail, Result};
use std::borrow::Cow;
use std::sync::Arc;
use tokenizers::decoders::byte_fallback::ByteFallback;
use tokenizers::decoders::fuse::Fuse;
use tokenizers::decoders::sequence::Sequence as DecoderSequence;
use tokenizers::decoders::strip::Strip;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::normalizers::{Prepend, Replace, Sequence as NormalizerSequence};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::metaspace::{Metaspace, PrependScheme};
use tokenizers::pre_tokenizers::sequence::Sequence as PreSequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, DecoderWrapper, SplitDelimiterBehavior};

/// llama.cpp's token types (`llama_token_type`) that change how a token is added.
const CONTROL: u64 = 3;
const USER_DEFINED: u64 = 4;
/// SentencePiece's word-boundary mark.
const SPACE_MARK: char = '\u{2581}';

/// The vocabulary part of the metadata, borrowed from the header.
pub(super) struct GgufVocab<'h> {
    pub tokens: Vec<&'h str>,
    /// Empty when the file has no `tokenizer.ggml.token_type`.
    pub types: Vec<u64>,
    scores: Option<Vec<f64>>,
    merges: Option<Vec<&'h str>>,
}

impl<'h> GgufVocab<'h> {
    pub fn read(header: &'h GgufHeader) -> Result<Self> {
        const TOKENS: &str = "tokenizer.ggml.tokens";
        let items = header
            .get_array(TOKENS)
            .ok_or_else(|| anyhow!("the file has no {TOKENS}"))?;
        let tokens = each(items, TOKENS, "a string", MetaValue::as_str)?;
        if tokens.is_empty() || u32::try_from(tokens.len()).is_err() {
            bail!("{TOKENS} has {} entries", tokens.len());
        }
        // Per-token arrays must line up with the tokens.
        let per_token = |key: &str| -> Result<Option<&'h [MetaValue]>> {
            match header.get_array(key) {
                Some(a) if a.len() != tokens.len() => {
                    let (n, m) = (a.len(), tokens.len());
                    bail!("{key} has {n} entries for {m} tokens (corrupt file?)")
                }
                other => Ok(other),
            }
        };
        let types = per_token("tokenizer.ggml.token_type")?
            .map(|a| a.iter().map(|v| v.as_u64().unwrap_or(0)).collect())
            .unwrap_or_default();
        let scores = per_token("tokenizer.ggml.scores")?
            .map(|a| each(a, "tokenizer.ggml.scores", "a number", MetaValue::as_f64))
            .transpose()?;
        let merges = header
            .get_array("tokenizer.ggml.merges")
            .map(|a| each(a, "tokenizer.ggml.merges", "a string", MetaValue::as_str))
            .transpose()?;
        Ok(Self {
            tokens,
            types,
            scores,
            merges,
        })
    }

    /// The file's merges, or, for a vocabulary without them, the ones its scores imply.
    /// `tokens` as `map` spells them.
    fn merges(&self, tokens: &[Cow<str>], map: &Vocab) -> Result<Vec<(String, String)>> {
        if let Some(merges) = &self.merges {
            return merges
                .iter()
                .map(|m| match m.split_once(' ') {
                    Some((a, b)) => Ok((a.to_string(), b.to_string())),
                    None => bail!("tokenizer.ggml.merges entry {m:?} is not two tokens"),
                })
                .collect();
        }
        match &self.scores {
            Some(scores) => Ok(generate_merges(tokens, map, |id| scores[id])),
            None => bail!("the vocabulary has neither tokenizer.ggml.merges nor scores"),
        }
    }

    fn of_type(&self, wanted: u64) -> impl Iterator<Item = &'h str> + '_ {
        self.tokens
            .iter()
            .zip(&self.types)
            .filter(move |(_, &t)| t == wanted)
            .map(|(s, _)| *s)
    }
}

/// Every element of a metadata array converted, naming the first one that does not convert.
fn each<'h, T>(
    items: &'h [MetaValue],
    key: &str,
    what: &str,
    convert: impl Fn(&'h MetaValue) -> Option<T>,
) -> Result<Vec<T>> {
    let one = |(i, v)| convert(v).ok_or_else(|| anyhow!("{key}[{i}] is not {what}"));
    items.iter().enumerate().map(one).collect()
}

/// A token → id map; for duplicate tokens the last id wins, as in transformers' dict.
fn vocab_map(tokens: &[Cow<str>]) -> Vocab {
    let mut map = Vocab::with_capacity(tokens.len());
    for (id, token) in (0u32..).zip(tokens) {
        map.insert(token.to_string(), id);
    }
    map
}

/// Which of transformers' sentencepiece builders a file gets.
#[derive(Clone, Copy, PartialEq)]
enum Spm {
    /// `LlamaTokenizer`: Metaspace pre-tokenizer, merges ordered by score.
    Llama,
    /// Phi-3: the prefix space comes from a normalizer instead.
    Phi3,
    /// Gemma 1-3: spaces-only tokens respelled with `▁`, merges ordered by position in the file.
    Gemma,
    /// `tokenizer.ggml.model = "gemma4"`: `GemmaTokenizer` as is, merges ordered by score.
    Gemma4,
}

/// The tokenizer described by the metadata, and how its ids become bytes.
pub(super) fn rebuild(header: &GgufHeader, vocab: &GgufVocab) -> Result<(Pipeline, Pieces)> {
    let model = header.get_str("tokenizer.ggml.model").unwrap_or("");
    let arch = header.architecture().unwrap_or("");
    let (mut tokenizer, pieces) = match model {
        "gpt2" => (byte_level(header, vocab)?, Pieces::ByteLevel),
        "llama" => match arch {
            "gemma" | "gemma2" | "gemma3" => sentencepiece(vocab, Spm::Gemma)?,
            "phi3" => sentencepiece(vocab, Spm::Phi3)?,
            _ => sentencepiece(vocab, Spm::Llama)?,
        },
        "gemma4" => sentencepiece(vocab, Spm::Gemma4)?,
        other => bail!("tokenizer.ggml.model {other:?} is not supported (only \"gpt2\" and \"llama\" vocabularies are); pass a tokenizer.json with --tokenizer"),
    };
    add_special_tokens(header, vocab, &mut tokenizer, model == "gpt2");
    Ok((tokenizer, pieces))
}

/// Byte-level BPE (GPT-2 style): every token is spelled in the 256-character byte alphabet.
fn byte_level(header: &GgufHeader, vocab: &GgufVocab) -> Result<Pipeline> {
    // Some converters store a token's raw UTF-8; transformers respells those byte by byte.
    let tokens: Vec<Cow<str>> = vocab
        .tokens
        .iter()
        .map(|&t| {
            if t.chars().all(|c| char_to_byte(c).is_some()) {
                Cow::Borrowed(t)
            } else {
                Cow::Owned(t.bytes().map(byte_to_char).collect())
            }
        })
        .collect();
    let map = vocab_map(&tokens);
    let merges = vocab.merges(&tokens, &map)?;
    let bpe = BPE::builder()
        .vocab_and_merges(map, merges)
        .continuing_subword_prefix(String::new())
        .end_of_word_suffix(String::new())
        .build()
        .map_err(|e| anyhow!("the vocabulary and merges do not fit together: {e}"))?;
    let mut tokenizer = Pipeline::new(bpe.into());
    // Without a known split, GPT-2's own regex (inside ByteLevel). SmolLM's own tokenizer (and
    // llama.cpp for pre = "smollm") first cuts every digit off on its own: white space before a
    // digit then stays one token (`\n\n  0` is `ĊĊĠĠ` `0`, not GPT-2's `ĊĊĠ` `Ġ` `0`).
    let pre = header.get_str("tokenizer.ggml.pre").unwrap_or("default");
    if pre == "smollm" {
        let digits = Digits::new(true);
        let bytes = ByteLevel::new(false, true, true);
        tokenizer.with_pre_tokenizer(Some(PreSequence::new(vec![digits.into(), bytes.into()])));
        tokenizer.with_decoder(Some(ByteLevel::default()));
        return Ok(tokenizer);
    }
    match split_regex(pre) {
        Some(pattern) => {
            let split = Split::new(
                SplitPattern::Regex(pattern.into()),
                SplitDelimiterBehavior::Isolated,
                false,
            )
            .map_err(|e| anyhow!("pre-tokenizer regex for {pre:?}: {e}"))?;
            let bytes = ByteLevel::new(false, true, false);
            tokenizer.with_pre_tokenizer(Some(PreSequence::new(vec![split.into(), bytes.into()])));
        }
        None => {
            tokenizer.with_pre_tokenizer(Some(ByteLevel::new(false, true, true)));
        }
    }
    tokenizer.with_decoder(Some(ByteLevel::default()));
    Ok(tokenizer)
}

/// The split regexes transformers knows by `tokenizer.ggml.pre` name (`GGUF_PRE_TOKENIZER_SPLITS`).
fn split_regex(pre: &str) -> Option<&'static str> {
    const LLAMA3: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
    const QWEN2: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
    const QWEN35: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
    const TEKKEN: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";
    const GPT4O: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";
    Some(match pre {
        "llama3" | "llama-v3" | "llama-bpe" | "falcon3" | "falcon-h1" | "pixtral" | "midm-2.0"
        | "lfm2" | "jina-v5-nano" | "dbrx" | "smaug-bpe" => LLAMA3,
        "tekken" => TEKKEN,
        "qwen2" | "deepseek-r1-qwen" | "kormo" | "f2llmv2" | "megrez" => QWEN2,
        "qwen35" => QWEN35,
        "gpt-4o" | "llama4" | "kanana2" | "talkie" | "minimax-m2" => GPT4O,
        _ => return None,
    })
}

/// SentencePiece-style BPE with `<0xNN>` byte fallback. GGUF files usually carry no merges
/// for these, so they are recovered from the vocabulary.
fn sentencepiece(vocab: &GgufVocab, flavor: Spm) -> Result<(Pipeline, Pieces)> {
    // Gemma files store tokens of two or more spaces with real spaces; the model looks them up
    // with `▁`, and so do the merges built from them.
    let tokens: Vec<Cow<str>> = vocab
        .tokens
        .iter()
        .map(|&t| {
            if flavor == Spm::Gemma && t.contains(' ') && t.chars().all(is_python_space) {
                Cow::Owned(SPACE_MARK.to_string().repeat(t.chars().count()))
            } else {
                Cow::Borrowed(t)
            }
        })
        .collect();
    let gemma_class = matches!(flavor, Spm::Gemma | Spm::Gemma4);
    let unk_token = gemma_class.then_some("<unk>");
    let model: Vocabulary = if vocab.merges.is_some() {
        let map = vocab_map(&tokens);
        let merges = vocab.merges(&tokens, &map)?;
        let mut builder = BPE::builder().fuse_unk(true).byte_fallback(true);
        if let Some(unk) = unk_token.filter(|t| map.contains_key(*t)) {
            builder = builder.unk_token(unk.into());
        }
        let bpe = builder
            .vocab_and_merges(map, merges)
            .build()
            .map_err(|e| anyhow!("cannot build the sentencepiece model: {e}"))?;
        bpe.into()
    } else {
        // Gemma's scores do not follow its merge order, the order of the tokens in the file does.
        let order = match (&vocab.scores, flavor) {
            (_, Spm::Gemma) => MergeOrder::Position,
            (Some(scores), _) => MergeOrder::Scores(scores.clone()),
            (None, _) => bail!("the vocabulary has neither tokenizer.ggml.merges nor scores"),
        };
        Vocabulary::Scored(Arc::new(ScoredBpe::new(&tokens, order, unk_token)))
    };
    let mut tokenizer = Pipeline::new(model);
    let mark = SPACE_MARK.to_string();
    let mut decoders: Vec<DecoderWrapper> = vec![
        replace(&mark, " ")?.into(),
        ByteFallback::new().into(),
        Fuse::new().into(),
    ];
    match flavor {
        Spm::Gemma | Spm::Gemma4 => {
            tokenizer.with_normalizer(Some(replace(" ", &mark)?));
            let split = Split::new(" ", SplitDelimiterBehavior::MergedWithPrevious, false)
                .map_err(|e| anyhow!("pre-tokenizer: {e}"))?;
            tokenizer.with_pre_tokenizer(Some(split));
        }
        Spm::Llama => {
            tokenizer.with_pre_tokenizer(Some(Metaspace::new(
                SPACE_MARK,
                PrependScheme::First,
                false,
            )));
        }
        Spm::Phi3 => {
            let prepend = Prepend::new(mark.clone()).into();
            let spaces = replace(" ", &mark)?.into();
            tokenizer.with_normalizer(Some(NormalizerSequence::new(vec![prepend, spaces])));
        }
    }
    // Llama and Phi-3 add a space in front of the text, so decoding takes one away again.
    let strip_first_space = matches!(flavor, Spm::Llama | Spm::Phi3);
    if strip_first_space {
        decoders.push(Strip::new(' ', 1, 0).into());
    }
    tokenizer.with_decoder(Some(DecoderSequence::new(decoders)));
    Ok((tokenizer, Pieces::SentencePiece { strip_first_space }))
}

fn replace(pattern: &str, content: &str) -> Result<Replace> {
    Replace::new(pattern, content).map_err(|e| anyhow!("replacing {pattern:?}: {e}"))
}

/// Control tokens as special tokens and user-defined ones as plain added tokens, so both are
/// matched whole in text; then the file's BOS/EOS/UNK/PAD as special, as `AutoTokenizer` adds them.
fn add_special_tokens(
    header: &GgufHeader,
    vocab: &GgufVocab,
    tokenizer: &mut Pipeline,
    byte_level: bool,
) {
    // In a byte-level vocabulary a "control" token outside the byte alphabet is a converter
    // mislabel; transformers skips it rather than grow the vocabulary.
    let control: Vec<AddedToken> = vocab
        .of_type(CONTROL)
        .filter(|t| !byte_level || t.chars().all(|c| char_to_byte(c).is_some()))
        .map(|t| AddedToken::from(t, true).normalized(false))
        .collect();
    tokenizer.add_special_tokens(&control);
    let user: Vec<AddedToken> = vocab
        .of_type(USER_DEFINED)
        .filter(|t| tokenizer.token_to_id(t).is_some())
        .map(|t| AddedToken::from(t, false).normalized(false))
        .collect();
    tokenizer.add_tokens(&user);
    // transformers would also give a named token missing from the vocabulary a new id past the
    // model's embeddings; those are left out here.
    let added = tokenizer.get_added_vocabulary().get_vocab();
    let named: Vec<AddedToken> = ["bos", "eos", "unknown", "padding"]
        .iter()
        .filter_map(|name| header.get_u64(&format!("tokenizer.ggml.{name}_token_id")))
        .filter_map(|id| vocab.tokens.get(usize::try_from(id).ok()?).copied())
        .filter(|t| !added.contains_key(*t) && tokenizer.token_to_id(t).is_some())
        .map(|t| AddedToken::from(t, true).normalized(false))
        .collect();
    tokenizer.add_special_tokens(&named);
}

/// Python's `str.isspace`, which `str.strip()` uses: Unicode whitespace plus U+001C..U+001F.
fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

#[cfg(test)]
mod tests {
    use super::super::tests::header;
    use super::super::TextTokenizer;
    use super::*;

    fn strings(items: &[&str]) -> MetaValue {
        let items = items.iter().map(|s| MetaValue::String(s.to_string()));
        MetaValue::Array(items.collect())
    }

    #[test]
    fn gemma_space_tokens_are_looked_up_with_the_word_mark() {
        // Gemma files spell a token of spaces with spaces; the text reaches BPE as `▁▁`.
        let tokens = ["<unk>", "\u{2581}", "a", "  "];
        let tok = TextTokenizer::from_gguf(&header(vec![
            ("general.architecture", MetaValue::String("gemma3".into())),
            ("tokenizer.ggml.model", MetaValue::String("llama".into())),
            ("tokenizer.ggml.tokens", strings(&tokens)),
        ]))
        .unwrap();
        assert_eq!(tok.encode("a  a").unwrap(), [2, 3, 2]);
        assert_eq!(tok.decode(&[2, 3, 2]).unwrap(), "a  a");
    }

    #[test]
    fn a_per_token_array_of_the_wrong_length_is_an_error() {
        let bad = header(vec![
            ("tokenizer.ggml.model", MetaValue::String("gpt2".into())),
            ("tokenizer.ggml.tokens", strings(&["a", "b"])),
            (
                "tokenizer.ggml.token_type",
                MetaValue::Array(vec![MetaValue::I32(1)]),
            ),
        ]);
        let err = format!("{:#}", GgufVocab::read(&bad).err().unwrap());
        assert!(
            err.contains("token_type has 1 entries for 2 tokens"),
            "{err}"
        );
    }

    #[test]
    fn an_unknown_pre_tokenizer_falls_back_to_gpt2s_split() {
        assert!(split_regex("smollm").is_none() && split_regex("gpt-2").is_none());
        assert!(split_regex("llama-bpe").is_some_and(|r| r.contains(r"\p{N}{1,3}")));
        assert_eq!(split_regex("qwen2"), split_regex("deepseek-r1-qwen"));
    }
}
