//! The batched pass: each decoding slot feeds its last sampled token (and its drafts),
//! prompts being read feed a chunk, all in one forward pass; then every slot with logits
//! samples its next tokens and the rejected drafts leave its cache.

use super::Scheduler;
use crate::engine::generation::{Step, PREFILL_CHUNK};
use crate::engine::host::slot::SlotObserver;
use crate::engine::model::SlotStep;
use crate::engine::speculative::sample_positions;
use crate::protocol::StopReason;
use anyhow::Result;

/// What one slot feeds a pass: its tokens, of which the last `drafted` are drafts.
#[derive(Debug, Default)]
struct Feed {
    tokens: Vec<u32>,
    drafted: usize,
}

/// Prompt tokens one pass reads beside running streams: each pass then costs a few decode
/// steps' time, not a whole prefill chunk's.
const PREFILL_BESIDE_DECODING: usize = 64;

impl<'t> Scheduler<'t> {
    /// One batched pass: each decoding slot feeds its last token (and its drafts, when it
    /// speculates), prompts in reading feed a chunk; then every slot that has logits samples
    /// its next tokens.
    pub(super) fn step(&mut self) -> Result<()> {
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
}
