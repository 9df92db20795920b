//! Taper's own syntax for templates that know no tools: the whole answer is one JSON object,
//! `{"tool_calls": [{"name": …, "arguments": {…}}, …]}` or `{"response": "…"}`. Any other
//! answer is prose as it stands.

use super::json::{self, Extent};
use super::{tagged, Piece};

/// The pieces of `text` (see [`super::scan`]). An answer that starts with `{` is held to its
/// end: only then is it known to be nothing but the object.
pub fn scan(text: &str, at_end: bool) -> Vec<Piece> {
    let body = text.trim();
    if !body.starts_with('{') {
        if body.is_empty() && !at_end {
            return Vec::new();
        }
        return vec![Piece::Text(text.to_string())];
    }
    match json::value_end(body) {
        Extent::Complete(end) if end < body.len() => vec![Piece::Text(text.to_string())],
        Extent::Invalid => vec![Piece::Text(text.to_string())],
        _ if !at_end => Vec::new(),
        Extent::Complete(_) => object(body).unwrap_or_else(|| vec![Piece::Text(text.to_string())]),
        Extent::Incomplete => vec![Piece::Text(text.to_string())],
    }
}

/// The calls or the response in the answer's object.
fn object(text: &str) -> Option<Vec<Piece>> {
    let members = json::members(text)?;
    let [(key, value)] = members.as_slice() else {
        return None;
    };
    match key.as_str() {
        "tool_calls" => Some(
            tagged::json_calls(value)?
                .into_iter()
                .map(Piece::Call)
                .collect(),
        ),
        // One call, as llama.cpp's generic format writes it when calls are not parallel.
        "tool_call" => json::call_object(value).map(|call| vec![Piece::Call(call)]),
        "response" => serde_json::from_str::<String>(value)
            .ok()
            .map(|text| vec![Piece::Text(text)]),
        _ => None,
    }
}
