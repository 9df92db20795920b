//! The tokenizers crate's pipeline around either of taper's two kinds of vocabulary model:
//! one of the crate's own (from a tokenizer.json, or BPE with listed merges) or a
//! [`ScoredBpe`] whose merges are ranked on the fly.

use super::scored::ScoredBpe;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokenizers::models::bpe::BpeTrainer;
use tokenizers::models::TrainerWrapper;
use tokenizers::{
    DecoderWrapper, Model, ModelWrapper, NormalizerWrapper, PostProcessorWrapper,
    PreTokenizerWrapper, Token, TokenizerImpl,
};

/// Normalizer, pre-tokenizer, added tokens and decoder from the tokenizers crate, around our model.
pub(crate) type Pipeline = TokenizerImpl<
    Vocabulary,
    NormalizerWrapper,
    PreTokenizerWrapper,
    PostProcessorWrapper,
    DecoderWrapper,
>;

#[derive(Clone)]
pub(crate) enum Vocabulary {
    // Both shared: a tokenizer is cloned for every session, its vocabulary need not be.
    Crate(Arc<ModelWrapper>),
    Scored(Arc<ScoredBpe>),
}

impl<M: Into<ModelWrapper>> From<M> for Vocabulary {
    fn from(model: M) -> Self {
        Vocabulary::Crate(Arc::new(model.into()))
    }
}

/// A tokenizer.json names one of the crate's models.
impl<'de> Deserialize<'de> for Vocabulary {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        ModelWrapper::deserialize(deserializer).map(|m| Vocabulary::Crate(Arc::new(m)))
    }
}

/// Written as the crate's model, so any tokenizers user can read it back (a scored
/// vocabulary is written as BPE with its merges listed).
impl Serialize for Vocabulary {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Vocabulary::Crate(model) => model.serialize(serializer),
            Vocabulary::Scored(model) => {
                let listed = model.listed().map_err(serde::ser::Error::custom)?;
                ModelWrapper::BPE(listed).serialize(serializer)
            }
        }
    }
}

impl Model for Vocabulary {
    type Trainer = TrainerWrapper;

    fn tokenize(&self, sequence: &str) -> tokenizers::Result<Vec<Token>> {
        match self {
            Vocabulary::Crate(model) => model.tokenize(sequence),
            Vocabulary::Scored(model) => Ok(model
                .encode_word(sequence)
                .into_iter()
                .map(|(id, offsets)| Token::new(id, model.text(id).to_string(), offsets))
                .collect()),
        }
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        match self {
            Vocabulary::Crate(model) => model.token_to_id(token),
            Vocabulary::Scored(model) => model.token_to_id(token),
        }
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        match self {
            Vocabulary::Crate(model) => model.id_to_token(id),
            Vocabulary::Scored(model) => model.id_to_token(id).map(str::to_string),
        }
    }

    fn get_vocab(&self) -> HashMap<String, u32> {
        match self {
            Vocabulary::Crate(model) => model.get_vocab(),
            Vocabulary::Scored(model) => model
                .entries()
                .map(|(text, id)| (text.to_string(), id))
                .collect(),
        }
    }

    fn get_vocab_size(&self) -> usize {
        match self {
            Vocabulary::Crate(model) => model.get_vocab_size(),
            Vocabulary::Scored(model) => model.distinct_tokens(),
        }
    }

    fn save(&self, folder: &Path, prefix: Option<&str>) -> tokenizers::Result<Vec<PathBuf>> {
        match self {
            Vocabulary::Crate(model) => model.save(folder, prefix),
            Vocabulary::Scored(_) => {
                Err("a vocabulary ranked by its scores lives in its GGUF file, not in files".into())
            }
        }
    }

    /// Taper never trains; the trait asks for a trainer, and BPE's is the nearest.
    fn get_trainer(&self) -> TrainerWrapper {
        match self {
            Vocabulary::Crate(model) => model.get_trainer(),
            Vocabulary::Scored(_) => TrainerWrapper::BpeTrainer(BpeTrainer::default()),
        }
    }
}
