//! The JSON of answers: whole responses, stream chunks, `usage` and llama-server-style
//! `timings`, a thinking model's `<think>` part as `reasoning_content`, and the model's tool
//! calls as `tool_calls`.

use crate::chat::split_thinking;
use crate::protocol::{StopReason, Usage};
use crate::tools::{parse, ToolFormat};
use serde_json::{json, Value};

/// Why an answer ended, in OpenAI's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// An end-of-turn token or a stop string.
    Stop,
    /// `max_tokens`, or the context is full.
    Length,
    /// The answer called tools.
    ToolCalls,
}

impl Finish {
    pub fn of(usage: &Usage) -> Self {
        match usage.stop {
            Some(StopReason::MaxTokens | StopReason::ContextFull) => Finish::Length,
            _ => Finish::Stop,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Finish::Stop => "stop",
            Finish::Length => "length",
            Finish::ToolCalls => "tool_calls",
        }
    }
}

/// What every response of one request shares.
#[derive(Debug, Clone)]
pub struct Meta {
    pub id: String,
    pub model: String,
    pub created: u64,
}

pub fn usage(u: &Usage) -> Value {
    json!({
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.generated_tokens,
        "total_tokens": u.prompt_tokens + u.generated_tokens,
        "prompt_tokens_details": { "cached_tokens": u.cached_tokens },
    })
}

/// llama-server's `timings`: prompt tokens computed (cached ones apart) and generated, their
/// milliseconds and rates.
pub fn timings(u: &Usage) -> Value {
    let prompt_n = u.prompt_tokens.saturating_sub(u.cached_tokens);
    let prompt_ms = u.prefill_s * 1e3;
    let predicted_ms = u.decode_s * 1e3;
    let per_token = |ms: f64, n: usize| if n > 0 { ms / n as f64 } else { 0.0 };
    json!({
        "cache_n": u.cached_tokens,
        "prompt_n": prompt_n,
        "prompt_ms": prompt_ms,
        "prompt_per_token_ms": per_token(prompt_ms, prompt_n),
        "prompt_per_second": u.prefill_tok_s(),
        "predicted_n": u.generated_tokens,
        "predicted_ms": predicted_ms,
        "predicted_per_token_ms": per_token(predicted_ms, u.generated_tokens.saturating_sub(1)),
        "predicted_per_second": u.decode_tok_s(),
    })
}

/// The id of a call the model made: unique within the server's run and across runs.
pub fn call_id(meta: &Meta, index: usize) -> String {
    let request = meta.id.rsplit('-').next().unwrap_or("0");
    format!("call_{}{request}_{index}", meta.created)
}

/// A call as OpenAI writes it in a message (and, with `index`, in a stream's first delta).
pub fn tool_call(meta: &Meta, index: usize, name: &str, arguments: &str) -> Value {
    json!({
        "id": call_id(meta, index),
        "type": "function",
        "function": { "name": name, "arguments": arguments },
    })
}

/// A whole chat answer; with `calls` (the model's tool-call syntax, when the request offered
/// tools), the calls it made are read out of it.
pub fn chat(
    meta: &Meta,
    text: &str,
    calls: Option<ToolFormat>,
    mut finish: Finish,
    u: &Usage,
) -> Value {
    let parts = split_thinking(text);
    let mut message = json!({ "role": "assistant", "content": parts.answer });
    if let Some(format) = calls {
        let parsed = parse::parse(format, parts.answer);
        if !parsed.calls.is_empty() {
            let calls: Vec<Value> = parsed
                .calls
                .iter()
                .enumerate()
                .map(|(i, c)| tool_call(meta, i, &c.name, &c.arguments))
                .collect();
            let content = parsed.content.trim();
            message["content"] = if content.is_empty() {
                Value::Null
            } else {
                json!(content)
            };
            message["tool_calls"] = Value::Array(calls);
            finish = Finish::ToolCalls;
        } else {
            message["content"] = json!(parsed.content);
        }
    }
    if let Some(thinking) = parts.thinking {
        message["reasoning_content"] = json!(thinking);
    }
    json!({
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "choices": [{ "index": 0, "message": message, "finish_reason": finish.as_str() }],
        "usage": usage(u),
        "timings": timings(u),
    })
}

/// A whole raw completion.
pub fn text(meta: &Meta, text: &str, finish: Finish, u: &Usage) -> Value {
    json!({
        "id": meta.id,
        "object": "text_completion",
        "created": meta.created,
        "model": meta.model,
        "choices": [{ "index": 0, "text": text, "finish_reason": finish.as_str(), "logprobs": null }],
        "usage": usage(u),
        "timings": timings(u),
    })
}

/// One chunk of a streamed chat answer: `delta` and, at the end, the finish reason.
pub fn chat_chunk(meta: &Meta, delta: Value, finish: Option<Finish>) -> Value {
    json!({
        "id": meta.id,
        "object": "chat.completion.chunk",
        "created": meta.created,
        "model": meta.model,
        "choices": [{ "index": 0, "delta": delta, "finish_reason": finish.map(Finish::as_str) }],
    })
}

/// One chunk of a streamed raw completion.
pub fn text_chunk(meta: &Meta, text: &str, finish: Option<Finish>) -> Value {
    json!({
        "id": meta.id,
        "object": "text_completion",
        "created": meta.created,
        "model": meta.model,
        "choices": [{ "index": 0, "text": text, "finish_reason": finish.map(Finish::as_str), "logprobs": null }],
    })
}

/// The last chunk of a stream that asked for `include_usage`: no choices, the usage (and the
/// timings, as llama-server adds them).
pub fn usage_chunk(meta: &Meta, object: &str, u: &Usage) -> Value {
    json!({
        "id": meta.id,
        "object": object,
        "created": meta.created,
        "model": meta.model,
        "choices": [],
        "usage": usage(u),
        "timings": timings(u),
    })
}

/// Splits a streamed answer into thinking and answer deltas: each call gets the whole text
/// so far and returns what is new in each part since the last call.
#[derive(Debug, Default)]
pub struct ThinkingSplitter {
    text: String,
    thinking_sent: usize,
    answer_sent: usize,
}

impl ThinkingSplitter {
    /// Adds `piece`; returns (new thinking, new answer).
    pub fn push(&mut self, piece: &str) -> (String, String) {
        self.text.push_str(piece);
        let start = self.text.trim_start();
        if !start.is_empty() && "<think>".starts_with(start) {
            return (String::new(), String::new()); // Maybe the start of a thinking tag.
        }
        let parts = split_thinking(&self.text);
        let thinking = parts.thinking.unwrap_or("");
        let new = |all: &str, sent: &mut usize| match all.get(*sent..) {
            Some(rest) if all.len() >= *sent => {
                *sent = all.len();
                rest.to_string()
            }
            _ => String::new(),
        };
        let t = new(thinking, &mut self.thinking_sent);
        let a = new(parts.answer, &mut self.answer_sent);
        (t, a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinking_streams_apart_from_the_answer() {
        let mut s = ThinkingSplitter::default();
        assert_eq!(s.push("<th"), ("".into(), "".into()));
        assert_eq!(s.push("ink>hm"), ("hm".into(), "".into()));
        assert_eq!(s.push("m</think>"), ("m".into(), "".into()));
        assert_eq!(s.push("\n\nYes"), ("".into(), "Yes".into()));
        assert_eq!(s.push("!"), ("".into(), "!".into()));
        let mut plain = ThinkingSplitter::default();
        assert_eq!(plain.push("Hi"), ("".into(), "Hi".into()));
    }
}
