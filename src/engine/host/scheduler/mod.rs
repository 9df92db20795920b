//! The engine host's loop for a local model: N slots, each with its own KV cache, admitting
//! waiting requests to free slots (the slot whose cached tokens share the longest prefix with
//! the prompt first) and running the next step of every active slot as one batched forward
//! pass. A new prompt is read in chunks that ride along in the same passes, small ones while
//! others decode, so the streams already running do not stall. The chat is this loop with one
//! slot; `taper serve` with `--parallel` of them.
//!
//! [`admission`] moves requests into slots, [`pass`] runs the batched passes, [`saved`] keeps
//! the slots of a model kept loaded.

mod admission;
mod pass;
mod saved;

pub use saved::SavedSlot;

use super::draft::LazyDraft;
use super::job::Job;
use super::slot::Slot;
use super::{HostCommand, Status};
use crate::engine::answer_ids::AnswerIds;
use crate::engine::model::{self, LanguageModel};
use crate::engine::prompt::ModelText;
use crate::protocol::StopReason;
use crate::stats::human_bytes;
use anyhow::{bail, Result};
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Mutex;

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
