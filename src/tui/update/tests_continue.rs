//! Going on with an answer cut short (Ctrl+G, `/continue`): the engine is asked to continue
//! the path's last answer, its text grows in place, and what cannot go on says why.

use super::tree::generated;
use super::Test;
use crate::chat::Role;
use crate::protocol::{EngineEvent, Prompt, StopReason, Usage};
use crate::tui::msg::Msg;
use crate::tui::state::AnswerStatus;
use crossterm::event::{KeyCode, KeyModifiers};

impl Test {
    /// Asks `text`; the answer `answer` ends as `stop` says.
    fn answered(&mut self, text: &str, answer: &str, stop: StopReason) -> u64 {
        let turn_id = self.ask(text);
        self.send(Msg::Engine(EngineEvent::Token {
            turn_id,
            text: answer.into(),
        }));
        let usage = Usage {
            generated_tokens: 8,
            stop: Some(stop),
            ..Default::default()
        };
        self.send(Msg::Engine(EngineEvent::Finished {
            turn_id,
            usage,
            tool_calls: Vec::new(),
        }));
        turn_id
    }

    fn ctrl_g(&mut self) -> Vec<crate::tui::msg::Effect> {
        self.key(KeyCode::Char('g'), KeyModifiers::CONTROL)
    }
}

#[test]
fn ctrl_g_continues_an_answer_cut_at_the_limit_in_place() {
    let mut t = Test::loaded();
    t.answered("Tell me a story.", "Once upon a", StopReason::MaxTokens);
    let fx = t.ctrl_g();
    let request = generated(&fx).expect("a continuation");
    let Prompt::Continue(messages) = &request.prompt else {
        panic!("{:?}", request.prompt);
    };
    let last = messages.last().expect("the answer");
    assert_eq!(
        (last.role, last.content.as_str()),
        (Role::Assistant, "Once upon a")
    );
    let turn_id = request.turn_id;
    t.send(Msg::Engine(EngineEvent::Token {
        turn_id,
        text: " time.".into(),
    }));
    t.finish(turn_id);
    assert_eq!(t.path(), ["Tell me a story.", "Once upon a time."]);
    let (_, answer) = t
        .state
        .conversation
        .answer_mut(turn_id)
        .expect("the answer");
    assert_eq!(answer.status, AnswerStatus::Done);
}

#[test]
fn an_answer_stopped_with_esc_continues_with_the_command_too() {
    let mut t = Test::loaded();
    let turn_id = t.ask("Count to ten.");
    t.send(Msg::Engine(EngineEvent::Token {
        turn_id,
        text: "1 2 3".into(),
    }));
    t.key(KeyCode::Esc, KeyModifiers::NONE);
    t.state.input.set_text("/continue");
    let fx = t.key(KeyCode::Enter, KeyModifiers::NONE);
    let request = generated(&fx).expect("a continuation");
    assert!(matches!(request.prompt, Prompt::Continue(_)));
}

#[test]
fn a_finished_answer_or_none_has_nothing_to_continue() {
    let mut t = Test::loaded();
    assert!(generated(&t.ctrl_g()).is_none());
    t.answered("Hi", "Hello!", StopReason::EndOfTurn);
    assert!(generated(&t.ctrl_g()).is_none());
    let said = t.state.status.clone().unwrap_or_default();
    assert!(said.starts_with("Nothing to continue"), "{said}");
}

#[test]
fn a_remote_model_says_it_cannot_go_on() {
    let mut t = Test::loaded();
    t.answered("Tell me a story.", "Once upon a", StopReason::MaxTokens);
    if let Some(info) = t.state.model.loaded.as_mut() {
        info.remote = Some("http://127.0.0.1:9/v1".into());
    }
    assert!(generated(&t.ctrl_g()).is_none());
    let said = t.state.status.clone().unwrap_or_default();
    assert!(said.contains("remote model cannot go on"), "{said}");
}
