//! The model's own ids for the answers it wrote, put back in the prompts that follow.
//!
//! A sampled answer is often not what the tokenizer makes of its text (a repeat penalty or a
//! draw picks `":" "\n" "\n"` where the tokenizer says `":\n\n"`), so a prompt that tokenized
//! the answer again would leave the KV cache at the first such token and read the rest of the
//! answer again. The engine remembers each answer's ids by its text; where a rendered prompt
//! holds exactly that text between two token boundaries, those ids replace the tokenizer's.
//! Anything else (an edited or trimmed answer, thinking a template removed) is tokenized.

use super::tokenizer::{Pieces, TextTokenizer};
use crate::chat::{Message, Role};
use std::collections::VecDeque;

/// Answers remembered at most; the oldest go first. A conversation's prompt rarely holds more
/// than a few dozen answers, and a server's clients send recent ones back.
const CAPACITY: usize = 256;

/// Recent answers' text and the ids the model generated for it, newest last.
#[derive(Debug, Default, Clone)]
pub struct AnswerIds {
    recent: VecDeque<(String, Vec<u32>)>,
}

impl AnswerIds {
    /// Remembers that `ids` were generated as `text` (a stopped answer's too). Empty answers
    /// are not worth a place.
    pub fn record(&mut self, text: &str, ids: &[u32]) {
        if text.is_empty() || ids.is_empty() {
            return;
        }
        self.recent.retain(|(t, _)| t != text);
        if self.recent.len() == CAPACITY {
            self.recent.pop_front();
        }
        self.recent.push_back((text.to_string(), ids.to_vec()));
    }

    /// The ids generated as exactly `text`, the newest when it was written twice.
    pub fn get(&self, text: &str) -> Option<&[u32]> {
        self.recent
            .iter()
            .rev()
            .find(|(t, _)| t.len() == text.len() && t == text)
            .map(|(_, ids)| ids.as_slice())
    }

    pub fn is_empty(&self) -> bool {
        self.recent.is_empty()
    }

    /// `tokens` (the tokenizer's ids of `rendered`, a prompt rendered from `messages`) with
    /// the span of every remembered answer replaced by the ids the model generated for it.
    /// Only where the token bytes spell `rendered` exactly, so every span's place is known,
    /// and only spans that start and end on token boundaries; the rest stays as tokenized.
    pub fn splice(
        &self,
        tokenizer: &TextTokenizer,
        rendered: &str,
        messages: &[Message],
        tokens: Vec<u32>,
    ) -> Vec<u32> {
        if self.is_empty() || tokenizer.pieces() == Pieces::Decoder {
            return tokens;
        }
        let Some(ends) = token_ends(tokenizer, &tokens, rendered) else {
            return tokens;
        };
        let mut out = Vec::with_capacity(tokens.len());
        let mut copied = 0;
        for (span, ids) in self.answer_spans(tokenizer, rendered, messages) {
            let (Some(first), Some(end)) = (boundary(&ends, span.0), boundary(&ends, span.1))
            else {
                continue;
            };
            if first < copied || !spells(tokenizer, ids, &rendered[span.0..span.1]) {
                continue;
            }
            out.extend_from_slice(&tokens[copied..first]);
            out.extend_from_slice(ids);
            copied = end;
        }
        out.extend_from_slice(&tokens[copied..]);
        out
    }

    /// Byte spans of the remembered answers in `rendered`, in order, with the ids that spell
    /// each. Each message is looked for after the previous one found, so an answer quoted in
    /// a later question is not taken for the answer itself. A template that trims contents
    /// (Gemma's, Llama 3's) places an answer without its outer white space: then the ids
    /// between those spaces serve, when the spaces end on token boundaries.
    fn answer_spans<'a>(
        &'a self,
        tokenizer: &TextTokenizer,
        rendered: &str,
        messages: &[Message],
    ) -> Vec<((usize, usize), &'a [u32])> {
        let mut spans = Vec::new();
        let mut cursor = 0;
        for message in messages {
            let content = message.content.as_str();
            let placed = [content, content.trim()]
                .into_iter()
                .filter(|text| !text.is_empty())
                .find_map(|text| rendered[cursor..].find(text).map(|at| (at, text)));
            let Some((at, text)) = placed else {
                continue;
            };
            let span = (cursor + at, cursor + at + text.len());
            cursor = span.1;
            if message.role != Role::Assistant {
                continue;
            }
            let Some(ids) = self.get(content) else {
                continue;
            };
            let lead = content.len() - content.trim_start().len();
            if let Some(ids) = sub_ids(tokenizer, ids, lead, lead + text.len()) {
                spans.push((span, ids));
            }
        }
        spans
    }
}

/// The ids among `ids` that spell bytes `from..to` of their text, when both ends fall on
/// token boundaries.
fn sub_ids<'a>(
    tokenizer: &TextTokenizer,
    ids: &'a [u32],
    from: usize,
    to: usize,
) -> Option<&'a [u32]> {
    let mut bytes = Vec::new();
    let mut ends = Vec::with_capacity(ids.len());
    for &id in ids {
        if !tokenizer.push_token_bytes(id, &mut bytes) {
            return None;
        }
        ends.push(bytes.len());
    }
    Some(&ids[boundary(&ends, from)?..boundary(&ends, to)?])
}

/// The byte offset in `rendered` where each token ends, when the tokens spell it exactly.
fn token_ends(tokenizer: &TextTokenizer, tokens: &[u32], rendered: &str) -> Option<Vec<usize>> {
    let mut bytes = Vec::with_capacity(rendered.len());
    let mut ends = Vec::with_capacity(tokens.len());
    for &id in tokens {
        if !tokenizer.push_token_bytes(id, &mut bytes) {
            return None;
        }
        ends.push(bytes.len());
    }
    (bytes == rendered.as_bytes()).then_some(ends)
}

/// The index of the token that starts at byte `at` (the token count when `at` is the end),
/// or None when a token straddles it.
fn boundary(ends: &[usize], at: usize) -> Option<usize> {
    let index = ends.partition_point(|&end| end <= at);
    let start = if index == 0 { 0 } else { ends[index - 1] };
    (start == at).then_some(index)
}

/// Whether `ids` spell `text` byte for byte.
fn spells(tokenizer: &TextTokenizer, ids: &[u32], text: &str) -> bool {
    let mut bytes = Vec::with_capacity(text.len());
    ids.iter()
        .all(|&id| tokenizer.push_token_bytes(id, &mut bytes))
        && bytes == text.as_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_ids_of_a_text_are_kept_and_empty_answers_are_not() {
        let mut answers = AnswerIds::default();
        answers.record("", &[1]);
        answers.record("hi", &[]);
        assert!(answers.is_empty());
        answers.record("hi", &[1, 2]);
        answers.record("hi", &[3]);
        assert_eq!(answers.get("hi"), Some(&[3][..]));
        assert_eq!(answers.get("h"), None);
    }

    #[test]
    fn the_oldest_answers_go_first_past_the_capacity() {
        let mut answers = AnswerIds::default();
        for i in 0..=CAPACITY as u32 {
            answers.record(&format!("answer {i}"), &[i]);
        }
        assert_eq!(answers.get("answer 0"), None);
        assert_eq!(answers.get("answer 1"), Some(&[1][..]));
        assert_eq!(answers.get(&format!("answer {CAPACITY}")), Some(&[256][..]));
    }

    #[test]
    fn a_boundary_is_where_one_token_ends_and_the_next_begins() {
        // Tokens spelling bytes 0..2, 2..5, 5..6.
        let ends = [2, 5, 6];
        assert_eq!(boundary(&ends, 0), Some(0));
        assert_eq!(boundary(&ends, 2), Some(1));
        assert_eq!(boundary(&ends, 3), None, "inside the second token");
        assert_eq!(boundary(&ends, 5), Some(2));
        assert_eq!(boundary(&ends, 6), Some(3), "the end");
    }
}
