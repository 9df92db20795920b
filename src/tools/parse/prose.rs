//! An answer's text as a person reads it while it streams: thinking and prose pass as they
//! come, the text of tool calls is held back (the calls arrive whole at the end, read by
//! [`super::parse`]). What the chat and `taper ask` show of an answer that may call tools;
//! for taper's generic syntax it is also what turns `{"response": "…"}` back into prose.

use super::{marker_prefix_len, CallStream, StreamDelta};
use crate::tools::ToolFormat;

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";

pub struct ProseStream {
    text: String,
    /// Bytes of a leading thinking part sent as they are.
    thinking_sent: usize,
    /// The thinking part (if any) is over: the rest goes through `calls`.
    in_answer: bool,
    calls: CallStream,
}

impl ProseStream {
    pub fn new(format: ToolFormat) -> Self {
        Self {
            text: String::new(),
            thinking_sent: 0,
            in_answer: false,
            calls: CallStream::new(format),
        }
    }

    /// The next piece of the answer; the text to show now.
    pub fn push(&mut self, piece: &str) -> String {
        if self.in_answer {
            return prose(self.calls.push(piece));
        }
        self.text.push_str(piece);
        let trimmed = self.text.trim_start();
        if trimmed.is_empty()
            || (trimmed.len() < THINK_OPEN.len() && THINK_OPEN.starts_with(trimmed))
        {
            return String::new();
        }
        if !trimmed.starts_with(THINK_OPEN) {
            self.in_answer = true;
            let all = std::mem::take(&mut self.text);
            return prose(self.calls.push(&all));
        }
        // Inside thinking: sent as is, up to its end.
        let (upto, end) = match self.text.find(THINK_CLOSE) {
            Some(at) => (at + THINK_CLOSE.len(), true),
            None => (
                self.text.len() - marker_prefix_len(&self.text, THINK_CLOSE),
                false,
            ),
        };
        let mut out = self.text[self.thinking_sent..upto].to_string();
        self.thinking_sent = upto;
        if end {
            self.in_answer = true;
            let rest = self.text[upto..].to_string();
            out.push_str(&prose(self.calls.push(&rest)));
        }
        out
    }

    /// The answer has ended: what was held back that is prose.
    pub fn finish(self) -> String {
        match self.in_answer {
            true => prose(self.calls.finish()),
            // It never left its thinking part (or never began): what is left is as it stands.
            false => self.text[self.thinking_sent..].to_string(),
        }
    }
}

fn prose(deltas: Vec<StreamDelta>) -> String {
    deltas
        .into_iter()
        .filter_map(|d| match d {
            StreamDelta::Content(text) => Some(text),
            StreamDelta::CallStart { .. } | StreamDelta::Arguments { .. } => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(format: ToolFormat, text: &str) -> String {
        let mut stream = ProseStream::new(format);
        let mut out: String = text.chars().map(|c| stream.push(&c.to_string())).collect();
        out.push_str(&stream.finish());
        out
    }

    #[test]
    fn calls_are_held_back_and_prose_and_thinking_pass() {
        let text = "<think>\nhm</think>\n\nLet me check.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>";
        assert_eq!(
            shown(ToolFormat::Hermes, text),
            "<think>\nhm</think>\n\nLet me check."
        );
    }

    #[test]
    fn a_generic_response_is_its_text_and_a_generic_call_is_nothing() {
        assert_eq!(
            shown(ToolFormat::Generic, "{\"response\": \"It is 4.\"}"),
            "It is 4."
        );
        let call = "{\"tool_calls\": [{\"name\": \"add\", \"arguments\": {\"a\": 2}}]}";
        assert_eq!(shown(ToolFormat::Generic, call), "");
        assert_eq!(shown(ToolFormat::Generic, "plain words"), "plain words");
    }
}
