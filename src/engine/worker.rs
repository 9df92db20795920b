//! The engine thread: owns the loaded model, runs loads and generations, checks for cancel
//! between tokens, and turns every failure (panics included) into a `Failed` event.

use super::detokenizer::Detokenizer;
use super::gguf::GgufHeader;
use super::model::{self, LanguageModel, ModelConfig};
use super::sampler::Sampler;
use super::session::{fit_conversation, CachedSequence, Window};
use super::template::ChatTemplate;
use super::tokenizer::TextTokenizer;
use super::{
    EngineCommand, EngineEvent, GenerateRequest, LoadRequest, ModelInfo, CANCEL_ALL, CANCEL_NONE,
};
use crate::stats::{secs, StopReason, Usage};
use anyhow::{anyhow, bail, Context, Result};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Instant;
use tokio::sync::mpsc::UnboundedSender;

/// Prompt tokens computed per forward pass; progress is reported between chunks.
const PREFILL_CHUNK: usize = 256;

struct Loaded {
    model: Box<dyn LanguageModel>,
    tokenizer: TextTokenizer,
    template: ChatTemplate,
    cached: CachedSequence,
    /// Which old messages the last prompt left out; the next turn leaves out the same.
    window: Window,
}

/// The worker's ends of the event channel and the cancel flag.
struct Link {
    events: UnboundedSender<EngineEvent>,
    cancel: Arc<AtomicU64>,
}

struct Worker {
    link: Link,
    loaded: Option<Loaded>,
}

pub(super) fn run(
    commands: mpsc::Receiver<EngineCommand>,
    events: UnboundedSender<EngineEvent>,
    cancel: Arc<AtomicU64>,
) {
    let mut worker = Worker {
        link: Link { events, cancel },
        loaded: None,
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
                    l.cached.clear();
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
            EngineCommand::Generate(request) => self.generate(request)?,
            EngineCommand::Unload => self.loaded = None,
            EngineCommand::Shutdown => return Ok(false),
        }
        Ok(true)
    }

    fn load(&mut self, request: LoadRequest) -> Result<()> {
        // Release the old model before the new one is read, so two never share memory.
        self.loaded = None;
        let started = Instant::now();
        let (loaded, notices, mut info) = load_model(&request)?;
        info.load_s = secs(started.elapsed());
        self.loaded = Some(loaded);
        self.link.emit(EngineEvent::Loaded { info, notices })
    }

    fn generate(&mut self, request: GenerateRequest) -> Result<()> {
        let started = Instant::now();
        let turn_id = request.turn_id;
        // A cancel meant for an earlier turn must not stop this one; one sent for this turn
        // before it started still does.
        let link = &self.link;
        let pending = link.cancel.load(Ordering::SeqCst);
        if pending != turn_id && pending != CANCEL_ALL {
            link.cancel.store(CANCEL_NONE, Ordering::SeqCst);
        }
        let loaded = self
            .loaded
            .as_mut()
            .ok_or_else(|| anyhow!("no model is loaded"))?;
        let context = loaded.model.context_size();
        // Leave room for the answer: all of max_tokens, up to a quarter of the context.
        let reserve = request.max_tokens.clamp(1, (context / 4).max(1));
        let budget = context.saturating_sub(reserve).max(1);
        let fitted = if request.raw {
            // No template: only the last message's text, as is.
            let last = request.messages.len().saturating_sub(1);
            fit_conversation(
                &request.messages[last..],
                budget,
                Window::default(),
                |msgs| {
                    let text = msgs.last().map(|m| m.content.as_str()).unwrap_or("");
                    with_bos(&loaded.tokenizer, loaded.tokenizer.encode(text)?, false)
                },
            )?
        } else {
            let (tokenizer, template) = (&loaded.tokenizer, &loaded.template);
            let bos = tokenizer.bos_token().unwrap_or_default();
            let eos = tokenizer.eos_token().unwrap_or_default();
            fit_conversation(&request.messages, budget, loaded.window, |msgs| {
                let text = template.render(msgs, true, &bos, &eos)?;
                let has_bos = !bos.is_empty() && ChatTemplate::starts_with_bos(&text, &bos);
                with_bos(tokenizer, tokenizer.encode(&text)?, has_bos)
            })?
        };
        if !request.raw {
            loaded.window = fitted.window;
        }
        let prompt = fitted.tokens;

        // Reuse the longest common prefix of what is cached; re-read only the rest.
        let reused = loaded.cached.reusable_prefix(&prompt);
        loaded.model.truncate_cache(reused);
        loaded.cached.truncate(reused);
        let mut usage = Usage {
            prompt_tokens: prompt.len(),
            cached_tokens: reused,
            dropped_messages: fitted.dropped_messages,
            context_size: context,
            ..Usage::default()
        };

        let prefill_started = Instant::now();
        let mut logits = None;
        let new_tokens = &prompt[reused..];
        for (i, chunk) in new_tokens.chunks(PREFILL_CHUNK).enumerate() {
            if link.cancelled(turn_id) {
                usage.stop = Some(StopReason::Cancelled);
                return link.emit(EngineEvent::Finished { turn_id, usage });
            }
            logits = Some(loaded.model.forward(chunk, false)?);
            loaded.cached.extend(chunk);
            let done = (i * PREFILL_CHUNK + chunk.len()).min(new_tokens.len());
            let _ = link.events.send(EngineEvent::PromptProgress {
                turn_id,
                done,
                total: new_tokens.len(),
            });
        }
        usage.prefill_s = secs(prefill_started.elapsed());
        let mut logits: Vec<f32> = logits.context("empty prompt")?.flatten_all()?.to_vec1()?;

        let mut sampler = Sampler::new(request.sampling.clone());
        let mut detok = Detokenizer::new(&loaded.tokenizer);
        let stop_ids = loaded.tokenizer.stop_ids().to_vec();
        let mut first_token_at = None;
        let stop = loop {
            if link.cancelled(turn_id) {
                break StopReason::Cancelled;
            }
            let next = sampler.sample(&mut logits, loaded.cached.tokens());
            let now = Instant::now();
            if first_token_at.is_none() {
                usage.ttft_s = secs(now - started);
                first_token_at = Some(now);
            }
            if stop_ids.contains(&next) {
                break StopReason::EndOfTurn;
            }
            usage.generated_tokens += 1;
            usage.decode_s = secs(now - first_token_at.unwrap_or(now));
            if let Some(text) = detok.push(next)? {
                link.emit(EngineEvent::Token { turn_id, text })?;
            }
            if usage.generated_tokens >= request.max_tokens {
                break StopReason::MaxTokens;
            }
            if loaded.model.cached_len() + 1 > context {
                break StopReason::ContextFull;
            }
            let out = loaded.model.forward(&[next], false)?;
            loaded.cached.extend(&[next]);
            logits = out.flatten_all()?.to_vec1()?;
        };
        if let Some(text) = detok.finish()? {
            link.emit(EngineEvent::Token { turn_id, text })?;
        }
        usage.stop = Some(stop);
        link.emit(EngineEvent::Finished { turn_id, usage })
    }
}

impl Link {
    fn emit(&self, event: EngineEvent) -> Result<()> {
        self.events
            .send(event)
            .map_err(|_| anyhow!("the client has gone"))
    }

    fn cancelled(&self, turn_id: u64) -> bool {
        let c = self.cancel.load(Ordering::SeqCst);
        c == turn_id || c == CANCEL_ALL
    }
}

/// Prepends BOS when the model wants one and the text does not already start with it.
fn with_bos(tokenizer: &TextTokenizer, mut tokens: Vec<u32>, has_bos: bool) -> Result<Vec<u32>> {
    if tokenizer.add_bos() && !has_bos {
        if let Some(bos) = tokenizer.bos_id() {
            if tokens.first() != Some(&bos) {
                tokens.insert(0, bos);
            }
        }
    }
    if tokens.is_empty() {
        bail!("the prompt is empty");
    }
    Ok(tokens)
}

fn load_model(request: &LoadRequest) -> Result<(Loaded, Vec<String>, ModelInfo)> {
    let header = GgufHeader::read(&request.model_path)?;
    let path = header.path.display().to_string();
    // Validate the architecture before the (slow) tokenizer and weights.
    ModelConfig::from_header(&header).with_context(|| path.clone())?;
    let (tokenizer, model) = model::load_beside(&header, request.context_size, || {
        match &request.tokenizer_json {
            Some(json) => TextTokenizer::from_tokenizer_json(json, &header),
            None => TextTokenizer::from_gguf(&header),
        }
    });
    let tokenizer = tokenizer.with_context(|| format!("{path}: tokenizer"))?;
    let has_token = |t: &str| tokenizer.token_to_id(t).is_some();
    let template = ChatTemplate::for_model(&header, request.chat_template.as_deref(), &has_token)
        .with_context(|| format!("{path}: chat template"))?;
    let notices = template.notice().into_iter().collect();
    let model = model?;
    let info = model_info(&header, model.config(), model.context_size());
    let loaded = Loaded {
        model,
        tokenizer,
        template,
        cached: CachedSequence::default(),
        window: Window::default(),
    };
    Ok((loaded, notices, info))
}

/// What a client learns of the model; `load_s` is filled in by the caller.
fn model_info(header: &GgufHeader, config: &ModelConfig, context_size: usize) -> ModelInfo {
    ModelInfo {
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
        context_length: config.context_length,
        load_s: 0.0,
        threads: super::compute_threads(),
    }
}
