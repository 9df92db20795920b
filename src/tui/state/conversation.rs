//! The conversation as the TUI keeps it: the model-independent messages (`crate::chat`) plus
//! what only the screen needs to know about each answer (which model wrote it, whether it was
//! stopped or failed, its usage) and each tool result (which tool, whether it failed), and
//! notices (model switches, errors) that are never sent.

use crate::chat::{Message, Role};
use crate::protocol::Usage;

/// How an answer ended, or that it has not yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerStatus {
    Streaming,
    Done,
    /// The user stopped it; the partial text stays.
    Stopped,
    Failed,
}

/// What the TUI knows about one assistant message.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The model that wrote it (its file name), shown as the answer's label.
    pub model: String,
    pub turn_id: u64,
    pub status: AnswerStatus,
    pub usage: Option<Usage>,
    pub error: Option<String>,
    /// What it was written with; none for answers saved before taper kept it.
    pub settings: Option<Box<TurnSettings>>,
}

/// The settings an answer was written with: each answer keeps its own, so the saved file and
/// the export tell what produced it, whatever the settings are now.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnSettings {
    pub system_prompt: String,
    pub sampling: crate::protocol::SamplingParams,
    pub max_tokens: usize,
}

/// What the screen shows of a tool's result besides the text the model reads.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    /// The tool, as the model named it.
    pub name: String,
    /// The call failed, timed out or was refused: the text says why.
    pub is_error: bool,
    /// What was cut from the result or left out, one line.
    pub note: Option<String>,
    /// How long the call took; none for a call that never ran or a restored one.
    pub elapsed_s: Option<f64>,
}

impl ToolOutcome {
    /// A call that never ran (refused, stopped, unknown): its text says why.
    pub fn failed(name: &str) -> Self {
        Self {
            name: name.to_string(),
            is_error: true,
            note: None,
            elapsed_s: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeLevel {
    Info,
    Error,
}

// Nearly every entry is a message: boxing it to spare the few notices some bytes would cost
// every message an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum EntryBody {
    /// A user or assistant message; assistant messages carry their [`Answer`].
    Message {
        message: Message,
        answer: Option<Answer>,
    },
    /// A tool's result: a `tool` message answering one of the previous answer's calls.
    ToolResult {
        message: Message,
        outcome: ToolOutcome,
    },
    /// Shown in the chat, never sent to a model.
    Notice { level: NoticeLevel, text: String },
}

/// One block of the chat pane. `id` is stable for the entry's life and `rev` changes with its
/// content, so the renderer can cache an entry's wrapped lines.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: u64,
    pub rev: u64,
    pub body: EntryBody,
}

/// The conversation: the path on screen, and the branches off it (`branches.rs`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation {
    /// The path from the start to the newest message shown: what the model reads.
    pub entries: Vec<Entry>,
    next_id: u64,
    /// Where the tree forks, and the branches not on the path.
    pub(super) forks: super::branches::Forks,
}

impl Conversation {
    fn push(&mut self, body: EntryBody) {
        self.next_id += 1;
        self.entries.push(Entry {
            id: self.next_id,
            rev: 0,
            body,
        });
    }

    pub fn push_user(&mut self, text: impl Into<String>) {
        self.push(EntryBody::Message {
            message: Message::user(text),
            answer: None,
        });
    }

    /// Starts an (empty, streaming) answer for `turn_id`.
    pub fn push_answer(&mut self, model: impl Into<String>, turn_id: u64) {
        self.push(EntryBody::Message {
            message: Message::assistant(""),
            answer: Some(Answer {
                model: model.into(),
                turn_id,
                status: AnswerStatus::Streaming,
                usage: None,
                error: None,
                settings: None,
            }),
        });
    }

    /// The result of call `call_id`, as the model will read it.
    pub fn push_tool_result(
        &mut self,
        call_id: &str,
        text: impl Into<String>,
        outcome: ToolOutcome,
    ) {
        let mut message = Message::new(Role::Tool, text);
        message.tool_call_id = Some(call_id.to_string());
        self.push(EntryBody::ToolResult { message, outcome });
    }

    /// Whether call `call_id` has its result.
    pub fn has_result(&self, call_id: &str) -> bool {
        self.entries.iter().any(|e| {
            matches!(&e.body, EntryBody::ToolResult { message, .. }
                if message.tool_call_id.as_deref() == Some(call_id))
        })
    }

    pub fn push_notice(&mut self, level: NoticeLevel, text: impl Into<String>) {
        self.push(EntryBody::Notice {
            level,
            text: text.into(),
        });
    }

    /// Forgets every message and branch (entry ids go on counting).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.forks.clear();
    }

    /// Restores a saved tree: the path and the forks (entry ids from the file, so the next
    /// new entry gets an id after them).
    pub fn restore(&mut self, entries: Vec<Entry>, forks: super::branches::Forks) {
        let stashed = forks.values().flat_map(|f| f.stashed.values().flatten());
        let top = entries
            .iter()
            .chain(stashed)
            .map(|e| e.id)
            .max()
            .unwrap_or(0);
        self.next_id = self.next_id.max(top);
        self.entries = entries;
        self.forks = forks;
    }

    /// The answer of `turn_id` with its message, to change it (bumps the entry's revision).
    pub fn answer_mut(&mut self, turn_id: u64) -> Option<(&mut Message, &mut Answer)> {
        let entry = self.entries.iter_mut().rev().find(|e| {
            matches!(&e.body, EntryBody::Message { answer: Some(a), .. } if a.turn_id == turn_id)
        })?;
        entry.rev += 1;
        match &mut entry.body {
            EntryBody::Message {
                message,
                answer: Some(answer),
            } => Some((message, answer)),
            _ => None,
        }
    }

    pub fn answer(&self, turn_id: u64) -> Option<(&Message, &Answer)> {
        self.entries.iter().rev().find_map(|e| match &e.body {
            EntryBody::Message {
                message,
                answer: Some(a),
            } if a.turn_id == turn_id => Some((message, a)),
            _ => None,
        })
    }

    /// Whether any user or assistant message has been written.
    pub fn has_messages(&self) -> bool {
        self.entries
            .iter()
            .any(|e| matches!(e.body, EntryBody::Message { .. }))
    }

    /// The last answer's calls that have no result yet, in order.
    pub fn unanswered_calls(&self) -> Vec<crate::chat::ToolCall> {
        let Some(message) = self.entries.iter().rev().find_map(|e| match &e.body {
            EntryBody::Message { message, .. } => Some(message),
            _ => None,
        }) else {
            return Vec::new();
        };
        message
            .tool_calls
            .iter()
            .filter(|call| !self.has_result(&call.id))
            .cloned()
            .collect()
    }

    /// The history to send: the system prompt (when not empty), then every exchange. An
    /// answer that has no text (failed, or stopped before its first token) is left out with
    /// its question, because many chat templates (Gemma's, Mistral's) insist that user and
    /// assistant turns alternate.
    pub fn messages(&self, system_prompt: &str) -> Vec<Message> {
        let mut out = Vec::new();
        if !system_prompt.trim().is_empty() {
            out.push(Message::system(system_prompt));
        }
        for entry in &self.entries {
            let (message, answer) = match &entry.body {
                EntryBody::Message { message, answer } => (message, answer),
                EntryBody::ToolResult { message, .. } => {
                    out.push(message.clone());
                    continue;
                }
                EntryBody::Notice { .. } => continue,
            };
            let unanswered = answer.is_some()
                && message.content.trim().is_empty()
                && message.tool_calls.is_empty();
            if unanswered {
                if out.last().is_some_and(|m: &Message| m.role == Role::User) {
                    out.pop();
                }
                continue;
            }
            out.push(message.clone());
        }
        out
    }

    /// The turn id of the path's last answer when it can go on: cut short by a limit or
    /// stopped with Esc, with text and no tool calls.
    pub fn continuable_answer(&self) -> Option<u64> {
        let last = self
            .entries
            .iter()
            .rev()
            .find(|e| !matches!(e.body, EntryBody::Notice { .. }))?;
        let EntryBody::Message {
            message,
            answer: Some(answer),
        } = &last.body
        else {
            return None;
        };
        let cut = answer
            .usage
            .as_ref()
            .and_then(|u| u.stop?.cut_short(u.generated_tokens))
            .is_some();
        let stopped = answer.status == AnswerStatus::Stopped;
        let goes_on = (cut && answer.status == AnswerStatus::Done) || stopped;
        (goes_on && !message.content.is_empty() && message.tool_calls.is_empty())
            .then_some(answer.turn_id)
    }

    /// The index of the last user message.
    pub fn last_question(&self) -> Option<usize> {
        self.entries
            .len()
            .checked_sub(1)
            .and_then(|at| self.question_of(at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unanswered_questions_are_left_out_of_the_history() {
        let mut c = Conversation::default();
        c.push_user("first");
        c.push_answer("m", 1); // failed: no text
        c.push_user("second");
        let roles: Vec<_> = c.messages("").iter().map(|m| m.content.clone()).collect();
        assert_eq!(roles, vec!["second".to_string()]);
    }

    /// A question, an answer that calls `add`, its result, and the final answer.
    fn tool_loop() -> Conversation {
        let mut c = Conversation::default();
        c.push_user("2+2?");
        c.push_answer("m", 1);
        if let Some((message, _)) = c.answer_mut(1) {
            message.tool_calls.push(crate::chat::ToolCall {
                id: "call_1".into(),
                name: "add".into(),
                arguments: "{}".into(),
            });
        }
        let outcome = ToolOutcome {
            name: "add".into(),
            is_error: false,
            note: None,
            elapsed_s: None,
        };
        c.push_tool_result("call_1", "4", outcome);
        c.push_answer("m", 2);
        if let Some((message, _)) = c.answer_mut(2) {
            message.content = "It is 4.".into();
        }
        c
    }

    #[test]
    fn a_tool_loop_is_sent_whole_calls_and_results_in_order() {
        let c = tool_loop();
        let roles: Vec<Role> = c.messages("").iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
        );
        assert_eq!(c.messages("")[2].tool_call_id.as_deref(), Some("call_1"));
        assert!(c.unanswered_calls().is_empty());
    }
}
