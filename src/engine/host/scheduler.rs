//! The engine host's loop for a local model: N slots, each with its own KV cache, admitting
//! waiting requests to free slots (the slot whose cached tokens share the longest prefix with
//! the prompt first) and running the next step of every active slot as one batched forward
//! pass. A new prompt is read in chunks that ride along in the same passes, small ones while
//! others decode, so the streams already running do not stall. The chat is this loop with one
//! slot; `taper serve` with `--parallel` of them.

use super::draft::LazyDraft;
use super::job::Job;
use super::slot::{Admitted, Continued, Slot, SlotObserver};
use super::{HostCommand, Status};
use crate::chat::Role;
use crate::engine::answer_ids::AnswerIds;
use crate::engine::context_fit::Window;
use crate::engine::generation::{Step, PREFILL_CHUNK};
use crate::engine::model::{self, KvCache, LanguageModel, SlotStep};
use crate::engine::prefix_cache::PrefixCache;
use crate::engine::prompt::ModelText;
use crate::engine::speculative::{sample_positions, DraftMemory};
use crate::protocol::{Prompt, Speculation, StopReason, Usage};
use crate::stats::human_bytes;
use anyhow::{bail, Result};
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Mutex;

/// A request's prompt ids, the usage its making knows, the window to keep for a
/// conversation's next turn, and the answer it goes on with.
type PromptTokens = (Vec<u32>, Usage, Option<Window>, Option<Continued>);

/// What one slot feeds a pass: its tokens, of which the last `drafted` are drafts.
#[derive(Debug, Default)]
struct Feed {
    tokens: Vec<u32>,
    drafted: usize,
}

/// Prompt tokens one pass reads beside running streams: each pass then costs a few decode
/// steps' time, not a whole prefill chunk's.
const PREFILL_BESIDE_DECODING: usize = 64;

/// A local model and its draft model.
pub type Models = (Box<dyn LanguageModel>, LazyDraft);

pub struct Scheduler<'t> {
    model: Box<dyn LanguageModel>,
    draft: LazyDraft,
    text: &'t ModelText,
    answers: &'t Mutex<AnswerIds>,
    slots: Vec<Slot<'t>>,
    /// Requests accepted but not yet in a slot, oldest first.
    waiting: VecDeque<Job>,
    status: &'t Status,
    clock: u64,
}

impl<'t> Scheduler<'t> {
    /// `slots` slots, each with a KV cache like the model's own; refused when their caches,
    /// all full, would need more memory than the machine has (the load checked one).
    pub fn new(
        models: Models,
        text: &'t ModelText,
        answers: &'t Mutex<AnswerIds>,
        slots: usize,
        status: &'t Status,
    ) -> Result<Self> {
        let model = models.0.as_ref();
        check_slots_fit(model, slots)?;
        let slots = (0..slots.max(1))
            .map(|_| model.new_cache().map(SavedSlot::new))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self::resume(models, text, answers, slots, status))
    }

    /// A model's scheduler again, its slots as [`Scheduler::into_parts`] left them (a switch
    /// back to a model kept loaded): each conversation's cached tokens are still there.
    pub fn resume(
        (model, draft): Models,
        text: &'t ModelText,
        answers: &'t Mutex<AnswerIds>,
        slots: Vec<SavedSlot>,
        status: &'t Status,
    ) -> Self {
        let clock = slots.iter().map(|s| s.last_used).max().unwrap_or(0);
        Self {
            model,
            draft,
            text,
            answers,
            slots: slots.into_iter().map(SavedSlot::into_slot).collect(),
            waiting: VecDeque::new(),
            status,
            clock,
        }
    }

    /// The models and the slots, once [`Scheduler::close`] has ended every request.
    pub fn into_parts(self) -> (Models, Vec<SavedSlot>) {
        let slots = self.slots.into_iter().map(SavedSlot::from_slot).collect();
        ((self.model, self.draft), slots)
    }

    /// Serves requests until a command that is not one arrives (a load, a connect, an unload,
    /// a shutdown), which it returns; None when every client has hung up. Requests still
    /// running or waiting then fail with `why` (see [`Scheduler::close`]).
    pub fn run(&mut self, commands: &Receiver<HostCommand>) -> Option<HostCommand> {
        loop {
            let busy = !self.waiting.is_empty() || self.slots.iter().any(|s| s.active.is_some());
            let command = if busy {
                match commands.try_recv() {
                    Ok(c) => Some(c),
                    Err(TryRecvError::Empty) => None,
                    Err(TryRecvError::Disconnected) => return None,
                }
            } else {
                match commands.recv() {
                    Ok(c) => Some(c),
                    Err(_) => return None,
                }
            };
            match command {
                Some(HostCommand::Submit(job)) => {
                    self.waiting.push_back(job);
                    continue; // Take every request that is there before the next pass.
                }
                Some(other) => return Some(other),
                None => {}
            }
            self.admit();
            if !self.slots.iter().any(|s| s.active.is_some()) {
                continue;
            }
            let failure = match catch_unwind(AssertUnwindSafe(|| self.step())) {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => format!("{e:#}"),
                Err(panic) => format!("internal error: {}", super::panic_message(&*panic)),
            };
            self.fail_all(&failure);
        }
    }

    /// The model's time is over: every request running or waiting hears `why`.
    pub fn close(&mut self, why: &str) {
        self.fail_all(why);
        for job in self.waiting.drain(..) {
            self.status.queued.fetch_sub(1, Ordering::SeqCst);
            job.fail(why);
        }
    }

    /// Moves waiting requests into free slots, in order.
    fn admit(&mut self) {
        while self.slots.iter().any(|s| s.active.is_none()) {
            let Some(job) = self.waiting.pop_front() else {
                return;
            };
            if job.abandoned() {
                self.status.queued.fetch_sub(1, Ordering::SeqCst);
                super::run::finish_unstarted(&job);
                continue;
            }
            // A conversation is fitted with the window of the slot used last (the chat's
            // one slot holds its own conversation).
            let recent = self
                .slots
                .iter()
                .filter(|s| s.active.is_none())
                .max_by_key(|s| s.last_used)
                .map_or_else(Window::default, |s| s.window);
            let prompt = match self.prompt_ids(&job, recent) {
                Ok(prompt) => prompt,
                Err(e) => {
                    self.status.queued.fetch_sub(1, Ordering::SeqCst);
                    job.fail(format!("{e:#}"));
                    continue;
                }
            };
            // Busy before not queued: `/health` never shows a request in neither count.
            self.status.busy.fetch_add(1, Ordering::SeqCst);
            self.status.queued.fetch_sub(1, Ordering::SeqCst);
            let slot = best_slot(&self.slots, &prompt.ids);
            self.clock += 1;
            if let Some(window) = prompt.window {
                self.slots[slot].window = window;
            }
            self.slots[slot].start(job, prompt, self.clock, self.text.template.tool_format());
        }
    }

    /// A request made ready: its grammar compiled and its draft model read (either failing
    /// here, before any work), its prompt's ids.
    fn prompt_ids(&mut self, job: &Job, window: Window) -> Result<Admitted> {
        let request = &job.request;
        let draft = match request.speculation {
            Speculation::Draft => self.draft.get(self.model.as_ref(), self.text)?,
            Speculation::Off | Speculation::Ngram => None,
        };
        let constraint = match (&request.constraint, &request.tools) {
            (Some(constraint), _) => Some(constraint.clone()),
            (None, Some(tools)) if !request.is_raw() => self.text.tool_constraint(tools),
            (None, _) => None,
        };
        let grammar = match &constraint {
            Some(constraint) => Some(self.text.grammars()?.start(constraint)?),
            None => None,
        };
        let (ids, usage, window, continued) = self.prompt_tokens(job, window)?;
        Ok(Admitted {
            ids,
            usage,
            window,
            grammar,
            continued,
            draft,
        })
    }

    /// A request's prompt ids, with the usage its making knows (messages left out), for a
    /// conversation the window to keep for its next turn, and the answer it goes on with.
    fn prompt_tokens(&self, job: &Job, window: Window) -> Result<PromptTokens> {
        let context = self.model.context_size();
        let request = &job.request;
        // Leave room for the answer: all of max_tokens, up to a quarter of the context.
        let reserve = request.max_tokens.clamp(1, (context / 4).max(1));
        let budget = context.saturating_sub(reserve).max(1);
        let answers = self
            .answers
            .lock()
            .map_err(|_| anyhow::anyhow!("internal error: the answer store is poisoned"))?;
        let (fitted, window, continued) = match &request.prompt {
            Prompt::Tokens(ids) => {
                if ids.is_empty() || ids.len() >= context {
                    bail!(
                        "a prompt of {} tokens does not fit a context of {context}",
                        ids.len()
                    );
                }
                return Ok((ids.clone(), Usage::default(), None, None));
            }
            Prompt::Conversation(messages) => {
                let fitted = self.text.fitted(
                    messages,
                    request.tools.as_ref(),
                    false,
                    budget,
                    window,
                    &answers,
                )?;
                let window = fitted.window;
                (fitted, Some(window), None)
            }
            Prompt::Raw(messages) => {
                let fitted =
                    self.text
                        .fitted(messages, None, true, budget, Window::default(), &answers)?;
                (fitted, None, None)
            }
            Prompt::Continue(messages) => {
                let Some((answer, before)) = messages
                    .split_last()
                    .filter(|(last, _)| last.role == Role::Assistant)
                else {
                    bail!("nothing to continue: the conversation does not end with an answer");
                };
                // The answer's own ids where the engine wrote it, so the cache holds them.
                let ids = match answers.get(&answer.content) {
                    Some(ids) => ids.to_vec(),
                    None => self.text.tokenizer.encode(&answer.content)?,
                };
                let room = budget.saturating_sub(ids.len());
                if room == 0 {
                    bail!(
                        "the answer so far ({} tokens) leaves no room to go on in a context \
                         of {context}",
                        ids.len()
                    );
                }
                let mut fitted = self.text.fitted(
                    before,
                    request.tools.as_ref(),
                    false,
                    room,
                    window,
                    &answers,
                )?;
                fitted.tokens.extend_from_slice(&ids);
                let window = fitted.window;
                let continued = Continued {
                    text: answer.content.clone(),
                    ids,
                };
                (fitted, Some(window), Some(continued))
            }
        };
        let usage = Usage {
            dropped_messages: fitted.dropped_messages,
            ..Usage::default()
        };
        Ok((fitted.tokens, usage, window, continued))
    }

    /// One batched pass: each decoding slot feeds its last token (and its drafts, when it
    /// speculates), prompts in reading feed a chunk; then every slot that has logits samples
    /// its next tokens.
    fn step(&mut self) -> Result<()> {
        self.drop_abandoned()?;
        let feeds = self.feeds();
        let mut steps: Vec<SlotStep> = Vec::new();
        let mut order = Vec::new();
        for (i, (slot, feed)) in self.slots.iter_mut().zip(&feeds).enumerate() {
            if !feed.tokens.is_empty() {
                steps.push(SlotStep {
                    cache: &mut slot.cache,
                    tokens: &feed.tokens,
                    all_logits: feed.drafted > 0,
                });
                order.push(i);
            }
        }
        if steps.is_empty() {
            return Ok(());
        }
        let mut logits = self.model.forward_batch(&mut steps)?;
        drop(steps);
        let vocab = self.model.config().vocab_size;
        let mut rest = &mut logits[..];
        for &i in &order {
            let feed = &feeds[i];
            let (rows, after) = rest.split_at_mut(vocab * (feed.drafted + 1));
            rest = after;
            let slot = &mut self.slots[i];
            if feed.drafted > 0 {
                // Only the fed token is known to stay; sampling keeps the drafts it agrees
                // with.
                slot.prefix.extend(&feed.tokens[..1]);
            } else {
                slot.prefix.extend(&feed.tokens);
            }
            if let Some(active) = slot.active.as_mut().filter(|a| a.next.is_none()) {
                active.read_more(feed.tokens.len());
            }
            // A failure of one answer (its logits not finite, its text not decodable) ends
            // that answer alone; the pass itself went well for the others.
            let drafts = &feed.tokens[feed.tokens.len() - feed.drafted..];
            if let Err(e) = self.sample(i, rows, drafts) {
                self.fail_slot(i, &format!("{e:#}"));
            }
        }
        Ok(())
    }

    /// What each slot feeds this pass (no tokens: it waits): a decoding slot its last token
    /// and the drafts its drafter guesses, a slot reading its prompt the next chunk while the
    /// pass has room.
    fn feeds(&mut self) -> Vec<Feed> {
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
        let mut feeds: Vec<Feed> = (0..self.slots.len()).map(|_| Feed::default()).collect();
        for (slot, feed) in self.slots.iter_mut().zip(feeds.iter_mut()) {
            let Some(active) = slot.active.as_mut() else {
                continue;
            };
            if let Some(next) = active.next {
                // The pass writes the token and every draft: never past the context.
                let room = slot.cache.capacity().saturating_sub(slot.cache.len() + 1);
                let drafts = match active.drafter.as_mut() {
                    Some(drafter) => drafter.propose(slot.prefix.tokens(), next, room),
                    None => Vec::new(),
                };
                feed.drafted = drafts.len();
                feed.tokens = [&[next][..], &drafts].concat();
            } else if budget > 0 && !active.pending.is_empty() {
                let n = active.pending.len().min(budget);
                budget -= n;
                feed.tokens = active.pending.drain(..n).collect();
            }
        }
        feeds
    }

    /// Slot `i` has the logits of its fed tokens (`rows`: the last one's, or one row for the
    /// decoded token and one per draft in `drafts`): its next tokens, unless its prompt is
    /// still being read.
    fn sample(&mut self, i: usize, rows: &mut [f32], drafts: &[u32]) -> Result<()> {
        let tokenizer = &self.text.tokenizer;
        let slot = &mut self.slots[i];
        let Some(active) = slot.active.as_mut() else {
            return Ok(());
        };
        if !active.pending.is_empty() {
            return Ok(());
        }
        // A pass that fed a sampled token (not the prompt's last chunk) is a decode pass.
        let decode_pass = active.next.is_some();
        if active.decoding.is_none() {
            active.begin_decoding(tokenizer);
        }
        let Some(decoding) = active.decoding.as_mut() else {
            return Ok(());
        };
        let mut observer = SlotObserver::new(&active.job, &mut active.stops, active.prose.as_mut());
        let verified = sample_positions(decoding, rows, drafts, &mut slot.prefix, &mut observer)?;
        if decode_pass {
            decoding.count_pass(drafts.len(), verified.accepted);
        }
        if let Some(drafter) = active.drafter.as_mut() {
            drafter.record(drafts.len(), verified.accepted);
        }
        // The rejected drafts' positions leave the cache, which again holds what the record
        // says.
        slot.cache.truncate(slot.prefix.tokens().len());
        active.after_token();
        let stop = match verified.step {
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
        if let Some(mut active) = slot.active.take() {
            self.status.busy.fetch_sub(1, Ordering::SeqCst);
            slot.draft_memory = active.drafter.take().and_then(|d| d.into_memory());
            active.finish(stop, self.answers, self.text.template.tool_format())?;
        }
        Ok(())
    }

    /// Ends the requests nobody wants any more (cancelled, or their clients gone) before any
    /// work is spent on them.
    fn drop_abandoned(&mut self) -> Result<()> {
        for i in 0..self.slots.len() {
            if self.slots[i]
                .active
                .as_ref()
                .is_some_and(|a| a.job.abandoned())
            {
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

    /// Slot `i`'s request, if any, hears why it failed, and the slot starts afresh (its cache
    /// may hold positions its record does not). An idle slot keeps its cache: it took no part
    /// in what failed, and a model kept loaded finds its conversations there.
    fn fail_slot(&mut self, i: usize, message: &str) {
        let slot = &mut self.slots[i];
        if let Some(active) = slot.active.take() {
            self.status.busy.fetch_sub(1, Ordering::SeqCst);
            active.job.fail(message);
            slot.reset();
        }
    }
}

/// Refuses slots whose KV caches, all full, need more memory than the machine has.
fn check_slots_fit(model: &dyn LanguageModel, slots: usize) -> Result<()> {
    if slots <= 1 {
        return Ok(()); // The load checked one.
    }
    let one = model::cache_bytes(model.config(), model.context_size(), model.cache_type())?;
    let needed = one.saturating_mul(slots as u64);
    if let Some(available) = crate::stats::available_memory_bytes() {
        if needed > available {
            bail!(
                "{slots} slots of {} tokens need {} of KV cache, more than the {} this machine \
                 has available: lower --parallel or --ctx-size",
                model.context_size(),
                human_bytes(needed),
                human_bytes(available)
            );
        }
    }
    Ok(())
}

/// A slot while its model is not in use: its cache, the tokens the cache holds and the window
/// of its last conversation (no request: a closed scheduler has none).
pub struct SavedSlot {
    cache: KvCache,
    draft_memory: Option<DraftMemory>,
    prefix: PrefixCache,
    window: Window,
    last_used: u64,
}

impl SavedSlot {
    fn new(cache: KvCache) -> Self {
        Self {
            cache,
            draft_memory: None,
            prefix: PrefixCache::default(),
            window: Window::default(),
            last_used: 0,
        }
    }

    fn from_slot(slot: Slot) -> Self {
        Self {
            cache: slot.cache,
            draft_memory: slot.draft_memory,
            prefix: slot.prefix,
            window: slot.window,
            last_used: slot.last_used,
        }
    }

    fn into_slot<'t>(self) -> Slot<'t> {
        Slot {
            cache: self.cache,
            draft_memory: self.draft_memory,
            prefix: self.prefix,
            window: self.window,
            active: None,
            last_used: self.last_used,
        }
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
    use crate::engine::model::KvCache;
    use crate::protocol::CacheType;

    fn slot(tokens: &[u32], last_used: u64) -> Slot<'static> {
        let mut s =
            SavedSlot::new(KvCache::uniform(1, 1, 32, 8, CacheType::F32).unwrap()).into_slot();
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
