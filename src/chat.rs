//! The conversation history, independent of any model or chat template (tool calls and their
//! results included), and the one reading of an answer's `<think>` part (the chat shows it
//! folded, the server sends it apart).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    /// A tool's result, answering one of the assistant's tool calls.
    Tool,
}

impl Role {
    /// The name chat templates expect in `message.role`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// A call the assistant asked for: a function's name and its arguments, JSON text as OpenAI
/// sends it (kept as written, so that the model reads its own call back unchanged).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The id a `tool` message answers (`call_…`; made up when the model gave none).
    pub id: String,
    pub name: String,
    pub arguments: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// The assistant's calls of tools (an assistant message may hold only these).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The call a `tool` message is the result of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
    /// An assistant turn that calls tools (`content` is what it said besides, often nothing).
    pub fn tool_calls(content: impl Into<String>, calls: Vec<ToolCall>) -> Self {
        Self {
            tool_calls: calls,
            ..Self::assistant(content)
        }
    }
    /// The result of the call `id`.
    pub fn tool_result(id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            tool_call_id: Some(id.into()),
            ..Self::new(Role::Tool, content)
        }
    }
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }
}

/// An answer's text split into its `<think>…</think>` part and the answer proper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thinking<'a> {
    pub thinking: Option<&'a str>,
    /// The model is still thinking (no `</think>` yet).
    pub open: bool,
    pub answer: &'a str,
}

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";

/// Splits off the thinking. Handles an opening tag at the start, an unclosed one while
/// streaming, and a closing tag alone (templates that put `<think>` in the prompt).
pub fn split_thinking(content: &str) -> Thinking<'_> {
    let trimmed = content.trim_start();
    if let Some(rest) = trimmed.strip_prefix(THINK_OPEN) {
        let rest = without_channel_name(rest);
        return match rest.find(THINK_CLOSE) {
            Some(end) => Thinking {
                thinking: Some(rest[..end].trim()),
                open: false,
                answer: rest[end + THINK_CLOSE.len()..].trim_start(),
            },
            None => Thinking {
                thinking: Some(rest.trim()),
                open: true,
                answer: "",
            },
        };
    }
    if let Some(end) = content.find(THINK_CLOSE) {
        return Thinking {
            thinking: Some(content[..end].trim()),
            open: false,
            answer: content[end + THINK_CLOSE.len()..].trim_start(),
        };
    }
    Thinking {
        thinking: None,
        open: false,
        answer: content,
    }
}

/// Gemma 4 opens its thought channel with the channel's name, `thought`, on its own line.
fn without_channel_name(thinking: &str) -> &str {
    match thinking.strip_prefix("thought") {
        Some(rest) if rest.is_empty() || rest.starts_with('\n') => rest,
        _ => thinking,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemma4_thought_channel_is_thinking_without_its_name() {
        // The detokenizer shows Gemma 4's channel markers as <think> and </think>.
        let t = split_thinking("<think>thought\nThe user wants 4.</think>It is 4.");
        assert_eq!(t.thinking, Some("The user wants 4."));
        assert_eq!(t.answer, "It is 4.");
        let streaming = split_thinking("<think>thought");
        assert_eq!((streaming.thinking, streaming.open), (Some(""), true));
        let word = split_thinking("<think>thoughtful</think>x");
        assert_eq!(word.thinking, Some("thoughtful"));
    }

    #[test]
    fn thinking_is_split_from_the_answer() {
        let t = split_thinking("<think>\nhmm, 2+2\n</think>\n\nIt is 4.");
        assert_eq!(t.thinking, Some("hmm, 2+2"));
        assert_eq!(t.answer, "It is 4.");
        assert!(!t.open);
    }

    #[test]
    fn unclosed_thinking_is_still_open() {
        let t = split_thinking("<think>let me see");
        assert_eq!(
            (t.thinking, t.open, t.answer),
            (Some("let me see"), true, "")
        );
    }

    #[test]
    fn a_closing_tag_alone_ends_thinking_that_the_prompt_opened() {
        let t = split_thinking("pondering</think>Answer");
        assert_eq!((t.thinking, t.answer), (Some("pondering"), "Answer"));
    }

    #[test]
    fn text_without_tags_is_all_answer() {
        assert_eq!(split_thinking("plain").answer, "plain");
        assert_eq!(split_thinking("plain").thinking, None);
    }
}
