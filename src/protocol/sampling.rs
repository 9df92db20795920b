//! How the next token is chosen ([`SamplingParams`]), the one range each setting may take
//! ([`Range`]: the flags, the config, the chat's settings and the server all check with these),
//! and how the KV cache stores its numbers ([`CacheType`]): settings the config, saved
//! sessions, remote requests and the engine share.

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

/// The values a setting may take, and the one sentence that says so.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    pub name: &'static str,
    pub min: f64,
    pub max: f64,
}

/// Beyond 2 (OpenAI's bound too) every model writes gibberish.
pub const TEMPERATURE: Range = Range::new("temperature", 0.0, 2.0);
pub const TOP_P: Range = Range::new("top_p", 0.0, 1.0);
pub const MIN_P: Range = Range::new("min_p", 0.0, 1.0);
/// The logits of recent tokens are divided by it: 0 would divide by zero, and below 1 it
/// rewards repeating.
pub const REPEAT_PENALTY: Range = Range::new("repeat_penalty", 0.1, 10.0);
pub const FREQUENCY_PENALTY: Range = Range::new("frequency_penalty", -2.0, 2.0);
pub const PRESENCE_PENALTY: Range = Range::new("presence_penalty", -2.0, 2.0);

impl Range {
    const fn new(name: &'static str, min: f64, max: f64) -> Self {
        Self { name, min, max }
    }

    /// `value` if it is in the range (NaN and infinities never are), else what the range is.
    pub fn check(&self, value: f64) -> Result<f64, String> {
        if value.is_finite() && (self.min..=self.max).contains(&value) {
            Ok(value)
        } else {
            Err(format!(
                "{} must be a number from {} to {}, not {value}",
                self.name, self.min, self.max
            ))
        }
    }

    /// The same, for a setting written as text (a flag, a field of the chat's settings).
    pub fn parse(&self, text: &str) -> Result<f32, String> {
        match text.trim().parse::<f64>() {
            Ok(value) => self.check(value).map(|v| v as f32),
            Err(_) => Err(format!(
                "{} must be a number from {} to {}, not {text:?}",
                self.name, self.min, self.max
            )),
        }
    }
}

impl SamplingParams {
    /// Each setting in its [`Range`]; the first one that is not, in a sentence.
    pub fn check(&self) -> Result<(), String> {
        TEMPERATURE.check(self.temperature.into())?;
        TOP_P.check(self.top_p.into())?;
        MIN_P.check(self.min_p.into())?;
        REPEAT_PENALTY.check(self.repeat_penalty.into())?;
        FREQUENCY_PENALTY.check(self.frequency_penalty.into())?;
        PRESENCE_PENALTY.check(self.presence_penalty.into())?;
        Ok(())
    }

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
