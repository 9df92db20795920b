//! The tree operations on plain conversations: the path before and after each one, and what
//! is kept aside.

use super::*;
use crate::tui::state::ToolOutcome;

/// The path's texts, notices left out.
fn path(c: &Conversation) -> Vec<String> {
    c.entries
        .iter()
        .filter_map(|e| match &e.body {
            EntryBody::Message { message, .. } | EntryBody::ToolResult { message, .. } => {
                Some(message.content.clone())
            }
            EntryBody::Notice { .. } => None,
        })
        .collect()
}

fn answer(c: &mut Conversation, turn: u64, text: &str) {
    c.push_answer("m", turn);
    if let Some((message, _)) = c.answer_mut(turn) {
        message.content = text.into();
    }
}

/// q1 a1 q2 a2 q3 a3.
fn three_turns() -> Conversation {
    let mut c = Conversation::default();
    for turn in 1..=3 {
        c.push_user(format!("q{turn}"));
        answer(&mut c, turn, &format!("a{turn}"));
    }
    c
}

fn id_of(c: &Conversation, text: &str) -> u64 {
    c.entries
        .iter()
        .find(|e| matches!(&e.body, EntryBody::Message { message, .. } if message.content == text))
        .map(|e| e.id)
        .unwrap_or_else(|| panic!("no message {text:?} on the path"))
}

#[test]
fn an_edit_makes_a_new_branch_and_keeps_the_old_one_whole() {
    let mut c = three_turns();
    let q2 = id_of(&c, "q2");
    assert!(c.edit_user(q2, "q2 edited"));
    assert_eq!(path(&c), ["q1", "a1", "q2 edited"]);
    let edited = id_of(&c, "q2 edited");
    assert_eq!(c.siblings(edited), Some((2, 2)));
    assert_eq!(c.siblings(q2), Some((1, 2)));
    // The old branch comes back whole, answers and later turns included.
    answer(&mut c, 4, "a2'");
    assert_eq!(c.switch_sibling(edited, -1), Some(q2));
    assert_eq!(path(&c), ["q1", "a1", "q2", "a2", "q3", "a3"]);
    assert_eq!(c.switch_sibling(q2, 1), Some(edited));
    assert_eq!(path(&c), ["q1", "a1", "q2 edited", "a2'"]);
    assert_eq!(c.message_count(), 8);
}

#[test]
fn only_user_messages_on_the_path_can_be_edited() {
    let mut c = three_turns();
    let before = c.clone();
    assert!(!c.edit_user(id_of(&c, "a1"), "x"));
    assert!(!c.edit_user(999, "x"));
    assert_eq!(c, before);
}

#[test]
fn regenerating_keeps_the_old_answer_as_a_sibling() {
    let mut c = three_turns();
    let a3 = id_of(&c, "a3");
    let q3 = c.last_question().expect("a question");
    let fork = c.stash_answer_of(q3).expect("an answer to stash");
    assert_eq!(path(&c), ["q1", "a1", "q2", "a2", "q3"]);
    answer(&mut c, 4, "a3'");
    c.join_fork(fork);
    let new = id_of(&c, "a3'");
    assert_eq!(c.siblings(new), Some((2, 2)));
    assert_eq!(c.switch_sibling(new, 1), Some(a3));
    assert_eq!(path(&c), ["q1", "a1", "q2", "a2", "q3", "a3"]);
}

#[test]
fn regenerating_an_earlier_answer_keeps_what_followed_it_in_the_old_branch() {
    let mut c = three_turns();
    let q1 = c.index_of(id_of(&c, "q1")).expect("on the path");
    let fork = c.stash_answer_of(q1).expect("an answer");
    answer(&mut c, 4, "a1'");
    c.join_fork(fork);
    assert_eq!(path(&c), ["q1", "a1'"]);
    let a1 = id_of(&c, "a1'");
    c.switch_sibling(a1, 1);
    assert_eq!(path(&c), ["q1", "a1", "q2", "a2", "q3", "a3"]);
}

#[test]
fn an_empty_failed_answer_is_replaced_not_kept() {
    let mut c = Conversation::default();
    c.push_user("q");
    c.push_answer("m", 1); // failed before any text
    let q = c.last_question().expect("a question");
    let fork = c.stash_answer_of(q).expect("an answer");
    answer(&mut c, 2, "a");
    c.join_fork(fork);
    assert_eq!(path(&c), ["q", "a"]);
    assert_eq!(c.siblings(id_of(&c, "a")), None);
    assert!(c.forks().is_empty());
}

#[test]
fn regenerating_after_a_tool_loop_answers_the_question_afresh_and_keeps_the_loop() {
    let mut c = Conversation::default();
    c.push_user("2+2?");
    c.push_answer("m", 1);
    if let Some((message, _)) = c.answer_mut(1) {
        message.tool_calls.push(crate::chat::ToolCall {
            id: "call_1".into(),
            name: "add".into(),
            arguments: "{}".into(),
        });
    }
    c.push_tool_result("call_1", "4", ToolOutcome::failed("add"));
    answer(&mut c, 2, "It is 4.");
    let q = c.last_question().expect("a question");
    c.stash_answer_of(q).expect("an answer");
    assert_eq!(path(&c), ["2+2?"]);
    let roles: Vec<Role> = c.messages("").iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User]);
    assert_eq!(c.message_count(), 4);
}

#[test]
fn deleting_a_branch_with_siblings_goes_on_through_its_neighbour() {
    let mut c = three_turns();
    let q2 = id_of(&c, "q2");
    c.edit_user(q2, "q2 edited");
    answer(&mut c, 4, "a2'");
    let edited = id_of(&c, "q2 edited");
    assert_eq!(c.delete_branch(edited), Some(Deleted::SwitchedTo(q2)));
    assert_eq!(path(&c), ["q1", "a1", "q2", "a2", "q3", "a3"]);
    assert_eq!(c.siblings(q2), None);
    assert!(c.forks().is_empty());
    assert_eq!(c.message_count(), 6);
}

#[test]
fn deleting_the_first_of_siblings_goes_on_through_the_next() {
    let mut c = three_turns();
    let q2 = id_of(&c, "q2");
    c.edit_user(q2, "q2 edited");
    let edited = id_of(&c, "q2 edited");
    c.switch_sibling(edited, 1);
    assert_eq!(c.delete_branch(q2), Some(Deleted::SwitchedTo(edited)));
    assert_eq!(path(&c), ["q1", "a1", "q2 edited"]);
}

#[test]
fn deleting_a_message_without_siblings_ends_the_conversation_before_it() {
    let mut c = three_turns();
    // A branch inside the deleted part goes with it.
    let q3 = id_of(&c, "q3");
    c.edit_user(q3, "q3 edited");
    let a2 = id_of(&c, "a2");
    assert_eq!(c.delete_branch(a2), Some(Deleted::Truncated));
    assert_eq!(path(&c), ["q1", "a1", "q2"]);
    assert!(c.forks().is_empty());
    assert_eq!(c.message_count(), 3);
}

#[test]
fn a_fork_is_the_path_through_the_message_and_nothing_else() {
    let mut c = three_turns();
    let q3 = id_of(&c, "q3");
    c.edit_user(q3, "q3 edited");
    let a2 = id_of(&c, "a2");
    let fork = c.path_through(a2).expect("on the path");
    assert_eq!(path(&fork), ["q1", "a1", "q2", "a2"]);
    assert!(fork.forks().is_empty());
    // The original is untouched.
    assert_eq!(path(&c), ["q1", "a1", "q2", "a2", "q3 edited"]);
}

#[test]
fn switching_keeps_the_choices_made_inside_a_branch() {
    let mut c = three_turns();
    // Branch at q3, then at q2; back on the first q2 branch the edited q3 is still chosen.
    let q3 = id_of(&c, "q3");
    c.edit_user(q3, "q3 edited");
    let q2 = id_of(&c, "q2");
    c.edit_user(q2, "q2 edited");
    let edited = id_of(&c, "q2 edited");
    c.switch_sibling(edited, -1);
    assert_eq!(path(&c), ["q1", "a1", "q2", "a2", "q3 edited"]);
}
