//! The cache follows the conversation tree: after a 10-turn chat, editing the 8th question
//! reads only from that question on (the turns before it stay in the KV cache, answers'
//! generated ids included), and the first logits equal a fresh prefill's; switching back to
//! the original branch then reads only what differs from the path last read. On the real
//! SmolLM2, through the prompt builder and generation driver the engine worker uses.

use crate::common;

use std::time::Instant;
use taper::chat::Message;
use taper::engine::answer_ids::AnswerIds;
use taper::engine::generation::{Generator, TurnOptions, Unobserved};
use taper::engine::gguf::GgufHeader;
use taper::engine::model::{self, LanguageModel};
use taper::engine::prefix_cache::PrefixCache;
use taper::engine::prompt::ModelText;
use taper::protocol::SamplingParams;

const TURNS: usize = 10;
const EDITED_TURN: usize = 8;

/// The length of the common start of two token lists.
fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

struct Chat {
    text: ModelText,
    model: Box<dyn LanguageModel>,
    cache: PrefixCache,
    answers: AnswerIds,
}

impl Chat {
    /// Answers `messages` (ending with a question): (the prompt, the tokens reused, the
    /// answer).
    fn answer(&mut self, messages: &[Message]) -> (Vec<u32>, usize, String) {
        let prompt = self.text.chat_ids(messages, &self.answers).unwrap();
        let options = TurnOptions {
            sampling: SamplingParams {
                temperature: 0.0,
                ..SamplingParams::default()
            },
            max_tokens: 24,
            stop_at_end_of_turn: true,
        };
        let mut generator = Generator {
            model: self.model.as_mut(),
            cache: &mut self.cache,
            tokenizer: Some(&self.text.tokenizer),
        };
        let outcome = generator
            .run(&prompt, &options, Instant::now(), &mut Unobserved)
            .unwrap();
        self.answers.record(&outcome.text, &outcome.ids);
        (prompt, outcome.usage.cached_tokens, outcome.text)
    }

    /// The tokens of `messages` that any question after them shares: the prompt up to where
    /// two different questions part.
    fn before(&self, messages: &[Message]) -> usize {
        let with = |q: &str| {
            let mut m = messages.to_vec();
            m.push(Message::user(q));
            self.text.chat_ids(&m, &self.answers).unwrap()
        };
        common_prefix(&with("Xylophone?"), &with("Quartz?"))
    }
}

#[test]
fn an_edit_at_turn_8_of_10_reads_only_from_turn_8_and_a_switch_back_only_what_differs() {
    let header = GgufHeader::read(&common::real_model(common::SMOLLM2)).unwrap();
    let mut chat = Chat {
        text: ModelText::load(&header, None, None).unwrap(),
        model: model::load(&header, 4096).unwrap(),
        cache: PrefixCache::default(),
        answers: AnswerIds::default(),
    };
    let mut messages = Vec::new();
    let mut prompts = Vec::new();
    for turn in 1..=TURNS {
        messages.push(Message::user(format!(
            "Question {turn}: name one animal that starts with the letter {}.",
            (b'A' + turn as u8) as char
        )));
        let (prompt, _, answer) = chat.answer(&messages);
        prompts.push(prompt);
        messages.push(Message::assistant(answer));
    }

    // Edit question 8: the path is turns 1-7, then the new question.
    let mut edited: Vec<Message> = messages[..2 * (EDITED_TURN - 1)].to_vec();
    let before_k = chat.before(&edited);
    edited.push(Message::user("Question 8, edited: name one bird."));
    let new_prompt = chat.text.chat_ids(&edited, &chat.answers).unwrap();
    let cached_path = chat.cache.tokens().to_vec();
    let expected = common_prefix(&cached_path, &new_prompt);
    assert!(
        expected >= before_k,
        "the cache holds {expected} tokens of the edited prompt, fewer than the {before_k} before turn 8"
    );
    // The first logits of the edit, from the cache, equal a fresh prefill's.
    let mut fresh = model::load(&header, 4096).unwrap();
    let mut fresh_logits = vec![];
    for chunk in new_prompt.chunks(256) {
        fresh_logits = fresh.forward(chunk, false).unwrap();
    }
    chat.model.truncate_cache(expected);
    let cached_logits = chat.model.forward(&new_prompt[expected..], false).unwrap();
    assert_eq!(
        cached_logits, fresh_logits,
        "cached and fresh logits differ"
    );
    chat.model.truncate_cache(expected);
    chat.cache.truncate(expected);

    let (_, reused, answer) = chat.answer(&edited);
    assert_eq!(
        reused, expected,
        "the edit reused other than the shared prefix"
    );
    eprintln!(
        "edit at turn {EDITED_TURN} of {TURNS}: {} prompt tokens, {reused} cached, {} read \
         (turns before it: {before_k} tokens; the original turn {EDITED_TURN} read {})",
        new_prompt.len(),
        new_prompt.len() - reused,
        prompts[EDITED_TURN - 1].len()
    );
    edited.push(Message::assistant(answer));

    // Back to the original branch, and on: only what differs from the edited path is read.
    let mut original = messages.clone();
    original.push(Message::user("Question 11: and one fish?"));
    let switch_prompt = chat.text.chat_ids(&original, &chat.answers).unwrap();
    let shared = common_prefix(chat.cache.tokens(), &switch_prompt);
    let (_, reused, _) = chat.answer(&original);
    assert_eq!(reused, shared);
    assert!(reused >= before_k, "{reused} < {before_k}");
    eprintln!(
        "switch back and ask turn 11: {} prompt tokens, {reused} cached, {} read",
        switch_prompt.len(),
        switch_prompt.len() - reused
    );
}
