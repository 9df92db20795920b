//! Measurements behind the answer-reuse figures in the README (run by hand, print tables,
//! assert nothing about speed): `cargo test --release --test engine -- --ignored --nocapture
//! reuse_report::`.
//!
//! - `conversation_reuse`: 10-turn conversations on both test models under three sampling
//!   settings, through the engine worker as the TUI drives it; per turn the prompt, cached and
//!   generated tokens, and how much of the previous answer the cache served.
//! - `shape_ttft` (with `TAPER_SHAPE_FILE` naming a shape-only file such as one written by
//!   `taper bench --shape qwen3-4b --keep-shape-file`): time to first token of each turn of a
//!   10-turn conversation whose answers stay in the cache, beside the same turn with the
//!   previous answer read again (what a re-tokenized answer cost).

use crate::common;

use std::time::Instant;
use taper::chat::Message;
use taper::engine::generation::{Generator, TurnOptions, Unobserved};
use taper::engine::gguf::GgufHeader;
use taper::engine::model;
use taper::engine::prefix_cache::PrefixCache;
use taper::engine::{EngineCommand, EngineHandle};
use taper::protocol::SamplingParams;
use taper::protocol::{EngineEvent, GenerateRequest, LoadRequest};
use taper::protocol::{StopReason, Usage};

const QUESTIONS: [&str; 5] = [
    "Write a short list of three facts about {}, one per line.",
    "Why does that matter for {}? Answer in two sentences.",
    "Give me a tiny Python function about {}, with a comment.",
    "Write two sentences about {}: one serious, one funny.",
    "Summarise what we said about {} as bullet points.",
];
const TOPICS: [&str; 2] = ["the sea", "bread"];
const TURNS: usize = 10;

/// The sampling settings measured: the TUI's greedy default with its repeat penalty, the
/// default sampler with a fixed seed, and a hot top-p sampler.
fn settings() -> Vec<(&'static str, SamplingParams)> {
    let base = SamplingParams::default();
    vec![
        (
            "temperature 0, repeat penalty 1.1",
            SamplingParams {
                temperature: 0.0,
                ..base.clone()
            },
        ),
        (
            "default sampling, seed 1",
            SamplingParams {
                seed: Some(1),
                ..base.clone()
            },
        ),
        (
            "temperature 1.0, top-p 0.9, seed 7",
            SamplingParams {
                temperature: 1.0,
                top_k: 0,
                top_p: 0.9,
                min_p: 0.0,
                seed: Some(7),
                ..base
            },
        ),
    ]
}

fn turn(
    engine: &mut EngineHandle,
    turn_id: u64,
    messages: &[Message],
    sampling: &SamplingParams,
) -> (String, Usage) {
    engine
        .send(EngineCommand::Generate(GenerateRequest::chat(
            turn_id,
            messages.to_vec(),
            false,
            sampling.clone(),
            96,
        )))
        .unwrap();
    let mut text = String::new();
    loop {
        match engine.recv_blocking() {
            Some(EngineEvent::Token { text: t, .. }) => text.push_str(&t),
            Some(EngineEvent::Finished { usage, .. }) => return (text, usage),
            Some(EngineEvent::Failed { message, .. }) => panic!("{message}"),
            Some(_) => {}
            None => panic!("the engine stopped"),
        }
    }
}

fn conversation(file: &str) {
    let mut engine = EngineHandle::spawn().unwrap();
    engine
        .send(EngineCommand::Load(LoadRequest {
            model_path: common::real_model(file),
            tokenizer_json: None,
            context_size: 8192,
            cache_type: Default::default(),
            chat_template: None,
            keep_loaded: 1,
            draft_model: None,
        }))
        .unwrap();
    assert!(matches!(
        engine.recv_blocking(),
        Some(EngineEvent::Loaded { .. })
    ));
    let mut turn_id = 0;
    for (name, sampling) in settings() {
        println!("{file}, {name}");
        println!("turn  prompt  cached  generated  previous answer tokens served by the cache");
        let mut messages = vec![];
        let mut previous: Option<Usage> = None;
        let (mut answer_tokens, mut served) = (0, 0);
        for t in 0..TURNS {
            let question = QUESTIONS[t % QUESTIONS.len()].replace("{}", TOPICS[t / 5]);
            messages.push(Message::user(question));
            turn_id += 1;
            let (text, usage) = turn(&mut engine, turn_id, &messages, &sampling);
            let of_answer = previous.as_ref().map(|p| {
                let fed = match p.stop {
                    Some(StopReason::EndOfTurn) => p.generated_tokens,
                    _ => p.generated_tokens.saturating_sub(1),
                };
                let got = usage.cached_tokens.saturating_sub(p.prompt_tokens).min(fed);
                answer_tokens += fed;
                served += got;
                format!("{got} of {fed}")
            });
            println!(
                "{:>4}  {:>6}  {:>6}  {:>9}  {}",
                t + 1,
                usage.prompt_tokens,
                usage.cached_tokens,
                usage.generated_tokens,
                of_answer.unwrap_or_default()
            );
            messages.push(Message::assistant(text));
            previous = Some(usage);
        }
        println!(
            "{file}, {name}: {served} of {answer_tokens} previous-answer tokens served by the \
             cache ({:.1}%)\n",
            100.0 * served as f64 / answer_tokens.max(1) as f64
        );
    }
}

#[test]
#[ignore]
fn conversation_reuse() {
    conversation(common::SMOLLM2);
    conversation(common::GEMMA3);
}

#[test]
#[ignore]
fn shape_ttft() {
    let Ok(path) = std::env::var("TAPER_SHAPE_FILE") else {
        println!("TAPER_SHAPE_FILE is not set: nothing measured");
        return;
    };
    let header = GgufHeader::read(std::path::Path::new(&path)).unwrap();
    let mut model = model::load(&header, 4096).unwrap();
    let vocab = model.config().vocab_size as u32;
    let question =
        |t: u32| -> Vec<u32> { (0..32).map(|i| (i * 7919 + t * 31 + 11) % vocab).collect() };
    let answer_len = |t: u32| [16, 64, 128][t as usize % 3];

    // The conversation as a chat has it: each answer stays in the cache.
    let mut cache = PrefixCache::default();
    let mut prompts: Vec<Vec<u32>> = vec![];
    let mut kept_ms = vec![];
    let mut prompt = question(0);
    for t in 0..10u32 {
        let options = TurnOptions {
            sampling: SamplingParams::greedy(),
            max_tokens: answer_len(t),
            stop_at_end_of_turn: false,
        };
        let mut generator = Generator {
            model: model.as_mut(),
            cache: &mut cache,
            tokenizer: None,
        };
        let outcome = generator
            .run(&prompt, &options, Instant::now(), &mut Unobserved)
            .unwrap();
        kept_ms.push(outcome.usage.ttft_s * 1000.0);
        prompts.push(prompt.clone());
        prompt.extend(&outcome.ids);
        prompt.extend(question(t + 1));
    }

    // The same prompts when each turn reads the previous answer again.
    println!("turn  prompt  previous answer  TTFT answer kept (ms)  TTFT answer read again (ms)");
    model.truncate_cache(0);
    let mut cache = PrefixCache::default();
    for (t, prompt) in prompts.iter().enumerate() {
        if t > 0 {
            let keep = prompts[t - 1].len();
            model.truncate_cache(keep);
            cache.truncate(keep);
        }
        let mut generator = Generator {
            model: model.as_mut(),
            cache: &mut cache,
            tokenizer: None,
        };
        let options = TurnOptions {
            sampling: SamplingParams::greedy(),
            max_tokens: 1,
            stop_at_end_of_turn: false,
        };
        let outcome = generator
            .run(prompt, &options, Instant::now(), &mut Unobserved)
            .unwrap();
        let previous = if t > 0 { answer_len(t as u32 - 1) } else { 0 };
        println!(
            "{:>4}  {:>6}  {previous:>15}  {:>21.0}  {:>27.0}",
            t + 1,
            prompt.len(),
            kept_ms[t],
            outcome.usage.ttft_s * 1000.0
        );
    }
}
