//! A conversation's message as chat templates read it, in the shape transformers (and
//! llama.cpp) give them.

use crate::chat::Message;
use minijinja::value::Serde;
use minijinja::Value;

/// A message as templates read it, in the shape transformers (and llama.cpp) give them: an
/// assistant's calls as `tool_calls: [{type, function: {name, arguments}, id}]` with the
/// arguments as an object (templates write them with `tojson`; text that is not a JSON object
/// stays text), a tool result with its `tool_call_id`.
pub(super) fn value(m: &Message) -> Value {
    let mut pairs = vec![
        ("role", Value::from(m.role.as_str())),
        ("content", Value::from(m.content.as_str())),
    ];
    if let Some(id) = &m.tool_call_id {
        pairs.push(("tool_call_id", Value::from(id.as_str())));
    }
    if !m.tool_calls.is_empty() {
        let calls: Vec<Value> = m
            .tool_calls
            .iter()
            .map(|call| {
                let arguments = match serde_json::from_str::<serde_json::Value>(&call.arguments) {
                    Ok(object @ serde_json::Value::Object(_)) => Value::from(Serde(object)),
                    _ => Value::from(call.arguments.as_str()),
                };
                Value::from_pairs([
                    ("type", Value::from("function")),
                    (
                        "function",
                        Value::from_pairs([
                            ("name", Value::from(call.name.as_str())),
                            ("arguments", arguments),
                        ]),
                    ),
                    ("id", Value::from(call.id.as_str())),
                ])
            })
            .collect();
        pairs.push(("tool_calls", Value::from(calls)));
    }
    Value::from_pairs(pairs)
}
