//! The engine thread of the server: N slots, each with its own KV cache, and one loop that
//! admits queued requests to free slots (the slot whose cached tokens share the longest
//! prefix with the prompt first) and runs the decode steps of every active slot as one
//! batched forward pass. A new prompt is read in chunks that ride along in the same passes,
//! small ones while others decode, so the streams already running do not stall.

use super::job::{Job, JobEvent};
use super::penalties;
use super::slot::Slot;
use crate::engine::answer_ids::AnswerIds;
use crate::engine::generation::{Step, PREFILL_CHUNK};
use crate::engine::model::{LanguageModel, SlotStep};
use crate::engine::tokenizer::TextTokenizer;
use crate::stats::StopReason;
use anyhow::Result;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::{Arc, Mutex};

/// Prompt tokens one pass reads beside running streams: each pass then costs a few decode
/// steps' time, not a whole prefill chunk's.
const PREFILL_BESIDE_DECODING: usize = 64;

/// What the HTTP side may read of the engine's state (for /health and the queue limit).
#[derive(Debug, Default)]
pub struct Status {
    /// Slots answering a request.
    pub busy: AtomicUsize,
    /// Requests accepted but not yet in a slot.
    pub queued: AtomicUsize,
}

pub struct Scheduler<'t> {
    pub model: Box<dyn LanguageModel>,
    pub tokenizer: &'t TextTokenizer,
    pub answers: &'t Mutex<AnswerIds>,
    pub slots: Vec<Slot<'t>>,
    pub jobs: Receiver<Job>,
    pub status: Arc<Status>,
    clock: u64,
}

impl<'t> Scheduler<'t> {
    /// `parallel` slots, each with a KV cache like the model's own.
    pub fn new(
        model: Box<dyn LanguageModel>,
        tokenizer: &'t TextTokenizer,
        answers: &'t Mutex<AnswerIds>,
        parallel: usize,
        jobs: Receiver<Job>,
        status: Arc<Status>,
    ) -> Result<Self> {
        let slots = (0..parallel.max(1))
            .map(|_| model.new_cache().map(Slot::new))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            model,
            tokenizer,
            answers,
            slots,
            jobs,
            status,
            clock: 0,
        })
    }

    /// Serves until the HTTP side hangs up its end of the queue.
    pub fn run(&mut self) {
        while self.admit() {
            if !self.slots.iter().any(|s| s.active.is_some()) {
                continue;
            }
            let outcome = catch_unwind(AssertUnwindSafe(|| self.step()));
            let failure = match outcome {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => format!("{e:#}"),
                Err(_) => "internal error: the engine panicked".to_string(),
            };
            self.fail_all(&failure);
        }
    }

    /// Moves queued requests into free slots; blocks for one when nothing is running. False
    /// once the queue is closed and nothing runs.
    fn admit(&mut self) -> bool {
        loop {
            let running = self.slots.iter().any(|s| s.active.is_some());
            if self.slots.iter().all(|s| s.active.is_some()) {
                return true;
            }
            let job = if running {
                match self.jobs.try_recv() {
                    Ok(job) => job,
                    Err(TryRecvError::Empty) => return true,
                    Err(TryRecvError::Disconnected) => return true,
                }
            } else {
                match self.jobs.recv() {
                    Ok(job) => job,
                    Err(_) => return false,
                }
            };
            if job.events.is_closed() {
                self.status.queued.fetch_sub(1, Ordering::SeqCst);
                continue; // The client left while it waited.
            }
            // Busy before not queued: `/health` never shows a request in neither count.
            self.status.busy.fetch_add(1, Ordering::SeqCst);
            self.status.queued.fetch_sub(1, Ordering::SeqCst);
            let slot = best_slot(&self.slots, &job.prompt);
            self.clock += 1;
            self.slots[slot].start(job, self.clock);
        }
    }

    /// One batched pass: each decoding slot feeds its last token, prompts in reading feed a
    /// chunk; then every slot that has logits samples its next token.
    fn step(&mut self) -> Result<()> {
        self.drop_abandoned()?;
        let decoding = self
            .slots
            .iter()
            .filter(|s| s.active.as_ref().is_some_and(|a| a.next.is_some()))
            .count();
        let mut budget = if decoding > 0 {
            PREFILL_BESIDE_DECODING
        } else {
            PREFILL_CHUNK
        };
        // The tokens each slot feeds this pass (empty: it waits).
        let mut feeds: Vec<Vec<u32>> = vec![Vec::new(); self.slots.len()];
        for (slot, feed) in self.slots.iter_mut().zip(feeds.iter_mut()) {
            let Some(active) = slot.active.as_mut() else {
                continue;
            };
            if let Some(next) = active.next {
                *feed = vec![next];
            } else if budget > 0 && !active.pending.is_empty() {
                let n = active.pending.len().min(budget);
                budget -= n;
                *feed = active.pending.drain(..n).collect();
            }
        }
        let mut steps: Vec<SlotStep> = Vec::new();
        let mut order = Vec::new();
        for (i, (slot, feed)) in self.slots.iter_mut().zip(&feeds).enumerate() {
            if !feed.is_empty() {
                steps.push(SlotStep {
                    cache: &mut slot.cache,
                    tokens: feed,
                });
                order.push(i);
            }
        }
        if steps.is_empty() {
            return Ok(());
        }
        let logits = self.model.forward_batch(&mut steps)?;
        drop(steps);
        let vocab = self.model.config().vocab_size;
        for (row, &i) in logits.chunks_exact(vocab).zip(&order) {
            self.slots[i].prefix.extend(&feeds[i]);
            // A failure of one answer (its logits not finite, its text not decodable) ends
            // that answer alone; the pass itself went well for the others.
            if let Err(e) = self.sample(i, &mut row.to_vec()) {
                self.fail_slot(i, &format!("{e:#}"));
            }
        }
        Ok(())
    }

    /// Slot `i` has the logits of its last fed token: the next token, unless its prompt is
    /// still being read.
    fn sample(&mut self, i: usize, logits: &mut [f32]) -> Result<()> {
        let tokenizer = self.tokenizer;
        let slot = &mut self.slots[i];
        let Some(active) = slot.active.as_mut() else {
            return Ok(());
        };
        if !active.pending.is_empty() {
            return Ok(());
        }
        if active.decoding.is_none() {
            active.begin_decoding(tokenizer);
        }
        let (frequency, presence) = (active.job.frequency_penalty, active.job.presence_penalty);
        let Some(decoding) = active.decoding.as_mut() else {
            return Ok(());
        };
        penalties::apply(logits, &decoding.outcome().ids, frequency, presence);
        let mut observer = crate::serve::slot::SlotObserver::new(&active.job, &mut active.stops);
        let step = decoding.step(logits, slot.prefix.tokens(), &mut observer)?;
        let stop = match step {
            Step::Next(next) if slot.cache.len() < slot.cache.capacity() => {
                active.next = Some(next);
                return Ok(());
            }
            Step::Next(_) => StopReason::ContextFull,
            Step::Stop(stop) => stop,
        };
        self.release(i, stop)
    }

    /// Ends slot `i`'s request; the slot keeps its cache for the next.
    fn release(&mut self, i: usize, stop: StopReason) -> Result<()> {
        let slot = &mut self.slots[i];
        if let Some(active) = slot.active.take() {
            self.status.busy.fetch_sub(1, Ordering::SeqCst);
            active.finish(stop, self.answers)?;
        }
        Ok(())
    }

    /// Frees the slots whose clients have gone, before any work is spent on them.
    fn drop_abandoned(&mut self) -> Result<()> {
        for i in 0..self.slots.len() {
            if self.slots[i].active.as_ref().is_some_and(|a| a.abandoned()) {
                self.release(i, StopReason::Cancelled)?;
            }
        }
        Ok(())
    }

    /// A pass failed: every running request hears why, and every slot starts afresh.
    fn fail_all(&mut self, message: &str) {
        for i in 0..self.slots.len() {
            self.fail_slot(i, message);
        }
    }

    /// Slot `i`'s request hears why it failed, and the slot starts afresh (its cache may hold
    /// positions its record does not).
    fn fail_slot(&mut self, i: usize, message: &str) {
        let slot = &mut self.slots[i];
        if let Some(active) = slot.active.take() {
            self.status.busy.fetch_sub(1, Ordering::SeqCst);
            let _ = active
                .job
                .events
                .send(JobEvent::Failed(message.to_string()));
        }
        slot.reset();
    }
}

/// The free slot whose cached tokens share the longest prefix with `prompt`; among equal
/// ones, the least recently used (so other conversations' caches last longest).
fn best_slot(slots: &[Slot], prompt: &[u32]) -> usize {
    let mut best: Option<(usize, usize, u64)> = None;
    for (i, slot) in slots.iter().enumerate() {
        if slot.active.is_some() {
            continue;
        }
        let shared = slot.prefix.reusable_prefix(prompt);
        let better = match best {
            None => true,
            Some((_, s, used)) => shared > s || (shared == s && slot.last_used < used),
        };
        if better {
            best = Some((i, shared, slot.last_used));
        }
    }
    best.map_or(0, |(i, _, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::model::{CacheType, KvCache};

    fn slot(tokens: &[u32], last_used: u64) -> Slot<'static> {
        let mut s = Slot::new(KvCache::uniform(1, 1, 32, 8, CacheType::F32).unwrap());
        s.prefix.extend(tokens);
        s.last_used = last_used;
        s
    }

    #[test]
    fn a_prompt_goes_to_the_slot_holding_most_of_it() {
        let slots = [slot(&[1, 2], 1), slot(&[1, 2, 3, 4], 2), slot(&[9], 3)];
        assert_eq!(best_slot(&slots, &[1, 2, 3, 4, 5]), 1);
        assert_eq!(best_slot(&slots, &[9, 9]), 2);
    }

    #[test]
    fn among_equals_the_least_recently_used_slot_is_given_away() {
        let slots = [slot(&[5], 7), slot(&[6], 3), slot(&[], 4)];
        assert_eq!(best_slot(&slots, &[1, 2]), 1);
    }
}
