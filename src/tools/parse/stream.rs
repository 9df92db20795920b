//! Calls read from an answer while it streams: the text so far is scanned again at each
//! piece (answers are short, the scan linear) and only what was not sent before is sent.
//! What a scan returns never changes as the text grows, so the stream ends up with exactly
//! what [`super::parse`] reads from the whole answer.
//!
//! A call is sent whole, once it has ended: until then it could still turn out broken, and
//! then it is prose, which a stream cannot take back.

use super::{assemble, scan, Piece};
use crate::tools::ToolFormat;

/// Something new in a streamed answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamDelta {
    /// More prose.
    Content(String),
    /// Call number `index` (from 0) begins.
    CallStart { index: usize, name: String },
    /// More of call `index`'s arguments' JSON text.
    Arguments { index: usize, text: String },
}

/// One answer's stream.
pub struct CallStream {
    format: ToolFormat,
    text: String,
    /// Bytes of prose sent.
    sent_content: usize,
    /// Calls sent.
    sent_calls: usize,
}

impl CallStream {
    pub fn new(format: ToolFormat) -> Self {
        Self {
            format,
            text: String::new(),
            sent_content: 0,
            sent_calls: 0,
        }
    }

    /// The next piece of the answer's text; what it makes known.
    pub fn push(&mut self, piece: &str) -> Vec<StreamDelta> {
        self.text.push_str(piece);
        self.deltas(false)
    }

    /// The answer has ended: what was held back.
    pub fn finish(mut self) -> Vec<StreamDelta> {
        self.deltas(true)
    }

    fn deltas(&mut self, at_end: bool) -> Vec<StreamDelta> {
        let pieces = assemble(scan(self.format, &self.text, at_end), at_end);
        let mut out = Vec::new();
        let (mut content, mut calls) = (0, 0);
        for piece in pieces {
            match piece {
                Piece::Text(text) => {
                    let end = content + text.len();
                    if end > self.sent_content {
                        let new = self.sent_content.saturating_sub(content);
                        if let Some(new) = text.get(new..) {
                            out.push(StreamDelta::Content(new.to_string()));
                        }
                        self.sent_content = end;
                    }
                    content = end;
                }
                Piece::Call(call) => {
                    if calls >= self.sent_calls {
                        out.push(StreamDelta::CallStart {
                            index: calls,
                            name: call.name,
                        });
                        out.push(StreamDelta::Arguments {
                            index: calls,
                            text: call.arguments,
                        });
                        self.sent_calls = calls + 1;
                    }
                    calls += 1;
                }
            }
        }
        out
    }
}
