//! Shorthands the key table is written with: combinations (`ctrl('p')`), a binding with
//! defaults (`bind`), and the builder methods that change one default each.

use super::{Action, Binding, Combo, Context, Does, Screens, SessionAction, When};
use crossterm::event::{KeyCode, KeyModifiers};

pub(super) const fn key(code: KeyCode) -> Combo {
    Combo::Key(code, KeyModifiers::NONE)
}

pub(super) const fn ch(c: char) -> Combo {
    key(KeyCode::Char(c))
}

pub(super) const fn ctrl(c: char) -> Combo {
    Combo::Key(KeyCode::Char(c), KeyModifiers::CONTROL)
}

pub(super) const fn with(code: KeyCode, mods: KeyModifiers) -> Combo {
    Combo::Key(code, mods)
}

pub(super) const fn bind(
    context: Context,
    keys: &'static [Combo],
    does: Action,
    help: &'static str,
) -> Binding {
    Binding {
        context,
        keys,
        when: When::Always,
        does: Does::Act(does),
        help,
        footer: &[],
    }
}

impl Binding {
    pub(super) const fn when(mut self, when: When) -> Self {
        self.when = when;
        self
    }

    pub(super) const fn does(mut self, does: Does) -> Self {
        self.does = does;
        self
    }

    pub(super) const fn footer(mut self, footer: &'static [(Screens, &'static str)]) -> Self {
        self.footer = footer;
        self
    }
}

pub(super) fn session_type(c: char) -> Action {
    Action::Session(SessionAction::Type(c))
}
