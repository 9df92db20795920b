//! Admission: waiting requests move into free slots in order, each to the slot whose cached
//! tokens share the longest prefix with its prompt, once its prompt is made (the conversation
//! fitted to the context, the answer it continues found) and its grammar and draft model are
//! ready.

use super::Scheduler;
use crate::chat::Role;
use crate::engine::context_fit::Window;
use crate::engine::host::job::Job;
use crate::engine::host::slot::{Admitted, Continued, Slot};
use crate::protocol::{Prompt, Speculation, Usage};
use anyhow::{bail, Result};
use std::sync::atomic::Ordering;

/// A request's prompt ids, the usage its making knows, the window to keep for a
/// conversation's next turn, and the answer it goes on with.
type PromptTokens = (Vec<u32>, Usage, Option<Window>, Option<Continued>);

impl<'t> Scheduler<'t> {
    /// Moves waiting requests into free slots, in order.
    pub(super) fn admit(&mut self) {
        while self.slots.iter().any(|s| s.active.is_none()) {
            let Some(job) = self.waiting.pop_front() else {
                return;
            };
            if job.abandoned() {
                self.status.queued.fetch_sub(1, Ordering::SeqCst);
                crate::engine::host::run::finish_unstarted(&job);
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
    use crate::engine::host::scheduler::SavedSlot;
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
