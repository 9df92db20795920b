//! Saved conversations in the TUI, driven through `update` as in update.rs; the file
//! effects are carried out for real (`app::files::perform`) in a temporary directory and what
//! they report is fed back. Autosave after a finished and a stopped answer, resume, the
//! sessions list's rename and delete (each behind its own step), export and clipboard copy.

use crate::tui_support::*;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::path::{Path, PathBuf};
use taper::chat::Message;
use taper::protocol::StopReason;
use taper::sessions::{store, SavedStatus, Session};
use taper::tui::app::files::perform;
use taper::tui::state::{AnswerStatus, EntryBody, ListMode, Overlay};
use taper::tui::{Effect, Msg, SessionEffect};

/// A harness whose sessions go to `dir`.
fn harness(dir: &Path) -> Harness {
    let mut h = Harness::with_model();
    h.state.session.dir = dir.to_path_buf();
    h
}

fn saves(fx: &[Effect]) -> Vec<Session> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Session(SessionEffect::Save { session, .. }) => Some((**session).clone()),
            _ => None,
        })
        .collect()
}

/// Carries out the session effects of `fx` (and of the messages they lead to).
fn run(h: &mut Harness, fx: Vec<Effect>) {
    let mut pending = fx;
    while !pending.is_empty() {
        for effect in std::mem::take(&mut pending) {
            if let Effect::Session(effect) = effect {
                if let Some(msg) = perform(effect) {
                    pending.extend(h.send(msg));
                }
            }
        }
    }
}

/// Sends `msg` and carries out its file effects.
fn press(h: &mut Harness, msg: Msg) -> Vec<Effect> {
    let fx = h.send(msg);
    run(h, fx.clone());
    fx
}

fn one_turn(h: &mut Harness, question: &str, answer: &[&str]) -> Vec<Effect> {
    let turn = h.ask(question).turn_id;
    h.tokens(turn, answer);
    h.engine(taper::protocol::EngineEvent::Finished {
        turn_id: turn,
        usage: usage(20, 0, answer.len(), StopReason::EndOfTurn),
        tool_calls: Vec::new(),
    })
}

fn files(dir: &Path) -> Vec<PathBuf> {
    store::list(dir).into_iter().map(|l| l.path).collect()
}

#[test]
fn a_finished_answer_is_saved_with_its_model_usage_and_settings() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = harness(dir.path());
    h.state.settings.system_prompt = "Be brief.".into();
    let fx = one_turn(&mut h, "Hi", &["Hel", "lo"]);
    let saved = saves(&fx);
    assert_eq!(saved.len(), 1, "one save when the answer finishes");
    let s = &saved[0];
    assert_eq!(s.system_prompt, "Be brief.");
    assert_eq!(s.sampling.temperature, 0.0);
    assert_eq!(s.sampling.max_tokens, 256);
    assert_eq!(s.messages.len(), 2);
    assert_eq!(s.messages[0].content, "Hi");
    let answer = &s.messages[1];
    assert_eq!(answer.content, "Hello");
    assert_eq!(answer.model.as_deref(), Some(SMOL));
    assert_eq!(answer.status, Some(SavedStatus::Done));
    let u = answer.usage.as_ref().unwrap();
    assert_eq!((u.prompt_tokens, u.generated_tokens), (20, 2));
    assert_eq!(u.decode_tok_s, 50.0);
    assert_eq!(u.ttft_s, 0.08);

    run(&mut h, fx);
    let on_disk = files(dir.path());
    assert_eq!(on_disk.len(), 1);
    assert_eq!(&store::load(&on_disk[0]).unwrap(), s);

    // A second turn goes to the same file; nothing new, nothing written.
    let fx = one_turn(&mut h, "Again", &["Sure"]);
    assert_eq!(saves(&fx)[0].id, s.id);
    run(&mut h, fx);
    assert_eq!(store::load(&on_disk[0]).unwrap().messages.len(), 4);
    assert!(
        saves(&h.send(ctrl('q'))).is_empty(),
        "unchanged: not saved again"
    );
}

#[test]
fn a_stopped_answer_is_saved_at_once_and_again_with_its_usage() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = harness(dir.path());
    let turn = h.ask("Tell me a story").turn_id;
    h.tokens(turn, &["Once", " upon"]);
    let fx = h.send(key(KeyCode::Esc));
    assert!(matches!(fx.first(), Some(Effect::Cancel(t)) if *t == turn));
    let stopped = saves(&fx);
    assert_eq!(stopped.len(), 1);
    assert_eq!(stopped[0].messages[1].content, "Once upon");
    assert_eq!(stopped[0].messages[1].status, Some(SavedStatus::Stopped));
    assert!(stopped[0].messages[1].usage.is_none());
    run(&mut h, fx);
    h.finish(turn, usage(12, 0, 2, StopReason::Cancelled));
    let later = saves(&h.effects);
    assert_eq!(later.len(), 2, "saved again when the engine's figures came");
    let last = &later[1];
    assert_eq!(last.id, stopped[0].id);
    assert_eq!(last.messages[1].status, Some(SavedStatus::Stopped));
    assert_eq!(
        last.messages[1].usage.as_ref().unwrap().stop,
        Some(StopReason::Cancelled)
    );
}

#[test]
fn quitting_mid_answer_keeps_what_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = harness(dir.path());
    let turn = h.ask("Count").turn_id;
    h.tokens(turn, &["1, 2"]);
    let fx = press(&mut h, ctrl('q'));
    assert!(h.state.quit);
    let saved = saves(&fx);
    assert_eq!(saved[0].messages[1].content, "1, 2");
    assert_eq!(saved[0].messages[1].status, Some(SavedStatus::Stopped));
    assert_eq!(files(dir.path()).len(), 1);
}

#[test]
fn resuming_restores_the_conversation_settings_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = harness(dir.path());
    first.state.settings.system_prompt = "Be brief.".into();
    first.state.settings.sampling.top_k = 7;
    let fx = one_turn(&mut first, "Hi", &["Hello", "!"]);
    let id = saves(&fx)[0].id.clone();
    run(&mut first, fx);

    // Another run of taper, with the other model loaded.
    let mut h = harness(dir.path());
    h.send(Msg::Load(entry(GEMMA, "gemma3", "Q4_K_M", 1)));
    h.engine(taper::protocol::EngineEvent::Loaded {
        info: info(GEMMA, "gemma3"),
        notices: vec![],
    });
    let path = store::path_of(dir.path(), &id);
    press(&mut h, ctrl('o'));
    assert_eq!(h.state.overlay, Overlay::Sessions);
    assert_eq!(h.state.sessions.entries.len(), 1);
    press(&mut h, key(KeyCode::Enter));
    assert_eq!(h.state.overlay, Overlay::None);
    assert_eq!(h.state.session.id.as_deref(), Some(id.as_str()));
    assert_eq!(h.state.settings.system_prompt, "Be brief.");
    assert_eq!(h.state.settings.sampling.top_k, 7);
    let shown: Vec<(String, Option<AnswerStatus>)> = h
        .state
        .conversation
        .entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Message { message, answer } => {
                Some((message.content.clone(), answer.as_ref().map(|a| a.status)))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        shown,
        vec![
            ("Hi".to_string(), None),
            ("Hello!".to_string(), Some(AnswerStatus::Done))
        ]
    );
    // The next question carries the resumed history; the new answer is Gemma's.
    let request = h.ask("And you?");
    assert_eq!(
        request.messages(),
        vec![
            Message::system("Be brief."),
            Message::user("Hi"),
            Message::assistant("Hello!"),
            Message::user("And you?")
        ]
    );
    let fx = h.engine(taper::protocol::EngineEvent::Finished {
        turn_id: request.turn_id,
        usage: usage(30, 0, 1, StopReason::EndOfTurn),
        tool_calls: Vec::new(),
    });
    let saved = saves(&fx);
    assert_eq!(saved[0].id, id);
    assert_eq!(saved[0].models(), vec![SMOL, GEMMA]);
    run(&mut h, fx);
    assert_eq!(files(dir.path()), vec![path.clone()]);
    assert_eq!(store::load(&path).unwrap().messages.len(), 4);
}

#[test]
fn delete_asks_first_and_n_keeps_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = harness(dir.path());
    {
        let fx = one_turn(&mut h, "First", &["One"]);
        run(&mut h, fx);
    }
    press(&mut h, ctrl('n'));
    {
        let fx = one_turn(&mut h, "Second", &["Two"]);
        run(&mut h, fx);
    }
    assert_eq!(files(dir.path()).len(), 2);

    press(&mut h, ctrl('o'));
    assert_eq!(h.state.sessions.entries.len(), 2);
    press(&mut h, key(KeyCode::Down));
    let target = h.state.sessions.selected_entry().unwrap().path.clone();
    let fx = press(&mut h, key(KeyCode::Delete));
    assert_eq!(h.state.sessions.mode, ListMode::ConfirmDelete);
    assert!(fx.is_empty(), "nothing deleted before the answer");
    press(&mut h, key(KeyCode::Char('n')));
    assert_eq!(h.state.sessions.mode, ListMode::Browse);
    assert!(target.exists());

    press(&mut h, key(KeyCode::Delete));
    let fx = press(&mut h, key(KeyCode::Char('y')));
    assert!(matches!(
        fx.as_slice(),
        [Effect::Session(SessionEffect::Delete(p))] if *p == target
    ));
    assert!(!target.exists());
    assert_eq!(h.state.sessions.entries.len(), 1);
    assert!(h.state.status.as_deref().unwrap().starts_with("Deleted"));
}

#[test]
fn rename_edits_the_title_and_esc_leaves_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = harness(dir.path());
    {
        let fx = one_turn(&mut h, "What is Rust?", &["A language."]);
        run(&mut h, fx);
    }
    let path = files(dir.path())[0].clone();
    press(&mut h, ctrl('o'));
    press(&mut h, key(KeyCode::F(2)));
    assert_eq!(
        h.state.sessions.mode,
        ListMode::Rename("What is Rust?".into())
    );
    h.type_text("!!");
    press(&mut h, key(KeyCode::Esc));
    assert_eq!(h.state.sessions.mode, ListMode::Browse);
    assert_eq!(store::load(&path).unwrap().title, "");

    press(&mut h, key(KeyCode::F(2)));
    for _ in 0.."What is Rust?".len() {
        press(&mut h, key(KeyCode::Backspace));
    }
    h.type_text("Rust intro");
    press(&mut h, key(KeyCode::Enter));
    assert_eq!(store::load(&path).unwrap().title, "Rust intro");
    let listed = &h.state.sessions.entries[0];
    assert_eq!(listed.summary.as_ref().unwrap().title, "Rust intro");
    // The open conversation keeps the new title in its next save.
    press(&mut h, key(KeyCode::Esc));
    let fx = one_turn(&mut h, "More?", &["Yes."]);
    assert_eq!(saves(&fx)[0].title, "Rust intro");
}

#[test]
fn an_unreadable_session_is_listed_and_not_opened() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("broken.json");
    std::fs::write(&bad, b"{\"format\": \"taper-session\", \"version\": 99}").unwrap();
    let mut h = harness(dir.path());
    press(&mut h, ctrl('o'));
    let entry = &h.state.sessions.entries[0];
    assert!(entry.summary.as_ref().unwrap_err().contains("newer taper"));
    let fx = press(&mut h, key(KeyCode::Enter));
    assert!(fx.is_empty());
    assert!(h
        .state
        .status
        .as_deref()
        .unwrap()
        .contains("Cannot open broken"));
    assert_eq!(h.state.overlay, Overlay::Sessions);
}

#[test]
fn export_writes_markdown_and_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    let mut h = harness(&sessions);
    assert!(press(&mut h, ctrl('e')).is_empty());
    assert_eq!(h.state.status.as_deref(), Some("Nothing to export yet"));
    {
        let fx = one_turn(&mut h, "Hi", &["Hello"]);
        run(&mut h, fx);
    }
    press(&mut h, ctrl('e'));
    let status = h.state.status.clone().unwrap();
    let path = status.strip_prefix("Exported to ").expect(&status);
    assert!(path.starts_with(&dir.path().join("exports").display().to_string()));
    let md = std::fs::read_to_string(path).unwrap();
    assert!(md.starts_with("# Hi\n") && md.contains("\nHello\n"), "{md}");
}

#[test]
fn ctrl_y_copies_the_last_answer_and_alt_y_cycles_code_blocks() {
    let mut h = Harness::with_model();
    let fx = h.send(ctrl('y'));
    assert!(fx.is_empty());
    one_turn(
        &mut h,
        "Code?",
        &["```sh\nls\n```\n\nand\n\n```rust\nfn a() {}\n```"],
    );
    one_turn(
        &mut h,
        "More",
        &["<think>hmm</think>No code here.\n\n```\n"],
    );
    let copied = |fx: Vec<Effect>| match fx.as_slice() {
        [Effect::Copy(text)] => text.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        copied(h.send(ctrl('y'))),
        "No code here.\n\n```",
        "the answer without its thinking"
    );
    let alt_y = || Msg::Key(KeyEvent::new(KeyCode::Char('y'), KeyModifiers::ALT));
    assert_eq!(copied(h.send(alt_y())), "fn a() {}\n");
    assert!(h
        .state
        .status
        .as_deref()
        .unwrap()
        .contains("2 of 2 (rust, 1 line)"));
    assert_eq!(copied(h.send(alt_y())), "ls\n");
    assert_eq!(copied(h.send(alt_y())), "fn a() {}\n", "wraps around");
}
