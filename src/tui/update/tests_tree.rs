//! The conversation tree as keys drive it: select, edit and send, answer again, switch
//! siblings, fork, delete after a yes; what the model is sent after each, and what is saved
//! and restored.

use super::Test;
use crate::chat::Role;
use crate::engine::EngineCommand;
use crate::protocol::{EngineEvent, GenerateRequest};
use crate::tui::msg::{Effect, Msg, SessionEffect};
use crate::tui::state::EntryBody;
use crossterm::event::{KeyCode, KeyModifiers};

const NONE: KeyModifiers = KeyModifiers::NONE;

pub(super) fn generated(fx: &[Effect]) -> Option<&GenerateRequest> {
    fx.iter().find_map(|e| match e {
        Effect::Send(EngineCommand::Generate(g)) => Some(g),
        _ => None,
    })
}

fn saved(fx: &[Effect]) -> Option<Box<crate::sessions::Session>> {
    fx.iter().rev().find_map(|e| match e {
        Effect::Session(SessionEffect::Save { session, .. }) => Some(session.clone()),
        _ => None,
    })
}

impl Test {
    /// Asks `text` and answers it with `answer`.
    pub(super) fn turn(&mut self, text: &str, answer: &str) {
        let turn_id = self.ask(text);
        self.send(Msg::Engine(EngineEvent::Token {
            turn_id,
            text: answer.into(),
        }));
        self.finish(turn_id);
    }

    /// The running answer gets `text` and ends.
    fn answer_with(&mut self, text: &str) -> Vec<Effect> {
        let turn_id = self.state.phase.turn_id().expect("answering");
        self.send(Msg::Engine(EngineEvent::Token {
            turn_id,
            text: text.into(),
        }));
        self.finish(turn_id)
    }

    /// What the next question sends the model.
    fn sent_with(&mut self, text: &str) -> Vec<String> {
        self.state.input.set_text(text);
        let fx = self.key(KeyCode::Enter, NONE);
        generated(&fx)
            .expect("a generation")
            .messages()
            .iter()
            .map(|m| m.content.clone())
            .collect()
    }

    /// q1 a1 q2 a2 q3 a3, with a model loaded.
    pub(super) fn three_turns() -> Self {
        let mut t = Test::loaded();
        for n in 1..=3 {
            t.turn(&format!("q{n}"), &format!("a{n}"));
        }
        t
    }

    /// The texts on the path.
    pub(super) fn path(&self) -> Vec<String> {
        self.state
            .conversation
            .entries
            .iter()
            .filter_map(|e| match &e.body {
                EntryBody::Message { message, .. } => Some(message.content.clone()),
                _ => None,
            })
            .collect()
    }

    /// The selected message's text.
    fn selected(&self) -> Option<String> {
        let id = self.state.select?.id;
        let at = self.state.conversation.index_of(id)?;
        match &self.state.conversation.entries[at].body {
            EntryBody::Message { message, .. } => Some(message.content.clone()),
            _ => None,
        }
    }

    /// Selects the message with `text`, from the newest up.
    fn select(&mut self, text: &str) {
        self.key(KeyCode::Up, KeyModifiers::ALT);
        for _ in 0..20 {
            if self.selected().as_deref() == Some(text) {
                return;
            }
            self.key(KeyCode::Up, NONE);
        }
        panic!("{text:?} is not selectable: {:?}", self.path());
    }

    fn press(&mut self, c: char) -> Vec<Effect> {
        self.key(KeyCode::Char(c), NONE)
    }
}

#[test]
fn alt_up_selects_the_newest_message_and_up_down_walk_the_messages() {
    let mut t = Test::three_turns();
    t.key(KeyCode::Up, KeyModifiers::ALT);
    assert_eq!(t.selected().as_deref(), Some("a3"));
    t.key(KeyCode::Up, NONE);
    assert_eq!(t.selected().as_deref(), Some("q3"));
    t.press('k');
    t.press('j');
    t.key(KeyCode::Down, NONE);
    assert_eq!(t.selected().as_deref(), Some("a3"), "stops at the newest");
    t.key(KeyCode::Esc, NONE);
    assert_eq!(t.state.select, None);
    // Typing goes to the editor again.
    t.press('x');
    assert_eq!(t.state.input.text(), "x");
}

#[test]
fn an_edited_message_is_sent_as_a_new_branch_with_only_the_path_before_it() {
    let mut t = Test::three_turns();
    t.state.input.set_text("draft");
    t.select("q2");
    t.press('e');
    assert_eq!(t.state.input.text(), "q2");
    assert!(t.state.select.is_none() && t.state.editing.is_some());
    t.state.input.set_text("q2 edited");
    let fx = t.key(KeyCode::Enter, NONE);
    let request = generated(&fx).expect("a generation");
    let sent: Vec<&str> = request
        .messages()
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(sent, ["q1", "a1", "q2 edited"]);
    assert_eq!(t.path(), ["q1", "a1", "q2 edited", ""]);
    let edited = t
        .state
        .conversation
        .entries
        .iter()
        .rev()
        .nth(1)
        .map_or(0, |e| e.id);
    assert_eq!(t.state.conversation.siblings(edited), Some((2, 2)));
    assert!(t.state.editing.is_none());
}

#[test]
fn esc_leaves_an_edit_and_gives_the_draft_back() {
    let mut t = Test::three_turns();
    t.state.input.set_text("draft");
    t.select("q1");
    t.key(KeyCode::Enter, NONE);
    assert_eq!(t.state.input.text(), "q1");
    t.key(KeyCode::Esc, NONE);
    assert_eq!(t.state.input.text(), "draft");
    assert!(t.state.editing.is_none());
    assert_eq!(t.path(), ["q1", "a1", "q2", "a2", "q3", "a3"]);
}

#[test]
fn answers_cannot_be_edited_but_can_be_answered_again_as_a_sibling() {
    let mut t = Test::three_turns();
    t.select("a2");
    t.press('e');
    assert!(t.state.editing.is_none());
    assert!(t
        .state
        .status
        .as_deref()
        .unwrap_or("")
        .contains("answers again"));
    let fx = t.press('r');
    let sent: Vec<&str> = generated(&fx)
        .expect("a generation")
        .messages()
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(sent, ["q1", "a1", "q2"]);
    t.answer_with("a2 again");
    assert_eq!(t.path(), ["q1", "a1", "q2", "a2 again"]);
    // The old answer and the turn after it are its sibling.
    t.select("a2 again");
    t.key(KeyCode::Left, NONE);
    assert_eq!(t.path(), ["q1", "a1", "q2", "a2", "q3", "a3"]);
    assert_eq!(t.selected().as_deref(), Some("a2"));
}

#[test]
fn ctrl_r_keeps_the_previous_answer_as_a_sibling() {
    let mut t = Test::three_turns();
    t.key(KeyCode::Char('r'), KeyModifiers::CONTROL);
    let turn = t.state.phase.turn_id().expect("answering");
    t.finish(turn);
    let new = t
        .state
        .conversation
        .entries
        .last()
        .map(|e| e.id)
        .unwrap_or(0);
    assert_eq!(t.state.conversation.siblings(new), Some((2, 2)));
    assert_eq!(t.state.conversation.message_count(), 7);
}

#[test]
fn siblings_switch_with_left_and_right_and_the_rest_follows() {
    let mut t = Test::three_turns();
    t.select("q2");
    t.press('e');
    t.state.input.set_text("other");
    t.key(KeyCode::Enter, NONE);
    t.answer_with("a-other");
    t.select("other");
    let fx = t.key(KeyCode::Left, NONE);
    assert_eq!(t.path(), ["q1", "a1", "q2", "a2", "q3", "a3"]);
    let s = saved(&fx).expect("the switch is saved");
    assert_eq!(s.messages.len(), 8);
    t.key(KeyCode::Right, NONE);
    assert_eq!(t.path(), ["q1", "a1", "other", "a-other"]);
    // The model reads the path on screen, nothing else.
    t.key(KeyCode::Esc, NONE);
    assert_eq!(
        t.sent_with("next"),
        ["q1", "a1", "other", "a-other", "next"]
    );
}

#[test]
fn delete_asks_first_and_n_keeps_everything() {
    let mut t = Test::three_turns();
    t.select("q2");
    t.press('d');
    assert!(t.state.select.is_some_and(|s| s.confirm_delete));
    t.press('n');
    assert_eq!(t.path(), ["q1", "a1", "q2", "a2", "q3", "a3"]);
    t.press('d');
    let fx = t.press('y');
    assert_eq!(t.path(), ["q1", "a1"]);
    assert_eq!(t.selected().as_deref(), Some("a1"));
    assert_eq!(saved(&fx).expect("saved").messages.len(), 2);
    assert!(t
        .state
        .status
        .as_deref()
        .unwrap_or("")
        .contains("Deleted 4 messages"));
}

#[test]
fn the_whole_conversation_is_not_deleted_from_here() {
    let mut t = Test::three_turns();
    t.select("q1");
    t.press('d');
    t.press('y');
    assert_eq!(t.path().len(), 6);
    assert!(t.state.status.as_deref().unwrap_or("").contains("Ctrl+O"));
}

#[test]
fn a_fork_saves_the_original_and_goes_on_in_a_new_conversation() {
    let mut t = Test::three_turns();
    let original = t
        .state
        .session
        .id
        .clone()
        .expect("saved after the first answer");
    t.select("a2");
    let fx = t.press('f');
    let saves: Vec<_> = fx
        .iter()
        .filter_map(|e| match e {
            Effect::Session(SessionEffect::Save { session, .. }) => Some(session.clone()),
            _ => None,
        })
        .collect();
    let fork = saves.last().expect("the fork is saved");
    assert_ne!(fork.id, original);
    let texts: Vec<&str> = fork.messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(texts, ["q1", "a1", "q2", "a2"]);
    assert_eq!(t.state.session.id.as_deref(), Some(fork.id.as_str()));
    assert_eq!(t.sent_with("q3'"), ["q1", "a1", "q2", "a2", "q3'"]);
}

#[test]
fn nothing_in_the_tree_changes_while_answering() {
    let mut t = Test::three_turns();
    t.ask("q4");
    t.key(KeyCode::Up, KeyModifiers::ALT);
    assert!(t.state.select.is_none());
    assert!(t.state.status.as_deref().unwrap_or("").contains("Esc"));
}

#[test]
fn a_saved_tree_restores_with_its_branches_and_each_answers_settings() {
    let mut t = Test::three_turns();
    t.select("q2");
    t.press('e');
    t.state.input.set_text("q2 edited");
    t.state.settings.sampling.temperature = 0.3;
    t.key(KeyCode::Enter, NONE);
    let fx = t.answer_with("a2 edited");
    let session = saved(&fx).expect("saved");
    assert_eq!(session.messages.len(), 8);
    assert_eq!(session.path().len(), 4);
    let answer = session.path()[3].clone();
    assert_eq!(answer.sampling.as_ref().map(|s| s.temperature), Some(0.3));
    let default = crate::protocol::SamplingParams::default().temperature;
    assert_eq!(
        session.messages[1].sampling.as_ref().map(|s| s.temperature),
        Some(default)
    );

    let bytes = session.to_bytes();
    let parsed = crate::sessions::parse_session(&bytes).expect("reads back");
    let mut resumed = Test::loaded();
    super::super::restore(&mut resumed.state, parsed);
    assert_eq!(resumed.path(), ["q1", "a1", "q2 edited", "a2 edited"]);
    resumed.select("q2 edited");
    resumed.key(KeyCode::Left, NONE);
    assert_eq!(resumed.path(), ["q1", "a1", "q2", "a2", "q3", "a3"]);
    // Saved again unchanged but for the path shown: the same messages.
    resumed.key(KeyCode::Right, NONE);
    let again = super::super::saved::record(&mut resumed.state, &mut Vec::new());
    let texts = |s: &crate::sessions::Session| -> Vec<(String, Role)> {
        s.messages
            .iter()
            .map(|m| (m.content.clone(), m.role))
            .collect()
    };
    assert_eq!(texts(&again), texts(&session));
    assert_eq!(again.path().len(), 4);
}

#[test]
fn an_older_file_resumes_as_one_path_and_saves_as_a_tree() {
    let bytes = include_bytes!("../../../tests/fixtures/session-versions/v2.json");
    let parsed = crate::sessions::parse_session(bytes).expect("reads");
    let mut t = Test::loaded();
    super::super::restore(&mut t.state, parsed.clone());
    let sent = t
        .state
        .conversation
        .messages(&t.state.settings.system_prompt);
    let roles: Vec<Role> = sent.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
    let again = super::super::saved::record(&mut t.state, &mut Vec::new());
    assert_eq!(again.version, crate::sessions::FORMAT_VERSION);
    assert_eq!(again.messages.len(), parsed.messages.len());
    assert!(again.messages.iter().all(|m| m.id.is_some()));
    let reparsed = crate::sessions::parse_session(&again.to_bytes()).expect("valid");
    assert_eq!(reparsed.path().len(), 4);
}
