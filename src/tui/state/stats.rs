//! Live figures for the stats panel, right at every frame: while a turn runs, the cached
//! tokens and the prompt's size come from the engine's progress events, the time to the first
//! token and the prompt's reading time from the engine's own clock (`FirstToken`), and only
//! the decode rate is estimated from when tokens arrive; when the turn finishes, the engine's
//! [`Usage`] (the one definition of the rates, as `taper ask --stats` prints them) takes over.

use crate::protocol::Usage;
use crate::stats::{rate, secs};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Recent decode rates kept for the sparkline.
const SPARK_SAMPLES: usize = 60;
/// How often (in generation time) a rate sample is taken for the sparkline.
const SPARK_EVERY: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnPhase {
    /// Prefill: `done` of `total` new prompt tokens read.
    ReadingPrompt {
        done: usize,
        total: usize,
    },
    Generating,
}

/// The figures of the turn being generated (which turn runs is `State::phase`).
#[derive(Debug, Clone, PartialEq)]
pub struct TurnStats {
    pub submitted: Instant,
    pub phase: TurnPhase,
    /// New (not reused) prompt tokens, as the last progress event said.
    pub prompt_total: usize,
    pub first_token_at: Option<Instant>,
    pub last_token_at: Option<Instant>,
    /// Text pieces received; about one per token (a piece can hold more than one token when
    /// a character spans several).
    pub pieces: usize,
    /// When the prompt was last reported done, for the live prompt rate.
    prefill_done_at: Option<Instant>,
    /// Prompt tokens reused from the cache, as the engine said.
    pub cached: Option<usize>,
    /// The engine's time to the first token and the prompt's reading time.
    engine_ttft_s: Option<f64>,
    engine_prefill_s: Option<f64>,
    last_sample_at: Option<Instant>,
    pieces_at_last_sample: usize,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveStats {
    pub turn: Option<TurnStats>,
    /// The last finished (or stopped) turn's usage, as the engine measured it.
    pub last: Option<Usage>,
    /// Decode rates (tenths of tok/s) for the sparkline, oldest first.
    pub rates: VecDeque<u64>,
    pub rss: Option<u64>,
    pub peak_rss: Option<u64>,
    /// How long the last tool call took (seconds).
    pub tool_s: Option<f64>,
}

impl LiveStats {
    pub fn start_turn(&mut self, now: Instant) {
        self.turn = Some(TurnStats {
            submitted: now,
            phase: TurnPhase::ReadingPrompt { done: 0, total: 0 },
            prompt_total: 0,
            first_token_at: None,
            last_token_at: None,
            pieces: 0,
            prefill_done_at: None,
            cached: None,
            engine_ttft_s: None,
            engine_prefill_s: None,
            last_sample_at: None,
            pieces_at_last_sample: 0,
        });
    }

    pub fn prompt_progress(&mut self, done: usize, total: usize, cached: usize, now: Instant) {
        if let Some(t) = &mut self.turn {
            t.phase = TurnPhase::ReadingPrompt { done, total };
            t.prompt_total = total;
            t.cached = Some(cached);
            if done >= total {
                t.prefill_done_at = Some(now);
            }
        }
    }

    pub fn token(&mut self, now: Instant) {
        let Some(t) = &mut self.turn else { return };
        t.phase = TurnPhase::Generating;
        t.pieces += 1;
        t.first_token_at.get_or_insert(now);
        t.last_token_at = Some(now);
        let since = t.last_sample_at.or(t.first_token_at).unwrap_or(now);
        if now.duration_since(since) >= SPARK_EVERY {
            let sample = rate(t.pieces - t.pieces_at_last_sample, secs(now - since));
            t.last_sample_at = Some(now);
            t.pieces_at_last_sample = t.pieces;
            push_sample(&mut self.rates, sample);
        }
    }

    /// The engine's figures at the first token.
    pub fn first_token(&mut self, ttft_s: f64, prefill_s: f64) {
        if let Some(t) = &mut self.turn {
            t.engine_ttft_s = Some(ttft_s);
            t.engine_prefill_s = Some(prefill_s);
        }
    }

    /// Ends the turn with the engine's figures.
    pub fn finish(&mut self, usage: Usage) {
        self.turn = None;
        if usage.generated_tokens > 1 {
            push_sample(&mut self.rates, usage.decode_tok_s());
        }
        self.last = Some(usage);
    }

    /// Ends the turn without figures (failed, or abandoned by a new conversation or model).
    pub fn abandon(&mut self) {
        self.turn = None;
    }

    /// Decode rate now: live while generating, else the last turn's.
    pub fn decode_tok_s(&self) -> Option<f64> {
        match &self.turn {
            Some(t) => match (t.first_token_at, t.last_token_at) {
                (Some(first), Some(last)) if t.pieces > 1 => {
                    Some(rate(t.pieces - 1, secs(last - first)))
                }
                _ => None,
            },
            None => self.last.as_ref().map(Usage::decode_tok_s),
        }
    }

    /// The last turn's speculative decoding: the fraction of drafts kept and the tokens per
    /// forward pass; None while a turn runs or when the last one drafted nothing.
    pub fn speculation(&self) -> Option<(f64, f64)> {
        let last = self.last.as_ref().filter(|_| self.turn.is_none())?;
        Some((last.acceptance()?, last.tokens_per_pass()?))
    }

    /// Time to first token: live while generating, else the last turn's.
    pub fn ttft_s(&self) -> Option<f64> {
        match &self.turn {
            Some(t) => t
                .engine_ttft_s
                .or_else(|| t.first_token_at.map(|f| secs(f - t.submitted))),
            None => self.last.as_ref().map(|u| u.ttft_s),
        }
    }

    /// Prompt tokens per second: estimated from progress events, else the last turn's.
    pub fn prompt_tok_s(&self) -> Option<f64> {
        match &self.turn {
            Some(t) => match t.engine_prefill_s {
                Some(prefill_s) => Some(rate(t.prompt_total, prefill_s)),
                None => t
                    .prefill_done_at
                    .map(|done_at| rate(t.prompt_total, secs(done_at - t.submitted))),
            },
            None => self.last.as_ref().map(Usage::prefill_tok_s),
        }
    }

    /// Tokens generated: counted live, else the last turn's.
    pub fn generated(&self) -> Option<usize> {
        match &self.turn {
            Some(t) => Some(t.pieces),
            None => self.last.as_ref().map(|u| u.generated_tokens),
        }
    }

    /// Prompt tokens reused from the cache: this turn's once the engine said, else the last
    /// turn's.
    pub fn cached(&self) -> Option<usize> {
        match &self.turn {
            Some(t) => t.cached,
            None => self.last.as_ref().map(|u| u.cached_tokens),
        }
    }

    /// Context positions in use: this turn's prompt (cached and new) and answer so far once
    /// the engine has said what it reuses; until then, the last turn's.
    pub fn context_used(&self) -> usize {
        let before = self.last.as_ref().map(Usage::context_used).unwrap_or(0);
        match &self.turn {
            Some(TurnStats {
                cached: Some(cached),
                prompt_total,
                pieces,
                ..
            }) => cached + prompt_total + pieces,
            _ => before,
        }
    }
}

fn push_sample(rates: &mut VecDeque<u64>, tok_s: f64) {
    if rates.len() == SPARK_SAMPLES {
        rates.pop_front();
    }
    rates.push_back((tok_s * 10.0).round() as u64);
}
