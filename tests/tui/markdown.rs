//! Markdown in answers renders the way a reader expects, wrapped to the pane.

use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use taper::tui::ui::markdown_lines;

fn lines(md: &str, width: usize) -> Vec<Line<'static>> {
    markdown_lines(md, width, Style::default())
}

fn text(md: &str, width: usize) -> Vec<String> {
    lines(md, width).iter().map(|l| l.to_string()).collect()
}

/// The style of the first span containing `needle`.
fn style_of(md: &str, needle: &str) -> Style {
    lines(md, 80)
        .iter()
        .flat_map(|l| l.spans.clone())
        .find(|s| s.content.contains(needle))
        .unwrap_or_else(|| panic!("{needle:?} not rendered"))
        .style
}

#[test]
fn headings_keep_their_hashes_and_stand_out() {
    assert_eq!(text("# Title\n\nBody", 40), ["# Title", "", "Body"]);
    assert!(style_of("## Sub", "Sub")
        .add_modifier
        .contains(Modifier::BOLD));
}

#[test]
fn emphasis_and_strong_are_styled_not_starred() {
    assert_eq!(text("a *b* **c** ~~d~~", 40), ["a b c d"]);
    assert!(style_of("a *b*", "b")
        .add_modifier
        .contains(Modifier::ITALIC));
    assert!(style_of("a **c**", "c")
        .add_modifier
        .contains(Modifier::BOLD));
    assert!(style_of("~~d~~", "d")
        .add_modifier
        .contains(Modifier::CROSSED_OUT));
}

#[test]
fn lists_get_bullets_and_numbers_and_nest() {
    assert_eq!(
        text("- one\n- two\n  - inner\n\n1. first\n2. second", 40),
        ["• one", "• two", "  • inner", "", "1. first", "2. second"]
    );
}

#[test]
fn list_items_wrap_under_their_text() {
    assert_eq!(
        text("- alpha beta gamma delta", 14),
        ["• alpha beta", "  gamma delta"]
    );
}

#[test]
fn inline_code_is_set_apart_by_style() {
    assert_eq!(text("use `Vec<T>` here", 40), ["use Vec<T> here"]);
    assert_ne!(style_of("use `Vec<T>` here", "Vec<T>"), Style::default());
}

#[test]
fn fenced_code_is_set_apart_and_keeps_its_spaces() {
    let md = "Look:\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\nDone.";
    assert_eq!(
        text(md, 40),
        [
            "Look:",
            "",
            "┌─ rust",
            "│ fn main() {",
            "│     println!(\"hi\");",
            "│ }",
            "└─",
            "",
            "Done."
        ]
    );
}

#[test]
fn long_code_lines_break_at_the_width_instead_of_being_cut() {
    let md = "```\nabcdefghijklmnop\n```";
    assert_eq!(text(md, 10), ["┌─ code", "│ abcdefgh", "│ ijklmnop", "└─"]);
}

#[test]
fn an_unclosed_fence_while_streaming_is_already_a_code_block() {
    assert_eq!(text("```py\nx = 1", 20), ["┌─ py", "│ x = 1", "└─"]);
}

#[test]
fn quotes_get_a_bar() {
    assert_eq!(text("> wise words", 40), ["▎ wise words"]);
}

#[test]
fn links_show_their_address() {
    assert_eq!(
        text("see [docs](https://docs.rs)", 40),
        ["see docs (https://docs.rs)"]
    );
}

#[test]
fn paragraphs_wrap_at_word_boundaries() {
    assert_eq!(
        text("The quick brown fox jumps over the lazy dog", 16),
        ["The quick brown", "fox jumps over", "the lazy dog"]
    );
}

#[test]
fn tables_render_as_aligned_rows() {
    assert_eq!(
        text("| a | b |\n|---|---|\n| 1 | 2 |", 40),
        ["a │ b", "1 │ 2"]
    );
}
