//! How the next token is chosen ([`SamplingParams`]) and how the KV cache stores its numbers
//! ([`CacheType`]): settings the config, saved sessions, remote requests and the engine share.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How the next token is chosen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingParams {
    /// 0 (or less) = greedy.
    pub temperature: f32,
    /// 0 = off.
    pub top_k: usize,
    /// 1 = off.
    pub top_p: f32,
    /// 0 = off.
    pub min_p: f32,
    /// 1 = off.
    pub repeat_penalty: f32,
    /// How many of the most recent tokens the repeat penalty looks at (0 = off).
    pub repeat_last_n: usize,
    /// None = a different sequence every run.
    pub seed: Option<u64>,
    /// OpenAI's: subtracted from a token's logit once per time it was generated in this
    /// answer (0 = off). Absent from older saved sessions and configs, so it defaults.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub frequency_penalty: f32,
    /// OpenAI's: subtracted once from the logit of every token this answer has generated.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub presence_penalty: f32,
}

fn is_zero(v: &f32) -> bool {
    *v == 0.0
}

impl Default for SamplingParams {
    fn default() -> Self {
        Self {
            temperature: 0.7,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            repeat_penalty: 1.1,
            repeat_last_n: 64,
            seed: None,
            frequency_penalty: 0.0,
            presence_penalty: 0.0,
        }
    }
}

impl SamplingParams {
    /// Always the most likely token, nothing penalised (benchmarks, references).
    pub fn greedy() -> Self {
        Self {
            temperature: 0.0,
            repeat_penalty: 1.0,
            ..Self::default()
        }
    }
}

/// The number format of the KV cache (`--cache-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheType {
    F32,
    /// Half the memory of f32, exact to about 3 decimal digits; llama.cpp's default too.
    #[default]
    F16,
    /// A little over a quarter of f32's memory (8.5 bits a value).
    Q8_0,
}

impl CacheType {
    pub const NAMES: &'static str = "f16, q8_0 or f32";
}

impl fmt::Display for CacheType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CacheType::F32 => "f32",
            CacheType::F16 => "f16",
            CacheType::Q8_0 => "q8_0",
        })
    }
}

impl FromStr for CacheType {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "f32" => CacheType::F32,
            "f16" => CacheType::F16,
            "q8_0" | "q8" => CacheType::Q8_0,
            other => bail!("unknown cache type {other:?}: use {}", Self::NAMES),
        })
    }
}
