//! The models one `taper serve` answers with (`-m` once or several times), each on an engine
//! host of its own with `--parallel` slots. They are read one after another before the server
//! listens, and only when the machine's available memory holds them all with their caches
//! full, so a server that starts can answer with every model it lists; a request's `model`
//! picks one.

use super::error::ApiError;
use super::request::Prompt;
use super::ModelOptions;
use crate::engine::answer_ids::AnswerIds;
use crate::engine::loader::{self, OpenOptions};
use crate::engine::model::{self, CacheOptions};
use crate::engine::prompt::ModelText;
use crate::engine::{EngineHandle, LocalModel, Submitter};
use crate::protocol::{Constraint, ToolSet};
use crate::stats::human_bytes;
use anyhow::{bail, Result};
use axum::http::StatusCode;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// One model the server answers with, as the request handlers see it.
pub struct Served {
    /// Its id in `/v1/models` and in answers: its file name without `.gguf`.
    pub name: String,
    pub engine: Submitter,
    pub text: Arc<ModelText>,
    /// The ids of answers this model wrote, so a conversation's next turn reuses its cache.
    pub answers: Arc<Mutex<AnswerIds>>,
    /// Each slot's context, in tokens.
    pub context: usize,
}

impl Served {
    /// The prompt's ids: the chat template rendered (answers this server wrote keep their
    /// ids, so the slot's cache serves the whole conversation) or the raw text.
    pub fn prompt_ids(
        &self,
        prompt: &Prompt,
        tools: Option<&ToolSet>,
    ) -> Result<Vec<u32>, ApiError> {
        let ids = match prompt {
            Prompt::Chat(messages) => {
                let answers = self
                    .answers
                    .lock()
                    .map_err(|_| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "poisoned"))?;
                self.text
                    .chat_ids_with_tools(messages, tools, &answers)
                    .map_err(|e| {
                        ApiError::field(
                            "messages",
                            format!(
                                "the model's chat template cannot render these messages: {e:#}"
                            ),
                        )
                    })?
            }
            Prompt::Raw(text) => self
                .text
                .raw_ids(text)
                .map_err(|e| ApiError::field("prompt", format!("{e:#}")))?,
        };
        if ids.len() >= self.context {
            return Err(ApiError::field(
                if matches!(prompt, Prompt::Chat(_)) {
                    "messages"
                } else {
                    "prompt"
                },
                format!(
                    "the prompt is {} tokens, more than the context of {} tokens leaves room \
                     for (an answer needs at least one)",
                    ids.len(),
                    self.context
                ),
            ));
        }
        Ok(ids)
    }

    /// A schema or grammar the engine cannot use is the client's mistake: a 400 naming the
    /// field, before the request is queued.
    pub fn check_constraint(&self, field: &str, constraint: &Constraint) -> Result<(), ApiError> {
        let grammars = self
            .text
            .grammars()
            .map_err(|e| ApiError::field(field, format!("{e:#}")))?;
        grammars
            .start(constraint)
            .map(drop)
            .map_err(|e| ApiError::field(field, format!("`{field}`: {e:#}")))
    }
}

/// The engine hosts behind [`Served`]: dropping them stops the engines.
pub struct Engines {
    _hosts: Vec<EngineHandle>,
}

/// Checks that the machine can hold every model, then reads each in order and starts its host
/// with `parallel` slots; fails, naming the model, when one cannot be read.
pub fn load_all(
    models: &[ModelOptions],
    cache: CacheOptions,
    parallel: usize,
) -> Result<(Vec<Arc<Served>>, Engines)> {
    if models.len() > 1 {
        check_all_fit(models, cache, parallel)?;
    }
    let mut served = Vec::new();
    let mut engines = Vec::new();
    for options in models {
        let (one, engine) = load(options, cache, parallel)?;
        served.push(Arc::new(one));
        engines.push(engine);
    }
    Ok((served, Engines { _hosts: engines }))
}

fn load(
    options: &ModelOptions,
    cache: CacheOptions,
    parallel: usize,
) -> Result<(Served, EngineHandle)> {
    let open = OpenOptions {
        tokenizer_json: options.tokenizer_json.clone(),
        chat_template: options.chat_template.clone(),
        ..OpenOptions::new(cache)
    };
    let loaded = loader::open(&options.path, &open)?;
    for notice in &loaded.notices {
        eprintln!("taper: {notice}");
    }
    let context = loaded.info.context_size;
    let mut local = LocalModel::new(loaded)?;
    if let Some(draft) = &options.draft_model {
        local = local.with_draft_read(draft.clone())?;
    }
    let (text, answers) = (local.text.clone(), local.answers.clone());
    // The grammar compiler (the vocabulary's trie, up to a second for a large vocabulary) is
    // built while the server starts, not in the first constrained request's time.
    let warm = text.clone();
    std::thread::Builder::new()
        .name("taper-grammars".into())
        .spawn(move || drop(warm.grammars()))?;
    let engine = EngineHandle::serve(local, parallel)?;
    let served = Served {
        name: model_name(&options.path),
        engine: engine.submitter(),
        text,
        answers,
        context,
    };
    Ok((served, engine))
}

/// Refuses models whose weights and slots' full KV caches, together, the machine's available
/// memory would not hold. Checked before any is read: a KV cache takes its memory only as it
/// fills, so what is available after a load says nothing of the caches it will grow. (One
/// model alone is checked by its load, as it always was.)
fn check_all_fit(models: &[ModelOptions], cache: CacheOptions, parallel: usize) -> Result<()> {
    let needs: Option<Vec<u64>> = models
        .iter()
        .map(|m| model::memory_needed(&m.path, cache.context, cache.cache_type, parallel))
        .collect();
    let (Some(needs), Some(available)) = (needs, crate::stats::available_memory_bytes()) else {
        return Ok(()); // A header that cannot be read: its load says why.
    };
    let names: Vec<String> = models.iter().map(|m| model_name(&m.path)).collect();
    refuse_unless_fit(&names, &needs, available, parallel)
}

/// The decision of [`check_all_fit`], given what each model needs and what is available.
fn refuse_unless_fit(
    names: &[String],
    needs: &[u64],
    available: u64,
    parallel: usize,
) -> Result<()> {
    let needed = needs.iter().fold(0u64, |sum, n| sum.saturating_add(*n));
    if available < needed.saturating_add(model::MEMORY_HEADROOM) {
        let each: Vec<String> = names
            .iter()
            .zip(needs)
            .map(|(name, need)| format!("{name} {}", human_bytes(*need)))
            .collect();
        bail!(
            "the {} models need about {} together (each its weights and {parallel} slots' full \
             KV cache: {}), and the machine has {} available: serve fewer models, or lower \
             --parallel or --ctx-size",
            names.len(),
            human_bytes(needed),
            each.join(", "),
            human_bytes(available)
        );
    }
    Ok(())
}

/// The model's id: its file name without `.gguf`.
pub fn model_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into())
}

/// The model a request's `model` names. None picks the first; with one model served any name
/// does (as with llama-server: clients send names of their own); with several an unknown name
/// is a 404 listing the ones there are.
pub fn pick(served: &[Arc<Served>], asked: Option<&str>) -> Result<Arc<Served>, ApiError> {
    let Some(first) = served.first() else {
        return Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the server has no model",
        ));
    };
    let Some(asked) = asked else {
        return Ok(first.clone());
    };
    if let Some(found) = served.iter().find(|s| s.name == asked) {
        return Ok(found.clone());
    }
    if served.len() == 1 {
        return Ok(first.clone());
    }
    let names: Vec<&str> = served.iter().map(|s| s.name.as_str()).collect();
    Err(ApiError {
        param: Some("model".into()),
        ..ApiError::new(
            StatusCode::NOT_FOUND,
            format!(
                "`model`: this server has no model {asked:?}; it serves {}",
                names.join(", ")
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_models_fit_only_together_with_room_to_spare_and_the_refusal_names_each() {
        let names = ["smollm2".to_string(), "gemma".to_string()];
        let needs = [1 << 30, 2 << 30];
        let roomy = (3 << 30) + model::MEMORY_HEADROOM;
        assert!(refuse_unless_fit(&names, &needs, roomy, 4).is_ok());
        let err = refuse_unless_fit(&names, &needs, roomy - 1, 4)
            .expect_err("no room")
            .to_string();
        assert!(
            err.starts_with("the 2 models need about 3.2 GB together"),
            "{err}"
        );
        assert!(
            err.contains("4 slots' full KV cache: smollm2 1.1 GB, gemma 2.1 GB"),
            "{err}"
        );
        assert!(err.contains("the machine has 3.8 GB available"), "{err}");
    }

    #[test]
    fn a_server_without_models_answers_an_error_not_a_panic() {
        let err = pick(&[], Some("x")).err().expect("no model to pick");
        assert_eq!(err.status, StatusCode::INTERNAL_SERVER_ERROR);
    }
}
