//! A prompt gives the same logits whether it is read in one batch, in chunks, or after the
//! cache was truncated and the rest re-read: what makes prefix reuse exact.

use crate::common;

use taper::engine::gguf::GgufHeader;
use taper::engine::model::{self, LanguageModel};
use taper::engine::tokenizer::TextTokenizer;

const TEXT: &str = "The lighthouse keeper climbed the spiral stairs every evening, counting \
    the steps as his father had, and lit the lamp before the fishing boats came home.";

fn last_row(m: &mut dyn LanguageModel, tokens: &[u32]) -> Vec<f32> {
    m.forward(tokens, false).unwrap()
}

fn check(file: &str) {
    let header = GgufHeader::read(&common::real_model(file)).unwrap();
    let tokens = TextTokenizer::from_gguf(&header)
        .unwrap()
        .encode(TEXT)
        .unwrap();
    assert!(tokens.len() > 20);
    let mut m = model::load(&header, 512).unwrap();

    let batched = last_row(m.as_mut(), &tokens);

    m.truncate_cache(0);
    let mut chunked = Vec::new();
    for chunk in tokens.chunks(7) {
        chunked = last_row(m.as_mut(), chunk);
    }

    m.truncate_cache(0);
    last_row(m.as_mut(), &tokens);
    m.truncate_cache(13);
    let reused = last_row(m.as_mut(), &tokens[13..]);

    assert_eq!(batched, chunked, "{file}: chunks");
    assert_eq!(batched, reused, "{file}: truncate and reuse");
}

#[test]
fn smollm2_logits_do_not_depend_on_how_the_prompt_is_read() {
    check(common::SMOLLM2);
}

#[test]
fn gemma3_logits_do_not_depend_on_how_the_prompt_is_read() {
    check(common::GEMMA3);
}
