//! The engine host: the one thread that runs a model for its clients. It holds one backend (a
//! local model with N slots, a remote server's model, or nothing), takes [`EngineCommand`]s
//! (load, connect, generate, unload) and answers with [`EngineEvent`]s. The chat and
//! `taper ask` are clients with one slot ([`EngineHandle::spawn`]); `taper serve` is a client
//! with `--parallel` slots whose HTTP threads each submit requests with an event channel of
//! their own ([`Submitter`]). So prefix reuse, answer-id reuse, cancellation, stop strings and
//! failure handling are written once, here (see docs/design.md, "The engine host").
//!
//! - [`run`]: the thread's loop over commands and its backend; [`resident`]: the models kept
//!   loaded beside it.
//! - [`scheduler`] / [`slot`]: a local model's slots and the batched pass over them;
//!   [`job`]: one request inside the host; [`stops`]: stop strings over streamed text.
//! - [`remote`]: a remote model as a backend.

mod draft;
mod job;
mod remote;
mod resident;
mod run;
mod scheduler;
mod slot;
mod stops;

use crate::protocol::{EngineEvent, GenerateRequest, LoadRequest};
use anyhow::{anyhow, Result};
use job::Job;
pub use run::LocalModel;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Instant;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

#[derive(Debug, Clone)]
pub enum EngineCommand {
    Load(LoadRequest),
    /// Answer with a remote server's model from now on (the local model, if any, is
    /// released first). Answers `Loaded` once the server has said it serves the model.
    Connect(crate::remote::RemoteTarget),
    Generate(GenerateRequest),
    /// Release the model's memory.
    Unload,
    Shutdown,
}

/// What travels to the host thread: a client's command, or a request with its own events.
enum HostCommand {
    Load(LoadRequest),
    Connect(crate::remote::RemoteTarget),
    Submit(Job),
    Unload,
    Shutdown,
}

/// What a server's HTTP side may read of the host (for /health and its queue limit).
#[derive(Debug, Default)]
pub struct Status {
    /// Slots answering a request.
    pub busy: AtomicUsize,
    /// Requests accepted but not yet in a slot.
    pub queued: AtomicUsize,
}

/// How many turns' cancel flags a handle keeps: a cancel names a recent turn.
const RECENT_TURNS: usize = 8;

/// The client's side of the host: commands in, events out (one channel for the client's own
/// loads and turns), and cancel by turn id. Dropping it stops the host.
pub struct EngineHandle {
    commands: mpsc::Sender<HostCommand>,
    events_tx: UnboundedSender<EngineEvent>,
    pub events: UnboundedReceiver<EngineEvent>,
    /// The cancel flags of the latest turns, by turn id.
    turns: Mutex<Vec<(u64, Arc<AtomicBool>)>>,
    status: Arc<Status>,
    /// The host thread, joined by [`EngineHandle::stop`].
    thread: Option<std::thread::JoinHandle<()>>,
}

impl EngineHandle {
    /// Starts a host with one slot and nothing loaded (the chat, `taper ask`).
    pub fn spawn() -> Result<Self> {
        Self::start(None, 1)
    }

    /// Starts a host with `slots` slots serving `loaded` (`taper serve`, which opens its
    /// model before it listens). Fails if the slots' caches cannot fit.
    pub fn serve(local: LocalModel, slots: usize) -> Result<Self> {
        Self::start(Some(local), slots)
    }

    fn start(local: Option<LocalModel>, slots: usize) -> Result<Self> {
        let (commands, command_rx) = mpsc::channel();
        let (events_tx, events) = unbounded_channel();
        let status = Arc::new(Status::default());
        let (ready_tx, ready) = mpsc::channel();
        let host = run::Host::new(events_tx.clone(), status.clone(), slots, ready_tx);
        let thread = std::thread::Builder::new()
            .name("taper-engine".into())
            .spawn(move || host.run(local, command_rx))?;
        ready
            .recv()
            .map_err(|_| anyhow!("the engine thread stopped while starting"))??;
        Ok(Self {
            commands,
            events_tx,
            events,
            turns: Mutex::new(Vec::new()),
            status,
            thread: Some(thread),
        })
    }

    /// Stops the host and waits until its thread has ended, so the model's memory is free
    /// when this returns (dropping the handle only asks the thread to stop). Requests still
    /// running fail; a server stops only idle hosts.
    pub fn stop(mut self) {
        let _ = self.commands.send(HostCommand::Shutdown);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }

    /// Sends a command; a generation's events come on [`EngineHandle::events`].
    pub fn send(&self, command: EngineCommand) -> Result<()> {
        let command = match command {
            EngineCommand::Load(r) => HostCommand::Load(r),
            EngineCommand::Connect(t) => HostCommand::Connect(t),
            EngineCommand::Unload => HostCommand::Unload,
            EngineCommand::Shutdown => HostCommand::Shutdown,
            EngineCommand::Generate(request) => {
                let cancel = Arc::new(AtomicBool::new(false));
                if let Ok(mut turns) = self.turns.lock() {
                    if turns.len() == RECENT_TURNS {
                        turns.remove(0);
                    }
                    turns.push((request.turn_id, cancel.clone()));
                }
                self.status.queued.fetch_add(1, Ordering::SeqCst);
                HostCommand::Submit(Job {
                    request,
                    asked: Instant::now(),
                    events: self.events_tx.clone(),
                    cancel,
                })
            }
        };
        self.commands
            .send(command)
            .map_err(|_| anyhow!("the engine has stopped"))
    }

    /// Stops the generation of `turn_id` before its next prefill chunk or token (also when
    /// it has not started yet).
    pub fn cancel(&self, turn_id: u64) {
        if let Ok(turns) = self.turns.lock() {
            for (_, flag) in turns.iter().filter(|(id, _)| *id == turn_id) {
                flag.store(true, Ordering::SeqCst);
            }
        }
    }

    /// Blocking receive for command-line clients; None when the host has gone.
    pub fn recv_blocking(&mut self) -> Option<EngineEvent> {
        self.events.blocking_recv()
    }

    /// A sender of requests with events of their own, for many concurrent clients.
    pub fn submitter(&self) -> Submitter {
        Submitter {
            commands: self.commands.clone(),
            status: self.status.clone(),
        }
    }

    pub fn status(&self) -> &Status {
        &self.status
    }
}

impl Drop for EngineHandle {
    fn drop(&mut self) {
        if let Ok(turns) = self.turns.lock() {
            for (_, flag) in turns.iter() {
                flag.store(true, Ordering::SeqCst);
            }
        }
        let _ = self.commands.send(HostCommand::Shutdown);
    }
}

/// Why a request was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// `queue` requests already wait for a slot.
    QueueFull,
    /// The host has stopped.
    Stopped,
}

/// Submits requests whose events go to channels of their own (a server's connections).
#[derive(Clone)]
pub struct Submitter {
    commands: mpsc::Sender<HostCommand>,
    status: Arc<Status>,
}

impl Submitter {
    /// Queues `request` (asked at `asked`) unless `queue` requests already wait; its events go
    /// to `events`, and dropping their receiver cancels it.
    pub fn submit(
        &self,
        request: GenerateRequest,
        asked: Instant,
        events: UnboundedSender<EngineEvent>,
        queue: usize,
    ) -> Result<(), Refused> {
        let taken = self
            .status
            .queued
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |q| {
                (q < queue).then_some(q + 1)
            });
        if taken.is_err() {
            return Err(Refused::QueueFull);
        }
        let job = Job {
            request,
            asked,
            events,
            cancel: Arc::new(AtomicBool::new(false)),
        };
        self.commands.send(HostCommand::Submit(job)).map_err(|_| {
            self.status.queued.fetch_sub(1, Ordering::SeqCst);
            Refused::Stopped
        })
    }

    pub fn status(&self) -> &Status {
        &self.status
    }
}

/// A panic's message, for the sentence a client gets.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "the engine panicked".into()
    }
}
