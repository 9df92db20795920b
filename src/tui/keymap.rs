//! Keys to actions, depending on what is open. Pure: a key and the state in, an action out.
//! What each key does is looked up in the one table of keys ([`super::keys::KEYS`]), which
//! also writes the help overlay and the footer.

pub use super::keys::{Action, CopyWhat, Cut, SessionAction, ToolAction, TreeAction};

use super::keys::{self, Context, Screens, KEYS};
use super::state::{ListMode, Overlay, State};
use crossterm::event::{KeyEvent, KeyEventKind};

/// The action for `key` in `state`: the closest match among the bindings that work anywhere,
/// else among those of every text field when one takes the typing, else among those of what
/// is open (the first in the table on a tie).
pub fn action(state: &State, key: &KeyEvent) -> Action {
    // Key releases (reported on Windows and with enhanced keyboards) are not presses.
    if key.kind == KeyEventKind::Release {
        return Action::Ignore;
    }
    let (context, _) = screen(state);
    lookup(Context::Anywhere, state, key)
        .or_else(|| {
            context
                .has_text_field()
                .then(|| lookup(Context::TextField, state, key))
                .flatten()
        })
        .or_else(|| lookup(context, state, key))
        .unwrap_or(Action::Ignore)
}

fn lookup(context: Context, state: &State, key: &KeyEvent) -> Option<Action> {
    KEYS.iter()
        .filter(|b| b.context == context)
        .filter_map(|b| b.matches(state, key))
        .min_by_key(|(closeness, _)| std::cmp::Reverse(*closeness))
        .map(|(_, action)| action)
}

/// What is on screen: the context keys go to, and the screen the footer is for.
pub fn screen(state: &State) -> (Context, Screens) {
    match state.overlay {
        Overlay::Help => (Context::Help, Screens::HELP),
        Overlay::Picker => (Context::Picker, Screens::PICKER),
        Overlay::Settings if state.form.editing.is_some() => {
            (Context::SettingsEdit, Screens::SETTINGS_EDIT)
        }
        Overlay::Settings => (Context::Settings, Screens::SETTINGS),
        Overlay::Sessions => match state.sessions.mode {
            ListMode::Browse => (Context::Sessions, Screens::SESSIONS),
            ListMode::Rename(_) => (Context::SessionsRename, Screens::SESSIONS_RENAME),
            ListMode::ConfirmDelete => (Context::SessionsDelete, Screens::SESSIONS_DELETE),
        },
        Overlay::None if state.tools.asking().is_some() => (Context::Approval, Screens::APPROVAL),
        Overlay::None if state.select.is_some_and(|s| s.confirm_delete) => {
            (Context::SelectDelete, Screens::SELECT_DELETE)
        }
        Overlay::None if state.select.is_some() => (Context::Select, Screens::SELECT),
        Overlay::None if state.model.download.is_some() && !state.generating() => {
            (Context::Chat, Screens::DOWNLOADING)
        }
        Overlay::None if state.generating() => (Context::Chat, Screens::ANSWERING),
        Overlay::None if state.model.loaded.is_none() && state.model.loading.is_none() => {
            (Context::Chat, Screens::NO_MODEL)
        }
        Overlay::None => (Context::Chat, Screens::READY),
    }
}

/// The keys that matter now, for the footer: (keys, what).
pub fn footer(state: &State) -> Vec<(String, &'static str)> {
    let (context, screen) = screen(state);
    keys::footer(context, screen)
}
