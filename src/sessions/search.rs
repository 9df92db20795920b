//! Finding saved conversations by their words, ignoring case: where a session's title, system
//! prompt or messages contain a text, with one line of context around each match
//! (`taper sessions search`), and the bounded lowercase text the sessions overlay filters on.

use super::format::Session;
use crate::chat::Role;
use std::ops::Range;

/// How much of a conversation's text the overlay's filter looks in. The listing keeps this
/// for every session, so it is bounded: a few hundred long conversations stay in megabytes.
/// `taper sessions search` reads every file whole instead.
pub const FILTER_TEXT_BYTES: usize = 128 * 1024;

/// How many characters of context a matching message gets, the match included.
pub const CONTEXT_CHARS: usize = 80;

/// The lowercase title, system prompt and messages, one per line, cut at
/// [`FILTER_TEXT_BYTES`]: what [`filter_matches`] looks in.
pub fn filter_text(session: &Session) -> String {
    let title = session.display_title();
    let parts = std::iter::once(title.as_str())
        .chain(std::iter::once(session.system_prompt.as_str()))
        .chain(session.messages.iter().map(|m| m.content.as_str()));
    let mut text = String::new();
    for part in parts {
        let room = FILTER_TEXT_BYTES.saturating_sub(text.len());
        if room == 0 {
            break;
        }
        // Lowercase only what can fit: a 16 MiB message is not lowercased to keep 100 KiB.
        text.push_str(&prefix(part, room).to_lowercase());
        text.push('\n');
    }
    let end = prefix(&text, FILTER_TEXT_BYTES).len();
    text.truncate(end);
    text
}

/// Whether a text made by [`filter_text`] contains `filter`, ignoring case; an empty
/// filter matches everything.
pub fn filter_matches(text: &str, filter: &str) -> bool {
    filter.is_empty() || text.contains(filter.to_lowercase().as_str())
}

/// The longest start of `text` of at most `bytes` bytes that ends on a character boundary.
fn prefix(text: &str, bytes: usize) -> &str {
    let mut end = bytes.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Where `needle` (already lowercase, not empty) first occurs in `text` ignoring case, as a
/// byte range of `text`. Lowercasing may change a character's length, so the position found
/// in the lowercase copy is walked back to the original characters.
pub fn find(text: &str, needle: &str) -> Option<Range<usize>> {
    if needle.is_empty() {
        return None;
    }
    let lower = text.to_lowercase();
    let at = lower.find(needle)?;
    let end = at + needle.len();
    let mut lower_pos = 0;
    let mut start = None;
    for (i, c) in text.char_indices() {
        lower_pos += c.to_lowercase().map(char::len_utf8).sum::<usize>();
        if start.is_none() && at < lower_pos {
            start = Some(i);
        }
        if end <= lower_pos {
            return start.map(|s| s..i + c.len_utf8());
        }
    }
    None
}

/// One line around a match: the context before it, the match, the context after it; `…`
/// where the text goes on. Line breaks and runs of spaces read as one space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snippet {
    pub before: String,
    pub matched: String,
    pub after: String,
}

impl Snippet {
    /// About `width` characters of `text` around `at` (a range of `text`): half the room on
    /// each side, and what one side does not use goes to the other.
    pub fn around(text: &str, at: Range<usize>, width: usize) -> Self {
        let (matched, _) = one_line(text[at.clone()].chars(), width);
        let room = width.saturating_sub(matched.chars().count());
        let (before, cut_before) = one_line(text[..at.start].chars().rev(), room);
        let (after, cut_after) = one_line(text[at.end..].chars(), room);
        let (b_len, a_len) = (before.chars().count(), after.chars().count());
        let b_keep = b_len.min((room / 2).max(room.saturating_sub(a_len)));
        let a_keep = a_len.min(room - b_keep);
        // `before` was gathered backwards: its first characters are the nearest.
        let before: String = before.chars().take(b_keep).collect();
        let mut before: String = before.trim_end().chars().rev().collect();
        if cut_before || b_keep < b_len {
            before.insert(0, '…');
        }
        let after: String = after.chars().take(a_keep).collect();
        let mut after = after.trim_end().to_string();
        if cut_after || a_keep < a_len {
            after.push('…');
        }
        Self {
            before,
            matched,
            after,
        }
    }

    pub fn plain(&self) -> String {
        format!("{}{}{}", self.before, self.matched, self.after)
    }
}

/// Up to `n` characters of `chars` with each run of white space or control characters as
/// one space (dropped at the far end); and whether anything but white space was left out.
fn one_line(chars: impl Iterator<Item = char>, n: usize) -> (String, bool) {
    let mut out = String::new();
    let mut count = 0;
    let mut gap = false;
    for c in chars {
        if c.is_whitespace() || c.is_control() {
            gap = true;
            continue;
        }
        let need = if gap { 2 } else { 1 };
        if count + need > n {
            return (out, true);
        }
        if gap {
            out.push(' ');
            count += 1;
            gap = false;
        }
        out.push(c);
        count += 1;
    }
    (out, false)
}

/// A message that contains the text, as `taper sessions search` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// `you`, the model that answered, `system` (the system prompt) or `tool NAME` (a
    /// tool's result).
    pub who: String,
    pub snippet: Snippet,
}

/// A session that contains the text: in its title, or in the messages of `hits`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub title_matches: bool,
    /// The first matching messages, at most the number asked for.
    pub hits: Vec<Hit>,
    /// How many more messages match.
    pub more: usize,
}

/// Where `session` contains `needle` (already lowercase), or None; at most `max_hits`
/// messages with their context, in the conversation's order.
pub fn search(session: &Session, needle: &str, max_hits: usize) -> Option<Found> {
    let title_matches = find(&session.display_title(), needle).is_some();
    let system = std::iter::once(("system".to_string(), session.system_prompt.as_str()));
    let messages = session.messages.iter().map(|m| {
        let who = match m.role {
            Role::User => "you".to_string(),
            Role::Assistant => m.model.clone().unwrap_or_else(|| "assistant".into()),
            Role::System => "system".to_string(),
            Role::Tool => format!("tool {}", m.tool_name.as_deref().unwrap_or("result")),
        };
        (who, m.content.as_str())
    });
    let mut hits = Vec::new();
    let mut more = 0;
    for (who, text) in system.chain(messages) {
        let Some(at) = find(text, needle) else {
            continue;
        };
        if hits.len() == max_hits {
            more += 1;
            continue;
        }
        let snippet = Snippet::around(text, at, CONTEXT_CHARS);
        hits.push(Hit { who, snippet });
    }
    (title_matches || !hits.is_empty()).then_some(Found {
        title_matches,
        hits,
        more,
    })
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
