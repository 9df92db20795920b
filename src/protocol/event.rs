//! What the engine tells its clients: [`EngineEvent`]s (a model loaded, a prompt's progress,
//! answer text, the end of a turn, a failure), the [`ModelInfo`] of a loaded model, and the
//! [`TurnObserver`] through which a turn's driver (local or remote) reports as it goes.

use super::sampling::CacheType;
use super::usage::Usage;
use crate::chat::ToolCall;
use anyhow::Result;
use std::path::PathBuf;
use std::sync::Arc;

/// What a client learns about a loaded model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    pub path: PathBuf,
    pub name: String,
    pub architecture: String,
    pub quantization: String,
    pub file_size: u64,
    pub parameters: u64,
    /// The session's KV-cache size.
    pub context_size: usize,
    /// The KV cache's number format.
    pub cache_type: CacheType,
    /// Bytes the KV cache takes at a full context.
    pub cache_bytes: u64,
    /// What the model was trained for.
    pub context_length: usize,
    pub load_s: f64,
    pub threads: usize,
    /// The kernel path computing it (`avx512-vnni`, `avx2`, `scalar`, ...).
    pub kernels: &'static str,
    /// The server's base URL, for a remote model (`path` and `name` are then `NAME/MODEL`,
    /// and a `context_size` of 0 means the server did not say).
    pub remote: Option<String>,
    /// Counts a text's tokens with the model's own tokenizer (a local model's; a remote
    /// keeps its tokenizer to itself).
    pub tokens: TokenCounter,
    /// This model was kept loaded since it was last used: `load_s` is the switch's time.
    pub kept_loaded: bool,
    /// The other models kept loaded beside this one, most recently used first.
    pub resident: Vec<PathBuf>,
    /// The draft model requests with `Speculation::Draft` draft with, if one was named.
    pub draft_model: Option<PathBuf>,
}

/// A text's length in a model's tokens, for a client that wants to know before it sends
/// (a file brought into a message). Cheap to clone; two counters always compare equal, as
/// a loaded model's other figures decide whether two infos are the same.
#[derive(Clone, Default)]
pub struct TokenCounter(Option<Arc<CountTokens>>);

type CountTokens = dyn Fn(&str) -> usize + Send + Sync;

impl TokenCounter {
    pub fn new(count: impl Fn(&str) -> usize + Send + Sync + 'static) -> Self {
        Self(Some(Arc::new(count)))
    }

    /// The exact count, or None when the model's tokenizer is not at hand.
    pub fn count(&self, text: &str) -> Option<usize> {
        self.0.as_ref().map(|count| count(text))
    }
}

impl PartialEq for TokenCounter {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "TokenCounter"
        } else {
            "TokenCounter(none)"
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum EngineEvent {
    Loaded {
        info: ModelInfo,
        /// Things the user should know (e.g. a built-in chat template is in use).
        notices: Vec<String>,
    },
    /// The prompt's new tokens read so far (`done` of `total`); `cached` more were reused from
    /// the cache. Sent once before the first is read, then after each chunk.
    PromptProgress {
        turn_id: u64,
        done: usize,
        total: usize,
        cached: usize,
    },
    /// The answer's first token is out: the engine's own time to it and the prompt's reading
    /// time, so a client shows the figures the turn will end with, not its own estimates.
    FirstToken {
        turn_id: u64,
        ttft_s: f64,
        prefill_s: f64,
    },
    Token {
        turn_id: u64,
        text: String,
    },
    Finished {
        turn_id: u64,
        usage: Usage,
        /// The tools the answer called, when the request offered tools (read out of a local
        /// model's text in its family's syntax, or a remote's `tool_calls`).
        tool_calls: Vec<ToolCall>,
    },
    /// A load (turn_id None) or a generation failed; the engine keeps running.
    Failed {
        turn_id: Option<u64>,
        message: String,
    },
}

/// What a turn's driver tells as it goes, and how it is stopped. Every method has a default,
/// so each listener implements only what it uses.
pub trait TurnObserver {
    /// Asked before every prefill chunk and before every token.
    fn stop_requested(&mut self) -> bool {
        false
    }
    /// After each prefill chunk: `done` of `total` new prompt tokens computed.
    fn prompt_progress(&mut self, _done: usize, _total: usize) -> Result<()> {
        Ok(())
    }
    /// Each generated token, as soon as it is sampled (before its text, if any).
    fn token(&mut self, _id: u32) {}
    /// Each piece of answer text, as soon as it is whole (UTF-8 complete).
    fn text(&mut self, _piece: &str) -> Result<()> {
        Ok(())
    }
}
