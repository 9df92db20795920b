//! The message editor drawn with soft wrapping: `tui-textarea` keeps the text, the cursor and
//! the selection, and scrolls sideways on a long line; here each line wraps at word
//! boundaries instead, so a long paragraph stays readable while it is written.

use crate::tui::state::InputState;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use unicode_width::UnicodeWidthChar;

/// One screen row of the editor: characters `start..end` of line `line`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    pub line: usize,
    pub start: usize,
    pub end: usize,
}

/// The rows `lines` take at `width` columns. A row breaks after its last space when the
/// next word does not fit; a word longer than the row is cut.
pub fn rows(lines: &[String], width: usize) -> Vec<Row> {
    let width = width.max(1);
    let mut out = Vec::new();
    for (line, text) in lines.iter().enumerate() {
        let chars: Vec<char> = text.chars().collect();
        let mut start = 0;
        loop {
            let mut end = start;
            let mut used = 0;
            while end < chars.len() {
                let w = chars[end].width().unwrap_or(0);
                if used + w > width {
                    break;
                }
                used += w;
                end += 1;
            }
            if end < chars.len() {
                if let Some(space) = (start..end).rev().find(|&i| chars[i] == ' ') {
                    end = space + 1;
                }
                // A character wider than the row still goes somewhere.
                end = end.max(start + 1);
            }
            out.push(Row { line, start, end });
            if end >= chars.len() {
                break;
            }
            start = end;
        }
    }
    out
}

/// The row the cursor `(line, column)` is on.
pub fn cursor_row(rows: &[Row], (line, col): (usize, usize)) -> usize {
    let of_line = || rows.iter().enumerate().filter(|(_, r)| r.line == line);
    of_line()
        .find(|(_, r)| col >= r.start && col < r.end)
        .or_else(|| of_line().next_back())
        .map_or(0, |(i, _)| i)
}

/// Rows the editor needs at `width` (its text area's width).
pub fn height(input: &InputState, width: usize) -> usize {
    rows(input.textarea.lines(), text_width(width)).len().max(1)
}

/// One column stays free at the right for the cursor after a full row.
fn text_width(width: usize) -> usize {
    width.saturating_sub(1).max(1)
}

pub fn render(frame: &mut Frame, area: Rect, input: &InputState) {
    let textarea = &input.textarea;
    let lines = textarea.lines();
    let cursor_style = textarea.cursor_style();
    if input.is_empty() {
        let placeholder = Line::from(vec![
            Span::styled(" ", cursor_style),
            Span::styled(
                textarea.placeholder_text().to_string(),
                textarea.placeholder_style().unwrap_or_default(),
            ),
        ]);
        frame.render_widget(Paragraph::new(placeholder), area);
        return;
    }
    let rows = rows(lines, text_width(area.width as usize));
    let cursor = textarea.cursor();
    let at = cursor_row(&rows, cursor);
    let height = area.height.max(1) as usize;
    let top = (at + 1).saturating_sub(height);
    let selection = textarea.selection_range();
    let selected = |line: usize, col: usize| {
        selection.is_some_and(|(from, to)| (line, col) >= from && (line, col) < to)
    };
    let shown: Vec<Line> = rows
        .iter()
        .enumerate()
        .skip(top)
        .take(height)
        .map(|(i, row)| {
            let mut spans = Vec::new();
            for (col, c) in lines[row.line]
                .chars()
                .enumerate()
                .take(row.end)
                .skip(row.start)
            {
                let style = if (row.line, col) == cursor {
                    cursor_style
                } else if selected(row.line, col) {
                    Style::default().add_modifier(Modifier::REVERSED)
                } else {
                    Style::default()
                };
                spans.push(Span::styled(c.to_string(), style));
            }
            // The cursor after the last character of its line.
            if i == at && cursor.1 >= row.end {
                spans.push(Span::styled(" ", cursor_style));
            }
            Line::from(spans)
        })
        .collect();
    frame.render_widget(Paragraph::new(shown), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[&str], width: usize) -> Vec<String> {
        let owned: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        rows(&owned, width)
            .iter()
            .map(|r| {
                owned[r.line]
                    .chars()
                    .skip(r.start)
                    .take(r.end - r.start)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn long_lines_wrap_at_spaces() {
        assert_eq!(
            texts(&["the quick brown fox jumps"], 10),
            ["the quick ", "brown fox ", "jumps"]
        );
        assert_eq!(texts(&["", "ab"], 10), ["", "ab"]);
        // A word longer than a row is cut.
        assert_eq!(texts(&["abcdefghijkl"], 5), ["abcde", "fghij", "kl"]);
        // Wide characters count as two columns.
        assert_eq!(texts(&["日本語です"], 4), ["日本", "語で", "す"]);
    }

    #[test]
    fn the_cursor_is_on_the_row_that_holds_its_column() {
        let lines = vec!["the quick brown fox".to_string(), "x".to_string()];
        let r = rows(&lines, 10);
        assert_eq!(cursor_row(&r, (0, 0)), 0);
        assert_eq!(cursor_row(&r, (0, 10)), 1);
        assert_eq!(cursor_row(&r, (0, 19)), 1, "the end of the line");
        assert_eq!(cursor_row(&r, (1, 1)), 2);
    }
}
