//! One slot of the engine host: a KV cache of its own, the record of the tokens it holds (kept
//! after a request, so the next turn of that conversation reuses it), the window of the
//! conversation it last held, and the request it is answering, if any.

use super::job::Job;
use super::stops::StopMatcher;
use crate::chat::{split_thinking, ToolCall};
use crate::engine::answer_ids::AnswerIds;
use crate::engine::context_fit::Window;
use crate::engine::generation::Decoding;
use crate::engine::grammar::Grammar;
use crate::engine::model::KvCache;
use crate::engine::prefix_cache::PrefixCache;
use crate::engine::speculative::{DraftMemory, Drafter, SharedDraft};
use crate::engine::tokenizer::TextTokenizer;
use crate::protocol::{EngineEvent, Speculation, StopReason, ToolChoice, TurnObserver, Usage};
use crate::stats::secs;
use crate::tools::parse::{self, ProseStream};
use crate::tools::ToolFormat;
use anyhow::Result;
use std::sync::Mutex;
use std::time::Instant;

pub struct Slot<'t> {
    pub cache: KvCache,
    /// The draft model's cache for the same sequence, kept between requests so the next turn
    /// drafts without re-reading the conversation.
    pub draft_memory: Option<DraftMemory>,
    pub prefix: PrefixCache,
    /// Which old messages the last conversation prompt left out; its next turn leaves out
    /// the same, so it keeps the cached start.
    pub window: Window,
    pub active: Option<Active<'t>>,
    /// When the slot last took a request (a counter): among equals, the least recently used
    /// slot is given away first.
    pub last_used: u64,
}

/// A request's prompt, made ready at admission: its ids, the usage its making knows (messages
/// left out), the window to keep for a conversation's next turn, its grammar state.
pub struct Admitted {
    pub ids: Vec<u32>,
    pub usage: Usage,
    pub window: Option<Window>,
    pub grammar: Option<Grammar>,
    pub continued: Option<Continued>,
    /// The draft model, for a request that drafts with one.
    pub draft: Option<SharedDraft>,
}

/// An answer cut short that a request goes on with: its text and ids, which end the prompt,
/// so the whole answer is remembered with its ids when the continuation ends.
#[derive(Debug, Clone, Default)]
pub struct Continued {
    pub text: String,
    pub ids: Vec<u32>,
}

/// A request being answered.
pub struct Active<'t> {
    pub job: Job,
    /// Prompt tokens not yet computed.
    pub pending: Vec<u32>,
    /// Prompt tokens computed so far, of `pending`'s length at the start.
    pub read: usize,
    pub to_read: usize,
    /// The token sampled last, to feed in the next pass.
    pub next: Option<u32>,
    /// Present once the prompt is computed.
    pub decoding: Option<Decoding<'t>>,
    pub usage: Usage,
    pub prefill_started: Instant,
    /// `FirstToken` was sent.
    pub first_told: bool,
    pub stops: StopMatcher,
    /// The answer's text without its calls, for a request that wants prose only.
    pub prose: Option<ProseStream>,
    /// The grammar the answer is held to, until decoding takes it.
    pub grammar: Option<Grammar>,
    /// The answer this request goes on with, if it continues one.
    pub continued: Option<Continued>,
    /// Guesses tokens ahead, when the request speculates.
    pub drafter: Option<Drafter>,
}

impl<'t> Slot<'t> {
    /// Takes `job` with its prompt's ids: keeps the cached prefix they share and queues the
    /// rest. `usage` holds what the prompt's making knew (messages left out); `tool_format`
    /// is the model's tool-call syntax.
    pub fn start(&mut self, job: Job, prompt: Admitted, clock: u64, tool_format: ToolFormat) {
        let Admitted {
            ids: prompt,
            mut usage,
            grammar,
            continued,
            draft,
            ..
        } = prompt;
        let drafter = match job.request.speculation {
            Speculation::Off => None,
            Speculation::Ngram => Some(Drafter::lookup()),
            Speculation::Draft => draft.and_then(|draft| {
                let memory = match self.draft_memory.take() {
                    Some(memory) => memory,
                    // No cache for the draft model: the answer is not at stake, only its
                    // speed.
                    None => DraftMemory::new(&draft).ok()?,
                };
                Some(Drafter::model(draft, memory))
            }),
        };
        let prompt = &prompt[..];
        let reused = self.prefix.reusable_prefix(prompt);
        self.cache.truncate(reused);
        self.prefix.truncate(reused);
        usage.prompt_tokens = prompt.len();
        usage.cached_tokens = reused;
        usage.context_size = self.cache.capacity();
        self.last_used = clock;
        let pending = prompt[reused..].to_vec();
        job.emit(EngineEvent::PromptProgress {
            turn_id: job.turn_id(),
            done: 0,
            total: pending.len(),
            cached: reused,
        });
        let prose = (job.request.prose_only && reads_calls(&job.request, tool_format))
            .then(|| ProseStream::new(tool_format));
        self.active = Some(Active {
            prose,
            read: 0,
            to_read: pending.len(),
            pending,
            next: None,
            decoding: None,
            usage,
            prefill_started: Instant::now(),
            first_told: false,
            stops: StopMatcher::new(job.request.stop.clone()),
            grammar,
            continued,
            drafter,
            job,
        });
    }

    /// Forgets everything it holds (after a failure its cache is in an unknown state).
    pub fn reset(&mut self) {
        self.active = None;
        self.draft_memory = None;
        self.cache.truncate(0);
        self.prefix.clear();
        self.window = Window::default();
    }
}

impl<'t> Active<'t> {
    /// `n` more prompt tokens were computed: the client hears how far the prompt is.
    pub fn read_more(&mut self, n: usize) {
        self.read += n;
        self.job.emit(EngineEvent::PromptProgress {
            turn_id: self.job.turn_id(),
            done: self.read,
            total: self.to_read,
            cached: self.usage.cached_tokens,
        });
    }

    /// The prompt is computed: sampling begins.
    pub fn begin_decoding(&mut self, tokenizer: &'t TextTokenizer) {
        self.usage.prefill_s = secs(self.prefill_started.elapsed());
        let usage = std::mem::take(&mut self.usage);
        let options = crate::engine::generation::TurnOptions {
            sampling: self.job.request.sampling.clone(),
            max_tokens: self.job.request.max_tokens,
            stop_at_end_of_turn: true,
        };
        let mut decoding = Decoding::new(Some(tokenizer), &options, self.job.asked, usage);
        if self.continued.is_some() {
            decoding = decoding.continuing();
        }
        self.decoding = Some(decoding.with_grammar(self.grammar.take()));
    }

    /// After each sampled token: with the first, the engine's time to it.
    pub fn after_token(&mut self) {
        let Some(decoding) = &self.decoding else {
            return;
        };
        let usage = &decoding.outcome().usage;
        if usage.generated_tokens >= 1 && !self.first_told {
            self.first_told = true;
            self.job.emit(EngineEvent::FirstToken {
                turn_id: self.job.turn_id(),
                ttft_s: usage.ttft_s,
                prefill_s: usage.prefill_s,
            });
        }
    }

    /// Ends the answer: held-back text out, the ids remembered, the usage sent.
    /// `tool_format` is the model's tool-call syntax, to read the answer's calls in.
    pub fn finish(
        mut self,
        stop: StopReason,
        answers: &Mutex<AnswerIds>,
        tool_format: ToolFormat,
    ) -> Result<()> {
        let turn_id = self.job.turn_id();
        let Some(decoding) = self.decoding.take() else {
            // Stopped while its prompt was read: nothing was generated.
            self.usage.prefill_s = secs(self.prefill_started.elapsed());
            self.usage.stop = Some(stop);
            let usage = std::mem::take(&mut self.usage);
            self.job.emit(EngineEvent::Finished {
                turn_id,
                usage,
                tool_calls: Vec::new(),
            });
            return Ok(());
        };
        let mut observer = SlotObserver {
            job: &self.job,
            stops: &mut self.stops,
            prose: self.prose.as_mut(),
        };
        let mut outcome = decoding.finish(stop, &mut observer)?;
        let mut tail = self.stops.finish();
        if let Some(mut prose) = self.prose.take() {
            tail = prose.push(&tail);
            tail.push_str(&prose.finish());
        }
        if !tail.is_empty() {
            self.job.emit(EngineEvent::Token {
                turn_id,
                text: tail,
            });
        }
        // An answer cut at a stop string is not what its ids spell: not worth remembering.
        if self.job.request.remember_answer && !self.stops.hit() {
            if let Ok(mut answers) = answers.lock() {
                match &self.continued {
                    // The whole answer, as the client will send it back next time.
                    Some(before) => {
                        let text = format!("{}{}", before.text, outcome.text);
                        answers.record(&text, &[before.ids.as_slice(), &outcome.ids].concat());
                    }
                    None => answers.record(&outcome.text, &outcome.ids),
                }
            }
        }
        // A stop string that completes on the last allowed token still ended the answer.
        if self.stops.hit() {
            outcome.usage.stop = Some(StopReason::StopSequence);
        }
        let tool_calls = match reads_calls(&self.job.request, tool_format) {
            true => read_calls(tool_format, &outcome.text, turn_id),
            false => Vec::new(),
        };
        self.job.emit(EngineEvent::Finished {
            turn_id,
            usage: outcome.usage,
            tool_calls,
        });
        Ok(())
    }
}

/// Hears one request's text: stop strings applied, pieces sent to the client. A cancel, a
/// gone client or a stop string stops the request at its next token.
pub struct SlotObserver<'a> {
    job: &'a Job,
    stops: &'a mut StopMatcher,
    prose: Option<&'a mut ProseStream>,
}

impl<'a> SlotObserver<'a> {
    pub fn new(
        job: &'a Job,
        stops: &'a mut StopMatcher,
        prose: Option<&'a mut ProseStream>,
    ) -> Self {
        Self { job, stops, prose }
    }
}

impl TurnObserver for SlotObserver<'_> {
    fn stop_requested(&mut self) -> bool {
        self.stops.hit() || self.job.abandoned()
    }

    fn text(&mut self, piece: &str) -> Result<()> {
        let mut text = self.stops.push(piece);
        if let Some(prose) = self.prose.as_mut() {
            text = prose.push(&text);
        }
        if !text.is_empty() {
            self.job.emit(EngineEvent::Token {
                turn_id: self.job.turn_id(),
                text,
            });
        }
        Ok(())
    }
}

/// Whether the request's answer is read back through its tools' syntax: it offers tools and
/// allows calls, or speaks taper's generic form, whose replies are JSON even when no call is
/// allowed.
fn reads_calls(request: &crate::protocol::GenerateRequest, format: ToolFormat) -> bool {
    request
        .tools
        .as_ref()
        .is_some_and(|tools| tools.choice != ToolChoice::None || format == ToolFormat::Generic)
        && !request.is_raw()
}

/// The calls an answer made, with ids unique to this turn of this run.
fn read_calls(format: ToolFormat, text: &str, turn_id: u64) -> Vec<ToolCall> {
    let answer = split_thinking(text).answer;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    parse::parse(format, answer)
        .calls
        .into_iter()
        .enumerate()
        .map(|(i, call)| ToolCall {
            id: format!("call_{stamp}{turn_id}_{i}"),
            name: call.name,
            arguments: call.arguments,
        })
        .collect()
}
