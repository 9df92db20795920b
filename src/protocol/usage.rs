//! What one generation cost and why it ended: measured by the engine (or reported by a remote
//! server), shown by the chat, saved with sessions, returned by the server.

use crate::stats::rate;
use serde::{Deserialize, Serialize};

/// Why a generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model produced an end-of-turn token.
    EndOfTurn,
    /// `max_tokens` were generated.
    MaxTokens,
    /// The KV cache is full.
    ContextFull,
    /// The user cancelled (or the client went away).
    Cancelled,
    /// The answer reached one of the request's stop strings.
    StopSequence,
}

impl StopReason {
    /// An answer cut short by a limit rather than ended by the model: what happened, for the
    /// place the user reads the answer (each front end adds how to raise the limit).
    pub fn cut_short(self, generated: usize) -> Option<String> {
        match self {
            StopReason::MaxTokens => Some(format!(
                "cut at the limit of {generated} token{}, before the model finished",
                if generated == 1 { "" } else { "s" }
            )),
            StopReason::ContextFull => {
                Some("cut where the context filled up, before the model finished".into())
            }
            _ => None,
        }
    }
}

/// What one generation cost. Times are measured by the engine worker.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens in the prompt, reused ones included.
    pub prompt_tokens: usize,
    /// Prompt tokens whose KV entries were reused from the previous turn.
    pub cached_tokens: usize,
    /// Time to read the new prompt tokens (prefill), in seconds.
    pub prefill_s: f64,
    /// From the request to the first generated token, in seconds.
    pub ttft_s: f64,
    pub generated_tokens: usize,
    /// From the first generated token to the last, in seconds.
    pub decode_s: f64,
    /// Oldest messages left out so the conversation fits the context.
    pub dropped_messages: usize,
    pub context_size: usize,
    pub stop: Option<StopReason>,
    /// Time spent holding the answer to its grammar (masks and advances), in seconds; 0
    /// without one.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub grammar_s: f64,
    /// Speculative decoding: tokens drafted, and how many of them the model's own sampling
    /// kept (0 and 0 without it).
    #[serde(default, skip_serializing_if = "is_no_count")]
    pub drafted_tokens: usize,
    #[serde(default, skip_serializing_if = "is_no_count")]
    pub accepted_tokens: usize,
    /// Forward passes after the first token (each a decode step, or a verify pass of drafted
    /// tokens); 0 where not counted (a remote model).
    #[serde(default, skip_serializing_if = "is_no_count")]
    pub decode_passes: usize,
    /// What a remote server reported about its own work (the fields above are measured
    /// here); None for local models. Boxed: every answer holds a Usage, few hold these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<Box<ServerFigures>>,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

fn is_no_count(v: &usize) -> bool {
    *v == 0
}

/// Figures a remote server reported (llama-server's `timings`, the `usage` of the OpenAI
/// API); each is None when the server did not send it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerFigures {
    pub prompt_tokens: Option<usize>,
    pub completion_tokens: Option<usize>,
    /// Prompt tokens the server reused from its cache (`cache_n`).
    pub cached_tokens: Option<usize>,
    /// `prompt_per_second`.
    pub prompt_tok_s: Option<f64>,
    /// `predicted_per_second`.
    pub decode_tok_s: Option<f64>,
}

impl Usage {
    /// Prompt tokens actually computed per second of prefill.
    pub fn prefill_tok_s(&self) -> f64 {
        rate(
            self.prompt_tokens - self.cached_tokens.min(self.prompt_tokens),
            self.prefill_s,
        )
    }

    /// Tokens per second after the first: each costs one forward pass and one sample.
    pub fn decode_tok_s(&self) -> f64 {
        rate(self.generated_tokens.saturating_sub(1), self.decode_s)
    }

    /// Of the drafted tokens, the fraction kept; None when nothing was drafted.
    pub fn acceptance(&self) -> Option<f64> {
        (self.drafted_tokens > 0).then(|| self.accepted_tokens as f64 / self.drafted_tokens as f64)
    }

    /// Tokens after the first per forward pass (1 without speculation); None when no pass
    /// was counted.
    pub fn tokens_per_pass(&self) -> Option<f64> {
        (self.decode_passes > 0)
            .then(|| self.generated_tokens.saturating_sub(1) as f64 / self.decode_passes as f64)
    }

    /// Positions of the context in use after this generation.
    pub fn context_used(&self) -> usize {
        self.prompt_tokens + self.generated_tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::steps_tok_s;

    #[test]
    fn decode_rate_counts_tokens_after_the_first() {
        let u = Usage {
            generated_tokens: 11,
            decode_s: 2.0,
            ..Default::default()
        };
        assert_eq!(u.decode_tok_s(), 5.0);
    }
    #[test]
    fn prefill_rate_excludes_reused_tokens() {
        let u = Usage {
            prompt_tokens: 120,
            cached_tokens: 20,
            prefill_s: 0.5,
            ..Default::default()
        };
        assert_eq!(u.prefill_tok_s(), 200.0);
    }
    #[test]
    fn rates_are_zero_when_nothing_was_timed() {
        assert_eq!(Usage::default().decode_tok_s(), 0.0);
    }
    #[test]
    fn step_rates_match_the_decode_rate_of_the_same_generation() {
        let steps = [0.25, 0.5, 0.25];
        let u = Usage {
            generated_tokens: 4,
            decode_s: steps.iter().sum(),
            ..Default::default()
        };
        assert_eq!(steps_tok_s(&steps), 3.0);
        assert_eq!(steps_tok_s(&steps), u.decode_tok_s());
        assert_eq!(steps_tok_s(&[]), 0.0);
    }
}
