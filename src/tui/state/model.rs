//! Which model is loaded, which one is loading, and since when.

use super::picker::ModelEntry;
use crate::protocol::ModelInfo;
use std::time::Instant;

/// A load that was sent to the engine and has not answered yet.
#[derive(Debug, Clone, PartialEq)]
pub struct Loading {
    pub entry: ModelEntry,
    pub started: Instant,
}

/// A catalogue model being downloaded before it is loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct Download {
    pub entry: ModelEntry,
    pub done: u64,
    pub total: u64,
    pub started: Instant,
    /// The file, once downloaded; the model loads when its header has been read.
    pub arrived: Option<std::path::PathBuf>,
}

impl Download {
    /// Bytes per second so far.
    pub fn rate(&self, now: Instant) -> f64 {
        let secs = now.saturating_duration_since(self.started).as_secs_f64();
        if secs > 0.0 {
            self.done as f64 / secs
        } else {
            0.0
        }
    }

    /// Seconds left at the rate so far.
    pub fn eta_s(&self, now: Instant) -> Option<f64> {
        let rate = self.rate(now);
        (rate > 0.0 && self.total >= self.done).then(|| (self.total - self.done) as f64 / rate)
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelState {
    pub loaded: Option<ModelInfo>,
    pub loading: Option<Loading>,
    pub download: Option<Download>,
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
