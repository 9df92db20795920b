//! A turn from the user's side: sending a question, regenerating, stopping, and loading a
//! model (which stops any turn first). Each starts or ends `State::phase`.

use super::{attach, commands, sessions, tools};
use crate::engine::EngineCommand;
use crate::protocol::{GenerateRequest, LoadRequest, Prompt, Speculation, ToolChoice, ToolSet};
use crate::tui::msg::Effect;
use crate::tui::state::{AnswerStatus, Loading, ModelEntry, Phase, State, TurnSettings};

pub(super) fn submit(state: &mut State, fx: &mut Vec<Effect>) {
    if state.input.text().trim().is_empty() {
        return;
    }
    // A command runs whatever the model is doing; a message waits for it.
    let Some(message) = commands::intercept(state, fx) else {
        return;
    };
    if state.generating() {
        state.status = Some("Still answering: Esc stops it".into());
        return;
    }
    if !state.engine_alive {
        state.status = Some("The engine stopped; restart taper".into());
        return;
    }
    if state.model.answering_name().is_none() {
        state.status = Some("No model loaded: Ctrl+P picks one".into());
        return;
    }
    // Files still being read: the message goes when they are in.
    attach::sync(state, true, fx);
    if state.attachments.reading() {
        state.attachments.send_when_read = true;
        state.status = Some("Reading the attached files…".into());
        return;
    }
    let text = match attach::expand(state, &message) {
        Ok(text) => text,
        Err(why) => {
            state.status = Some(why);
            return;
        }
    };
    state.input.take();
    state.attachments.clear();
    match state.editing.take() {
        // An earlier message edited: a new branch from there, the old one kept.
        Some(editing) if state.conversation.edit_user(editing.id, text.clone()) => {
            state.select = None;
        }
        _ => state.conversation.push_user(text),
    }
    generate(state, fx);
}

/// Starts a turn that answers the conversation as it stands (ending with a question), with
/// the servers' tools as the user's tool choice says.
fn generate(state: &mut State, fx: &mut Vec<Effect>) {
    state.tools.run = None;
    // The user's choice holds for a question's first round; later rounds are `auto`, so the
    // loop can end in prose. `none` offers no tools at all.
    let tools = match &state.settings.tool_choice {
        ToolChoice::None => None,
        choice => offered_tools(state, choice.clone()),
    };
    generate_with(state, tools, fx);
}

/// After a round of calls: the model reads their results and answers, free to call again
/// (`with_tools`) or not.
pub(super) fn answer_tool_results(state: &mut State, with_tools: bool, fx: &mut Vec<Effect>) {
    // Out of rounds, the tools are still described (the history holds their calls) but no
    // call is allowed: the answer is prose.
    let choice = match with_tools {
        true => ToolChoice::Auto,
        false => ToolChoice::None,
    };
    let tools = offered_tools(state, choice);
    generate_with(state, tools, fx);
}

/// The tools to offer with `choice`: none when no server offers any.
fn offered_tools(state: &State, choice: ToolChoice) -> Option<ToolSet> {
    if state.tools.offered.is_empty() {
        return None;
    }
    Some(crate::mcp::tool_set(&state.tools.offered, choice))
}

fn generate_with(state: &mut State, tools: Option<ToolSet>, fx: &mut Vec<Effect>) {
    let Some(model) = state.model.answering_name().map(str::to_string) else {
        state.status = Some("No model loaded: Ctrl+P picks one".into());
        return;
    };
    let messages = state.conversation.messages(&state.settings.system_prompt);
    let turn_id = state.next_turn_id();
    state.conversation.push_answer(model, turn_id);
    if let Some((_, answer)) = state.conversation.answer_mut(turn_id) {
        answer.settings = Some(Box::new(TurnSettings {
            system_prompt: state.settings.system_prompt.clone(),
            sampling: state.settings.sampling.clone(),
            max_tokens: state.settings.max_tokens,
        }));
    }
    let undrafted = state.settings.speculation == Speculation::Draft
        && state
            .model
            .loaded
            .as_ref()
            .is_some_and(|m| m.remote.is_none() && m.draft_model.is_none());
    if undrafted {
        // Said where it is read, rather than a silently slower answer.
        state.status = Some(
            "This model has no draft model: pair one under [draft_models] in the config, or \
             /set speculative ngram"
                .into(),
        );
    }
    state.phase = Phase::Answering { turn_id };
    state.stats.start_turn(state.now);
    state.scroll.follow = true;
    fx.push(Effect::Send(EngineCommand::Generate(GenerateRequest {
        tools,
        speculation: state.settings.speculation,
        ..GenerateRequest::chat(
            turn_id,
            messages,
            false,
            state.settings.sampling.clone(),
            state.settings.max_tokens,
        )
    })));
}

pub(super) fn stop(state: &mut State, fx: &mut Vec<Effect>) {
    if state.phase == Phase::Tools {
        tools::stop(state, fx);
        sessions::autosave(state, fx);
        state.status = Some("Stopped the tool loop".into());
    } else if state.generating() {
        cancel_active(state, fx);
        sessions::autosave(state, fx);
        state.status = Some("Stopped".into());
    } else if state.model.download.is_some() {
        fx.push(Effect::CancelDownload);
        state.status = Some("Stopping the download…".into());
    }
}

/// Cancels the running turn, if any: its answer keeps its text and is marked stopped. Its
/// late events are ignored (their turn is no longer the active one), except the final usage.
pub(super) fn cancel_active(state: &mut State, fx: &mut Vec<Effect>) {
    if state.phase == Phase::Tools {
        tools::stop(state, fx);
    }
    state.tools.run = None;
    if let Phase::Answering { turn_id } = state.phase {
        fx.push(Effect::Cancel(turn_id));
        if let Some((_, answer)) = state.conversation.answer_mut(turn_id) {
            answer.status = AnswerStatus::Stopped;
        }
        end_turn(state);
    }
}

/// The running turn is over without the engine's figures (stopped, failed, abandoned).
pub(super) fn end_turn(state: &mut State) {
    state.phase = Phase::Idle;
    state.stats.abandon();
}

/// Why no new answer can start now (one is being written, or no model is loaded).
fn cannot_answer(state: &State) -> Option<&'static str> {
    if state.generating() {
        Some("Still answering: Esc stops it")
    } else if state.model.answering_name().is_none() {
        Some("No model loaded: Ctrl+P picks one")
    } else {
        None
    }
}

pub(super) fn regenerate(state: &mut State, fx: &mut Vec<Effect>) {
    if let Some(why) = cannot_answer(state) {
        state.status = Some(why.into());
    } else if let Some(question) = state.conversation.last_question() {
        regenerate_answer_of(state, question, fx);
    } else {
        state.status = Some("Nothing to regenerate".into());
    }
}

/// Answers the question at index `question` afresh: its answer (and all that followed) is
/// kept as a sibling of the new one.
pub(super) fn regenerate_answer_of(state: &mut State, question: usize, fx: &mut Vec<Effect>) {
    let fork = state.conversation.stash_answer_of(question);
    generate(state, fx);
    if let (Some(fork), Phase::Answering { .. }) = (fork, state.phase) {
        state.conversation.join_fork(fork);
    }
}

/// The model goes on with the last answer on the path, cut short by the token limit, a full
/// context or Esc: its text ends the prompt (with the ids the model wrote it with, so the
/// cache holds all of it), and the new text is added to it.
pub(super) fn continue_answer(state: &mut State, fx: &mut Vec<Effect>) {
    if let Some(why) = cannot_answer(state) {
        state.status = Some(why.into());
        return;
    }
    if state
        .model
        .loaded
        .as_ref()
        .is_some_and(|m| m.remote.is_some())
    {
        state.status =
            Some("A remote model cannot go on with an answer: Ctrl+R answers again".into());
        return;
    }
    let Some(old_turn) = state.conversation.continuable_answer() else {
        state.status = Some("Nothing to continue: the last answer was not cut short".into());
        return;
    };
    // The model answering now goes on, and the answer is labelled with it.
    let model = state.model.answering_name().unwrap_or_default().to_string();
    let messages = state.conversation.messages(&state.settings.system_prompt);
    let turn_id = state.next_turn_id();
    if let Some((_, answer)) = state.conversation.answer_mut(old_turn) {
        answer.turn_id = turn_id;
        answer.status = AnswerStatus::Streaming;
        answer.model = model;
    }
    state.phase = Phase::Answering { turn_id };
    state.stats.start_turn(state.now);
    state.scroll.follow = true;
    fx.push(Effect::Send(EngineCommand::Generate(GenerateRequest {
        prompt: Prompt::Continue(messages),
        speculation: state.settings.speculation,
        ..GenerateRequest::chat(
            turn_id,
            Vec::new(),
            false,
            state.settings.sampling.clone(),
            state.settings.max_tokens,
        )
    })));
}

/// Loads `entry`, stopping any generation first; the conversation stays.
pub(super) fn load(state: &mut State, entry: ModelEntry, fx: &mut Vec<Effect>) {
    if !state.engine_alive {
        state.status = Some("The engine stopped; restart taper".into());
        return;
    }
    cancel_active(state, fx);
    if let Some(target) = &entry.remote {
        fx.push(Effect::Send(EngineCommand::Connect(target.clone())));
        state.model.loading = Some(Loading {
            entry,
            started: state.now,
        });
        return;
    }
    fx.push(Effect::Send(EngineCommand::Load(LoadRequest {
        model_path: entry.path.clone(),
        tokenizer_json: entry.tokenizer.clone(),
        context_size: state.context_size,
        cache_type: state.cache_type,
        chat_template: entry.chat_template.clone(),
        keep_loaded: state.keep_loaded,
        draft_model: entry.draft.clone(),
    })));
    state.model.loading = Some(Loading {
        entry,
        started: state.now,
    });
}
