//! Models kept loaded: a switch back to one costs no load and finds its conversation in its
//! cache; with `keep_loaded = 1` every switch loads again.

use super::real::turn;
use crate::common;
use taper::chat::Message;
use taper::engine::{EngineCommand, EngineHandle};
use taper::protocol::{EngineEvent, LoadRequest, ModelInfo};

fn request(file: &str, keep_loaded: usize) -> LoadRequest {
    LoadRequest {
        model_path: common::real_model(file),
        tokenizer_json: None,
        context_size: 1024,
        cache_type: Default::default(),
        chat_template: None,
        keep_loaded,
        draft_model: None,
    }
}

fn load(engine: &mut EngineHandle, file: &str, keep_loaded: usize) -> ModelInfo {
    engine
        .send(EngineCommand::Load(request(file, keep_loaded)))
        .expect("the host runs");
    match engine.recv_blocking() {
        Some(EngineEvent::Loaded { info, .. }) => info,
        other => panic!("load failed: {other:?}"),
    }
}

#[test]
fn switching_back_to_a_model_kept_loaded_reads_only_the_new_message() {
    let mut engine = EngineHandle::spawn().expect("a host");
    let first = load(&mut engine, common::SMOLLM2, 2);
    assert!(!first.kept_loaded && first.resident.is_empty());
    let mut chat = vec![Message::user("Name a colour of the rainbow.")];
    let (answer, asked) = turn(&mut engine, 1, &chat, false, 12);
    chat.push(Message::assistant(answer));

    // Another model answers the same conversation, in its own template.
    let other = load(&mut engine, common::GEMMA3, 2);
    assert!(!other.kept_loaded);
    assert_eq!(other.resident, vec![common::real_model(common::SMOLLM2)]);
    chat.push(Message::user("And another one?"));
    let (answer, _) = turn(&mut engine, 2, &chat, false, 12);
    chat.push(Message::assistant(answer));

    // Back: no load, and its slot still holds the first question and answer.
    let back = load(&mut engine, common::SMOLLM2, 2);
    assert!(back.kept_loaded, "{back:?}");
    assert_eq!(back.resident, vec![common::real_model(common::GEMMA3)]);
    assert!(
        back.load_s < first.load_s,
        "a switch is not a load: {back:?}"
    );
    chat.push(Message::user("One more, please."));
    let (_, usage) = turn(&mut engine, 3, &chat, false, 12);
    eprintln!(
        "switch {:.4} s (load {:.3} s); prompt {} tokens, {} cached",
        back.load_s, first.load_s, usage.prompt_tokens, usage.cached_tokens
    );
    assert!(
        usage.cached_tokens >= asked.prompt_tokens,
        "the first turn's {} prompt tokens are cached: {usage:?}",
        asked.prompt_tokens
    );
}

#[test]
fn with_one_model_kept_every_switch_loads() {
    let mut engine = EngineHandle::spawn().expect("a host");
    load(&mut engine, common::SMOLLM2, 1);
    let other = load(&mut engine, common::GEMMA3, 1);
    assert!(other.resident.is_empty());
    let back = load(&mut engine, common::SMOLLM2, 1);
    assert!(!back.kept_loaded && back.resident.is_empty(), "{back:?}");
}
