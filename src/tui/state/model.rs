//! Which model is loaded, which one is loading, and since when.

use super::picker::ModelEntry;
use crate::engine::ModelInfo;
use std::time::Instant;

/// A load that was sent to the engine and has not answered yet.
#[derive(Debug, Clone, PartialEq)]
pub struct Loading {
    pub entry: ModelEntry,
    pub started: Instant,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelState {
    pub loaded: Option<ModelInfo>,
    pub loading: Option<Loading>,
}

impl ModelState {
    /// The model that will answer the next question: the one loading, else the loaded one.
    pub fn answering_name(&self) -> Option<&str> {
        match (&self.loading, &self.loaded) {
            (Some(l), _) => Some(&l.entry.name),
            (None, Some(info)) => Some(&info.name),
            (None, None) => None,
        }
    }
}
