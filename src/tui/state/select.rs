//! Message selection: the user walks the conversation's messages to edit, regenerate, switch
//! branches, fork or delete from one of them; and an earlier message being edited in the
//! editor, which sends as a new branch.

/// The message selected, and whether its branch's deletion waits for a yes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Selection {
    /// The entry id of a user or assistant message on the path.
    pub id: u64,
    pub confirm_delete: bool,
}

/// An earlier user message in the editor: sending it makes a new branch from there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Editing {
    /// The entry id of the message being edited.
    pub id: u64,
    /// What the editor held before, given back if the edit is cancelled.
    pub draft: String,
}
