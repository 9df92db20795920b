//! Listing the BPE merges a vocabulary implies, for files that store none.
//!
//! This is transformers' `generate_merges` (tokenization_utils_base.py) done without Python's
//! string copies. Sentencepiece vocabularies rank their merges on the fly instead
//! (`scored.rs`); the list is for byte-level vocabularies without merges and for exporting a
//! scored vocabulary as tokenizer.json, and it defines the order `scored.rs` must follow.

use std::borrow::Cow;
use std::cmp::Ordering;
use tokenizers::models::bpe::Vocab;

/// Every split of every token into two tokens of the vocabulary, best score first, then
/// longer left part, then longer right part; ties keep vocabulary order. `score` is looked up
/// by the token's id in `map` (where the last duplicate wins, as in a Python dict).
pub(super) fn generate_merges(
    tokens: &[Cow<str>],
    map: &Vocab,
    score: impl Fn(usize) -> f64,
) -> Vec<(String, String)> {
    struct Candidate {
        score: f64,
        left_chars: u32,
        right_chars: u32,
        token: u32,
        split: u32,
    }
    let has_duplicates = map.len() != tokens.len();
    let mut seen = std::collections::HashSet::new();
    let mut all = Vec::with_capacity(tokens.len() * 2);
    let mut local = Vec::new();
    for (index, token) in tokens.iter().enumerate() {
        // Python walks the dict: each distinct token once, where it first appears.
        if has_duplicates && !seen.insert(token.as_ref()) {
            continue;
        }
        let Some(&id) = map.get(token.as_ref()) else {
            continue;
        };
        local.clear();
        // Python slices by characters, so the splits are at character boundaries.
        for (k, (split, _)) in token.char_indices().enumerate().skip(1) {
            let (left, right) = token.split_at(split);
            if let Some(&l) = map.get(left) {
                if let Some(&r) = map.get(right) {
                    local.push((l, r, k as u32, split as u32));
                }
            }
        }
        local.sort_by_key(|&(l, r, _, _)| (l, r));
        let chars = token.chars().count() as u32;
        let s = score(id as usize);
        all.extend(local.iter().map(|&(_, _, k, split)| Candidate {
            score: s,
            left_chars: k,
            right_chars: chars - k,
            token: index as u32,
            split,
        }));
    }
    // A stable sort on the reversed comparison is Python's `sorted(..., reverse=True)`.
    all.sort_by(|a, b| {
        (b.score.partial_cmp(&a.score).unwrap_or(Ordering::Equal))
            .then(b.left_chars.cmp(&a.left_chars))
            .then(b.right_chars.cmp(&a.right_chars))
    });
    all.iter()
        .map(|c| {
            let (l, r) = tokens[c.token as usize].split_at(c.split as usize);
            (l.to_string(), r.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_from_a_vocabulary_follow_transformers_order() {
        // The expected lists are what transformers' generate_merges returns for this vocabulary.
        let words = [
            "a",
            "b",
            "c",
            "ab",
            "bc",
            "abc",
            "ca",
            "\u{2581}",
            "\u{2581}a",
            "cab",
        ];
        let tokens: Vec<Cow<str>> = words.into_iter().map(Cow::Borrowed).collect();
        let map: Vocab = (0u32..)
            .zip(words)
            .map(|(i, t)| (t.to_string(), i))
            .collect();
        let pairs = |m: Vec<(String, String)>| -> Vec<String> {
            m.into_iter().map(|(a, b)| format!("{a} {b}")).collect()
        };
        let scores = [0., 0., 0., -1., -2., -3., -2., 0., -1., -2.];
        let by_score = [
            "a b",
            "\u{2581} a",
            "ca b",
            "c ab",
            "b c",
            "c a",
            "ab c",
            "a bc",
        ];
        assert_eq!(
            pairs(generate_merges(&tokens, &map, |id| scores[id])),
            by_score
        );
        let by_position = [
            "a b",
            "b c",
            "ab c",
            "a bc",
            "c a",
            "\u{2581} a",
            "ca b",
            "c ab",
        ];
        assert_eq!(
            pairs(generate_merges(&tokens, &map, |id| -(id as f64))),
            by_position
        );
    }

    #[test]
    fn duplicate_tokens_count_once_with_the_last_ones_score() {
        let words = ["a", "b", "ab", "ab"];
        let tokens: Vec<Cow<str>> = words.into_iter().map(Cow::Borrowed).collect();
        let map: Vocab = (0u32..)
            .zip(words)
            .map(|(i, t)| (t.to_string(), i))
            .collect();
        let merges = generate_merges(&tokens, &map, |id| id as f64);
        assert_eq!(merges, [("a".to_string(), "b".to_string())]);
    }
}
