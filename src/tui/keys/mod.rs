//! Every key as data: one table ([`KEYS`]) of bindings, each with where it applies, its key
//! combinations, the action, the help text and what the footer says. Key dispatch
//! (`keymap::action`), the `?` help overlay and the footer all read it, so what a key does
//! and what the screen says it does cannot drift apart.

mod action;
mod build;
mod names;
mod table;

pub use action::{Action, CopyWhat, Cut, SessionAction, ToolAction, TreeAction};
pub use table::KEYS;

use super::state::State;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Where a binding applies: the chat, an overlay, or an overlay's mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// Before any other context (quit, redraw).
    Anywhere,
    /// Before the context's own, where a text field takes the typing: readline's deletions,
    /// the same in every field.
    TextField,
    Chat,
    Help,
    Picker,
    Settings,
    /// A setting's value being edited.
    SettingsEdit,
    /// The saved conversations.
    Sessions,
    SessionsRename,
    /// Waiting for y before deleting a session.
    SessionsDelete,
    /// A tool call waiting for the user's approval.
    Approval,
    /// Message selection: walking the conversation's messages.
    Select,
    /// Waiting for y before deleting a branch.
    SelectDelete,
}

impl Context {
    /// The contexts in the order the help lists them.
    pub const HELP_ORDER: [Context; 13] = [
        Context::Chat,
        Context::TextField,
        Context::Select,
        Context::SelectDelete,
        Context::Approval,
        Context::Anywhere,
        Context::Picker,
        Context::Settings,
        Context::SettingsEdit,
        Context::Sessions,
        Context::SessionsRename,
        Context::SessionsDelete,
        Context::Help,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Context::Anywhere => "Anywhere",
            Context::TextField => "Every text field (the message, filters, a value, a title)",
            Context::Chat => "Chat",
            Context::Help => "This help",
            Context::Picker => "Model picker (Ctrl+P)",
            Context::Settings => "Settings (Ctrl+S)",
            Context::SettingsEdit => "Settings, editing a value",
            Context::Sessions => "Saved conversations (Ctrl+O)",
            Context::SessionsRename => "Saved conversations, renaming",
            Context::SessionsDelete => "Saved conversations, deleting",
            Context::Approval => "A tool call waiting for approval",
            Context::Select => "Selecting a message (Alt+Up)",
            Context::SelectDelete => "Selecting a message, deleting",
        }
    }

    /// Whether a text field takes the typing here (so the [`Context::TextField`] keys work).
    pub fn has_text_field(self) -> bool {
        matches!(
            self,
            Context::Chat
                | Context::Picker
                | Context::SettingsEdit
                | Context::Sessions
                | Context::SessionsRename
        )
    }
}

/// A key combination a binding answers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combo {
    /// This key, with at least these modifiers.
    Key(KeyCode, KeyModifiers),
    /// This character, typed without Ctrl.
    Typed(char),
    /// Any character typed without Ctrl.
    AnyChar,
    /// Any key no other binding of the context takes.
    Any,
}

impl Combo {
    /// How closely `key` matches (higher is closer), or None. The closest binding wins, so
    /// Alt+Enter (new line) beats Enter (send) whatever the order of the table.
    pub fn closeness(self, key: &KeyEvent) -> Option<u32> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match self {
            Combo::Key(code, mods) => (key.code == code && key.modifiers.contains(mods))
                .then(|| 2 + mods.bits().count_ones()),
            Combo::Typed(c) => (key.code == KeyCode::Char(c) && !ctrl).then_some(2),
            Combo::AnyChar => (matches!(key.code, KeyCode::Char(_)) && !ctrl).then_some(1),
            Combo::Any => Some(0),
        }
    }
}

/// A condition besides the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Always,
    /// The message being written is empty (`?` is then help, not a character).
    InputEmpty,
    /// No modifier, and an older message can be recalled.
    CanRecallOlder,
    CanRecallNewer,
    /// An earlier message is in the editor.
    Editing,
}

impl When {
    fn holds(self, state: &State, key: &KeyEvent) -> bool {
        match self {
            When::Always => true,
            When::InputEmpty => state.input.is_empty(),
            When::CanRecallOlder => key.modifiers.is_empty() && state.input.can_recall_older(),
            When::CanRecallNewer => key.modifiers.is_empty() && state.input.can_recall_newer(),
            When::Editing => state.editing.is_some(),
        }
    }
}

/// What a binding does: an action, or one made from the character or the key pressed.
#[derive(Debug, Clone, Copy)]
pub enum Does {
    Act(Action),
    Char(fn(char) -> Action),
    Key(fn(KeyEvent) -> Action),
}

/// The screens the footer tells apart: a bit each, so a footer label can name several.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Screens(u16);

impl Screens {
    /// The chat with a model loaded (or loading) and nothing running.
    pub const READY: Screens = Screens(1);
    pub const ANSWERING: Screens = Screens(1 << 1);
    pub const DOWNLOADING: Screens = Screens(1 << 2);
    pub const NO_MODEL: Screens = Screens(1 << 3);
    pub const HELP: Screens = Screens(1 << 4);
    pub const PICKER: Screens = Screens(1 << 5);
    pub const SETTINGS: Screens = Screens(1 << 6);
    pub const SETTINGS_EDIT: Screens = Screens(1 << 7);
    pub const SESSIONS: Screens = Screens(1 << 8);
    pub const SESSIONS_RENAME: Screens = Screens(1 << 9);
    pub const SESSIONS_DELETE: Screens = Screens(1 << 10);
    pub const APPROVAL: Screens = Screens(1 << 11);
    pub const SELECT: Screens = Screens(1 << 12);
    pub const SELECT_DELETE: Screens = Screens(1 << 13);
    pub const CHAT: Screens = Screens(0b1111);

    pub const fn or(self, other: Screens) -> Screens {
        Screens(self.0 | other.0)
    }

    pub fn contains(self, screen: Screens) -> bool {
        self.0 & screen.0 == screen.0
    }
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    pub context: Context,
    pub keys: &'static [Combo],
    pub when: When,
    pub does: Does,
    /// What the help says it does.
    pub help: &'static str,
    /// What the footer says, on which screens (none: help only).
    pub footer: &'static [(Screens, &'static str)],
}

impl Binding {
    /// The action for `key` and how closely it matched, if this binding takes it.
    pub fn matches(&self, state: &State, key: &KeyEvent) -> Option<(u32, Action)> {
        if !self.when.holds(state, key) {
            return None;
        }
        let closeness = self.keys.iter().filter_map(|c| c.closeness(key)).max()?;
        let action = match self.does {
            Does::Act(action) => action,
            Does::Char(make) => match key.code {
                KeyCode::Char(c) => make(c),
                _ => return None,
            },
            Does::Key(make) => make(*key),
        };
        Some((closeness, action))
    }

    /// The keys as the help lists them ("Alt+Enter, Shift+Enter, Ctrl+J").
    pub fn keys_label(&self) -> String {
        let mut names: Vec<String> = Vec::new();
        for name in self.keys.iter().map(|c| names::long(*c)) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names.join(", ")
    }

    /// The first key, as short as the footer wants it.
    pub fn footer_key(&self) -> String {
        self.keys
            .first()
            .map(|c| names::short(*c))
            .unwrap_or_default()
    }
}

/// A line of the help overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HelpLine {
    Heading(&'static str),
    Key { keys: String, what: &'static str },
    Blank,
}

/// Every binding, grouped by context, as the help overlay shows them.
pub fn help_lines() -> Vec<HelpLine> {
    let mut lines = Vec::new();
    for context in Context::HELP_ORDER {
        if !lines.is_empty() {
            lines.push(HelpLine::Blank);
        }
        lines.push(HelpLine::Heading(context.title()));
        for b in KEYS.iter().filter(|b| b.context == context) {
            lines.push(HelpLine::Key {
                keys: b.keys_label(),
                what: b.help,
            });
        }
        // The commands are typed in the chat's editor: they follow its keys.
        if context == Context::Chat {
            lines.push(HelpLine::Blank);
            lines.push(HelpLine::Heading(
                "Commands (typed as the message; Tab completes)",
            ));
            for c in crate::tui::commands::COMMANDS {
                lines.push(HelpLine::Key {
                    keys: crate::tui::commands::usage(c),
                    what: c.help,
                });
            }
        }
    }
    lines
}

/// The footer of `screen`: (keys, what), in the table's order, the context's own bindings
/// before those of its text field and those that work anywhere; neighbours saying the same
/// thing share a label ("PgUp/PgDn scroll").
pub fn footer(context: Context, screen: Screens) -> Vec<(String, &'static str)> {
    let bindings = KEYS.iter().filter(|b| b.context == context);
    let field = KEYS
        .iter()
        .filter(|b| context.has_text_field() && b.context == Context::TextField);
    let anywhere = KEYS.iter().filter(|b| b.context == Context::Anywhere);
    let mut out: Vec<(String, &'static str)> = Vec::new();
    for b in bindings.chain(field).chain(anywhere) {
        let Some((_, what)) = b.footer.iter().find(|(on, _)| on.contains(screen)) else {
            continue;
        };
        match out.last_mut() {
            Some((keys, last)) if last == what => {
                let key = b.footer_key();
                // Arrows read as a pair ("↑↓"); names need a separator ("PgUp/PgDn").
                if !(keys.ends_with('↑') && key == "↓") {
                    keys.push('/');
                }
                keys.push_str(&key);
            }
            _ => out.push((b.footer_key(), what)),
        }
    }
    out
}

#[cfg(test)]
mod tests;
