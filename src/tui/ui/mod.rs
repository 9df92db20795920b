//! Drawing: `render(frame, state, cache)` is a function of the state (the cache only
//! remembers wrapped lines of unchanged entries). One file per pane: chat, stats, overlays;
//! the input box, footer and the too-small message are small enough to live here.

mod chat;
mod editor;
mod markdown;
mod overlay;
mod sessions;
mod stats;
mod theme;
mod wrap;

pub use chat::ChatCache;
pub use markdown::render as markdown_lines;

use super::keymap;
use super::state::{Overlay, State, Viewport};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;

/// Below this the screen cannot be laid out usefully; a message says so instead.
pub const MIN_WIDTH: u16 = 50;
pub const MIN_HEIGHT: u16 = 14;
/// The stats panel is shown when the terminal is at least this wide.
const STATS_MIN_WIDTH: u16 = 90;
const STATS_WIDTH: u16 = 36;
/// The input box grows with its text up to this many lines.
const INPUT_MAX_LINES: u16 = 8;

/// Renders the whole screen. Returns what scrolling needs to know about the chat pane.
pub fn render(frame: &mut Frame, state: &State, cache: &mut ChatCache) -> Viewport {
    let area = frame.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        too_small(frame, area);
        return state.viewport;
    }
    // The editor's text area: inside the borders, after a column of padding.
    let editor_width = area.width.saturating_sub(3) as usize;
    let input_lines = (editor::height(&state.input, editor_width) as u16).clamp(1, INPUT_MAX_LINES);
    let [main, input_area, footer_area] = Layout::vertical([
        Constraint::Min(5),
        Constraint::Length(input_lines + 2),
        Constraint::Length(1),
    ])
    .areas(area);
    let (chat_area, stats_area) = if area.width >= STATS_MIN_WIDTH {
        let [c, s] =
            Layout::horizontal([Constraint::Min(30), Constraint::Length(STATS_WIDTH)]).areas(main);
        (c, Some(s))
    } else {
        (main, None)
    };
    let (total_lines, height) = chat::render(frame, chat_area, state, cache);
    if let Some(stats_area) = stats_area {
        stats::render(frame, stats_area, state);
    }
    input(frame, input_area, state);
    footer(frame, footer_area, state);
    match state.overlay {
        Overlay::None => {}
        Overlay::Picker => overlay::picker(frame, area, state),
        Overlay::Help => overlay::help(frame, area, state),
        Overlay::Settings => overlay::settings(frame, area, state),
        Overlay::Sessions => sessions::render(frame, area, state),
    }
    Viewport {
        total_lines,
        height,
    }
}

fn input(frame: &mut Frame, area: Rect, state: &State) {
    if let Some(call) = state.tools.asking() {
        return approval(frame, area, call);
    }
    let (title, style) = match (&state.status, &state.model.loading) {
        (Some(status), _) => (format!(" {status} "), theme::warning()),
        _ if state.select.is_some_and(|s| s.confirm_delete) => (
            " Delete the selected message and everything after it on this branch? y deletes, n keeps "
                .to_string(),
            theme::warning(),
        ),
        _ if state.select.is_some() => (
            " selecting a message · Esc back to the editor ".to_string(),
            theme::info(),
        ),
        _ if state.editing.is_some() => (
            " editing an earlier message · Enter sends it as a new branch · Esc leaves the edit "
                .to_string(),
            theme::info(),
        ),
        (None, Some(_)) => (
            " message · the model is loading, you can type ".to_string(),
            theme::dim(),
        ),
        (None, None) => (" message ".to_string(), theme::dim()),
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(if state.overlay == Overlay::None {
            theme::info()
        } else {
            theme::dim()
        })
        .title(Span::styled(title, style));
    let block = match attachments_line(state) {
        Some(line) => block.title_bottom(line),
        None => block,
    };
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let text = Rect {
        x: inner.x + 1,
        width: inner.width.saturating_sub(1),
        ..inner
    };
    editor::render(frame, text, &state.input);
}

/// The files the message brings in, on the editor's lower border: each with its size in
/// tokens, or why it cannot go.
fn attachments_line(state: &State) -> Option<Line<'static>> {
    use super::state::attachments::{token_label, FileState};
    if state.attachments.files.is_empty() {
        return None;
    }
    let mut spans = vec![Span::raw(" ")];
    for a in &state.attachments.files {
        let (what, style) = match &a.file {
            FileState::Reading => ("reading…".to_string(), theme::dim()),
            FileState::Text { tokens, exact, .. } => {
                match super::update::attachment_too_long(state, *tokens, *exact) {
                    Some(why) => (why.short(), theme::warning()),
                    None => (token_label(*tokens, *exact), theme::info()),
                }
            }
            FileState::Missing => ("no such file: sent as text".to_string(), theme::dim()),
            FileState::Refused(why) => (why.clone(), theme::warning()),
        };
        spans.push(Span::styled(format!("@{} ", a.path), theme::model_label()));
        spans.push(Span::styled(format!("{what} "), style));
    }
    Some(Line::from(spans))
}

/// In the input box's place while a call waits: what will run, and the question.
fn approval(frame: &mut Frame, area: Rect, call: &crate::chat::ToolCall) {
    let title = format!(
        " run {}? y once · a always · n refuse · Esc stop ",
        call.name
    );
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme::warning())
        .title(Span::styled(title, theme::warning()));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let text = Line::from(vec![
        Span::styled(format!("{} ", call.name), theme::model_label()),
        Span::raw(call.arguments.trim().to_string()),
    ]);
    let text_area = Rect {
        x: inner.x + 1,
        width: inner.width.saturating_sub(1),
        ..inner
    };
    frame.render_widget(Paragraph::new(text).wrap(Wrap { trim: false }), text_area);
}

/// The keys that matter now. When they do not all fit, the middle ones give way: the first
/// (the main action) and the last two (help, quit) always show.
fn footer(frame: &mut Frame, area: Rect, state: &State) {
    let mut keys = keymap::footer(state);
    let width = |keys: &[(String, &str)]| -> usize {
        keys.iter()
            .map(|(k, w)| k.chars().count() + w.chars().count() + 4)
            .sum()
    };
    while keys.len() > 3 && width(&keys) > area.width as usize {
        keys.remove(keys.len() - 3);
    }
    let mut spans = Vec::new();
    for (key, what) in keys {
        spans.push(Span::styled(format!(" {key}"), theme::footer_key()));
        spans.push(Span::styled(format!(" {what}  "), theme::dim()));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn too_small(frame: &mut Frame, area: Rect) {
    let text = format!(
        "The terminal is too small ({}×{}). taper needs at least {MIN_WIDTH}×{MIN_HEIGHT}. \
         Make it larger, or press Ctrl+Q to quit.",
        area.width, area.height
    );
    let height = 4.min(area.height);
    let rect = Rect {
        y: area.y + (area.height - height) / 2,
        height,
        ..area
    };
    frame.render_widget(
        Paragraph::new(Span::styled(text, theme::warning()))
            .wrap(Wrap { trim: true })
            .centered(),
        rect,
    );
}
