//! The inference engine: opening GGUF models, tokenizing, templating, sampling, and the host
//! thread that runs generations behind a command/event protocol (see docs/design.md).
//!
//! Clients (the TUI, `taper ask`, `taper serve`) hold an [`EngineHandle`]: they send
//! [`EngineCommand`]s and receive [`crate::protocol::EngineEvent`]s. The host owns the model;
//! it never panics across the boundary. `taper bench` and `taper perplexity` open a model
//! with [`loader::open`] and drive it in their own process ([`generation::Generator`]).

pub mod answer_ids;
pub mod context_fit;
pub mod detokenizer;
pub mod generation;
pub mod gguf;
pub mod grammar;
mod host;
pub mod loader;
pub mod model;
mod penalties;
pub mod prefix_cache;
pub mod prompt;
pub mod sampler;
pub mod speculative;
pub mod template;
pub mod threads;
pub mod tokenizer;

pub use host::{EngineCommand, EngineHandle, LocalModel, Refused, Status, Submitter};

/// Threads candle computes with (set from `--threads` before the engine starts).
pub fn compute_threads() -> usize {
    candle_core::utils::get_num_threads()
}
