//! An answer's text read back into prose and OpenAI tool calls, in each family's syntax:
//! whole ([`parse`]) or as it streams ([`CallStream`]).
//!
//! Each family's file scans a text into [`Piece`]s (prose or calls) and leaves out a tail it
//! cannot decide yet; [`assemble`] joins them. The stream is the same scan, repeated as the
//! text grows, sending only what was not sent before, so the two can never disagree. To add a
//! family, write its scan and give it an arm in [`scan`].
//!
//! A call the scan cannot read (bad JSON, no name, no end) is prose: a model's broken call is
//! shown, never dropped.

mod gemma;
mod generic;
mod json;
mod llama3;
mod mistral;
mod prose;
mod stream;
mod tagged;
#[cfg(test)]
mod tests;

pub use prose::ProseStream;
pub use stream::{CallStream, StreamDelta};

use super::ToolFormat;

/// One call of a tool, as OpenAI sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedCall {
    pub name: String,
    /// The arguments, a JSON object's text.
    pub arguments: String,
}

/// An answer read: what it says besides its calls, and the calls in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Parsed {
    pub content: String,
    pub calls: Vec<ParsedCall>,
}

/// Reads `text`, a whole answer without its `<think>` part.
pub fn parse(format: ToolFormat, text: &str) -> Parsed {
    let mut parsed = Parsed::default();
    for piece in assemble(scan(format, text, true), true) {
        match piece {
            Piece::Text(text) => parsed.content.push_str(&text),
            Piece::Call(call) => parsed.calls.push(call),
            // A whole answer has none: nothing more is coming.
            Piece::Open(_) => {}
        }
    }
    parsed
}

/// A part of an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    /// Prose, decided.
    Text(String),
    /// A call, decided.
    Call(ParsedCall),
    /// A call still being written (only at the end of a text that may grow): its name, and
    /// its arguments as far as they have come. Until it ends it could still turn out broken,
    /// and so prose; only a stream whose calls a grammar holds sends it ahead.
    Open(ParsedCall),
}

/// The pieces of `text` in order. Unless `at_end`, the text may still grow, and a tail that
/// could yet become a call (a marker's first bytes, an unfinished call) is left out, or given
/// as [`Piece::Open`] where the family's calls are JSON; whatever else is returned stays as it
/// is however the text goes on.
fn scan(format: ToolFormat, text: &str, at_end: bool) -> Vec<Piece> {
    match format {
        ToolFormat::Hermes | ToolFormat::SmolLm3 => tagged::scan(&tagged::HERMES, text, at_end),
        ToolFormat::Phi4Mini => tagged::scan(&tagged::PHI4_MINI, text, at_end),
        ToolFormat::Gemma4 => tagged::scan(&tagged::GEMMA4, text, at_end),
        ToolFormat::FunctionGemma => tagged::scan(&tagged::FUNCTION_GEMMA, text, at_end),
        ToolFormat::Mistral => mistral::scan(text, at_end),
        ToolFormat::Llama3 => llama3::scan(text, at_end),
        ToolFormat::Generic => generic::scan(text, at_end),
    }
}

/// Adjacent prose joined, and the white space between prose and a call dropped (templates
/// put new lines around calls). Unless `at_end`, trailing white space is held too: a call may
/// follow it.
fn assemble(pieces: Vec<Piece>, at_end: bool) -> Vec<Piece> {
    let mut merged: Vec<Piece> = Vec::with_capacity(pieces.len());
    for piece in pieces {
        match (merged.last_mut(), piece) {
            (Some(Piece::Text(last)), Piece::Text(text)) => last.push_str(&text),
            (_, piece) => merged.push(piece),
        }
    }
    let count = merged.len();
    let mut out = Vec::with_capacity(count);
    for (i, piece) in merged.into_iter().enumerate() {
        let Piece::Text(text) = piece else {
            out.push(piece);
            continue;
        };
        let mut text = text.as_str();
        if i > 0 {
            text = text.trim_start();
        }
        if i + 1 < count || !at_end {
            text = text.trim_end();
        }
        if !text.is_empty() {
            out.push(Piece::Text(text.to_string()));
        }
    }
    out
}

/// The longest end of `text` that is the start of `marker` but not all of it: bytes to hold
/// back while the marker may still be arriving.
fn marker_prefix_len(text: &str, marker: &str) -> usize {
    (1..marker.len().min(text.len() + 1))
        .rev()
        .find(|&n| text.is_char_boundary(text.len() - n) && text.ends_with(&marker[..n]))
        .unwrap_or(0)
}
