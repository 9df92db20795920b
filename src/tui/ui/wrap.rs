//! Word wrapping of styled text to a width, with a prefix on every line (list markers,
//! quote bars, code gutters). The chat pane wraps itself instead of letting `Paragraph` do
//! it, so that it knows how many lines the conversation takes and can scroll exactly.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Builds wrapped lines from styled pieces of text.
pub struct Wrapper {
    width: usize,
    pub lines: Vec<Line<'static>>,
    current: Vec<Span<'static>>,
    current_width: usize,
    /// The prefix of the next line to start, and of the lines after it.
    first_prefix: Vec<Span<'static>>,
    rest_prefix: Vec<Span<'static>>,
    started: bool,
    /// Width of the current line's prefix: more than that means text was written on it.
    prefix_width: usize,
    pending_space: Option<Style>,
    /// Lines started so far, so a caller can tell whether a prefix has been used yet.
    pub lines_started: usize,
}

fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|s| s.content.width()).sum()
}

impl Wrapper {
    pub fn new(width: usize) -> Self {
        Self {
            width: width.max(8),
            lines: Vec::new(),
            current: Vec::new(),
            current_width: 0,
            first_prefix: Vec::new(),
            rest_prefix: Vec::new(),
            started: false,
            prefix_width: 0,
            pending_space: None,
            lines_started: 0,
        }
    }

    /// Sets the prefixes of the next line and of its continuation lines.
    pub fn set_prefix(&mut self, first: Vec<Span<'static>>, rest: Vec<Span<'static>>) {
        self.first_prefix = first;
        self.rest_prefix = rest;
    }

    fn start_line(&mut self) {
        if !self.started {
            let prefix = std::mem::replace(&mut self.first_prefix, self.rest_prefix.clone());
            self.current_width = spans_width(&prefix);
            self.prefix_width = self.current_width;
            self.current = prefix;
            self.started = true;
            self.lines_started += 1;
        }
    }

    /// Ends the current line (an empty one if nothing was written).
    pub fn end_line(&mut self) {
        self.start_line();
        let spans = std::mem::take(&mut self.current);
        self.lines.push(Line::from(spans));
        self.current_width = 0;
        self.started = false;
        self.pending_space = None;
    }

    /// Ends the current line if anything was written on it.
    pub fn flush(&mut self) {
        if self.started {
            self.end_line();
        }
    }

    pub fn blank_line(&mut self) {
        self.flush();
        self.lines.push(Line::default());
    }

    /// Whether the last finished line is blank (or there is none), to avoid double gaps.
    pub fn ends_with_blank(&self) -> bool {
        !self.started && self.lines.last().is_none_or(|l| l.width() == 0)
    }

    /// Word-wrapped text: runs of whitespace become one space, lines break between words.
    pub fn text(&mut self, text: &str, style: Style) {
        for (is_space, piece) in split_words(text) {
            if is_space {
                if self.started && self.current_width > self.prefix_width {
                    self.pending_space = Some(style);
                }
                continue;
            }
            self.word(piece, style);
        }
    }

    fn word(&mut self, word: &str, style: Style) {
        self.start_line();
        let w = word.width();
        let space = usize::from(self.pending_space.is_some());
        if self.current_width + space + w > self.width && self.current_width > self.prefix_width {
            self.end_line();
            self.start_line();
        } else if let Some(space_style) = self.pending_space.take() {
            self.current.push(Span::styled(" ", space_style));
            self.current_width += 1;
        }
        self.pending_space = None;
        if self.current_width + w <= self.width {
            self.push(word.to_string(), w, style);
        } else {
            self.hard(word, style);
        }
    }

    fn push(&mut self, text: String, width: usize, style: Style) {
        self.current_width += width;
        // Adjacent pieces of one style become one span (fewer cells to diff, same look).
        if let Some(last) = self.current.last_mut() {
            if last.style == style {
                last.content.to_mut().push_str(&text);
                return;
            }
        }
        self.current.push(Span::styled(text, style));
    }

    /// Text broken at the width, character by character, spaces kept (code, long words).
    pub fn hard(&mut self, text: &str, style: Style) {
        self.start_line();
        let mut piece = String::new();
        let mut piece_width = 0;
        for c in text.chars() {
            let cw = c.width().unwrap_or(0);
            if self.current_width + piece_width + cw > self.width
                && self.current_width + piece_width > self.prefix_width
            {
                self.push(std::mem::take(&mut piece), piece_width, style);
                piece_width = 0;
                self.end_line();
                self.start_line();
            }
            piece.push(c);
            piece_width += cw;
        }
        if !piece.is_empty() {
            self.push(piece, piece_width, style);
        }
    }

    pub fn finish(mut self) -> Vec<Line<'static>> {
        self.flush();
        self.lines
    }
}

/// Splits text into alternating runs of whitespace and non-whitespace.
fn split_words(text: &str) -> impl Iterator<Item = (bool, &str)> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let is_space = first.is_whitespace();
        let end = rest
            .char_indices()
            .find(|(_, c)| c.is_whitespace() != is_space)
            .map(|(i, _)| i)
            .unwrap_or(rest.len());
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some((is_space, piece))
    })
}

/// Plain text wrapped to `width`, each source line on its own lines (user messages, notices).
pub fn plain(text: &str, width: usize, style: Style, prefix: &str) -> Vec<Line<'static>> {
    let mut w = Wrapper::new(width);
    for line in text.split('\n') {
        let p = vec![Span::styled(prefix.to_string(), style)];
        w.set_prefix(p.clone(), p);
        w.text(line, style);
        w.end_line();
    }
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn words_wrap_at_the_width() {
        let lines = plain("the quick brown fox jumps", 10, Style::default(), "");
        assert_eq!(text(&lines), ["the quick", "brown fox", "jumps"]);
    }

    #[test]
    fn a_word_longer_than_the_width_is_broken() {
        let lines = plain("abcdefghijkl", 8, Style::default(), "");
        assert_eq!(text(&lines), ["abcdefgh", "ijkl"]);
    }

    #[test]
    fn continuation_lines_keep_the_prefix() {
        let mut w = Wrapper::new(10);
        w.set_prefix(vec![Span::raw("• ")], vec![Span::raw("  ")]);
        w.text("one two three four", Style::default());
        assert_eq!(text(&w.finish()), ["• one two", "  three", "  four"]);
    }

    #[test]
    fn wide_characters_count_double() {
        let lines = plain("日本語 日本語", 8, Style::default(), "");
        assert_eq!(text(&lines), ["日本語", "日本語"]);
    }
}
