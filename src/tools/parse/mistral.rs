//! Mistral's calls: `[TOOL_CALLS]` then either a JSON array of call objects (Mistral Nemo,
//! Small 3) or, in the newer templates (Ministral 3, Devstral), `NAME[ARGS]{…}` with a marker
//! before each call (Small 3.2: `NAME[CALL_ID]ID[ARGS]{…}`). No closing marker: a call ends
//! where its JSON does.

use super::json::{self, Extent};
use super::{marker_prefix_len, tagged, ParsedCall, Piece};

const MARKER: &str = "[TOOL_CALLS]";
const ARGS: &str = "[ARGS]";
const CALL_ID: &str = "[CALL_ID]";

/// What follows one `[TOOL_CALLS]`.
enum After {
    /// Calls, and the bytes they took.
    Calls(Vec<ParsedCall>, usize),
    /// Not calls: the marker is prose.
    Prose,
    /// Not known until more text arrives; the calls written so far (see [`Piece::Open`]).
    Open(Vec<ParsedCall>),
}

/// The pieces of `text` (see [`super::scan`]).
pub fn scan(text: &str, at_end: bool) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut rest = text;
    loop {
        let Some(at) = rest.find(MARKER) else {
            let hold = if at_end {
                0
            } else {
                marker_prefix_len(rest, MARKER)
            };
            pieces.push(Piece::Text(rest[..rest.len() - hold].to_string()));
            return pieces;
        };
        pieces.push(Piece::Text(rest[..at].to_string()));
        let after = &rest[at + MARKER.len()..];
        match calls_after(after) {
            After::Calls(calls, used) => {
                pieces.extend(calls.into_iter().map(Piece::Call));
                rest = &after[used..];
            }
            After::Open(open) if !at_end => {
                pieces.extend(open.into_iter().map(Piece::Open));
                return pieces;
            }
            // What follows is read again as prose, which may hold another marker.
            After::Open(_) | After::Prose => {
                pieces.push(Piece::Text(MARKER.to_string()));
                rest = after;
            }
        }
    }
}

fn calls_after(text: &str) -> After {
    let trimmed = text.trim_start();
    let skipped = text.len() - trimmed.len();
    if trimmed.starts_with('[') {
        return match json::value_end(trimmed) {
            Extent::Complete(end) => match tagged::json_calls(&trimmed[..end]) {
                Some(calls) => After::Calls(calls, skipped + end),
                None => After::Prose,
            },
            Extent::Incomplete => After::Open(json::open_calls(trimmed)),
            Extent::Invalid => After::Prose,
        };
    }
    let name_end = text
        .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .unwrap_or(text.len());
    let name = &text[..name_end];
    if name_end == text.len() {
        return After::Open(Vec::new());
    }
    if name.is_empty() {
        return After::Prose;
    }
    let mut rest = &text[name_end..];
    // Mistral Small 3.2 writes an id between the name and the arguments.
    if let Some(id) = rest.strip_prefix(CALL_ID) {
        let id_end = id
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(id.len());
        rest = &id[id_end..];
    } else if rest.len() < CALL_ID.len() && CALL_ID.starts_with(rest) {
        return After::Open(Vec::new());
    }
    if rest.len() < ARGS.len() {
        return if ARGS.starts_with(rest) {
            After::Open(Vec::new())
        } else {
            After::Prose
        };
    }
    let Some(value) = rest.strip_prefix(ARGS) else {
        return After::Prose;
    };
    match json::value_end(value) {
        Extent::Complete(end) => match json::arguments_text(Some(&value[..end])) {
            Some(arguments) => {
                let used = text.len() - value.len() + end;
                After::Calls(
                    vec![ParsedCall {
                        name: name.to_string(),
                        arguments,
                    }],
                    used,
                )
            }
            None => After::Prose,
        },
        Extent::Incomplete if value.trim_start().starts_with('{') => {
            After::Open(vec![ParsedCall {
                name: name.to_string(),
                arguments: value.trim_start().to_string(),
            }])
        }
        Extent::Incomplete => After::Open(Vec::new()),
        Extent::Invalid => After::Prose,
    }
}
