//! A chat's next turn reads only its new question: the previous prompt and the previous answer
//! stay in the KV cache, because the next prompt carries the ids the model generated, not a
//! fresh tokenization of the answer's text. Multi-turn on both real models, through the same
//! prompt builder and generation driver the engine worker uses, under several sampling
//! settings (the ones that make sampled ids differ from the tokenizer's).

use crate::common;

use std::time::Instant;
use taper::chat::Message;
use taper::engine::answer_ids::AnswerIds;
use taper::engine::generation::{Generator, TurnOptions, Unobserved};
use taper::engine::gguf::GgufHeader;
use taper::engine::model;
use taper::engine::prefix_cache::PrefixCache;
use taper::engine::prompt::ModelText;
use taper::protocol::SamplingParams;
use taper::protocol::StopReason;

const QUESTIONS: [&str; 4] = [
    "Write a short list of three fruits, one per line.",
    "Now explain: why is the sky blue?",
    "Give me a tiny Python function that adds two numbers.",
    "Thanks! Summarise our chat in one sentence.",
];
const MAX_TOKENS: usize = 40;

fn settings() -> Vec<(&'static str, SamplingParams)> {
    let base = SamplingParams::default();
    vec![
        (
            "greedy with the default repeat penalty",
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
            "hot, top-p only, seed 7",
            SamplingParams {
                temperature: 1.2,
                top_k: 0,
                top_p: 0.9,
                min_p: 0.0,
                repeat_penalty: 1.3,
                seed: Some(7),
                ..base.clone()
            },
        ),
        (
            "top-k 5, seed 42",
            SamplingParams {
                temperature: 0.9,
                top_k: 5,
                seed: Some(42),
                ..base
            },
        ),
    ]
}

/// How many of an answer's ids the next prompt can keep: all of them when the template
/// places the answer as it is; under a template that trims contents (Gemma's), those before
/// its trailing white space, or none when it trimmed leading white space too (the ids after
/// it then follow other tokens than in the cache).
fn ids_the_template_keeps(text: &ModelText, messages: &[Message], ids: &[u32]) -> usize {
    let answer = &messages.last().unwrap().content;
    let rendered = text.template.render(messages, true, "", "").unwrap();
    if rendered.contains(answer.as_str()) {
        return ids.len();
    }
    if answer.trim_start().len() != answer.len() {
        return 0;
    }
    let kept = answer.trim_end().len();
    let mut spelled = 0;
    ids.iter()
        .take_while(|&&id| {
            spelled += text.tokenizer.decode(&[id]).map(|s| s.len()).unwrap_or(0);
            spelled <= kept
        })
        .count()
}

fn check(file: &str) {
    let header = GgufHeader::read(&common::real_model(file)).unwrap();
    let text = ModelText::load(&header, None, None).unwrap();
    let mut model = model::load(&header, 2048).unwrap();
    let mut fresh = model::load(&header, 2048).unwrap();
    let (mut answer_tokens, mut reused_answer_tokens) = (0, 0);
    for (name, sampling) in settings() {
        let mut cache = PrefixCache::default();
        model.truncate_cache(0);
        let mut answers = AnswerIds::default();
        let mut messages = vec![];
        let mut previous: Option<(usize, Vec<u32>, StopReason)> = None;
        for (turn, question) in QUESTIONS.iter().enumerate() {
            messages.push(Message::user(*question));
            let prompt = text.chat_ids(&messages, &answers).unwrap();
            let options = TurnOptions {
                sampling: sampling.clone(),
                max_tokens: MAX_TOKENS,
                stop_at_end_of_turn: true,
            };

            if let Some((prompt_len, ids, stop)) = &previous {
                // What the cache holds, and the logits of the first new token, both as a fresh
                // prefill of the same ids would have them.
                let kept = ids_the_template_keeps(&text, &messages[..messages.len() - 1], ids);
                let in_cache = if *stop == StopReason::EndOfTurn || kept < ids.len() {
                    kept
                } else {
                    kept - 1 // the last of max_tokens was sampled, never fed
                };
                let reused = cache.reusable_prefix(&prompt);
                assert_eq!(
                    reused,
                    prompt_len + in_cache,
                    "{file}, {name}, turn {}: reused {reused} of the previous prompt ({prompt_len}) \
                     and answer ({} ids, {kept} placed by the template)",
                    turn + 1,
                    ids.len()
                );
                answer_tokens += ids.len();
                reused_answer_tokens += in_cache;
                model.truncate_cache(reused);
                let cached_logits = model.forward(&prompt[reused..], false).unwrap();
                fresh.truncate_cache(0);
                let mut fresh_logits = vec![];
                for chunk in prompt.chunks(256) {
                    fresh_logits = fresh.forward(chunk, false).unwrap();
                }
                assert_eq!(
                    cached_logits,
                    fresh_logits,
                    "{file}, {name}, turn {}: the cached turn's logits differ from a fresh prefill",
                    turn + 1
                );
                model.truncate_cache(reused);
                cache.truncate(reused);
            }

            let mut generator = Generator {
                model: model.as_mut(),
                cache: &mut cache,
                tokenizer: Some(&text.tokenizer),
            };
            let outcome = generator
                .run(&prompt, &options, Instant::now(), &mut Unobserved)
                .unwrap();
            assert!(!outcome.text.is_empty(), "{file}, {name}: an empty answer");
            answers.record(&outcome.text, &outcome.ids);
            messages.push(Message::assistant(outcome.text.clone()));
            let stop = outcome.usage.stop.unwrap();
            previous = Some((prompt.len(), outcome.ids, stop));
        }
    }
    eprintln!("{file}: {reused_answer_tokens} of {answer_tokens} answer tokens reused");
}

#[test]
fn smollm2_reuses_every_token_of_the_previous_prompt_and_answer() {
    check(common::SMOLLM2);
}

#[test]
fn gemma3_reuses_every_token_the_template_keeps_of_the_previous_answer() {
    check(common::GEMMA3);
}
