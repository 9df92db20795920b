//! `taper perplexity` in one binary: the command on the real test models, and beside
//! llama.cpp's own `llama-perplexity`.

#[path = "../support/common.rs"]
mod common;

mod cli;
mod llama_cpp;
