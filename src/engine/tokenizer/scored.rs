//! Sentencepiece BPE ranked by the vocabulary itself, for GGUF files that store no merges.
//!
//! Two adjacent tokens merge when their concatenation is a token, best merge first in the
//! order of transformers' `generate_merges` (see `merges.rs`, which lists that order and is
//! kept as this model's test reference). Ranking a pair when the encoder meets it, instead of
//! listing all ~515k merges of a 262k vocabulary at load and handing them to the tokenizers
//! crate as strings, is what brings Gemma's tokenizer build from ~0.6 s to a few tens of ms.
//! The encoding loop is the tokenizers crate's BPE one (byte fallback, fused unknowns, the
//! leftmost of equal-ranked pairs first), so the ids are the same.

use super::merges::generate_merges;
use hashbrown::{DefaultHashBuilder, HashTable};
use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hash::BuildHasher;
use tokenizers::models::bpe::{Vocab, BPE};

/// Which merge of two goes first, after the merged token's rank: the one with the longer left
/// part, then the longer right part, then the merged token seen first in the vocabulary.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct Rank {
    /// Smaller is better: a higher score, or (by position) an earlier token.
    token_rank: u64,
    left_chars: Reverse<u32>,
    right_chars: Reverse<u32>,
    first_index: u32,
}

/// How the merged tokens themselves are ranked.
pub(super) enum MergeOrder {
    /// By `tokenizer.ggml.scores`, higher first.
    Scores(Vec<f64>),
    /// By id, earlier first (Gemma 1–3, whose scores do not follow its merges).
    Position,
}

/// A vocabulary entry: the id a lookup of the string gives (the last duplicate, as in a
/// Python dict) and where the string first appears (which breaks ties between merges).
#[derive(Clone, Copy)]
struct Entry {
    id: u32,
    first: u32,
}

pub(crate) struct ScoredBpe {
    /// Every token's text, back to back; token `i` is `text[bounds[i]..bounds[i + 1]]`.
    text: String,
    bounds: Vec<u32>,
    index: HashTable<Entry>,
    hasher: DefaultHashBuilder,
    order: MergeOrder,
    /// The `<0xNN>` token of each byte, for characters the vocabulary lacks.
    byte_tokens: Vec<Option<u32>>,
    unk: Option<u32>,
}

/// One piece of a word while it is being merged (a doubly linked list over a vector).
#[derive(Clone, Copy)]
struct Symbol {
    id: u32,
    /// Bytes of the word it covers; 0 once merged into its left neighbour.
    len: usize,
    prev: Option<usize>,
    next: Option<usize>,
}

impl ScoredBpe {
    /// `tokens` as the merges spell them; `unk_token` is used for characters that neither the
    /// vocabulary nor its byte tokens cover (when it is in the vocabulary).
    pub(super) fn new(tokens: &[Cow<str>], order: MergeOrder, unk_token: Option<&str>) -> Self {
        let mut text = String::with_capacity(tokens.iter().map(|t| t.len()).sum());
        let mut bounds = Vec::with_capacity(tokens.len() + 1);
        bounds.push(0);
        for token in tokens {
            text.push_str(token);
            bounds.push(text.len() as u32);
        }
        let mut model = ScoredBpe {
            text,
            bounds,
            index: HashTable::with_capacity(tokens.len()),
            hasher: DefaultHashBuilder::default(),
            order,
            byte_tokens: Vec::new(),
            unk: None,
        };
        for id in 0..tokens.len() as u32 {
            let hash = model.hasher.hash_one(model.token(id));
            let (text, bounds) = (&model.text, &model.bounds);
            let same = |e: &Entry| token_text(text, bounds, e.id) == token_text(text, bounds, id);
            match model.index.find_mut(hash, same) {
                Some(entry) => entry.id = id,
                None => {
                    let hasher = &model.hasher;
                    let rehash = |e: &Entry| hasher.hash_one(token_text(text, bounds, e.id));
                    model
                        .index
                        .insert_unique(hash, Entry { id, first: id }, rehash);
                }
            }
        }
        model.byte_tokens = (0..=255u8)
            .map(|b| model.lookup(&format!("<0x{b:02X}>")).map(|e| e.id))
            .collect();
        model.unk = unk_token.and_then(|t| model.lookup(t)).map(|e| e.id);
        model
    }

    fn token(&self, id: u32) -> &str {
        token_text(&self.text, &self.bounds, id)
    }

    fn lookup(&self, text: &str) -> Option<Entry> {
        let hash = self.hasher.hash_one(text);
        self.index.find(hash, |e| self.token(e.id) == text).copied()
    }

    /// The id a string looks up to.
    pub(super) fn token_to_id(&self, text: &str) -> Option<u32> {
        self.lookup(text).map(|e| e.id)
    }

    /// A token's text, for ids a lookup can give (an earlier duplicate has none, as in the
    /// tokenizers crate, whose reverse map is built from the lookup map).
    pub(super) fn id_to_token(&self, id: u32) -> Option<&str> {
        let text = self.text_of(id)?;
        (self.token_to_id(text) == Some(id)).then_some(text)
    }

    fn text_of(&self, id: u32) -> Option<&str> {
        let i = id as usize;
        let (&start, &end) = (self.bounds.get(i)?, self.bounds.get(i + 1)?);
        self.text.get(start as usize..end as usize)
    }

    /// The text of a token the encoder produced (always an id a lookup gives, so no check).
    pub(super) fn text(&self, id: u32) -> &str {
        self.token(id)
    }

    /// How many distinct strings the vocabulary has.
    pub(super) fn distinct_tokens(&self) -> usize {
        self.index.len()
    }

    /// Every distinct string with the id it looks up to.
    pub(super) fn entries(&self) -> impl Iterator<Item = (&str, u32)> + '_ {
        self.index.iter().map(|e| (self.token(e.id), e.id))
    }

    /// The same model as the tokenizers crate's BPE with every merge listed, for a
    /// tokenizer.json export. Slow (that listing is what this model avoids at load).
    pub(super) fn listed(&self) -> Result<BPE, String> {
        let count = self.bounds.len() - 1;
        let tokens: Vec<Cow<str>> = (0..count as u32).map(|id| self.token(id).into()).collect();
        let map: Vocab = (0u32..)
            .zip(&tokens)
            .map(|(id, t)| (t.to_string(), id))
            .collect();
        let merges = match &self.order {
            MergeOrder::Scores(scores) => generate_merges(&tokens, &map, |id| scores[id]),
            MergeOrder::Position => generate_merges(&tokens, &map, |id| -(id as f64)),
        };
        let mut builder = BPE::builder().fuse_unk(true).byte_fallback(true);
        if let Some(unk) = self.unk {
            builder = builder.unk_token(self.token(unk).to_string());
        }
        builder
            .vocab_and_merges(map, merges)
            .build()
            .map_err(|e| e.to_string())
    }

    /// The merge of `left` then `right`, if their concatenation is a token: its rank and id.
    fn merge(&self, left: u32, right: u32, scratch: &mut String) -> Option<(Rank, u32)> {
        let (l, r) = (self.token(left), self.token(right));
        scratch.clear();
        scratch.push_str(l);
        scratch.push_str(r);
        let merged = self.lookup(scratch)?;
        let token_rank = match &self.order {
            MergeOrder::Scores(scores) => !ordered_bits(scores[merged.id as usize]),
            MergeOrder::Position => u64::from(merged.id),
        };
        let rank = Rank {
            token_rank,
            left_chars: Reverse(l.chars().count() as u32),
            right_chars: Reverse(r.chars().count() as u32),
            first_index: merged.first,
        };
        Some((rank, merged.id))
    }

    /// The ids of one pre-tokenized piece of text, with the byte range each covers.
    pub(super) fn encode_word(&self, word: &str) -> Vec<(u32, (usize, usize))> {
        let mut symbols = self.symbols(word);
        self.merge_all(&mut symbols);
        let mut start = 0;
        symbols
            .iter()
            .filter(|s| s.len > 0)
            .map(|s| {
                start += s.len;
                (s.id, (start - s.len, start))
            })
            .collect()
    }

    /// One symbol per character; characters outside the vocabulary become their byte tokens,
    /// else (runs of them) the unknown token, else nothing.
    fn symbols(&self, word: &str) -> Vec<Symbol> {
        let mut symbols: Vec<Symbol> = Vec::with_capacity(word.len());
        let push = |symbols: &mut Vec<Symbol>, id, len| {
            let at = symbols.len();
            if let Some(last) = symbols.last_mut() {
                last.next = Some(at);
            }
            let prev = at.checked_sub(1);
            symbols.push(Symbol {
                id,
                len,
                prev,
                next: None,
            });
        };
        let mut pending_unk: Option<(u32, usize)> = None;
        let mut utf8 = [0u8; 4];
        for c in word.chars() {
            let piece = c.encode_utf8(&mut utf8);
            if let Some(id) = self.token_to_id(piece) {
                if let Some((unk, len)) = pending_unk.take() {
                    push(&mut symbols, unk, len);
                }
                push(&mut symbols, id, piece.len());
                continue;
            }
            let bytes: Option<Vec<u32>> = piece
                .bytes()
                .map(|b| self.byte_tokens.get(b as usize).copied().flatten())
                .collect();
            if let Some(bytes) = bytes {
                // As in the tokenizers crate, a pending unknown is not flushed here, so it
                // lands after these byte tokens.
                for id in bytes {
                    push(&mut symbols, id, 1);
                }
            } else if let Some(unk) = self.unk {
                let len = pending_unk.map_or(0, |(_, len)| len);
                pending_unk = Some((unk, len + piece.len()));
            }
        }
        if let Some((unk, len)) = pending_unk {
            push(&mut symbols, unk, len);
        }
        symbols
    }

    /// Merges the best-ranked adjacent pair, leftmost first among equals, until none is left.
    fn merge_all(&self, symbols: &mut [Symbol]) {
        let mut scratch = String::new();
        let mut queue = BinaryHeap::with_capacity(symbols.len());
        for pos in 0..symbols.len().saturating_sub(1) {
            let pair = (symbols[pos].id, symbols[pos + 1].id);
            if let Some((rank, id)) = self.merge(pair.0, pair.1, &mut scratch) {
                queue.push(Reverse((rank, pos, id)));
            }
        }
        while let Some(Reverse((_, pos, new_id))) = queue.pop() {
            let current = symbols[pos];
            let Some(next_pos) = current.next.filter(|_| current.len > 0) else {
                continue;
            };
            let right = symbols[next_pos];
            // A pair queued before one of its symbols changed is stale.
            let merged = self.merge(current.id, right.id, &mut scratch);
            if merged.map(|(_, id)| id) != Some(new_id) {
                continue;
            }
            symbols[pos] = Symbol {
                id: new_id,
                len: current.len + right.len,
                prev: current.prev,
                next: right.next,
            };
            symbols[next_pos].len = 0;
            if let Some(after) = right.next {
                symbols[after].prev = Some(pos);
            }
            if let Some(before) = current.prev {
                if let Some((rank, id)) = self.merge(symbols[before].id, new_id, &mut scratch) {
                    queue.push(Reverse((rank, before, id)));
                }
            }
            if let Some(after) = right.next {
                if let Some((rank, id)) = self.merge(new_id, symbols[after].id, &mut scratch) {
                    queue.push(Reverse((rank, pos, id)));
                }
            }
        }
    }
}

fn token_text<'t>(text: &'t str, bounds: &[u32], id: u32) -> &'t str {
    let i = id as usize;
    &text[bounds[i] as usize..bounds[i + 1] as usize]
}

/// The bits of a float as an unsigned number in the float's order (-0 counts as +0, as
/// Python's comparison does; a NaN, which only a broken file has, sorts past infinity).
fn ordered_bits(x: f64) -> u64 {
    let bits = (x + 0.0).to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

#[cfg(test)]
mod tests;
