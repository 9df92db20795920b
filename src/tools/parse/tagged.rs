//! Families whose calls sit between an opening and a closing marker: Hermes, Qwen and SmolLM3
//! (`<tool_call>…</tool_call>`), Phi-4-mini (`<|tool_call|>[…]<|/tool_call|>`), Gemma 4 and
//! FunctionGemma (`call:NAME{…}` between their own markers). Each differs only in its
//! markers and in how it writes what is between them.

use super::{gemma, json, marker_prefix_len, ParsedCall, Piece};

/// A family's markers and the reading of what they enclose.
pub struct Tags {
    pub open: &'static str,
    pub close: &'static str,
    /// The calls between the markers; None when it is not a call (then it is prose).
    pub body: fn(&str) -> Option<Vec<ParsedCall>>,
    /// The calls of an unclosed body as far as they have been written (see [`Piece::Open`]);
    /// none where the family's syntax is not JSON.
    pub open_calls: fn(&str) -> Vec<ParsedCall>,
}

pub const HERMES: Tags = Tags {
    open: "<tool_call>",
    close: "</tool_call>",
    body: |body| json::call_object(body).map(|call| vec![call]),
    open_calls: |body| json::open_call_object(body).into_iter().collect(),
};

pub const PHI4_MINI: Tags = Tags {
    open: "<|tool_call|>",
    close: "<|/tool_call|>",
    body: json_calls,
    open_calls: json::open_calls,
};

pub const GEMMA4: Tags = Tags {
    open: "<|tool_call>",
    close: "<tool_call|>",
    body: |body| gemma::call(body, gemma::GEMMA4_QUOTE).map(|call| vec![call]),
    open_calls: |_| Vec::new(),
};

pub const FUNCTION_GEMMA: Tags = Tags {
    open: "<start_function_call>",
    close: "<end_function_call>",
    body: |body| gemma::call(body, gemma::FUNCTION_GEMMA_QUOTE).map(|call| vec![call]),
    open_calls: |_| Vec::new(),
};

/// A JSON array of call objects (or one object): every one of them a call, or none is.
pub fn json_calls(body: &str) -> Option<Vec<ParsedCall>> {
    match json::items(body) {
        Some(items) => items.into_iter().map(json::call_object).collect(),
        None => json::call_object(body).map(|call| vec![call]),
    }
}

/// The pieces of `text` (see [`super::scan`]). A call whose closing marker never came is
/// still read at the end of the answer: generation may stop right before it.
pub fn scan(tags: &Tags, text: &str, at_end: bool) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut rest = text;
    loop {
        let Some(open) = rest.find(tags.open) else {
            let hold = if at_end {
                0
            } else {
                marker_prefix_len(rest, tags.open)
            };
            pieces.push(Piece::Text(rest[..rest.len() - hold].to_string()));
            return pieces;
        };
        pieces.push(Piece::Text(rest[..open].to_string()));
        let start = open + tags.open.len();
        let inside = &rest[start..];
        // A call left unclosed before the next one ends where the next begins.
        let next = inside.find(tags.open);
        let close = inside
            .find(tags.close)
            .filter(|&close| next.is_none_or(|next| close < next));
        let (body, end) = match (close, next) {
            (Some(close), _) => (&inside[..close], start + close + tags.close.len()),
            (None, Some(next)) => (&inside[..next], start + next),
            (None, None) if at_end => (inside, rest.len()),
            (None, None) => {
                pieces.extend((tags.open_calls)(inside).into_iter().map(Piece::Open));
                return pieces;
            }
        };
        match (tags.body)(body) {
            Some(calls) => pieces.extend(calls.into_iter().map(Piece::Call)),
            None => pieces.push(Piece::Text(rest[open..end].to_string())),
        }
        rest = &rest[end..];
    }
}
