//! Helpers shared by the integration tests: where the test models and reference data live.
#![allow(dead_code)]

use std::path::PathBuf;

/// The reference data the repository holds: tiny models with llama.cpp's logits, llama.cpp's
/// token ids for the real models (made by `scripts/make-reference`, see its README).
pub fn reference_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reference")
}

/// The models directory the test command fills with `scripts/fetch-models`.
pub fn models_dir() -> PathBuf {
    match std::env::var_os("TAPER_HOME") {
        Some(home) => PathBuf::from(home).join("models"),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models"),
    }
}

/// A real test model; panics with the fix when it has not been fetched.
pub fn real_model(file: &str) -> PathBuf {
    let path = models_dir().join(file);
    assert!(
        path.is_file(),
        "{} is missing: run scripts/fetch-models (or the README's test command) first",
        path.display()
    );
    path
}

pub const SMOLLM2: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
pub const GEMMA3: &str = "gemma-3-270m-q4_k_m.gguf";

/// Row-major logits (`rows × vocab`, as `LanguageModel::forward` returns them) as one vector
/// per row.
#[allow(dead_code)]
pub fn logit_rows(logits: Vec<f32>, vocab: usize) -> Vec<Vec<f32>> {
    logits.chunks(vocab).map(<[f32]>::to_vec).collect()
}

/// The index of the largest logit, the first on ties (greedy decoding in tests).
#[allow(dead_code)]
pub fn argmax(v: &[f32]) -> u32 {
    let mut best = 0;
    for (i, x) in v.iter().enumerate() {
        if *x > v[best] {
            best = i;
        }
    }
    best as u32
}
