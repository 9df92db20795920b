//! Incremental, UTF-8-safe text from token ids.
//!
//! For the byte-exact tokenizers (every GGUF-built one, and tokenizer.json files with a
//! byte-level or sentencepiece decoder) each token is a run of bytes: pieces are the complete
//! UTF-8 prefix of the bytes so far, so a character split over byte-fallback tokens is held
//! until complete, and invalid bytes become U+FFFD exactly as `String::from_utf8_lossy` would
//! make them in [`TextTokenizer::decode`]. Other decoders get the prefix-offset technique:
//! decode a short window that starts with already-emitted tokens and emit only the new suffix.

use crate::engine::tokenizer::{Pieces, TextTokenizer};
use anyhow::Result;

/// Held tokens after which the generic path gives up waiting for text that decodes cleanly,
/// so that a decoder which never settles costs a bounded window, not the whole reply.
const MAX_HELD: usize = 16;

/// Incremental decoder: feed ids one at a time, get text pieces as soon as they are final.
pub struct Detokenizer<'a> {
    tokenizer: &'a TextTokenizer,
    /// Bytes not yet emitted: at most an incomplete UTF-8 sequence between calls.
    pending: Vec<u8>,
    /// Nothing has been decoded yet (where some sentencepiece flavours drop a space).
    at_start: bool,
    /// Generic path: ids from the first one still needed as context.
    window: Vec<u32>,
    /// Generic path: `window[..read]` has been emitted.
    read: usize,
}

impl<'a> Detokenizer<'a> {
    pub fn new(tokenizer: &'a TextTokenizer) -> Self {
        Self {
            tokenizer,
            pending: Vec::new(),
            at_start: true,
            window: Vec::new(),
            read: 0,
        }
    }

    /// Goes on from text already written (an answer continued): no first space to drop.
    pub fn continuing(mut self) -> Self {
        self.at_start = false;
        self
    }

    /// The text that `id` completes, if any. Control tokens and unknown ids add nothing.
    pub fn push(&mut self, id: u32) -> Result<Option<String>> {
        if let Some(marker) = self.tokenizer.thinking_marker(id) {
            // Whatever is held back comes first, then the marker.
            let held = self.finish()?.unwrap_or_default();
            return Ok(Some(held + marker));
        }
        if self.tokenizer.is_control(id) {
            return Ok(None);
        }
        if self.tokenizer.pieces() == Pieces::Decoder {
            if self.tokenizer.id_to_token(id).is_none() {
                return Ok(None);
            }
            self.window.push(id);
            return self.emit_window(false);
        }
        if !self.tokenizer.push_token_bytes(id, &mut self.pending) {
            return Ok(None);
        }
        if self.at_start && !self.pending.is_empty() {
            self.at_start = false;
            if self.tokenizer.strips_first_space() && self.pending[0] == b' ' {
                self.pending.remove(0);
            }
        }
        Ok(self.drain(false))
    }

    /// Whatever is still held at the end of the stream (an incomplete character becomes U+FFFD).
    pub fn finish(&mut self) -> Result<Option<String>> {
        if self.tokenizer.pieces() == Pieces::Decoder {
            return self.emit_window(true);
        }
        Ok(self.drain(true))
    }

    /// Emits the complete characters of `pending`, keeping a trailing incomplete sequence
    /// unless `last`. Invalid sequences become one U+FFFD each, as in `from_utf8_lossy`.
    fn drain(&mut self, last: bool) -> Option<String> {
        let mut text = String::new();
        let mut used = 0;
        for chunk in self.pending.utf8_chunks() {
            text.push_str(chunk.valid());
            used += chunk.valid().len();
            let invalid = chunk.invalid();
            if invalid.is_empty() {
                continue;
            }
            // A sequence cut short by the end of the buffer may still be completed.
            let cut_short =
                matches!(std::str::from_utf8(invalid), Err(e) if e.error_len().is_none());
            if used + invalid.len() == self.pending.len() && cut_short && !last {
                break;
            }
            text.push(char::REPLACEMENT_CHARACTER);
            used += invalid.len();
        }
        self.pending.drain(..used);
        (!text.is_empty()).then_some(text)
    }

    /// Generic path: decode the window with and without the unread ids; the difference is new
    /// text once it no longer ends in U+FFFD (a character still incomplete).
    fn emit_window(&mut self, last: bool) -> Result<Option<String>> {
        if self.window.len() == self.read {
            return Ok(None);
        }
        let before = self
            .tokenizer
            .decode_with_decoder(&self.window[..self.read])?;
        let after = self.tokenizer.decode_with_decoder(&self.window)?;
        let settled = !after.ends_with(char::REPLACEMENT_CHARACTER);
        let held = self.window.len() - self.read;
        if !(settled || last || held >= MAX_HELD) {
            return Ok(None);
        }
        let forced = last || held >= MAX_HELD;
        let new = match after.strip_prefix(before.as_str()) {
            Some(new) => new,
            // The decoder rewrote text already emitted: wait for it to settle, or when it cannot
            // wait any longer emit what lies past the old text's length.
            None if forced => after.get(before.len()..).unwrap_or(""),
            None => return Ok(None),
        };
        let new = new.to_string();
        // The ids just emitted stay as context for the next piece; older ones are dropped.
        self.window.drain(..self.read);
        self.read = self.window.len();
        Ok((!new.is_empty()).then_some(new))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tokenizer::tests::{byte_level, sentencepiece};

    fn pieces(tok: &TextTokenizer, ids: &[u32]) -> Vec<String> {
        let mut detok = Detokenizer::new(tok);
        let mut out: Vec<String> = ids
            .iter()
            .filter_map(|&id| detok.push(id).unwrap())
            .collect();
        out.extend(detok.finish().unwrap());
        out
    }

    #[test]
    fn pieces_concatenate_to_full_decode() {
        let tok = byte_level();
        for text in [
            "hello hello",
            "héllo 🚀 日本語\n",
            "<|im_end|>x<|endoftext|>",
        ] {
            let ids = tok.encode(text).unwrap();
            assert_eq!(pieces(&tok, &ids).concat(), tok.decode(&ids).unwrap());
        }
    }

    #[test]
    fn a_character_split_over_byte_tokens_is_held_until_complete() {
        let tok = sentencepiece("llama");
        // 🚀 is F0 9F 9A 80: four byte-fallback tokens, one piece.
        let ids: Vec<u32> = [0xF0, 0x9F, 0x9A, 0x80].iter().map(|b| 3 + b).collect();
        let mut detok = Detokenizer::new(&tok);
        assert_eq!(detok.push(ids[0]).unwrap(), None);
        assert_eq!(detok.push(ids[1]).unwrap(), None);
        assert_eq!(detok.push(ids[2]).unwrap(), None);
        assert_eq!(detok.push(ids[3]).unwrap().as_deref(), Some("🚀"));
        assert_eq!(detok.finish().unwrap(), None);
    }

    #[test]
    fn sentencepiece_spaces_are_kept_between_pieces() {
        let tok = sentencepiece("llama");
        // "▁ab", "▁ab", "▁a": the first space is the one the tokenizer added.
        assert_eq!(pieces(&tok, &[264, 264, 262]), ["ab", " ab", " a"]);
        let gemma = sentencepiece("gemma3");
        assert_eq!(pieces(&gemma, &[264, 264]), [" ab", " ab"]);
    }

    #[test]
    fn gemma4_thought_channel_markers_are_shown_as_think_tags() {
        let tok = sentencepiece("gemma4");
        let id = |t: &str| tok.token_to_id(t).unwrap();
        let ids = [
            id("<|channel>"),
            264,
            id("<channel|>"),
            264,
            id("<end_of_turn>"),
        ];
        // (This vocabulary is llama-flavoured: the first space of the answer is dropped.)
        assert_eq!(pieces(&tok, &ids).concat(), "<think>ab</think> ab");
        // Other control tokens still show nothing.
        assert_eq!(pieces(&tok, &[id("<end_of_turn>")]), Vec::<String>::new());
    }

    #[test]
    fn punctuation_and_ascii_are_not_held_back() {
        let tok = byte_level();
        let mut detok = Detokenizer::new(&tok);
        // In this vocabulary byte b is token b.
        for c in "a,.!?)".bytes() {
            assert_eq!(
                detok.push(u32::from(c)).unwrap(),
                Some((c as char).to_string())
            );
        }
    }

    #[test]
    fn invalid_bytes_become_replacement_characters_as_in_decode() {
        let tok = sentencepiece("gemma3");
        // E2 82 is cut short by "a"; a lone continuation byte; an incomplete tail at the end.
        let ids = [3 + 0xE2, 3 + 0x82, 260, 3 + 0x80, 261, 3 + 0xF0];
        let streamed = pieces(&tok, &ids).concat();
        assert_eq!(streamed, "\u{FFFD}a\u{FFFD}b\u{FFFD}");
        assert_eq!(streamed, tok.decode(&ids).unwrap());
    }

    #[test]
    fn control_and_unknown_ids_produce_nothing() {
        let tok = byte_level();
        assert!(pieces(&tok, &[260, 261, 99_999]).is_empty());
    }

    /// The sentencepiece test vocabulary through a tokenizer.json whose decoder has an extra
    /// no-op step, so that it is not recognised and the window path decodes it.
    fn through_generic_decoder(tok: &TextTokenizer) -> (TextTokenizer, tempfile::TempDir) {
        let mut json: serde_json::Value = serde_json::from_str(&tok.to_json().unwrap()).unwrap();
        let noop = serde_json::json!({"type": "Strip", "content": " ", "start": 0, "stop": 0});
        json["decoder"]["decoders"]
            .as_array_mut()
            .unwrap()
            .push(noop);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokenizer.json");
        std::fs::write(&path, json.to_string()).unwrap();
        let header = crate::engine::tokenizer::tests::header(Vec::new());
        let generic = TextTokenizer::from_tokenizer_json(&path, &header).unwrap();
        assert_eq!(generic.pieces(), Pieces::Decoder);
        (generic, dir)
    }

    #[test]
    fn other_decoders_stream_through_a_window_with_the_same_text() {
        let (tok, _dir) = through_generic_decoder(&sentencepiece("llama"));
        let rocket: Vec<u32> = [0xF0, 0x9F, 0x9A, 0x80].iter().map(|b| 3 + b).collect();
        let ids = [&[264, 264][..], &rocket, &[262, 265]].concat();
        let streamed = pieces(&tok, &ids);
        assert_eq!(streamed, ["ab", " ab", "🚀", " a"]);
        assert_eq!(streamed.concat(), tok.decode(&ids).unwrap());
    }
}
