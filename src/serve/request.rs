//! `/v1/chat/completions` and `/v1/completions` bodies, parsed and checked: every known field
//! of the wrong type or range is a 400 naming it; unknown fields are ignored, as OpenAI's
//! clients send many. Types are checked by serde (the field's path, e.g.
//! `messages[1].content`, from serde_path_to_error), ranges and sizes here afterwards.

use super::error::ApiError;
use super::fields::{Content, Strings, Whole};
use super::tools::{self, RequestTool, RequestToolCall};
use crate::chat::{Message, Role};
use crate::protocol::sampling as ranges;
use crate::protocol::{Constraint, Range, SamplingParams, ToolSet};
use serde::Deserialize;
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
    /// `model`: which of the served models answers (None: the first).
    pub model: Option<String>,
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
    /// What the answer must match (`response_format`, or llama-server's `grammar` and
    /// `json_schema`), with the field that asked for it.
    pub constraint: Option<(&'static str, Constraint)>,
    /// The tools the model may call (chat only).
    pub tools: Option<ToolSet>,
}

/// The fields read, each absent or null when not given. Both endpoints' prompt fields are here:
/// the one the endpoint does not use is only type-checked.
#[derive(Deserialize)]
struct Body {
    model: Option<String>,
    messages: Option<Vec<RequestMessage>>,
    prompt: Option<Strings>,
    n: Option<Whole>,
    stream: Option<bool>,
    stream_options: Option<StreamOptions>,
    max_completion_tokens: Option<Whole>,
    max_tokens: Option<Whole>,
    stop: Option<Strings>,
    frequency_penalty: Option<f64>,
    presence_penalty: Option<f64>,
    temperature: Option<f64>,
    top_p: Option<f64>,
    min_p: Option<f64>,
    repeat_penalty: Option<f64>,
    top_k: Option<Whole>,
    seed: Option<Whole>,
    response_format: Option<ResponseFormat>,
    /// llama-server's extension: a grammar (here in llguidance's Lark syntax).
    grammar: Option<String>,
    /// llama-server's extension: a JSON Schema, without `response_format` around it.
    json_schema: Option<Value>,
    tools: Option<Vec<RequestTool>>,
    /// "auto", "none", "required" or a named function: read by [`tools::tool_set`].
    tool_choice: Option<Value>,
    parallel_tool_calls: Option<bool>,
}

/// OpenAI's `response_format`.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[serde(expecting = "an object whose `type` is text, json_object or json_schema")]
enum ResponseFormat {
    Text,
    JsonObject,
    JsonSchema { json_schema: JsonSchemaFormat },
}

#[derive(Deserialize)]
#[serde(expecting = "a {name, schema, strict} object")]
struct JsonSchemaFormat {
    /// Absent: any JSON object, as `json_object`.
    schema: Option<Value>,
}

#[derive(Deserialize)]
#[serde(expecting = "an object")]
struct StreamOptions {
    include_usage: Option<bool>,
}

/// One of `messages`: a role and its content, an assistant's tool calls, a tool result's call.
#[derive(Deserialize)]
#[serde(expecting = "a {role, content} object")]
struct RequestMessage {
    role: RequestRole,
    /// Absent or null in an assistant turn that only called tools.
    content: Option<Content>,
    tool_calls: Option<Vec<RequestToolCall>>,
    tool_call_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum RequestRole {
    System,
    /// OpenAI's newer name for the system prompt (a variant of its own, not an alias, so that
    /// the error for an unknown role lists it).
    Developer,
    User,
    Assistant,
    Tool,
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
    if !value.is_object() {
        return Err(ApiError::bad_request("the body must be a JSON object"));
    }
    // From a Value, serde_json's errors carry no line and column: the path says where.
    let body: Body = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        ApiError::field(&path, format!("`{path}`: {}", e.inner()))
    })?;
    let prompt = if chat {
        Prompt::Chat(messages(body.messages, limits.max_messages)?)
    } else {
        Prompt::Raw(raw_prompt(body.prompt)?)
    };
    if let Some(n) = whole("n", body.n, 1, 128)? {
        if n != 1 {
            return Err(ApiError::field("n", "only `n` = 1 is supported"));
        }
    }
    let max_tokens = match body.max_completion_tokens {
        Some(n) => whole("max_completion_tokens", Some(n), 1, i64::MAX)?,
        None => whole("max_tokens", body.max_tokens, 1, i64::MAX)?,
    };
    let max_tokens = max_tokens.map(|n| (n as u64).min(limits.max_tokens as u64) as usize);
    let seed = whole("seed", body.seed, i64::MIN, i64::MAX)?;
    let constraint = constraint(body.response_format, body.grammar, body.json_schema)?;
    let tools = tools::tool_set(body.tools, body.tool_choice, body.parallel_tool_calls)?;
    if let (Some(_), Some((field, _))) = (&tools, &constraint) {
        return Err(ApiError::field(
            field,
            format!("`tools` and `{field}` both constrain the answer; give one"),
        ));
    }
    if let Prompt::Chat(messages) = &prompt {
        tools::check_results(messages)?;
    }
    let sampling = SamplingParams {
        temperature: number(ranges::TEMPERATURE, body.temperature)?.unwrap_or(defaults.temperature),
        top_p: number(ranges::TOP_P, body.top_p)?.unwrap_or(defaults.top_p),
        min_p: number(ranges::MIN_P, body.min_p)?.unwrap_or(defaults.min_p),
        repeat_penalty: number(ranges::REPEAT_PENALTY, body.repeat_penalty)?
            .unwrap_or(defaults.repeat_penalty),
        top_k: whole("top_k", body.top_k, 0, 1 << 20)?.map_or(defaults.top_k, |k| k as usize),
        // llama-server's convention: a negative seed asks for a random one.
        seed: match seed {
            Some(s) if s >= 0 => Some(s as u64),
            Some(_) => None,
            None => defaults.seed,
        },
        ..defaults.clone()
    };
    Ok(Completion {
        model: body.model.filter(|m| !m.is_empty()),
        prompt,
        stream: body.stream.unwrap_or(false),
        include_usage: body
            .stream_options
            .and_then(|o| o.include_usage)
            .unwrap_or(false),
        sampling,
        max_tokens,
        stop: stop_strings(body.stop.unwrap_or_default())?,
        frequency_penalty: number(ranges::FREQUENCY_PENALTY, body.frequency_penalty)?
            .unwrap_or(0.0),
        presence_penalty: number(ranges::PRESENCE_PENALTY, body.presence_penalty)?.unwrap_or(0.0),
        constraint,
        tools: if chat { tools } else { None },
    })
}

/// The one constraint a request may ask for, and which field asked.
fn constraint(
    format: Option<ResponseFormat>,
    grammar: Option<String>,
    json_schema: Option<Value>,
) -> Result<Option<(&'static str, Constraint)>, ApiError> {
    let format = match format {
        None | Some(ResponseFormat::Text) => None,
        Some(ResponseFormat::JsonObject) => Some(Constraint::JsonObject),
        Some(ResponseFormat::JsonSchema { json_schema }) => Some(match json_schema.schema {
            Some(schema) => Constraint::JsonSchema(schema),
            None => Constraint::JsonObject,
        }),
    };
    let asked = [
        format.map(|c| ("response_format", c)),
        grammar.map(|g| ("grammar", Constraint::Lark(g))),
        json_schema.map(|s| ("json_schema", Constraint::JsonSchema(s))),
    ];
    let mut asked = asked.into_iter().flatten();
    let first = asked.next();
    if let (Some((a, _)), Some((b, _))) = (&first, asked.next()) {
        return Err(ApiError::field(
            b,
            format!("`{a}` and `{b}` both constrain the answer; give one"),
        ));
    }
    Ok(first)
}

/// A sampling setting, if given and in its range (the one every front end checks).
fn number(range: Range, value: Option<f64>) -> Result<Option<f32>, ApiError> {
    value
        .map(|n| range.check(n).map(|n| n as f32))
        .transpose()
        .map_err(|e| ApiError::field(range.name, e))
}

/// A whole number given for `name`, if in `min..=max`.
fn whole(name: &str, value: Option<Whole>, min: i64, max: i64) -> Result<Option<i64>, ApiError> {
    match value {
        Some(Whole(n)) if !(min..=max).contains(&n) => {
            // i64's own limits are no bound a person wrote.
            let range = match (min, max) {
                (min, i64::MAX) => format!("at least {min}"),
                (min, max) => format!("between {min} and {max}"),
            };
            Err(ApiError::field(
                name,
                format!("`{name}` must be {range}, not {n}"),
            ))
        }
        n => Ok(n.map(|Whole(n)| n)),
    }
}

/// `stop`: at most [`MAX_STOPS`] strings of at most [`MAX_STOP_BYTES`]; empty ones ignored.
fn stop_strings(Strings(strings): Strings) -> Result<Vec<String>, ApiError> {
    if strings.len() > MAX_STOPS {
        return Err(ApiError::field(
            "stop",
            format!("`stop` may hold at most {MAX_STOPS} strings"),
        ));
    }
    if strings.iter().any(|s| s.len() > MAX_STOP_BYTES) {
        return Err(ApiError::field(
            "stop",
            format!("each `stop` string may be at most {MAX_STOP_BYTES} bytes"),
        ));
    }
    Ok(strings.into_iter().filter(|s| !s.is_empty()).collect())
}

/// `prompt`: a string, or an array holding one string.
fn raw_prompt(prompt: Option<Strings>) -> Result<String, ApiError> {
    match prompt.map(|Strings(s)| <[String; 1]>::try_from(s)) {
        Some(Ok([prompt])) => Ok(prompt),
        Some(Err(_)) => Err(ApiError::field(
            "prompt",
            "`prompt` may hold one string only",
        )),
        None => Err(ApiError::field("prompt", "`prompt` must be a string")),
    }
}

/// `messages`: a non-empty array of at most `max` {role, content} objects.
fn messages(items: Option<Vec<RequestMessage>>, max: usize) -> Result<Vec<Message>, ApiError> {
    let Some(items) = items else {
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
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            let role = match m.role {
                RequestRole::System | RequestRole::Developer => Role::System,
                RequestRole::User => Role::User,
                RequestRole::Assistant => Role::Assistant,
                RequestRole::Tool => Role::Tool,
            };
            let mut message = Message::new(role, m.content.map(|c| c.0).unwrap_or_default());
            if let Some(calls) = m.tool_calls.filter(|_| role == Role::Assistant) {
                message.tool_calls = tools::calls(i, calls)?;
            }
            message.tool_call_id = m.tool_call_id.filter(|_| role == Role::Tool);
            Ok(message)
        })
        .collect()
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
