//! Taper's own syntax for templates that know no tools: the whole answer is one JSON object,
//! `{"tool_calls": [{"name": …, "arguments": {…}}, …]}` or `{"response": "…"}`. Any other
//! answer is prose as it stands.
//!
//! A response is prose that streams: from `{"response": "` on, the answer's prose is that
//! string's text as far as it has come, and what follows the string does not matter (the
//! grammar closes the object; an answer cut short still says what it said).

use super::json::{self, Extent};
use super::{tagged, ParsedCall, Piece};

/// The pieces of `text` (see [`super::scan`]). Any other answer that starts with `{` is held
/// to its end: only then is it known to be nothing but the object.
pub fn scan(text: &str, at_end: bool) -> Vec<Piece> {
    match response_opening(text.trim_start()) {
        Opening::Yes(string) => return vec![Piece::Text(string_text(string))],
        Opening::Maybe if !at_end => return Vec::new(),
        Opening::Maybe | Opening::No => {}
    }
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
        _ if !at_end => open(body).into_iter().map(Piece::Open).collect(),
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

/// The calls of an object still being written, as far as they have come.
fn open(text: &str) -> Vec<ParsedCall> {
    let Some(rest) = text.strip_prefix('{').map(str::trim_start) else {
        return Vec::new();
    };
    let Extent::Complete(end) = json::value_end(rest) else {
        return Vec::new();
    };
    let key = serde_json::from_str::<String>(&rest[..end]);
    let Some(value) = rest[end..].trim_start().strip_prefix(':') else {
        return Vec::new();
    };
    match key.as_deref() {
        Ok("tool_calls") => json::open_calls(value),
        Ok("tool_call") => json::open_call_object(value).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// Whether a text starts as a response does.
enum Opening<'a> {
    /// It does; the rest, from the string's first character.
    Yes(&'a str),
    /// It may yet.
    Maybe,
    No,
}

/// `{"response": "`, white space allowed between its tokens.
fn response_opening(text: &str) -> Opening<'_> {
    let mut rest = text;
    for (i, token) in ["{", "\"response\"", ":", "\""].into_iter().enumerate() {
        if i > 0 {
            rest = rest.trim_start();
        }
        if let Some(after) = rest.strip_prefix(token) {
            rest = after;
        } else if token.starts_with(rest) {
            return Opening::Maybe;
        } else {
            return Opening::No;
        }
    }
    Opening::Yes(rest)
}

/// A JSON string's text, from after its opening quote to its closing one or as far as it is
/// known: an escape still arriving is left out, and a broken one ends it.
fn string_text(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some(c) = rest.chars().next() {
        match c {
            '"' => break,
            '\\' => match escape(rest) {
                Some((c, len)) => {
                    out.push(c);
                    rest = &rest[len..];
                }
                None => break,
            },
            c => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

/// The character an escape at the start of `text` stands for and its length; None when it
/// is broken or not all there.
fn escape(text: &str) -> Option<(char, usize)> {
    let c = match text.as_bytes().get(1)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => return unicode_escape(text),
        _ => return None,
    };
    Some((c, 2))
}

/// `\uXXXX`, or a pair of them for a character beyond the basic plane; a lone half of a
/// pair stands for U+FFFD, as serde_json's lossy reading has it.
fn unicode_escape(text: &str) -> Option<(char, usize)> {
    let unit = |at: usize| -> Option<u32> {
        let hex = text.get(at..at + 6)?.strip_prefix("\\u")?;
        u32::from_str_radix(hex, 16).ok()
    };
    let high = unit(0)?;
    if !(0xD800..0xDC00).contains(&high) {
        return Some((char::from_u32(high).unwrap_or('\u{fffd}'), 6));
    }
    match unit(6) {
        Some(low) if (0xDC00..0xE000).contains(&low) => {
            let c = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
            Some((char::from_u32(c).unwrap_or('\u{fffd}'), 12))
        }
        // The other half may still be arriving.
        None if could_be_unit(&text[6..]) => None,
        _ => Some(('\u{fffd}', 6)),
    }
}

/// `text` is the start of a `\uXXXX` that has not all arrived.
fn could_be_unit(text: &str) -> bool {
    text.len() < 6
        && text.chars().enumerate().all(|(i, c)| match i {
            0 => c == '\\',
            1 => c == 'u',
            _ => c.is_ascii_hexdigit(),
        })
}
