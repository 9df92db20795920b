//! Fitting a conversation into the context: which of the oldest turns to leave out, the same
//! ones turn after turn while they fit, so the next prompt keeps the cached start.

use crate::chat::{Message, Role};
use anyhow::{bail, Result};
use std::hash::{Hash, Hasher};

/// Which leading messages the last prompt left out, so that the next turn of the same
/// conversation can leave out the same ones and reuse the cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Window {
    /// Messages left out after the system prompt.
    dropped: usize,
    /// A hash of those messages: the window applies only to the conversation they began.
    fingerprint: u64,
}

/// A prompt that fits, and how many of the oldest messages were left out to make it fit.
#[derive(Debug, Clone, PartialEq)]
pub struct FittedPrompt {
    pub tokens: Vec<u32>,
    pub dropped_messages: usize,
    /// Pass it to the next turn's [`fit_conversation`].
    pub window: Window,
}

/// When turns must be left out, enough go that the prompt takes at most this share of the
/// budget (in quarters). The turns that follow then fit behind the same start and reuse the
/// cache; leaving out only what is needed would move the start, and so recompute the whole
/// prompt, on every turn of a long conversation.
const REFILL_QUARTERS: usize = 3;

/// Encodes `messages` with `encode`. When the result exceeds `budget` tokens, leaves out the
/// oldest turns (a user message and the answers after it), never the system prompt nor the
/// newest message: the same ones as `previous` when that still fits (the cache is reused),
/// else enough that the prompt takes at most three quarters of the budget. Never cuts inside
/// a message: if even the shortest form is too long, says so.
pub fn fit_conversation(
    messages: &[Message],
    budget: usize,
    previous: Window,
    mut encode: impl FnMut(&[Message]) -> Result<Vec<u32>>,
) -> Result<FittedPrompt> {
    let all = encode(messages)?;
    if all.len() <= budget {
        return Ok(FittedPrompt {
            tokens: all,
            dropped_messages: 0,
            window: Window::default(),
        });
    }
    let first = usize::from(messages.first().is_some_and(|m| m.role == Role::System));
    // Where the kept messages may begin: at a question, so roles keep alternating as
    // templates expect, or at the newest message alone.
    let starts: Vec<usize> = (first + 1..messages.len())
        .filter(|&i| i + 1 == messages.len() || messages[i].role == Role::User)
        .collect();
    let mut encode_from = |start: usize| {
        let mut kept = messages[..first].to_vec();
        kept.extend_from_slice(&messages[start..]);
        encode(&kept)
    };
    let fitted = |start: usize, tokens: Vec<u32>| FittedPrompt {
        tokens,
        dropped_messages: start - first,
        window: Window {
            dropped: start - first,
            fingerprint: fingerprint(&messages[first..start]),
        },
    };

    // The same start as the previous turn, if this conversation is the one it began.
    let start = first + previous.dropped;
    if previous.dropped > 0
        && starts.contains(&start)
        && fingerprint(&messages[first..start]) == previous.fingerprint
    {
        let tokens = encode_from(start)?;
        if tokens.len() <= budget {
            return Ok(fitted(start, tokens));
        }
    }

    // The earliest start within the refill target. Prompts shrink as the start moves later,
    // so a binary search finds it with a few encodings, not one per turn of the history.
    let target = budget * REFILL_QUARTERS / 4;
    let (mut low, mut high) = (0, starts.len());
    let mut found = None;
    while low < high {
        let mid = (low + high) / 2;
        let tokens = encode_from(starts[mid])?;
        if tokens.len() <= target {
            found = Some((starts[mid], tokens));
            high = mid;
        } else {
            low = mid + 1;
        }
    }
    if let Some((start, tokens)) = found {
        return Ok(fitted(start, tokens));
    }
    // Even the newest message alone is above the target: it goes alone if it fits at all.
    let shortest = match starts.last() {
        Some(&start) => {
            let tokens = encode_from(start)?;
            if tokens.len() <= budget {
                return Ok(fitted(start, tokens));
            }
            tokens.len()
        }
        None => all.len(),
    };
    bail!(
        "the prompt is {shortest} tokens, more than the {budget} that fit in the context; \
         shorten it or raise --ctx-size"
    )
}

fn fingerprint(messages: &[Message]) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    for m in messages {
        m.role.as_str().hash(&mut hasher);
        m.content.hash(&mut hasher);
    }
    hasher.finish()
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
    fn a_conversation_that_fits_is_untouched() {
        let msgs = vec![Message::system("be brief"), Message::user("hello there")];
        let fitted = fit_conversation(&msgs, 100, Window::default(), words).unwrap();
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
        // 25 tokens in all; from "nine" on, 13: within three quarters of 18.
        let fitted = fit_conversation(&msgs, 18, Window::default(), |m| {
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
        let err = fit_conversation(&msgs, 5, Window::default(), words)
            .unwrap_err()
            .to_string();
        assert!(err.contains("10 tokens"), "{err}");
    }

    /// A system prompt and `turns` exchanges of five-token messages, then a question.
    fn long_chat(turns: usize) -> Vec<Message> {
        let mut msgs = vec![Message::system("sys")];
        for i in 0..turns {
            msgs.push(Message::user(format!("question {i} a b")));
            msgs.push(Message::assistant(format!("answer {i} c d")));
        }
        msgs.push(Message::user("the newest question"));
        msgs
    }

    #[test]
    fn overflow_leaves_room_for_the_next_turns() {
        // 3 + 20 * 12 + 5 = 248 tokens; the budget is 100, the refill target 75.
        let fitted = fit_conversation(&long_chat(20), 100, Window::default(), words).unwrap();
        assert!(fitted.tokens.len() <= 75, "{}", fitted.tokens.len());
        assert!(fitted.tokens.len() > 75 - 12, "one turn more would fit");
        assert_eq!(fitted.dropped_messages % 2, 0, "whole turns");
    }

    #[test]
    fn the_next_turn_keeps_the_same_start_while_it_fits() {
        let mut msgs = long_chat(20);
        let first = fit_conversation(&msgs, 100, Window::default(), words).unwrap();
        let mut window = first.window;
        let mut starts = vec![first.dropped_messages];
        // The first fit is 68 tokens and each turn adds 11: 79 and 90 fit behind the same
        // start, 101 does not.
        for _ in 0..3 {
            msgs.insert(msgs.len() - 1, Message::assistant("an answer c d e"));
            msgs.push(Message::user("another question"));
            let next = fit_conversation(&msgs, 100, window, words).unwrap();
            assert!(next.tokens.len() <= 100);
            starts.push(next.dropped_messages);
            window = next.window;
        }
        assert_eq!(starts[1], starts[0], "{starts:?}");
        assert_eq!(starts[2], starts[0], "{starts:?}");
        assert!(starts[3] > starts[0], "{starts:?}");
    }

    #[test]
    fn another_conversation_does_not_inherit_the_window() {
        let old = fit_conversation(&long_chat(20), 100, Window::default(), words).unwrap();
        let mut other = long_chat(20);
        other[1] = Message::user("a different first question");
        let fresh = fit_conversation(&other, 100, Window::default(), words).unwrap();
        let with_old = fit_conversation(&other, 100, old.window, words).unwrap();
        assert_eq!(with_old, fresh);
    }

    #[test]
    fn a_long_history_is_fitted_with_few_encodings() {
        let mut calls = 0;
        fit_conversation(&long_chat(1000), 100, Window::default(), |m| {
            calls += 1;
            words(m)
        })
        .unwrap();
        assert!(calls <= 14, "{calls} encodings");
    }
}
