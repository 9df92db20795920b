//! What flows between the pure `update` and the app's effect runner: the messages `update`
//! takes ([`Msg`]: keys, engine events, and the results of effects) and the effects it asks
//! for ([`Effect`]: everything that touches the engine, files, the clipboard, the terminal or
//! a source of randomness). A leaf: it knows the state's types and nothing else of the TUI.

use super::state::ModelEntry;
use crate::engine::EngineCommand;
use crate::mcp::{OfferedTool, ToolEvent};
use crate::protocol::EngineEvent;
use crate::sessions::{Listed, Session};
use crossterm::event::KeyEvent;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq)]
pub enum Msg {
    /// The app has started: load this model (`-m`), or open the picker without one.
    Start(Option<ModelEntry>),
    Key(KeyEvent),
    /// Bracketed paste: the text as typed, never sent by its newlines.
    Paste(String),
    /// Mouse wheel: negative scrolls up (towards older lines).
    Wheel(i32),
    Resize,
    Engine(EngineEvent),
    /// The engine thread is gone (its channel closed, or a command could not be sent).
    EngineStopped,
    /// The models directory was scanned.
    Models(Vec<ModelEntry>),
    /// The remotes were asked for their models (unreachable ones are entries with a problem).
    RemoteModels(Vec<ModelEntry>),
    /// Load this model.
    Load(ModelEntry),
    /// A model file's header was read ([`Effect::ReadHeader`]).
    HeaderRead(ModelEntry),
    Memory {
        rss: Option<u64>,
        peak: Option<u64>,
    },
    /// Time passes (elapsed-time displays while busy).
    Tick,
    /// Bytes of the running download so far.
    DownloadProgress {
        done: u64,
        total: u64,
    },
    /// The download finished: the file to load.
    Downloaded(PathBuf),
    /// The download failed or was cancelled; the sentence to show.
    DownloadFailed(String),
    /// What came of a session effect.
    Session(SessionMsg),
    /// The clipboard could not be written; why.
    CopyFailed(String),
    /// The MCP servers: one ready or failed, a call's result.
    Tool(ToolEvent),
    /// The tools the ready servers offer now.
    ToolsOffered(Vec<OfferedTool>),
    /// A file the message mentions was read ([`Effect::ReadFile`]).
    FileRead {
        path: String,
        result: Result<String, crate::tui::files::NotText>,
    },
    /// The directory entries that could complete the path `typed` ([`Effect::ListPaths`]),
    /// with whether each is a directory.
    PathsListed {
        typed: String,
        candidates: Vec<(String, bool)>,
    },
}

/// What the app must do after an update.
#[derive(Debug, Clone)]
pub enum Effect {
    Send(EngineCommand),
    /// `EngineHandle::cancel(turn_id)`: stop that generation before its next token.
    Cancel(u64),
    /// Re-read the models directory (in the background) and send `Msg::Models`; ask the
    /// remotes for their models (in the background too) and send `Msg::RemoteModels`.
    ScanModels,
    /// Read a model file's header (in the background: it is file I/O) and send
    /// `Msg::HeaderRead`.
    ReadHeader(PathBuf),
    /// Clear the terminal and draw the whole screen again.
    Redraw,
    /// Give the terminal back and stop as a shell job (SIGTSTP); when continued, take it
    /// again and draw the whole screen.
    Suspend,
    /// Report the mouse to taper (true: the wheel scrolls) or leave it to the terminal
    /// (false: it selects text).
    MouseCapture(bool),
    /// Download a hub file in the background, reporting `Msg::Download*`.
    Download(crate::hub::HubFile),
    /// Stop the running download (its partial file is resumed next time).
    CancelDownload,
    /// Session files and ids.
    Session(SessionEffect),
    /// Put this text on the clipboard (OSC 52); `Msg::CopyFailed` if it cannot be.
    Copy(String),
    /// Run an MCP tool (`ToolHost::call`); `Msg::Tool(CallDone)` reports it.
    CallTool {
        call_id: String,
        name: String,
        arguments: String,
    },
    /// Cancel a running call (`ToolHost::cancel`).
    CancelTool(String),
    /// Read a file the message mentions, as text (in the background), and send
    /// `Msg::FileRead`.
    ReadFile(String),
    /// List the directory entries that could complete a typed path; `Msg::PathsListed`.
    ListPaths(String),
}

/// Session work for the app: file operations, and the random part of new session ids.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEffect {
    Save {
        dir: PathBuf,
        session: Box<Session>,
    },
    List(PathBuf),
    Open(PathBuf),
    Rename {
        path: PathBuf,
        title: String,
    },
    Delete(PathBuf),
    Export {
        path: PathBuf,
        markdown: String,
    },
    /// Draw the random tag of the next new session id (`SessionMsg::Tag`).
    DrawTag,
}

/// What came of a [`SessionEffect`].
#[derive(Debug, Clone, PartialEq)]
pub enum SessionMsg {
    SaveFailed(String),
    Listed(Vec<Listed>),
    Opened(Result<(PathBuf, Box<Session>), String>),
    /// A rename or delete: what to say, and the directory as it now is.
    Changed {
        status: String,
        entries: Vec<Listed>,
    },
    Exported(Result<PathBuf, String>),
    /// A fresh random tag for the next new session id.
    Tag(u16),
}
