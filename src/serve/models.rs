//! One model `taper serve` answers with, loaded: an engine host of its own with `--parallel`
//! slots, and what a request handler needs of it (its template, tokenizer and context). Which
//! models are loaded when is [`super::roster`]'s business.

use super::error::ApiError;
use super::log::{self, LogFormat};
use super::request::Prompt;
use super::ModelOptions;
use crate::engine::answer_ids::AnswerIds;
use crate::engine::loader::{self, OpenOptions};
use crate::engine::model::CacheOptions;
use crate::engine::prompt::ModelText;
use crate::engine::{EngineHandle, LocalModel, Submitter};
use crate::protocol::{Constraint, ToolSet};
use anyhow::Result;
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

/// Reads the model and starts its host with `parallel` slots; with `warm_grammars`, builds its
/// grammar compiler meanwhile on a thread of its own.
pub fn load(
    options: &ModelOptions,
    cache: CacheOptions,
    parallel: usize,
    log_format: LogFormat,
    warm_grammars: bool,
) -> Result<(Served, EngineHandle)> {
    let open = OpenOptions {
        tokenizer_json: options.tokenizer_json.clone(),
        chat_template: options.chat_template.clone(),
        ..OpenOptions::new(cache)
    };
    let loaded = loader::open(&options.path, &open)?;
    for notice in &loaded.notices {
        log::notice(log_format, &model_name(&options.path), notice);
    }
    let context = loaded.info.context_size;
    let mut local = LocalModel::new(loaded)?;
    if let Some(draft) = &options.draft_model {
        local = local.with_draft_read(draft.clone())?;
    }
    let (text, answers) = (local.text.clone(), local.answers.clone());
    // The grammar compiler (the vocabulary's trie, up to a second for a large vocabulary) is
    // built while the server starts, not in the first constrained request's time. A model
    // loaded on demand skips this: a request is waiting, and on a small machine the thread
    // would take a core from its load and its prefill.
    if warm_grammars {
        let warm = text.clone();
        std::thread::Builder::new()
            .name("taper-grammars".into())
            .spawn(move || drop(warm.grammars()))?;
    }
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

/// The model's id: its file name without `.gguf`.
pub fn model_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into())
}
