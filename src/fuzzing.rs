//! Entry points for fuzzing everything that reads untrusted bytes, shared by the cargo-fuzz
//! targets in `fuzz/` and by `tests/formats/fuzz_regressions.rs`, which replays every saved crash
//! input through the same function on stable Rust.
//!
//! Each function takes arbitrary bytes, must return normally for every input (an `Err` from
//! the code under test is a correct answer to bad input), and panics only when an invariant
//! of that code is broken. Inputs with structure (a vocabulary and a text, a template and a
//! conversation) are cut into sections at `0xFF` bytes, which never occur in UTF-8, so a
//! seed can be written by hand and every section still reaches the parser as text.
//!
//! To fuzz another reader: add a `pub fn` here, a file `fuzz/fuzz_targets/<name>.rs` that
//! calls it, a `[[bin]]` entry in `fuzz/Cargo.toml`, the name in `scripts/fuzz`, and a line
//! in `tests/formats/fuzz_regressions.rs` (see docs/fuzzing.md).

use crate::chat::{Message, Role};
use crate::config::Config;
use crate::engine::detokenizer::Detokenizer;
use crate::engine::gguf::writer::GgufWriter;
use crate::engine::gguf::{GgufHeader, MetaValue};
use crate::engine::template::{ChatTemplate, TemplateSource};
use crate::engine::tokenizer::TextTokenizer;
use std::path::Path;

/// Separates the sections of a structured input.
pub const SECTION: u8 = 0xFF;
/// Separates the items of a list inside a section (also never in UTF-8).
pub const ITEM: u8 = 0xFE;

/// A whole GGUF file: the header reader must accept it or say why, and what it accepts
/// must be consistent (every tensor inside the file, sizes that add up).
pub fn gguf_header(data: &[u8]) {
    let Ok(header) = GgufHeader::parse_bytes(data) else {
        return;
    };
    for t in &header.tensors {
        assert!(
            t.offset
                .checked_add(t.size_bytes)
                .map(|end| end <= header.file_size)
                == Some(true),
            "tensor {:?} was accepted outside the file",
            t.name
        );
    }
    // The summaries the model list shows must not panic on whatever was accepted.
    let _ = header.quantization();
    let _ = header.parameter_count();
    let _ = header.arch_key("block_count");
}

/// A vocabulary written into a GGUF file (through the writer and back through the reader),
/// rebuilt into a tokenizer, then fuzzed text encoded and fuzzed ids decoded.
///
/// Sections: `[settings, tokens, merges, token types, text, ids]`. Settings bytes pick the
/// tokenizer model, architecture, pre-tokenizer and special ids; tokens and merges are
/// lists of [`ITEM`]-separated strings (no merges section, no merges key); each token-type
/// byte is a llama.cpp token type, and its value also gives the token's score; ids are
/// little-endian u16s.
pub fn tokenizer(data: &[u8]) {
    let sections: Vec<&[u8]> = data.split(|&b| b == SECTION).collect();
    let section = |i: usize| sections.get(i).copied();
    let settings = section(0).unwrap_or_default();
    let setting = |i: usize| settings.get(i).copied().unwrap_or(0);
    const MODELS: [&str; 4] = ["gpt2", "llama", "gemma4", "bert"];
    const ARCHES: [&str; 5] = ["llama", "gemma3", "phi3", "qwen2", "gemma"];
    const PRES: [&str; 5] = ["default", "llama-bpe", "qwen2", "tekken", "gpt-4o"];
    let mut w = GgufWriter::new();
    let pick = |list: &[&str], byte: u8| list[byte as usize % list.len()].to_string();
    w.set(
        "tokenizer.ggml.model",
        MetaValue::String(pick(&MODELS, setting(0))),
    );
    w.set(
        "general.architecture",
        MetaValue::String(pick(&ARCHES, setting(1))),
    );
    w.set(
        "tokenizer.ggml.pre",
        MetaValue::String(pick(&PRES, setting(2))),
    );
    for (i, name) in ["bos", "eos", "unknown", "padding"].iter().enumerate() {
        // 0xFF means "not set"; other values may well lie outside the vocabulary.
        if let Some(&id) = settings.get(3 + i).filter(|&&id| id != 0xFF) {
            w.set(
                &format!("tokenizer.ggml.{name}_token_id"),
                MetaValue::U32(id.into()),
            );
        }
    }
    if let Some(&flag) = settings.get(7) {
        w.set(
            "tokenizer.ggml.add_bos_token",
            MetaValue::Bool(flag & 1 == 1),
        );
    }
    let strings = |bytes: &[u8]| {
        let items = bytes.split(|&b| b == ITEM);
        MetaValue::Array(
            items
                .map(|item| MetaValue::String(String::from_utf8_lossy(item).into_owned()))
                .collect(),
        )
    };
    if let Some(tokens) = section(1) {
        w.set("tokenizer.ggml.tokens", strings(tokens));
    }
    if let Some(merges) = section(2).filter(|m| !m.is_empty()) {
        w.set("tokenizer.ggml.merges", strings(merges));
    }
    if let Some(types) = section(3).filter(|t| !t.is_empty()) {
        let typed = types.iter().map(|&t| MetaValue::I32(i32::from(t % 8)));
        w.set(
            "tokenizer.ggml.token_type",
            MetaValue::Array(typed.collect()),
        );
        let scores = types.iter().map(|&t| MetaValue::F32(-f32::from(t)));
        w.set("tokenizer.ggml.scores", MetaValue::Array(scores.collect()));
    }
    let mut file = Vec::new();
    if w.write(&mut file, |_, _| Ok(())).is_err() {
        return;
    }
    let header = GgufHeader::parse_bytes(&file).expect("the reader reads what the writer wrote");
    let Ok(tok) = TextTokenizer::from_gguf(&header) else {
        return;
    };
    let text = String::from_utf8_lossy(section(4).unwrap_or_default());
    if let Ok(ids) = tok.encode(&text) {
        for &id in &ids {
            assert!(tok.id_to_token(id).is_some(), "encode gave unknown id {id}");
        }
        check_decoding(&tok, &ids);
    }
    let ids: Vec<u32> = section(5)
        .unwrap_or_default()
        .chunks(2)
        .map(|c| u32::from(c[0]) | u32::from(c.get(1).copied().unwrap_or(0)) << 8)
        .collect();
    check_decoding(&tok, &ids);
}

/// Decoding must not fail on any ids, and the streaming detokenizer must produce exactly
/// what decoding the whole list does (the engine relies on both agreeing).
fn check_decoding(tok: &TextTokenizer, ids: &[u32]) {
    let Ok(whole) = tok.decode(ids) else {
        return;
    };
    let mut detok = Detokenizer::new(tok);
    let mut streamed = String::new();
    for &id in ids {
        if let Ok(Some(piece)) = detok.push(id) {
            streamed.push_str(&piece);
        }
    }
    if let Ok(Some(piece)) = detok.finish() {
        streamed.push_str(&piece);
    }
    if tok.pieces() != crate::engine::tokenizer::Pieces::Decoder {
        assert_eq!(
            streamed, whole,
            "streamed and whole decoding differ for {ids:?}"
        );
    }
}

/// A hostile chat template rendering a fuzzed conversation.
///
/// Sections: `[template source, message, message, ...]`; a message's first byte picks its
/// role (and, for the last message, whether to add the generation prompt), the rest is its
/// content. Rendering must end (fuel), stay small (output cap) and never panic.
pub fn chat_template(data: &[u8]) {
    let mut sections = data.split(|&b| b == SECTION);
    let source = String::from_utf8_lossy(sections.next().unwrap_or_default());
    let Ok(template) = ChatTemplate::from_source(&source, TemplateSource::Override) else {
        return;
    };
    let mut add_generation_prompt = false;
    let messages: Vec<Message> = sections
        .map(|m| {
            let first = m.first().copied().unwrap_or(0);
            add_generation_prompt = first & 0x80 != 0;
            let role = [Role::System, Role::User, Role::Assistant][usize::from(first % 3)];
            Message::new(
                role,
                String::from_utf8_lossy(m.get(1..).unwrap_or_default()),
            )
        })
        .collect();
    let _ = template.render(&messages, add_generation_prompt, "<s>", "</s>");
}

/// `config.toml` text: parsed, validated, and every derived setting read.
pub fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(config) = Config::parse(&text, Path::new("fuzz/config.toml")) else {
        return;
    };
    let _ = config.sampling();
    let _ = (config.context_size(), config.max_tokens());
    for m in &config.models {
        assert!(config.user_model(&m.name).is_some());
    }
}

/// A saved session file through the session reader: it must accept the bytes or say why, and
/// what it accepts must survive being written back, read again, exported and listed.
pub fn session_file(data: &[u8]) {
    let Ok(session) = crate::sessions::format::parse_session(data) else {
        return;
    };
    let again = crate::sessions::format::parse_session(&session.to_bytes())
        .expect("a session the reader accepted reads back after saving");
    assert_eq!(
        again.to_bytes(),
        session.to_bytes(),
        "saving and reading back changed the session"
    );
    let _ = crate::sessions::export::to_markdown(&session);
    let _ = (session.display_title(), session.models());
}

/// A schema, grammar or regex as a request would bring it, compiled against a byte-level
/// vocabulary and then walked: the compiler must accept it or say why (never panic, never
/// hang: llguidance's own limits bound its time and memory), and an accepted grammar's mask
/// must hold its invariants for a few steps (some token allowed, the chosen one accepted).
///
/// Sections: `[kind, text]`. The kind byte picks a JSON Schema (the text parsed as JSON;
/// text that is not JSON is a correct refusal upstream, so it returns), a Lark grammar, a
/// regular expression or any JSON object.
pub fn constraint(data: &[u8]) {
    use crate::engine::grammar::Grammars;
    use crate::protocol::Constraint;
    use std::sync::OnceLock;

    static GRAMMARS: OnceLock<Option<Grammars>> = OnceLock::new();
    let Some(grammars) = GRAMMARS.get_or_init(|| Grammars::new(&byte_level_vocabulary()).ok())
    else {
        panic!("the byte-level test vocabulary must be usable for grammars");
    };
    let mut sections = data.splitn(2, |&b| b == SECTION);
    let kind = sections
        .next()
        .and_then(|k| k.first())
        .copied()
        .unwrap_or(0);
    let text = String::from_utf8_lossy(sections.next().unwrap_or_default()).into_owned();
    let constraint = match kind % 4 {
        0 => match serde_json::from_str(&text) {
            Ok(schema) => Constraint::JsonSchema(schema),
            Err(_) => return,
        },
        1 => Constraint::Lark(text),
        2 => Constraint::Regex(text),
        _ => Constraint::JsonObject,
    };
    let Ok(mut grammar) = grammars.start(&constraint) else {
        return;
    };
    let vocab = 257;
    for _ in 0..16 {
        let mut logits = vec![0.0f32; vocab];
        if grammar.mask(&mut logits).is_err() {
            return;
        }
        // The lowest allowed id: a deterministic walk through the grammar.
        let Some(next) = logits.iter().position(|l| l.is_finite()) else {
            return; // Nothing allowed: the grammar cannot go on (a correct dead end).
        };
        if next == 256 || grammar.accept(next as u32).is_err() {
            return; // The end of the turn, or an error the caller turns into a sentence.
        }
    }
}

/// The 256 bytes as tokens (byte-level BPE), and an end-of-turn token.
fn byte_level_vocabulary() -> TextTokenizer {
    let mut tokens: Vec<MetaValue> = (0..=255u8)
        .map(|b| {
            let ch = crate::engine::tokenizer::byte_to_char(b);
            MetaValue::String(ch.to_string())
        })
        .collect();
    tokens.push(MetaValue::String("<|im_end|>".into()));
    let types = (0..257).map(|i| MetaValue::I32(if i == 256 { 3 } else { 1 }));
    let mut w = GgufWriter::new();
    w.set("tokenizer.ggml.model", MetaValue::String("gpt2".into()));
    w.set("tokenizer.ggml.tokens", MetaValue::Array(tokens));
    w.set(
        "tokenizer.ggml.token_type",
        MetaValue::Array(types.collect()),
    );
    w.set("tokenizer.ggml.merges", MetaValue::Array(Vec::new()));
    w.set("tokenizer.ggml.eos_token_id", MetaValue::U32(256));
    let mut file = Vec::new();
    w.write(&mut file, |_, _| Ok(()))
        .expect("a vocabulary in memory writes");
    let header = GgufHeader::parse_bytes(&file).expect("the reader reads what the writer wrote");
    TextTokenizer::from_gguf(&header).expect("a byte-level vocabulary builds")
}
