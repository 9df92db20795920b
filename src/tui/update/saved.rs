//! The conversation tree and its saved record, both ways: `record` writes every message of
//! every branch with its id and parent (and each answer's own settings); `restore` rebuilds
//! the path and the stashed branches from a file of any version.

use super::sessions::want_tag;
use crate::chat::{Message, Role};
use crate::sessions::{time, SavedMessage, SavedSampling, SavedStatus, Session};
use crate::tui::msg::Effect;
use crate::tui::state::branches::{is_node, Fork, Forks, ROOT};
use crate::tui::state::{
    Answer, AnswerStatus, Entry, EntryBody, NoticeLevel, State, ToolOutcome, TurnSettings,
};
use std::collections::HashMap;

/// The conversation as a record to save. Its first save gives it an id: the time and the tag
/// the app drew ahead (a new one is asked for at once).
pub(super) fn record(state: &mut State, fx: &mut Vec<Effect>) -> Session {
    let wall = state.session.wall_s(state.now);
    if state.session.id.is_none() {
        let tag = match state.session.next_tag.take() {
            Some(tag) => tag,
            // No tag drawn yet (the app draws one at start, so only a caller that never
            // carries out effects gets here): the sub-second clock is as good a tag.
            None => state
                .now
                .saturating_duration_since(state.session.clock.0)
                .subsec_micros() as u16,
        };
        state.session.id = Some(format!("{}-{tag:04x}", time::compact_utc(wall)));
        want_tag(state, fx);
    }
    let id = state.session.id.clone().unwrap_or_default();
    let created = *state.session.created_at.get_or_insert(wall);
    let sampling = SavedSampling::new(&state.settings.sampling, state.settings.max_tokens);
    let system_prompt = state.settings.system_prompt.clone();
    let mut session = Session::new(id, created, &system_prompt, sampling);
    session.title = state.session.title.clone();
    session.updated_at = wall;

    // Every message with the one it follows: the path, then each stashed branch from its
    // fork. Ids grow as messages are made, and a message is made after the one it follows,
    // so sorting by id puts every parent before its children, as the format asks.
    let conversation = &state.conversation;
    let mut nodes: Vec<(u64, u64, &Entry)> = Vec::new();
    chain(&conversation.entries, ROOT, &mut nodes);
    for (&parent, fork) in conversation.forks() {
        for branch in fork.stashed.values() {
            chain(branch, parent, &mut nodes);
        }
    }
    nodes.sort_by_key(|(id, _, _)| *id);
    for (id, parent, entry) in nodes {
        let at = *state.session.times.entry(id).or_insert(wall);
        if let Some(mut saved) = saved_message(entry, at, &system_prompt) {
            saved.id = Some(id);
            saved.parent = (parent != ROOT).then_some(parent);
            session.messages.push(saved);
        }
    }
    session.current = conversation
        .entries
        .iter()
        .rev()
        .find(|e| is_node(e))
        .map(|e| e.id);
    session
}

/// Adds a branch's messages to `nodes`, each with the message before it (`parent` for the
/// first).
fn chain<'a>(entries: &'a [Entry], parent: u64, nodes: &mut Vec<(u64, u64, &'a Entry)>) {
    let mut parent = parent;
    for entry in entries.iter().filter(|e| is_node(e)) {
        nodes.push((entry.id, parent, entry));
        parent = entry.id;
    }
}

/// One entry as saved; notices are not.
fn saved_message(entry: &Entry, at: u64, system_prompt: &str) -> Option<SavedMessage> {
    let (message, answer) = match &entry.body {
        EntryBody::Message { message, answer } => (message, answer),
        EntryBody::ToolResult { message, outcome } => {
            return Some(SavedMessage {
                tool_call_id: message.tool_call_id.clone(),
                tool_name: Some(outcome.name.clone()),
                is_error: outcome.is_error,
                note: outcome.note.clone(),
                ..SavedMessage::plain(message.role, message.content.clone(), at)
            });
        }
        EntryBody::Notice { .. } => return None,
    };
    let mut saved = SavedMessage::plain(message.role, message.content.clone(), at);
    saved.tool_calls = message.tool_calls.clone();
    if let Some(a) = answer {
        saved.model = Some(a.model.clone());
        saved.status = Some(match a.status {
            AnswerStatus::Done => SavedStatus::Done,
            // Saved while still streaming (quitting mid-answer): it ends here.
            AnswerStatus::Streaming | AnswerStatus::Stopped => SavedStatus::Stopped,
            AnswerStatus::Failed => SavedStatus::Failed,
        });
        saved.error = a.error.clone();
        saved.usage = a.usage.as_ref().map(Into::into);
        if let Some(settings) = &a.settings {
            saved.sampling = Some(SavedSampling::new(&settings.sampling, settings.max_tokens));
            saved.system_prompt =
                (settings.system_prompt != system_prompt).then(|| settings.system_prompt.clone());
        }
    }
    Some(saved)
}

/// Replaces the conversation with a saved one (its whole tree); later saves go to the same
/// id.
pub fn restore(state: &mut State, session: Session) {
    state.conversation.clear();
    state.session.reset();
    state.stats.last = None;
    state.scroll = Default::default();
    state.code_cursor = None;
    state.select = None;
    state.editing = None;

    // A parsed session's tree is valid; a bad one (only from a caller that skipped parsing)
    // reads as one path.
    let n = session.messages.len();
    let (parents, current) = session
        .tree()
        .unwrap_or_else(|_| ((0..n).map(|i| i.checked_sub(1)).collect(), n.checked_sub(1)));
    // The file's own ids where it has them (so a resumed conversation saved again unchanged
    // is the same file), else the messages' places; the next new entry comes after them all.
    let file_ids: Option<Vec<u64>> = session.messages.iter().map(|m| m.id).collect();
    let ids: Vec<u64> = match file_ids {
        Some(ids) if session.tree().is_ok() => ids,
        _ => (1..=n as u64).collect(),
    };
    let entries: Vec<Entry> = session
        .messages
        .iter()
        .zip(ids)
        .map(|(m, id)| Entry {
            id,
            rev: 0,
            body: entry_body(state, m, &session),
        })
        .collect();
    for (entry, m) in entries.iter().zip(&session.messages) {
        state.session.times.insert(entry.id, m.at);
    }

    // Children in file order; the path from the start to `current`.
    let mut children: HashMap<Option<usize>, Vec<usize>> = HashMap::new();
    for (i, parent) in parents.iter().enumerate() {
        children.entry(*parent).or_default().push(i);
    }
    let mut path = Vec::new();
    let mut at = current;
    while let Some(i) = at {
        path.push(i);
        at = parents[i];
    }
    path.reverse();
    // A message on the path goes on through the path's next one (the last, through none);
    // one off the path through its newest child.
    let on_path: HashMap<usize, usize> = path.iter().enumerate().map(|(k, &i)| (i, k)).collect();
    let active = |node: Option<usize>| -> Option<usize> {
        match node {
            None => path.first().copied(),
            Some(i) => match on_path.get(&i) {
                Some(&k) => path.get(k + 1).copied(),
                None => children.get(&node).and_then(|c| c.last().copied()),
            },
        }
    };
    let branch_from = |first: usize| -> Vec<Entry> {
        let mut out = vec![entries[first].clone()];
        let mut node = first;
        while let Some(next) = active(Some(node)) {
            out.push(entries[next].clone());
            node = next;
        }
        out
    };
    let mut forks = Forks::new();
    // Every child that is not its parent's active one starts a stashed branch.
    for (node, kids) in children.iter() {
        let on = active(*node);
        if kids.iter().all(|&k| Some(k) == on) {
            continue;
        }
        let key = node.map_or(ROOT, |i| entries[i].id);
        let fork = Fork {
            firsts: kids.iter().map(|&k| entries[k].id).collect(),
            stashed: kids
                .iter()
                .filter(|&&k| Some(k) != on)
                .map(|&k| (entries[k].id, branch_from(k)))
                .collect(),
        };
        forks.insert(key, fork);
    }
    let path_entries = path.iter().map(|&i| entries[i].clone()).collect();
    state.conversation.restore(path_entries, forks);

    state.settings.system_prompt = session.system_prompt.clone();
    state.settings.sampling = session.sampling.params();
    state.settings.max_tokens = session.sampling.max_tokens;
    let branches = match state.conversation.forks().len() {
        0 => String::new(),
        n => format!(" ({n} fork{})", if n == 1 { "" } else { "s" }),
    };
    state.conversation.push_notice(
        NoticeLevel::Info,
        format!(
            "Resumed “{}”: {} messages{branches}, last saved {}",
            session.display_title(),
            session.messages.len(),
            time::format_utc(session.updated_at)
        ),
    );
    state.session.id = Some(session.id.clone());
    state.session.title = session.title.clone();
    state.session.created_at = Some(session.created_at);
    state.session.last_saved = Some(Box::new(session));
}

/// A saved message as the screen keeps it.
fn entry_body(state: &mut State, m: &SavedMessage, session: &Session) -> EntryBody {
    match m.role {
        Role::Assistant => {
            let mut message = Message::assistant(m.content.clone());
            message.tool_calls = m.tool_calls.clone();
            let settings = m.sampling.as_ref().map(|s| {
                Box::new(TurnSettings {
                    system_prompt: m
                        .system_prompt
                        .clone()
                        .unwrap_or_else(|| session.system_prompt.clone()),
                    sampling: s.params(),
                    max_tokens: s.max_tokens,
                })
            });
            let answer = Answer {
                model: m.model.clone().unwrap_or_else(|| "unknown model".into()),
                turn_id: state.next_turn_id(),
                status: match m.status {
                    Some(SavedStatus::Stopped) => AnswerStatus::Stopped,
                    Some(SavedStatus::Failed) => AnswerStatus::Failed,
                    Some(SavedStatus::Done) | None => AnswerStatus::Done,
                },
                usage: m.usage.as_ref().map(Into::into),
                error: m.error.clone(),
                settings,
            };
            EntryBody::Message {
                message,
                answer: Some(answer),
            }
        }
        Role::Tool => {
            let mut message = Message::new(Role::Tool, m.content.clone());
            message.tool_call_id = m.tool_call_id.clone();
            EntryBody::ToolResult {
                message,
                outcome: ToolOutcome {
                    name: m.tool_name.clone().unwrap_or_else(|| "tool".into()),
                    is_error: m.is_error,
                    note: m.note.clone(),
                    elapsed_s: None,
                },
            }
        }
        // The format allows no system message here.
        Role::User | Role::System => EntryBody::Message {
            message: Message::user(m.content.clone()),
            answer: None,
        },
    }
}
