//! The saved-conversation record (docs/session-format.md) and its reader, `parse_session`:
//! a pure function of the bytes, bounded and panic-free, so a fuzz target can call it.

use crate::chat::{Role, ToolCall};
use crate::protocol::SamplingParams;
use crate::protocol::{StopReason, Usage};
use serde::{Deserialize, Serialize};

/// What `"format"` must say: a JSON file that is something else is not taken for a session.
pub const FORMAT_NAME: &str = "taper-session";
/// The version this build writes, and the newest it reads.
pub const FORMAT_VERSION: u32 = 3;
/// Larger files are refused before they are read whole (a long chat is well under 1 MiB).
pub const MAX_SESSION_BYTES: u64 = 16 * 1024 * 1024;

/// One saved conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub format: String,
    pub version: u32,
    /// Also the file's name (`<id>.json`).
    pub id: String,
    pub title: String,
    /// Seconds since the Unix epoch (UTC).
    pub created_at: u64,
    pub updated_at: u64,
    pub system_prompt: String,
    /// The settings of the latest answer.
    pub sampling: SavedSampling,
    /// Every message of the tree, each after its parent. Without ids (versions 1 and 2, and
    /// any file that never branched) they are one path, each following the one before.
    pub messages: Vec<SavedMessage>,
    /// The id of the message the path on screen ends at (version 3); absent: the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedSampling {
    pub temperature: f32,
    pub top_k: usize,
    pub top_p: f32,
    pub min_p: f32,
    pub repeat_penalty: f32,
    pub repeat_last_n: usize,
    pub seed: Option<u64>,
    pub max_tokens: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedMessage {
    /// Its id in the file, unique (version 3; absent in a file without ids).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// The message it follows; absent for the first of a branch from the start (version 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<u64>,
    /// `user`, `assistant` or `tool` (the system prompt is `Session::system_prompt`).
    pub role: Role,
    pub content: String,
    /// When it was written (seconds since the Unix epoch, UTC).
    pub at: u64,
    /// Assistant messages only: the model that wrote it (its name, as the TUI shows it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Assistant messages only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<SavedStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<SavedUsage>,
    /// Assistant messages: the tools it called (version 2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Tool messages: the call this is the result of (version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Tool messages: the tool that was called (version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// Tool messages: the call failed or was refused; `content` says why (version 2).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Tool messages: what was cut from the result or left out, one line (version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Assistant messages: the settings it was written with (version 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SavedSampling>,
    /// Assistant messages: the system prompt it was written with, when not the session's
    /// (version 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
}

impl SavedMessage {
    /// A message with no answer figures and no tools.
    pub fn plain(role: Role, content: impl Into<String>, at: u64) -> Self {
        Self {
            id: None,
            parent: None,
            role,
            content: content.into(),
            at,
            model: None,
            status: None,
            error: None,
            usage: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            tool_name: None,
            is_error: false,
            note: None,
            sampling: None,
            system_prompt: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SavedStatus {
    Done,
    Stopped,
    Failed,
}

/// The engine's figures for one answer, as it reported them (rates derived once, here, so a
/// reader needs no formula).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedUsage {
    pub prompt_tokens: usize,
    pub cached_tokens: usize,
    pub generated_tokens: usize,
    pub ttft_s: f64,
    pub prefill_s: f64,
    pub decode_s: f64,
    pub prefill_tok_s: f64,
    pub decode_tok_s: f64,
    pub context_size: usize,
    pub dropped_messages: usize,
    pub stop: Option<StopReason>,
    /// What a remote server reported about the answer (the figures above were measured by
    /// taper); absent for local models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<crate::protocol::ServerFigures>,
}

impl SavedSampling {
    pub fn new(params: &SamplingParams, max_tokens: usize) -> Self {
        Self {
            temperature: params.temperature,
            top_k: params.top_k,
            top_p: params.top_p,
            min_p: params.min_p,
            repeat_penalty: params.repeat_penalty,
            repeat_last_n: params.repeat_last_n,
            seed: params.seed,
            max_tokens,
        }
    }

    pub fn params(&self) -> SamplingParams {
        SamplingParams {
            temperature: self.temperature,
            top_k: self.top_k,
            top_p: self.top_p,
            min_p: self.min_p,
            repeat_penalty: self.repeat_penalty,
            repeat_last_n: self.repeat_last_n,
            seed: self.seed,
            ..SamplingParams::default()
        }
    }
}

impl From<&Usage> for SavedUsage {
    fn from(u: &Usage) -> Self {
        Self {
            prompt_tokens: u.prompt_tokens,
            cached_tokens: u.cached_tokens,
            generated_tokens: u.generated_tokens,
            ttft_s: u.ttft_s,
            prefill_s: u.prefill_s,
            decode_s: u.decode_s,
            prefill_tok_s: u.prefill_tok_s(),
            decode_tok_s: u.decode_tok_s(),
            context_size: u.context_size,
            dropped_messages: u.dropped_messages,
            stop: u.stop,
            server: u.server.as_deref().cloned(),
        }
    }
}

impl From<&SavedUsage> for Usage {
    fn from(u: &SavedUsage) -> Self {
        Self {
            prompt_tokens: u.prompt_tokens,
            cached_tokens: u.cached_tokens,
            prefill_s: u.prefill_s,
            ttft_s: u.ttft_s,
            generated_tokens: u.generated_tokens,
            decode_s: u.decode_s,
            dropped_messages: u.dropped_messages,
            context_size: u.context_size,
            stop: u.stop,
            server: u.server.clone().map(Box::new),
            ..Usage::default()
        }
    }
}

impl Session {
    /// An empty record of the current version.
    pub fn new(
        id: impl Into<String>,
        at: u64,
        system_prompt: &str,
        sampling: SavedSampling,
    ) -> Self {
        Self {
            format: FORMAT_NAME.to_string(),
            version: FORMAT_VERSION,
            id: id.into(),
            title: String::new(),
            created_at: at,
            updated_at: at,
            system_prompt: system_prompt.to_string(),
            sampling,
            messages: Vec::new(),
            current: None,
        }
    }

    /// Each message's parent, by index (a file without ids is one path), and the index the
    /// path on screen ends at. Err says what is wrong with the ids.
    pub fn tree(&self) -> Result<(Vec<Option<usize>>, Option<usize>), String> {
        let n = self.messages.len();
        let with_ids = self.messages.iter().filter(|m| m.id.is_some()).count();
        if with_ids == 0 {
            if self.current.is_some() {
                return Err("\"current\" names a message, but messages have no ids".into());
            }
            return Ok(((0..n).map(|i| i.checked_sub(1)).collect(), n.checked_sub(1)));
        }
        if with_ids != n {
            return Err("some messages have ids and some do not".into());
        }
        let mut index = std::collections::HashMap::with_capacity(n);
        let mut parents = Vec::with_capacity(n);
        for (i, m) in self.messages.iter().enumerate() {
            let id = m.id.unwrap_or_default();
            let parent = match m.parent {
                None => None,
                Some(p) => Some(*index.get(&p).ok_or_else(|| {
                    format!("message {i}'s parent {p} is not a message before it")
                })?),
            };
            if index.insert(id, i).is_some() {
                return Err(format!("message {i} has the id {id} of an earlier message"));
            }
            parents.push(parent);
        }
        let current = match self.current {
            Some(id) => Some(
                *index
                    .get(&id)
                    .ok_or_else(|| format!("\"current\" is {id}, which no message has"))?,
            ),
            None => n.checked_sub(1),
        };
        Ok((parents, current))
    }

    /// The path on screen: from the start to `current`, in order.
    pub fn path(&self) -> Vec<&SavedMessage> {
        let Ok((parents, current)) = self.tree() else {
            return self.messages.iter().collect();
        };
        let mut out = Vec::new();
        let mut at = current;
        // A parent is always before its child, so this ends.
        while let Some(i) = at {
            out.push(&self.messages[i]);
            at = parents[i];
        }
        out.reverse();
        out
    }

    /// The title, or (untitled) the start of the first question.
    pub fn display_title(&self) -> String {
        if !self.title.trim().is_empty() {
            return self.title.clone();
        }
        self.messages
            .iter()
            .find(|m| m.role == Role::User)
            .map(|m| title_from(&m.content))
            .unwrap_or_else(|| "(empty)".to_string())
    }

    /// The distinct models that answered, in order of first answer.
    pub fn models(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for name in self.messages.iter().filter_map(|m| m.model.as_deref()) {
            if !out.contains(&name) {
                out.push(name);
            }
        }
        out
    }

    /// The file's bytes: pretty JSON (people read and diff these) ending in a newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Serialising plain data with string keys cannot fail.
        let mut bytes = serde_json::to_vec_pretty(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }
}

/// A one-line title from a message: its first line, at most 60 characters.
pub fn title_from(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let mut title: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        title.push('…');
    }
    title
}

/// Why bytes are not a session this build can use.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SessionError {
    #[error("the file is too large ({0} bytes; sessions are at most {MAX_SESSION_BYTES})")]
    TooLarge(u64),
    #[error("not valid JSON: {0}")]
    NotJson(String),
    #[error("not a taper session (no \"format\": \"{FORMAT_NAME}\")")]
    NotASession,
    #[error(
        "written by a newer taper (format version {0}; this one reads up to {FORMAT_VERSION})"
    )]
    TooNew(u64),
    #[error("unknown format version {0}")]
    UnknownVersion(String),
    #[error("corrupted: {0}")]
    Corrupted(String),
}

/// Just enough to tell the version before reading the rest.
#[derive(Deserialize)]
struct Header {
    format: Option<serde_json::Value>,
    version: Option<serde_json::Value>,
}

/// Reads a session file's bytes. Never panics; refuses input over [`MAX_SESSION_BYTES`].
pub fn parse_session(bytes: &[u8]) -> Result<Session, SessionError> {
    if bytes.len() as u64 > MAX_SESSION_BYTES {
        return Err(SessionError::TooLarge(bytes.len() as u64));
    }
    // serde_json limits nesting depth, so hostile input cannot exhaust the stack.
    let header: Header = match serde_json::from_slice(bytes) {
        Ok(h) => h,
        Err(e) if e.is_data() => return Err(SessionError::NotASession),
        Err(e) => return Err(SessionError::NotJson(e.to_string())),
    };
    if header.format.as_ref().and_then(|f| f.as_str()) != Some(FORMAT_NAME) {
        return Err(SessionError::NotASession);
    }
    match header.version {
        Some(serde_json::Value::Number(n)) => match n.as_u64() {
            Some(v) if v > FORMAT_VERSION as u64 => return Err(SessionError::TooNew(v)),
            Some(v) if v >= 1 => {}
            _ => return Err(SessionError::UnknownVersion(n.to_string())),
        },
        Some(other) => return Err(SessionError::UnknownVersion(other.to_string())),
        None => return Err(SessionError::UnknownVersion("(missing)".to_string())),
    }
    let session: Session =
        serde_json::from_slice(bytes).map_err(|e| SessionError::Corrupted(e.to_string()))?;
    validate(&session)?;
    Ok(session)
}

/// What serde cannot check: the id is a safe file name; no system message; message ids make
/// a tree; each tool result answers a call of the answer it follows.
fn validate(s: &Session) -> Result<(), SessionError> {
    if !valid_id(&s.id) {
        return Err(SessionError::Corrupted(format!("bad id {:?}", s.id)));
    }
    if s.messages.iter().any(|m| m.role == Role::System) {
        return Err(SessionError::Corrupted(
            "a system message among the messages (the system prompt has its own field)".into(),
        ));
    }
    let (parents, _) = s.tree().map_err(SessionError::Corrupted)?;
    // A result answers a call of the answer its run of results follows.
    let mut caller: Vec<Option<usize>> = Vec::with_capacity(s.messages.len());
    for (i, m) in s.messages.iter().enumerate() {
        let parent = parents[i];
        let after = parent.and_then(|p| match s.messages[p].role {
            Role::Tool => caller[p],
            Role::Assistant => Some(p),
            Role::User | Role::System => None,
        });
        caller.push(after);
        if m.role != Role::Tool {
            continue;
        }
        let answers = after.is_some_and(|p| {
            s.messages[p]
                .tool_calls
                .iter()
                .any(|c| Some(c.id.as_str()) == m.tool_call_id.as_deref())
        });
        if !answers {
            return Err(SessionError::Corrupted(format!(
                "message {i} is a tool result that answers no call before it"
            )));
        }
    }
    Ok(())
}

/// Ids name files: ASCII letters, digits, `-` and `_`, 1 to 64 of them.
pub fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
#[path = "format_tests.rs"]
pub(crate) mod tests;
