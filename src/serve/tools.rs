//! The tool fields of a chat request, read and checked: `tools`, `tool_choice`,
//! `parallel_tool_calls`, and the assistant calls and tool results in `messages`. Every
//! mistake is a 400 naming the field: a duplicate or badly named function, a forced choice of
//! a function not offered, a tool result answering no call.

use super::error::ApiError;
use crate::chat::{Message, Role, ToolCall};
use crate::protocol::{Tool, ToolChoice, ToolSet};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashSet;

/// Most tools one request may offer (OpenAI allows 128).
const MAX_TOOLS: usize = 128;
/// A function's name: what OpenAI allows, and safe to write into a grammar as a literal.
const MAX_NAME_BYTES: usize = 64;

/// One of `tools`.
#[derive(Deserialize)]
#[serde(expecting = "a {type: \"function\", function: {name, description, parameters}} object")]
pub struct RequestTool {
    #[serde(rename = "type")]
    _kind: FunctionKind,
    function: RequestFunction,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum FunctionKind {
    Function,
}

#[derive(Deserialize)]
#[serde(expecting = "a {name, description, parameters} object")]
struct RequestFunction {
    name: String,
    description: Option<String>,
    parameters: Option<Value>,
}

/// One of an assistant message's `tool_calls`.
#[derive(Deserialize)]
#[serde(expecting = "a {id, type: \"function\", function: {name, arguments}} object")]
pub struct RequestToolCall {
    id: Option<String>,
    function: RequestCallFunction,
}

#[derive(Deserialize)]
#[serde(expecting = "a {name, arguments} object")]
struct RequestCallFunction {
    name: String,
    /// JSON text, as OpenAI sends it; an object is taken too.
    arguments: Option<Value>,
}

/// The request's tools; None when it offers none.
pub fn tool_set(
    tools: Option<Vec<RequestTool>>,
    choice: Option<Value>,
    parallel: Option<bool>,
) -> Result<Option<ToolSet>, ApiError> {
    let tools = tools.unwrap_or_default();
    if tools.len() > MAX_TOOLS {
        return Err(ApiError::field(
            "tools",
            format!(
                "`tools` holds {} tools; at most {MAX_TOOLS} are accepted",
                tools.len()
            ),
        ));
    }
    let mut seen = HashSet::new();
    let mut list = Vec::with_capacity(tools.len());
    for (i, tool) in tools.into_iter().enumerate() {
        let field = format!("tools[{i}].function.name");
        let f = tool.function;
        check_name(&field, &f.name)?;
        if !seen.insert(f.name.clone()) {
            return Err(ApiError::field(
                &field,
                format!("`{field}`: the function `{}` is offered twice", f.name),
            ));
        }
        let parameters = match f.parameters {
            None | Some(Value::Null) => serde_json::json!({ "type": "object", "properties": {} }),
            Some(p @ Value::Object(_)) => p,
            Some(_) => {
                let field = format!("tools[{i}].function.parameters");
                return Err(ApiError::field(
                    &field,
                    format!("`{field}` must be a JSON Schema object"),
                ));
            }
        };
        list.push(Tool {
            name: f.name,
            description: f.description,
            parameters,
        });
    }
    let choice = tool_choice(choice, &list)?;
    if list.is_empty() {
        return Ok(None);
    }
    Ok(Some(ToolSet {
        tools: list,
        choice,
        parallel: parallel.unwrap_or(true),
    }))
}

/// `tool_choice`: "auto", "none", "required", or `{type: "function", function: {name}}` of a
/// function offered.
fn tool_choice(choice: Option<Value>, tools: &[Tool]) -> Result<ToolChoice, ApiError> {
    let bad = || {
        ApiError::field(
            "tool_choice",
            "`tool_choice` must be \"auto\", \"none\", \"required\" or \
             {\"type\": \"function\", \"function\": {\"name\": …}}",
        )
    };
    let choice = match choice {
        None | Some(Value::Null) => return Ok(ToolChoice::Auto),
        Some(Value::String(s)) => match s.as_str() {
            "auto" => ToolChoice::Auto,
            "none" => ToolChoice::None,
            "required" => ToolChoice::Required,
            _ => return Err(bad()),
        },
        Some(Value::Object(o)) => {
            let name = o
                .get("function")
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .ok_or_else(bad)?;
            ToolChoice::Named(name.to_string())
        }
        Some(_) => return Err(bad()),
    };
    match &choice {
        ToolChoice::Named(name) if !tools.iter().any(|t| &t.name == name) => Err(ApiError::field(
            "tool_choice",
            format!("`tool_choice` names the function `{name}`, which `tools` does not offer"),
        )),
        ToolChoice::Required | ToolChoice::Named(_) if tools.is_empty() => Err(ApiError::field(
            "tool_choice",
            "`tool_choice` asks for a tool call, but `tools` offers none",
        )),
        _ => Ok(choice),
    }
}

fn check_name(field: &str, name: &str) -> Result<(), ApiError> {
    let fine = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.';
    if name.is_empty() || name.len() > MAX_NAME_BYTES || !name.chars().all(fine) {
        return Err(ApiError::field(
            field,
            format!(
                "`{field}`: a function's name is 1 to {MAX_NAME_BYTES} letters, digits, \
                 `_`, `-` or `.`, not {name:?}"
            ),
        ));
    }
    Ok(())
}

/// An assistant message's calls, as the conversation keeps them. A call without an id gets
/// one made from its place, so that a result can still answer it.
pub fn calls(index: usize, calls: Vec<RequestToolCall>) -> Result<Vec<ToolCall>, ApiError> {
    calls
        .into_iter()
        .enumerate()
        .map(|(j, call)| {
            let field = format!("messages[{index}].tool_calls[{j}].function.arguments");
            let arguments = match call.function.arguments {
                None | Some(Value::Null) => "{}".to_string(),
                Some(Value::String(s)) => s,
                Some(v @ Value::Object(_)) => v.to_string(),
                Some(_) => {
                    return Err(ApiError::field(
                        &field,
                        format!("`{field}` must be a JSON object or its text"),
                    ))
                }
            };
            Ok(ToolCall {
                id: call.id.unwrap_or_else(|| format!("call_{index}_{j}")),
                name: call.function.name,
                arguments,
            })
        })
        .collect()
}

/// Every tool result answers a call made earlier in the conversation.
pub fn check_results(messages: &[Message]) -> Result<(), ApiError> {
    let mut made = HashSet::new();
    for (i, m) in messages.iter().enumerate() {
        made.extend(m.tool_calls.iter().map(|c| c.id.as_str()));
        if m.role != Role::Tool {
            continue;
        }
        match m.tool_call_id.as_deref() {
            Some(id) if made.contains(id) => {}
            Some(id) => {
                let field = format!("messages[{i}].tool_call_id");
                return Err(ApiError::field(
                    &field,
                    format!("`{field}`: no earlier assistant message made a call with id {id:?}"),
                ));
            }
            None => {
                let field = format!("messages[{i}].tool_call_id");
                return Err(ApiError::field(
                    &field,
                    format!("`{field}`: a tool message must say which call it answers"),
                ));
            }
        }
    }
    Ok(())
}
