//! The effect runner: carries out what `update` asks for. Engine commands go to the worker;
//! model scans, header reads and downloads run on threads of their own (they are file and
//! network I/O, never done on the UI thread) and report back as messages on one channel, and
//! so does the sessions listing (it reads every file); session files are written at once
//! (`files`); tool calls go to the MCP servers' host, which
//! answers on the loop's channel too. The terminal's own effects (clear, clipboard, suspend,
//! mouse capture) are the loop's, which owns the terminal.

use super::files as session_files;
use crate::engine::EngineHandle;
use crate::mcp::{ToolEvent, ToolHost, ToolResult};
use crate::sessions::store;
use crate::tui::files;
use crate::tui::msg::{Effect, Msg, SessionEffect, SessionMsg};
use crate::tui::scan::{self, ModelSources};
use crate::tui::state::ModelEntry;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedSender;

/// Download progress is reported at most this often.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// What the runner needs besides the effect.
pub struct Runner {
    pub engine: EngineHandle,
    pub sources: ModelSources,
    /// Where background work sends its messages.
    pub background: UnboundedSender<Msg>,
    /// The running download's stop flag.
    pub cancel_download: Arc<AtomicBool>,
    /// The MCP servers, when the config names any.
    pub tools: Option<ToolHost>,
}

impl Runner {
    /// Carries out one effect (not the terminal's); a message comes back at once when the
    /// effect has an immediate answer (a failed send, a session file, a thread not started).
    pub fn carry_out(&self, effect: Effect) -> Option<Msg> {
        match effect {
            Effect::Send(command) => self.engine.send(command).err().map(|_| Msg::EngineStopped),
            Effect::Cancel(turn_id) => {
                self.engine.cancel(turn_id);
                None
            }
            Effect::Redraw | Effect::Suspend | Effect::MouseCapture(_) | Effect::Copy(_) => None,
            Effect::Session(SessionEffect::List(dir)) => {
                let inline = dir.clone();
                let spawned = self.spawn("taper-sessions", move || {
                    Msg::Session(SessionMsg::Listed(store::list(&dir)))
                });
                // No thread: read the list here rather than never.
                spawned
                    .err()
                    .and_then(|_| session_files::perform(SessionEffect::List(inline)))
            }
            Effect::Session(effect) => session_files::perform(effect),
            Effect::ScanModels => {
                let sources = self.sources.clone();
                if !sources.config.remotes.is_empty() {
                    let remote_sources = sources.clone();
                    // No thread, no listing: the remotes are simply not offered this time.
                    let _ = self.spawn("taper-remotes", move || {
                        Msg::RemoteModels(scan::remotes(&remote_sources))
                    });
                }
                let spawned = self.spawn("taper-scan", move || Msg::Models(scan::scan(&sources)));
                // No thread, no scan: the picker says there are no models rather than wait.
                spawned.err().map(|_| Msg::Models(Vec::new()))
            }
            Effect::ReadHeader(path) => {
                let known = ModelEntry::from_path(path.clone());
                let spawned = self.spawn("taper-header", move || {
                    Msg::HeaderRead(scan::describe(&path))
                });
                // Without a thread the file still loads by its path (the engine reads the
                // header then, and says what is wrong with it).
                spawned.err().map(|_| Msg::HeaderRead(known))
            }
            Effect::CancelDownload => {
                self.cancel_download.store(true, Ordering::SeqCst);
                None
            }
            Effect::Download(file) => self.download(file),
            Effect::CallTool {
                call_id,
                name,
                arguments,
            } => match &self.tools {
                Some(host) => {
                    host.call(&call_id, &name, &arguments);
                    None
                }
                None => Some(Msg::Tool(ToolEvent::CallDone {
                    call_id,
                    result: ToolResult::failure("No MCP server is running.", Duration::ZERO),
                })),
            },
            Effect::ReadFile(path) => {
                let inline = path.clone();
                let read = move |path: String| {
                    let result = files::read_text(&files::resolve(&path));
                    Msg::FileRead { path, result }
                };
                let spawned = self.spawn("taper-file", move || read(path));
                // No thread: read it here rather than never (files are at most a few MB).
                spawned.err().map(|_| read(inline))
            }
            Effect::ListPaths(typed) => {
                let candidates = files::list_candidates(&typed);
                Some(Msg::PathsListed { typed, candidates })
            }
            Effect::CancelTool(call_id) => {
                if let Some(host) = &self.tools {
                    host.cancel(&call_id);
                }
                None
            }
        }
    }

    /// Runs `job` on a named thread and sends its message back to the loop.
    fn spawn(&self, name: &str, job: impl FnOnce() -> Msg + Send + 'static) -> std::io::Result<()> {
        let tx = self.background.clone();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let _ = tx.send(job());
            })
            .map(|_| ())
    }

    fn download(&self, file: crate::hub::HubFile) -> Option<Msg> {
        self.cancel_download.store(false, Ordering::SeqCst);
        let (hub, cancel) = (self.sources.hub.clone(), self.cancel_download.clone());
        let progress = self.background.clone();
        let spawned = self.spawn("taper-download", move || {
            let mut last = Instant::now();
            let result = crate::hub::download(&hub, &file, &cancel, |done, total| {
                if last.elapsed() >= PROGRESS_EVERY || done == total {
                    last = Instant::now();
                    let _ = progress.send(Msg::DownloadProgress { done, total });
                }
            });
            match result {
                Ok(path) => Msg::Downloaded(path),
                Err(e) => Msg::DownloadFailed(e.to_string()),
            }
        });
        spawned
            .err()
            .map(|e| Msg::DownloadFailed(format!("cannot start the download: {e}")))
    }
}
