//! What speculative decoding buys (`taper bench --speculative ngram`, the default): greedy
//! decode with drafts beside plain decode on three workloads, the fresh chat turn the bench
//! already times (little repeats, so drafting must not cost), a rewrite of a code snippet
//! with one name changed and a paragraph written out again with its spelling corrected
//! (most of either answer repeats the prompt); and, for every model, what
//! a verify pass of k tokens costs against one decode step, which sets the speed-up a model
//! gets at a given acceptance (the only figure that means anything for shape-only files,
//! whose random weights make acceptance meaningless).

use super::measure::StepClock;
use crate::chat::Message;
use crate::engine::answer_ids::AnswerIds;
use crate::engine::generation::{Generator, TurnOptions};
use crate::engine::prompt::ModelText;
use crate::engine::speculative::{DraftMemory, Drafter, SharedDraft};
use crate::protocol::{SamplingParams, Usage};
use crate::stats::{self, secs};
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// The repetitive workload's code (about 300 tokens with its question).
const SNIPPET: &str = r#"use std::collections::HashMap;

/// Counts how often each word occurs in `text`, ignoring case and punctuation.
pub fn word_counts(text: &str) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for word in text.split_whitespace() {
        let cleaned: String = word
            .chars()
            .filter(|c| c.is_alphanumeric())
            .collect::<String>()
            .to_lowercase();
        if cleaned.is_empty() {
            continue;
        }
        *counts.entry(cleaned).or_insert(0) += 1;
    }
    counts
}

/// The `n` most frequent words of `text`, most frequent first, ties in alphabetical order.
pub fn top_words(text: &str, n: usize) -> Vec<(String, usize)> {
    let counts = word_counts(text);
    let mut sorted: Vec<(String, usize)> = counts.into_iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    sorted.truncate(n);
    sorted
}

fn main() {
    let text = "the cat sat on the mat and the dog sat on the cat";
    for (word, count) in top_words(text, 3) {
        println!("{word}: {count}");
    }
}
"#;

/// Most tokens of the rewrite's answer: about the snippet's length.
pub const REWRITE_TOKENS: usize = 320;

/// The quote's paragraph (about 80 tokens), with two words misspelt.
const PARAGRAPH: &str = "The lighthouse keeper climbed the one hundred and twenty three steps \
    every evening at sunset. He carried a small lamp, a flask of tea and the logbook where he \
    wrote down the wether, the ships he had seen and anything unusual on the water. In fourty \
    years he had never missed a night, not even in the great storm of the winter when the \
    waves reached the windows of the lamp room.";

/// Most tokens of the quote's answer: the paragraph about twice (a model that goes on
/// repeating it is cut there).
pub const QUOTE_TOKENS: usize = 160;

/// Verify passes of 2..=this many tokens are timed against a decode step.
const LONGEST_VERIFY: usize = 8;
/// Times each pass is repeated (the median counts).
const VERIFY_REPEATS: usize = 7;

/// The repetitive workload's question.
pub fn rewrite_question() -> String {
    format!(
        "Rewrite this code with the variable `counts` renamed to `tally`. Reply with the \
         whole code only.\n\n```rust\n{SNIPPET}```"
    )
}

/// The quote's question.
pub fn quote_question() -> String {
    format!("Correct the spelling mistakes in this paragraph and write it out again in full:\n\n{PARAGRAPH}")
}

/// The repetitive workloads' prompts as the engine builds them.
#[derive(Debug, Clone)]
pub struct RepetitivePrompts {
    pub rewrite: Vec<u32>,
    pub quote: Vec<u32>,
}

impl RepetitivePrompts {
    pub fn new(text: &ModelText) -> Result<Self> {
        let ids =
            |question: String| text.chat_ids(&[Message::user(question)], &AnswerIds::default());
        Ok(Self {
            rewrite: ids(rewrite_question())?,
            quote: ids(quote_question())?,
        })
    }

    /// The context either workload needs, its answer included.
    pub fn context_needed(&self) -> usize {
        (self.rewrite.len() + REWRITE_TOKENS).max(self.quote.len() + QUOTE_TOKENS)
    }
}

/// One run's speculative figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpeculationFigures {
    /// The chat workload decoded with drafts (the plain figure is the run's decode_tok_s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<Workload>,
    /// The rewrite workload, plain and with drafts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrite: Option<Workload>,
    /// The quote workload, plain and with drafts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<Workload>,
    /// The time of a verify pass of k tokens over one decode step's, k = 2..=8.
    pub verify_cost: Vec<VerifyCost>,
}

/// One workload decoded greedily both ways: the same tokens, in fewer passes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    pub plain_tok_s: f64,
    pub speculative_tok_s: f64,
    pub generated_tokens: usize,
    /// Drafts kept over drafts made (0 when none were made).
    pub acceptance: f64,
    /// Tokens after the first per forward pass.
    pub tokens_per_pass: f64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct VerifyCost {
    pub k: usize,
    /// A k-token pass's time over a one-token pass's.
    pub ratio: f64,
}

/// Where drafts come from.
pub enum Drafts {
    Lookup,
    Model(SharedDraft),
}

impl Drafts {
    /// A drafter for one answer, a draft model's cache empty like the model's.
    fn drafter(&self) -> Result<Drafter> {
        Ok(match self {
            Drafts::Lookup => Drafter::lookup(),
            Drafts::Model(draft) => Drafter::model(draft.clone(), DraftMemory::new(draft)?),
        })
    }
}

/// Greedy decode of `prompt` from an empty cache, timed step by step, with `drafter`.
fn decode(
    generator: &mut Generator,
    prompt: &[u32],
    options: &TurnOptions,
    drafter: Option<Drafter>,
) -> Result<(f64, Usage)> {
    generator.model.truncate_cache(0);
    generator.cache.clear();
    let mut clock = StepClock::default();
    let usage = generator
        .run_drafted(prompt, options, None, drafter, Instant::now(), &mut clock)?
        .usage;
    Ok((stats::steps_tok_s(&clock.steps), usage))
}

/// A workload decoded with drafts; `plain_tok_s` when it was already measured plain.
fn workload(
    generator: &mut Generator,
    prompt: &[u32],
    options: &TurnOptions,
    plain_tok_s: Option<f64>,
    drafts: &Drafts,
) -> Result<Workload> {
    let plain_tok_s = match plain_tok_s {
        Some(r) => r,
        None => decode(generator, prompt, options, None)?.0,
    };
    let drafter = Some(drafts.drafter()?);
    let (speculative_tok_s, usage) = decode(generator, prompt, options, drafter)?;
    Ok(Workload {
        plain_tok_s,
        speculative_tok_s,
        generated_tokens: usage.generated_tokens,
        acceptance: usage.acceptance().unwrap_or(0.0),
        tokens_per_pass: usage.tokens_per_pass().unwrap_or(0.0),
    })
}

/// The chat workload with drafts (its plain rate measured before, with `options`), the
/// repetitive ones both ways (when the model has a vocabulary), and the verify passes' cost.
pub fn measure(
    generator: &mut Generator,
    chat: &[u32],
    chat_options: &TurnOptions,
    chat_plain_tok_s: f64,
    repetitive: Option<&RepetitivePrompts>,
    drafts: &Drafts,
) -> Result<SpeculationFigures> {
    let mut figures = SpeculationFigures::default();
    // Random weights (no vocabulary): drafts would be kept by chance, not by what the text
    // repeats.
    if let Some(repetitive) = repetitive {
        figures.chat = Some(workload(
            generator,
            chat,
            chat_options,
            Some(chat_plain_tok_s),
            drafts,
        )?);
        let greedy = |max_tokens| TurnOptions {
            sampling: SamplingParams::greedy(),
            max_tokens,
            stop_at_end_of_turn: true,
        };
        let (rewrite, quote) = (&repetitive.rewrite, &repetitive.quote);
        let rewrite = workload(generator, rewrite, &greedy(REWRITE_TOKENS), None, drafts)?;
        figures.rewrite = Some(rewrite);
        figures.quote = Some(workload(
            generator,
            quote,
            &greedy(QUOTE_TOKENS),
            None,
            drafts,
        )?);
    }
    figures.verify_cost = verify_cost(generator, chat)?;
    Ok(figures)
}

/// A pass of k tokens (all logits, as a verify pass) against a one-token pass, after
/// `prompt`: the median of a few of each.
fn verify_cost(generator: &mut Generator, prompt: &[u32]) -> Result<Vec<VerifyCost>> {
    let model = &mut *generator.model;
    model.truncate_cache(0);
    generator.cache.clear();
    model.forward(prompt, false)?;
    let start = model.cached_len();
    let token = prompt.last().copied().unwrap_or(0);
    let mut time = |k: usize| -> Result<f64> {
        let tokens = vec![token; k];
        let mut times = Vec::with_capacity(VERIFY_REPEATS);
        for _ in 0..VERIFY_REPEATS {
            let t = Instant::now();
            model.forward(&tokens, k > 1)?;
            times.push(secs(t.elapsed()));
            model.truncate_cache(start);
        }
        Ok(super::summary::median(&times))
    };
    let one = time(1)?;
    (2..=LONGEST_VERIFY)
        .map(|k| {
            Ok(VerifyCost {
                k,
                ratio: time(k)? / one.max(f64::MIN_POSITIVE),
            })
        })
        .collect()
}

/// One workload's figures out of a run's.
type Pick = fn(&SpeculationFigures) -> Option<&Workload>;

/// The lines under the table for one record: each workload's plain and speculative decode
/// (medians over the runs), acceptance and tokens per pass, and the verify passes' cost.
pub fn notes(record: &super::summary::BenchRecord) -> Vec<String> {
    use super::report::number;
    use super::summary::median;
    let figures: Vec<&SpeculationFigures> = record
        .runs
        .iter()
        .filter_map(|r| r.speculation.as_ref())
        .collect();
    if figures.is_empty() {
        return Vec::new();
    }
    let mut notes = Vec::new();
    let workloads: [(&str, Pick); 3] = [
        ("chat", |f| f.chat.as_ref()),
        ("code rewrite", |f| f.rewrite.as_ref()),
        ("quote with corrections", |f| f.quote.as_ref()),
    ];
    for (name, pick) in workloads {
        let runs: Vec<&Workload> = figures.iter().filter_map(|f| pick(f)).collect();
        if runs.is_empty() {
            continue;
        }
        let of =
            |get: fn(&Workload) -> f64| median(&runs.iter().map(|w| get(w)).collect::<Vec<_>>());
        let (plain, fast) = (of(|w| w.plain_tok_s), of(|w| w.speculative_tok_s));
        // Each run decodes both ways one after the other: the ratio within a run is robust to
        // a machine whose speed drifts between runs.
        let ratio = of(|w| match w.plain_tok_s > 0.0 {
            true => w.speculative_tok_s / w.plain_tok_s,
            false => 0.0,
        });
        notes.push(format!(
            "{}: {name} decode {} tok/s plain, {} tok/s speculative (×{ratio:.2}, the median \
             of each run's ratio); {:.0}% of drafts kept, {:.2} tokens per pass, {} tokens.",
            record.model,
            number(plain),
            number(fast),
            100.0 * of(|w| w.acceptance),
            of(|w| w.tokens_per_pass),
            runs[0].generated_tokens,
        ));
    }
    let costs: Vec<String> = (2..=LONGEST_VERIFY)
        .map(|k| {
            let ratios: Vec<f64> = figures
                .iter()
                .flat_map(|f| f.verify_cost.iter().filter(|c| c.k == k).map(|c| c.ratio))
                .collect();
            format!("k={k} ×{:.2}", median(&ratios))
        })
        .collect();
    notes.push(format!(
        "{}: a verify pass of k tokens costs, in decode steps: {}.",
        record.model,
        costs.join(", ")
    ));
    notes
}
