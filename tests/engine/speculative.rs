//! Speculative decoding on the real models: the same greedy ids with and without it over
//! many prompts (repetitive ones among them, the bench's workloads too, where drafts are
//! kept: the test checks they were), the same streamed text and usage through the engine host, every stop condition
//! inside a drafted run (a stop string, max tokens, the context filling up, a cancel), and
//! sampled answers drawn from the same distribution (a two-sample chi-square test).

use crate::common;

use std::time::Instant;
use taper::bench::speculation;
use taper::chat::Message;
use taper::engine::generation::{Generator, TurnOptions, TurnOutcome, Unobserved};
use taper::engine::loader::{self, OpenOptions};
use taper::engine::model::{CacheOptions, LanguageModel};
use taper::engine::prefix_cache::PrefixCache;
use taper::engine::prompt::ModelText;
use taper::engine::speculative::Drafter;
use taper::engine::{EngineCommand, EngineHandle};
use taper::protocol::{EngineEvent, GenerateRequest, SamplingParams, Speculation};
use taper::protocol::{StopReason, Usage};

const CODE: &str = "fn total_price(items: &[Item]) -> u32 {\n    let mut total = 0;\n    \
for item in items {\n        total += item.price * item.count;\n    }\n    total\n}\n";

/// Questions, and prompts whose answers repeat them (where drafts are kept).
fn prompts() -> Vec<String> {
    let mut p: Vec<String> = [
        "Why is the sky blue?",
        "Name three colours of the rainbow.",
        "Write a haiku about the sea.",
        "What is 17 times 3?",
        "Give me a short recipe for pancakes.",
        "Describe the water cycle in three sentences.",
        "Count from 1 to 30, separated by commas.",
        "Repeat this sentence exactly three times: The quick brown fox jumps over the lazy dog.",
        "Quote this back with its spelling corrected: Teh cat sat on teh mat and lookd at \
         the brid in teh tree, and teh brid lookd back at teh cat.",
        "List the days of the week, then list them again in the same order.",
    ]
    .map(String::from)
    .to_vec();
    p.push(format!(
        "Rewrite this code with the variable `total` renamed to `sum`:\n\n{CODE}"
    ));
    p.push(format!("Explain what this code does:\n\n{CODE}"));
    p.push(format!("Copy this code exactly:\n\n{CODE}"));
    p.push("Write the alphabet in capital letters, one letter per line.".into());
    // The bench's repetitive workloads, whose speed-ups the README reports.
    p.push(speculation::rewrite_question());
    p.push(speculation::quote_question());
    p
}

pub(crate) fn greedy() -> SamplingParams {
    SamplingParams {
        temperature: 0.0,
        repeat_penalty: 1.0,
        ..SamplingParams::default()
    }
}

/// Greedy with the penalties that look at earlier tokens: drafted positions must see the
/// tokens kept before them.
fn greedy_penalised() -> SamplingParams {
    SamplingParams {
        temperature: 0.0,
        repeat_penalty: 1.15,
        frequency_penalty: 0.2,
        presence_penalty: 0.1,
        ..SamplingParams::default()
    }
}

pub(crate) struct Local {
    pub model: Box<dyn LanguageModel>,
    pub text: ModelText,
    pub cache: PrefixCache,
}

impl Local {
    pub fn open(file: &str, context: usize) -> Self {
        let path = common::real_model(file);
        let loaded = loader::open(&path, &OpenOptions::new(CacheOptions::new(context))).unwrap();
        let (model, text) = loaded.into_text().unwrap();
        Self {
            model,
            text,
            cache: PrefixCache::default(),
        }
    }

    pub fn ids(&self, question: &str) -> Vec<u32> {
        self.text
            .chat_ids(&[Message::user(question)], &Default::default())
            .expect("the prompt renders")
    }

    /// `prompt` answered on a cache that keeps only what it shares with it, with `drafter`
    /// guessing ahead.
    pub fn answer_drafted(
        &mut self,
        prompt: &[u32],
        options: &TurnOptions,
        drafter: Option<Drafter>,
    ) -> TurnOutcome {
        let mut generator = Generator {
            model: self.model.as_mut(),
            cache: &mut self.cache,
            tokenizer: Some(&self.text.tokenizer),
        };
        generator
            .run_drafted(
                prompt,
                options,
                None,
                drafter,
                Instant::now(),
                &mut Unobserved,
            )
            .unwrap()
    }
}

/// Every prompt of [`prompts`] answered greedily (with and without penalties, in turn) plain
/// and with `drafter`'s drafts: the same ids, text and stop; each answer's usage both ways.
pub(crate) fn same_greedy_answers(
    local: &mut Local,
    label: &str,
    max_tokens: usize,
    drafter: impl Fn() -> Option<Drafter>,
) -> Vec<(Usage, Usage)> {
    let mut usages = Vec::new();
    for (i, question) in prompts().iter().enumerate() {
        let sampling = if i % 2 == 0 {
            greedy()
        } else {
            greedy_penalised()
        };
        let options = TurnOptions {
            sampling,
            max_tokens,
            stop_at_end_of_turn: true,
        };
        let prompt = local.ids(question);
        let plain = local.answer_drafted(&prompt, &options, None);
        let fast = local.answer_drafted(&prompt, &options, drafter());
        assert_eq!(plain.ids, fast.ids, "{label}: {question:?}");
        assert_eq!(plain.text, fast.text, "{label}: {question:?}");
        assert_eq!(plain.usage.stop, fast.usage.stop, "{label}: {question:?}");
        assert_eq!(plain.usage.drafted_tokens, 0);
        let u = &fast.usage;
        eprintln!(
            "{label}: {question:.40?}: {} tokens, {}/{} drafts kept, {} passes",
            u.generated_tokens, u.accepted_tokens, u.drafted_tokens, u.decode_passes
        );
        usages.push((plain.usage, fast.usage));
    }
    usages
}

fn same_greedy_ids(file: &str) {
    let mut local = Local::open(file, 1024);
    let usages = same_greedy_answers(&mut local, file, 96, || Some(Drafter::lookup()));
    let mut kept_somewhere = 0;
    for (plain, fast) in &usages {
        if fast.accepted_tokens > 0 {
            kept_somewhere += 1;
            assert!(fast.decode_passes < plain.decode_passes, "{file}");
        }
    }
    // The repetitive prompts exercise the verify path, not only plain decode steps.
    assert!(
        kept_somewhere >= 3,
        "{file}: drafts kept in {kept_somewhere} answers"
    );
}

#[test]
fn greedy_ids_are_the_same_with_and_without_speculation_on_smollm2() {
    same_greedy_ids(common::SMOLLM2);
}

#[test]
fn greedy_ids_are_the_same_with_and_without_speculation_on_gemma3() {
    same_greedy_ids(common::GEMMA3);
}

/// What the host streamed for one request: text, usage, or the failure.
pub(crate) fn hosted(engine: &mut EngineHandle, request: GenerateRequest) -> (String, Usage) {
    engine
        .send(EngineCommand::Generate(request))
        .expect("the engine takes the request");
    let mut text = String::new();
    loop {
        match engine.recv_blocking() {
            Some(EngineEvent::Token { text: t, .. }) => text.push_str(&t),
            Some(EngineEvent::Finished { usage, .. }) => return (text, usage),
            Some(EngineEvent::Failed { message, .. }) => panic!("failed: {message}"),
            Some(_) => {}
            None => panic!("the engine stopped"),
        }
    }
}

pub(crate) fn request(
    turn_id: u64,
    question: &str,
    max_tokens: usize,
    s: Speculation,
) -> GenerateRequest {
    GenerateRequest {
        speculation: s,
        ..GenerateRequest::chat(
            turn_id,
            vec![Message::user(question)],
            false,
            greedy(),
            max_tokens,
        )
    }
}

/// Plain and speculative answers through the host: the same text and the same figures.
fn both(engine: &mut EngineHandle, make: impl Fn(Speculation) -> GenerateRequest) -> [Usage; 2] {
    let (plain_text, plain) = hosted(engine, make(Speculation::Off));
    let (fast_text, fast) = hosted(engine, make(Speculation::Ngram));
    assert_eq!(plain_text, fast_text);
    assert_eq!(plain.generated_tokens, fast.generated_tokens);
    assert_eq!(plain.stop, fast.stop);
    [plain, fast]
}

/// SmolLM2's greedy answer to it soon goes round in circles: most drafts are kept.
const REPEAT: &str = "Give me a short recipe for pancakes.";

#[test]
fn a_stop_string_inside_a_drafted_run_ends_the_answer_as_without_speculation() {
    let mut engine = crate::real::engine_with(common::SMOLLM2, 1024);
    let (whole, _) = hosted(&mut engine, request(1, REPEAT, 80, Speculation::Off));
    // Words late in the answer, where the repetition has drafts kept.
    let words: Vec<&str> = whole.split_whitespace().collect();
    assert!(words.len() > 12, "{whole:?}");
    for stop in [words[words.len() / 2], words[words.len() - 3]] {
        let [_, fast] = both(&mut engine, |s| GenerateRequest {
            stop: vec![stop.to_string()],
            ..request(2, REPEAT, 80, s)
        });
        assert_eq!(fast.stop, Some(StopReason::StopSequence), "{stop:?}");
    }
}

#[test]
fn max_tokens_reached_mid_draft_gives_the_same_answer() {
    let mut engine = crate::real::engine_with(common::SMOLLM2, 1024);
    let mut kept = 0;
    for max_tokens in [5, 9, 14, 19, 23, 28, 33, 41] {
        let [_, fast] = both(&mut engine, |s| request(3, REPEAT, max_tokens, s));
        assert!(fast.generated_tokens <= max_tokens);
        kept += fast.accepted_tokens;
    }
    assert!(kept > 0, "no drafts were kept");
}

#[test]
fn the_context_filling_up_mid_draft_gives_the_same_answer() {
    let question = REPEAT;
    let mut kept = 0;
    for context in [150, 157, 163, 170] {
        let mut engine = crate::real::engine_with(common::SMOLLM2, context);
        let [_, fast] = both(&mut engine, |s| request(4, question, 1000, s));
        assert_eq!(
            fast.stop,
            Some(StopReason::ContextFull),
            "context {context}"
        );
        // Every position filled, and one token more: sampled from the last one, never fed.
        assert_eq!(fast.context_used(), context + 1, "context {context}");
        kept += fast.accepted_tokens;
        // The slot's record and cache still agree: the next answer is the fresh one.
        let [_, again] = both(&mut engine, |s| request(5, "Why is the sky blue?", 24, s));
        assert!(again.generated_tokens > 0);
    }
    assert!(kept > 0, "no drafts were kept");
}

#[test]
fn a_cancel_mid_draft_ends_the_answer_and_the_next_one_is_unchanged() {
    let mut engine = crate::real::engine_with(common::SMOLLM2, 1024);
    let (whole, _) = hosted(&mut engine, request(6, REPEAT, 80, Speculation::Off));
    engine
        .send(EngineCommand::Generate(request(
            7,
            REPEAT,
            80,
            Speculation::Ngram,
        )))
        .unwrap();
    let mut text = String::new();
    let usage = loop {
        match engine.recv_blocking() {
            Some(EngineEvent::Token { text: t, .. }) => {
                text.push_str(&t);
                if text.len() > whole.len() / 3 {
                    engine.cancel(7);
                }
            }
            Some(EngineEvent::Finished { usage, .. }) => break usage,
            Some(EngineEvent::Failed { message, .. }) => panic!("failed: {message}"),
            Some(_) => {}
            None => panic!("the engine stopped"),
        }
    };
    assert_eq!(usage.stop, Some(StopReason::Cancelled));
    assert!(
        whole.starts_with(&text),
        "{text:?} is not the start of {whole:?}"
    );
    assert!(text.len() < whole.len());
    // What the cancel left in the slot is consistent: the same question again, the same
    // answer.
    let (again, _) = hosted(&mut engine, request(8, REPEAT, 80, Speculation::Ngram));
    assert_eq!(again, whole);
}

/// The answers of `runs` seeds at temperature 1: their first `positions` tokens.
fn sampled_prefixes(local: &mut Local, prompt: &[u32], s: Speculation, runs: u64) -> Vec<Vec<u32>> {
    let seeds = if s == Speculation::Off { 0 } else { 1 << 32 };
    let drafter = || (s == Speculation::Ngram).then(Drafter::lookup);
    sampled_prefixes_drafted(local, prompt, seeds, runs, drafter)
}

/// [`sampled_prefixes`] with seeds from `first_seed` on and `drafter` making each answer's
/// drafter.
pub(crate) fn sampled_prefixes_drafted(
    local: &mut Local,
    prompt: &[u32],
    first_seed: u64,
    runs: u64,
    drafter: impl Fn() -> Option<Drafter>,
) -> Vec<Vec<u32>> {
    (0..runs)
        .map(|seed| {
            let options = TurnOptions {
                sampling: SamplingParams {
                    temperature: 1.0,
                    top_k: 0,
                    top_p: 1.0,
                    min_p: 0.0,
                    repeat_penalty: 1.0,
                    seed: Some(first_seed + seed),
                    ..SamplingParams::default()
                },
                max_tokens: 6,
                stop_at_end_of_turn: false,
            };
            local.answer_drafted(prompt, &options, drafter()).ids
        })
        .collect()
}

/// Two-sample chi-square statistic of the counts in `a` and `b` (categories with fewer than
/// 10 in both pooled into one), and its degrees of freedom.
fn chi_square(a: &[String], b: &[String]) -> (f64, usize) {
    use std::collections::BTreeMap;
    let mut counts: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for x in a {
        counts.entry(x).or_default().0 += 1.0;
    }
    for x in b {
        counts.entry(x).or_default().1 += 1.0;
    }
    let mut cells: Vec<(f64, f64)> = Vec::new();
    let mut rare = (0.0, 0.0);
    for (_, (x, y)) in counts {
        if x + y < 10.0 {
            rare = (rare.0 + x, rare.1 + y);
        } else {
            cells.push((x, y));
        }
    }
    if rare.0 + rare.1 > 0.0 {
        cells.push(rare);
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let n = na + nb;
    let chi = cells
        .iter()
        .map(|&(x, y)| {
            let (ea, eb) = (na * (x + y) / n, nb * (x + y) / n);
            (x - ea).powi(2) / ea + (y - eb).powi(2) / eb
        })
        .sum();
    (chi, cells.len().saturating_sub(1))
}

/// The chi-square value a right implementation exceeds with probability about 1e-6
/// (Wilson–Hilferty).
fn critical(df: usize) -> f64 {
    let df = df.max(1) as f64;
    let z = 4.75;
    df * (1.0 - 2.0 / (9.0 * df) + z * (2.0 / (9.0 * df)).sqrt()).powi(3)
}

/// End to end, sampled answers with and without drafts come from one distribution. This
/// prompt's answers are nearly deterministic where drafts are made, so it cannot tell a
/// wrong acceptance rule (keep the draft when it is the argmax) from the right one: that is
/// the sampler's unit test's job, against an exact distribution
/// (`a_drafted_draw_keeps_the_distribution_whatever_the_draft`).
#[test]
fn sampled_answers_keep_the_model_distribution_with_speculation() {
    let mut local = Local::open(common::SMOLLM2, 512);
    // A prompt whose answer repeats it, so positions after the first are drafted and the
    // acceptance rule decides them.
    let prompt = local.ids("Repeat exactly: one two three one two three one two three");
    let runs = 300;
    let plain = sampled_prefixes(&mut local, &prompt, Speculation::Off, runs);
    let fast = sampled_prefixes(&mut local, &prompt, Speculation::Ngram, runs);
    assert_same_distribution(&plain, &fast);
}

/// Sampled answers `plain` and `fast` pass a chi-square test of coming from one distribution
/// at every position: each position's token given the one before (the joint of two
/// consecutive positions).
pub(crate) fn assert_same_distribution(plain: &[Vec<u32>], fast: &[Vec<u32>]) {
    for position in 1..6 {
        let pairs = |answers: &[Vec<u32>]| -> Vec<String> {
            answers
                .iter()
                .filter(|a| a.len() > position)
                .map(|a| format!("{} {}", a[position - 1], a[position]))
                .collect()
        };
        let (chi, df) = chi_square(&pairs(plain), &pairs(fast));
        eprintln!("position {position}: χ² {chi:.1} with {df} degrees of freedom");
        assert!(
            chi < critical(df),
            "position {position}: χ² {chi:.1}, df {df}"
        );
    }
}
