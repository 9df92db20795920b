//! The models one `taper serve` answers with (`-m` once or several times), each on an engine
//! host of its own with `--parallel` slots. They are read one after another before the server
//! listens, each only when the machine's available memory holds it beside the ones before, so
//! a server that starts can answer with every model it lists; a request's `model` picks one.

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
pub struct Engines(#[allow(dead_code)] Vec<EngineHandle>);

/// Reads every model in order and starts its host with `parallel` slots; fails, naming the
/// model, when one cannot be read or would not fit beside those read before it.
pub fn load_all(
    models: &[ModelOptions],
    cache: CacheOptions,
    parallel: usize,
) -> Result<(Vec<Arc<Served>>, Engines)> {
    let mut served = Vec::new();
    let mut engines = Vec::new();
    for options in models {
        if !served.is_empty() {
            check_fits_beside(&options.path, cache, parallel, &served)?;
        }
        let (one, engine) = load(options, cache, parallel)?;
        served.push(Arc::new(one));
        engines.push(engine);
    }
    Ok((served, Engines(engines)))
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

/// Refuses a model whose weights and slots' caches the machine's available memory would not
/// hold beside the models already read (each of those checked its own cache as it loaded).
fn check_fits_beside(
    path: &Path,
    cache: CacheOptions,
    parallel: usize,
    loaded: &[Arc<Served>],
) -> Result<()> {
    let Some(needed) = model::memory_needed(path, cache.context, cache.cache_type, parallel) else {
        return Ok(()); // Unreadable: the load says why.
    };
    let Some(available) = crate::stats::available_memory_bytes() else {
        return Ok(());
    };
    let beside: Vec<&str> = loaded.iter().map(|s| s.name.as_str()).collect();
    refuse_unless_fits(&model_name(path), needed, available, parallel, &beside)
}

/// The decision of [`check_fits_beside`], given what the model needs and what is available.
fn refuse_unless_fits(
    name: &str,
    needed: u64,
    available: u64,
    parallel: usize,
    beside: &[&str],
) -> Result<()> {
    if available < needed.saturating_add(model::MEMORY_HEADROOM) {
        bail!(
            "{name} needs about {} (its weights and {parallel} slots' KV cache), and beside {} \
             the machine has {} available: serve fewer models, or lower --parallel or --ctx-size",
            human_bytes(needed),
            beside.join(", "),
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
    fn a_model_fits_only_with_room_to_spare_and_the_refusal_names_the_others() {
        let needed = 3 << 30;
        let roomy = needed + model::MEMORY_HEADROOM;
        assert!(refuse_unless_fits("b", needed, roomy, 4, &["a"]).is_ok());
        let err = refuse_unless_fits("gemma", needed, roomy - 1, 4, &["smollm2", "qwen3"])
            .expect_err("no room")
            .to_string();
        assert!(err.starts_with("gemma needs about 3.2 GB"), "{err}");
        assert!(err.contains("4 slots' KV cache"), "{err}");
        assert!(
            err.contains("beside smollm2, qwen3 the machine has 3.8 GB"),
            "{err}"
        );
    }

    #[test]
    fn a_server_without_models_answers_an_error_not_a_panic() {
        let err = pick(&[], Some("x")).err().expect("no model to pick");
        assert_eq!(err.status, StatusCode::INTERNAL_SERVER_ERROR);
    }
}
