//! Saved conversations in the TUI, the pure half: autosave after every finished or stopped
//! answer, resume, the sessions list (open, rename, delete with a confirmation) and the
//! Markdown export. State in, [`SessionEffect`]s out; the app's runner does the file work
//! and draws the random part of new ids, and its results come back as [`SessionMsg`]s.

use super::saved::record;
pub use super::saved::restore;
use crate::sessions::{export, Session};
use crate::tui::keymap::SessionAction;
use crate::tui::line_edit::{self, Cut};
use crate::tui::msg::{Effect, SessionEffect, SessionMsg};
use crate::tui::state::{ListMode, NoticeLevel, Overlay, State};

/// Asks the app for the next id's tag, unless one is at hand.
pub(super) fn want_tag(state: &State, fx: &mut Vec<Effect>) {
    if state.session.next_tag.is_none() {
        fx.push(Effect::Session(SessionEffect::DrawTag));
    }
}

/// Saves the conversation if it has messages and changed since the last save.
pub(super) fn autosave(state: &mut State, fx: &mut Vec<Effect>) {
    if !state.conversation.has_messages() {
        return;
    }
    // The save goes first; a request for the next tag (a first save's) after it.
    let mut after = Vec::new();
    let session = record(state, &mut after);
    let unchanged = state.session.last_saved.as_deref().is_some_and(|last| {
        Session {
            updated_at: session.updated_at,
            ..last.clone()
        } == session
    });
    if unchanged {
        return;
    }
    state.session.last_saved = Some(Box::new(session.clone()));
    fx.push(Effect::Session(SessionEffect::Save {
        dir: state.session.dir.clone(),
        session: Box::new(session),
    }));
    fx.extend(after);
}

/// Starts a new conversation: the current one is saved as it stands, then forgotten.
pub(super) fn new_conversation(state: &mut State, fx: &mut Vec<Effect>) {
    autosave(state, fx);
    state.conversation.clear();
    state.session.reset();
    state.code_cursor = None;
    state.select = None;
    state.editing = None;
}

pub(super) fn act(state: &mut State, action: SessionAction, fx: &mut Vec<Effect>) {
    use SessionAction as S;
    let list = &mut state.sessions;
    match action {
        S::OpenList => {
            state.overlay = Overlay::Sessions;
            list.mode = ListMode::Browse;
            list.filter.clear();
            list.loading = true;
            list.selected = 0;
            fx.push(Effect::Session(SessionEffect::List(
                state.session.dir.clone(),
            )));
        }
        S::Export => export_markdown(state, fx),
        S::Up => list.move_selection(-1),
        S::Down => list.move_selection(1),
        S::Load => open_selected(state, fx),
        S::Rename => {
            if let Some(Ok(summary)) = list.selected_entry().map(|l| &l.summary) {
                list.mode = ListMode::Rename(summary.title.clone());
            }
        }
        S::Delete => {
            if list.selected_entry().is_some() {
                list.mode = ListMode::ConfirmDelete;
            }
        }
        S::Confirm => confirm(state, fx),
        S::Cancel => match list.mode {
            ListMode::Browse => state.overlay = Overlay::None,
            _ => list.mode = ListMode::Browse,
        },
        S::Type(c) => match &mut list.mode {
            ListMode::Rename(text) => text.push(c),
            ListMode::Browse => list.push_filter(c.encode_utf8(&mut [0; 4])),
            ListMode::ConfirmDelete => {}
        },
        S::Backspace => match &mut list.mode {
            ListMode::Rename(text) => {
                line_edit::cut(text, Cut::Char);
            }
            ListMode::Browse => list.pop_filter(),
            ListMode::ConfirmDelete => {}
        },
    }
}

/// A paste into the title being renamed, or into the filter (on one line).
pub(super) fn paste(state: &mut State, text: &str) {
    let line = text.replace(['\r', '\n'], " ");
    match &mut state.sessions.mode {
        ListMode::Rename(title) => title.push_str(&line),
        ListMode::Browse => state.sessions.push_filter(&line),
        ListMode::ConfirmDelete => {}
    }
}

fn confirm(state: &mut State, fx: &mut Vec<Effect>) {
    let list = &mut state.sessions;
    let Some(entry) = list.selected_entry() else {
        list.mode = ListMode::Browse;
        return;
    };
    let path = entry.path.clone();
    match std::mem::take(&mut list.mode) {
        ListMode::Rename(title) => {
            if state.session.path().as_ref() == Some(&path) {
                // The open conversation: its next save must keep the new title.
                state.session.title = title.trim().to_string();
                if let Some(last) = &mut state.session.last_saved {
                    last.title = state.session.title.clone();
                }
            }
            fx.push(Effect::Session(SessionEffect::Rename { path, title }));
        }
        ListMode::ConfirmDelete => {
            if state.session.path().as_ref() == Some(&path) {
                // Deleting the open conversation's file: it is not saved again unless it goes on.
                state.session.reset();
            }
            fx.push(Effect::Session(SessionEffect::Delete(path)));
        }
        ListMode::Browse => {}
    }
}

fn open_selected(state: &mut State, fx: &mut Vec<Effect>) {
    let Some(entry) = state.sessions.selected_entry() else {
        return;
    };
    if let Err(why) = &entry.summary {
        state.status = Some(format!("Cannot open {}: {why}", entry.id));
        return;
    }
    if state.generating() {
        state.status = Some("Still answering: Esc stops it".into());
        return;
    }
    let path = entry.path.clone();
    autosave(state, fx);
    state.overlay = Overlay::None;
    fx.push(Effect::Session(SessionEffect::Open(path)));
}

fn export_markdown(state: &mut State, fx: &mut Vec<Effect>) {
    if !state.conversation.has_messages() {
        state.status = Some("Nothing to export yet".into());
        return;
    }
    autosave(state, fx);
    let session = record(state, fx);
    let dir = state.session.dir.with_file_name("exports");
    fx.push(Effect::Session(SessionEffect::Export {
        path: dir.join(format!("{}.md", session.id)),
        markdown: export::to_markdown(&session),
    }));
}

/// Handles what the app's runner reported.
pub(super) fn message(state: &mut State, msg: SessionMsg) {
    match msg {
        SessionMsg::Tag(tag) => state.session.next_tag = Some(tag),
        SessionMsg::SaveFailed(why) => {
            // Try again at the next answer.
            state.session.last_saved = None;
            state.status = Some("Not saved (see the chat)".into());
            state
                .conversation
                .push_notice(NoticeLevel::Error, format!("Could not save: {why}"));
        }
        SessionMsg::Listed(entries) => state.sessions.set_entries(entries),
        SessionMsg::Opened(Ok((path, session))) => {
            restore(state, *session);
            state.status = Some(format!("Opened {}", path.display()));
        }
        SessionMsg::Opened(Err(why)) => state.status = Some(why),
        SessionMsg::Changed { status, entries } => {
            state.sessions.set_entries(entries);
            state.status = Some(status);
        }
        SessionMsg::Exported(Ok(path)) => {
            state.status = Some(format!("Exported to {}", path.display()))
        }
        SessionMsg::Exported(Err(why)) => state.status = Some(format!("Export failed: {why}")),
    }
}
