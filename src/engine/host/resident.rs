//! Models kept loaded after another is picked, so that switching back costs no load: each
//! with its slots' caches, so the next turn of a conversation it answered before reads only
//! what is new. The least recently used leaves first; all of them make room when the machine's
//! available memory would not hold a model about to be read.

use super::run::LocalModel;
use super::scheduler::SavedSlot;
use crate::engine::model;
use crate::protocol::{LoadRequest, ModelInfo};
use std::path::PathBuf;

/// A model not in use, as it was left.
pub struct Resident {
    pub request: LoadRequest,
    pub local: LocalModel,
    pub slots: Vec<SavedSlot>,
    pub info: ModelInfo,
    pub notices: Vec<String>,
}

/// The models kept loaded besides the one in use, most recently used first.
#[derive(Default)]
pub struct Residents {
    kept: Vec<Resident>,
}

impl Residents {
    /// Keeps the model left, if any, as the most recently used.
    pub fn keep_some(&mut self, left: Option<Resident>) {
        if let Some(resident) = left {
            self.kept.insert(0, resident);
        }
    }

    /// The model `request` asks for, if it is kept loaded (it is then no longer kept: it is in
    /// use).
    pub fn take(&mut self, request: &LoadRequest) -> Option<Resident> {
        let at = self
            .kept
            .iter()
            .position(|r| r.request.same_model(request))?;
        Some(self.kept.remove(at))
    }

    /// Before `request`'s model is read: at most `keep_loaded - 1` models stay kept, and the
    /// least recently used leave while the machine's available memory would not hold it.
    pub fn make_room(&mut self, request: &LoadRequest) {
        self.kept.truncate(request.keep_loaded.saturating_sub(1));
        // Nothing kept, nothing to release: the load reads the header itself.
        if self.kept.is_empty() {
            return;
        }
        let Some(needed) = model::memory_needed(
            &request.model_path,
            request.context_size,
            request.cache_type,
            1,
        ) else {
            return;
        };
        while !self.kept.is_empty()
            && crate::stats::available_memory_bytes()
                .is_some_and(|available| available < needed.saturating_add(model::MEMORY_HEADROOM))
        {
            // Dropping a model unmaps its memory at once, unless its repack cache file is still
            // being written (the writer holds its matrices): once that is done, the next
            // reading sees it free.
            self.kept.pop();
            crate::engine::model::weights::packed_cache::finish_writes();
        }
    }

    /// Releases every model kept.
    pub fn clear(&mut self) {
        self.kept.clear();
    }

    /// The models kept, most recently used first.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.kept
            .iter()
            .map(|r| r.request.model_path.clone())
            .collect()
    }
}
