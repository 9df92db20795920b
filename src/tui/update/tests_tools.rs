//! The tool loop as `update` runs it: approval keys, calls and results, the rounds, stopping,
//! and what is saved, each checked with the effects it asks for.

use super::Test;
use crate::chat::{Role, ToolCall};
use crate::engine::EngineCommand;
use crate::mcp::{Approval, OfferedTool, ToolEvent, ToolResult};
use crate::protocol::{EngineEvent, GenerateRequest, StopReason, Tool, ToolChoice, Usage};
use crate::tui::keymap;
use crate::tui::keys::Context;
use crate::tui::msg::{Effect, Msg, SessionEffect};
use crate::tui::state::{EntryBody, Phase};
use crossterm::event::{KeyCode, KeyModifiers};
use std::time::Duration;

fn offered(name: &str, approval: Approval) -> OfferedTool {
    OfferedTool {
        name: name.into(),
        server: "calc".into(),
        tool: name.into(),
        spec: Tool {
            name: name.into(),
            description: Some("adds".into()),
            parameters: serde_json::json!({"type": "object"}),
        },
        approval,
    }
}

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: r#"{"a": 2, "b": 2}"#.into(),
    }
}

fn generated(fx: &[Effect]) -> Option<&GenerateRequest> {
    fx.iter().find_map(|e| match e {
        Effect::Send(EngineCommand::Generate(g)) => Some(g),
        _ => None,
    })
}

fn tool_call_effect(fx: &[Effect]) -> Option<String> {
    fx.iter().find_map(|e| match e {
        Effect::CallTool { call_id, .. } => Some(call_id.clone()),
        _ => None,
    })
}

/// The session the last save effect in `fx` writes.
fn last_saved(fx: &[Effect]) -> Box<crate::sessions::Session> {
    fx.iter()
        .rev()
        .find_map(|e| match e {
            Effect::Session(SessionEffect::Save { session, .. }) => Some(session.clone()),
            _ => None,
        })
        .expect("saved after the result")
}

impl Test {
    /// A loaded model and the servers offering `tools`.
    fn with_tools(tools: Vec<OfferedTool>) -> Self {
        let mut t = Test::loaded();
        t.send(Msg::ToolsOffered(tools));
        t
    }

    /// The answer of `turn_id` ends calling `calls`.
    fn calls(&mut self, turn_id: u64, calls: Vec<ToolCall>) -> Vec<Effect> {
        let usage = Usage {
            generated_tokens: 20,
            stop: Some(StopReason::EndOfTurn),
            ..Default::default()
        };
        self.send(Msg::Engine(EngineEvent::Finished {
            turn_id,
            usage,
            tool_calls: calls,
        }))
    }

    fn result(&mut self, call_id: &str, text: &str) -> Vec<Effect> {
        self.send(Msg::Tool(ToolEvent::CallDone {
            call_id: call_id.into(),
            result: ToolResult {
                text: text.into(),
                is_error: false,
                note: None,
                elapsed: Duration::from_millis(300),
            },
        }))
    }

    fn typed(&mut self, c: char) -> Vec<Effect> {
        self.key(KeyCode::Char(c), KeyModifiers::NONE)
    }

    fn tool_results(&self) -> Vec<(String, bool)> {
        self.state
            .conversation
            .entries
            .iter()
            .filter_map(|e| match &e.body {
                EntryBody::ToolResult { message, outcome } => {
                    Some((message.content.clone(), outcome.is_error))
                }
                _ => None,
            })
            .collect()
    }
}

#[test]
fn a_call_waits_for_y_runs_and_its_result_goes_back_to_the_model() {
    let mut t = Test::with_tools(vec![offered("add", Approval::Ask)]);
    t.state.settings.tool_choice = ToolChoice::Required;
    t.state.input.set_text("2+2?");
    let fx = t.key(KeyCode::Enter, KeyModifiers::NONE);
    let request = generated(&fx).expect("a request");
    let tools = request.tools.as_ref().expect("tools offered");
    assert_eq!(tools.choice, ToolChoice::Required);
    assert_eq!(tools.tools[0].name, "add");
    let turn = request.turn_id;

    let fx = t.calls(turn, vec![call("c1", "add")]);
    assert!(
        tool_call_effect(&fx).is_none(),
        "nothing runs before approval"
    );
    assert_eq!(t.state.phase, Phase::Tools);
    assert_eq!(keymap::screen(&t.state).0, Context::Approval);
    // Typing goes nowhere while the call waits.
    let fx = t.typed('x');
    assert!(tool_call_effect(&fx).is_none());
    assert_eq!(t.state.input.text(), "");

    let fx = t.typed('y');
    assert_eq!(tool_call_effect(&fx).as_deref(), Some("c1"));
    assert!(t.state.tools.running().is_some());

    let fx = t.result("c1", "4");
    assert_eq!(t.tool_results(), [("4".to_string(), false)]);
    let next = generated(&fx).expect("the model reads the result");
    // Later rounds are free to answer in prose.
    assert_eq!(
        next.tools.as_ref().map(|t| &t.choice),
        Some(&ToolChoice::Auto)
    );
    let roles: Vec<Role> = next.messages().iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool]);
    assert_eq!(next.messages()[2].tool_call_id.as_deref(), Some("c1"));
    assert_eq!(t.state.stats.tool_s, Some(0.3));

    t.finish(next.turn_id);
    assert_eq!(t.state.phase, Phase::Idle);
    assert!(t.state.tools.run.is_none());
}

#[test]
fn n_refuses_and_the_model_is_told() {
    let mut t = Test::with_tools(vec![offered("add", Approval::Ask)]);
    let turn = t.ask("2+2?");
    t.calls(turn, vec![call("c1", "add")]);
    let fx = t.typed('n');
    assert!(tool_call_effect(&fx).is_none());
    assert_eq!(t.tool_results(), [(crate::mcp::REFUSED.to_string(), true)]);
    assert!(
        generated(&fx).is_some(),
        "the model answers knowing it was refused"
    );
}

#[test]
fn a_always_approves_the_tool_for_the_rest_of_the_conversation() {
    let mut t = Test::with_tools(vec![offered("add", Approval::Ask)]);
    let turn = t.ask("2+2?");
    t.calls(turn, vec![call("c1", "add"), call("c2", "add")]);
    let fx = t.typed('a');
    assert_eq!(tool_call_effect(&fx).as_deref(), Some("c1"));
    // The second call of the round runs without asking.
    let fx = t.result("c1", "4");
    assert_eq!(tool_call_effect(&fx).as_deref(), Some("c2"));
    let fx = t.result("c2", "4");
    let next = generated(&fx).expect("both results read").turn_id;
    let fx = t.calls(next, vec![call("c3", "add")]);
    assert_eq!(tool_call_effect(&fx).as_deref(), Some("c3"));
}

#[test]
fn the_config_can_run_or_refuse_a_tool_without_asking_and_unknown_tools_fail() {
    let mut t = Test::with_tools(vec![
        offered("add", Approval::Always),
        offered("rm", Approval::Never),
    ]);
    let turn = t.ask("go");
    let fx = t.calls(
        turn,
        vec![call("c1", "rm"), call("c2", "nope"), call("c3", "add")],
    );
    assert_eq!(tool_call_effect(&fx).as_deref(), Some("c3"));
    let results = t.tool_results();
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|(_, failed)| *failed));
    assert!(results[1].0.contains("nope"), "{results:?}");
}

#[test]
fn esc_cancels_the_running_call_and_ends_the_loop() {
    let mut t = Test::with_tools(vec![offered("add", Approval::Always)]);
    let turn = t.ask("2+2?");
    t.calls(turn, vec![call("c1", "add"), call("c2", "add")]);
    let fx = t.key(KeyCode::Esc, KeyModifiers::NONE);
    assert!(fx
        .iter()
        .any(|e| matches!(e, Effect::CancelTool(id) if id == "c1")));
    assert!(generated(&fx).is_none(), "the model is not asked again");
    assert_eq!(t.state.phase, Phase::Idle);
    // Every call has a result, so the history stays well formed.
    assert_eq!(t.tool_results().len(), 2);
    // The cancelled call's late result changes nothing.
    let fx = t.result("c1", "4");
    assert!(fx.is_empty());
    assert_eq!(t.tool_results().len(), 2);
}

#[test]
fn after_the_last_round_the_model_answers_without_tools() {
    let mut t = Test::with_tools(vec![offered("add", Approval::Always)]);
    t.state.tools.max_rounds = 2;
    let mut turn = t.ask("2+2?");
    for round in 0..2 {
        let id = format!("c{round}");
        t.calls(turn, vec![call(&id, "add")]);
        let fx = t.result(&id, "4");
        let next = generated(&fx).expect("asked again");
        let choice = next.tools.as_ref().map(|t| t.choice.clone());
        let expected = if round == 0 {
            ToolChoice::Auto
        } else {
            ToolChoice::None
        };
        assert_eq!(choice, Some(expected), "round {round}");
        turn = next.turn_id;
    }
}

#[test]
fn the_saved_session_holds_the_calls_and_results() {
    let mut t = Test::with_tools(vec![offered("add", Approval::Always)]);
    let turn = t.ask("2+2?");
    t.calls(turn, vec![call("c1", "add")]);
    let fx = t.result("c1", "4");
    let saved = last_saved(&fx);
    let m = &saved.messages;
    assert_eq!(m[1].tool_calls[0].id, "c1");
    assert_eq!(m[2].role, Role::Tool);
    assert_eq!(m[2].tool_name.as_deref(), Some("add"));
    assert_eq!(m[2].content, "4");
}

#[test]
fn without_servers_no_tools_are_sent() {
    let mut t = Test::loaded();
    t.state.input.set_text("hi");
    let fx = t.key(KeyCode::Enter, KeyModifiers::NONE);
    assert!(generated(&fx).is_some_and(|g| g.tools.is_none()));
}

#[test]
fn a_resumed_tool_loop_sends_the_same_history() {
    let mut t = Test::with_tools(vec![offered("add", Approval::Always)]);
    let turn = t.ask("2+2?");
    t.calls(turn, vec![call("c1", "add")]);
    let fx = t.result("c1", "4");
    let saved = last_saved(&fx);
    let mut resumed = Test::loaded();
    super::super::restore(&mut resumed.state, *saved);
    assert_eq!(
        resumed.state.conversation.messages(""),
        t.state.conversation.messages("")
    );
    assert!(resumed.state.conversation.unanswered_calls().is_empty());
}
