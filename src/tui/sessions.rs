//! Saved conversations in the TUI: autosave after every finished or stopped answer, resume,
//! the sessions list (open, rename, delete with a confirmation) and the Markdown export.
//! `update` calls the pure half (state in, [`SessionEffect`]s out); the app carries the
//! effects out with [`perform`], the only half that touches files.

use super::keymap::SessionAction;
use super::state::{AnswerStatus, EntryBody, ListMode, NoticeLevel, Overlay, State};
use super::update::{Effect, Msg};
use crate::chat::Role;
use crate::sessions::{
    export, store, time, Listed, SavedMessage, SavedSampling, SavedStatus, Session,
};
use std::path::PathBuf;

/// File work for the app to do.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEffect {
    Save { dir: PathBuf, session: Box<Session> },
    List(PathBuf),
    Open(PathBuf),
    Rename { path: PathBuf, title: String },
    Delete(PathBuf),
    Export { path: PathBuf, markdown: String },
}

/// What came of it.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionMsg {
    SaveFailed(String),
    Listed(Vec<Listed>),
    Opened(Result<(PathBuf, Box<Session>), String>),
    /// A rename or delete: what to say, and the directory as it now is.
    Changed {
        status: String,
        entries: Vec<Listed>,
    },
    Exported(Result<PathBuf, String>),
}

/// The conversation as a record to save (giving it an id at its first save).
pub fn record(state: &mut State) -> Session {
    let wall = state.session.wall_s(state.now);
    let id = state
        .session
        .id
        .get_or_insert_with(|| format!("{}-{:04x}", time::compact_utc(wall), rand::random::<u16>()))
        .clone();
    let created = *state.session.created_at.get_or_insert(wall);
    let sampling = SavedSampling::new(&state.settings.sampling, state.settings.max_tokens);
    let mut session = Session::new(id, created, &state.settings.system_prompt, sampling);
    session.title = state.session.title.clone();
    session.updated_at = wall;
    for entry in &state.conversation.entries {
        let EntryBody::Message { message, answer } = &entry.body else {
            continue;
        };
        let at = *state.session.times.entry(entry.id).or_insert(wall);
        let mut saved = SavedMessage {
            role: message.role,
            content: message.content.clone(),
            at,
            model: None,
            status: None,
            error: None,
            usage: None,
        };
        if let Some(a) = answer {
            saved.model = Some(a.model.clone());
            saved.status = Some(match a.status {
                AnswerStatus::Done => SavedStatus::Done,
                // Saved while still streaming (quitting mid-answer): it ends here.
                AnswerStatus::Streaming | AnswerStatus::Stopped => SavedStatus::Stopped,
                AnswerStatus::Failed => SavedStatus::Failed,
            });
            saved.error = a.error.clone();
            saved.usage = a.usage.as_ref().map(Into::into);
        }
        session.messages.push(saved);
    }
    session
}

/// Saves the conversation if it has messages and changed since the last save.
pub fn autosave(state: &mut State, fx: &mut Vec<Effect>) {
    if !state.conversation.has_messages() {
        return;
    }
    let session = record(state);
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
}

/// Replaces the conversation with a saved one; later saves go to the same id.
pub fn restore(state: &mut State, session: Session) {
    state.conversation.clear();
    state.session.reset();
    state.stats.last = None;
    state.scroll = Default::default();
    state.code_cursor = None;
    for m in &session.messages {
        match m.role {
            Role::Assistant => {
                let turn_id = state.next_turn_id();
                let model = m.model.clone().unwrap_or_else(|| "unknown model".into());
                state.conversation.push_answer(model, turn_id);
                if let Some((message, answer)) = state.conversation.answer_mut(turn_id) {
                    message.content = m.content.clone();
                    answer.status = match m.status {
                        Some(SavedStatus::Stopped) => AnswerStatus::Stopped,
                        Some(SavedStatus::Failed) => AnswerStatus::Failed,
                        Some(SavedStatus::Done) | None => AnswerStatus::Done,
                    };
                    answer.error = m.error.clone();
                    answer.usage = m.usage.as_ref().map(Into::into);
                }
            }
            // The format allows only user and assistant messages here.
            Role::User | Role::System => state.conversation.push_user(m.content.clone()),
        }
        if let Some(entry) = state.conversation.entries.last() {
            state.session.times.insert(entry.id, m.at);
        }
    }
    state.settings.system_prompt = session.system_prompt.clone();
    state.settings.sampling = session.sampling.params();
    state.settings.max_tokens = session.sampling.max_tokens;
    state.conversation.push_notice(
        NoticeLevel::Info,
        format!(
            "Resumed “{}”: {} messages, last saved {}",
            session.display_title(),
            session.messages.len(),
            time::format_utc(session.updated_at)
        ),
    );
    state.session.id = Some(session.id.clone());
    state.session.title = session.title.clone();
    state.session.created_at = Some(session.created_at);
    state.session.last_saved = Some(Box::new(session));
}

/// Starts a new conversation: the current one is saved as it stands, then forgotten.
pub fn new_conversation(state: &mut State, fx: &mut Vec<Effect>) {
    autosave(state, fx);
    state.conversation.clear();
    state.session.reset();
    state.code_cursor = None;
}

pub fn act(state: &mut State, action: SessionAction, fx: &mut Vec<Effect>) {
    use SessionAction as S;
    let list = &mut state.sessions;
    match action {
        S::OpenList => {
            state.overlay = Overlay::Sessions;
            list.mode = ListMode::Browse;
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
        S::Type(c) => {
            if let ListMode::Rename(text) = &mut list.mode {
                text.push(c);
            }
        }
        S::Backspace => {
            if let ListMode::Rename(text) = &mut list.mode {
                text.pop();
            }
        }
    }
}

/// A paste into the title being renamed (on one line).
pub fn paste(state: &mut State, text: &str) {
    if let ListMode::Rename(title) = &mut state.sessions.mode {
        title.push_str(&text.replace(['\r', '\n'], " "));
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
    let session = record(state);
    let dir = state.session.dir.with_file_name("exports");
    fx.push(Effect::Session(SessionEffect::Export {
        path: dir.join(format!("{}.md", session.id)),
        markdown: export::to_markdown(&session),
    }));
}

/// Handles what `perform` reported.
pub fn message(state: &mut State, msg: SessionMsg) {
    match msg {
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

/// Carries out one effect (file I/O); the app feeds the message back to `update`.
pub fn perform(effect: SessionEffect) -> Option<Msg> {
    let msg = match effect {
        SessionEffect::Save { dir, session } => match store::save(&dir, &session) {
            Ok(_) => return None,
            Err(e) => SessionMsg::SaveFailed(format!("{e:#}")),
        },
        SessionEffect::List(dir) => SessionMsg::Listed(store::list(&dir)),
        SessionEffect::Open(path) => SessionMsg::Opened(
            store::load(&path)
                .map(|s| (path, Box::new(s)))
                .map_err(|e| format!("{e:#}")),
        ),
        SessionEffect::Rename { path, title } => {
            let status = match store::rename(&path, &title) {
                Ok(()) => format!("Renamed to “{}”", title.trim()),
                Err(e) => format!("Rename failed: {e:#}"),
            };
            changed(&path, status)
        }
        SessionEffect::Delete(path) => {
            let status = match store::delete(&path) {
                Ok(()) => format!("Deleted {}", path.display()),
                Err(e) => format!("{e:#}"),
            };
            changed(&path, status)
        }
        SessionEffect::Export { path, markdown } => SessionMsg::Exported(
            std::fs::create_dir_all(path.parent().unwrap_or(&path))
                .map_err(anyhow::Error::from)
                .and_then(|()| store::write_atomic(&path, markdown.as_bytes()))
                .map(|()| path)
                .map_err(|e| format!("{e:#}")),
        ),
    };
    Some(Msg::Session(msg))
}

fn changed(path: &std::path::Path, status: String) -> SessionMsg {
    let entries = path.parent().map(store::list).unwrap_or_default();
    SessionMsg::Changed { status, entries }
}
