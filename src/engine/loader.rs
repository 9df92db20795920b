//! The one way a front end opens a model: read and check the header, load the weights while
//! the tokenizer is built beside them, and say what was loaded ([`ModelInfo`]) with anything
//! the user should know. The chat's engine, `taper serve`, `taper bench` and
//! `taper perplexity` all open models here.

use super::gguf::GgufHeader;
use super::model::weights::packed_cache;
use super::model::{self, CacheOptions, LanguageModel, ModelConfig};
use super::prompt::ModelText;
use crate::protocol::{LoadRequest, ModelInfo};
use crate::stats::secs;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// How to open a model.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    pub cache: CacheOptions,
    /// A tokenizer.json to use instead of the vocabulary in the GGUF.
    pub tokenizer_json: Option<PathBuf>,
    /// A chat template to use instead of the file's.
    pub chat_template: Option<String>,
    /// Build the tokenizer and chat template; false for a file without a vocabulary (a
    /// bench shape), which then has ids only.
    pub text: bool,
    /// Where repacked matrices are kept between loads (`None`: repack at every load). By
    /// default what the front end configured for the process.
    pub repack_cache: Option<PathBuf>,
}

impl OpenOptions {
    pub fn new(cache: CacheOptions) -> Self {
        Self {
            cache,
            tokenizer_json: None,
            chat_template: None,
            text: true,
            repack_cache: packed_cache::configured_dir(),
        }
    }
}

impl From<&LoadRequest> for OpenOptions {
    fn from(r: &LoadRequest) -> Self {
        Self {
            cache: CacheOptions {
                context: r.context_size,
                cache_type: r.cache_type,
            },
            tokenizer_json: r.tokenizer_json.clone(),
            chat_template: r.chat_template.clone(),
            text: true,
            repack_cache: packed_cache::configured_dir(),
        }
    }
}

/// An opened model: its weights and KV cache, its tokenizer and template (unless asked not
/// to build them), what a client learns of it, and the notices for the user.
pub struct Loaded {
    pub model: Box<dyn LanguageModel>,
    pub text: Option<ModelText>,
    pub info: ModelInfo,
    pub notices: Vec<String>,
    /// What the repack cache did for this load.
    pub repack: packed_cache::Outcome,
}

impl Loaded {
    /// The tokenizer and template, which every front end but the bench's shapes needs.
    pub fn into_text(self) -> Result<(Box<dyn LanguageModel>, ModelText)> {
        let text = self
            .text
            .with_context(|| format!("{}: no tokenizer was built", self.info.path.display()))?;
        Ok((self.model, text))
    }
}

/// Opens the GGUF file at `path`. The architecture is checked before the (slow) tokenizer and
/// weights; the tokenizer is built on a thread of its own while the weights load, so a cold
/// start takes the longer of the two. Errors name the file.
pub fn open(path: &Path, options: &OpenOptions) -> Result<Loaded> {
    let started = Instant::now();
    let header = GgufHeader::read(path)?;
    ModelConfig::from_header(&header).with_context(|| header.path.display().to_string())?;
    let repack_cache = options.repack_cache.as_deref();
    let (text, model) = model::load_beside(&header, options.cache, repack_cache, || {
        options
            .text
            .then(|| {
                ModelText::load(
                    &header,
                    options.tokenizer_json.as_deref(),
                    options.chat_template.as_deref(),
                )
            })
            .transpose()
    });
    let (text, model::Cached { model, repack }) = (text?, model?);
    let notices = text
        .as_ref()
        .and_then(|t| t.template.notice())
        .into_iter()
        .chain(repack.notice.clone())
        .collect();
    let mut info = model_info(&header, model.as_ref())?;
    info.load_s = secs(started.elapsed());
    Ok(Loaded {
        model,
        text,
        info,
        notices,
        repack,
    })
}

/// What a client learns of the model; `load_s` is filled in by the caller.
fn model_info(header: &GgufHeader, model: &dyn LanguageModel) -> Result<ModelInfo> {
    let (config, context_size) = (model.config(), model.context_size());
    Ok(ModelInfo {
        path: header.path.clone(),
        name: header
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        architecture: config.arch_name.clone(),
        quantization: header.quantization(),
        file_size: header.file_size,
        parameters: header.parameter_count(),
        context_size,
        cache_type: model.cache_type(),
        cache_bytes: model::cache_bytes(config, context_size, model.cache_type())?,
        context_length: config.context_length,
        load_s: 0.0,
        threads: super::compute_threads(),
        kernels: model::kernel_path::name(),
        remote: None,
        tokens: Default::default(),
        kept_loaded: false,
        resident: Vec::new(),
        draft_model: None,
    })
}
