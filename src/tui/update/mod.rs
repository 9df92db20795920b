//! The TUI's logic: `update(state, msg, now)` changes the state and returns the effects to
//! carry out. Pure: no I/O, no clock of its own, no randomness and no terminal; whatever has
//! a side effect is an [`Effect`] the app performs, and its result comes back as a [`Msg`].
//! So every behaviour is a unit test away (tests/tui/update.rs).
//!
//! The helpers are children of this module, each for one job: `turn` (asking, stopping,
//! loading), `engine` (what the worker reports), `tools` (the tool loop and the MCP servers'
//! news), `tree` (message selection, branches, fork), `copy`, `downloads`, `sessions`, and
//! `overlays` (the picker, the settings form and the help), `fields` (the deletions every
//! text field shares).

mod attach;
mod commands;
mod copy;
mod downloads;
mod engine;
mod fields;
mod overlays;
mod saved;
mod sessions;
mod tools;
mod tree;
mod turn;

pub use attach::too_long as attachment_too_long;
pub use copy::{code_blocks, CodeBlock};
pub use sessions::restore;

use super::keymap::{self, Action};
use super::msg::{Effect, Msg};
use super::state::{Overlay, State};
use std::time::Instant;

/// Lines the mouse wheel scrolls.
const WHEEL_LINES: usize = 3;

pub fn update(state: &mut State, msg: Msg, now: Instant) -> Vec<Effect> {
    state.now = now;
    let mut fx = Vec::new();
    match msg {
        Msg::Start(model) => start(state, model, &mut fx),
        Msg::Key(key) => {
            state.status = None;
            let action = keymap::action(state, &key);
            act(state, action, &mut fx);
            attach::sync(state, false, &mut fx);
        }
        Msg::Paste(text) => {
            paste(state, &text);
            attach::sync(state, false, &mut fx);
        }
        Msg::Wheel(lines) => scroll_by(state, lines as isize * WHEEL_LINES as isize),
        Msg::Resize | Msg::Tick => {}
        Msg::Engine(event) => engine::event(state, event, &mut fx),
        Msg::EngineStopped => engine::stopped(state),
        Msg::Models(entries) => state.picker.set_entries(entries),
        Msg::RemoteModels(entries) => state.picker.set_remotes(entries),
        Msg::Load(entry) => turn::load(state, entry, &mut fx),
        Msg::HeaderRead(entry) => downloads::header_read(state, entry, &mut fx),
        Msg::Memory { rss, peak } => {
            state.stats.rss = rss;
            state.stats.peak_rss = peak;
        }
        Msg::DownloadProgress { .. } | Msg::Downloaded(_) | Msg::DownloadFailed(_) => {
            downloads::message(state, msg, &mut fx)
        }
        Msg::Session(msg) => sessions::message(state, msg),
        Msg::CopyFailed(why) => state.status = Some(format!("Could not copy: {why}")),
        Msg::Tool(event) => tools::event(state, event, &mut fx),
        Msg::ToolsOffered(offered) => tools::offered(state, offered),
        Msg::FileRead { path, result } => attach::file_read(state, path, result, &mut fx),
        Msg::PathsListed { typed, candidates } => {
            attach::paths_listed(state, typed, candidates, &mut fx)
        }
    }
    fx
}

/// The first message: look for models, draw the first session tag, load `-m` or open the
/// picker.
fn start(state: &mut State, model: Option<super::state::ModelEntry>, fx: &mut Vec<Effect>) {
    fx.push(Effect::ScanModels);
    sessions::want_tag(state, fx);
    match model {
        Some(entry) => turn::load(state, entry, fx),
        None => state.overlay = Overlay::Picker,
    }
}

fn paste(state: &mut State, text: &str) {
    match state.overlay {
        Overlay::None => state.input.paste(text),
        Overlay::Picker => text.chars().filter(|c| !c.is_control()).for_each(|c| {
            state.picker.push_filter(c);
        }),
        Overlay::Settings => {
            if let Some(edit) = &mut state.form.editing {
                edit.push_str(&text.replace(['\r', '\n'], " "));
            }
        }
        Overlay::Help => {}
        Overlay::Sessions => sessions::paste(state, text),
    }
}

fn act(state: &mut State, action: Action, fx: &mut Vec<Effect>) {
    match action {
        Action::Quit => {
            // Whatever the answer has so far is kept (as stopped).
            sessions::autosave(state, fx);
            state.quit = true;
        }
        Action::Send => turn::submit(state, fx),
        Action::Newline => state.input.newline(),
        Action::Stop => turn::stop(state, fx),
        Action::Regenerate => turn::regenerate(state, fx),
        Action::Continue => turn::continue_answer(state, fx),
        Action::NewConversation => {
            turn::cancel_active(state, fx);
            sessions::new_conversation(state, fx);
            state.stats.last = None;
            state.scroll = Default::default();
            state.status = Some("New conversation".into());
        }
        Action::ToggleThinking => toggle_thinking(state),
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
        Action::Complete(key) => attach::complete(state, key, fx),
        Action::Cut(cut) => fields::cut(state, cut),
        Action::Undo => state.input.undo(),
        Action::Suspend => fx.push(Effect::Suspend),
        Action::ToggleMouse => toggle_mouse(state, fx),
        Action::Session(action) => sessions::act(state, action, fx),
        Action::Copy(what) => copy::act(state, what, fx),
        Action::Tool(action) => tools::approve(state, action, fx),
        Action::Tree(action) => tree::act(state, action, fx),
        Action::Ignore => {}
        overlay => overlays::act(state, overlay, fx),
    }
}

/// Shows or folds thinking; says so when no answer has any, instead of nothing happening.
fn toggle_thinking(state: &mut State) {
    state.show_thinking = !state.show_thinking;
    let any = state.conversation.entries.iter().any(|e| {
        matches!(&e.body, super::state::EntryBody::Message { message, answer: Some(_) }
            if crate::chat::split_thinking(&message.content).thinking.is_some())
    });
    if !any {
        let now = if state.show_thinking {
            "shown"
        } else {
            "folded"
        };
        state.status = Some(format!(
            "Thinking {now}, but no answer here has any (only thinking models, like Qwen3, write it)"
        ));
    }
}

/// Alt+M: with the mouse captured the wheel scrolls, but the terminal cannot select text;
/// without, the terminal selects and copies as anywhere else.
fn toggle_mouse(state: &mut State, fx: &mut Vec<Effect>) {
    state.mouse_captured = !state.mouse_captured;
    fx.push(Effect::MouseCapture(state.mouse_captured));
    state.status = Some(
        if state.mouse_captured {
            "Mouse on: the wheel scrolls; Alt+M lets the terminal select text again"
        } else {
            "Mouse off: select text with the mouse; Alt+M gives the wheel back"
        }
        .into(),
    );
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

#[cfg(test)]
mod tests;
