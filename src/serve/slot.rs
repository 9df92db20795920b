//! One slot of the server: a KV cache of its own, the record of the tokens it holds (kept
//! after a request, so the next turn of that conversation reuses it) and the request it is
//! answering, if any.

use super::job::{Finish, Job, JobEvent};
use super::stops::StopMatcher;
use crate::engine::answer_ids::AnswerIds;
use crate::engine::generation::{Decoding, TurnObserver};
use crate::engine::model::KvCache;
use crate::engine::prefix_cache::PrefixCache;
use crate::engine::tokenizer::TextTokenizer;
use crate::stats::{secs, StopReason, Usage};
use anyhow::Result;
use std::sync::Mutex;
use std::time::Instant;

pub struct Slot<'t> {
    pub cache: KvCache,
    pub prefix: PrefixCache,
    pub active: Option<Active<'t>>,
    /// When the slot last took a request (a counter): among equals, the least recently used
    /// slot is given away first.
    pub last_used: u64,
}

/// A request being answered.
pub struct Active<'t> {
    pub job: Job,
    /// Prompt tokens not yet computed.
    pub pending: Vec<u32>,
    /// The token sampled last, to feed in the next pass.
    pub next: Option<u32>,
    /// Present once the prompt is computed.
    pub decoding: Option<Decoding<'t>>,
    pub usage: Usage,
    pub prefill_started: Instant,
    pub stops: StopMatcher,
}

impl<'t> Slot<'t> {
    pub fn new(cache: KvCache) -> Self {
        Self {
            cache,
            prefix: PrefixCache::default(),
            active: None,
            last_used: 0,
        }
    }

    /// Takes `job`: keeps the cached prefix it shares and queues the rest of its prompt.
    pub fn start(&mut self, job: Job, clock: u64) {
        let reused = self.prefix.reusable_prefix(&job.prompt);
        self.cache.truncate(reused);
        self.prefix.truncate(reused);
        let usage = Usage {
            prompt_tokens: job.prompt.len(),
            cached_tokens: reused,
            context_size: self.cache.capacity(),
            ..Usage::default()
        };
        self.last_used = clock;
        self.active = Some(Active {
            pending: job.prompt[reused..].to_vec(),
            next: None,
            decoding: None,
            usage,
            prefill_started: Instant::now(),
            stops: StopMatcher::new(job.stop.clone()),
            job,
        });
    }

    /// Forgets everything it holds (after a failure its cache is in an unknown state).
    pub fn reset(&mut self) {
        self.active = None;
        self.cache.truncate(0);
        self.prefix.clear();
    }
}

impl Active<'_> {
    /// The client has gone (its receiver is dropped).
    pub fn abandoned(&self) -> bool {
        self.job.events.is_closed()
    }

    /// Ends the answer: held-back text out, the ids remembered, the usage sent.
    pub fn finish(mut self, stop: StopReason, answers: &Mutex<AnswerIds>) -> Result<()> {
        let Some(decoding) = self.decoding.take() else {
            return Ok(()); // Stopped during its prompt: only a vanished client does that.
        };
        let mut observer = SlotObserver {
            job: &self.job,
            stops: &mut self.stops,
        };
        let outcome = decoding.finish(stop, &mut observer)?;
        let tail = self.stops.finish();
        if !tail.is_empty() {
            let _ = self.job.events.send(JobEvent::Text(tail));
        }
        // An answer cut at a stop string is not what its ids spell: not worth remembering.
        if self.job.remember_answer && !self.stops.hit() {
            if let Ok(mut answers) = answers.lock() {
                answers.record(&outcome.text, &outcome.ids);
            }
        }
        // A stop string that completes on the last allowed token still ended the answer.
        let finish = match stop {
            _ if self.stops.hit() => Finish::Stop,
            StopReason::MaxTokens | StopReason::ContextFull => Finish::Length,
            StopReason::EndOfTurn | StopReason::Cancelled => Finish::Stop,
        };
        let _ = self.job.events.send(JobEvent::Done {
            usage: outcome.usage,
            finish,
        });
        Ok(())
    }
}

impl<'t> Active<'t> {
    /// The prompt is computed: sampling begins.
    pub fn begin_decoding(&mut self, tokenizer: &'t TextTokenizer) {
        self.usage.prefill_s = secs(self.prefill_started.elapsed());
        let usage = std::mem::take(&mut self.usage);
        self.decoding = Some(Decoding::new(
            Some(tokenizer),
            &self.job.options,
            self.job.asked,
            usage,
        ));
    }
}

/// Hears one request's text: stop strings applied, pieces sent to the client. A gone client
/// or a stop string stops the request at its next token.
pub struct SlotObserver<'a> {
    job: &'a Job,
    stops: &'a mut StopMatcher,
}

impl<'a> SlotObserver<'a> {
    pub fn new(job: &'a Job, stops: &'a mut StopMatcher) -> Self {
        Self { job, stops }
    }
}

impl TurnObserver for SlotObserver<'_> {
    fn stop_requested(&mut self) -> bool {
        self.stops.hit() || self.job.events.is_closed()
    }

    fn text(&mut self, piece: &str) -> Result<()> {
        let out = self.stops.push(piece);
        if !out.is_empty() {
            // A send fails only when the client has gone: noticed before the next token.
            let _ = self.job.events.send(JobEvent::Text(out));
        }
        Ok(())
    }
}
