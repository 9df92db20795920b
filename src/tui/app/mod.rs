//! The TUI's one loop, on a current-thread tokio runtime: `select!` over terminal input,
//! the engine's events, background work (scans, header reads, downloads), signals and a frame
//! timer. Everything pending is handled before drawing, and a frame is drawn at most every
//! `frame` interval, only when something changed. While an answer streams, the engine's
//! channel is drained once a frame instead of waking the loop for every token. Idle, the loop
//! sleeps until input arrives; it never waits on the model.
//!
//! The loop owns the state and is the only caller of `update`; the effects it returns are
//! carried out by the `runner` (and here, for the terminal's own), and their results come
//! back as messages.

pub mod files;
mod runner;

use super::msg::{Effect, Msg};
use super::scan::ModelSources;
use super::state::{ModelEntry, State};
use super::terminal::{self, TerminalGuard};
use super::ui::{self, ChatCache};
use super::update::update;
use crate::engine::EngineHandle;
use crate::mcp::{ToolEvent, ToolHost};
use crate::protocol::EngineEvent;
use crate::stats;
use anyhow::{Context, Result};
use crossterm::event::{Event, EventStream, KeyEventKind, MouseEventKind};
use futures_util::StreamExt;
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use runner::Runner;
use std::io::{stdout, Stdout};
use std::ops::ControlFlow;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::time::sleep_until;

/// While loading or answering without events (elapsed times, spinner), redraw this often.
const BUSY_REFRESH: Duration = Duration::from_millis(250);
/// Process memory is read at most this often (it costs a /proc read).
const MEMORY_EVERY: Duration = Duration::from_millis(500);

type Screen = Terminal<CrosstermBackend<Stdout>>;

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
    /// The MCP servers whose tools the model is offered.
    pub mcp: crate::mcp::McpConfig,
}

/// The loop's own state: what is waiting to be done and when it last drew.
struct App {
    state: State,
    runner: Runner,
    background: UnboundedReceiver<Msg>,
    engine_open: bool,
    effects: Vec<Effect>,
    frame: Duration,
    dirty: bool,
    last_draw: Option<Instant>,
    last_tick: Option<Instant>,
    last_memory: Option<Instant>,
    cache: ChatCache,
}

/// The signals that end the chat (the terminal is restored on the way out).
struct Signals {
    terminate: Signal,
    hangup: Signal,
    interrupt: Signal,
}

pub async fn run(config: AppConfig) -> Result<()> {
    let AppConfig {
        state,
        model,
        sources,
        frame,
        log,
        mcp,
    } = config;
    let engine = EngineHandle::spawn().context("cannot start the engine")?;
    let (tx, background) = unbounded_channel();
    let tools = start_tools(&mcp, &tx);
    let runner = Runner {
        engine,
        sources,
        background: tx,
        cancel_download: Arc::new(AtomicBool::new(false)),
        tools,
    };
    let mut signals = Signals {
        terminate: signal(SignalKind::terminate()).context("cannot watch SIGTERM")?,
        hangup: signal(SignalKind::hangup()).context("cannot watch SIGHUP")?,
        interrupt: signal(SignalKind::interrupt()).context("cannot watch SIGINT")?,
    };
    let _guard = TerminalGuard::enter(&log)?;
    let mut screen =
        Terminal::new(CrosstermBackend::new(stdout())).context("cannot draw on the terminal")?;
    screen.clear()?;
    let mut app = App {
        state,
        runner,
        background,
        engine_open: true,
        effects: Vec::new(),
        frame,
        dirty: true,
        last_draw: None,
        last_tick: None,
        last_memory: None,
        cache: ChatCache::default(),
    };
    app.handle(Msg::Start(model));
    let result = app.run(&mut screen, &mut signals).await;
    // The guard restores the terminal as it drops; dropping the engine handle cancels any
    // generation and asks the worker to stop. A load in progress is not waited for: the
    // process exits and takes the worker thread with it. The MCP servers' processes end.
    drop(screen);
    if let Some(host) = &app.runner.tools {
        host.shutdown();
    }
    result
}

/// Starts the configured MCP servers, if any; their news comes to the loop as messages
/// (with the tools offered after each change).
fn start_tools(mcp: &crate::mcp::McpConfig, loop_tx: &UnboundedSender<Msg>) -> Option<ToolHost> {
    if mcp.servers.is_empty() {
        return None;
    }
    let (host, mut events) = ToolHost::start(mcp);
    let (forward, tx) = (host.clone(), loop_tx.clone());
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            let changed = matches!(
                event,
                ToolEvent::ServerReady { .. }
                    | ToolEvent::ServerFailed { .. }
                    | ToolEvent::ToolsChanged { .. }
            );
            if tx.send(Msg::Tool(event)).is_err() {
                return;
            }
            if changed && tx.send(Msg::ToolsOffered(forward.offered())).is_err() {
                return;
            }
        }
    });
    Some(host)
}

impl App {
    async fn run(&mut self, screen: &mut Screen, signals: &mut Signals) -> Result<()> {
        let mut input = EventStream::new();
        loop {
            self.carry_out_effects(screen)?;
            if self.state.quit {
                return Ok(());
            }
            self.draw_if_due(screen)?;
            match self.next_msg(&mut input, signals).await? {
                ControlFlow::Continue(Some(msg)) => self.handle(msg),
                ControlFlow::Continue(None) => {}
                ControlFlow::Break(()) => return Ok(()),
            }
            self.drain_engine();
        }
    }

    /// Feeds `msg` to `update`; its effects wait for the next `carry_out_effects`.
    fn handle(&mut self, msg: Msg) {
        self.dirty = true;
        // Memory changes most when a model loads or an answer ends: read it next frame.
        if matches!(&msg, Msg::Engine(e) if !matches!(e, EngineEvent::Token { .. })) {
            self.last_memory = None;
        }
        let fx = update(&mut self.state, msg, Instant::now());
        self.effects.extend(fx);
    }

    /// Carries out every pending effect, and those of the messages they lead to.
    fn carry_out_effects(&mut self, screen: &mut Screen) -> Result<()> {
        while !self.effects.is_empty() {
            for effect in std::mem::take(&mut self.effects) {
                match effect {
                    Effect::Redraw => {
                        screen.clear()?;
                        self.dirty = true;
                    }
                    Effect::Suspend => {
                        // Back here after `fg`: whatever was on the screen is gone.
                        terminal::suspend()?;
                        screen.clear()?;
                        self.dirty = true;
                    }
                    Effect::MouseCapture(on) => {
                        // A terminal that ignores the request changes nothing; not worth a word.
                        let _ = terminal::set_mouse_capture(on);
                    }
                    Effect::Copy(text) => {
                        // Through ratatui's own writer, between frames.
                        let copied = terminal::copy_to_clipboard(screen.backend_mut(), &text);
                        if let Err(e) = copied {
                            self.handle(Msg::CopyFailed(e.to_string()));
                        }
                    }
                    effect => {
                        if let Some(msg) = self.runner.carry_out(effect) {
                            self.handle(msg);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Draws a frame when something changed and the last frame is old enough.
    fn draw_if_due(&mut self, screen: &mut Screen) -> Result<()> {
        let now = Instant::now();
        let due = self.last_draw.is_none_or(|t| now >= t + self.frame);
        if !(self.dirty && due) {
            return Ok(());
        }
        if self.last_memory.is_none_or(|t| now >= t + MEMORY_EVERY) {
            self.last_memory = Some(now);
            let msg = Msg::Memory {
                rss: stats::current_rss_bytes(),
                peak: stats::peak_rss_bytes(),
            };
            // Memory figures ask for nothing.
            update(&mut self.state, msg, now);
        }
        let (state, cache) = (&mut self.state, &mut self.cache);
        screen.draw(|f| state.viewport = ui::render(f, state, cache))?;
        self.last_draw = Some(now);
        self.dirty = false;
        // The end-to-end test of the panic path: the terminal must be restored first.
        if std::env::var_os("TAPER_TEST_PANIC").is_some() {
            panic!("TAPER_TEST_PANIC is set: panicking on purpose");
        }
        Ok(())
    }

    /// While an answer streams, its tokens are collected once a frame rather than waking
    /// the loop for each: every wake-up can pre-empt one of the model's spinning threads.
    fn polling(&self) -> bool {
        self.state.generating() && self.engine_open
    }

    /// When the loop must wake without input: the next frame when there is something to draw
    /// or to collect, a slower refresh of elapsed times while busy, otherwise never.
    fn wake_at(&self, now: Instant) -> Option<Instant> {
        let since = self.last_draw.max(self.last_tick).unwrap_or(now);
        if self.dirty || self.polling() {
            Some(since + self.frame)
        } else if self.state.busy() {
            Some(since + BUSY_REFRESH.max(self.frame))
        } else {
            None
        }
    }

    /// Waits for the next thing to happen: a message, nothing to handle (a key release, a
    /// timer with nothing due), or the end (the terminal closed, a signal).
    async fn next_msg(
        &mut self,
        input: &mut EventStream,
        signals: &mut Signals,
    ) -> Result<ControlFlow<(), Option<Msg>>> {
        let now = Instant::now();
        let polling = self.polling();
        let wake = self.wake_at(now);
        let engine_open = self.engine_open;
        let next = tokio::select! {
            event = input.next() => match event {
                Some(Ok(event)) => ControlFlow::Continue(terminal_msg(event)),
                Some(Err(e)) => return Err(e).context("cannot read the terminal"),
                None => ControlFlow::Break(()),
            },
            event = self.runner.engine.events.recv(), if engine_open && !polling => match event {
                Some(event) => ControlFlow::Continue(Some(Msg::Engine(event))),
                None => {
                    self.engine_open = false;
                    ControlFlow::Continue(Some(Msg::EngineStopped))
                }
            },
            Some(msg) = self.background.recv() => ControlFlow::Continue(Some(msg)),
            _ = signals.terminate.recv() => ControlFlow::Break(()),
            _ = signals.hangup.recv() => ControlFlow::Break(()),
            _ = signals.interrupt.recv() => ControlFlow::Break(()),
            _ = sleep_until(wake.unwrap_or(now).into()), if wake.is_some() => {
                ControlFlow::Continue(self.tick(polling))
            }
        };
        Ok(next)
    }

    /// The frame timer fired. Elapsed times and the spinner move a few times a second;
    /// tokens collected after it mark the frame dirty themselves.
    fn tick(&mut self, polling: bool) -> Option<Msg> {
        let now = Instant::now();
        self.last_tick = Some(now);
        let refresh = !polling || self.last_draw.is_none_or(|t| now >= t + BUSY_REFRESH);
        refresh.then_some(Msg::Tick)
    }

    /// Handles what else the engine has sent, so a burst of tokens costs one frame.
    fn drain_engine(&mut self) {
        while self.engine_open {
            match self.runner.engine.events.try_recv() {
                Ok(event) => self.handle(Msg::Engine(event)),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    self.engine_open = false;
                    self.handle(Msg::EngineStopped);
                }
            }
        }
    }
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
