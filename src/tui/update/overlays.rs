//! The overlays' actions: opening and closing them, the model picker, the settings form and
//! scrolling the help.

use super::{downloads, turn};
use crate::tui::keymap::Action;
use crate::tui::line_edit::{self, Cut};
use crate::tui::msg::Effect;
use crate::tui::state::{Field, Overlay, State};

/// Lines a page key scrolls the help by (its height is the renderer's business).
const HELP_PAGE: usize = 10;

pub(super) fn act(state: &mut State, action: Action, fx: &mut Vec<Effect>) {
    match action {
        Action::OpenPicker => {
            state.overlay = Overlay::Picker;
            state.picker.open();
            fx.push(Effect::ScanModels);
        }
        Action::OpenSettings => {
            state.overlay = Overlay::Settings;
            state.form = Default::default();
        }
        Action::OpenHelp => {
            state.overlay = Overlay::Help;
            state.help_top = 0;
        }
        Action::CloseOverlay => state.overlay = Overlay::None,
        Action::HelpScroll(lines) => scroll_help(state, lines),
        Action::HelpPage(pages) => scroll_help(state, pages * HELP_PAGE as isize),
        Action::PickerUp => state.picker.move_selection(-1),
        Action::PickerDown => state.picker.move_selection(1),
        Action::PickerType(c) => state.picker.push_filter(c),
        Action::PickerBackspace => state.picker.pop_filter(),
        Action::PickerLoad => pick(state, fx),
        Action::FieldUp => state.form.move_selection(-1),
        Action::FieldDown => state.form.move_selection(1),
        Action::FieldEnter => field_enter(state),
        Action::FieldCancel => {
            state.form.editing = None;
            state.form.error = None;
        }
        action => edit_field(state, action),
    }
}

fn scroll_help(state: &mut State, delta: isize) {
    // The renderer stops at the last line; here only the number of lines bounds it.
    let last = crate::tui::keys::help_lines().len().saturating_sub(1);
    state.help_top = (state.help_top as isize + delta).clamp(0, last as isize) as usize;
}

/// The picker's Enter: load the model, or download it first.
fn pick(state: &mut State, fx: &mut Vec<Effect>) {
    if let Some(entry) = state.picker.selected_entry().cloned() {
        if entry.is_unreachable_remote() {
            // Asking again is the one thing to do about it.
            let why = entry.problem.as_deref().unwrap_or("unreachable");
            state.status = Some(format!("{}: {why} (asking again)", entry.name));
            fx.push(Effect::ScanModels);
            return;
        }
        state.overlay = Overlay::None;
        if entry.download.is_some() {
            downloads::start(state, entry, fx);
        } else {
            turn::load(state, entry, fx);
        }
    }
}

/// Typing into the value being edited.
fn edit_field(state: &mut State, action: Action) {
    let Some(edit) = &mut state.form.editing else {
        return;
    };
    match action {
        Action::FieldType(c) => edit.push(c),
        Action::FieldBackspace => {
            line_edit::cut(edit, Cut::Char);
        }
        _ => {}
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
