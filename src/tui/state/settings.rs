//! The settings the user can change while chatting: the system prompt, the sampling
//! parameters and the tool choice, and the small form that edits them one field at a time.

use crate::protocol::sampling as ranges;
use crate::protocol::{SamplingParams, Speculation, ToolChoice};

#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub system_prompt: String,
    pub sampling: SamplingParams,
    pub max_tokens: usize,
    /// Whether the model may (auto), may not (none) or must (required) call one of the MCP
    /// servers' tools when it answers a question.
    pub tool_choice: ToolChoice,
    /// Whether answers are decoded speculatively (the same answers, fewer passes).
    pub speculation: Speculation,
}

/// The fields of the settings form, in the order shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    SystemPrompt,
    Temperature,
    TopP,
    TopK,
    MinP,
    RepeatPenalty,
    MaxTokens,
    Seed,
    ToolChoice,
    Speculative,
}

impl Field {
    pub const ALL: [Field; 10] = [
        Field::SystemPrompt,
        Field::Temperature,
        Field::TopP,
        Field::TopK,
        Field::MinP,
        Field::RepeatPenalty,
        Field::MaxTokens,
        Field::Seed,
        Field::ToolChoice,
        Field::Speculative,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Field::SystemPrompt => "System prompt",
            Field::Temperature => "Temperature",
            Field::TopP => "Top-p",
            Field::TopK => "Top-k",
            Field::MinP => "Min-p",
            Field::RepeatPenalty => "Repeat penalty",
            Field::MaxTokens => "Max tokens",
            Field::Seed => "Seed",
            Field::ToolChoice => "Tool choice",
            Field::Speculative => "Speculative",
        }
    }

    pub fn hint(self) -> &'static str {
        match self {
            Field::SystemPrompt => "sent first in every request; empty = none",
            Field::Temperature => "0 = greedy (always the most likely token), up to 2",
            Field::TopP => "keep likely tokens up to this total probability; 1 = off",
            Field::TopK => "keep only the K most likely tokens; 0 = off",
            Field::MinP => "drop tokens less likely than this fraction of the best; 0 = off",
            Field::RepeatPenalty => "penalise recently seen tokens; 1 = off",
            Field::MaxTokens => "most tokens in one answer",
            Field::Seed => "same seed, same answer; empty = random",
            Field::ToolChoice => "MCP tools: auto, none, or required (a call first)",
            Field::Speculative => {
                "ngram: draft from the conversation; draft: with the model's draft model \
                 ([draft_models] in the config); or off. The same answers"
            }
        }
    }

    /// The field's current value as the form shows and edits it.
    pub fn value(self, s: &Settings) -> String {
        let p = &s.sampling;
        match self {
            Field::SystemPrompt => s.system_prompt.clone(),
            Field::Temperature => p.temperature.to_string(),
            Field::TopP => p.top_p.to_string(),
            Field::TopK => p.top_k.to_string(),
            Field::MinP => p.min_p.to_string(),
            Field::RepeatPenalty => p.repeat_penalty.to_string(),
            Field::MaxTokens => s.max_tokens.to_string(),
            Field::Seed => p.seed.map(|x| x.to_string()).unwrap_or_default(),
            Field::ToolChoice => match &s.tool_choice {
                ToolChoice::Auto => "auto".into(),
                ToolChoice::None => "none".into(),
                ToolChoice::Required => "required".into(),
                ToolChoice::Named(name) => name.clone(),
            },
            Field::Speculative => s.speculation.to_string(),
        }
    }

    /// Sets the field from text; an error says what is expected and changes nothing.
    pub fn apply(self, s: &mut Settings, text: &str) -> Result<(), String> {
        let t = text.trim();
        let p = &mut s.sampling;
        match self {
            Field::SystemPrompt => s.system_prompt = text.trim_end().to_string(),
            Field::Temperature => p.temperature = ranges::TEMPERATURE.parse(t)?,
            Field::TopP => p.top_p = ranges::TOP_P.parse(t)?,
            Field::TopK => p.top_k = t.parse().map_err(|_| "a whole number, 0 or more")?,
            Field::MinP => p.min_p = ranges::MIN_P.parse(t)?,
            Field::RepeatPenalty => p.repeat_penalty = ranges::REPEAT_PENALTY.parse(t)?,
            Field::MaxTokens => match t.parse::<usize>() {
                Ok(n) if n > 0 => s.max_tokens = n,
                _ => return Err("a whole number, 1 or more".into()),
            },
            Field::Seed if t.is_empty() => p.seed = None,
            Field::Seed => p.seed = Some(t.parse().map_err(|_| "a whole number, or empty")?),
            Field::ToolChoice => {
                s.tool_choice = match t.to_ascii_lowercase().as_str() {
                    "auto" | "" => ToolChoice::Auto,
                    "none" => ToolChoice::None,
                    "required" => ToolChoice::Required,
                    _ => return Err("auto, none or required".into()),
                }
            }
            Field::Speculative => {
                s.speculation = t.parse().map_err(|_| Speculation::NAMES.to_string())?
            }
        }
        Ok(())
    }
}

/// The settings form's own state: which field is selected, and the edit in progress.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SettingsForm {
    pub selected: usize,
    /// The text being edited (the cursor is at its end), when editing.
    pub editing: Option<String>,
    pub error: Option<String>,
}

impl SettingsForm {
    pub fn field(&self) -> Field {
        Field::ALL[self.selected.min(Field::ALL.len() - 1)]
    }

    pub fn move_selection(&mut self, delta: isize) {
        let last = Field::ALL.len() as isize - 1;
        self.selected = (self.selected as isize + delta).clamp(0, last) as usize;
        self.error = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            system_prompt: String::new(),
            sampling: SamplingParams::default(),
            max_tokens: 100,
            tool_choice: ToolChoice::Auto,
            speculation: Speculation::Ngram,
        }
    }

    #[test]
    fn a_valid_value_is_applied() {
        let mut s = settings();
        Field::Temperature.apply(&mut s, " 0.2 ").unwrap();
        Field::Seed.apply(&mut s, "42").unwrap();
        assert_eq!((s.sampling.temperature, s.sampling.seed), (0.2, Some(42)));
        Field::Seed.apply(&mut s, "").unwrap();
        assert_eq!(s.sampling.seed, None);
    }

    #[test]
    fn an_invalid_value_says_what_is_expected_and_changes_nothing() {
        let mut s = settings();
        let err = Field::TopP.apply(&mut s, "3").unwrap_err();
        assert!(err.contains("0 to 1"), "{err}");
        assert_eq!(s, settings());
        assert!(Field::MaxTokens.apply(&mut s, "0").is_err());
        assert!(Field::ToolChoice.apply(&mut s, "sometimes").is_err());
        assert!(Field::Speculative.apply(&mut s, "medusa").is_err());
        assert_eq!(s, settings());
        Field::ToolChoice.apply(&mut s, "Required").unwrap();
        assert_eq!(s.tool_choice, ToolChoice::Required);
    }
}
