//! taper: chat with small language models in a terminal, on the CPU, in pure Rust.
//!
//! Module map (see DESIGN.md):
//! - [`engine`]: everything that turns a GGUF file and a conversation into streamed tokens;
//!   it runs on its own thread behind a command/event protocol.
//! - [`chat`]: the model-independent conversation history.
//! - [`paths`]: where models and data live.
//! - [`stats`]: usage figures, rates and process memory.
//! - [`cli`]: the command-line entry points (`ask`, `tokenize`).

pub mod chat;
pub mod cli;
pub mod engine;
pub mod paths;
pub mod stats;
