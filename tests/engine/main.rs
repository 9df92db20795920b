//! The engine on the real test models in one binary: answers, batching and its invariance,
//! answer reuse, the repack cache, an answer continued and the cache following an edited branch, the KV
//! cache's formats, the kernel path's name, answers held to grammars, speculative decoding by
//! prompt lookup and with a draft model; the reuse measurements
//! (ignored, run by hand).

#[path = "../support/common.rs"]
mod common;
#[path = "../support/gguf_copy.rs"]
mod gguf_copy;

mod answer_reuse;
mod batch;
mod branch_reuse;
mod continue_answer;
mod invariance;
mod kernel_path;
mod kv_cache_types;
mod real;
mod repack_cache;
mod resident;
mod reuse_report;
mod speculative;
mod speculative_draft;
mod structured_output;
