//! The loaded model behind one interface: feed tokens, get logits, manage the KV cache.

pub mod arch;
pub mod attention;
pub mod cpu;
pub mod decoder;
pub mod kernels;
pub mod kv_cache;
pub mod layer;
pub mod rope;
pub mod runtime;
pub mod vecmath;
pub mod weights;

// The paths these modules had before they moved into their folders (the rest of the crate and
// the integration tests import them so).
pub use arch::config;
pub use runtime::{kernel_path, scratch};
pub use weights::{embedding, linear};

use crate::engine::gguf::GgufHeader;
use anyhow::{Context, Result};
pub use arch::{Arch, ModelConfig};
pub use decoder::SlotStep;
pub use kv_cache::{CacheType, KvCache};
use std::path::Path;

/// What the engine needs from a model implementation, so implementations can be swapped.
pub trait LanguageModel: Send {
    fn config(&self) -> &ModelConfig;
    /// Positions the KV cache can hold (the session's context size).
    fn context_size(&self) -> usize;
    /// Positions currently in the KV cache.
    fn cached_len(&self) -> usize;
    /// The KV cache's number format.
    fn cache_type(&self) -> CacheType;
    /// Forgets cached positions from `len` on, so a prompt that shares a prefix re-reads only
    /// the rest.
    fn truncate_cache(&mut self, len: usize);
    /// Feeds `tokens` after the cached ones; row-major logits (`rows × vocab`) for every
    /// token when `all_logits`, else the last token's alone.
    fn forward(&mut self, tokens: &[u32], all_logits: bool) -> Result<Vec<f32>>;
    /// An empty KV cache like the model's own (size and format), for a sequence of its own:
    /// a server's slot, fed through [`LanguageModel::forward_batch`].
    fn new_cache(&self) -> Result<KvCache>;
    /// One pass over several sequences with caches of their own (see
    /// [`decoder::Decoder::forward_batch`]): the last token's logits of each, `steps × vocab`.
    fn forward_batch(&mut self, steps: &mut [SlotStep]) -> Result<Vec<f32>>;
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
    fn cache_type(&self) -> CacheType {
        self.cache().kind()
    }
    fn truncate_cache(&mut self, len: usize) {
        self.cache_mut().truncate(len)
    }
    fn forward(&mut self, tokens: &[u32], all_logits: bool) -> Result<Vec<f32>> {
        decoder::Decoder::forward(self, tokens, all_logits)
    }
    fn new_cache(&self) -> Result<KvCache> {
        decoder::Decoder::new_cache(self)
    }
    fn forward_batch(&mut self, steps: &mut [SlotStep]) -> Result<Vec<f32>> {
        decoder::Decoder::forward_batch(self, steps)
    }
}

/// The context size a session gets: what was asked for, capped at what the model was trained for.
pub fn effective_context(requested: usize, config: &ModelConfig) -> usize {
    requested.clamp(1, config.context_length.max(1))
}

/// How a model is loaded: its KV cache's size and number format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheOptions {
    /// Positions asked for; capped at the model's training context.
    pub context: usize,
    pub cache_type: CacheType,
}

impl CacheOptions {
    /// `context` positions in the default format (f16).
    pub fn new(context: usize) -> Self {
        Self {
            context,
            cache_type: CacheType::default(),
        }
    }
}

/// [`load_with`] while `beside` (the tokenizer build) runs on a thread of its own: a cold
/// start takes the longer of the two, not their sum. The thread lives only for the load, so
/// `--threads` still counts the compute threads exactly.
pub fn load_beside<T: Send>(
    header: &GgufHeader,
    cache: CacheOptions,
    repack_cache: Option<&Path>,
    beside: impl FnOnce() -> Result<T> + Send,
) -> (Result<T>, Result<Cached>) {
    std::thread::scope(|scope| {
        let side = scope.spawn(beside);
        let model = load_cached(header, cache, repack_cache);
        let side = side
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the tokenizer build panicked")));
        (side, model)
    })
}

/// Loads the weights of an already validated header with an f16 cache of
/// `requested_context` positions.
pub fn load(header: &GgufHeader, requested_context: usize) -> Result<Box<dyn LanguageModel>> {
    load_with(header, CacheOptions::new(requested_context))
}

/// Loads the weights of an already validated header. A KV cache the machine has no memory for
/// is refused first, with the bytes it would need.
pub fn load_with(header: &GgufHeader, cache: CacheOptions) -> Result<Box<dyn LanguageModel>> {
    load_cached(header, cache, None).map(|loaded| loaded.model)
}

/// A model loaded with the repack cache, and what the cache did.
pub struct Cached {
    pub model: Box<dyn LanguageModel>,
    pub repack: weights::packed_cache::Outcome,
}

/// [`load_with`], its repacked matrices read back from (and kept in) the repack cache in
/// `repack_cache` when one is given.
pub fn load_cached(
    header: &GgufHeader,
    cache: CacheOptions,
    repack_cache: Option<&Path>,
) -> Result<Cached> {
    let what = || format!("{}", header.path.display());
    let config = ModelConfig::from_header(header).with_context(what)?;
    let context = effective_context(cache.context, &config);
    check_cache_fits(&config, context, cache.cache_type).with_context(what)?;
    let weights = weights::WeightFile::open_cached(header, repack_cache)?;
    let model =
        decoder::Decoder::load(config, &weights, context, cache.cache_type).with_context(what)?;
    Ok(Cached {
        model: Box::new(model),
        repack: weights.finish(),
    })
}

/// Bytes the KV cache of `context` positions takes when full.
pub fn cache_bytes(config: &ModelConfig, context: usize, cache_type: CacheType) -> Result<u64> {
    Ok(KvCache::bytes_needed(
        &config.cache_head_dims()?,
        config.n_head_kv,
        context,
        cache_type,
    ))
}

/// What loading the model at `path` takes, about: its file (repacked or mapped, every weight
/// is read) and `slots` KV caches of `context` positions, full. `None` when its header cannot be
/// read (the load then says why).
pub fn memory_needed(
    path: &Path,
    context: usize,
    cache_type: CacheType,
    slots: usize,
) -> Option<u64> {
    footprint(path, context, cache_type, slots)
        .ok()
        .map(|f| f.bytes)
}

/// What a model will take and hold once loaded, read from its header alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footprint {
    /// As [`memory_needed`].
    pub bytes: u64,
    /// Each slot's context: `context` capped at the model's own.
    pub context: usize,
}

/// The [`Footprint`] of the model at `path`; an error when its header cannot be read.
pub fn footprint(
    path: &Path,
    context: usize,
    cache_type: CacheType,
    slots: usize,
) -> Result<Footprint> {
    let header = GgufHeader::read(path)?;
    let config = ModelConfig::from_header(&header)?;
    let context = effective_context(context, &config);
    let cache = cache_bytes(&config, context, cache_type)?;
    Ok(Footprint {
        bytes: header
            .file_size
            .saturating_add(cache.saturating_mul(slots as u64)),
        context,
    })
}

/// Memory left free beyond a model's own estimate when deciding whether it fits beside models
/// already loaded (the tokenizer, a server's buffers, what other programs take meanwhile).
pub const MEMORY_HEADROOM: u64 = 512 << 20;

/// Refuses a context whose full KV cache is more than the memory available now.
fn check_cache_fits(config: &ModelConfig, context: usize, cache_type: CacheType) -> Result<()> {
    let needed = cache_bytes(config, context, cache_type)?;
    if let Some(available) = crate::stats::available_memory_bytes() {
        if needed > available {
            anyhow::bail!(
                "a context of {context} tokens needs {needed} bytes ({}) of {cache_type} KV \
                 cache, more than the {} this machine has available: lower --ctx-size{}",
                crate::stats::human_bytes(needed),
                crate::stats::human_bytes(available),
                if cache_type == CacheType::Q8_0 {
                    ""
                } else {
                    " or use --cache-type q8_0"
                }
            );
        }
    }
    Ok(())
}
