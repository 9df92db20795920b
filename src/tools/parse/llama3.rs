//! Llama 3.1–3.3's calls: bare JSON objects, `{"name": …, "parameters": {…}}`, that are the
//! whole answer (several separated by `;` or new lines), or that follow `<|python_tag|>`.
//! A JSON object at the start that is not a call is prose, as is anything after the calls.

use super::json::{self, Extent};
use super::{marker_prefix_len, Piece};

const PYTHON_TAG: &str = "<|python_tag|>";

/// The pieces of `text` (see [`super::scan`]). An answer that starts with `{` is held until
/// its first object is read.
pub fn scan(text: &str, at_end: bool) -> Vec<Piece> {
    let body = text.trim_start();
    let lead = text.len() - body.len();
    if body.starts_with('{') {
        let mut pieces = vec![Piece::Text(text[..lead].to_string())];
        calls(&text[lead..], at_end, &mut pieces);
        return pieces;
    }
    if body.is_empty() && !at_end {
        return Vec::new();
    }
    let Some(at) = text.find(PYTHON_TAG) else {
        let hold = if at_end {
            0
        } else {
            marker_prefix_len(text, PYTHON_TAG)
        };
        return vec![Piece::Text(text[..text.len() - hold].to_string())];
    };
    let mut pieces = vec![Piece::Text(text[..at].to_string())];
    let after = &text[at + PYTHON_TAG.len()..];
    let before = pieces.len();
    calls(after, at_end, &mut pieces);
    // A tag followed by no call (code, for the built-in interpreter) is prose, tag and all.
    if pieces.len() > before && matches!(pieces[before], Piece::Text(_)) {
        pieces.truncate(before);
        pieces.push(Piece::Text(text[at..].to_string()));
    }
    pieces
}

/// Calls at the start of `text`, one after another, then prose.
fn calls(text: &str, at_end: bool, pieces: &mut Vec<Piece>) {
    let mut rest = text;
    loop {
        let object = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ';');
        if object.is_empty() {
            return;
        }
        if !object.starts_with('{') {
            pieces.push(Piece::Text(rest.to_string()));
            return;
        }
        match json::value_end(object) {
            Extent::Complete(end) => match json::call_object(&object[..end]) {
                Some(call) => {
                    pieces.push(Piece::Call(call));
                    rest = &object[end..];
                }
                None => {
                    pieces.push(Piece::Text(rest.to_string()));
                    return;
                }
            },
            Extent::Incomplete if !at_end => {
                pieces.extend(json::open_call_object(object).map(Piece::Open));
                return;
            }
            Extent::Incomplete | Extent::Invalid => {
                pieces.push(Piece::Text(rest.to_string()));
                return;
            }
        }
    }
}
