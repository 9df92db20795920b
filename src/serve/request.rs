//! `/v1/chat/completions` and `/v1/completions` bodies, parsed and checked: every known field
//! of the wrong type or range is a 400 naming it; unknown fields are ignored, as OpenAI's
//! clients send many.

use super::error::ApiError;
use super::fields::{self, Object};
use crate::chat::{Message, Role};
use crate::protocol::SamplingParams;
use serde_json::Value;

/// What the server accepts at most in one request.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_body_bytes: usize,
    pub max_messages: usize,
    /// `max_tokens` is capped here (and at what the context leaves).
    pub max_tokens: usize,
}

/// Most `stop` strings, and bytes in each (OpenAI allows four).
const MAX_STOPS: usize = 4;
const MAX_STOP_BYTES: usize = 256;

/// What to answer: a conversation (chat) or a raw prompt (completions).
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    Chat(Vec<Message>),
    Raw(String),
}

/// A parsed request.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub prompt: Prompt,
    pub stream: bool,
    /// `stream_options.include_usage`: a last chunk with the usage.
    pub include_usage: bool,
    pub sampling: SamplingParams,
    /// As asked; None leaves it to the server's default.
    pub max_tokens: Option<usize>,
    pub stop: Vec<String>,
    pub frequency_penalty: f32,
    pub presence_penalty: f32,
}

/// Parses a body; `chat` selects which endpoint's shape (messages or prompt) it must have.
pub fn parse(
    body: &[u8],
    chat: bool,
    defaults: &SamplingParams,
    limits: &Limits,
) -> Result<Completion, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the body is not valid JSON: {e}")))?;
    let Value::Object(obj) = value else {
        return Err(ApiError::bad_request("the body must be a JSON object"));
    };
    let prompt = if chat {
        Prompt::Chat(messages(&obj, limits.max_messages)?)
    } else {
        Prompt::Raw(raw_prompt(&obj)?)
    };
    if let Some(n) = fields::integer(&obj, "n", 1, 128)? {
        if n != 1 {
            return Err(ApiError::field("n", "only `n` = 1 is supported"));
        }
    }
    let stream = fields::boolean(&obj, "stream")?.unwrap_or(false);
    let include_usage = match fields::object(&obj, "stream_options")? {
        Some(options) => fields::boolean(options, "include_usage")
            .map_err(|_| {
                ApiError::field(
                    "stream_options.include_usage",
                    "`stream_options.include_usage` must be true or false",
                )
            })?
            .unwrap_or(false),
        None => false,
    };
    let max_tokens = match fields::integer(&obj, "max_completion_tokens", 1, i64::MAX)? {
        Some(n) => Some(n),
        None => fields::integer(&obj, "max_tokens", 1, i64::MAX)?,
    };
    let max_tokens = max_tokens.map(|n| (n as u64).min(limits.max_tokens as u64) as usize);
    Ok(Completion {
        prompt,
        stream,
        include_usage,
        sampling: sampling(&obj, defaults)?,
        max_tokens,
        stop: fields::stop_strings(&obj, MAX_STOPS, MAX_STOP_BYTES)?,
        frequency_penalty: fields::number(&obj, "frequency_penalty", -2.0, 2.0)?.unwrap_or(0.0)
            as f32,
        presence_penalty: fields::number(&obj, "presence_penalty", -2.0, 2.0)?.unwrap_or(0.0)
            as f32,
    })
}

/// Sampling fields over the server's defaults.
fn sampling(obj: &Object, defaults: &SamplingParams) -> Result<SamplingParams, ApiError> {
    let f = |name, min, max| fields::number(obj, name, min, max).map(|v| v.map(|v| v as f32));
    let seed = fields::integer(obj, "seed", i64::MIN, i64::MAX)?;
    Ok(SamplingParams {
        temperature: f("temperature", 0.0, 2.0)?.unwrap_or(defaults.temperature),
        top_p: f("top_p", 0.0, 1.0)?.unwrap_or(defaults.top_p),
        min_p: f("min_p", 0.0, 1.0)?.unwrap_or(defaults.min_p),
        repeat_penalty: f("repeat_penalty", 0.0, 10.0)?.unwrap_or(defaults.repeat_penalty),
        top_k: fields::integer(obj, "top_k", 0, 1 << 20)?.map_or(defaults.top_k, |k| k as usize),
        // llama-server's convention: a negative seed asks for a random one.
        seed: match seed {
            Some(s) if s >= 0 => Some(s as u64),
            Some(_) => None,
            None => defaults.seed,
        },
        ..defaults.clone()
    })
}

/// `messages`: a non-empty array of at most `max` {role, content} objects.
fn messages(obj: &Object, max: usize) -> Result<Vec<Message>, ApiError> {
    let Some(Value::Array(items)) = obj.get("messages") else {
        return Err(ApiError::field(
            "messages",
            "`messages` must be an array of {role, content} objects",
        ));
    };
    if items.is_empty() {
        return Err(ApiError::field("messages", "`messages` must not be empty"));
    }
    if items.len() > max {
        return Err(ApiError::field(
            "messages",
            format!(
                "`messages` holds {} messages; at most {max} are accepted",
                items.len()
            ),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, m)| message(i, m))
        .collect()
}

fn message(i: usize, value: &Value) -> Result<Message, ApiError> {
    let field = |what: &str| format!("messages[{i}].{what}");
    let Value::Object(m) = value else {
        return Err(ApiError::field(
            &format!("messages[{i}]"),
            format!("`messages[{i}]` must be an object"),
        ));
    };
    let role = match m.get("role").and_then(Value::as_str) {
        Some("system") | Some("developer") => Role::System,
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        _ => {
            return Err(ApiError::field(
                &field("role"),
                format!("`{}` must be system, user or assistant", field("role")),
            ))
        }
    };
    let content = match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        // An assistant turn that only called tools has no content.
        None | Some(Value::Null) => String::new(),
        // Content parts: only text is understood.
        Some(Value::Array(parts)) => text_parts(parts)
            .ok_or_else(|| ApiError::field(&field("content"), text_only(&field("content"))))?,
        Some(_) => {
            return Err(ApiError::field(
                &field("content"),
                text_only(&field("content")),
            ))
        }
    };
    Ok(Message::new(role, content))
}

fn text_only(field: &str) -> String {
    format!("`{field}` must be a string or an array of text parts")
}

/// The text of `[{type: "text", text}]` parts, joined; None if a part is not text.
fn text_parts(parts: &[Value]) -> Option<String> {
    let mut text = String::new();
    for part in parts {
        if part.get("type")?.as_str()? != "text" {
            return None;
        }
        text.push_str(part.get("text")?.as_str()?);
    }
    Some(text)
}

/// `prompt`: a string, or an array holding one string.
fn raw_prompt(obj: &Object) -> Result<String, ApiError> {
    let bad = || ApiError::field("prompt", "`prompt` must be a string");
    match obj.get("prompt") {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(items)) if items.len() == 1 => {
            items[0].as_str().map(str::to_string).ok_or_else(bad)
        }
        Some(Value::Array(_)) => Err(ApiError::field(
            "prompt",
            "`prompt` may hold one string only",
        )),
        _ => Err(bad()),
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
