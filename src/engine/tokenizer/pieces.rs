//! How token ids become bytes: GPT-2's byte alphabet, sentencepiece's `▁` and `<0xNN>`
//! tokens, and recognising those two decoders in a tokenizer.json.
//!
//! Decoding through bytes (rather than the tokenizers crate's decoders) makes a full decode
//! and a streamed one agree byte for byte: both are `from_utf8_lossy` of the same bytes.

use super::vocabulary::Pipeline;

/// How token ids become text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Pieces {
    /// Byte-level BPE: each token spells bytes in GPT-2's byte alphabet.
    ByteLevel,
    /// `▁` is a space and `<0xNN>` a raw byte; some flavours drop one space at the very start.
    SentencePiece { strip_first_space: bool },
    /// Anything else (a tokenizer.json with another decoder): the tokenizer's own decoder.
    Decoder,
}

impl Pieces {
    /// Appends the bytes `token` (as the vocabulary spells it) stands for.
    pub(crate) fn append(self, token: &str, out: &mut Vec<u8>) {
        match self {
            Pieces::ByteLevel => {
                // As the ByteLevel decoder does: a token not spelled in the byte alphabet (an
                // added token, say) stands for its own UTF-8.
                let start = out.len();
                for c in token.chars() {
                    match char_to_byte(c) {
                        Some(b) => out.push(b),
                        None => {
                            out.truncate(start);
                            out.extend_from_slice(token.as_bytes());
                            break;
                        }
                    }
                }
            }
            Pieces::SentencePiece { .. } | Pieces::Decoder => match sentencepiece_byte(token) {
                Some(b) => out.push(b),
                None => out.extend_from_slice(token.replace('\u{2581}', " ").as_bytes()),
            },
        }
    }
}

/// `<0xNN>`, the form the ByteFallback decoder reads as one raw byte.
fn sentencepiece_byte(token: &str) -> Option<u8> {
    let hex = token.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

/// GPT-2's byte alphabet: printable Latin-1 bytes stand for themselves, the other 68 bytes are
/// moved, in order, to U+0100..U+0143 so that every token is printable text.
fn is_printable_byte(b: u8) -> bool {
    matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF)
}

pub(crate) fn byte_to_char(b: u8) -> char {
    if is_printable_byte(b) {
        return char::from(b);
    }
    let n = match b {
        0..=0x20 => u32::from(b),
        0x7F..=0xA0 => 33 + u32::from(b - 0x7F),
        _ => 67, // 0xAD, the only other one
    };
    char::from_u32(256 + n).unwrap_or(char::REPLACEMENT_CHARACTER)
}

pub(crate) fn char_to_byte(c: char) -> Option<u8> {
    let u = u32::from(c);
    match u {
        0..=0xFF if is_printable_byte(u as u8) => Some(u as u8),
        256..=288 => Some((u - 256) as u8),
        289..=322 => Some((u - 289 + 0x7F) as u8),
        323 => Some(0xAD),
        _ => None,
    }
}

/// Byte-exact decoding for a tokenizer.json whose decoder is one of the two common ones
/// (byte-level; sentencepiece's Replace + ByteFallback + Fuse [+ Strip one leading space]).
pub(crate) fn recognise_decoder(tokenizer: &Pipeline) -> Pieces {
    let json = tokenizer
        .get_decoder()
        .and_then(|d| serde_json::to_value(d).ok())
        .unwrap_or_default();
    let kind = |v: &serde_json::Value| v["type"].as_str().unwrap_or("").to_string();
    if kind(&json) == "ByteLevel" {
        return Pieces::ByteLevel;
    }
    let steps = match json["decoders"].as_array() {
        Some(steps) if kind(&json) == "Sequence" => steps.as_slice(),
        _ => &[],
    };
    let kinds: Vec<String> = steps.iter().map(kind).collect();
    let replaces_mark = steps
        .first()
        .is_some_and(|s| s["pattern"]["String"] == "\u{2581}" && s["content"] == " ");
    let strips_one_space = steps
        .get(3)
        .is_some_and(|s| s["content"] == " " && s["start"] == 1 && s["stop"] == 0);
    match kinds.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["Replace", "ByteFallback", "Fuse"] if replaces_mark => Pieces::SentencePiece {
            strip_first_space: false,
        },
        ["Replace", "ByteFallback", "Fuse", "Strip"] if replaces_mark && strips_one_space => {
            Pieces::SentencePiece {
                strip_first_space: true,
            }
        }
        _ => Pieces::Decoder,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokenizers::decoders::metaspace::Metaspace;
    use tokenizers::models::bpe::BPE;
    use tokenizers::pre_tokenizers::byte_level::ByteLevel;

    #[test]
    fn byte_alphabet_is_gpt2s() {
        let alphabet = ByteLevel::alphabet();
        for b in 0..=255u8 {
            let c = byte_to_char(b);
            assert!(alphabet.contains(&c), "{b:#x} -> {c:?}");
            assert_eq!(char_to_byte(c), Some(b));
        }
        assert_eq!(byte_to_char(b' '), '\u{120}');
        assert_eq!(char_to_byte('\u{144}'), None);
    }

    #[test]
    fn tokens_become_the_bytes_they_stand_for() {
        let bytes = |pieces: Pieces, token: &str| {
            let mut out = Vec::new();
            pieces.append(token, &mut out);
            out
        };
        assert_eq!(bytes(Pieces::ByteLevel, "\u{120}hi\u{10a}"), b" hi\n");
        assert_eq!(bytes(Pieces::ByteLevel, "<think>"), b"<think>");
        // Latin-1 letters are in the alphabet and stand for one byte each, while a token with
        // other characters stands for its own UTF-8.
        assert_eq!(bytes(Pieces::ByteLevel, "d\u{e9}"), [b'd', 0xE9]);
        assert_eq!(bytes(Pieces::ByteLevel, "日本"), "日本".as_bytes());
        let spm = Pieces::SentencePiece {
            strip_first_space: false,
        };
        assert_eq!(bytes(spm, "\u{2581}\u{2581}word"), b"  word");
        assert_eq!(bytes(spm, "<0xE2>"), [0xE2]);
        assert_eq!(bytes(spm, "<0xE2"), b"<0xE2");
    }

    #[test]
    fn only_the_common_decoders_are_decoded_through_bytes() {
        let mut tokenizer = Pipeline::new(BPE::default().into());
        tokenizer.with_decoder(Some(ByteLevel::default()));
        assert_eq!(recognise_decoder(&tokenizer), Pieces::ByteLevel);
        tokenizer.with_decoder(Some(Metaspace::default()));
        assert_eq!(recognise_decoder(&tokenizer), Pieces::Decoder);
    }
}
