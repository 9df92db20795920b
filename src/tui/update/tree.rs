//! Message selection and the conversation tree: walk the messages, edit one (sent as a new
//! branch), answer a question again (the old answer kept as a sibling), switch between
//! siblings, fork the path into a new saved conversation, delete a branch after a yes.
//! The tree itself is `state::branches`; this decides what a key does with it.

use super::{sessions, turn};
use crate::tui::keymap::TreeAction;
use crate::tui::msg::Effect;
use crate::tui::state::branches::{is_node, Deleted};
use crate::tui::state::{Editing, EntryBody, NoticeLevel, Selection, State};

pub(super) fn act(state: &mut State, action: TreeAction, fx: &mut Vec<Effect>) {
    use TreeAction as T;
    match action {
        T::Select => start(state),
        T::Up => step(state, -1),
        T::Down => step(state, 1),
        T::Edit => edit(state),
        T::CancelEdit => cancel_edit(state),
        T::Regenerate => regenerate(state, fx),
        T::Sibling(delta) => switch(state, delta, fx),
        T::Fork => fork(state, fx),
        T::Delete => {
            if let Some(select) = &mut state.select {
                select.confirm_delete = true;
            }
        }
        T::ConfirmDelete => delete(state, fx),
        T::Cancel => match &mut state.select {
            Some(select) if select.confirm_delete => select.confirm_delete = false,
            _ => state.select = None,
        },
    }
}

/// The ids of the messages that can be selected (the user's and the answers), in order.
pub(super) fn selectable(state: &State) -> Vec<u64> {
    state
        .conversation
        .entries
        .iter()
        .filter(|e| matches!(e.body, EntryBody::Message { .. }))
        .map(|e| e.id)
        .collect()
}

/// Why the tree cannot change now, if it cannot.
fn busy(state: &State) -> Option<&'static str> {
    state
        .generating()
        .then_some("Still answering: Esc stops it first")
}

fn start(state: &mut State) {
    if let Some(why) = busy(state) {
        state.status = Some(why.into());
        return;
    }
    match selectable(state).last() {
        Some(&id) => {
            state.select = Some(Selection {
                id,
                confirm_delete: false,
            })
        }
        None => state.status = Some("No messages yet".into()),
    }
}

fn step(state: &mut State, delta: isize) {
    let ids = selectable(state);
    let Some(select) = &mut state.select else {
        return;
    };
    let at = ids
        .iter()
        .position(|&id| id == select.id)
        .unwrap_or(ids.len());
    let next = (at as isize + delta).clamp(0, ids.len() as isize - 1);
    if let Some(&id) = ids.get(next as usize) {
        select.id = id;
    }
}

/// The selected message's index on the path.
fn selected_at(state: &State) -> Option<usize> {
    state.select.and_then(|s| state.conversation.index_of(s.id))
}

fn edit(state: &mut State) {
    let Some(at) = selected_at(state) else {
        return;
    };
    let EntryBody::Message {
        message,
        answer: None,
    } = &state.conversation.entries[at].body
    else {
        state.status = Some("Only your own messages can be edited; r answers again".into());
        return;
    };
    let text = message.content.clone();
    let id = state.conversation.entries[at].id;
    let draft = match &state.editing {
        // Editing another message already: the draft from before that edit stays.
        Some(editing) => editing.draft.clone(),
        None => state.input.text(),
    };
    state.editing = Some(Editing { id, draft });
    state.input.set_text(&text);
    // The editor's title says what Enter and Esc do now.
    state.select = None;
}

fn cancel_edit(state: &mut State) {
    if let Some(editing) = state.editing.take() {
        state.input.set_text(&editing.draft);
        state.status = Some("Edit left; the message is as it was".into());
    }
}

fn regenerate(state: &mut State, fx: &mut Vec<Effect>) {
    let Some(at) = selected_at(state) else {
        return;
    };
    if let Some(why) = busy(state) {
        state.status = Some(why.into());
        return;
    }
    if state.model.answering_name().is_none() {
        state.status = Some("No model loaded: Ctrl+P picks one".into());
        return;
    }
    let Some(question) = state.conversation.question_of(at) else {
        state.status = Some("No question before this message to answer".into());
        return;
    };
    state.select = None;
    state.editing = None;
    turn::regenerate_answer_of(state, question, fx);
}

fn switch(state: &mut State, delta: isize, fx: &mut Vec<Effect>) {
    let Some(select) = state.select else {
        return;
    };
    if let Some(why) = busy(state) {
        state.status = Some(why.into());
        return;
    }
    match state.conversation.switch_sibling(select.id, delta) {
        Some(id) => {
            state.select = Some(Selection { id, ..select });
            forget_missing_edit(state);
            let (n, of) = state.conversation.siblings(id).unwrap_or((1, 1));
            state.status = Some(format!("Branch {n} of {of}"));
            sessions::autosave(state, fx);
        }
        None => state.status = Some("This message has no other branch".into()),
    }
}

fn fork(state: &mut State, fx: &mut Vec<Effect>) {
    if let Some(select) = state.select {
        fork_at(state, select.id, fx);
    }
}

/// Goes on in a new conversation holding the path through message `id` (the original is
/// saved as it stands); `/fork` forks at the newest message.
pub(super) fn fork_at(state: &mut State, id: u64, fx: &mut Vec<Effect>) {
    if let Some(why) = busy(state) {
        state.status = Some(why.into());
        return;
    }
    let Some(forked) = state.conversation.path_through(id) else {
        return;
    };
    // The original is saved as it stands; the fork is a new conversation from here on.
    sessions::autosave(state, fx);
    let title = state.session.title.clone();
    let times = std::mem::take(&mut state.session.times);
    state.session.reset();
    state.session.times = times
        .into_iter()
        .filter(|(id, _)| forked.index_of(*id).is_some())
        .collect();
    if !title.trim().is_empty() {
        state.session.title = format!("{title} (fork)");
    }
    state.conversation = forked;
    state.select = None;
    state.editing = None;
    state.scroll = Default::default();
    state.conversation.push_notice(
        NoticeLevel::Info,
        "Forked: a new conversation up to here. The original is saved (Ctrl+O).",
    );
    sessions::autosave(state, fx);
}

fn delete(state: &mut State, fx: &mut Vec<Effect>) {
    let Some(select) = state.select else {
        return;
    };
    if let Some(why) = busy(state) {
        state.status = Some(why.into());
        return;
    }
    let whole = state
        .conversation
        .entries
        .iter()
        .find(|e| is_node(e))
        .map(|e| e.id)
        == Some(select.id)
        && state.conversation.siblings(select.id).is_none();
    if whole {
        state.select = Some(Selection {
            confirm_delete: false,
            ..select
        });
        state.status =
            Some("That is the whole conversation: Ctrl+O deletes saved conversations".into());
        return;
    }
    let before = state.conversation.message_count();
    let Some(deleted) = state.conversation.delete_branch(select.id) else {
        return;
    };
    let gone = before - state.conversation.message_count();
    state.select = match deleted {
        Deleted::SwitchedTo(id) => Some(Selection {
            id,
            confirm_delete: false,
        }),
        Deleted::Truncated => selectable(state).last().map(|&id| Selection {
            id,
            confirm_delete: false,
        }),
    };
    forget_missing_edit(state);
    state.status = Some(format!(
        "Deleted {gone} message{}",
        if gone == 1 { "" } else { "s" }
    ));
    sessions::autosave(state, fx);
}

/// An edit of a message no longer on the path is over; the editor gets its draft back.
fn forget_missing_edit(state: &mut State) {
    let gone = state
        .editing
        .as_ref()
        .is_some_and(|e| state.conversation.index_of(e.id).is_none());
    if gone {
        cancel_edit(state);
    }
}
