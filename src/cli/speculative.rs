//! `--speculative ngram|draft|draft=MODEL|off`, shared by every command that generates: how
//! answers are decoded, and which draft model a model drafts with (the flag's, else the
//! model's pair under `[draft_models]` in the config).

use crate::config::Config;
use crate::protocol::Speculation;
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// `--speculative`, of every command that generates.
#[derive(Debug, Clone, Default, PartialEq, Args)]
pub struct SpeculativeArg {
    /// Draft tokens and verify them in one pass: from the prompt and answer (ngram), with a
    /// smaller model of the same vocabulary (draft=MODEL, or draft for the model's pair under
    /// [draft_models] in the config), or a token a pass (off); the same answers either way
    /// [default: the config's, off].
    #[arg(long = "speculative", value_name = "ngram|draft[=MODEL]|off")]
    pub speculative: Option<SpeculativeChoice>,
}

/// What `--speculative` says: the way, and for `draft=MODEL` the draft model.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeculativeChoice {
    pub speculation: Speculation,
    pub draft: Option<String>,
}

impl FromStr for SpeculativeChoice {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        if let Some((way, model)) = s.split_once('=') {
            if way.trim().parse::<Speculation>()? != Speculation::Draft {
                bail!("only draft takes a model: draft=MODEL");
            }
            if model.trim().is_empty() {
                bail!("draft= needs a model: draft=MODEL");
            }
            return Ok(Self {
                speculation: Speculation::Draft,
                draft: Some(model.trim().to_string()),
            });
        }
        Ok(Self {
            speculation: s.parse()?,
            draft: None,
        })
    }
}

impl SpeculativeArg {
    /// The flag, else the config's, else the default.
    pub fn resolve(&self, config: &Config) -> Speculation {
        self.given().unwrap_or(config.speculation())
    }

    /// The way the flag gives, if it was given.
    pub fn given(&self) -> Option<Speculation> {
        self.speculative.as_ref().map(|c| c.speculation)
    }

    /// The draft model for the model at `target`: the flag's `draft=MODEL`, else the config's
    /// pair for it (None without either).
    pub fn draft_model(&self, target: &Path, config: &Config) -> Result<Option<PathBuf>> {
        match self.speculative.as_ref().and_then(|c| c.draft.as_deref()) {
            Some(name) => crate::models::resolve(Some(name), config)
                .map(|(path, _)| Some(path))
                .with_context(|| format!("draft model {name:?}")),
            None => crate::models::paired_draft(target, config),
        }
    }

    /// [`SpeculativeArg::draft_model`] for a command with one model and one way: an error
    /// when the way is draft and there is no draft model (it would silently decode a token a
    /// pass).
    pub fn required_draft(&self, target: &Path, config: &Config) -> Result<Option<PathBuf>> {
        let draft = self.draft_model(target, config)?;
        if self.resolve(config) == Speculation::Draft && draft.is_none() {
            bail!(
                "no draft model for {}: name one with --speculative draft=MODEL, or pair one \
                 with it under [draft_models] in the config",
                target.display()
            );
        }
        Ok(draft)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draft_takes_a_model_and_nothing_else_does() {
        let c: SpeculativeChoice = "draft=smollm2-135m".parse().unwrap();
        assert_eq!(c.speculation, Speculation::Draft);
        assert_eq!(c.draft.as_deref(), Some("smollm2-135m"));
        let c: SpeculativeChoice = "draft".parse().unwrap();
        assert_eq!((c.speculation, c.draft), (Speculation::Draft, None));
        assert!("ngram=x".parse::<SpeculativeChoice>().is_err());
        assert!("draft=".parse::<SpeculativeChoice>().is_err());
        assert!("sometimes".parse::<SpeculativeChoice>().is_err());
    }
}
