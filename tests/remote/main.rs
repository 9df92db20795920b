//! Remote models (OpenAI-compatible servers) in one binary: the loopback fault server, what
//! different servers send, HTTPS, and a real llama-server.

#[path = "../support/common.rs"]
mod common;
#[path = "../support/llama_server.rs"]
mod llama_server;
#[path = "../support/remote_server.rs"]
mod remote_server;

mod faults;
mod https;
mod real;
mod variants;
