//! The message editor: a multi-line `tui-textarea`, plus the earlier prompts that Up and Down
//! recall when the editor is empty.

use crate::tui::line_edit::{self, Cut};
use crossterm::event::KeyEvent;
use ratatui::style::{Modifier, Style};
use tui_textarea::{CursorMove, TextArea};

#[derive(Debug, Clone)]
pub struct InputState {
    pub textarea: TextArea<'static>,
    /// Sent prompts, oldest first.
    history: Vec<String>,
    /// Which history entry is shown, while the user browses it unchanged.
    recall: Option<usize>,
}

impl Default for InputState {
    fn default() -> Self {
        Self {
            textarea: new_textarea(""),
            history: Vec::new(),
            recall: None,
        }
    }
}

fn new_textarea(text: &str) -> TextArea<'static> {
    let mut textarea = TextArea::new(text.split('\n').map(str::to_string).collect());
    // The cursor line is not underlined: the editor is small and the cursor is enough.
    textarea.set_cursor_line_style(Style::default());
    textarea.set_cursor_style(Style::default().add_modifier(Modifier::REVERSED));
    textarea.set_placeholder_text("Ask anything…");
    textarea.move_cursor(CursorMove::Bottom);
    textarea.move_cursor(CursorMove::End);
    textarea
}

impl InputState {
    pub fn text(&self) -> String {
        self.textarea.lines().join("\n")
    }

    pub fn is_empty(&self) -> bool {
        self.textarea.lines().iter().all(|l| l.is_empty())
    }

    pub fn line_count(&self) -> usize {
        self.textarea.lines().len()
    }

    pub fn set_text(&mut self, text: &str) {
        self.textarea = new_textarea(text);
    }

    /// Empties the editor and remembers `text` for recall.
    pub fn take(&mut self) -> String {
        let text = self.text();
        if self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        self.recall = None;
        self.set_text("");
        text
    }

    /// Up on an empty editor (or on a recalled prompt's first line) shows an older prompt.
    pub fn can_recall_older(&self) -> bool {
        !self.history.is_empty()
            && (self.is_empty() || self.recall.is_some())
            && self.textarea.cursor().0 == 0
    }

    /// Down while browsing the history, on the last line, shows a newer prompt.
    pub fn can_recall_newer(&self) -> bool {
        self.recall.is_some() && self.textarea.cursor().0 + 1 >= self.line_count()
    }

    pub fn recall_older(&mut self) {
        let index = match self.recall {
            Some(0) => 0,
            Some(i) => i - 1,
            None => self.history.len().saturating_sub(1),
        };
        if let Some(text) = self.history.get(index).cloned() {
            self.set_text(&text);
            self.recall = Some(index);
        }
    }

    pub fn recall_newer(&mut self) {
        match self.recall {
            Some(i) if i + 1 < self.history.len() => {
                let text = self.history[i + 1].clone();
                self.set_text(&text);
                self.recall = Some(i + 1);
            }
            _ => {
                self.set_text("");
                self.recall = None;
            }
        }
    }

    /// An editing key; a change ends history browsing.
    pub fn key(&mut self, key: KeyEvent) {
        if self.textarea.input(key) {
            self.recall = None;
        }
    }

    /// Ctrl+W or Ctrl+U: deletes the word (as [`line_edit::word_start`] finds it) or
    /// everything before the cursor on its line; at the start of a line, the line break, so
    /// pressing on empties the message. One undo step each.
    pub fn cut(&mut self, cut: Cut) {
        let (row, col) = self.textarea.cursor();
        let changed = if col == 0 {
            self.textarea.delete_char()
        } else {
            match cut {
                Cut::Char => self.textarea.delete_char(),
                Cut::ToStart => self.textarea.delete_line_by_head(),
                Cut::Word => {
                    let line = &self.textarea.lines()[row];
                    let before: String = line.chars().take(col).collect();
                    let chars = before[line_edit::word_start(&before)..].chars().count();
                    for _ in 0..chars {
                        self.textarea.move_cursor(CursorMove::Back);
                    }
                    self.textarea.delete_str(chars)
                }
            }
        };
        if changed {
            self.recall = None;
        }
    }

    /// Ctrl+_: takes back the last change (typing, a deletion, a paste).
    pub fn undo(&mut self) {
        if self.textarea.undo() {
            self.recall = None;
        }
    }

    pub fn newline(&mut self) {
        self.textarea.insert_newline();
        self.recall = None;
    }

    /// Pasted text goes in as text, newlines included: a paste never sends.
    pub fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        self.textarea.insert_str(text);
        self.recall = None;
    }

    /// The text from the start of the message to the cursor.
    pub fn before_cursor(&self) -> String {
        let (row, col) = self.textarea.cursor();
        let lines = self.textarea.lines();
        let mut text = lines[..row.min(lines.len())].join("\n");
        if row > 0 {
            text.push('\n');
        }
        if let Some(line) = lines.get(row) {
            text.extend(line.chars().take(col));
        }
        text
    }

    /// Replaces the `chars` characters before the cursor with `text` (a completion).
    pub fn replace_before_cursor(&mut self, chars: usize, text: &str) {
        for _ in 0..chars {
            self.textarea.delete_char();
        }
        self.textarea.insert_str(text);
        self.recall = None;
    }

    pub fn history(&self) -> &[String] {
        &self.history
    }
}
