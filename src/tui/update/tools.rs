//! The tool loop on screen: an answer that called tools hands each call to the user for
//! approval (unless the config or an earlier `a` says otherwise), runs it, adds its result,
//! and when every call has one asks the model again: until it answers in prose or the rounds
//! run out. The MCP servers' news (tools offered, a server failed) arrives here too.

use super::{sessions, turn};
use crate::chat::ToolCall;
use crate::mcp::{unknown_tool, Approval, OfferedTool, ToolEvent, ToolResult, REFUSED};
use crate::tui::keymap::ToolAction;
use crate::tui::msg::Effect;
use crate::tui::state::{CallStep, CurrentCall, NoticeLevel, Phase, State, ToolOutcome, ToolRun};

/// What the model is told when the config forbids the tool.
const FORBIDDEN: &str = "The user's settings do not allow this tool to run.";
/// What the model is told of a call the user stopped.
const STOPPED: &str = "The user stopped this tool call before it finished.";

/// What the servers report.
pub(super) fn event(state: &mut State, event: ToolEvent, fx: &mut Vec<Effect>) {
    match event {
        ToolEvent::ServerReady { server, tools } => {
            let tools_word = if tools == 1 { "tool" } else { "tools" };
            state.conversation.push_notice(
                NoticeLevel::Info,
                format!("MCP server {server} is ready: {tools} {tools_word}"),
            );
        }
        ToolEvent::ServerFailed { server, message } => state.conversation.push_notice(
            NoticeLevel::Error,
            format!("MCP server {server}: {message}"),
        ),
        ToolEvent::ToolsChanged { .. } => {}
        ToolEvent::CallDone { call_id, result } => done(state, &call_id, result, fx),
    }
}

/// The tools the ready servers offer now.
pub(super) fn offered(state: &mut State, offered: Vec<OfferedTool>) {
    state.tools.offered = offered;
}

/// An answer ended with `calls`: the loop begins, or goes on with its next round.
pub(super) fn called(state: &mut State, fx: &mut Vec<Effect>) {
    state.phase = Phase::Tools;
    state.tools.run.get_or_insert_with(ToolRun::default);
    next_call(state, fx);
}

/// Takes the next call without a result: asks, runs, or answers it at once.
fn next_call(state: &mut State, fx: &mut Vec<Effect>) {
    let Some(call) = state.conversation.unanswered_calls().into_iter().next() else {
        return round_done(state, fx);
    };
    match state.tools.approval(&call.name) {
        None => answer_without_running(state, &call, unknown_tool(&call.name), fx),
        Some(Approval::Never) => answer_without_running(state, &call, FORBIDDEN.into(), fx),
        Some(Approval::Always) => run(state, call, fx),
        Some(Approval::Ask) => {
            if let Some(run) = state.tools.run.as_mut() {
                run.current = Some(CurrentCall {
                    call,
                    step: CallStep::Asking,
                });
            }
        }
    }
}

fn run(state: &mut State, call: ToolCall, fx: &mut Vec<Effect>) {
    fx.push(Effect::CallTool {
        call_id: call.id.clone(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
    });
    if let Some(run) = state.tools.run.as_mut() {
        run.current = Some(CurrentCall {
            call,
            step: CallStep::Running { started: state.now },
        });
    }
}

/// A call that is not run gets its result at once, and the loop goes on.
fn answer_without_running(state: &mut State, call: &ToolCall, text: String, fx: &mut Vec<Effect>) {
    let outcome = ToolOutcome::failed(&call.name);
    state.conversation.push_tool_result(&call.id, text, outcome);
    if let Some(run) = state.tools.run.as_mut() {
        run.current = None;
    }
    next_call(state, fx);
}

/// y, a or n on the call waiting for approval; the results' fold.
pub(super) fn approve(state: &mut State, action: ToolAction, fx: &mut Vec<Effect>) {
    if action == ToolAction::ToggleResults {
        state.show_tool_results = !state.show_tool_results;
        return;
    }
    let Some(call) = state.tools.asking().cloned() else {
        return;
    };
    match action {
        ToolAction::Once => run(state, call, fx),
        ToolAction::Always => {
            state.tools.always.insert(call.name.clone());
            run(state, call, fx);
        }
        ToolAction::Refuse => answer_without_running(state, &call, REFUSED.into(), fx),
        ToolAction::ToggleResults => {}
    }
}

/// A call's result came back.
fn done(state: &mut State, call_id: &str, result: ToolResult, fx: &mut Vec<Effect>) {
    let running = state
        .tools
        .running()
        .filter(|(call, _)| call.id == call_id)
        .map(|(call, _)| call.clone());
    // A late result of a call that was stopped (its "stopped" result is already there).
    let Some(call) = running else {
        return;
    };
    let elapsed_s = result.elapsed.as_secs_f64();
    state.stats.tool_s = Some(elapsed_s);
    let outcome = ToolOutcome {
        name: call.name.clone(),
        is_error: result.is_error,
        note: result.note,
        elapsed_s: Some(elapsed_s),
    };
    state
        .conversation
        .push_tool_result(&call.id, result.text, outcome);
    if let Some(run) = state.tools.run.as_mut() {
        run.current = None;
    }
    sessions::autosave(state, fx);
    next_call(state, fx);
}

/// Every call of the round has its result: the model reads them and answers, with tools
/// again unless the rounds ran out.
fn round_done(state: &mut State, fx: &mut Vec<Effect>) {
    let rounds = match state.tools.run.as_mut() {
        Some(run) => {
            run.rounds += 1;
            run.current = None;
            run.rounds
        }
        None => 1,
    };
    state.phase = Phase::Idle;
    let with_tools = rounds < state.tools.max_rounds;
    if !with_tools {
        state.conversation.push_notice(
            NoticeLevel::Info,
            format!(
                "{rounds} rounds of tool calls: the model answers without tools now (the \
                 limit is [mcp] max_rounds in the config)"
            ),
        );
    }
    turn::answer_tool_results(state, with_tools, fx);
}

/// Esc during the loop: the running call is cancelled, every call without a result is told
/// it was stopped, and the model is not asked again.
pub(super) fn stop(state: &mut State, fx: &mut Vec<Effect>) {
    if let Some((call, _)) = state.tools.running() {
        fx.push(Effect::CancelTool(call.id.clone()));
    }
    for call in state.conversation.unanswered_calls() {
        let outcome = ToolOutcome::failed(&call.name);
        state
            .conversation
            .push_tool_result(&call.id, STOPPED, outcome);
    }
    end(state);
}

/// The loop is over (the model answered in prose, or the user stopped it).
pub(super) fn end(state: &mut State) {
    state.tools.run = None;
    if state.phase == Phase::Tools {
        state.phase = Phase::Idle;
    }
}
