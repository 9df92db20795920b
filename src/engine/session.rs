//! The token sequence in the KV cache, prefix reuse across turns, and fitting a conversation
//! into the context.

use crate::chat::{Message, Role};
use anyhow::{bail, Result};

/// The tokens whose keys and values are in the model's cache, in order.
#[derive(Debug, Default, Clone)]
pub struct CachedSequence {
    tokens: Vec<u32>,
}

impl CachedSequence {
    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }

    /// How many leading tokens of `prompt` are already cached. At least one prompt token is
    /// always left to compute, because the next token's logits come from the last one.
    pub fn reusable_prefix(&self, prompt: &[u32]) -> usize {
        let common = self
            .tokens
            .iter()
            .zip(prompt)
            .take_while(|(a, b)| a == b)
            .count();
        common.min(prompt.len().saturating_sub(1))
    }

    pub fn truncate(&mut self, len: usize) {
        self.tokens.truncate(len);
    }

    pub fn extend(&mut self, tokens: &[u32]) {
        self.tokens.extend_from_slice(tokens);
    }

    pub fn clear(&mut self) {
        self.tokens.clear();
    }
}

/// A prompt that fits, and how many of the oldest messages were left out to make it fit.
#[derive(Debug, Clone, PartialEq)]
pub struct FittedPrompt {
    pub tokens: Vec<u32>,
    pub dropped_messages: usize,
}

/// Encodes `messages` with `encode`; while the result exceeds `budget` tokens, leaves out the
/// oldest turn (a user message and the answers after it), never the system prompt nor the
/// newest message. Never cuts inside a message: if even the shortest form is too long, says so.
pub fn fit_conversation(
    messages: &[Message],
    budget: usize,
    mut encode: impl FnMut(&[Message]) -> Result<Vec<u32>>,
) -> Result<FittedPrompt> {
    let mut kept: Vec<Message> = messages.to_vec();
    let mut dropped = 0;
    loop {
        let tokens = encode(&kept)?;
        if tokens.len() <= budget {
            return Ok(FittedPrompt {
                tokens,
                dropped_messages: dropped,
            });
        }
        let first = usize::from(kept.first().is_some_and(|m| m.role == Role::System));
        // The newest message is always kept.
        let droppable = kept.len().saturating_sub(first + 1);
        if droppable == 0 {
            bail!(
                "the prompt is {} tokens, more than the {budget} that fit in the context; \
                 shorten it or raise --ctx-size",
                tokens.len()
            );
        }
        // Drop one whole turn so roles keep alternating as templates expect.
        let mut end = first + 1;
        while end < kept.len() - 1 && kept[end].role != Role::User {
            end += 1;
        }
        dropped += end - first;
        kept.drain(first..end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(messages: &[Message]) -> Result<Vec<u32>> {
        // One token per word and two per message for the template's markers.
        Ok(messages
            .iter()
            .flat_map(|m| std::iter::repeat_n(0, 2 + m.content.split_whitespace().count()))
            .collect())
    }

    #[test]
    fn reuse_is_the_common_prefix_but_leaves_one_token() {
        let mut c = CachedSequence::default();
        c.extend(&[1, 2, 3, 4]);
        assert_eq!(c.reusable_prefix(&[1, 2, 3, 4, 5, 6]), 4);
        assert_eq!(c.reusable_prefix(&[1, 2, 9, 4]), 2);
        assert_eq!(c.reusable_prefix(&[1, 2, 3, 4]), 3);
        assert_eq!(c.reusable_prefix(&[7]), 0);
    }

    #[test]
    fn a_conversation_that_fits_is_untouched() {
        let msgs = vec![Message::system("be brief"), Message::user("hello there")];
        let fitted = fit_conversation(&msgs, 100, words).unwrap();
        assert_eq!(fitted.dropped_messages, 0);
        assert_eq!(fitted.tokens.len(), 8);
    }

    #[test]
    fn overflow_drops_oldest_turns_keeping_system_and_newest() {
        let msgs = vec![
            Message::system("sys"),
            Message::user("one two three four"),
            Message::assistant("five six seven eight"),
            Message::user("nine"),
            Message::assistant("ten"),
            Message::user("last question"),
        ];
        let mut seen = Vec::new();
        let fitted = fit_conversation(&msgs, 14, |m| {
            seen.push(m.to_vec());
            words(m)
        })
        .unwrap();
        assert_eq!(fitted.dropped_messages, 2);
        let last = seen.last().unwrap();
        assert_eq!(last[0], Message::system("sys"));
        assert_eq!(last[1], Message::user("nine"));
        assert_eq!(last.last().unwrap(), &Message::user("last question"));
    }

    #[test]
    fn a_single_message_too_long_is_an_error_not_a_cut() {
        let msgs = vec![Message::user("a b c d e f g h")];
        let err = fit_conversation(&msgs, 5, words).unwrap_err().to_string();
        assert!(err.contains("10 tokens"), "{err}");
    }
}
