//! The TUI's one loop, on a current-thread tokio runtime: `select!` over terminal input,
//! the engine's events, model scans, signals and a frame timer. Everything pending is handled
//! before drawing, and a frame is drawn at most every `frame` interval, only when something
//! changed. While an answer streams, the engine's channel is drained once a frame instead of
//! waking the loop for every token. Idle, the loop sleeps until input arrives; it never waits
//! on the model.

use super::scan::{self, ModelSources};
use super::state::{ModelEntry, State};
use super::terminal::{self, TerminalGuard};
use super::ui::{self, ChatCache};
use super::update::{update, Effect, Msg};
use crate::engine::{EngineEvent, EngineHandle};
use crate::stats;
use anyhow::{Context, Result};
use crossterm::event::{Event, EventStream, KeyEventKind, MouseEventKind};
use futures_util::StreamExt;
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use std::io::stdout;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tokio::time::sleep_until;

/// While loading or answering without events (elapsed times, spinner), redraw this often.
const BUSY_REFRESH: Duration = Duration::from_millis(250);
/// Process memory is read at most this often (it costs a /proc read).
const MEMORY_EVERY: Duration = Duration::from_millis(500);
/// Download progress is reported at most this often.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// The running download's way back into the loop, and its stop flag.
struct Downloads {
    messages: UnboundedSender<Msg>,
    cancel: Arc<AtomicBool>,
}

/// What the loop needs besides the state.
pub struct AppConfig {
    pub state: State,
    /// Load this at start (else the picker opens).
    pub model: Option<ModelEntry>,
    pub sources: ModelSources,
    /// Shortest time between two frames.
    pub frame: Duration,
    /// Where stderr goes while the screen is up.
    pub log: std::path::PathBuf,
}

pub async fn run(config: AppConfig) -> Result<()> {
    let AppConfig {
        mut state,
        model,
        sources,
        frame,
        log,
    } = config;
    let mut engine = EngineHandle::spawn().context("cannot start the engine")?;
    let (scan_tx, mut scans) = unbounded_channel();
    let (download_tx, mut download_msgs) = unbounded_channel();
    let downloads = Downloads {
        messages: download_tx,
        cancel: Arc::new(AtomicBool::new(false)),
    };
    let mut terminate = signal(SignalKind::terminate()).context("cannot watch SIGTERM")?;
    let mut hangup = signal(SignalKind::hangup()).context("cannot watch SIGHUP")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot watch SIGINT")?;

    let _guard = TerminalGuard::enter(&log)?;
    let mut terminal =
        Terminal::new(CrosstermBackend::new(stdout())).context("cannot draw on the terminal")?;
    terminal.clear()?;
    let mut input = EventStream::new();
    let mut cache = ChatCache::default();

    let mut effects = vec![Effect::ScanModels];
    let now = Instant::now();
    match model {
        Some(entry) => effects.extend(update(&mut state, Msg::Load(entry), now)),
        None => state.overlay = super::state::Overlay::Picker,
    }
    let mut dirty = true;
    let mut last_draw: Option<Instant> = None;
    let mut last_tick: Option<Instant> = None;
    let mut last_memory: Option<Instant> = None;
    let mut engine_open = true;

    loop {
        // Effects can answer with a message whose update has effects of its own.
        while !effects.is_empty() {
            for effect in std::mem::take(&mut effects) {
                match effect {
                    Effect::Redraw => {
                        terminal.clear()?;
                        dirty = true;
                    }
                    Effect::Copy(text) => {
                        // Through ratatui's own writer, between frames.
                        let copied = terminal::copy_to_clipboard(terminal.backend_mut(), &text);
                        if let Err(e) = copied {
                            state.status = Some(format!("Could not copy: {e}"));
                            dirty = true;
                        }
                    }
                    effect => {
                        if let Some(msg) =
                            carry_out(effect, &engine, &sources, &scan_tx, &downloads)
                        {
                            effects.extend(update(&mut state, msg, Instant::now()));
                            dirty = true;
                        }
                    }
                }
            }
        }
        if state.quit {
            break;
        }
        let now = Instant::now();
        let due = last_draw.is_none_or(|t| now >= t + frame);
        if dirty && due {
            if last_memory.is_none_or(|t| now >= t + MEMORY_EVERY) {
                last_memory = Some(now);
                let msg = Msg::Memory {
                    rss: stats::current_rss_bytes(),
                    peak: stats::peak_rss_bytes(),
                };
                update(&mut state, msg, now);
            }
            terminal.draw(|f| state.viewport = ui::render(f, &state, &mut cache))?;
            last_draw = Some(now);
            dirty = false;
            // The end-to-end test of the panic path: the terminal must be restored first.
            if std::env::var_os("TAPER_TEST_PANIC").is_some() {
                panic!("TAPER_TEST_PANIC is set: panicking on purpose");
            }
        }
        // While an answer streams, its tokens are collected once a frame rather than waking
        // the loop for each: every wake-up can pre-empt one of the model's spinning threads.
        let polling = state.generating() && engine_open;
        // Wake for the next frame when there is something to draw or to collect, or to
        // refresh elapsed times while busy; otherwise only input or events wake the loop.
        let since = last_draw.max(last_tick).unwrap_or(now);
        let wake = if dirty || polling {
            Some(since + frame)
        } else if state.busy() {
            Some(since + BUSY_REFRESH.max(frame))
        } else {
            None
        };
        let msg = tokio::select! {
            event = input.next() => match event {
                Some(Ok(event)) => terminal_msg(event),
                Some(Err(e)) => return Err(e).context("cannot read the terminal"),
                None => break,
            },
            event = engine.events.recv(), if engine_open && !polling => match event {
                Some(event) => Some(Msg::Engine(event)),
                None => {
                    engine_open = false;
                    Some(Msg::EngineStopped)
                }
            },
            Some(entries) = scans.recv() => Some(Msg::Models(entries)),
            Some(msg) = download_msgs.recv() => Some(msg),
            _ = terminate.recv() => break,
            _ = hangup.recv() => break,
            _ = interrupt.recv() => break,
            _ = sleep_until(wake.unwrap_or(now).into()), if wake.is_some() => {
                let now = Instant::now();
                last_tick = Some(now);
                // Elapsed times and the spinner move a few times a second; tokens collected
                // below mark the frame dirty themselves.
                let refresh = !polling || last_draw.is_none_or(|t| now >= t + BUSY_REFRESH);
                refresh.then_some(Msg::Tick)
            }
        };
        if let Some(msg) = msg {
            dirty = true;
            // Memory changes most when a model loads or an answer ends: read it next frame.
            if matches!(msg, Msg::Engine(ref e) if !matches!(e, EngineEvent::Token { .. })) {
                last_memory = None;
            }
            effects.extend(update(&mut state, msg, Instant::now()));
        }
        // Drain what else the engine has sent, so a burst of tokens costs one frame.
        while engine_open {
            match engine.events.try_recv() {
                Ok(event) => {
                    dirty = true;
                    if !matches!(event, EngineEvent::Token { .. }) {
                        last_memory = None;
                    }
                    effects.extend(update(&mut state, Msg::Engine(event), Instant::now()));
                }
                Err(tokio::sync::mpsc::error::TryRecvError::Empty) => break,
                Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => {
                    engine_open = false;
                    dirty = true;
                    effects.extend(update(&mut state, Msg::EngineStopped, Instant::now()));
                }
            }
        }
    }
    // The guard restores the terminal as it drops; dropping the engine handle cancels any
    // generation and asks the worker to stop. A load in progress is not waited for: the
    // process exits and takes the worker thread with it.
    drop(terminal);
    Ok(())
}

/// Crossterm events as messages; presses only (releases come with enhanced keyboards).
fn terminal_msg(event: Event) -> Option<Msg> {
    match event {
        Event::Key(key) if key.kind != KeyEventKind::Release => Some(Msg::Key(key)),
        Event::Paste(text) => Some(Msg::Paste(text)),
        Event::Mouse(mouse) => match mouse.kind {
            MouseEventKind::ScrollUp => Some(Msg::Wheel(-1)),
            MouseEventKind::ScrollDown => Some(Msg::Wheel(1)),
            _ => None,
        },
        Event::Resize(..) => Some(Msg::Resize),
        _ => None,
    }
}

/// Carries out one effect; a message comes back when the engine could not be reached.
fn carry_out(
    effect: Effect,
    engine: &EngineHandle,
    sources: &ModelSources,
    scans: &UnboundedSender<Vec<ModelEntry>>,
    downloads: &Downloads,
) -> Option<Msg> {
    match effect {
        Effect::Send(command) => engine.send(command).err().map(|_| Msg::EngineStopped),
        Effect::Cancel(turn_id) => {
            engine.cancel(turn_id);
            None
        }
        Effect::Redraw | Effect::Copy(_) => None,
        // Session files are small: saved right away, so a quit right after loses nothing.
        Effect::Session(effect) => super::sessions::perform(effect),
        Effect::ScanModels => {
            let (sources, tx) = (sources.clone(), scans.clone());
            // Header reads are quick but are file I/O: never on the UI thread.
            let spawned = std::thread::Builder::new()
                .name("taper-scan".into())
                .spawn(move || {
                    let _ = tx.send(scan::scan(&sources));
                });
            if spawned.is_err() {
                let _ = scans.send(Vec::new());
            }
            None
        }
        Effect::CancelDownload => {
            downloads.cancel.store(true, Ordering::SeqCst);
            None
        }
        Effect::Download(file) => {
            downloads.cancel.store(false, Ordering::SeqCst);
            let (hub, tx, cancel) = (
                sources.hub.clone(),
                downloads.messages.clone(),
                downloads.cancel.clone(),
            );
            let spawned = std::thread::Builder::new()
                .name("taper-download".into())
                .spawn(move || {
                    let mut last = Instant::now();
                    let result = crate::hub::download(&hub, &file, &cancel, |done, total| {
                        if last.elapsed() >= PROGRESS_EVERY || done == total {
                            last = Instant::now();
                            let _ = tx.send(Msg::DownloadProgress { done, total });
                        }
                    });
                    let _ = tx.send(match result {
                        Ok(path) => Msg::Downloaded(path),
                        Err(e) => Msg::DownloadFailed(e.to_string()),
                    });
                });
            spawned
                .err()
                .map(|e| Msg::DownloadFailed(format!("cannot start the download: {e}")))
        }
    }
}
