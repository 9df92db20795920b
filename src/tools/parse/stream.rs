//! Calls read from an answer while it streams: the text so far is scanned again at each
//! piece (answers are short, the scan linear) and only what was not sent before is sent.
//! What a scan returns never changes as the text grows, so the stream ends up with exactly
//! what [`super::parse`] reads from the whole answer.
//!
//! A call is sent whole once it has ended: until then it could still turn out broken, and
//! then it is prose, which a stream cannot take back. Where a grammar holds the calls, so
//! that they cannot break (`CallStream::ahead`), a call is sent as it is written: its name
//! when its arguments begin, then the arguments in pieces. In JSON families those pieces are
//! the model's own text, so they add up to what the whole parse reads; only an answer cut
//! off inside a call (the token limit) then ends with a call whose arguments never closed.

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
    /// Calls are sent while they are written (see the module's doc).
    ahead: bool,
    /// Bytes of prose sent.
    sent_content: usize,
    /// The arguments' text sent of each call started, in order.
    sent_calls: Vec<String>,
}

impl CallStream {
    /// A stream that sends each call once it has ended.
    pub fn new(format: ToolFormat) -> Self {
        Self {
            format,
            text: String::new(),
            ahead: false,
            sent_content: 0,
            sent_calls: Vec::new(),
        }
    }

    /// A stream that sends calls as they are written, for answers a grammar holds.
    pub fn ahead(format: ToolFormat) -> Self {
        Self {
            ahead: true,
            ..Self::new(format)
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
                Piece::Open(call) if self.ahead => {
                    self.send_call(calls, call, &mut out);
                    calls += 1;
                }
                Piece::Call(call) => {
                    self.send_call(calls, call, &mut out);
                    calls += 1;
                }
                Piece::Open(_) => {}
            }
        }
        out
    }

    /// What is new of call `index`: its start, if it was not sent, and the arguments' text
    /// beyond what was sent.
    fn send_call(&mut self, index: usize, call: super::ParsedCall, out: &mut Vec<StreamDelta>) {
        if index >= self.sent_calls.len() {
            out.push(StreamDelta::CallStart {
                index,
                name: call.name,
            });
            self.sent_calls.push(String::new());
        }
        let sent = &mut self.sent_calls[index];
        // A call sent ahead whose final text differs (only a call that broke, which a grammar
        // does not let happen) cannot be taken back; nothing more is sent for it.
        if let Some(new) = call.arguments.strip_prefix(sent.as_str()) {
            if !new.is_empty() {
                out.push(StreamDelta::Arguments {
                    index,
                    text: new.to_string(),
                });
                sent.push_str(new);
            }
        }
    }
}
