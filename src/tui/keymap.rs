//! Keys to actions, depending on what is open. Pure: a key and the state in, an action out.
//! The help overlay and the footer are drawn from the tables here, so they cannot drift
//! from what the keys do.

use super::state::{ListMode, Overlay, State};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// Saved conversations: the list overlay and export (handled in `tui::sessions`).
    Session(SessionAction),
    /// Copy to the clipboard (handled in `tui::copy`).
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

/// Every key, grouped as the help overlay lists them: (group, keys, what they do).
pub const HELP: &[(&str, &str, &str)] = &[
    ("Chat", "Enter", "send the message"),
    (
        "Chat",
        "Alt+Enter, Shift+Enter, Ctrl+J",
        "new line in the message",
    ),
    (
        "Chat",
        "Up / Down (empty message)",
        "recall earlier messages",
    ),
    ("Chat", "Esc", "stop the answer (text stays) or a download"),
    ("Chat", "Ctrl+R", "regenerate the last answer"),
    ("Chat", "Ctrl+N", "new conversation"),
    ("Chat", "Ctrl+P", "pick a model (the conversation is kept)"),
    ("Chat", "Ctrl+S", "system prompt and sampling settings"),
    ("Chat", "Ctrl+T", "show or fold thinking"),
    (
        "Chat",
        "Ctrl+O",
        "saved conversations: open, rename, delete",
    ),
    ("Chat", "Ctrl+E", "export the conversation as Markdown"),
    (
        "Chat",
        "Ctrl+Y, Alt+Y",
        "copy the last answer; a code block (Alt+Y cycles)",
    ),
    (
        "Chat",
        "PgUp / PgDn, mouse wheel",
        "scroll the conversation",
    ),
    ("Chat", "End", "follow the newest text"),
    ("Chat", "? (empty message), F1", "this help"),
    ("Chat", "Ctrl+L", "redraw the screen"),
    (
        "Chat",
        "Ctrl+C, Ctrl+Q",
        "quit (also while loading or answering)",
    ),
    (
        "Model picker",
        "type",
        "filter by name, architecture, quantization",
    ),
    ("Model picker", "Up / Down", "select"),
    ("Model picker", "Enter", "load the selected model"),
    ("Model picker", "Esc", "close"),
    ("Settings", "Up / Down", "select a setting"),
    ("Settings", "Enter", "edit it; Enter again applies"),
    ("Settings", "Ctrl+U", "clear the value being edited"),
    ("Settings", "Esc", "cancel the edit, or close"),
];

fn ctrl(key: &KeyEvent, c: char) -> bool {
    key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char(c)
}

/// The action for `key` in `state`.
pub fn action(state: &State, key: &KeyEvent) -> Action {
    // Key releases (reported on Windows and with enhanced keyboards) are not presses.
    if key.kind == KeyEventKind::Release {
        return Action::Ignore;
    }
    if ctrl(key, 'c') || ctrl(key, 'q') {
        return Action::Quit;
    }
    if ctrl(key, 'l') {
        return Action::Redraw;
    }
    match state.overlay {
        Overlay::None => chat_action(state, key),
        Overlay::Help => match key.code {
            KeyCode::Esc | KeyCode::Enter | KeyCode::F(1) | KeyCode::Char('?' | 'q') => {
                Action::CloseOverlay
            }
            _ => Action::Ignore,
        },
        Overlay::Picker => picker_action(key),
        Overlay::Settings => settings_action(state, key),
        Overlay::Sessions => sessions_action(state, key),
    }
}

fn chat_action(state: &State, key: &KeyEvent) -> Action {
    let alt_or_shift = key
        .modifiers
        .intersects(KeyModifiers::ALT | KeyModifiers::SHIFT);
    match key.code {
        KeyCode::Enter if alt_or_shift => Action::Newline,
        KeyCode::Enter => Action::Send,
        _ if ctrl(key, 'j') => Action::Newline,
        _ if ctrl(key, 'r') => Action::Regenerate,
        _ if ctrl(key, 'n') => Action::NewConversation,
        _ if ctrl(key, 'p') => Action::OpenPicker,
        _ if ctrl(key, 's') => Action::OpenSettings,
        _ if ctrl(key, 't') => Action::ToggleThinking,
        _ if ctrl(key, 'o') => Action::Session(SessionAction::OpenList),
        _ if ctrl(key, 'e') => Action::Session(SessionAction::Export),
        _ if ctrl(key, 'y') => Action::Copy(CopyWhat::LastAnswer),
        KeyCode::Char('y' | 'Y') if key.modifiers.contains(KeyModifiers::ALT) => {
            Action::Copy(CopyWhat::CodeBlock)
        }
        KeyCode::Esc => Action::Stop,
        KeyCode::F(1) => Action::OpenHelp,
        KeyCode::Char('?') if state.input.is_empty() => Action::OpenHelp,
        KeyCode::PageUp => Action::PageUp,
        KeyCode::PageDown => Action::PageDown,
        KeyCode::End => Action::Follow(*key),
        KeyCode::Up if key.modifiers.is_empty() && state.input.can_recall_older() => {
            Action::HistoryOlder
        }
        KeyCode::Down if key.modifiers.is_empty() && state.input.can_recall_newer() => {
            Action::HistoryNewer
        }
        _ => Action::Edit(*key),
    }
}

fn picker_action(key: &KeyEvent) -> Action {
    match key.code {
        KeyCode::Esc => Action::CloseOverlay,
        KeyCode::Enter => Action::PickerLoad,
        KeyCode::Up => Action::PickerUp,
        KeyCode::Down | KeyCode::Tab => Action::PickerDown,
        KeyCode::Backspace => Action::PickerBackspace,
        _ if ctrl(key, 'p') => Action::PickerUp,
        _ if ctrl(key, 'n') => Action::PickerDown,
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => Action::PickerType(c),
        _ => Action::Ignore,
    }
}

fn settings_action(state: &State, key: &KeyEvent) -> Action {
    if state.form.editing.is_some() {
        return match key.code {
            KeyCode::Esc => Action::FieldCancel,
            KeyCode::Enter => Action::FieldEnter,
            KeyCode::Backspace => Action::FieldBackspace,
            _ if ctrl(key, 'u') => Action::FieldClear,
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                Action::FieldType(c)
            }
            _ => Action::Ignore,
        };
    }
    match key.code {
        KeyCode::Esc | KeyCode::Char('q') => Action::CloseOverlay,
        _ if ctrl(key, 's') => Action::CloseOverlay,
        KeyCode::Up | KeyCode::BackTab => Action::FieldUp,
        KeyCode::Down | KeyCode::Tab => Action::FieldDown,
        KeyCode::Enter => Action::FieldEnter,
        _ => Action::Ignore,
    }
}

fn sessions_action(state: &State, key: &KeyEvent) -> Action {
    use SessionAction as S;
    let plain_char = match key.code {
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => Some(c),
        _ => None,
    };
    let action = match &state.sessions.mode {
        ListMode::Rename(_) => match key.code {
            KeyCode::Esc => S::Cancel,
            KeyCode::Enter => S::Confirm,
            KeyCode::Backspace => S::Backspace,
            _ => match plain_char {
                Some(c) => S::Type(c),
                None => return Action::Ignore,
            },
        },
        ListMode::ConfirmDelete => match plain_char {
            Some('y' | 'Y') => S::Confirm,
            _ => S::Cancel,
        },
        ListMode::Browse => match key.code {
            KeyCode::Up => S::Up,
            KeyCode::Down | KeyCode::Tab => S::Down,
            KeyCode::Enter => S::Load,
            KeyCode::F(2) | KeyCode::Char('r') => S::Rename,
            KeyCode::Delete | KeyCode::Char('d') => S::Delete,
            _ if ctrl(key, 'p') => S::Up,
            _ if ctrl(key, 'n') => S::Down,
            KeyCode::Esc | KeyCode::Char('q') => S::Cancel,
            _ if ctrl(key, 'o') => S::Cancel,
            _ => return Action::Ignore,
        },
    };
    Action::Session(action)
}

/// The keys that matter now, for the footer: (keys, what).
pub fn footer(state: &State) -> Vec<(&'static str, &'static str)> {
    match state.overlay {
        Overlay::Help => vec![("Esc", "close help"), ("Ctrl+Q", "quit")],
        Overlay::Picker => vec![
            ("type", "filter"),
            ("↑↓", "select"),
            ("Enter", "load (or download)"),
            ("Esc", "close"),
            ("Ctrl+Q", "quit"),
        ],
        Overlay::Settings if state.form.editing.is_some() => {
            vec![("Enter", "apply"), ("Ctrl+U", "clear"), ("Esc", "cancel")]
        }
        Overlay::Settings => vec![
            ("↑↓", "select"),
            ("Enter", "edit"),
            ("Esc", "close"),
            ("Ctrl+Q", "quit"),
        ],
        Overlay::Sessions => match state.sessions.mode {
            ListMode::Browse => vec![
                ("↑↓", "select"),
                ("Enter", "open"),
                ("r", "rename"),
                ("d", "delete"),
                ("Esc", "close"),
                ("Ctrl+Q", "quit"),
            ],
            ListMode::Rename(_) => vec![("Enter", "rename"), ("Esc", "cancel")],
            ListMode::ConfirmDelete => vec![("y", "delete"), ("n, Esc", "keep")],
        },
        Overlay::None if state.model.download.is_some() && !state.generating() => vec![
            ("Esc", "stop download"),
            ("Ctrl+P", "model"),
            ("?", "help"),
            ("Ctrl+Q", "quit"),
        ],
        Overlay::None if state.generating() => vec![
            ("Esc", "stop"),
            ("PgUp/PgDn", "scroll"),
            ("Ctrl+T", "thinking"),
            ("Ctrl+P", "model"),
            ("Ctrl+Q", "quit"),
        ],
        Overlay::None if state.model.loaded.is_none() && state.model.loading.is_none() => vec![
            ("Ctrl+P", "pick a model"),
            ("?", "help"),
            ("Ctrl+Q", "quit"),
        ],
        Overlay::None => vec![
            ("Enter", "send"),
            ("Alt+Enter", "new line"),
            ("Ctrl+P", "model"),
            ("Ctrl+S", "settings"),
            ("Ctrl+R", "regenerate"),
            ("Ctrl+N", "new chat"),
            ("Ctrl+O", "sessions"),
            ("Ctrl+T", "thinking"),
            ("?", "help"),
            ("Ctrl+Q", "quit"),
        ],
    }
}
