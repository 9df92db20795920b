//! The inference engine: loading GGUF models, tokenizing, templating, sampling, and the worker
//! thread that runs generations behind a command/event protocol.

pub mod detokenizer;
pub mod gguf;
pub mod sampler;
pub mod template;
pub mod tokenizer;
pub mod model;
