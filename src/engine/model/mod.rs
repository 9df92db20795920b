//! The loaded model behind one interface: feed tokens, get logits, manage the KV cache.

pub mod attention;
pub mod config;
pub mod decoder;
pub mod embedding;
pub mod kernels;
pub mod kv_cache;
pub mod layer;
pub mod linear;
mod matmul;
pub mod rope;
pub mod vecmath;
pub mod weights;

use crate::engine::gguf::GgufHeader;
use anyhow::{Context, Result};
pub use config::{Arch, ModelConfig};

/// What the engine needs from a model implementation, so implementations can be swapped.
pub trait LanguageModel: Send {
    fn config(&self) -> &ModelConfig;
    /// Positions the KV cache can hold (the session's context size).
    fn context_size(&self) -> usize;
    /// Positions currently in the KV cache.
    fn cached_len(&self) -> usize;
    /// Forgets cached positions from `len` on, so a prompt that shares a prefix re-reads only
    /// the rest.
    fn truncate_cache(&mut self, len: usize);
    /// Feeds `tokens` after the cached ones; row-major logits (`rows × vocab`) for every
    /// token when `all_logits`, else the last token's alone.
    fn forward(&mut self, tokens: &[u32], all_logits: bool) -> Result<Vec<f32>>;
}

impl LanguageModel for decoder::Decoder {
    fn config(&self) -> &ModelConfig {
        decoder::Decoder::config(self)
    }
    fn context_size(&self) -> usize {
        self.cache().capacity()
    }
    fn cached_len(&self) -> usize {
        self.cache().len()
    }
    fn truncate_cache(&mut self, len: usize) {
        self.cache_mut().truncate(len)
    }
    fn forward(&mut self, tokens: &[u32], all_logits: bool) -> Result<Vec<f32>> {
        decoder::Decoder::forward(self, tokens, all_logits)
    }
}

/// The context size a session gets: what was asked for, capped at what the model was trained for.
pub fn effective_context(requested: usize, config: &ModelConfig) -> usize {
    requested.clamp(1, config.context_length.max(1))
}

/// [`load`] while `beside` (the tokenizer build) runs on a thread of its own: a cold start
/// takes the longer of the two, not their sum. The thread lives only for the load, so
/// `--threads` still counts the compute threads exactly.
pub fn load_beside<T: Send>(
    header: &GgufHeader,
    requested_context: usize,
    beside: impl FnOnce() -> Result<T> + Send,
) -> (Result<T>, Result<Box<dyn LanguageModel>>) {
    std::thread::scope(|scope| {
        let side = scope.spawn(beside);
        let model = load(header, requested_context);
        let side = side
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the tokenizer build panicked")));
        (side, model)
    })
}

/// Loads the weights of an already validated header.
pub fn load(header: &GgufHeader, requested_context: usize) -> Result<Box<dyn LanguageModel>> {
    let what = || format!("{}", header.path.display());
    let config = ModelConfig::from_header(header).with_context(what)?;
    let context = effective_context(requested_context, &config);
    let weights = weights::WeightFile::open(header)?;
    let model = decoder::Decoder::load(config, &weights, context).with_context(what)?;
    Ok(Box::new(model))
}
