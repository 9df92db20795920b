//! The conversation's saved record (which file, its id and title, when each message was
//! written) and the sessions overlay (the list filtered as the user types, and a rename or a
//! delete being confirmed).

use crate::sessions::search::filter_matches;
use crate::sessions::{Listed, Session};
use crate::tui::line_edit::{self, Cut};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

/// What ties the conversation on screen to its file.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionState {
    /// Where sessions are saved: `<data dir>/sessions`.
    pub dir: PathBuf,
    /// Given at the first save; a new conversation gets a new one.
    pub id: Option<String>,
    /// Empty: the first question is the title.
    pub title: String,
    pub created_at: Option<u64>,
    /// Entry id -> when it was first saved (seconds since the epoch): messages keep their time.
    pub times: HashMap<u64, u64>,
    /// The record last handed out for saving; an identical one is not written again (so
    /// quitting after a save, or resuming and leaving, does not touch the file).
    pub last_saved: Option<Box<Session>>,
    /// `update` sees only `Instant`s; wall-clock times are this origin plus their distance.
    pub clock: (Instant, u64),
    /// The random part of the next new session id. `update` draws nothing itself: the app
    /// draws a tag ahead (`SessionEffect::DrawTag`), so a first save never waits for one.
    pub next_tag: Option<u16>,
}

impl SessionState {
    pub fn new(dir: PathBuf, now: Instant, wall_s: u64) -> Self {
        Self {
            dir,
            id: None,
            title: String::new(),
            created_at: None,
            times: HashMap::new(),
            last_saved: None,
            clock: (now, wall_s),
            next_tag: None,
        }
    }

    /// Seconds since the epoch at `now`.
    pub fn wall_s(&self, now: Instant) -> u64 {
        self.clock.1 + now.saturating_duration_since(self.clock.0).as_secs()
    }

    /// Forgets the file: the next save starts a new session.
    pub fn reset(&mut self) {
        self.id = None;
        self.title.clear();
        self.created_at = None;
        self.times.clear();
        self.last_saved = None;
    }

    /// The file this conversation is saved in, once it has an id.
    pub fn path(&self) -> Option<PathBuf> {
        self.id
            .as_ref()
            .map(|id| crate::sessions::store::path_of(&self.dir, id))
    }
}

/// What the sessions overlay is doing.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum ListMode {
    #[default]
    Browse,
    /// Editing the selected session's title.
    Rename(String),
    /// Waiting for y/n before deleting the selected session's file.
    ConfirmDelete,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionsList {
    pub entries: Vec<Listed>,
    /// The directory is being read.
    pub loading: bool,
    /// What the user typed: only sessions whose title or text contain it are shown.
    pub filter: String,
    /// Index into [`SessionsList::visible`].
    pub selected: usize,
    pub mode: ListMode,
}

impl SessionsList {
    /// The entries the filter lets through, newest first; a file that cannot be read has no
    /// text to match, so it shows only while the filter is empty.
    pub fn visible(&self) -> Vec<&Listed> {
        self.entries
            .iter()
            .filter(|l| match &l.summary {
                Ok(summary) => filter_matches(&summary.text, &self.filter),
                Err(_) => self.filter.is_empty(),
            })
            .collect()
    }

    pub fn selected_entry(&self) -> Option<&Listed> {
        self.visible().get(self.selected).copied()
    }

    pub fn move_selection(&mut self, delta: isize) {
        let n = self.visible().len();
        if n == 0 {
            self.selected = 0;
            return;
        }
        self.selected = (self.selected as isize + delta).rem_euclid(n as isize) as usize;
    }

    pub fn set_entries(&mut self, entries: Vec<Listed>) {
        self.entries = entries;
        self.loading = false;
        self.selected = self.selected.min(self.visible().len().saturating_sub(1));
    }

    /// A longer filter: the selection goes to the first match.
    pub fn push_filter(&mut self, text: &str) {
        self.filter.push_str(text);
        self.selected = 0;
    }

    /// A shorter filter shows more.
    pub fn pop_filter(&mut self) {
        self.cut_filter(Cut::Char);
    }

    /// Backspace, Ctrl+W or Ctrl+U in the filter: the selected session stays selected.
    pub fn cut_filter(&mut self, cut: Cut) {
        let keep = self.selected_entry().map(|l| l.path.clone());
        line_edit::cut(&mut self.filter, cut);
        self.selected = keep
            .and_then(|p| self.visible().iter().position(|l| l.path == p))
            .unwrap_or(0);
    }
}
