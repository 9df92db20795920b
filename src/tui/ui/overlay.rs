//! The overlays drawn over the chat: the model picker, the help and the settings form
//! (the sessions list has its own file).

use super::theme;
use crate::stats::human_bytes;
use crate::tui::keys::{help_lines, HelpLine};
use crate::tui::state::{Field, ModelEntry, State};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

/// The help's key column is at most this wide; longer key lists push their text along.
const HELP_KEYS_WIDTH: usize = 34;

/// A centred rectangle of at most `width` x `height` inside `area`.
pub fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let w = width.min(area.width);
    let h = height.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

pub(super) fn popup(frame: &mut Frame, area: Rect, title: &str) -> Rect {
    frame.render_widget(Clear, area);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme::info())
        .title(Span::styled(format!(" {title} "), theme::title()));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    inner
}

/// The filter being typed, with a cursor after it (the picker's and the sessions list's).
pub fn filter_line(frame: &mut Frame, area: Rect, filter: &str) {
    frame.render_widget(
        Paragraph::new(Line::from(vec![
            Span::styled(" filter: ", theme::dim()),
            Span::raw(filter.to_string()),
            Span::styled("▏", theme::info()),
        ])),
        area,
    );
}

pub fn picker(frame: &mut Frame, area: Rect, state: &State) {
    let area = centered(area, 96, 20);
    let inner = popup(frame, area, "Pick a model");
    let [filter_area, list_area, hint_area] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(inner);
    let p = &state.picker;
    filter_line(frame, filter_area, &p.filter);
    let visible = p.visible();
    let loaded = state.model.loaded.as_ref().map(|i| &i.path);
    let kept: &[std::path::PathBuf] = state.model.loaded.as_ref().map_or(&[], |i| &i.resident);
    let mut lines = Vec::new();
    if visible.is_empty() {
        let text = if p.scanning {
            "Looking for models…".to_string()
        } else if p.entries.is_empty() {
            format!(
                "No models in {}. Put .gguf files there, run `taper models pull NAME`, \
                 or start with -m PATH.",
                p.models_dir.display()
            )
        } else {
            "No model matches the filter.".to_string()
        };
        let text = Paragraph::new(Span::styled(text, theme::dim())).wrap(Wrap { trim: true });
        let area = Rect {
            x: list_area.x + 1,
            width: list_area.width.saturating_sub(2),
            ..list_area
        };
        frame.render_widget(text, area);
    }
    // Keep the selection in view.
    let height = list_area.height as usize;
    let first = p.selected.saturating_sub(height.saturating_sub(1));
    let name_width = (list_area.width as usize).saturating_sub(52).max(12);
    for (i, e) in visible.iter().enumerate().skip(first).take(height) {
        let mark = if Some(&e.path) == loaded {
            "●"
        } else if e.remote.is_none() && kept.contains(&e.path) {
            "○"
        } else {
            " "
        };
        lines.push(entry_line(e, mark, i == p.selected, name_width));
    }
    frame.render_widget(Paragraph::new(lines), list_area);
    frame.render_widget(
        Paragraph::new(Span::styled(
            " ● in use · ○ kept loaded (no load) · Enter loads · the conversation is kept",
            theme::dim(),
        )),
        hint_area,
    );
}

/// One model of the picker: name and facts, whether it must be downloaded, or its problem.
fn entry_line(e: &ModelEntry, mark: &str, selected: bool, name_width: usize) -> Line<'static> {
    let text = match (&e.problem, &e.download) {
        (Some(problem), _) => format!(" {mark} {:<name_width$.name_width$}  {problem}", e.name),
        (None, Some(_)) => format!(
            " {mark} {:<name_width$.name_width$}  {:<10} {:<8} {:>9}  ⇣ download",
            e.name,
            e.architecture,
            e.quantization,
            human_bytes(e.file_size)
        ),
        // A remote's model: where it is served instead of a file size.
        (None, None) if e.remote.is_some() => format!(
            " {mark} {:<name_width$.name_width$}  {:<10} {}",
            e.name, e.architecture, e.quantization
        ),
        (None, None) => format!(
            " {mark} {:<name_width$.name_width$}  {:<10} {:<8} {:>9}",
            e.name,
            e.architecture,
            e.quantization,
            human_bytes(e.file_size)
        ),
    };
    let style = if selected {
        theme::selected()
    } else if e.problem.is_some() {
        theme::dim()
    } else {
        Default::default()
    };
    Line::from(Span::styled(text, style))
}

/// Every key from the table, grouped by where it works; it scrolls when taller than the
/// screen.
pub fn help(frame: &mut Frame, area: Rect, state: &State) {
    let lines = help_lines();
    let width = lines
        .iter()
        .map(|l| match l {
            HelpLine::Key { keys, .. } => keys.chars().count(),
            _ => 0,
        })
        .max()
        .unwrap_or(0)
        .min(HELP_KEYS_WIDTH);
    // The footer stays in view: it says how to scroll and close.
    let height = (lines.len() as u16 + 2).min(area.height.saturating_sub(2));
    let area = centered(area, 90, height);
    let shown = area.height.saturating_sub(2) as usize;
    let top = state.help_top.min(lines.len().saturating_sub(shown));
    let title = if shown < lines.len() {
        format!("Keys ({}–{} of {})", top + 1, top + shown, lines.len())
    } else {
        "Keys".to_string()
    };
    let inner = popup(frame, area, &title);
    let text: Vec<Line> = lines
        .into_iter()
        .skip(top)
        .take(shown)
        .map(|line| match line {
            HelpLine::Heading(title) => {
                Line::from(Span::styled(format!(" {title}"), theme::heading()))
            }
            HelpLine::Key { keys, what } => Line::from(vec![
                Span::styled(format!("   {keys:<width$} "), theme::inline_code()),
                Span::raw(what),
            ]),
            HelpLine::Blank => Line::default(),
        })
        .collect();
    frame.render_widget(Paragraph::new(text), inner);
}

pub fn settings(frame: &mut Frame, area: Rect, state: &State) {
    let area = centered(area, 80, Field::ALL.len() as u16 + 9);
    let inner = popup(frame, area, "Settings (apply to the next answer)");
    let form = &state.form;
    let mut lines = Vec::new();
    for (i, field) in Field::ALL.iter().enumerate() {
        let selected = i == form.selected;
        let value = match (&form.editing, selected) {
            (Some(edit), true) => format!("{edit}▏"),
            _ => {
                let v = field.value(&state.settings);
                if v.is_empty() {
                    "(none)".to_string()
                } else {
                    v.replace('\n', " ")
                }
            }
        };
        let label = format!(" {:<16}", field.label());
        let style = if selected && form.editing.is_none() {
            theme::selected()
        } else if selected {
            theme::inline_code()
        } else {
            Default::default()
        };
        lines.push(Line::from(vec![
            Span::styled(
                label,
                if selected {
                    theme::selected()
                } else {
                    theme::dim()
                },
            ),
            Span::styled(format!(" {value}"), style),
        ]));
    }
    lines.push(Line::default());
    lines.push(Line::from(Span::styled(
        format!(" {}", form.field().hint()),
        theme::dim(),
    )));
    if let Some(error) = &form.error {
        lines.push(Line::from(Span::styled(
            format!(" {error}"),
            theme::error(),
        )));
    }
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}
