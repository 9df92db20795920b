//! What a key asks for: the actions of the key table, which `update` carries out. Data
//! only; what each key is bound to is the table's business.

pub use crate::tui::line_edit::Cut;
use crossterm::event::KeyEvent;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    /// Send the editor's text.
    Send,
    Newline,
    /// Stop the generation (Esc).
    Stop,
    Regenerate,
    /// Let the model go on with the last answer, cut short by the token limit or Esc.
    Continue,
    NewConversation,
    OpenPicker,
    OpenSettings,
    OpenHelp,
    CloseOverlay,
    /// Scroll the help by lines, or by pages.
    HelpScroll(isize),
    HelpPage(isize),
    ToggleThinking,
    /// Clear the terminal and draw everything again.
    Redraw,
    PageUp,
    PageDown,
    /// Scroll to the newest line and keep following; the key also goes to the editor.
    Follow(KeyEvent),
    HistoryOlder,
    HistoryNewer,
    /// A key for the editor (typing, cursor movement).
    Edit(KeyEvent),
    /// Tab: complete the command or `@path` being typed (else the key goes to the editor).
    Complete(KeyEvent),
    /// A deletion before the cursor, in whichever text field has the keys (Ctrl+W, Ctrl+U).
    Cut(Cut),
    /// Take back the message editor's last change.
    Undo,
    /// Stop as a shell job (Ctrl+Z), the terminal given back; `fg` brings the screen back.
    Suspend,
    /// Give the mouse to the terminal (to select text), or take it back (for the wheel).
    ToggleMouse,
    PickerUp,
    PickerDown,
    PickerLoad,
    PickerType(char),
    PickerBackspace,
    FieldUp,
    FieldDown,
    /// Start editing the selected field, or commit the edit.
    FieldEnter,
    FieldType(char),
    FieldBackspace,
    /// Leave the edit without applying it.
    FieldCancel,
    /// Saved conversations: the list overlay and export (handled in `update::sessions`).
    Session(SessionAction),
    /// Copy to the clipboard (handled in `update::copy`).
    Copy(CopyWhat),
    /// The tool loop (handled in `update::tools`).
    Tool(ToolAction),
    /// Message selection and the conversation tree (handled in `update::tree`).
    Tree(TreeAction),
    Ignore,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionAction {
    /// Open the sessions list.
    OpenList,
    /// Write the conversation as Markdown.
    Export,
    Up,
    Down,
    /// Continue the selected session.
    Load,
    /// Start renaming the selected session.
    Rename,
    /// Ask to delete the selected session.
    Delete,
    /// Apply the rename, or delete after the confirmation.
    Confirm,
    /// Leave the rename or the confirmation.
    Cancel,
    Type(char),
    Backspace,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyWhat {
    LastAnswer,
    /// The next code block, from the newest back.
    CodeBlock,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolAction {
    /// Run the call waiting for approval.
    Once,
    /// Run it, and every later call of its tool in this conversation.
    Always,
    /// Do not run it; the model is told.
    Refuse,
    /// Show tool results whole, or fold them to a line.
    ToggleResults,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeAction {
    /// Start selecting messages, from the newest.
    Select,
    Up,
    Down,
    /// Put the selected user message in the editor; sending it makes a new branch.
    Edit,
    /// Leave an edit; the editor gets back what it held.
    CancelEdit,
    /// Answer the selected question (or the one the selected answer answers) again; the
    /// old answer stays as a sibling.
    Regenerate,
    /// Switch to the selected message's previous or next sibling.
    Sibling(isize),
    /// Save the path up to the selected message as a new conversation, and go on there.
    Fork,
    /// Ask to delete the selected message and what follows it.
    Delete,
    /// Delete, after the question.
    ConfirmDelete,
    /// Keep it (after the question), or leave the selection.
    Cancel,
}
