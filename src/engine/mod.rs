//! The inference engine: loading GGUF models, tokenizing, templating, sampling, and the worker
//! thread that runs generations behind a command/event protocol (see docs/design.md).
//!
//! Clients (`taper ask`, the TUI) hold an [`EngineHandle`]: they send [`EngineCommand`]s and
//! receive [`EngineEvent`]s. The worker owns the model; it never panics across the boundary.

pub mod answer_ids;
pub mod context_fit;
pub mod detokenizer;
pub mod generation;
pub mod gguf;
pub mod model;
pub mod prefix_cache;
pub mod prompt;
mod remote;
pub mod sampler;
pub mod template;
pub mod threads;
pub mod tokenizer;
mod worker;

use crate::chat::Message;
use crate::stats::Usage;
use anyhow::{anyhow, Result};
use sampler::SamplingParams;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

/// Load a model, replacing (and first releasing) any loaded one.
#[derive(Debug, Clone)]
pub struct LoadRequest {
    pub model_path: PathBuf,
    /// A tokenizer.json to use instead of the vocabulary in the GGUF.
    pub tokenizer_json: Option<PathBuf>,
    /// Requested KV-cache size; capped at the model's training context.
    pub context_size: usize,
    /// The KV cache's number format.
    pub cache_type: model::CacheType,
    /// A chat template to use instead of the file's.
    pub chat_template: Option<String>,
}

/// Generate an answer to a conversation.
#[derive(Debug, Clone)]
pub struct GenerateRequest {
    /// Events of this generation carry it; a client ignores events of stale turns.
    pub turn_id: u64,
    pub messages: Vec<Message>,
    /// Send the last message's text as is, without a chat template (base models).
    pub raw: bool,
    pub sampling: SamplingParams,
    pub max_tokens: usize,
}

#[derive(Debug, Clone)]
pub enum EngineCommand {
    Load(LoadRequest),
    /// Answer with a remote server's model from now on (the local model, if any, is
    /// released first). Answers `Loaded` once the server has said it serves the model.
    Connect(crate::remote::RemoteTarget),
    Generate(GenerateRequest),
    /// Release the model's memory.
    Unload,
    Shutdown,
}

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
    pub cache_type: model::CacheType,
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
}

#[derive(Debug, Clone, PartialEq)]
pub enum EngineEvent {
    Loaded {
        info: ModelInfo,
        /// Things the user should know (e.g. a built-in chat template is in use).
        notices: Vec<String>,
    },
    PromptProgress {
        turn_id: u64,
        done: usize,
        total: usize,
    },
    Token {
        turn_id: u64,
        text: String,
    },
    Finished {
        turn_id: u64,
        usage: Usage,
    },
    /// A load (turn_id None) or a generation failed; the engine keeps running.
    Failed {
        turn_id: Option<u64>,
        message: String,
    },
}

/// Cancels every turn, whatever its id.
const CANCEL_ALL: u64 = u64::MAX;
/// No cancel requested.
const CANCEL_NONE: u64 = u64::MAX - 1;

/// The client's side of the engine: a command sender, an event receiver and a cancel flag.
pub struct EngineHandle {
    commands: mpsc::Sender<EngineCommand>,
    pub events: UnboundedReceiver<EngineEvent>,
    cancel: Arc<AtomicU64>,
}

impl EngineHandle {
    /// Starts the worker thread.
    pub fn spawn() -> Result<Self> {
        let (commands, command_rx) = mpsc::channel();
        let (event_tx, events) = unbounded_channel();
        let cancel = Arc::new(AtomicU64::new(CANCEL_NONE));
        let worker_cancel = cancel.clone();
        std::thread::Builder::new()
            .name("taper-engine".into())
            .spawn(move || worker::run(command_rx, event_tx, worker_cancel))?;
        Ok(Self {
            commands,
            events,
            cancel,
        })
    }

    pub fn send(&self, command: EngineCommand) -> Result<()> {
        self.commands
            .send(command)
            .map_err(|_| anyhow!("the engine has stopped"))
    }

    /// Stops the generation of `turn_id` before its next token.
    pub fn cancel(&self, turn_id: u64) {
        self.cancel.store(turn_id, Ordering::SeqCst);
    }

    /// Blocking receive for command-line clients; None when the worker has gone.
    pub fn recv_blocking(&mut self) -> Option<EngineEvent> {
        self.events.blocking_recv()
    }
}

impl Drop for EngineHandle {
    fn drop(&mut self) {
        self.cancel.store(CANCEL_ALL, Ordering::SeqCst);
        let _ = self.commands.send(EngineCommand::Shutdown);
    }
}

/// Threads candle computes with (set from `--threads` before the engine starts).
pub fn compute_threads() -> usize {
    candle_core::utils::get_num_threads()
}
