//! `taper serve`'s tests in one binary, each against a server started on loopback: the
//! endpoints, load, several models (loaded at once or on demand), hostile input, the official
//! `openai` client, taper's own remote backend, tool calls alike from a local model and a
//! remote one, and `/apply-template` beside a real llama-server's.

#[path = "../support/common.rs"]
mod common;
#[path = "../support/gguf_copy.rs"]
mod gguf_copy;
#[path = "../support/llama_server.rs"]
mod llama_server;
#[path = "../support/serve.rs"]
mod serve_support;
#[path = "../support/venv.rs"]
mod venv;

mod apply_template;
mod hostile;
mod http;
mod load;
mod models;
mod on_demand;
mod openai;
mod remote;
mod tool_backends;
