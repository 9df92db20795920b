//! The sessions overlay (Ctrl+O): the filter being typed, then the saved conversations it
//! lets through, newest first; unreadable files are listed with the reason. The bottom line
//! shows the rename being typed or the delete question.

use super::overlay::{centered, filter_line, popup};
use super::theme;
use crate::sessions::time::format_utc;
use crate::sessions::Listed;
use crate::tui::state::{ListMode, State};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

pub fn render(frame: &mut Frame, area: Rect, state: &State) {
    let area = centered(area, 100, 20);
    let inner = popup(frame, area, "Saved conversations");
    let [filter_area, list_area, hint_area] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Min(1),
        Constraint::Length(2),
    ])
    .areas(inner);
    let list = &state.sessions;
    filter_line(frame, filter_area, &list.filter);
    let visible = list.visible();
    if visible.is_empty() {
        empty(frame, list_area, state);
    }
    let current = state.session.path();
    let height = list_area.height as usize;
    let first = list.selected.saturating_sub(height.saturating_sub(1));
    let width = list_area.width as usize;
    let lines: Vec<Line> = visible
        .into_iter()
        .enumerate()
        .skip(first)
        .take(height)
        .map(|(i, entry)| {
            let open = Some(&entry.path) == current.as_ref();
            entry_line(entry, open, i == list.selected, width)
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), list_area);
    frame.render_widget(
        Paragraph::new(hint(state)).wrap(Wrap { trim: false }),
        hint_area,
    );
}

/// What the list says while it is read, or when there is nothing in it.
fn empty(frame: &mut Frame, list_area: Rect, state: &State) {
    let text = if state.sessions.loading {
        "Reading the sessions…".to_string()
    } else if !state.sessions.entries.is_empty() {
        format!(
            "No saved conversation mentions “{}”. Backspace widens the filter.",
            state.sessions.filter
        )
    } else {
        format!(
            "No saved conversations in {} yet. Each one is saved there as it goes.",
            state.session.dir.display()
        )
    };
    let area = Rect {
        x: list_area.x + 1,
        width: list_area.width.saturating_sub(2),
        ..list_area
    };
    frame.render_widget(
        Paragraph::new(Span::styled(text, theme::dim())).wrap(Wrap { trim: true }),
        area,
    );
}

/// One session: title, messages, date and models, or why its file cannot be read.
fn entry_line(entry: &Listed, open: bool, selected: bool, width: usize) -> Line<'static> {
    let mark = if open { "●" } else { " " };
    let text = match &entry.summary {
        Ok(s) => {
            // Mark, counts, date and models take 57 columns; the title gets the rest.
            let title_width = width.saturating_sub(57).max(10);
            let date = format_utc(s.updated_at);
            let date = date.trim_end_matches(" UTC");
            let mut models: String = s.models.join(", ").chars().take(24).collect();
            if s.models.join(", ").chars().count() > 24 {
                models.pop();
                models.push('…');
            }
            format!(
                " {mark} {:<title_width$.title_width$}  {:>3} msgs  {date}  {models}",
                s.title, s.messages,
            )
        }
        Err(why) => format!(" ! {}  unreadable: {why}", entry.id),
    };
    let text: String = text.chars().take(width).collect();
    let style = if selected {
        theme::selected()
    } else if entry.summary.is_err() {
        theme::error()
    } else {
        Default::default()
    };
    Line::from(Span::styled(text, style))
}

/// The bottom line: the title being typed, the delete question, or what the keys do.
fn hint(state: &State) -> Line<'static> {
    let list = &state.sessions;
    match (&list.mode, list.selected_entry()) {
        (ListMode::Rename(title), _) => Line::from(vec![
            Span::styled(" new title: ", theme::dim()),
            Span::raw(title.clone()),
            Span::styled("▏", theme::info()),
        ]),
        (ListMode::ConfirmDelete, Some(entry)) => Line::from(Span::styled(
            format!(
                " Delete {}? This removes {}.  y deletes · n keeps it",
                entry
                    .summary
                    .as_ref()
                    .map(|s| format!("“{}”", s.title))
                    .unwrap_or_else(|_| entry.id.clone()),
                entry.path.display()
            ),
            theme::warning(),
        )),
        _ => Line::from(Span::styled(
            " ● this conversation · type to filter · Enter continues one · F2 renames · \
             Delete deletes",
            theme::dim(),
        )),
    }
}
