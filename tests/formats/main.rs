//! The files taper reads, hostile or not, in one binary: GGUF errors, chat templates (bounds and
//! the real models' choices), tokenizer parity with llama.cpp, and every saved fuzz crash.

#[path = "../support/common.rs"]
mod common;

mod fuzz_regressions;
mod gguf_errors;
mod template_bounds;
mod template_models;
mod tokenizer_parity;
