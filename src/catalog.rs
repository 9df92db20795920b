//! The built-in model catalogue (data in assets/catalog.toml, compiled in): which well-known
//! models exist, where they live on the hub, and their shapes.

use anyhow::{anyhow, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

const CATALOG_TOML: &str = include_str!("../assets/catalog.toml");

#[derive(Debug, Clone, Deserialize)]
pub struct CatalogEntry {
    /// Short name, e.g. `qwen3-4b`.
    pub name: String,
    pub display_name: String,
    pub repo: String,
    pub file: String,
    pub quantization: String,
    pub size_bytes: u64,
    #[serde(default)]
    pub sha256: String,
    /// A pinned revision (commit) of the repo, when known.
    #[serde(default)]
    pub revision: String,
    /// `general.architecture` of the file.
    pub architecture: String,
    pub license: String,
    pub gated: bool,
    pub supported: bool,
    #[serde(default)]
    pub unsupported_reason: String,
    /// How the facts above were confirmed.
    #[serde(default)]
    pub confirmed: String,
    pub shape: ModelShape,
}

/// Dimensions from the model's published config, enough to build a file of the same shape.
#[derive(Debug, Clone, Deserialize)]
pub struct ModelShape {
    pub layers: usize,
    pub hidden: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub ffn: usize,
    pub vocab: usize,
    pub context: usize,
    pub rope_theta: f64,
    pub rope_dim: usize,
    pub tied_embeddings: bool,
    #[serde(default)]
    pub sliding_window: usize,
    pub rms_eps: f64,
    #[serde(default)]
    pub qk_norm: bool,
    #[serde(default)]
    pub qkv_bias: bool,
    #[serde(default)]
    pub fused_qkv: bool,
    #[serde(default)]
    pub fused_gate_up: bool,
    /// ggml type per tensor role; "A/B" means A, and B in llama.cpp's "more bits" layers.
    #[serde(default)]
    pub quant: BTreeMap<String, String>,
    /// Architecture-specific extras (Gemma 4's per-layer embeddings, shared KV, ...).
    #[serde(flatten)]
    pub extra: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Deserialize)]
struct CatalogFile {
    model: Vec<CatalogEntry>,
}

/// Every catalogue entry, parsed once.
pub fn entries() -> &'static [CatalogEntry] {
    static ENTRIES: OnceLock<Vec<CatalogEntry>> = OnceLock::new();
    ENTRIES.get_or_init(|| match toml::from_str::<CatalogFile>(CATALOG_TOML) {
        Ok(file) => file.model,
        // The file is compiled in and checked by a test; an empty catalogue beats a crash.
        Err(_) => Vec::new(),
    })
}

pub fn find(name: &str) -> Option<&'static CatalogEntry> {
    entries().iter().find(|e| e.name.eq_ignore_ascii_case(name))
}

/// Like [`find`], with an error that lists the names there are.
pub fn lookup(name: &str) -> Result<&'static CatalogEntry> {
    find(name).ok_or_else(|| {
        let names: Vec<&str> = entries().iter().map(|e| e.name.as_str()).collect();
        anyhow!("{name:?} is not in the catalogue ({})", names.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compiled_in_catalogue_parses() {
        toml::from_str::<CatalogFile>(CATALOG_TOML).expect("assets/catalog.toml parses");
        assert!(entries().len() >= 16);
    }

    #[test]
    fn the_models_taper_is_known_for_are_listed() {
        for name in [
            "qwen3-4b",
            "phi4-mini",
            "gemma4-e4b",
            "gemma4-e2b",
            "phi3-mini",
        ] {
            assert!(find(name).is_some(), "{name}");
        }
        for name in [
            "smollm2-135m",
            "qwen3-0.6b",
            "qwen2.5-0.5b",
            "gemma3-270m",
            "llama3.2-1b",
        ] {
            assert!(find(name).is_some(), "{name}");
        }
    }

    #[test]
    fn names_are_unique_and_follow_one_pattern() {
        let mut seen = std::collections::HashSet::new();
        for e in entries() {
            assert!(seen.insert(&e.name), "duplicate {}", e.name);
            assert!(
                e.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.'),
                "{}",
                e.name
            );
            assert!(e.file.ends_with(".gguf"), "{}", e.file);
        }
    }

    #[test]
    fn every_entry_is_supported_or_says_why_not() {
        for e in entries() {
            assert_eq!(
                e.supported,
                crate::engine::model::Arch::from_name(&e.architecture).is_some(),
                "{}",
                e.name
            );
            if !e.supported {
                assert!(!e.unsupported_reason.is_empty(), "{}", e.name);
            }
        }
    }

    #[test]
    fn shapes_are_consistent() {
        for e in entries() {
            let s = &e.shape;
            assert!(s.heads % s.kv_heads == 0, "{}", e.name);
            assert!(s.rope_dim <= s.head_dim.max(s.rope_dim), "{}", e.name);
            assert!(s.quant.contains_key("token_embd"), "{}", e.name);
        }
    }

    #[test]
    fn an_unknown_name_lists_the_catalogue() {
        let err = lookup("gpt-5").unwrap_err().to_string();
        assert!(err.contains("qwen3-4b"), "{err}");
    }
}
