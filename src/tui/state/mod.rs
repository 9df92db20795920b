//! Everything the TUI shows, in one value. `update` changes it; `ui::render` draws it.
//! One file per concern: the conversation, the editor, the model, live stats, the picker,
//! the settings, the saved session, and (here) the phase of the turn, the scroll position and
//! which overlay is open.

pub mod attachments;
pub mod branches;
pub mod conversation;
pub mod input;
pub mod model;
pub mod picker;
pub mod select;
pub mod session;
pub mod settings;
pub mod stats;
pub mod tools;

pub use conversation::{
    Answer, AnswerStatus, Conversation, Entry, EntryBody, NoticeLevel, ToolOutcome, TurnSettings,
};
pub use input::InputState;
pub use model::{Download, Loading, ModelState};
pub use picker::{ModelEntry, PickerState};
pub use select::{Editing, Selection};
pub use session::{ListMode, SessionState, SessionsList};
pub use settings::{Field, Settings, SettingsForm};
pub use stats::{LiveStats, TurnPhase, TurnStats};
pub use tools::{CallStep, CurrentCall, ToolRun, ToolsState};

use std::path::PathBuf;
use std::time::Instant;

/// What covers the chat, if anything. Keys go to the overlay when one is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overlay {
    #[default]
    None,
    Picker,
    Help,
    Settings,
    /// The saved conversations (Ctrl+O).
    Sessions,
}

/// Whether a turn is running. The one answer to "is the model answering?"; the stats of the
/// turn (`LiveStats::turn`) are figures, not this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Phase {
    #[default]
    Idle,
    /// A generation was asked for and has not finished, failed or been stopped.
    Answering { turn_id: u64 },
    /// An answer called tools: a call waits for approval or runs (`State::tools.run`).
    Tools,
}

impl Phase {
    /// The running turn, if any.
    pub fn turn_id(self) -> Option<u64> {
        match self {
            Phase::Idle | Phase::Tools => None,
            Phase::Answering { turn_id } => Some(turn_id),
        }
    }
}

/// The chat pane's scroll position. Following means the newest line is always in view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scroll {
    pub follow: bool,
    /// The first line shown, when not following.
    pub top: usize,
}

impl Default for Scroll {
    fn default() -> Self {
        Self {
            follow: true,
            top: 0,
        }
    }
}

/// What the last frame drew of the chat pane; scrolling needs it, and only the renderer
/// knows how many lines the wrapped conversation takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Viewport {
    pub total_lines: usize,
    pub height: usize,
}

#[derive(Debug, Clone)]
pub struct State {
    /// The time of the message being handled; the only clock `update` and rendering see.
    pub now: Instant,
    pub phase: Phase,
    pub overlay: Overlay,
    /// The first line of the help overlay shown (it scrolls when taller than the screen).
    pub help_top: usize,
    pub conversation: Conversation,
    pub input: InputState,
    /// The files the message being written brings in.
    pub attachments: attachments::Attachments,
    pub model: ModelState,
    pub stats: LiveStats,
    pub picker: PickerState,
    pub settings: Settings,
    pub form: SettingsForm,
    /// The file this conversation is saved in.
    pub session: SessionState,
    pub sessions: SessionsList,
    /// The code blocks Alt+Y cycles through: (how many there were, the one copied last).
    pub code_cursor: Option<(usize, usize)>,
    pub scroll: Scroll,
    pub viewport: Viewport,
    /// Show the text inside `<think>…</think>` instead of a one-line fold.
    pub show_thinking: bool,
    /// Tool results shown whole; folded to one line otherwise.
    pub show_tool_results: bool,
    /// The mouse is reported to taper (the wheel scrolls); off, the terminal has it and
    /// selects text (Alt+M).
    pub mouse_captured: bool,
    /// Message selection, when on: keys move between messages and act on the one selected.
    pub select: Option<Selection>,
    /// An earlier message being edited in the editor.
    pub editing: Option<Editing>,
    /// The MCP servers' tools and the tool loop.
    pub tools: ToolsState,
    /// A one-line hint about the last key (e.g. "pick a model first"); cleared by the next.
    pub status: Option<String>,
    /// The KV-cache size asked of every load.
    pub context_size: usize,
    /// The KV cache's number format models are loaded with.
    pub cache_type: crate::protocol::CacheType,
    /// Models kept loaded at most, so that switching back to one costs no load.
    pub keep_loaded: usize,
    /// False once the engine thread has gone; nothing more can be generated.
    pub engine_alive: bool,
    pub quit: bool,
    last_turn_id: u64,
}

impl State {
    pub fn new(settings: Settings, context_size: usize, models_dir: PathBuf, now: Instant) -> Self {
        Self {
            now,
            phase: Phase::Idle,
            overlay: Overlay::None,
            help_top: 0,
            conversation: Conversation::default(),
            input: InputState::default(),
            attachments: Default::default(),
            model: ModelState::default(),
            stats: LiveStats::default(),
            picker: PickerState {
                scanning: true,
                models_dir,
                ..PickerState::default()
            },
            settings,
            form: SettingsForm::default(),
            session: SessionState::new(
                crate::sessions::sessions_dir(),
                now,
                crate::sessions::time::now_s(),
            ),
            sessions: SessionsList::default(),
            code_cursor: None,
            scroll: Scroll::default(),
            viewport: Viewport::default(),
            show_thinking: false,
            show_tool_results: false,
            mouse_captured: true,
            select: None,
            editing: None,
            tools: ToolsState::default(),
            status: None,
            context_size,
            cache_type: Default::default(),
            keep_loaded: crate::config::DEFAULT_KEEP_LOADED,
            engine_alive: true,
            quit: false,
            last_turn_id: 0,
        }
    }

    /// A fresh turn id; every generation gets its own.
    pub fn next_turn_id(&mut self) -> u64 {
        self.last_turn_id += 1;
        self.last_turn_id
    }

    /// An answer is being generated (or read from the prompt), or its tools called.
    pub fn generating(&self) -> bool {
        matches!(self.phase, Phase::Answering { .. } | Phase::Tools)
    }

    /// Something is running that changes the screen without events: a load or a generation.
    /// The app redraws a few times a second then (elapsed times, spinner), and never otherwise.
    pub fn busy(&self) -> bool {
        self.generating() || self.model.loading.is_some() || self.model.download.is_some()
    }
}
