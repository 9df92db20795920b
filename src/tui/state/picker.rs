//! The model picker: every local model with what its header says, filtered as the user types.

use crate::tui::line_edit::{self, Cut};
use std::path::PathBuf;

/// A model file the picker offers, described from its GGUF header alone (read in the
/// background: see `tui::scan`).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelEntry {
    pub path: PathBuf,
    /// The file name without `.gguf`, or the config's name for a user model.
    pub name: String,
    pub architecture: String,
    pub quantization: String,
    pub file_size: u64,
    pub parameters: u64,
    /// A tokenizer.json and chat template from the config file, for user models.
    pub tokenizer: Option<PathBuf>,
    pub chat_template: Option<String>,
    /// Why the header could not be read; the entry is still listed (and loading it explains).
    pub problem: Option<String>,
    /// A catalogue model not downloaded yet: choosing it downloads it first.
    pub download: Option<crate::hub::HubFile>,
    /// A remote server's model (`name` is `NAME/MODEL`); choosing it connects to it. An
    /// unreachable remote is listed with architecture `remote`, no target and its problem.
    pub remote: Option<crate::remote::RemoteTarget>,
    /// The smaller model that drafts for it (`--speculative draft`): the flag's for the model
    /// the chat starts with, else its pair under `[draft_models]` in the config.
    pub draft: Option<PathBuf>,
}

impl ModelEntry {
    /// An entry known only by its path (a `-m` argument before the scan finishes).
    pub fn from_path(path: PathBuf) -> Self {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        Self {
            path,
            name,
            architecture: String::new(),
            quantization: String::new(),
            file_size: 0,
            parameters: 0,
            tokenizer: None,
            chat_template: None,
            problem: None,
            download: None,
            remote: None,
            draft: None,
        }
    }

    /// A remote listed as unreachable (choosing it lists the remotes again).
    pub fn is_unreachable_remote(&self) -> bool {
        self.remote.is_none() && self.architecture == REMOTE
    }
}

/// The architecture column of remote entries.
pub const REMOTE: &str = "remote";

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PickerState {
    pub entries: Vec<ModelEntry>,
    /// The remotes' models (and unreachable remotes), listed after the local ones; they
    /// arrive on their own, so a slow remote never holds the local models back.
    pub remotes: Vec<ModelEntry>,
    pub filter: String,
    /// Index into [`PickerState::visible`].
    pub selected: usize,
    /// True until the first scan of the models directory has answered.
    pub scanning: bool,
    /// Where models are looked for, to say so when there are none.
    pub models_dir: PathBuf,
    /// The user moved the selection or typed a filter since the picker opened: listings
    /// that arrive later keep the selection on the model chosen, not on an index.
    pub touched: bool,
}

impl PickerState {
    /// Entries matching every word of the filter (in name, architecture or quantization).
    pub fn visible(&self) -> Vec<&ModelEntry> {
        let words: Vec<String> = self
            .filter
            .split_whitespace()
            .map(str::to_lowercase)
            .collect();
        self.entries
            .iter()
            .chain(&self.remotes)
            .filter(|e| {
                let where_ = if e.download.is_some() {
                    "download"
                } else if e.architecture == REMOTE {
                    "remote"
                } else {
                    "local"
                };
                let haystack = format!("{} {} {} {where_}", e.name, e.architecture, e.quantization)
                    .to_lowercase();
                words.iter().all(|w| haystack.contains(w.as_str()))
            })
            .collect()
    }

    pub fn selected_entry(&self) -> Option<&ModelEntry> {
        self.visible().get(self.selected).copied()
    }

    /// The local scan arrived. Until the user moves, the selection is the first model, a
    /// local one: a remote's listing that came first does not keep it (Enter would chat with
    /// a server instead of the file).
    pub fn set_entries(&mut self, entries: Vec<ModelEntry>) {
        let keep = self.selected_entry().map(|e| e.path.clone());
        self.entries = entries;
        self.scanning = false;
        self.selected = keep
            .filter(|_| self.touched)
            .and_then(|p| self.visible().iter().position(|e| e.path == p))
            .unwrap_or(0);
    }

    /// The remotes' listing arrived; the selection stays on the same model.
    pub fn set_remotes(&mut self, remotes: Vec<ModelEntry>) {
        let keep = self.selected_entry().map(|e| e.path.clone());
        self.remotes = remotes;
        self.selected = keep
            .and_then(|p| self.visible().iter().position(|e| e.path == p))
            .unwrap_or(self.selected);
        self.move_selection(0);
    }

    /// The picker opens: no filter, the first model selected.
    pub fn open(&mut self) {
        self.filter.clear();
        self.selected = 0;
        self.touched = false;
    }

    pub fn push_filter(&mut self, c: char) {
        self.filter.push(c);
        self.selected = 0;
        self.touched = true;
    }

    pub fn pop_filter(&mut self) {
        self.cut_filter(Cut::Char);
    }

    /// Backspace, Ctrl+W or Ctrl+U in the filter.
    pub fn cut_filter(&mut self, cut: Cut) {
        line_edit::cut(&mut self.filter, cut);
        self.selected = 0;
        self.touched = true;
    }

    /// Moves the selection by `delta` (0: keeps it in range).
    pub fn move_selection(&mut self, delta: isize) {
        self.touched |= delta != 0;
        let n = self.visible().len();
        if n == 0 {
            self.selected = 0;
            return;
        }
        self.selected = (self.selected as isize + delta).clamp(0, n as isize - 1) as usize;
    }
}
