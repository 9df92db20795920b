//! `taper serve`'s tests in one binary, each against a server started on loopback: the
//! endpoints, load, hostile input, the official `openai` client, taper's own remote backend,
//! and tool calls alike from a local model and a remote one.

#[path = "../support/common.rs"]
mod common;
#[path = "../support/serve.rs"]
mod serve_support;

mod hostile;
mod http;
mod load;
mod openai;
mod remote;
mod tool_backends;
