//! Whether an answer is decoded speculatively ([`Speculation`]): a setting the flags, the
//! config, the chat's settings and the engine share. It never changes what is sampled, only
//! how many forward passes it takes (see the engine's `speculative` module).

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How an answer's tokens are guessed ahead and verified in one pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Speculation {
    /// One forward pass per token. The default: on SmolLM2's fresh chat, drafting was
    /// measured at ×0.85 to ×1.01 of plain decode on a busy machine, not proven never slower.
    #[default]
    Off,
    /// Prompt lookup: the tokens that followed the last few tokens' earlier occurrence in
    /// the prompt or the answer are drafted and verified together.
    Ngram,
    /// A smaller draft model with the same vocabulary guesses a few tokens, which are
    /// verified together: the draft the model was loaded with (`--speculative draft=MODEL`,
    /// or its pair under `[draft_models]` in the config). Without one, a token a pass.
    Draft,
}

impl Speculation {
    pub const NAMES: &'static str = "ngram, draft or off";
}

impl fmt::Display for Speculation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Speculation::Off => "off",
            Speculation::Ngram => "ngram",
            Speculation::Draft => "draft",
        })
    }
}

impl FromStr for Speculation {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "off" | "none" => Speculation::Off,
            "ngram" | "n-gram" | "lookup" => Speculation::Ngram,
            "draft" => Speculation::Draft,
            other => bail!("unknown speculation {other:?}: use {}", Self::NAMES),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speculation_reads_back_what_it_writes() {
        for s in [Speculation::Off, Speculation::Ngram, Speculation::Draft] {
            assert_eq!(s.to_string().parse::<Speculation>().unwrap(), s);
        }
        assert!("medusa".parse::<Speculation>().is_err());
    }
}
