//! The host thread's loop: one backend at a time (nothing, a local model with its slots, or a
//! remote model), and the local models kept loaded beside it ([`super::resident`]), commands
//! taken in order, every failure (panics included) turned into a `Failed` event: the host
//! never panics across the boundary.

use super::draft::LazyDraft;
use super::job::Job;
use super::resident::{Resident, Residents};
use super::scheduler::{SavedSlot, Scheduler};
use super::{remote, HostCommand, Status};
use crate::engine::answer_ids::AnswerIds;
use crate::engine::loader::{self, Loaded, OpenOptions};
use crate::engine::model::LanguageModel;
use crate::engine::prompt::ModelText;
use crate::protocol::{EngineEvent, LoadRequest, ModelInfo, StopReason, TurnObserver, Usage};
use crate::stats::secs;
use anyhow::Result;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::mpsc::UnboundedSender;

/// A local model as the host runs it: its weights, its tokenizer and template, and the ids of
/// its recent answers (shared with a server's HTTP threads, which tokenize prompts).
pub struct LocalModel {
    pub model: Box<dyn LanguageModel>,
    pub text: Arc<ModelText>,
    pub answers: Arc<Mutex<AnswerIds>>,
    /// The smaller model that drafts for requests with `Speculation::Draft`, if one was named.
    pub draft: LazyDraft,
}

impl LocalModel {
    pub fn new(loaded: Loaded) -> Result<Self> {
        let (model, text) = loaded.into_text()?;
        Ok(Self {
            model,
            text: Arc::new(text),
            answers: Arc::new(Mutex::new(AnswerIds::default())),
            draft: LazyDraft::default(),
        })
    }

    /// Drafts with the model at `path` (read with the first request that asks for it).
    pub fn with_draft(mut self, path: Option<PathBuf>) -> Self {
        self.draft = LazyDraft::new(path);
        self
    }

    /// Drafts with the draft model at `path`, read now (a server reads it before it listens,
    /// so a bad one stops it at once): the error says why it cannot draft.
    pub fn with_draft_read(mut self, path: PathBuf) -> Result<Self> {
        self.draft = LazyDraft::new(Some(path));
        self.draft.get(self.model.as_ref(), &self.text)?;
        Ok(self)
    }
}

enum Backend {
    Empty,
    Local(InUse),
    Remote(remote::Connected),
}

/// The local model in use, with its slots when it was kept loaded (fresh ones otherwise), and
/// what keeping it loaded after another is picked takes: the request that loaded it and what
/// the client was told (a server's model, loaded before the host started, has none).
struct InUse {
    local: LocalModel,
    slots: Option<Vec<SavedSlot>>,
    loaded_by: Option<Box<LoadedBy>>,
}

/// The request that loaded a model and what the client was told of it.
type LoadedBy = (LoadRequest, ModelInfo, Vec<String>);

pub(super) struct Host {
    /// The owning client's events (loads, and its own turns).
    control: UnboundedSender<EngineEvent>,
    status: Arc<Status>,
    slots: usize,
    /// Told once whether the host started well (a server's slots may not fit).
    ready: Option<Sender<Result<()>>>,
    residents: Residents,
}

impl Host {
    pub fn new(
        control: UnboundedSender<EngineEvent>,
        status: Arc<Status>,
        slots: usize,
        ready: Sender<Result<()>>,
    ) -> Self {
        Self {
            control,
            status,
            slots,
            ready: Some(ready),
            residents: Residents::default(),
        }
    }

    pub fn run(mut self, start: Option<LocalModel>, commands: Receiver<HostCommand>) {
        let mut backend = start.map_or(Backend::Empty, |local| {
            Backend::Local(InUse {
                local,
                slots: None,
                loaded_by: None,
            })
        });
        loop {
            let (command, left) = match std::mem::replace(&mut backend, Backend::Empty) {
                Backend::Local(in_use) => self.run_local(in_use, &commands),
                other => {
                    backend = other;
                    self.started(Ok(()));
                    (commands.recv().ok(), None)
                }
            };
            match command {
                None | Some(HostCommand::Shutdown) => return,
                Some(HostCommand::Unload) => {
                    self.residents.clear();
                    backend = Backend::Empty;
                }
                Some(HostCommand::Load(request)) => {
                    // The model left is kept loaded; `load` decides what still fits.
                    self.residents.keep_some(left);
                    release(&mut backend);
                    backend = self.guarded(|host| host.load(&request));
                }
                Some(HostCommand::Connect(target)) => {
                    self.residents.keep_some(left);
                    release(&mut backend);
                    backend = self.guarded(|host| host.connect(target));
                }
                Some(HostCommand::Submit(job)) => self.answer_without_slots(&backend, job),
            }
        }
    }

    /// A local model's time: its slots serve requests until another command comes, which is
    /// returned with the model as it is left, to be kept loaded (when a request loaded it).
    fn run_local(
        &mut self,
        in_use: InUse,
        commands: &Receiver<HostCommand>,
    ) -> (Option<HostCommand>, Option<Resident>) {
        let status = self.status.clone();
        let LocalModel {
            model,
            text,
            answers,
            draft,
        } = in_use.local;
        let made = match in_use.slots {
            Some(slots) => Ok(Scheduler::resume(
                (model, draft),
                &text,
                &answers,
                slots,
                &status,
            )),
            None => Scheduler::new((model, draft), &text, &answers, self.slots, &status),
        };
        let mut scheduler = match made {
            Ok(s) => s,
            Err(e) => {
                self.started(Err(e));
                return (commands.recv().ok(), None);
            }
        };
        self.started(Ok(()));
        let next = scheduler.run(commands);
        scheduler.close(match next {
            Some(HostCommand::Load(_) | HostCommand::Connect(_)) => "the model was replaced",
            Some(HostCommand::Unload) => "the model was unloaded",
            _ => "the engine is shutting down",
        });
        let ((model, draft), slots) = scheduler.into_parts();
        let left = in_use.loaded_by.map(|loaded_by| {
            let (request, info, notices) = *loaded_by;
            Resident {
                request,
                local: LocalModel {
                    model,
                    text,
                    answers,
                    draft,
                },
                slots,
                info,
                notices,
            }
        });
        (next, left)
    }

    /// Runs a load or connect; a failure, panics included, is a `Failed` event and leaves no
    /// model.
    fn guarded(&mut self, act: impl FnOnce(&mut Self) -> Result<Backend>) -> Backend {
        let failure = match catch_unwind(AssertUnwindSafe(|| act(self))) {
            Ok(Ok(backend)) => return backend,
            Ok(Err(e)) => format!("{e:#}"),
            Err(panic) => format!("internal error: {}", super::panic_message(&*panic)),
        };
        let _ = self.control.send(EngineEvent::Failed {
            turn_id: None,
            message: failure,
        });
        Backend::Empty
    }

    fn load(&mut self, request: &LoadRequest) -> Result<Backend> {
        let started = Instant::now();
        if let Some(kept) = self.residents.take(request) {
            // A switch back: no load, and each slot's cache as it was left.
            let info = ModelInfo {
                load_s: secs(started.elapsed()),
                kept_loaded: true,
                resident: self.residents.paths(),
                ..kept.info.clone()
            };
            let notices = kept.notices.clone();
            let _ = self.control.send(EngineEvent::Loaded { info, notices });
            return Ok(Backend::Local(InUse {
                local: kept.local,
                slots: Some(kept.slots),
                loaded_by: Some(Box::new((kept.request, kept.info, kept.notices))),
            }));
        }
        self.residents.make_room(request);
        let loaded = loader::open(&request.model_path, &OpenOptions::from(request))?;
        let (mut info, notices) = (loaded.info.clone(), loaded.notices.clone());
        let local = LocalModel::new(loaded)?.with_draft(request.draft_model.clone());
        info.draft_model = request.draft_model.clone();
        let text = local.text.clone();
        // A text the tokenizer cannot encode has no count; its length in bytes is a bound.
        info.tokens = crate::protocol::TokenCounter::new(move |t| {
            text.tokenizer.encode(t).map_or(t.len(), |ids| ids.len())
        });
        info.resident = self.residents.paths();
        let _ = self.control.send(EngineEvent::Loaded {
            info: info.clone(),
            notices: notices.clone(),
        });
        Ok(Backend::Local(InUse {
            local,
            slots: None,
            loaded_by: Some(Box::new((request.clone(), info, notices))),
        }))
    }

    fn connect(&mut self, target: crate::remote::RemoteTarget) -> Result<Backend> {
        let (connected, mut info) = remote::connect(target)?;
        info.resident = self.residents.paths();
        let _ = self.control.send(EngineEvent::Loaded {
            info,
            notices: Vec::new(),
        });
        Ok(Backend::Remote(connected))
    }

    /// A request when no local model runs: a remote model answers it here, one at a time;
    /// with nothing loaded it fails.
    fn answer_without_slots(&mut self, backend: &Backend, job: Job) {
        self.status.queued.fetch_sub(1, Ordering::SeqCst);
        let Backend::Remote(connected) = backend else {
            job.fail("no model is loaded");
            return;
        };
        if job.abandoned() {
            finish_unstarted(&job);
            return;
        }
        self.status.busy.fetch_add(1, Ordering::SeqCst);
        let turn_id = job.turn_id();
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            remote::generate(
                connected,
                &job.request,
                job.asked,
                &mut RemoteTurn {
                    job: &job,
                    first_told: false,
                },
            )
        }));
        self.status.busy.fetch_sub(1, Ordering::SeqCst);
        match outcome {
            Ok(Ok(answer)) => job.emit(EngineEvent::Finished {
                turn_id,
                usage: answer.usage,
                tool_calls: answer.tool_calls,
            }),
            Ok(Err(e)) => job.fail(format!("{e:#}")),
            Err(panic) => job.fail(format!("internal error: {}", super::panic_message(&*panic))),
        }
    }

    /// Says once whether the host started; a later failure to start a model's slots is an
    /// event.
    fn started(&mut self, result: Result<()>) {
        match (self.ready.take(), result) {
            (Some(ready), result) => {
                let _ = ready.send(result);
            }
            (None, Err(e)) => {
                let _ = self.control.send(EngineEvent::Failed {
                    turn_id: None,
                    message: format!("{e:#}"),
                });
            }
            (None, Ok(())) => {}
        }
    }
}

fn release(backend: &mut Backend) {
    *backend = Backend::Empty;
}

/// A remote turn's progress and text as the job's events; the job's cancel as the stop.
struct RemoteTurn<'a> {
    job: &'a Job,
    first_told: bool,
}

impl TurnObserver for RemoteTurn<'_> {
    fn stop_requested(&mut self) -> bool {
        self.job.abandoned()
    }

    fn prompt_progress(&mut self, done: usize, total: usize) -> Result<()> {
        self.job.emit(EngineEvent::PromptProgress {
            turn_id: self.job.turn_id(),
            done,
            total,
            cached: 0,
        });
        Ok(())
    }

    fn text(&mut self, piece: &str) -> Result<()> {
        if !self.first_told {
            // Measured on arrival, as the remote's usage is: the prompt's time cannot be told
            // from the network's.
            self.first_told = true;
            let ttft_s = crate::stats::secs(self.job.asked.elapsed());
            self.job.emit(EngineEvent::FirstToken {
                turn_id: self.job.turn_id(),
                ttft_s,
                prefill_s: ttft_s,
            });
        }
        self.job.emit(EngineEvent::Token {
            turn_id: self.job.turn_id(),
            text: piece.to_string(),
        });
        Ok(())
    }
}

/// A cancelled request that never ran still ends with `Finished`, as a cancelled turn does.
pub(super) fn finish_unstarted(job: &Job) {
    let usage = Usage {
        stop: Some(StopReason::Cancelled),
        ..Usage::default()
    };
    job.emit(EngineEvent::Finished {
        turn_id: job.turn_id(),
        usage,
        tool_calls: Vec::new(),
    });
}
