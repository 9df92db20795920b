//! Markdown answers as wrapped, styled lines: headings, emphasis, lists, quotes, inline code,
//! fenced code blocks set apart with a gutter, rules, links and simple tables. Parsing is
//! pulldown-cmark's (CommonMark); this file only decides how each element looks.

use super::theme;
use super::wrap::Wrapper;
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

/// A list item being written: its marker shows on its first line only.
struct Item {
    marker: String,
    indent: String,
    /// `Wrapper::lines_started` when the item began: the marker is unused while equal.
    mark: usize,
}

/// One level of list nesting.
struct List {
    /// The next number of an ordered list.
    next: Option<u64>,
}

struct Renderer {
    out: Wrapper,
    width: usize,
    base: Style,
    /// Inline styles in effect (emphasis, strong, links...), innermost last.
    styles: Vec<Style>,
    lists: Vec<List>,
    /// List items enclosing the text, innermost last.
    items: Vec<Item>,
    quote_depth: usize,
    code: Option<String>,
    link: Option<String>,
    table_row: Vec<String>,
    table_cell: Option<String>,
}

/// Renders `text` as Markdown, wrapped to `width`, on top of `base` style.
pub fn render(text: &str, width: usize, base: Style) -> Vec<Line<'static>> {
    let mut r = Renderer {
        out: Wrapper::new(width),
        width,
        base,
        styles: vec![base],
        lists: Vec::new(),
        items: Vec::new(),
        quote_depth: 0,
        code: None,
        link: None,
        table_row: Vec::new(),
        table_cell: None,
    };
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES;
    for event in Parser::new_ext(text, options) {
        r.event(event);
    }
    if r.code.is_some() {
        // An answer still streaming inside a fence: close the block as it stands.
        r.end_code_block();
    }
    let mut lines = r.out.finish();
    while lines.last().is_some_and(|l| l.width() == 0) {
        lines.pop();
    }
    lines
}

impl Renderer {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or(self.base)
    }

    fn push_style(&mut self, f: impl FnOnce(Style) -> Style) {
        let s = f(self.style());
        self.styles.push(s);
    }

    /// Sets the wrapper's prefixes from the enclosing blocks for the next line.
    fn apply_prefix(&mut self) {
        let quote = theme::dim();
        let mut first = Vec::new();
        let mut rest = Vec::new();
        for _ in 0..self.quote_depth {
            first.push(Span::styled("▎ ", quote));
            rest.push(Span::styled("▎ ", quote));
        }
        let n = self.items.len();
        for (i, item) in self.items.iter().enumerate() {
            // Only the innermost item shows its marker, and only on its first line.
            let fresh = i + 1 == n && item.mark == self.out.lines_started;
            let marker = if fresh { &item.marker } else { &item.indent };
            first.push(Span::styled(marker.clone(), self.base));
            rest.push(Span::styled(item.indent.clone(), self.base));
        }
        self.out.set_prefix(first, rest);
    }

    fn start_block(&mut self) {
        self.out.flush();
        // Blocks are separated by a blank line, except the first lines of a list item.
        let in_fresh_item = self
            .items
            .last()
            .is_some_and(|item| item.mark == self.out.lines_started);
        if !self.out.ends_with_blank() && !in_fresh_item {
            self.out.blank_line();
        }
        self.apply_prefix();
    }

    fn event(&mut self, event: Event<'_>) {
        if let Some(cell) = &mut self.table_cell {
            match &event {
                Event::Text(t) | Event::Code(t) => return cell.push_str(t),
                Event::End(TagEnd::TableCell) => {}
                Event::Start(_) | Event::End(_) => return,
                _ => return,
            }
        }
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => match &mut self.code {
                Some(code) => code.push_str(&text),
                None => {
                    let style = self.style();
                    self.out.text(&text, style);
                }
            },
            Event::Code(code) => {
                let style = theme::inline_code();
                self.out.text(&code, style);
            }
            Event::SoftBreak => {
                let style = self.style();
                self.out.text(" ", style);
            }
            Event::HardBreak => {
                self.out.flush();
                self.apply_prefix();
            }
            Event::Rule => {
                self.start_block();
                let rule = "─".repeat(self.width.min(40));
                self.out.hard(&rule, theme::dim());
                self.out.flush();
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                let style = self.style();
                self.out.text(&html, style);
            }
            Event::TaskListMarker(done) => {
                let style = self.style();
                self.out.text(if done { "[x] " } else { "[ ] " }, style);
            }
            Event::FootnoteReference(_) | Event::InlineMath(_) | Event::DisplayMath(_) => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.start_block(),
            Tag::Heading { level, .. } => {
                self.start_block();
                // The hashes stay (dimmed), so headings read as headings without colours.
                let hashes = "#".repeat(level as usize);
                self.out.text(&format!("{hashes} "), theme::dim());
                let style = match level {
                    HeadingLevel::H1 => theme::heading().add_modifier(Modifier::UNDERLINED),
                    HeadingLevel::H2 => theme::heading(),
                    _ => theme::heading().add_modifier(Modifier::ITALIC),
                };
                self.styles.push(style);
            }
            Tag::BlockQuote(_) => {
                self.start_block();
                self.quote_depth += 1;
                self.apply_prefix();
                self.push_style(|s| s.add_modifier(Modifier::ITALIC));
            }
            Tag::CodeBlock(kind) => {
                self.start_block();
                let lang = match kind {
                    CodeBlockKind::Fenced(lang) => {
                        lang.split_whitespace().next().unwrap_or("").to_string()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                let label = if lang.is_empty() {
                    "code".to_string()
                } else {
                    lang
                };
                self.out.hard(&format!("┌─ {label}"), theme::dim());
                self.out.flush();
                self.code = Some(String::new());
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.start_block();
                } else {
                    self.out.flush();
                }
                self.lists.push(List { next: start });
            }
            Tag::Item => {
                self.out.flush();
                let marker = match self.lists.last_mut() {
                    Some(List { next: Some(n) }) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "• ".to_string(),
                };
                let indent = " ".repeat(marker.chars().count());
                let mark = self.out.lines_started;
                self.items.push(Item {
                    marker,
                    indent,
                    mark,
                });
                self.apply_prefix();
            }
            Tag::Emphasis => self.push_style(|s| s.add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(|s| s.add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(|s| s.add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.link = Some(dest_url.to_string());
                self.push_style(|s| s.patch(theme::link()));
            }
            Tag::Image { dest_url, .. } => {
                self.link = Some(dest_url.to_string());
                self.push_style(|s| s.patch(theme::link()));
            }
            Tag::Table(_) => self.start_block(),
            Tag::TableHead | Tag::TableRow => self.table_row.clear(),
            Tag::TableCell => self.table_cell = Some(String::new()),
            _ => self.push_style(|s| s),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.out.flush(),
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.out.flush();
            }
            TagEnd::BlockQuote(_) => {
                self.styles.pop();
                self.out.flush();
                self.quote_depth = self.quote_depth.saturating_sub(1);
                self.apply_prefix();
            }
            TagEnd::CodeBlock => self.end_code_block(),
            TagEnd::List(_) => {
                self.lists.pop();
                self.out.flush();
            }
            TagEnd::Item => {
                self.out.flush();
                self.items.pop();
                self.apply_prefix();
            }
            TagEnd::Link | TagEnd::Image => {
                self.styles.pop();
                if let Some(url) = self.link.take() {
                    if !url.is_empty() && !url.starts_with('#') {
                        self.out.text(&format!(" ({url})"), theme::dim());
                    }
                }
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::TableCell => {
                if let Some(cell) = self.table_cell.take() {
                    self.table_row.push(cell.trim().to_string());
                }
            }
            TagEnd::TableHead | TagEnd::TableRow => {
                let row = std::mem::take(&mut self.table_row).join(" │ ");
                let style = if tag == TagEnd::TableHead {
                    self.style().add_modifier(Modifier::BOLD)
                } else {
                    self.style()
                };
                self.apply_prefix();
                self.out.text(&row, style);
                self.out.flush();
            }
            TagEnd::Table => self.out.flush(),
            _ => {
                self.styles.pop();
            }
        }
        if self.styles.is_empty() {
            self.styles.push(self.base);
        }
    }

    /// Code keeps its spaces and line breaks, broken only at the width, behind a gutter.
    fn end_code_block(&mut self) {
        let Some(code) = self.code.take() else { return };
        let code = code.strip_suffix('\n').unwrap_or(&code);
        let gutter = Span::styled("│ ", theme::dim());
        for line in code.split('\n') {
            let mut first = Vec::new();
            for _ in 0..self.quote_depth {
                first.push(Span::styled("▎ ", theme::dim()));
            }
            for item in &self.items {
                first.push(Span::styled(item.indent.clone(), self.base));
            }
            first.push(gutter.clone());
            self.out.set_prefix(first.clone(), first);
            self.out
                .hard(&line.replace('\t', "    "), theme::code_block());
            self.out.end_line();
        }
        self.apply_prefix();
        self.out.hard("└─", theme::dim());
        self.out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(md: &str, width: usize) -> Vec<String> {
        render(md, width, Style::default())
            .iter()
            .map(|l| l.to_string())
            .collect()
    }

    #[test]
    fn paragraphs_are_separated_by_a_blank_line() {
        assert_eq!(text("one\n\ntwo", 20), ["one", "", "two"]);
    }

    #[test]
    fn soft_breaks_join_lines() {
        assert_eq!(text("one\ntwo", 20), ["one two"]);
    }
}
