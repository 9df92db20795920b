//! What the engine worker reports: a model loaded or failed to, prompt progress, tokens, the
//! end of a turn; and the worker itself gone. Events of a turn that is no longer running are
//! ignored, except its final figures.

use super::{sessions, tools, turn};
use crate::chat::ToolCall;
use crate::protocol::{EngineEvent, ModelInfo};
use crate::protocol::{StopReason, Usage};
use crate::tui::msg::Effect;
use crate::tui::state::{AnswerStatus, NoticeLevel, Phase, State};

pub(super) fn event(state: &mut State, event: EngineEvent, fx: &mut Vec<Effect>) {
    let active = state.phase.turn_id();
    match event {
        EngineEvent::Loaded { info, notices } => loaded(state, info, notices),
        EngineEvent::PromptProgress {
            turn_id,
            done,
            total,
            cached,
        } if Some(turn_id) == active => state.stats.prompt_progress(done, total, cached, state.now),
        EngineEvent::FirstToken {
            turn_id,
            ttft_s,
            prefill_s,
        } if Some(turn_id) == active => state.stats.first_token(ttft_s, prefill_s),
        EngineEvent::Token { turn_id, text } if Some(turn_id) == active => {
            if let Some((message, _)) = state.conversation.answer_mut(turn_id) {
                message.content.push_str(&text);
            }
            state.stats.token(state.now);
        }
        EngineEvent::Finished {
            turn_id,
            usage,
            tool_calls,
        } => {
            let calls = finished(state, turn_id, usage, tool_calls);
            // A finished (or stopped) answer is saved as soon as it ends.
            sessions::autosave(state, fx);
            match calls {
                true => tools::called(state, fx),
                false if Some(turn_id) == active => tools::end(state),
                false => {}
            }
        }
        EngineEvent::Failed {
            turn_id: Some(turn_id),
            message,
        } => {
            if let Some((_, answer)) = state.conversation.answer_mut(turn_id) {
                answer.status = AnswerStatus::Failed;
                answer.error = Some(message);
            }
            if Some(turn_id) == active {
                turn::end_turn(state);
            }
            sessions::autosave(state, fx);
        }
        EngineEvent::Failed {
            turn_id: None,
            message,
        } => {
            // The worker drops the old model before reading a new one: nothing is loaded now.
            let name = state.model.loading.take().map(|l| l.entry.name);
            state.model.loaded = None;
            state.conversation.push_notice(
                NoticeLevel::Error,
                match name {
                    Some(name) => format!("Could not load {name}: {message}"),
                    None => format!("Could not load the model: {message}"),
                },
            );
        }
        // Progress and tokens of a turn that is no longer active.
        EngineEvent::PromptProgress { .. }
        | EngineEvent::FirstToken { .. }
        | EngineEvent::Token { .. } => {}
    }
}

fn loaded(state: &mut State, info: ModelInfo, notices: Vec<String>) {
    // Loads run in order; only the last one requested ends the loading state.
    if state.model.loading.as_ref().map(|l| &l.entry.path) == Some(&info.path) {
        state.model.loading = None;
    }
    // A switch when another model answered before; a resumed conversation's first
    // model, or a question typed while the first model loaded, is just a load.
    let switched = state.model.loaded.is_some() && state.conversation.has_messages();
    let how = match (switched, info.kept_loaded) {
        (true, true) => "Switched back to",
        (true, false) => "Switched to",
        (false, _) => "Loaded",
    };
    let when = match info.kept_loaded {
        true => ", kept loaded".to_string(),
        false => format!(" in {:.1} s", info.load_s),
    };
    state.conversation.push_notice(
        NoticeLevel::Info,
        format!(
            "{how} {} ({}, {}){when}",
            info.name, info.architecture, info.quantization,
        ),
    );
    for notice in notices {
        state.conversation.push_notice(NoticeLevel::Info, notice);
    }
    // A new model starts with an empty cache: the last turn's figures, and the old model's
    // decode rates, no longer apply.
    state.stats.last = None;
    state.stats.rates.clear();
    state.model.loaded = Some(info);
    // The files in the message are counted in the new model's tokens.
    super::attach::recount(state);
}

/// The answer of `turn_id` ended; true when it is the running turn's and called tools.
fn finished(state: &mut State, turn_id: u64, usage: Usage, calls: Vec<ToolCall>) -> bool {
    let stopped = usage.stop == Some(StopReason::Cancelled);
    let running = state.phase.turn_id() == Some(turn_id);
    let calling = running && !stopped && !calls.is_empty();
    if let Some((message, answer)) = state.conversation.answer_mut(turn_id) {
        if calling {
            message.tool_calls = calls;
        }
        if answer.status == AnswerStatus::Streaming {
            answer.status = if stopped {
                AnswerStatus::Stopped
            } else {
                AnswerStatus::Done
            };
        }
        answer.usage = Some(usage.clone());
    }
    // A stopped turn's figures still describe the cache, unless another turn runs.
    match state.phase {
        Phase::Answering { turn_id: running } if running != turn_id => {}
        _ => {
            state.phase = Phase::Idle;
            state.stats.finish(usage);
        }
    }
    calling
}

/// The engine thread is gone: the running turn fails, and nothing more can be asked.
pub(super) fn stopped(state: &mut State) {
    if !state.engine_alive {
        return;
    }
    state.engine_alive = false;
    if let Phase::Answering { turn_id } = state.phase {
        if let Some((_, answer)) = state.conversation.answer_mut(turn_id) {
            answer.status = AnswerStatus::Failed;
            answer.error = Some("the engine stopped".to_string());
        }
        turn::end_turn(state);
    }
    state.model.loading = None;
    state.conversation.push_notice(
        NoticeLevel::Error,
        "The engine stopped; restart taper to go on.",
    );
}
