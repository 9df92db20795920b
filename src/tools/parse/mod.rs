//! (placeholder replaced by the parsers)
use super::ToolFormat;

pub struct ParsedCall {
    pub name: String,
    pub arguments: String,
}
pub struct Parsed {
    pub content: String,
    pub calls: Vec<ParsedCall>,
}
pub fn parse(_format: ToolFormat, text: &str) -> Parsed {
    Parsed {
        content: text.to_string(),
        calls: Vec::new(),
    }
}
pub struct CallStream;
pub enum StreamDelta {
    Content(String),
    CallStart { index: usize, name: String },
    Arguments { index: usize, text: String },
}
impl CallStream {
    pub fn new(_format: ToolFormat) -> Self {
        CallStream
    }
    pub fn push(&mut self, piece: &str) -> Vec<StreamDelta> {
        vec![StreamDelta::Content(piece.to_string())]
    }
    pub fn finish(self) -> Vec<StreamDelta> {
        Vec::new()
    }
}
