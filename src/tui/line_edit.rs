//! Readline's deletions for the one-line fields (the picker's and the sessions' filters, a
//! setting's value, a conversation's title): Backspace, Ctrl+W and Ctrl+U. These fields keep
//! their cursor at the end, so every deletion cuts the text short. The message editor has a
//! cursor of its own and uses [`word_start`] on the text before it, so a word is the same
//! thing in every field.

/// What a deletion before the cursor takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// One character (Backspace).
    Char,
    /// The word before the cursor and the spaces after it (Ctrl+W).
    Word,
    /// Everything before the cursor on its line (Ctrl+U).
    ToStart,
}

/// Where the word that ends `text` starts, as a byte index: spaces at the end are skipped,
/// then everything back to the previous space goes, as readline's Ctrl+W does. So a path or
/// `@file` mention goes whole, and `0.7` is one word, not three.
pub fn word_start(text: &str) -> usize {
    let trimmed = text.trim_end();
    trimmed
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace())
        .map_or(0, |(i, c)| i + c.len_utf8())
}

/// Cuts `text` as `cut` says; whether anything was deleted.
pub fn cut(text: &mut String, cut: Cut) -> bool {
    let keep = match cut {
        Cut::Char => text.char_indices().next_back().map_or(0, |(i, _)| i),
        Cut::Word => word_start(text),
        Cut::ToStart => 0,
    };
    let changed = keep < text.len();
    text.truncate(keep);
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn after(text: &str, how: Cut) -> String {
        let mut text = text.to_string();
        cut(&mut text, how);
        text
    }

    #[test]
    fn ctrl_w_deletes_the_last_word_and_the_spaces_after_it() {
        assert_eq!(after("top p 0.95", Cut::Word), "top p ");
        assert_eq!(after("top p  ", Cut::Word), "top ");
        assert_eq!(after("read @src/tui/mod.rs", Cut::Word), "read ");
        assert_eq!(after("one", Cut::Word), "");
        assert_eq!(after("   ", Cut::Word), "");
        assert_eq!(after("", Cut::Word), "");
    }

    #[test]
    fn words_and_characters_are_unicode_aware() {
        assert_eq!(after("Grüße aus Köln", Cut::Word), "Grüße aus ");
        assert_eq!(after("日本\u{3000}語", Cut::Word), "日本\u{3000}");
        assert_eq!(after("café", Cut::Char), "caf");
    }

    #[test]
    fn ctrl_u_deletes_everything_before_the_cursor() {
        assert_eq!(after("a title with words", Cut::ToStart), "");
    }

    #[test]
    fn cutting_reports_whether_anything_went() {
        let mut empty = String::new();
        assert!(!cut(&mut empty, Cut::Char));
        assert!(!cut(&mut empty, Cut::Word));
        let mut text = "x".to_string();
        assert!(cut(&mut text, Cut::ToStart));
    }
}
