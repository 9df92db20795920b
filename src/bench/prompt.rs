//! What the bench feeds a model: real English text tokenized by the model's own tokenizer,
//! the same text for every model.
//!
//! Shape-only files have no vocabulary, so they cannot tokenize anything; they get the same
//! *number* of token ids, derived deterministically inside their vocabulary. For the prefill
//! sweeps that number is exactly `--prompt-tokens`; for time to first token it is
//! [`SHAPE_ONLY_CHAT_TOKENS`], about the length of the short chat prompt under a typical
//! chat template. Every record states how many tokens its TTFT prompt had.

use crate::chat::Message;
use crate::engine::answer_ids::AnswerIds;
use crate::engine::prompt::ModelText;
use anyhow::{bail, Result};

/// The short chat turn whose time to first token is measured.
pub const CHAT_QUESTION: &str =
    "Why does a candle flame point upwards, and what would it look like in space?";

/// Token ids a shape-only TTFT prompt gets: about a templated chat prompt of the question
/// above, which is 17 tokens for SmolLM2 and Gemma 3; with their templates the whole prompt is
/// 47 tokens (SmolLM2's adds a default system prompt) and 26 (Gemma 3's built-in template).
pub const SHAPE_ONLY_CHAT_TOKENS: usize = 32;

/// The prefill text, repeated as often as a prompt length needs.
pub const PASSAGE: &str = "\
The candle is among the oldest tools people have made for carrying light into the dark. \
Long before anyone understood combustion, makers learned that a twisted wick of cotton or \
rush, set in tallow, beeswax or whale oil, would burn slowly and steadily for hours. The \
flame melts a small pool of fuel around the wick, the liquid climbs the fibres by capillary \
action, and near the top the heat turns it into vapour, which is what actually burns. A \
candle is therefore a small chemical factory that regulates itself: if the flame grows, it \
melts more wax and draws more fuel; if the wick grows too long, it bends into the hottest \
part of the flame and is trimmed away as ash.

Michael Faraday made this point in a famous series of Christmas lectures for young people \
in London in 1848. He argued that there was no better door into natural philosophy than the \
physical phenomena of a candle, and he used a single flame to explain air currents, the \
composition of water, the behaviour of gases and the breathing of animals. His audience \
watched him trap the products of combustion in cold glass, collect water from a burning \
candle, and show that the bright yellow light comes from tiny particles of glowing carbon \
that have not yet found oxygen.

Today most of the world lights its rooms with electricity, yet candles have not \
disappeared. They mark birthdays and anniversaries, they are lit in places of worship and \
in memory of the dead, and they wait in kitchen drawers for the evening the power fails. \
Their light is warm and uneven, and it moves when someone walks past. Perhaps that is why a \
room lit by candles feels inhabited in a way that a room lit by a steady lamp does not: the \
flame responds to the air we share with it.

Engineers who build computers worry about heat in much the same terms. A processor turns \
almost all of the energy it draws into warmth, and the faster it works the more it must \
shed. Designers trade speed against power, choose how many cores to switch on, and decide \
how much memory to keep close to the arithmetic units. Running a language model on an \
ordinary laptop is an exercise in that same economy: every token costs a pass over billions \
of numbers, and the question is how quickly the machine can read them from memory.";

/// The chat prompt as the engine builds it: template, tokenize, BOS when the model wants one
/// and the template did not write it.
pub fn chat_prompt(text: &ModelText) -> Result<Vec<u32>> {
    text.chat_ids(&[Message::user(CHAT_QUESTION)], &AnswerIds::default())
}

/// Exactly `n` tokens of the passage (BOS first when the model wants one).
pub fn passage_prompt(text: &ModelText, n: usize) -> Result<Vec<u32>> {
    let mut copies = 1;
    loop {
        let passage = vec![PASSAGE; copies].join("\n\n");
        let ids = text.raw_ids(&passage)?;
        if ids.len() >= n {
            return Ok(ids[..n].to_vec());
        }
        if copies > 1 << 12 {
            bail!("the tokenizer makes too few tokens of the prompt text");
        }
        copies *= 2;
    }
}

/// `n` token ids inside a vocabulary of `vocab`, the same for every call (shape-only files).
pub fn synthetic_ids(n: usize, vocab: usize) -> Vec<u32> {
    let vocab = vocab.max(1) as u64;
    (0..n as u64)
        .map(|i| ((i.wrapping_mul(2_654_435_761) + 1_013_904_223) % vocab) as u32)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_ids_stay_in_the_vocabulary_and_repeat_exactly() {
        let ids = synthetic_ids(1000, 49152);
        assert_eq!(ids.len(), 1000);
        assert!(ids.iter().all(|&i| i < 49152));
        assert_eq!(ids, synthetic_ids(1000, 49152));
        let distinct: std::collections::HashSet<_> = ids.iter().collect();
        assert!(distinct.len() > 900);
    }

    #[test]
    fn the_passage_is_a_few_paragraphs_of_real_text() {
        assert_eq!(PASSAGE.split("\n\n").count(), 4);
        assert!(PASSAGE.split_whitespace().count() > 400);
    }
}
