//! The chat pane: every entry of the conversation as wrapped lines (Markdown for answers,
//! thinking folded or dimmed), scrolled to the state's position. Lines of entries that did
//! not change are cached, so a frame while streaming renders only the answer being written.
//! An answer's tool calls follow its text; each result is its own block, one line folded.

use super::markdown;
use super::theme;
use super::wrap::{self, Wrapper};
use crate::chat::split_thinking;
use crate::chat::{Message, ToolCall};
use crate::stats::human_bytes;
use crate::tui::state::{Answer, AnswerStatus, Entry, EntryBody, NoticeLevel, State, ToolOutcome};
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;
use std::collections::HashMap;

/// Wrapped lines of entries, keyed by entry id; valid while revision, width and the thinking
/// and tool-result toggles are unchanged.
#[derive(Default)]
pub struct ChatCache {
    entries: HashMap<u64, CachedEntry>,
}

/// The toggles that change how entries are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct View {
    show_thinking: bool,
    show_tool_results: bool,
}

/// What the tree adds to an entry's header: selected, and which of how many siblings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Decor {
    selected: bool,
    siblings: Option<(usize, usize)>,
}

struct CachedEntry {
    key: (u64, usize, View, Decor),
    lines: Vec<Line<'static>>,
}

/// Draws the pane; returns (total lines, visible height) for scrolling.
pub fn render(
    frame: &mut Frame,
    area: Rect,
    state: &State,
    cache: &mut ChatCache,
) -> (usize, usize) {
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme::dim())
        .title(Span::styled(" taper ", theme::title()));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    // One column of margin each side of the text.
    let width = inner.width.saturating_sub(2) as usize;
    let height = inner.height as usize;

    cache
        .entries
        .retain(|id, _| state.conversation.entries.iter().any(|e| e.id == *id));
    let welcome = match state.conversation.entries.is_empty() {
        true => welcome(state, width),
        false => Vec::new(),
    };
    // The entry the tree's keys act on: the one selected, or the one being edited.
    let marked = state
        .select
        .map(|s| s.id)
        .or(state.editing.as_ref().map(|e| e.id));
    // Wrap what changed; everything else comes from the cache.
    for entry in &state.conversation.entries {
        let view = View {
            show_thinking: state.show_thinking,
            show_tool_results: state.show_tool_results,
        };
        let decor = Decor {
            selected: marked == Some(entry.id),
            siblings: state.conversation.siblings(entry.id),
        };
        let key = (entry.rev, width, view, decor);
        let cached = cache
            .entries
            .entry(entry.id)
            .or_insert_with(|| CachedEntry {
                key: (u64::MAX, 0, View::default(), Decor::default()),
                lines: Vec::new(),
            });
        if cached.key != key {
            cached.lines = entry_lines(entry, width, view);
            decorate(&mut cached.lines, decor);
            cached.key = key;
        }
    }
    let blocks: Vec<&[Line<'static>]> = std::iter::once(welcome.as_slice())
        .chain(
            state
                .conversation
                .entries
                .iter()
                .filter_map(|e| cache.entries.get(&e.id).map(|c| c.lines.as_slice())),
        )
        .collect();

    let total: usize = blocks.iter().map(|b| b.len()).sum();
    let bottom = total.saturating_sub(height);
    let mut top = if state.scroll.follow {
        bottom
    } else {
        state.scroll.top.min(bottom)
    };
    // A selected message is brought into view, its header near the top when it must move.
    if let Some(id) = state.select.map(|s| s.id) {
        let mut start = welcome.len();
        for entry in &state.conversation.entries {
            let len = cache.entries.get(&entry.id).map_or(0, |c| c.lines.len());
            if entry.id == id {
                let fits = start >= top && start + len.min(height) <= top + height;
                if !fits {
                    top = start.saturating_sub(1).min(bottom);
                }
                break;
            }
            start += len;
        }
    }
    // Only the visible lines are copied into the frame.
    let visible: Vec<Line<'static>> = blocks
        .iter()
        .flat_map(|b| b.iter())
        .skip(top)
        .take(height)
        .cloned()
        .collect();
    let text_area = Rect {
        x: inner.x + 1,
        width: inner.width.saturating_sub(1),
        ..inner
    };
    frame.render_widget(Paragraph::new(visible), text_area);
    if top < bottom {
        let more = format!(" ↓ {} more lines (End follows) ", bottom - top);
        let hint = Rect {
            x: area.x + area.width.saturating_sub(more.chars().count() as u16 + 2),
            y: area.y + area.height.saturating_sub(1),
            width: (more.chars().count() as u16).min(area.width),
            height: 1,
        };
        frame.render_widget(Paragraph::new(Span::styled(more, theme::warning())), hint);
    }
    (total, height)
}

fn welcome(state: &State, width: usize) -> Vec<Line<'static>> {
    let text = match (&state.model.loaded, &state.model.loading) {
        (_, Some(loading)) => format!(
            "Loading {}… You can type your first message meanwhile.",
            loading.entry.name
        ),
        (Some(info), None) => format!(
            "{} is ready ({}, {}, {}). Type a message and press Enter.",
            info.name,
            info.architecture,
            info.quantization,
            human_bytes(info.file_size)
        ),
        (None, None) => "No model loaded. Press Ctrl+P to pick one.".to_string(),
    };
    wrap::plain(&text, width, theme::dim(), "")
}

fn entry_lines(entry: &Entry, width: usize, view: View) -> Vec<Line<'static>> {
    let mut lines = match &entry.body {
        EntryBody::Notice { level, text } => {
            let style = match level {
                NoticeLevel::Info => theme::info(),
                NoticeLevel::Error => theme::error(),
            };
            let marker = match level {
                NoticeLevel::Info => "· ",
                NoticeLevel::Error => "✗ ",
            };
            let mut w = Wrapper::new(width);
            w.set_prefix(
                vec![Span::styled(marker, style)],
                vec![Span::styled("  ", style)],
            );
            w.text(text, style);
            w.finish()
        }
        EntryBody::ToolResult { message, outcome } => {
            tool_result_lines(message, outcome, width, view.show_tool_results)
        }
        EntryBody::Message { message, answer } => match (message.role, answer) {
            (_, Some(answer)) => {
                let mut lines = answer_lines(&message.content, answer, width, view.show_thinking);
                lines.extend(message.tool_calls.iter().flat_map(|c| call_lines(c, width)));
                lines
            }
            (_, None) => {
                let mut lines = vec![Line::from(Span::styled("You", theme::user_label()))];
                lines.extend(wrap::plain(&message.content, width, Style::default(), ""));
                lines
            }
        },
    };
    lines.push(Line::default());
    lines
}

/// Marks a selected entry's header, and adds `‹ n/m ›` to one that has siblings.
fn decorate(lines: &mut [Line<'static>], decor: Decor) {
    let Some(header) = lines.first_mut() else {
        return;
    };
    if let Some((n, of)) = decor.siblings {
        header
            .spans
            .push(Span::styled(format!("  ‹ {n}/{of} ›"), theme::info()));
    }
    if decor.selected {
        header
            .spans
            .insert(0, Span::styled("▶ ", theme::selected()));
        for span in header.spans.iter_mut().skip(1) {
            span.style = span.style.patch(theme::selected());
        }
    }
}

fn answer_lines(
    content: &str,
    answer: &Answer,
    width: usize,
    show_thinking: bool,
) -> Vec<Line<'static>> {
    let mut header = vec![Span::styled(answer.model.clone(), theme::model_label())];
    if let Some(u) = &answer.usage {
        header.push(Span::styled(
            format!(
                " · {} tok · {:.1} tok/s",
                u.generated_tokens,
                u.decode_tok_s()
            ),
            theme::dim(),
        ));
    }
    match answer.status {
        AnswerStatus::Streaming => header.push(Span::styled(" · writing…", theme::dim())),
        AnswerStatus::Stopped => header.push(Span::styled(" · stopped", theme::warning())),
        AnswerStatus::Failed => header.push(Span::styled(" · failed", theme::error())),
        AnswerStatus::Done => {}
    }
    let mut lines = vec![Line::from(header)];

    let split = split_thinking(content);
    if let Some(thinking) = split.thinking {
        let words = thinking.split_whitespace().count();
        let state = if split.open { "thinking…" } else { "thought" };
        if show_thinking {
            lines.push(Line::from(Span::styled(
                format!("▾ {state} ({words} words) · Ctrl+T folds"),
                theme::thinking(),
            )));
            let mut w = Wrapper::new(width);
            let bar = vec![Span::styled("│ ", theme::dim())];
            for line in thinking.split('\n') {
                w.set_prefix(bar.clone(), bar.clone());
                w.text(line, theme::thinking());
                w.end_line();
            }
            lines.extend(w.finish());
        } else {
            lines.push(Line::from(Span::styled(
                format!("▸ {state} ({words} words) · Ctrl+T shows"),
                theme::thinking(),
            )));
        }
    }
    let mut text = markdown::render(split.answer, width, Style::default());
    if answer.status == AnswerStatus::Streaming && !split.open {
        // A cursor where the next words will appear.
        match text.last_mut() {
            Some(last) => last.spans.push(Span::styled("▍", theme::dim())),
            None => text.push(Line::from(Span::styled("▍", theme::dim()))),
        }
    }
    lines.extend(text);
    let cut = answer
        .usage
        .as_ref()
        .and_then(|u| u.stop?.cut_short(u.generated_tokens));
    if let Some(cut) = cut.filter(|_| answer.status == AnswerStatus::Done) {
        let mut w = Wrapper::new(width);
        w.text(
            &format!("✂ {cut} · Ctrl+G continues · Ctrl+S raises max tokens"),
            theme::warning(),
        );
        lines.extend(w.finish());
    }
    if let Some(error) = &answer.error {
        let mut w = Wrapper::new(width);
        w.set_prefix(
            vec![Span::styled("✗ ", theme::error())],
            vec![Span::styled("  ", theme::error())],
        );
        w.text(error, theme::error());
        lines.extend(w.finish());
    }
    lines
}

/// One call: the tool's name and its arguments as the model wrote them.
fn call_lines(call: &ToolCall, width: usize) -> Vec<Line<'static>> {
    let mut w = Wrapper::new(width);
    w.set_prefix(
        vec![Span::styled("⚙ ", theme::info())],
        vec![Span::styled("  ", theme::info())],
    );
    w.text(&call.name, theme::model_label());
    w.text(" ", Style::default());
    w.text(call.arguments.trim(), theme::dim());
    w.finish()
}

/// A tool's result: a header (tool, time, size), then its first line (folded) or all of it.
fn tool_result_lines(
    message: &Message,
    outcome: &ToolOutcome,
    width: usize,
    unfolded: bool,
) -> Vec<Line<'static>> {
    let text = message.content.trim_end();
    let count = text.lines().count();
    let mut header = vec![
        Span::styled("↳ ", theme::info()),
        Span::styled(outcome.name.clone(), theme::model_label()),
    ];
    if outcome.is_error {
        header.push(Span::styled(" · failed", theme::error()));
    }
    if let Some(s) = outcome.elapsed_s {
        header.push(Span::styled(format!(" · {s:.1} s"), theme::dim()));
    }
    let fold = if unfolded {
        "Ctrl+K folds"
    } else {
        "Ctrl+K shows"
    };
    let lines_word = if count == 1 { "line" } else { "lines" };
    header.push(Span::styled(
        format!(" · {count} {lines_word} · {fold}"),
        theme::dim(),
    ));
    let mut lines = vec![Line::from(header)];
    let style = if outcome.is_error {
        theme::error()
    } else {
        Style::default()
    };
    let bar = vec![Span::styled("│ ", theme::dim())];
    let mut w = Wrapper::new(width);
    w.set_prefix(bar.clone(), bar);
    if unfolded {
        for line in text.split('\n') {
            w.text(line, style);
            w.end_line();
        }
        lines.extend(w.finish());
    } else {
        // One line: the first line, cut to the width.
        let first = text.lines().next().unwrap_or("");
        let room = width.saturating_sub(3);
        let mut shown: String = first.chars().take(room).collect();
        if first.chars().count() > room || count > 1 {
            shown.push('…');
        }
        w.text(&shown, style);
        lines.extend(w.finish().into_iter().take(1));
    }
    if let Some(note) = &outcome.note {
        let mut w = Wrapper::new(width);
        w.text(&format!("✂ {note}"), theme::warning());
        lines.extend(w.finish());
    }
    lines
}
