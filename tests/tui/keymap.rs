//! Keys to actions, in each mode: what a person presses and what it does.

use crate::tui_support::*;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use taper::tui::keymap::{action, footer, Action};
use taper::tui::keys::{help_lines, HelpLine};
use taper::tui::state::Overlay;

fn press(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
    KeyEvent::new(code, modifiers)
}

fn chat() -> Harness {
    Harness::with_model()
}

#[test]
fn enter_sends() {
    let h = chat();
    assert_eq!(
        action(&h.state, &press(KeyCode::Enter, KeyModifiers::NONE)),
        Action::Send
    );
}

#[test]
fn alt_enter_shift_enter_and_ctrl_j_add_a_line() {
    let h = chat();
    for k in [
        press(KeyCode::Enter, KeyModifiers::ALT),
        press(KeyCode::Enter, KeyModifiers::SHIFT),
        press(KeyCode::Char('j'), KeyModifiers::CONTROL),
    ] {
        assert_eq!(action(&h.state, &k), Action::Newline, "{k:?}");
    }
}

#[test]
fn ctrl_c_and_ctrl_q_quit_from_every_screen() {
    let mut h = chat();
    for overlay in [
        Overlay::None,
        Overlay::Picker,
        Overlay::Help,
        Overlay::Settings,
    ] {
        h.state.overlay = overlay;
        for c in ['c', 'q'] {
            let k = press(KeyCode::Char(c), KeyModifiers::CONTROL);
            assert_eq!(action(&h.state, &k), Action::Quit, "{overlay:?} Ctrl+{c}");
        }
    }
}

#[test]
fn escape_stops_in_the_chat_and_closes_overlays() {
    let mut h = chat();
    let esc = press(KeyCode::Esc, KeyModifiers::NONE);
    assert_eq!(action(&h.state, &esc), Action::Stop);
    for overlay in [Overlay::Picker, Overlay::Help, Overlay::Settings] {
        h.state.overlay = overlay;
        assert_eq!(action(&h.state, &esc), Action::CloseOverlay, "{overlay:?}");
    }
}

#[test]
fn question_mark_opens_help_only_when_the_input_is_empty() {
    let mut h = chat();
    let q = press(KeyCode::Char('?'), KeyModifiers::NONE);
    assert_eq!(action(&h.state, &q), Action::OpenHelp);
    h.type_text("why");
    assert_eq!(action(&h.state, &q), Action::Edit(q));
    assert_eq!(
        action(&h.state, &press(KeyCode::F(1), KeyModifiers::NONE)),
        Action::OpenHelp
    );
}

#[test]
fn chat_shortcuts_map_to_their_actions() {
    let h = chat();
    let cases = [
        ('r', Action::Regenerate),
        ('n', Action::NewConversation),
        ('p', Action::OpenPicker),
        ('s', Action::OpenSettings),
        ('t', Action::ToggleThinking),
        ('l', Action::Redraw),
    ];
    for (c, expected) in cases {
        let k = press(KeyCode::Char(c), KeyModifiers::CONTROL);
        assert_eq!(action(&h.state, &k), expected, "Ctrl+{c}");
    }
    let pg = |code| action(&h.state, &press(code, KeyModifiers::NONE));
    assert_eq!(pg(KeyCode::PageUp), Action::PageUp);
    assert_eq!(pg(KeyCode::PageDown), Action::PageDown);
}

#[test]
fn up_recalls_history_only_on_an_empty_input_with_history() {
    let mut h = chat();
    let up = press(KeyCode::Up, KeyModifiers::NONE);
    assert_eq!(action(&h.state, &up), Action::Edit(up), "no history yet");
    let turn = h.ask("earlier").turn_id;
    h.finish(turn, usage(1, 0, 1, taper::protocol::StopReason::EndOfTurn));
    assert_eq!(action(&h.state, &up), Action::HistoryOlder);
    h.type_text("draft");
    assert_eq!(
        action(&h.state, &up),
        Action::Edit(up),
        "a draft is being edited"
    );
}

#[test]
fn typing_in_the_picker_filters() {
    let mut h = chat();
    h.state.overlay = Overlay::Picker;
    let k = |code| press(code, KeyModifiers::NONE);
    assert_eq!(
        action(&h.state, &k(KeyCode::Char('g'))),
        Action::PickerType('g')
    );
    assert_eq!(
        action(&h.state, &k(KeyCode::Char('?'))),
        Action::PickerType('?')
    );
    assert_eq!(
        action(&h.state, &k(KeyCode::Backspace)),
        Action::PickerBackspace
    );
    assert_eq!(action(&h.state, &k(KeyCode::Down)), Action::PickerDown);
    assert_eq!(action(&h.state, &k(KeyCode::Enter)), Action::PickerLoad);
}

#[test]
fn key_releases_are_ignored() {
    let h = chat();
    let mut k = press(KeyCode::Enter, KeyModifiers::NONE);
    k.kind = KeyEventKind::Release;
    assert_eq!(action(&h.state, &k), Action::Ignore);
}

#[test]
fn the_help_lists_every_chat_shortcut() {
    let listed: String = help_lines()
        .into_iter()
        .filter_map(|line| match line {
            HelpLine::Key { keys, .. } => Some(keys),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ");
    for key in [
        "Enter",
        "Alt+Enter",
        "Shift+Enter",
        "Esc",
        "Ctrl+R",
        "Ctrl+N",
        "Ctrl+P",
        "Ctrl+S",
        "Ctrl+T",
        "PgUp",
        "PgDn",
        "End",
        "?",
        "Ctrl+C",
        "Ctrl+Q",
        "Ctrl+L",
        "Up",
        "Down",
    ] {
        assert!(listed.contains(key), "help does not list {key}");
    }
}

#[test]
fn the_footer_shows_stop_while_answering_and_the_picker_key_when_no_model() {
    let mut h = chat();
    h.ask("Hi");
    assert_eq!(footer(&h.state)[0], ("Esc".to_string(), "stop"));
    let h = Harness::empty();
    assert!(footer(&h.state).iter().any(|(k, _)| k == "Ctrl+P"));
}
