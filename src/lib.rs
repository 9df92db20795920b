//! taper: chat with small language models in a terminal, on the CPU, in pure Rust.
//!
//! Module map (docs/design.md has the whole picture):
//! - [`engine`]: everything that turns a GGUF file and a conversation into streamed tokens;
//!   its host thread runs a model for its clients behind a command/event protocol.
//! - [`protocol`]: the types that cross the engine's boundary (requests, sampling settings,
//!   cache type, events, model info, usage); a leaf the rest depends on.
//! - [`catalog`]: the built-in catalogue of well-known models and their shapes.
//! - [`chat`]: the model-independent conversation history.
//! - [`config`]: the user's settings file and defaults.
//! - [`hub`]: downloads from the Hugging Face hub into its standard cache.
//! - [`models`]: the local models (header facts) and `taper models` / `models pull`.
//! - [`paths`]: where models and data live.
//! - [`remote`]: OpenAI-compatible servers (llama-server, vLLM, SGLang, Ollama) as a second
//!   backend of the engine: model lists, streamed chat over SSE, failures in one sentence.
//! - [`sessions`]: saved conversations (format, files, export).
//! - [`stats`]: rates and process memory.
//! - [`bench`]: `taper bench`: cold start, TTFT, prefill/decode speed and peak memory of
//!   models (real files, or shape-only files written from the catalogue), each measured in
//!   a fresh process.
//! - [`perplexity`]: `taper perplexity`: perplexity over a text, as llama.cpp computes it, and
//!   KL divergence against a base file in llama.cpp's format.
//! - [`serve`]: `taper serve`: the engine as an OpenAI-compatible server, several clients
//!   decoded together in batched forward passes.
//! - [`fuzzing`]: the entry points of the fuzz targets (`fuzz/`) and their regression tests.
//! - [`cli`]: the command-line entry points (`ask`, `tokenize`, and `chat`, which runs the TUI).
//! - [`tools`]: tool calls in each model family's syntax: detection, grammars, parsing.
//! - [`mcp`]: the MCP client: MCP servers' tools on a thread of their own, offered to the
//!   model, their calls bounded in time and size.
//! - [`tui`]: the full-screen chat, a client of the engine (loop, pure update, keymap, state, ui).

pub mod bench;
pub mod catalog;
pub mod chat;
pub mod cli;
pub mod config;
pub mod engine;
pub mod fuzzing;
pub mod hub;
pub mod mcp;
pub mod models;
pub mod paths;
pub mod perplexity;
pub mod protocol;
pub mod remote;
pub mod serve;
pub mod sessions;
pub mod stats;
pub mod tools;
pub mod tui;
