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
    /// What a remote server reported about its own work (the fields above are measured
    /// here); None for local models. Boxed: every answer holds a Usage, few hold these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<Box<ServerFigures>>,
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

    /// Positions of the context in use after this generation.
    pub fn context_used(&self) -> usize {
        self.prompt_tokens + self.generated_tokens
    }
}
