//! The conversation as the TUI keeps it: the model-independent messages (`crate::chat`) plus
//! what only the screen needs to know about each answer (which model wrote it, whether it was
//! stopped or failed, its usage), and notices (model switches, errors) that are never sent.

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

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation {
    pub entries: Vec<Entry>,
    next_id: u64,
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
            }),
        });
    }

    pub fn push_notice(&mut self, level: NoticeLevel, text: impl Into<String>) {
        self.push(EntryBody::Notice {
            level,
            text: text.into(),
        });
    }

    pub fn clear(&mut self) {
        self.entries.clear();
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
            let EntryBody::Message { message, answer } = &entry.body else {
                continue;
            };
            let unanswered = answer.is_some() && message.content.trim().is_empty();
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

    /// For regenerate: removes the last answer (notices after it stay, e.g. a model switch).
    /// True when the conversation then ends with a question to answer.
    pub fn drop_last_answer(&mut self) -> bool {
        let Some(last) = self
            .entries
            .iter()
            .rposition(|e| matches!(e.body, EntryBody::Message { .. }))
        else {
            return false;
        };
        if let EntryBody::Message {
            message:
                Message {
                    role: Role::Assistant,
                    ..
                },
            ..
        } = &self.entries[last].body
        {
            self.entries.remove(last);
        }
        matches!(
            self.entries.iter().rev().find_map(|e| match &e.body {
                EntryBody::Message { message, .. } => Some(message.role),
                _ => None,
            }),
            Some(Role::User)
        )
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
}
