//! The TUI's logic: `update(state, msg, now)` changes the state and returns the effects to
//! carry out (commands for the engine, a cancel, a model scan). No I/O and no terminal here,
//! so every behaviour is a unit test away (tests/tui_update.rs).

use super::keymap::{self, Action};
use super::sessions::{self, SessionEffect, SessionMsg};
use super::state::{AnswerStatus, Field, ModelEntry, NoticeLevel, Overlay, State};
use super::{copy, downloads};
use crate::engine::{EngineCommand, EngineEvent, GenerateRequest, LoadRequest};
use crate::stats::StopReason;
use crossterm::event::KeyEvent;
use std::time::Instant;

/// Lines the mouse wheel scrolls.
const WHEEL_LINES: usize = 3;

#[derive(Debug, Clone, PartialEq)]
pub enum Msg {
    Key(KeyEvent),
    /// Bracketed paste: the text as typed, never sent by its newlines.
    Paste(String),
    /// Mouse wheel: negative scrolls up (towards older lines).
    Wheel(i32),
    Resize,
    Engine(EngineEvent),
    /// The engine thread is gone (its channel closed, or a command could not be sent).
    EngineStopped,
    /// The models directory was scanned.
    Models(Vec<ModelEntry>),
    /// Load this model (the `-m` argument at start).
    Load(ModelEntry),
    Memory {
        rss: Option<u64>,
        peak: Option<u64>,
    },
    /// Time passes (elapsed-time displays while busy).
    Tick,
    /// Bytes of the running download so far.
    DownloadProgress {
        done: u64,
        total: u64,
    },
    /// The download finished: the file to load.
    Downloaded(std::path::PathBuf),
    /// The download failed or was cancelled; the sentence to show.
    DownloadFailed(String),
    /// What came of a session file operation.
    Session(SessionMsg),
}

/// What the app must do after an update.
#[derive(Debug, Clone)]
pub enum Effect {
    Send(EngineCommand),
    /// `EngineHandle::cancel(turn_id)`: stop that generation before its next token.
    Cancel(u64),
    /// Re-read the models directory (in the background) and send `Msg::Models`.
    ScanModels,
    /// Clear the terminal and draw the whole screen again.
    Redraw,
    /// Download a hub file in the background, reporting `Msg::Download*`.
    Download(crate::hub::HubFile),
    /// Stop the running download (its partial file is resumed next time).
    CancelDownload,
    /// Save, list, open, rename, delete or export a session (`sessions::perform`).
    Session(SessionEffect),
    /// Put this text on the clipboard (OSC 52).
    Copy(String),
}

pub fn update(state: &mut State, msg: Msg, now: Instant) -> Vec<Effect> {
    state.now = now;
    let mut fx = Vec::new();
    match msg {
        Msg::Key(key) => {
            state.status = None;
            let action = keymap::action(state, &key);
            act(state, action, &mut fx);
        }
        Msg::Paste(text) => match state.overlay {
            Overlay::None => state.input.paste(&text),
            Overlay::Picker => text.chars().filter(|c| !c.is_control()).for_each(|c| {
                state.picker.push_filter(c);
            }),
            Overlay::Settings => {
                if let Some(edit) = &mut state.form.editing {
                    edit.push_str(&text.replace(['\r', '\n'], " "));
                }
            }
            Overlay::Help => {}
            Overlay::Sessions => sessions::paste(state, &text),
        },
        Msg::Wheel(lines) => scroll_by(state, lines as isize * WHEEL_LINES as isize),
        Msg::Resize | Msg::Tick => {}
        Msg::Engine(event) => {
            // A finished (or stopped, or failed) answer is saved as soon as it ends.
            let ended = matches!(
                event,
                EngineEvent::Finished { .. }
                    | EngineEvent::Failed {
                        turn_id: Some(_),
                        ..
                    }
            );
            engine_event(state, event);
            if ended {
                sessions::autosave(state, &mut fx);
            }
        }
        Msg::EngineStopped => {
            if state.engine_alive {
                state.engine_alive = false;
                abandon_turn(state, "the engine stopped");
                state.model.loading = None;
                state.conversation.push_notice(
                    NoticeLevel::Error,
                    "The engine stopped; restart taper to go on.",
                );
            }
        }
        Msg::Models(entries) => state.picker.set_entries(entries),
        Msg::Load(entry) => load(state, entry, &mut fx),
        Msg::Memory { rss, peak } => {
            state.stats.rss = rss;
            state.stats.peak_rss = peak;
        }
        Msg::DownloadProgress { .. } | Msg::Downloaded(_) | Msg::DownloadFailed(_) => {
            downloads::message(state, msg, &mut fx)
        }
        Msg::Session(msg) => sessions::message(state, msg),
    }
    fx
}

fn act(state: &mut State, action: Action, fx: &mut Vec<Effect>) {
    match action {
        Action::Quit => {
            // Whatever the answer has so far is kept (as stopped).
            sessions::autosave(state, fx);
            state.quit = true;
        }
        Action::Send => submit(state, fx),
        Action::Newline => state.input.newline(),
        Action::Stop => stop(state, fx),
        Action::Regenerate => regenerate(state, fx),
        Action::NewConversation => {
            cancel_active(state, fx);
            sessions::new_conversation(state, fx);
            state.stats.last = None;
            state.scroll = Default::default();
            state.status = Some("New conversation".into());
        }
        Action::OpenPicker => {
            state.overlay = Overlay::Picker;
            state.picker.filter.clear();
            state.picker.selected = 0;
            fx.push(Effect::ScanModels);
        }
        Action::OpenSettings => {
            state.overlay = Overlay::Settings;
            state.form = Default::default();
        }
        Action::OpenHelp => state.overlay = Overlay::Help,
        Action::CloseOverlay => state.overlay = Overlay::None,
        Action::ToggleThinking => state.show_thinking = !state.show_thinking,
        Action::Redraw => fx.push(Effect::Redraw),
        Action::PageUp => scroll_by(state, -(page(state) as isize)),
        Action::PageDown => scroll_by(state, page(state) as isize),
        Action::Follow(key) => {
            state.scroll.follow = true;
            state.input.key(key);
        }
        Action::HistoryOlder => state.input.recall_older(),
        Action::HistoryNewer => state.input.recall_newer(),
        Action::Edit(key) => state.input.key(key),
        Action::PickerUp => state.picker.move_selection(-1),
        Action::PickerDown => state.picker.move_selection(1),
        Action::PickerType(c) => state.picker.push_filter(c),
        Action::PickerBackspace => state.picker.pop_filter(),
        Action::PickerLoad => {
            if let Some(entry) = state.picker.selected_entry().cloned() {
                state.overlay = Overlay::None;
                if entry.download.is_some() {
                    downloads::start(state, entry, fx);
                } else {
                    load(state, entry, fx);
                }
            }
        }
        Action::FieldUp => state.form.move_selection(-1),
        Action::FieldDown => state.form.move_selection(1),
        Action::FieldEnter => field_enter(state),
        Action::FieldType(c) => {
            if let Some(edit) = &mut state.form.editing {
                edit.push(c);
            }
        }
        Action::FieldBackspace => {
            if let Some(edit) = &mut state.form.editing {
                edit.pop();
            }
        }
        Action::FieldClear => {
            if let Some(edit) = &mut state.form.editing {
                edit.clear();
            }
        }
        Action::FieldCancel => {
            state.form.editing = None;
            state.form.error = None;
        }
        Action::Session(action) => sessions::act(state, action, fx),
        Action::Copy(what) => copy::act(state, what, fx),
        Action::Ignore => {}
    }
}

fn page(state: &State) -> usize {
    state.viewport.height.saturating_sub(2).max(1)
}

/// Scrolls by `delta` lines; reaching the bottom follows again.
fn scroll_by(state: &mut State, delta: isize) {
    let view = state.viewport;
    let bottom = view.total_lines.saturating_sub(view.height);
    let top = if state.scroll.follow {
        bottom
    } else {
        state.scroll.top.min(bottom)
    };
    let top = (top as isize + delta).clamp(0, bottom as isize) as usize;
    state.scroll.top = top;
    state.scroll.follow = top >= bottom;
}

fn submit(state: &mut State, fx: &mut Vec<Effect>) {
    if state.input.text().trim().is_empty() {
        return;
    }
    if state.generating() {
        state.status = Some("Still answering: Esc stops it".into());
        return;
    }
    if !state.engine_alive {
        state.status = Some("The engine stopped; restart taper".into());
        return;
    }
    if state.model.answering_name().is_none() {
        state.status = Some("No model loaded: Ctrl+P picks one".into());
        return;
    }
    let text = state.input.take();
    state.conversation.push_user(text);
    generate(state, fx);
}

/// Starts a turn that answers the conversation as it stands (ending with a question).
fn generate(state: &mut State, fx: &mut Vec<Effect>) {
    let Some(model) = state.model.answering_name().map(str::to_string) else {
        return;
    };
    let messages = state.conversation.messages(&state.settings.system_prompt);
    let turn_id = state.next_turn_id();
    state.conversation.push_answer(model, turn_id);
    state.stats.start_turn(turn_id, state.now);
    state.scroll.follow = true;
    fx.push(Effect::Send(EngineCommand::Generate(GenerateRequest {
        turn_id,
        messages,
        raw: false,
        sampling: state.settings.sampling.clone(),
        max_tokens: state.settings.max_tokens,
    })));
}

fn stop(state: &mut State, fx: &mut Vec<Effect>) {
    if state.generating() {
        cancel_active(state, fx);
        sessions::autosave(state, fx);
        state.status = Some("Stopped".into());
    } else if state.model.download.is_some() {
        fx.push(Effect::CancelDownload);
        state.status = Some("Stopping the download…".into());
    }
}

/// Cancels the running turn, if any: its answer keeps its text and is marked stopped. Its
/// late events are ignored (their turn is no longer the active one), except the final usage.
fn cancel_active(state: &mut State, fx: &mut Vec<Effect>) {
    if let Some(turn_id) = state.stats.active_turn() {
        fx.push(Effect::Cancel(turn_id));
        if let Some((_, answer)) = state.conversation.answer_mut(turn_id) {
            answer.status = AnswerStatus::Stopped;
        }
        state.stats.abandon();
    }
}

fn regenerate(state: &mut State, fx: &mut Vec<Effect>) {
    if state.generating() {
        state.status = Some("Still answering: Esc stops it".into());
    } else if state.model.answering_name().is_none() {
        state.status = Some("No model loaded: Ctrl+P picks one".into());
    } else if state.conversation.drop_last_answer() {
        generate(state, fx);
    } else {
        state.status = Some("Nothing to regenerate".into());
    }
}

/// Loads `entry`, stopping any generation first; the conversation stays.
pub(super) fn load(state: &mut State, entry: ModelEntry, fx: &mut Vec<Effect>) {
    if !state.engine_alive {
        state.status = Some("The engine stopped; restart taper".into());
        return;
    }
    cancel_active(state, fx);
    fx.push(Effect::Send(EngineCommand::Load(LoadRequest {
        model_path: entry.path.clone(),
        tokenizer_json: entry.tokenizer.clone(),
        context_size: state.context_size,
        cache_type: state.cache_type,
        chat_template: entry.chat_template.clone(),
    })));
    state.model.loading = Some(super::state::Loading {
        entry,
        started: state.now,
    });
}

fn engine_event(state: &mut State, event: EngineEvent) {
    let active = state.stats.active_turn();
    match event {
        EngineEvent::Loaded { info, notices } => {
            // Loads run in order; only the last one requested ends the loading state.
            if state.model.loading.as_ref().map(|l| &l.entry.path) == Some(&info.path) {
                state.model.loading = None;
            }
            // A switch when another model answered before; a resumed conversation's first
            // model, or a question typed while the first model loaded, is just a load.
            let switched = state.model.loaded.is_some() && state.conversation.has_messages();
            state.conversation.push_notice(
                NoticeLevel::Info,
                format!(
                    "{} {} ({}, {}) in {:.1} s",
                    if switched { "Switched to" } else { "Loaded" },
                    info.name,
                    info.architecture,
                    info.quantization,
                    info.load_s
                ),
            );
            for notice in notices {
                state.conversation.push_notice(NoticeLevel::Info, notice);
            }
            // A new model starts with an empty cache: the last turn's figures no longer apply.
            state.stats.last = None;
            state.model.loaded = Some(info);
        }
        EngineEvent::PromptProgress {
            turn_id,
            done,
            total,
        } if Some(turn_id) == active => state.stats.prompt_progress(done, total, state.now),
        EngineEvent::Token { turn_id, text } if Some(turn_id) == active => {
            if let Some((message, _)) = state.conversation.answer_mut(turn_id) {
                message.content.push_str(&text);
            }
            state.stats.token(state.now);
        }
        EngineEvent::Finished { turn_id, usage } => {
            let stopped = usage.stop == Some(StopReason::Cancelled);
            if let Some((_, answer)) = state.conversation.answer_mut(turn_id) {
                if answer.status == AnswerStatus::Streaming {
                    answer.status = if stopped {
                        AnswerStatus::Stopped
                    } else {
                        AnswerStatus::Done
                    };
                }
                answer.usage = Some(usage.clone());
            }
            // A stopped turn's figures still describe the cache, unless another turn runs.
            if Some(turn_id) == active || active.is_none() {
                state.stats.finish(usage);
            }
        }
        EngineEvent::Failed {
            turn_id: Some(turn_id),
            message,
        } => {
            if let Some((_, answer)) = state.conversation.answer_mut(turn_id) {
                answer.status = AnswerStatus::Failed;
                answer.error = Some(message);
            }
            if Some(turn_id) == active {
                state.stats.abandon();
            }
        }
        EngineEvent::Failed {
            turn_id: None,
            message,
        } => {
            // The worker drops the old model before reading a new one: nothing is loaded now.
            let name = state.model.loading.take().map(|l| l.entry.name);
            state.model.loaded = None;
            state.conversation.push_notice(
                NoticeLevel::Error,
                match name {
                    Some(name) => format!("Could not load {name}: {message}"),
                    None => format!("Could not load the model: {message}"),
                },
            );
        }
        // Progress and tokens of a turn that is no longer active.
        EngineEvent::PromptProgress { .. } | EngineEvent::Token { .. } => {}
    }
}

fn abandon_turn(state: &mut State, why: &str) {
    if let Some(turn_id) = state.stats.active_turn() {
        if let Some((_, answer)) = state.conversation.answer_mut(turn_id) {
            answer.status = AnswerStatus::Failed;
            answer.error = Some(why.to_string());
        }
        state.stats.abandon();
    }
}

fn field_enter(state: &mut State) {
    let field: Field = state.form.field();
    match state.form.editing.take() {
        None => state.form.editing = Some(field.value(&state.settings)),
        Some(text) => match field.apply(&mut state.settings, &text) {
            Ok(()) => state.form.error = None,
            Err(expected) => {
                state.form.error = Some(format!("{}: expected {expected}", field.label()));
                state.form.editing = Some(text);
            }
        },
    }
}
