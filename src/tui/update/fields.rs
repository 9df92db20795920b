//! Readline's deletions (Ctrl+W, Ctrl+U) in whichever text field has the keys: the message
//! editor, the picker's or the sessions' filter, a setting's value or a conversation's title.
//! One action for all of them, so a key cannot mean one thing here and another there.

use crate::tui::line_edit::{self, Cut};
use crate::tui::state::{ListMode, Overlay, State};

pub(super) fn cut(state: &mut State, cut: Cut) {
    match state.overlay {
        Overlay::None => state.input.cut(cut),
        Overlay::Picker => state.picker.cut_filter(cut),
        Overlay::Settings => {
            if let Some(value) = &mut state.form.editing {
                line_edit::cut(value, cut);
            }
        }
        Overlay::Sessions => match &mut state.sessions.mode {
            ListMode::Browse => state.sessions.cut_filter(cut),
            ListMode::Rename(title) => {
                line_edit::cut(title, cut);
            }
            ListMode::ConfirmDelete => {}
        },
        Overlay::Help => {}
    }
}
