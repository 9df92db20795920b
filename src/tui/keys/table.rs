//! The table itself: every key of the TUI, context by context, in the order the help lists
//! them and the footer shows them. README.md's key table is the user-facing copy.

use super::build::{bind, ch, ctrl, key, session_type, with};
use super::{Action, CopyWhat, Cut, SessionAction as S, ToolAction, TreeAction as T};
use super::{Binding, Combo, Context, Does, Screens, When};
use crossterm::event::{KeyCode, KeyModifiers};
use Context::*;

const UP: KeyCode = KeyCode::Up;
const DOWN: KeyCode = KeyCode::Down;
const ENTER: KeyCode = KeyCode::Enter;
const ESC: KeyCode = KeyCode::Esc;
const BACKSPACE: KeyCode = KeyCode::Backspace;
const ALT: KeyModifiers = KeyModifiers::ALT;
const R: Screens = Screens::READY;
const A: Screens = Screens::ANSWERING;
const D: Screens = Screens::DOWNLOADING;
const OVERLAYS: Screens = Screens::HELP
    .or(Screens::PICKER)
    .or(Screens::SETTINGS)
    .or(Screens::SESSIONS);

pub const KEYS: &[Binding] = &[
    // The chat.
    bind(Chat, &[key(ENTER)], Action::Send, "send the message").footer(&[(R, "send")]),
    bind(
        Chat,
        &[
            with(ENTER, ALT),
            with(ENTER, KeyModifiers::SHIFT),
            ctrl('j'),
        ],
        Action::Newline,
        "new line in the message (a paste never sends)",
    )
    .footer(&[(R, "new line")]),
    bind(
        Chat,
        &[key(KeyCode::Tab)],
        Action::Ignore,
        "complete a /command or an @file path",
    )
    .does(Does::Key(Action::Complete)),
    bind(
        Chat,
        &[key(UP)],
        Action::HistoryOlder,
        "recall earlier messages (on an empty one)",
    )
    .when(When::CanRecallOlder),
    bind(
        Chat,
        &[key(DOWN)],
        Action::HistoryNewer,
        "recall later messages",
    )
    .when(When::CanRecallNewer),
    bind(
        Chat,
        &[key(ESC)],
        Action::Tree(T::CancelEdit),
        "leave the edit of an earlier message",
    )
    .when(When::Editing),
    bind(
        Chat,
        &[key(ESC)],
        Action::Stop,
        "stop the answer (its text stays) or the download",
    )
    .footer(&[(A, "stop"), (D, "stop download")]),
    bind(
        Chat,
        &[key(KeyCode::PageUp)],
        Action::PageUp,
        "scroll up (the mouse wheel too)",
    )
    .footer(&[(A, "scroll")]),
    bind(
        Chat,
        &[key(KeyCode::PageDown)],
        Action::PageDown,
        "scroll down",
    )
    .footer(&[(A, "scroll")]),
    bind(
        Chat,
        &[key(KeyCode::End)],
        Action::Ignore,
        "follow the newest text",
    )
    .does(Does::Key(Action::Follow)),
    bind(
        Chat,
        &[ctrl('p')],
        Action::OpenPicker,
        "pick a model (the conversation is kept)",
    )
    .footer(&[
        (R.or(A).or(D), "model"),
        (Screens::NO_MODEL, "pick a model"),
    ]),
    bind(
        Chat,
        &[ctrl('s')],
        Action::OpenSettings,
        "system prompt and sampling settings",
    )
    .footer(&[(R, "settings")]),
    bind(
        Chat,
        &[ctrl('r')],
        Action::Regenerate,
        "regenerate the last answer",
    )
    .footer(&[(R, "regenerate")]),
    bind(
        Chat,
        &[ctrl('g')],
        Action::Continue,
        "continue the last answer where it was cut short",
    ),
    bind(
        Chat,
        &[ctrl('n')],
        Action::NewConversation,
        "new conversation",
    )
    .footer(&[(R, "new chat")]),
    bind(
        Chat,
        &[ctrl('o')],
        Action::Session(S::OpenList),
        "saved conversations: open, rename, delete",
    )
    .footer(&[(R, "sessions")]),
    bind(
        Chat,
        &[ctrl('e')],
        Action::Session(S::Export),
        "export the conversation as Markdown",
    ),
    bind(
        Chat,
        &[ctrl('t')],
        Action::ToggleThinking,
        "show or fold thinking",
    )
    .footer(&[(R.or(A), "thinking")]),
    bind(
        Chat,
        &[ctrl('k')],
        Action::Tool(ToolAction::ToggleResults),
        "show or fold tool results",
    ),
    bind(
        Chat,
        &[with(UP, ALT), with(UP, KeyModifiers::CONTROL)],
        Action::Tree(T::Select),
        "select an earlier message: edit, answer again, switch branch, fork, delete",
    )
    .footer(&[(R, "select")]),
    bind(
        Chat,
        &[ctrl('y')],
        Action::Copy(CopyWhat::LastAnswer),
        "copy the last answer",
    ),
    bind(
        Chat,
        &[with(KeyCode::Char('y'), ALT), with(KeyCode::Char('Y'), ALT)],
        Action::Copy(CopyWhat::CodeBlock),
        "copy a code block; again: the one before",
    ),
    bind(
        Chat,
        &[ch('?')],
        Action::OpenHelp,
        "this help (on an empty message)",
    )
    .when(When::InputEmpty)
    .footer(&[(R.or(D).or(Screens::NO_MODEL), "help")]),
    bind(Chat, &[key(KeyCode::F(1))], Action::OpenHelp, "this help"),
    // Terminals send Ctrl+_ and Ctrl+/ as one byte, which crossterm reports as Ctrl+7; with
    // the kitty keyboard protocol they come as themselves.
    bind(
        Chat,
        &[ctrl('_'), ctrl('/'), ctrl('7')],
        Action::Undo,
        "undo the last change to the message",
    ),
    bind(
        Chat,
        &[Combo::Any],
        Action::Ignore,
        "write and edit the message",
    )
    .does(Does::Key(Action::Edit)),
    // Whatever is open.
    bind(
        Anywhere,
        &[ctrl('q'), ctrl('c')],
        Action::Quit,
        "quit (also while loading or answering)",
    )
    .footer(&[(Screens::CHAT.or(OVERLAYS), "quit")]),
    bind(Anywhere, &[ctrl('l')], Action::Redraw, "redraw the screen"),
    bind(
        Anywhere,
        &[ctrl('z')],
        Action::Suspend,
        "suspend to the shell (fg comes back; an answer goes on)",
    ),
    bind(
        Anywhere,
        &[with(KeyCode::Char('m'), ALT)],
        Action::ToggleMouse,
        "mouse off, to select text with it; again: on, for the wheel",
    ),
    // Every text field: readline's deletions. Kept out of the contexts' own rows so that
    // they cannot differ from one field to the next.
    bind(
        TextField,
        &[ctrl('w')],
        Action::Cut(Cut::Word),
        "delete the word before the cursor",
    ),
    bind(
        TextField,
        &[ctrl('u')],
        Action::Cut(Cut::ToStart),
        "delete to the start of the line",
    )
    .footer(&[(Screens::SETTINGS_EDIT, "clear")]),
    // The model picker.
    bind(
        Picker,
        &[Combo::AnyChar],
        Action::Ignore,
        "filter by name, architecture, quantization",
    )
    .does(Does::Char(Action::PickerType))
    .footer(&[(Screens::PICKER, "filter")]),
    bind(
        Picker,
        &[key(BACKSPACE)],
        Action::PickerBackspace,
        "delete from the filter",
    ),
    bind(
        Picker,
        &[key(UP), ctrl('p')],
        Action::PickerUp,
        "select the model above",
    )
    .footer(&[(Screens::PICKER, "select")]),
    bind(
        Picker,
        &[key(DOWN), key(KeyCode::Tab), ctrl('n')],
        Action::PickerDown,
        "select the model below",
    )
    .footer(&[(Screens::PICKER, "select")]),
    bind(
        Picker,
        &[key(ENTER)],
        Action::PickerLoad,
        "load the selected model (downloading it first)",
    )
    .footer(&[(Screens::PICKER, "load (or download)")]),
    bind(Picker, &[key(ESC)], Action::CloseOverlay, "close").footer(&[(Screens::PICKER, "close")]),
    // The settings form.
    bind(
        Settings,
        &[key(UP), key(KeyCode::BackTab)],
        Action::FieldUp,
        "select the setting above",
    )
    .footer(&[(Screens::SETTINGS, "select")]),
    bind(
        Settings,
        &[key(DOWN), key(KeyCode::Tab)],
        Action::FieldDown,
        "select the setting below",
    )
    .footer(&[(Screens::SETTINGS, "select")]),
    bind(
        Settings,
        &[key(ENTER)],
        Action::FieldEnter,
        "edit the selected setting",
    )
    .footer(&[(Screens::SETTINGS, "edit")]),
    bind(
        Settings,
        &[key(ESC), ch('q'), ctrl('s')],
        Action::CloseOverlay,
        "close",
    )
    .footer(&[(Screens::SETTINGS, "close")]),
    bind(
        SettingsEdit,
        &[key(ENTER)],
        Action::FieldEnter,
        "apply the value",
    )
    .footer(&[(Screens::SETTINGS_EDIT, "apply")]),
    bind(
        SettingsEdit,
        &[key(ESC)],
        Action::FieldCancel,
        "leave the value as it was",
    )
    .footer(&[(Screens::SETTINGS_EDIT, "cancel")]),
    bind(
        SettingsEdit,
        &[key(BACKSPACE)],
        Action::FieldBackspace,
        "delete a character",
    ),
    bind(
        SettingsEdit,
        &[Combo::AnyChar],
        Action::Ignore,
        "write the value",
    )
    .does(Does::Char(Action::FieldType)),
    // The saved conversations. Letters go to the filter, so the list's own keys are not
    // letters.
    bind(
        Sessions,
        &[Combo::AnyChar],
        Action::Ignore,
        "filter by title and words in the conversation",
    )
    .does(Does::Char(session_type))
    .footer(&[(Screens::SESSIONS, "filter")]),
    bind(
        Sessions,
        &[key(BACKSPACE)],
        Action::Session(S::Backspace),
        "delete from the filter",
    ),
    bind(
        Sessions,
        &[key(UP), ctrl('p')],
        Action::Session(S::Up),
        "select the one above",
    )
    .footer(&[(Screens::SESSIONS, "select")]),
    bind(
        Sessions,
        &[key(DOWN), key(KeyCode::Tab), ctrl('n')],
        Action::Session(S::Down),
        "select the one below",
    )
    .footer(&[(Screens::SESSIONS, "select")]),
    bind(
        Sessions,
        &[key(ENTER)],
        Action::Session(S::Load),
        "continue the selected conversation",
    )
    .footer(&[(Screens::SESSIONS, "open")]),
    bind(
        Sessions,
        &[key(KeyCode::F(2))],
        Action::Session(S::Rename),
        "rename it",
    )
    .footer(&[(Screens::SESSIONS, "rename")]),
    bind(
        Sessions,
        &[key(KeyCode::Delete)],
        Action::Session(S::Delete),
        "delete it (asks first)",
    )
    .footer(&[(Screens::SESSIONS, "delete")]),
    bind(
        Sessions,
        &[key(ESC), ctrl('o')],
        Action::Session(S::Cancel),
        "close",
    )
    .footer(&[(Screens::SESSIONS, "close")]),
    bind(
        SessionsRename,
        &[key(ENTER)],
        Action::Session(S::Confirm),
        "apply the new title",
    )
    .footer(&[(Screens::SESSIONS_RENAME, "rename")]),
    bind(
        SessionsRename,
        &[key(ESC)],
        Action::Session(S::Cancel),
        "leave the title as it was",
    )
    .footer(&[(Screens::SESSIONS_RENAME, "cancel")]),
    bind(
        SessionsRename,
        &[key(BACKSPACE)],
        Action::Session(S::Backspace),
        "delete a character",
    ),
    bind(
        SessionsRename,
        &[Combo::AnyChar],
        Action::Ignore,
        "write the title",
    )
    .does(Does::Char(session_type)),
    bind(
        SessionsDelete,
        &[Combo::Typed('y'), Combo::Typed('Y')],
        Action::Session(S::Confirm),
        "delete the file",
    )
    .footer(&[(Screens::SESSIONS_DELETE, "delete")]),
    bind(
        SessionsDelete,
        &[Combo::Typed('n')],
        Action::Session(S::Cancel),
        "keep it",
    )
    .footer(&[(Screens::SESSIONS_DELETE, "keep")]),
    bind(
        SessionsDelete,
        &[key(ESC), Combo::Any],
        Action::Session(S::Cancel),
        "keep it too",
    )
    .footer(&[(Screens::SESSIONS_DELETE, "keep")]),
    // A tool call waiting for approval.
    bind(
        Approval,
        &[Combo::Typed('y'), Combo::Typed('Y')],
        Action::Tool(ToolAction::Once),
        "run this call",
    )
    .footer(&[(Screens::APPROVAL, "run")]),
    bind(
        Approval,
        &[Combo::Typed('a'), Combo::Typed('A')],
        Action::Tool(ToolAction::Always),
        "run it, and every call of this tool in this conversation",
    )
    .footer(&[(Screens::APPROVAL, "always")]),
    bind(
        Approval,
        &[Combo::Typed('n'), Combo::Typed('N')],
        Action::Tool(ToolAction::Refuse),
        "refuse (the model is told)",
    )
    .footer(&[(Screens::APPROVAL, "refuse")]),
    bind(Approval, &[key(ESC)], Action::Stop, "stop the tool loop")
        .footer(&[(Screens::APPROVAL, "stop")]),
    bind(
        Approval,
        &[ctrl('k')],
        Action::Tool(ToolAction::ToggleResults),
        "show or fold tool results",
    ),
    bind(
        Approval,
        &[key(KeyCode::PageUp)],
        Action::PageUp,
        "scroll up",
    ),
    bind(
        Approval,
        &[key(KeyCode::PageDown)],
        Action::PageDown,
        "scroll down",
    ),
    // Selecting a message. Letters are free here: the editor does not take keys.
    bind(
        Select,
        &[key(UP), ch('k')],
        Action::Tree(T::Up),
        "the message above",
    )
    .footer(&[(Screens::SELECT, "select")]),
    bind(
        Select,
        &[key(DOWN), ch('j')],
        Action::Tree(T::Down),
        "the message below",
    )
    .footer(&[(Screens::SELECT, "select")]),
    bind(
        Select,
        &[key(ENTER), ch('e')],
        Action::Tree(T::Edit),
        "edit your message; Enter sends it as a new branch",
    )
    .footer(&[(Screens::SELECT, "edit")]),
    bind(
        Select,
        &[ch('r')],
        Action::Tree(T::Regenerate),
        "answer again (the old answer stays as a sibling)",
    )
    .footer(&[(Screens::SELECT, "answer again")]),
    bind(
        Select,
        &[key(KeyCode::Left), ch('h')],
        Action::Tree(T::Sibling(-1)),
        "the previous sibling ‹",
    )
    .footer(&[(Screens::SELECT, "branch")]),
    bind(
        Select,
        &[key(KeyCode::Right), ch('l')],
        Action::Tree(T::Sibling(1)),
        "the next sibling ›",
    )
    .footer(&[(Screens::SELECT, "branch")]),
    bind(
        Select,
        &[ch('f')],
        Action::Tree(T::Fork),
        "fork: a new saved conversation up to here",
    )
    .footer(&[(Screens::SELECT, "fork")]),
    bind(
        Select,
        &[ch('d'), key(KeyCode::Delete)],
        Action::Tree(T::Delete),
        "delete it and what follows it (asks first)",
    )
    .footer(&[(Screens::SELECT, "delete")]),
    bind(
        Select,
        &[key(ESC), ch('q')],
        Action::Tree(T::Cancel),
        "back to the editor",
    )
    .footer(&[(Screens::SELECT, "back")]),
    bind(Select, &[key(KeyCode::PageUp)], Action::PageUp, "scroll up"),
    bind(
        Select,
        &[key(KeyCode::PageDown)],
        Action::PageDown,
        "scroll down",
    ),
    bind(
        SelectDelete,
        &[Combo::Typed('y'), Combo::Typed('Y')],
        Action::Tree(T::ConfirmDelete),
        "delete the message and what follows it",
    )
    .footer(&[(Screens::SELECT_DELETE, "delete")]),
    bind(
        SelectDelete,
        &[Combo::Typed('n'), key(ESC), Combo::Any],
        Action::Tree(T::Cancel),
        "keep it",
    )
    .footer(&[(Screens::SELECT_DELETE, "keep")]),
    // This help.
    bind(
        Help,
        &[key(ESC), key(ENTER), key(KeyCode::F(1)), ch('?'), ch('q')],
        Action::CloseOverlay,
        "close the help",
    )
    .footer(&[(Screens::HELP, "close help")]),
    bind(Help, &[key(UP)], Action::HelpScroll(-1), "scroll up")
        .footer(&[(Screens::HELP, "scroll")]),
    bind(Help, &[key(DOWN)], Action::HelpScroll(1), "scroll down")
        .footer(&[(Screens::HELP, "scroll")]),
    bind(
        Help,
        &[key(KeyCode::PageUp)],
        Action::HelpPage(-1),
        "page up",
    ),
    bind(
        Help,
        &[key(KeyCode::PageDown)],
        Action::HelpPage(1),
        "page down",
    ),
];
