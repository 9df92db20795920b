//! The body of `POST /v1/chat/completions`: the conversation as OpenAI messages (the server
//! applies its own chat template), the sampling settings under the names these servers read,
//! streaming with usage, and the tools and answer format passed through.

use crate::chat::{Message, Role};
use crate::protocol::{Constraint, SamplingParams, ToolChoice, ToolSet};
use anyhow::{bail, Result};
use serde_json::{json, Map, Value};

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";

/// An earlier answer as the server should see it: without the thinking taper showed (the
/// way thinking models' own templates leave it out of later turns).
fn without_thinking(content: &str) -> &str {
    match content.find(THINK_CLOSE) {
        Some(end) if content.trim_start().starts_with(THINK_OPEN) => {
            content[end + THINK_CLOSE.len()..].trim_start()
        }
        _ => content,
    }
}

fn messages(conversation: &[Message]) -> Vec<Value> {
    conversation
        .iter()
        .filter(|m| !(m.role == Role::System && m.content.trim().is_empty()))
        .map(|m| {
            let content = match m.role {
                Role::Assistant => without_thinking(&m.content),
                _ => m.content.as_str(),
            };
            let mut message = json!({ "role": m.role.as_str(), "content": content });
            if !m.tool_calls.is_empty() {
                let calls: Vec<Value> = m
                    .tool_calls
                    .iter()
                    .map(|c| {
                        json!({
                            "id": c.id,
                            "type": "function",
                            "function": { "name": c.name, "arguments": c.arguments },
                        })
                    })
                    .collect();
                message["tool_calls"] = Value::Array(calls);
            }
            if let Some(id) = &m.tool_call_id {
                message["tool_call_id"] = json!(id);
            }
            message
        })
        .collect()
}

/// The request's tools, as OpenAI's `tools`, `tool_choice` and `parallel_tool_calls`.
pub fn add_tools(body: &mut Value, tools: Option<&ToolSet>) {
    let Some(tools) = tools.filter(|t| !t.tools.is_empty()) else {
        return;
    };
    body["tools"] = Value::Array(tools.as_openai());
    body["tool_choice"] = match &tools.choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Named(name) => json!({ "type": "function", "function": { "name": name } }),
    };
    body["parallel_tool_calls"] = json!(tools.parallel);
}

/// The answer's format as OpenAI's `response_format`; grammars and regular expressions are in
/// llguidance's syntax, which only local models read.
pub fn add_constraint(body: &mut Value, constraint: Option<&Constraint>) -> Result<()> {
    body["response_format"] = match constraint {
        None => return Ok(()),
        Some(Constraint::JsonObject) => json!({ "type": "json_object" }),
        Some(Constraint::JsonSchema(schema)) => json!({
            "type": "json_schema",
            "json_schema": { "name": "answer", "schema": schema, "strict": true },
        }),
        Some(c @ (Constraint::Lark(_) | Constraint::Regex(_) | Constraint::Triggered { .. })) => {
            bail!(
                "{} is in llguidance's syntax, which only local models read; a remote \
                 model takes a JSON schema or the JSON object format",
                c.describe()
            )
        }
    };
    Ok(())
}

/// The request body. Every sampler is sent, the ones switched off too (top-k 0, top-p 1,
/// min-p 0, repeat penalty 1, which every one of these servers reads as off): left out, a
/// server would apply its own default instead (taper serve's repeat penalty 1.1,
/// llama-server's top-k 40), and the answer would not be the one the settings ask for. The
/// repeat penalty goes under llama-server's name and vLLM/SGLang's (each ignores the other's).
pub fn body(model: &str, conversation: &[Message], s: &SamplingParams, max_tokens: usize) -> Value {
    let mut b = Map::new();
    b.insert("model".into(), json!(model));
    b.insert("messages".into(), Value::Array(messages(conversation)));
    b.insert("stream".into(), json!(true));
    b.insert("stream_options".into(), json!({ "include_usage": true }));
    b.insert("max_tokens".into(), json!(max_tokens));
    b.insert("temperature".into(), json!(s.temperature.max(0.0)));
    b.insert("top_p".into(), json!(s.top_p));
    b.insert("top_k".into(), json!(s.top_k));
    b.insert("min_p".into(), json!(s.min_p));
    b.insert("repeat_penalty".into(), json!(s.repeat_penalty));
    b.insert("repetition_penalty".into(), json!(s.repeat_penalty));
    if let Some(seed) = s.seed {
        b.insert("seed".into(), json!(seed));
    }
    Value::Object(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_conversation_goes_as_openai_messages_without_old_thinking() {
        let conversation = [
            Message::system(""),
            Message::user("hi"),
            Message::assistant("<think>hmm</think>\n\nHello!"),
            Message::user("more"),
        ];
        let b = body("m", &conversation, &SamplingParams::default(), 64);
        let m = b["messages"].as_array().unwrap();
        assert_eq!(m.len(), 3, "the empty system prompt is left out");
        assert_eq!(m[1], json!({"role": "assistant", "content": "Hello!"}));
        assert_eq!(
            (b["stream"].clone(), b["max_tokens"].clone()),
            (json!(true), json!(64))
        );
        assert_eq!(b["stream_options"]["include_usage"], json!(true));
    }

    #[test]
    fn sampling_settings_map_to_the_request() {
        let s = SamplingParams {
            temperature: 0.0,
            top_k: 0,
            top_p: 1.0,
            min_p: 0.0,
            repeat_penalty: 1.0,
            seed: Some(7),
            ..SamplingParams::default()
        };
        let b = body("m", &[Message::user("x")], &s, 8);
        assert_eq!(
            (b["temperature"].clone(), b["seed"].clone()),
            (json!(0.0), json!(7))
        );
        // Off is said, not left to the server's default.
        assert_eq!(
            ["top_k", "top_p", "min_p", "repeat_penalty"].map(|k| b[k].clone()),
            [json!(0), json!(1.0), json!(0.0), json!(1.0)]
        );
        let b = body("m", &[Message::user("x")], &SamplingParams::default(), 8);
        assert_eq!(
            (b["top_k"].clone(), b["repetition_penalty"].clone()),
            (json!(40), json!(1.1f32))
        );
    }
}
