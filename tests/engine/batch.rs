//! A batched pass (several sequences, each with its own KV cache, in one forward pass) gives
//! every sequence bit-for-bit the logits it gets stepped alone: what lets `taper serve` decode
//! its slots together without changing a single token.

use crate::common;

use taper::engine::gguf::GgufHeader;
use taper::engine::model::{self, LanguageModel, SlotStep};
use taper::engine::tokenizer::TextTokenizer;

const PROMPTS: [&str; 4] = [
    "The lighthouse keeper climbed the spiral stairs every evening",
    "Rust is a systems programming language that",
    "Once upon a time, in a small village by the sea, there lived an old fisherman who",
    "2 + 2 =",
];
const STEPS: usize = 12;

/// Each prompt alone on the model's own cache: the logits of its last prompt token, then of
/// each greedy token after it.
fn alone(m: &mut dyn LanguageModel, prompt: &[u32]) -> Vec<Vec<f32>> {
    m.truncate_cache(0);
    let mut rows = vec![m.forward(prompt, false).unwrap()];
    for _ in 0..STEPS {
        let next = common::argmax(rows.last().unwrap());
        rows.push(m.forward(&[next], false).unwrap());
    }
    rows
}

fn check(file: &str) {
    let header = GgufHeader::read(&common::real_model(file)).unwrap();
    let tokenizer = TextTokenizer::from_gguf(&header).unwrap();
    let prompts: Vec<Vec<u32>> = PROMPTS
        .iter()
        .map(|p| tokenizer.encode(p).unwrap())
        .collect();
    let mut m = model::load(&header, 512).unwrap();
    let vocab = m.config().vocab_size;
    let expected: Vec<Vec<Vec<f32>>> = prompts.iter().map(|p| alone(m.as_mut(), p)).collect();

    let mut caches: Vec<_> = (0..prompts.len()).map(|_| m.new_cache().unwrap()).collect();
    // The first two prompts are read together; the other two join while those decode, their
    // whole prompt riding in the same passes as the others' single tokens.
    let mut got: Vec<Vec<Vec<f32>>> = vec![Vec::new(); prompts.len()];
    let mut feed: Vec<Vec<u32>> = vec![prompts[0].clone(), prompts[1].clone(), vec![], vec![]];
    for round in 0..STEPS + 4 {
        if round == 2 {
            feed[2] = prompts[2].clone();
        }
        if round == 3 {
            feed[3] = prompts[3].clone();
        }
        let active: Vec<usize> = (0..prompts.len())
            .filter(|&s| !feed[s].is_empty() && got[s].len() <= STEPS)
            .collect();
        if active.is_empty() {
            break;
        }
        let mut steps: Vec<SlotStep> = Vec::new();
        let mut order = Vec::new();
        for (s, cache) in caches.iter_mut().enumerate() {
            if active.contains(&s) {
                steps.push(SlotStep {
                    cache,
                    tokens: &feed[s],
                    all_logits: false,
                });
                order.push(s);
            }
        }
        let logits = m.forward_batch(&mut steps).unwrap();
        assert_eq!(logits.len(), order.len() * vocab);
        for (row, &s) in logits.chunks(vocab).zip(&order) {
            got[s].push(row.to_vec());
            feed[s] = vec![common::argmax(row)];
        }
    }
    for (s, rows) in got.iter().enumerate() {
        assert_eq!(rows.len(), STEPS + 1, "{file}: sequence {s} steps");
        for (i, (a, b)) in rows.iter().zip(&expected[s]).enumerate() {
            assert!(a == b, "{file}: sequence {s} differs at step {i}");
        }
    }
}

#[test]
fn smollm2_batched_steps_equal_steps_alone() {
    check(common::SMOLLM2);
}

#[test]
fn gemma3_batched_steps_equal_steps_alone() {
    check(common::GEMMA3);
}
