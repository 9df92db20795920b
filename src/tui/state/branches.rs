//! The conversation as a tree. `Conversation::entries` is the path on screen (what the model
//! reads); every other branch is kept whole, stashed at its fork, and comes back when the user
//! switches to it. A fork is keyed by the message its branches follow (0: the start), and
//! lists its branches by their first entry, in the order they were made.

use super::conversation::{Conversation, Entry, EntryBody};
use crate::chat::Role;
use std::collections::{BTreeMap, HashMap};

/// The branches that follow one message.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fork {
    /// Each branch's first entry id, oldest branch first.
    pub firsts: Vec<u64>,
    /// The branches not on the path, whole, by their first entry id.
    pub stashed: HashMap<u64, Vec<Entry>>,
}

/// Every fork of the conversation, by the id of the message its branches follow.
pub type Forks = BTreeMap<u64, Fork>;

/// The parent id of the start of the conversation.
pub const ROOT: u64 = 0;

/// What deleting a branch did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deleted {
    /// Its messages are gone and the path goes on through this sibling (its first entry).
    SwitchedTo(u64),
    /// It had no sibling: the conversation now ends before it.
    Truncated,
}

/// Whether an entry is a message of the tree (notices are only shown).
pub fn is_node(entry: &Entry) -> bool {
    !matches!(entry.body, EntryBody::Notice { .. })
}

impl Conversation {
    /// Where entry `id` is on the path.
    pub fn index_of(&self, id: u64) -> Option<usize> {
        self.entries.iter().position(|e| e.id == id)
    }

    /// The message the entry at `at` follows: the nearest message before it, or [`ROOT`].
    pub fn parent_at(&self, at: usize) -> u64 {
        self.entries[..at.min(self.entries.len())]
            .iter()
            .rev()
            .find(|e| is_node(e))
            .map_or(ROOT, |e| e.id)
    }

    /// Which of its siblings entry `id` is, 1-based, and how many there are; None when it
    /// has none.
    pub fn siblings(&self, id: u64) -> Option<(usize, usize)> {
        self.forks
            .values()
            .find_map(|f| f.firsts.iter().position(|&x| x == id).map(|i| (i, f)))
            .filter(|(_, f)| f.firsts.len() > 1)
            .map(|(i, f)| (i + 1, f.firsts.len()))
    }

    /// Moves the path from `at` on into a stashed branch of its fork (made if new), leaving
    /// the path ending before `at`. Returns the fork's key, for [`Self::join_fork`].
    pub fn stash_from(&mut self, at: usize) -> u64 {
        let parent = self.parent_at(at);
        let mut tail: Vec<Entry> = self.entries.drain(at.min(self.entries.len())..).collect();
        // Notices after the branch's last message (a model switch, a resume) are news of the
        // chat, not of the branch: they stay where they are.
        let last = tail.iter().rposition(is_node).map_or(0, |i| i + 1);
        self.entries.extend(tail.drain(last..));
        let Some(first) = tail.first().map(|e| e.id) else {
            return parent;
        };
        let fork = self.forks.entry(parent).or_default();
        if !fork.firsts.contains(&first) {
            fork.firsts.push(first);
        }
        fork.stashed.insert(first, tail);
        parent
    }

    /// Makes the last entry the first of a new branch of fork `parent` (after
    /// [`Self::stash_from`] and a push).
    pub fn join_fork(&mut self, parent: u64) {
        let Some(last) = self.entries.last().map(|e| e.id) else {
            return;
        };
        if let Some(fork) = self.forks.get_mut(&parent) {
            if !fork.firsts.contains(&last) {
                fork.firsts.push(last);
            }
        }
    }

    /// Edits user message `id` as a new branch: the old message and what followed it stay as
    /// its sibling. False when `id` is not a user message on the path.
    pub fn edit_user(&mut self, id: u64, text: impl Into<String>) -> bool {
        let Some(at) = self.index_of(id) else {
            return false;
        };
        if !self.is_user(at) {
            return false;
        }
        let parent = self.stash_from(at);
        self.push_user(text);
        self.join_fork(parent);
        true
    }

    /// For regenerating the answer to the question at `question` (an index): stashes the
    /// answer (with its tool loop and all that followed) as a sibling, unless it is empty
    /// (failed or stopped before any text), which is dropped. Returns the fork key the new
    /// answer joins, or None when the question has no answer yet.
    pub fn stash_answer_of(&mut self, question: usize) -> Option<u64> {
        let start = (question + 1..self.entries.len()).find(|&i| is_node(&self.entries[i]))?;
        let empty = matches!(&self.entries[start].body,
            EntryBody::Message { message, answer: Some(_) }
                if message.content.trim().is_empty() && message.tool_calls.is_empty());
        let lone = !(start + 1..self.entries.len()).any(|i| is_node(&self.entries[i]));
        if empty && lone && self.siblings(self.entries[start].id).is_none() {
            let parent = self.parent_at(start);
            self.entries.remove(start);
            return Some(parent);
        }
        Some(self.stash_from(start))
    }

    /// The question an entry answers (its own index for a user message): the nearest user
    /// message at or before `at`.
    pub fn question_of(&self, at: usize) -> Option<usize> {
        (0..=at.min(self.entries.len().checked_sub(1)?))
            .rev()
            .find(|&i| self.is_user(i))
    }

    fn is_user(&self, at: usize) -> bool {
        matches!(&self.entries[at].body,
            EntryBody::Message { message, answer: None } if message.role == Role::User)
    }

    /// Switches the branch entry `id` starts to its sibling `delta` away (wrapping): the path
    /// from `id` on is stashed and the sibling's comes back. Returns the sibling's first id.
    pub fn switch_sibling(&mut self, id: u64, delta: isize) -> Option<u64> {
        let at = self.index_of(id)?;
        let parent = self.parent_at(at);
        let fork = self.forks.get(&parent)?;
        let n = fork.firsts.len();
        let i = fork.firsts.iter().position(|&x| x == id)?;
        let next = fork.firsts[(i as isize + delta).rem_euclid(n as isize) as usize];
        if next == id || !fork.stashed.contains_key(&next) {
            return None;
        }
        self.stash_from(at);
        let branch = self.forks.get_mut(&parent)?.stashed.remove(&next)?;
        self.entries.extend(branch);
        Some(next)
    }

    /// Deletes entry `id` and everything after it on the path, with every branch inside
    /// that part. When `id` starts a branch with siblings, the path goes on through the one
    /// before it (or after, for the first).
    pub fn delete_branch(&mut self, id: u64) -> Option<Deleted> {
        let at = self.index_of(id)?;
        let parent = self.parent_at(at);
        let removed: Vec<Entry> = self.entries.drain(at..).collect();
        self.forget(&removed);
        let Some(fork) = self.forks.get_mut(&parent) else {
            return Some(Deleted::Truncated);
        };
        let Some(i) = fork.firsts.iter().position(|&x| x == id) else {
            return Some(Deleted::Truncated);
        };
        fork.firsts.remove(i);
        let next = fork.firsts.get(i.saturating_sub(1)).copied();
        let branch = next.and_then(|n| fork.stashed.remove(&n));
        if fork.firsts.len() <= 1 && fork.stashed.is_empty() {
            self.forks.remove(&parent);
        }
        match (next, branch) {
            (Some(next), Some(branch)) => {
                self.entries.extend(branch);
                Some(Deleted::SwitchedTo(next))
            }
            _ => Some(Deleted::Truncated),
        }
    }

    /// Drops the forks of removed entries, and the branches stashed in them.
    fn forget(&mut self, removed: &[Entry]) {
        for entry in removed {
            if let Some(fork) = self.forks.remove(&entry.id) {
                for branch in fork.stashed.values() {
                    self.forget(branch);
                }
            }
        }
    }

    /// The path up to and including entry `id`, as a conversation of its own with no other
    /// branches (a fork into a new saved conversation).
    pub fn path_through(&self, id: u64) -> Option<Conversation> {
        let at = self.index_of(id)?;
        let mut out = self.clone();
        out.entries.truncate(at + 1);
        out.forks.clear();
        Some(out)
    }

    /// The forks, to save them.
    pub fn forks(&self) -> &Forks {
        &self.forks
    }

    /// How many messages the whole tree holds (the path and every stashed branch).
    pub fn message_count(&self) -> usize {
        let stashed: usize = self
            .forks
            .values()
            .flat_map(|f| f.stashed.values())
            .map(|b| b.iter().filter(|e| is_node(e)).count())
            .sum();
        self.entries.iter().filter(|e| is_node(e)).count() + stashed
    }
}

#[cfg(test)]
#[path = "branches_tests.rs"]
mod tests;
