//! Keys to actions, depending on what is open. Pure: a key and the state in, an action out.
//! What each key does is looked up in the one table of keys ([`super::keys::KEYS`]), which
//! also writes the help overlay and the footer.

use super::keys::{self, Context, Screens, KEYS};
use super::state::{ListMode, Overlay, State};
use crossterm::event::{KeyEvent, KeyEventKind};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    /// Send the editor's text.
    Send,
    Newline,
    /// Stop the generation (Esc).
    Stop,
    Regenerate,
    NewConversation,
    OpenPicker,
    OpenSettings,
    OpenHelp,
    CloseOverlay,
    /// Scroll the help by lines, or by pages.
    HelpScroll(isize),
    HelpPage(isize),
    ToggleThinking,
    /// Clear the terminal and draw everything again.
    Redraw,
    PageUp,
    PageDown,
    /// Scroll to the newest line and keep following; the key also goes to the editor.
    Follow(KeyEvent),
    HistoryOlder,
    HistoryNewer,
    /// A key for the editor (typing, cursor movement).
    Edit(KeyEvent),
    PickerUp,
    PickerDown,
    PickerLoad,
    PickerType(char),
    PickerBackspace,
    FieldUp,
    FieldDown,
    /// Start editing the selected field, or commit the edit.
    FieldEnter,
    FieldType(char),
    FieldBackspace,
    FieldClear,
    /// Leave the edit without applying it.
    FieldCancel,
    /// Saved conversations: the list overlay and export (handled in `update::sessions`).
    Session(SessionAction),
    /// Copy to the clipboard (handled in `update::copy`).
    Copy(CopyWhat),
    Ignore,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionAction {
    /// Open the sessions list.
    OpenList,
    /// Write the conversation as Markdown.
    Export,
    Up,
    Down,
    /// Continue the selected session.
    Load,
    /// Start renaming the selected session.
    Rename,
    /// Ask to delete the selected session.
    Delete,
    /// Apply the rename, or delete after the confirmation.
    Confirm,
    /// Leave the rename or the confirmation.
    Cancel,
    Type(char),
    Backspace,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyWhat {
    LastAnswer,
    /// The next code block, from the newest back.
    CodeBlock,
}

/// The action for `key` in `state`: the closest match among the bindings that work anywhere,
/// else among those of what is open (the first in the table on a tie).
pub fn action(state: &State, key: &KeyEvent) -> Action {
    // Key releases (reported on Windows and with enhanced keyboards) are not presses.
    if key.kind == KeyEventKind::Release {
        return Action::Ignore;
    }
    let (context, _) = screen(state);
    lookup(Context::Anywhere, state, key)
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
