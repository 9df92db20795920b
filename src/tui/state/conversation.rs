//! The conversation as the TUI keeps it: the model-independent messages (`crate::chat`) plus
//! what only the screen needs to know about each answer (which model wrote it, whether it was
//! stopped or failed, its usage), and notices (model switches, errors) that are never sent.

use crate::chat::{Message, Role};
use crate::stats::Usage;

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
