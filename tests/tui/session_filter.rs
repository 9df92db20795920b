//! The sessions overlay's filter, driven through `update`: typed characters narrow the list
//! to sessions whose title or messages contain them, Backspace widens it, Up/Down and Enter
//! work on what is shown, and letters no longer rename, delete or close.

use crate::tui_support::*;
use crossterm::event::KeyCode;
use std::path::PathBuf;
use taper::sessions::{parse_session, Listed, Session, Summary};
use taper::tui::state::{ListMode, Overlay};
use taper::tui::{Effect, Msg, SessionEffect, SessionMsg};

/// The good fixture as `id`, with this title and one more question.
fn session(id: &str, title: &str, question: &str) -> Session {
    let bytes = include_bytes!("../fixtures/sessions/20261130-101500-c0de.json");
    let mut s = parse_session(bytes).unwrap();
    s.id = id.to_string();
    s.title = title.to_string();
    let mut m = s.messages[0].clone();
    m.content = question.to_string();
    s.messages.push(m);
    s
}

fn listed(s: &Session) -> Listed {
    Listed {
        path: PathBuf::from(format!("/sessions/{}.json", s.id)),
        id: s.id.clone(),
        summary: Ok(Summary::of(s)),
        sort_time: s.updated_at,
    }
}

/// The overlay open on three sessions and a file that cannot be read.
fn overlay() -> Harness {
    let mut h = Harness::with_model();
    h.state.session.dir = PathBuf::from("/sessions");
    h.send(ctrl('o'));
    let mut entries: Vec<Listed> = [
        session("c", "Lisbon trip", "Best food in Lisbon and Porto"),
        session("b", "", "What is the capital of FRANCE? Paris or Lyon?"),
        session("a", "Paris notes", "Museums"),
    ]
    .iter()
    .map(listed)
    .collect();
    entries.push(Listed {
        path: PathBuf::from("/sessions/z.json"),
        id: "z".into(),
        summary: Err("not valid JSON".into()),
        sort_time: 0,
    });
    h.send(Msg::Session(SessionMsg::Listed(entries)));
    h
}

fn shown(h: &Harness) -> Vec<String> {
    h.state
        .sessions
        .visible()
        .iter()
        .map(|l| l.id.clone())
        .collect()
}

fn selected(h: &Harness) -> String {
    h.state.sessions.selected_entry().unwrap().id.clone()
}

#[test]
fn typing_filters_by_title_and_message_text_ignoring_case() {
    let mut h = overlay();
    assert_eq!(shown(&h), ["c", "b", "a", "z"]);
    h.type_text("notes");
    assert_eq!(h.state.sessions.filter, "notes");
    assert_eq!(shown(&h), ["a"], "the title");
    for _ in 0.."notes".len() {
        h.send(key(KeyCode::Backspace));
    }
    h.type_text("France");
    assert_eq!(shown(&h), ["b"], "a message");
    h.type_text("!");
    assert!(shown(&h).is_empty());
    assert_eq!(h.state.sessions.selected_entry(), None);
    // Enter on nothing does nothing.
    assert!(h.send(key(KeyCode::Enter)).is_empty());
    assert_eq!(h.state.overlay, Overlay::Sessions);
}

#[test]
fn backspace_widens_the_filter_and_keeps_the_selection() {
    let mut h = overlay();
    h.type_text("paris");
    assert_eq!(shown(&h), ["b", "a"]);
    h.send(key(KeyCode::Down));
    assert_eq!(selected(&h), "a");
    for _ in 0.."aris".len() {
        h.send(key(KeyCode::Backspace));
    }
    assert_eq!(h.state.sessions.filter, "p");
    assert_eq!(shown(&h), ["c", "b", "a"], "every session says \"print\"");
    assert_eq!(selected(&h), "a", "still the same session");
    h.send(key(KeyCode::Backspace));
    assert_eq!(
        shown(&h),
        ["c", "b", "a", "z"],
        "an empty filter shows everything"
    );
    assert_eq!(selected(&h), "a");
    h.send(key(KeyCode::Backspace));
    assert_eq!(h.state.sessions.filter, "");
}

#[test]
fn up_down_and_enter_work_on_the_filtered_list() {
    let mut h = overlay();
    h.type_text("s");
    assert_eq!(
        shown(&h),
        ["c", "b", "a"],
        "every session says \"sentence\""
    );
    h.send(key(KeyCode::Up));
    assert_eq!(selected(&h), "a", "wraps to the last shown");
    h.type_text("eum");
    assert_eq!(shown(&h), ["a"]);
    assert_eq!(selected(&h), "a");
    h.send(key(KeyCode::Down));
    assert_eq!(selected(&h), "a");
    let fx = h.send(key(KeyCode::Enter));
    assert!(
        fx.iter().any(|e| matches!(
            e,
            Effect::Session(SessionEffect::Open(p)) if p.as_path() == std::path::Path::new("/sessions/a.json")
        )),
        "{fx:?}"
    );
    assert_eq!(h.state.overlay, Overlay::None);
}

#[test]
fn letters_go_to_the_filter_and_the_list_keys_are_not_letters() {
    let mut h = overlay();
    h.type_text("rdq");
    assert_eq!(h.state.sessions.filter, "rdq");
    assert_eq!(h.state.sessions.mode, ListMode::Browse);
    assert_eq!(h.state.overlay, Overlay::Sessions);
    h.send(Msg::Paste("x\ny".into()));
    assert_eq!(h.state.sessions.filter, "rdqx y", "a paste, on one line");
    for _ in 0..6 {
        h.send(key(KeyCode::Backspace));
    }
    h.send(key(KeyCode::F(2)));
    assert_eq!(
        h.state.sessions.mode,
        ListMode::Rename("Lisbon trip".into())
    );
    h.type_text("!");
    assert_eq!(
        h.state.sessions.filter, "",
        "typing in a rename is the title's"
    );
    h.send(key(KeyCode::Esc));
    h.send(key(KeyCode::Delete));
    assert_eq!(h.state.sessions.mode, ListMode::ConfirmDelete);
    h.send(key(KeyCode::Esc));
    h.send(key(KeyCode::Esc));
    assert_eq!(h.state.overlay, Overlay::None);
}

#[test]
fn reopening_the_list_starts_with_an_empty_filter() {
    let mut h = overlay();
    h.type_text("paris");
    h.send(key(KeyCode::Esc));
    h.send(ctrl('o'));
    assert_eq!(h.state.sessions.filter, "");
}
