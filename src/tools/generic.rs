//! The generic form of tool calling, for chat templates that know no tools (SmolLM2, Gemma 3,
//! Phi-3): the tools are described in the system message, the answer is one JSON object
//! (`{"tool_calls": [...]}` or `{"response": "..."}`, held there by a grammar), and earlier
//! calls and results are written back into the conversation in the same words, as user and
//! assistant turns that every template can render.

use crate::chat::{Message, Role};
use crate::protocol::ToolSet;
use serde_json::{json, Value};

/// The conversation as a template without tools renders it: the tools (when offered)
/// described in the system message, each assistant's calls as the JSON it would have answered,
/// and each run of tool results as one user turn (templates like Gemma's insist that turns
/// alternate).
pub fn conversation(messages: &[Message], tools: Option<&ToolSet>) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len() + 1);
    let (system, rest) = match messages.first() {
        Some(first) if first.role == Role::System => (Some(first), &messages[1..]),
        _ => (None, messages),
    };
    match (system, tools.map(describe)) {
        (Some(system), Some(d)) if !system.content.trim().is_empty() => {
            out.push(Message::system(format!("{}\n\n{d}", system.content)));
        }
        (_, Some(d)) => out.push(Message::system(d)),
        (Some(system), None) => out.push(system.clone()),
        (None, None) => {}
    }
    for m in rest {
        match m.role {
            Role::Assistant if !m.tool_calls.is_empty() => {
                out.push(Message::assistant(calls_json(m)));
            }
            Role::Tool => {
                let result = json!({
                    "tool_response": {
                        "tool_call_id": m.tool_call_id.as_deref().unwrap_or(""),
                        "content": m.content,
                    }
                })
                .to_string();
                match out.last_mut() {
                    // Results of parallel calls go in one turn.
                    Some(last) if last.role == Role::User && last.content.starts_with('{') => {
                        last.content.push('\n');
                        last.content.push_str(&result);
                    }
                    _ => out.push(Message::user(result)),
                }
            }
            _ => out.push(Message::new(m.role, m.content.clone())),
        }
    }
    out
}

/// An assistant's calls, as the JSON object the generic form asks for, written exactly as its
/// grammar makes the model write it (`", "` and `": "` between items, the arguments as the
/// model wrote them): the model's own answer renders back to its own tokens, and the next
/// turn of a tool loop reuses the cache up to the tool's result.
fn calls_json(m: &Message) -> String {
    let calls: Vec<String> = m
        .tool_calls
        .iter()
        .map(|call| {
            let name = Value::from(call.name.as_str()).to_string();
            let arguments = call.arguments.trim();
            let arguments = match serde_json::from_str::<Value>(arguments) {
                Ok(Value::Object(_)) => arguments.to_string(),
                _ => Value::from(arguments).to_string(),
            };
            format!("{{\"name\": {name}, \"arguments\": {arguments}}}")
        })
        .collect();
    format!("{{\"tool_calls\": [{}]}}", calls.join(", "))
}

/// The system message's part about tools: what they are and how to answer.
fn describe(tools: &ToolSet) -> String {
    let list: Vec<String> = tools
        .tools
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "description": t.description.as_deref().unwrap_or(""),
                "parameters": t.parameters,
            })
            .to_string()
        })
        .collect();
    // The same words whatever the request's tool_choice (its grammar does the choosing): a
    // tool loop whose turns choose differently keeps its cached prompt.
    let how = "Answer with a JSON object: to call tools, \
         {\"tool_calls\": [{\"name\": \"<tool name>\", \"arguments\": {<its arguments>}}]}; \
         to answer the user directly, {\"response\": \"<your answer>\"}.";
    format!(
        "You can call these tools:\n{}\n\n{how} A tool's result comes back as \
         {{\"tool_response\": {{...}}}}.",
        list.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::ToolCall;
    use crate::protocol::{Tool, ToolChoice};

    fn weather() -> ToolSet {
        ToolSet {
            tools: vec![Tool {
                name: "get_weather".into(),
                description: Some("The weather in a city".into()),
                parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
            }],
            choice: ToolChoice::Auto,
            parallel: true,
        }
    }

    #[test]
    fn a_tool_loop_becomes_alternating_user_and_assistant_turns() {
        let call = |id: &str, city: &str| ToolCall {
            id: id.into(),
            name: "get_weather".into(),
            arguments: format!("{{\"city\": \"{city}\"}}"),
        };
        let messages = vec![
            Message::system("Be brief."),
            Message::user("Weather in Paris and Oslo?"),
            Message::tool_calls("", vec![call("a", "Paris"), call("b", "Oslo")]),
            Message::tool_result("a", "18 C"),
            Message::tool_result("b", "4 C"),
        ];
        let out = conversation(&messages, Some(&weather()));
        let roles: Vec<Role> = out.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::System, Role::User, Role::Assistant, Role::User]
        );
        assert!(out[0]
            .content
            .starts_with("Be brief.\n\nYou can call these tools:\n{"));
        assert!(out[0].content.contains("\"name\":\"get_weather\""));
        assert_eq!(
            out[2].content,
            r#"{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_weather", "arguments": {"city": "Oslo"}}]}"#
        );
        assert_eq!(out[3].content.lines().count(), 2);
        assert!(out[3].content.contains("\"content\":\"4 C\""));
    }

    #[test]
    fn without_a_system_message_one_is_added() {
        let out = conversation(&[Message::user("Hi")], Some(&weather()));
        assert_eq!(out[0].role, Role::System);
        assert!(out[0].content.contains("{\"response\": "));
        assert_eq!(out[1], Message::user("Hi"));
    }
}
