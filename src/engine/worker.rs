//! The engine thread: owns the loaded model, runs loads and generations, checks for cancel
//! between tokens, and turns every failure (panics included) into a `Failed` event.

use super::answer_ids::AnswerIds;
use super::context_fit::Window;
use super::generation::{Generator, TurnObserver, TurnOptions};
use super::gguf::GgufHeader;
use super::model::{self, LanguageModel, ModelConfig};
use super::prefix_cache::PrefixCache;
use super::prompt::ModelText;
use super::{
    EngineCommand, EngineEvent, GenerateRequest, LoadRequest, ModelInfo, CANCEL_ALL, CANCEL_NONE,
};
use crate::stats::secs;
use anyhow::{anyhow, Context, Result};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Instant;
use tokio::sync::mpsc::UnboundedSender;

struct Loaded {
    model: Box<dyn LanguageModel>,
    text: ModelText,
    cache: PrefixCache,
    /// Which old messages the last prompt left out; the next turn leaves out the same.
    window: Window,
    /// The ids of this model's recent answers, for the prompts that quote them back.
    answers: AnswerIds,
}

/// The worker's ends of the event channel and the cancel flag.
struct Link {
    events: UnboundedSender<EngineEvent>,
    cancel: Arc<AtomicU64>,
}

struct Worker {
    link: Link,
    loaded: Option<Loaded>,
    /// A remote model answers instead, when connected (never both).
    remote: Option<super::remote::Connected>,
}

pub(super) fn run(
    commands: mpsc::Receiver<EngineCommand>,
    events: UnboundedSender<EngineEvent>,
    cancel: Arc<AtomicU64>,
) {
    let mut worker = Worker {
        link: Link { events, cancel },
        loaded: None,
        remote: None,
    };
    while let Ok(command) = commands.recv() {
        let turn_id = match &command {
            EngineCommand::Generate(g) => Some(g.turn_id),
            _ => None,
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| worker.handle(command)));
        let failure = match outcome {
            Ok(Ok(true)) => continue,
            Ok(Ok(false)) => break,
            Ok(Err(e)) => format!("{e:#}"),
            Err(panic) => {
                // The model's state is unknown after a panic: start the next turn afresh.
                if let Some(l) = worker.loaded.as_mut() {
                    l.model.truncate_cache(0);
                    l.cache.clear();
                }
                format!("internal error: {}", panic_message(&*panic))
            }
        };
        let event = EngineEvent::Failed {
            turn_id,
            message: failure,
        };
        if worker.link.events.send(event).is_err() {
            break;
        }
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "the engine panicked".into()
    }
}

impl Worker {
    /// Runs one command; Ok(false) means shut down.
    fn handle(&mut self, command: EngineCommand) -> Result<bool> {
        match command {
            EngineCommand::Load(request) => self.load(request)?,
            EngineCommand::Connect(target) => self.connect(target)?,
            EngineCommand::Generate(request) if self.remote.is_some() => {
                self.generate_remote(request)?
            }
            EngineCommand::Generate(request) => self.generate(request)?,
            EngineCommand::Unload => {
                self.loaded = None;
                self.remote = None;
            }
            EngineCommand::Shutdown => return Ok(false),
        }
        Ok(true)
    }

    fn load(&mut self, request: LoadRequest) -> Result<()> {
        // Release the old model before the new one is read, so two never share memory.
        self.loaded = None;
        self.remote = None;
        let started = Instant::now();
        let (loaded, notices, mut info) = load_model(&request)?;
        info.load_s = secs(started.elapsed());
        self.loaded = Some(loaded);
        self.link.emit(EngineEvent::Loaded { info, notices })
    }

    fn connect(&mut self, target: crate::remote::RemoteTarget) -> Result<()> {
        self.loaded = None;
        self.remote = None;
        let (connected, info) = super::remote::connect(target)?;
        self.remote = Some(connected);
        self.link.emit(EngineEvent::Loaded {
            info,
            notices: Vec::new(),
        })
    }

    fn generate_remote(&mut self, request: GenerateRequest) -> Result<()> {
        let asked = Instant::now();
        let turn_id = request.turn_id;
        self.link.clear_stale_cancel(turn_id);
        let connected = self
            .remote
            .as_ref()
            .ok_or_else(|| anyhow!("no model is loaded"))?;
        let mut observer = TurnEvents {
            link: &self.link,
            turn_id,
        };
        let usage = super::remote::generate(connected, &request, asked, &mut observer)?;
        self.link.emit(EngineEvent::Finished { turn_id, usage })
    }

    fn generate(&mut self, request: GenerateRequest) -> Result<()> {
        let asked = Instant::now();
        let turn_id = request.turn_id;
        let link = &self.link;
        link.clear_stale_cancel(turn_id);
        let loaded = self
            .loaded
            .as_mut()
            .ok_or_else(|| anyhow!("no model is loaded"))?;
        let context = loaded.model.context_size();
        // Leave room for the answer: all of max_tokens, up to a quarter of the context.
        let reserve = request.max_tokens.clamp(1, (context / 4).max(1));
        let budget = context.saturating_sub(reserve).max(1);
        let fitted = loaded.text.fitted(
            &request.messages,
            request.raw,
            budget,
            loaded.window,
            &loaded.answers,
        )?;
        if !request.raw {
            loaded.window = fitted.window;
        }
        let options = TurnOptions {
            sampling: request.sampling,
            max_tokens: request.max_tokens,
            stop_at_end_of_turn: true,
        };
        let mut generator = Generator {
            model: loaded.model.as_mut(),
            cache: &mut loaded.cache,
            tokenizer: Some(&loaded.text.tokenizer),
        };
        let mut observer = TurnEvents { link, turn_id };
        let outcome = generator.run(&fitted.tokens, &options, asked, &mut observer)?;
        loaded.answers.record(&outcome.text, &outcome.ids);
        let mut usage = outcome.usage;
        usage.dropped_messages = fitted.dropped_messages;
        link.emit(EngineEvent::Finished { turn_id, usage })
    }
}

/// A turn's progress and tokens as events to the client; its cancel flag as the stop.
struct TurnEvents<'a> {
    link: &'a Link,
    turn_id: u64,
}

impl TurnObserver for TurnEvents<'_> {
    fn stop_requested(&mut self) -> bool {
        self.link.cancelled(self.turn_id)
    }

    fn prompt_progress(&mut self, done: usize, total: usize) -> Result<()> {
        // Progress is a nicety: a client that stopped listening fails at the next token.
        let _ = self.link.events.send(EngineEvent::PromptProgress {
            turn_id: self.turn_id,
            done,
            total,
        });
        Ok(())
    }

    fn text(&mut self, piece: &str) -> Result<()> {
        self.link.emit(EngineEvent::Token {
            turn_id: self.turn_id,
            text: piece.to_string(),
        })
    }
}

impl Link {
    fn emit(&self, event: EngineEvent) -> Result<()> {
        self.events
            .send(event)
            .map_err(|_| anyhow!("the client has gone"))
    }

    /// A cancel meant for an earlier turn must not stop this one; one sent for this turn
    /// before it started still does.
    fn clear_stale_cancel(&self, turn_id: u64) {
        let pending = self.cancel.load(Ordering::SeqCst);
        if pending != turn_id && pending != CANCEL_ALL {
            self.cancel.store(CANCEL_NONE, Ordering::SeqCst);
        }
    }

    fn cancelled(&self, turn_id: u64) -> bool {
        let c = self.cancel.load(Ordering::SeqCst);
        c == turn_id || c == CANCEL_ALL
    }
}

fn load_model(request: &LoadRequest) -> Result<(Loaded, Vec<String>, ModelInfo)> {
    let header = GgufHeader::read(&request.model_path)?;
    // Validate the architecture before the (slow) tokenizer and weights.
    ModelConfig::from_header(&header).with_context(|| header.path.display().to_string())?;
    let cache = model::CacheOptions {
        context: request.context_size,
        cache_type: request.cache_type,
    };
    let (text, model) = model::load_beside(&header, cache, || {
        ModelText::load(
            &header,
            request.tokenizer_json.as_deref(),
            request.chat_template.as_deref(),
        )
    });
    let text = text?;
    let notices = text.template.notice().into_iter().collect();
    let model = model?;
    let info = model_info(&header, model.as_ref())?;
    let loaded = Loaded {
        model,
        text,
        cache: PrefixCache::default(),
        window: Window::default(),
        answers: AnswerIds::default(),
    };
    Ok((loaded, notices, info))
}

/// What a client learns of the model; `load_s` is filled in by the caller.
fn model_info(header: &GgufHeader, model: &dyn LanguageModel) -> Result<ModelInfo> {
    let (config, context_size) = (model.config(), model.context_size());
    Ok(ModelInfo {
        path: header.path.clone(),
        name: header
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        architecture: config.arch_name.clone(),
        quantization: header.quantization(),
        file_size: header.file_size,
        parameters: header.parameter_count(),
        context_size,
        cache_type: model.cache_type(),
        cache_bytes: model::cache_bytes(config, context_size, model.cache_type())?,
        context_length: config.context_length,
        load_s: 0.0,
        threads: super::compute_threads(),
        kernels: model::kernel_path::name(),
        remote: None,
    })
}
