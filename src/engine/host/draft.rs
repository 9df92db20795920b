//! A local model's draft model: named when the model is loaded, read with the first request
//! that drafts with it (most requests never do), then kept as long as the model is.

use crate::engine::model::{CacheOptions, LanguageModel};
use crate::engine::prompt::ModelText;
use crate::engine::speculative::{draft_model, SharedDraft};
use anyhow::{bail, Result};
use std::path::PathBuf;

#[derive(Default)]
pub struct LazyDraft {
    path: Option<PathBuf>,
    state: State,
}

#[derive(Default)]
enum State {
    #[default]
    NotRead,
    Ready(SharedDraft),
    /// Why it could not be read; every request that wants it hears this.
    Failed(String),
}

impl LazyDraft {
    /// The draft model at `path`, if any, not read yet.
    pub fn new(path: Option<PathBuf>) -> Self {
        Self {
            path,
            state: State::NotRead,
        }
    }

    /// The draft model, read now if this is the first request that wants it, with a cache
    /// the size and number format of `target`'s; None when the model has no draft model.
    /// An error says why it cannot be read (a missing file, another vocabulary).
    pub fn get(
        &mut self,
        target: &dyn LanguageModel,
        text: &ModelText,
    ) -> Result<Option<SharedDraft>> {
        let Some(path) = &self.path else {
            return Ok(None);
        };
        if let State::NotRead = self.state {
            let cache = CacheOptions {
                context: target.context_size(),
                cache_type: target.cache_type(),
            };
            self.state = match draft_model::open(path, text, cache) {
                Ok(draft) => State::Ready(draft),
                Err(e) => State::Failed(format!("{e:#}")),
            };
        }
        match &self.state {
            State::Ready(draft) => Ok(Some(draft.clone())),
            State::Failed(why) => bail!("{why}"),
            State::NotRead => Ok(None),
        }
    }
}
