//! One set of editing keys in every text field (Ctrl+W deletes a word, Ctrl+U to the start
//! of the line, Ctrl+_ undoes in the message editor), and the keys that lend the terminal
//! out: Ctrl+Z (suspend) and Alt+M (mouse capture).

use super::Test;
use crate::protocol::EngineEvent;
use crate::sessions::{Listed, Summary};
use crate::tui::msg::{Effect, Msg, SessionEffect, SessionMsg};
use crate::tui::state::{ListMode, ModelEntry, Overlay};
use crossterm::event::{KeyCode, KeyModifiers};
use std::path::PathBuf;

const NONE: KeyModifiers = KeyModifiers::NONE;
const CTRL: KeyModifiers = KeyModifiers::CONTROL;

impl Test {
    /// Types `text` a key at a time, as a person would.
    fn write(&mut self, text: &str) {
        for c in text.chars() {
            self.key(KeyCode::Char(c), NONE);
        }
    }

    fn ctrl(&mut self, c: char) -> Vec<Effect> {
        self.key(KeyCode::Char(c), CTRL)
    }
}

fn listed(id: &str, title: &str, text: &str) -> Listed {
    Listed {
        path: PathBuf::from(format!("/sessions/{id}.json")),
        id: id.into(),
        summary: Ok(Summary {
            title: title.into(),
            created_at: 0,
            updated_at: 0,
            messages: 2,
            models: vec![],
            text: text.into(),
        }),
        sort_time: 0,
    }
}

#[test]
fn ctrl_w_and_ctrl_u_delete_before_the_cursor_in_the_message_and_ctrl_underscore_undoes() {
    let mut t = Test::loaded();
    t.write("read @src/tui/mod.rs please");
    t.ctrl('w');
    assert_eq!(t.state.input.text(), "read @src/tui/mod.rs ");
    t.ctrl('w');
    assert_eq!(t.state.input.text(), "read ", "a path is one word");
    // Ctrl+U deletes to the start of the line (it used to undo).
    t.ctrl('u');
    assert_eq!(t.state.input.text(), "");
    // Terminals send Ctrl+_ (and Ctrl+/) as the byte crossterm calls Ctrl+7.
    t.ctrl('7');
    assert_eq!(t.state.input.text(), "read ");
    t.ctrl('_');
    assert_eq!(t.state.input.text(), "read @src/tui/mod.rs ");
    t.ctrl('/');
    assert_eq!(t.state.input.text(), "read @src/tui/mod.rs please");
}

#[test]
fn ctrl_u_in_the_message_deletes_only_the_cursor_line_then_the_line_break() {
    let mut t = Test::loaded();
    t.write("first line");
    t.ctrl('j');
    t.write("second");
    t.key(KeyCode::Left, NONE);
    t.ctrl('u');
    assert_eq!(t.state.input.text(), "first line\nd");
    t.ctrl('u');
    assert_eq!(t.state.input.text(), "first lined");
    t.ctrl('w');
    assert_eq!(
        t.state.input.text(),
        "first d",
        "the word before the cursor, not after"
    );
}

#[test]
fn the_pickers_filter_takes_the_same_keys() {
    let mut t = Test::loaded();
    let mut gemma = ModelEntry::from_path("/models/gemma-3-270m-q4_k_m.gguf".into());
    gemma.name = "gemma-3-270m-q4_k_m".into();
    t.send(Msg::Models(vec![gemma]));
    t.ctrl('p');
    assert_eq!(t.state.overlay, Overlay::Picker);
    t.write("gemma q4");
    t.ctrl('w');
    assert_eq!(t.state.picker.filter, "gemma ");
    t.write("q8");
    assert!(t.state.picker.visible().is_empty());
    t.ctrl('u');
    assert_eq!(t.state.picker.filter, "");
    assert_eq!(t.state.picker.visible().len(), 1);
}

#[test]
fn a_settings_value_takes_the_same_keys() {
    let mut t = Test::loaded();
    t.ctrl('s');
    t.key(KeyCode::Enter, NONE); // the system prompt
    t.write("You are terse");
    t.ctrl('w');
    assert_eq!(t.state.form.editing.as_deref(), Some("You are "));
    t.ctrl('u');
    assert_eq!(t.state.form.editing.as_deref(), Some(""));
    t.write("Be brief");
    t.key(KeyCode::Enter, NONE);
    assert_eq!(t.state.settings.system_prompt, "Be brief");
}

#[test]
fn the_sessions_filter_and_the_rename_field_take_the_same_keys() {
    let mut t = Test::loaded();
    t.ctrl('o');
    t.send(Msg::Session(SessionMsg::Listed(vec![
        listed("b", "Trip to Paris", "trip to paris the capital"),
        listed("a", "Rust borrow checker", "rust borrow checker"),
    ])));
    t.write("borrow tr");
    t.ctrl('w');
    assert_eq!(t.state.sessions.filter, "borrow ");
    assert_eq!(t.state.sessions.visible().len(), 1);
    t.ctrl('u');
    assert_eq!(t.state.sessions.filter, "");
    assert_eq!(t.state.sessions.visible().len(), 2);

    // Widening the filter kept the match selected.
    t.key(KeyCode::F(2), NONE);
    let title = |t: &Test| t.state.sessions.mode.clone();
    assert_eq!(title(&t), ListMode::Rename("Rust borrow checker".into()));
    t.ctrl('w');
    assert_eq!(title(&t), ListMode::Rename("Rust borrow ".into()));
    t.ctrl('u');
    t.write("Lyon");
    let fx = t.key(KeyCode::Enter, NONE);
    let renamed = fx.iter().find_map(|e| match e {
        Effect::Session(SessionEffect::Rename { path, title }) => Some((path, title.as_str())),
        _ => None,
    });
    assert_eq!(renamed, Some((&PathBuf::from("/sessions/a.json"), "Lyon")));
}

#[test]
fn ctrl_z_suspends_and_an_answer_goes_on() {
    let mut t = Test::loaded();
    let turn_id = t.ask("Hi");
    let fx = t.ctrl('z');
    assert!(fx.iter().any(|e| matches!(e, Effect::Suspend)), "{fx:?}");
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::Cancel(_))),
        "the answer is not stopped: {fx:?}"
    );
    assert!(t.state.generating());
    t.send(Msg::Engine(EngineEvent::Token {
        turn_id,
        text: "Hello".into(),
    }));
    t.finish(turn_id);
    assert!(!t.state.generating());
    // From an overlay too, and the message being written stays.
    t.write("half a question");
    t.ctrl('s');
    assert!(matches!(t.ctrl('z')[..], [Effect::Suspend]));
    assert_eq!(t.state.input.text(), "half a question");
}

#[test]
fn alt_m_lets_the_terminal_have_the_mouse_and_takes_it_back() {
    let mut t = Test::loaded();
    assert!(t.state.mouse_captured);
    let fx = t.key(KeyCode::Char('m'), KeyModifiers::ALT);
    assert!(matches!(fx[..], [Effect::MouseCapture(false)]), "{fx:?}");
    assert!(!t.state.mouse_captured);
    let status = t.state.status.clone().unwrap_or_default();
    assert!(status.starts_with("Mouse off: select text"), "{status}");
    assert_eq!(t.state.input.text(), "", "not typed into the message");
    let fx = t.key(KeyCode::Char('m'), KeyModifiers::ALT);
    assert!(matches!(fx[..], [Effect::MouseCapture(true)]), "{fx:?}");
    assert!(t.state.mouse_captured);
    assert!(t
        .state
        .status
        .as_deref()
        .unwrap_or("")
        .starts_with("Mouse on"));
}
