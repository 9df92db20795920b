//! The engine end to end on the two real test models: answers, raw continuation, cache reuse
//! across turns, and context trimming.

use crate::common;

use taper::chat::Message;
use taper::engine::{EngineCommand, EngineHandle};
use taper::protocol::SamplingParams;
use taper::protocol::{EngineEvent, GenerateRequest, LoadRequest};
use taper::protocol::{StopReason, Usage};

fn greedy() -> SamplingParams {
    SamplingParams {
        temperature: 0.0,
        repeat_penalty: 1.0,
        ..SamplingParams::default()
    }
}

pub(crate) fn engine_with(file: &str, context_size: usize) -> EngineHandle {
    engine_drafting(file, context_size, None)
}

/// [`engine_with`], the model loaded with `draft_model` to draft with.
pub(crate) fn engine_drafting(
    file: &str,
    context_size: usize,
    draft_model: Option<std::path::PathBuf>,
) -> EngineHandle {
    let mut engine = EngineHandle::spawn().unwrap();
    engine
        .send(EngineCommand::Load(LoadRequest {
            model_path: common::real_model(file),
            tokenizer_json: None,
            context_size,
            cache_type: Default::default(),
            chat_template: None,
            keep_loaded: 1,
            draft_model,
        }))
        .unwrap();
    match engine.recv_blocking() {
        Some(EngineEvent::Loaded { .. }) => engine,
        other => panic!("load failed: {other:?}"),
    }
}

pub(crate) fn turn(
    engine: &mut EngineHandle,
    turn_id: u64,
    messages: &[Message],
    raw: bool,
    max_tokens: usize,
) -> (String, Usage) {
    engine
        .send(EngineCommand::Generate(GenerateRequest::chat(
            turn_id,
            messages.to_vec(),
            raw,
            greedy(),
            max_tokens,
        )))
        .unwrap();
    let mut text = String::new();
    loop {
        match engine.recv_blocking() {
            Some(EngineEvent::Token {
                text: t,
                turn_id: id,
            }) => {
                assert_eq!(id, turn_id);
                text.push_str(&t);
            }
            Some(EngineEvent::Finished { usage, .. }) => return (text, usage),
            Some(EngineEvent::PromptProgress { .. } | EngineEvent::FirstToken { .. }) => {}
            other => panic!("generation failed: {other:?}"),
        }
    }
}

#[test]
fn smollm2_knows_the_capital_of_france() {
    let mut engine = engine_with(common::SMOLLM2, 2048);
    let q = [Message::user(
        "What is the capital of France? Answer in one sentence.",
    )];
    let (answer, usage) = turn(&mut engine, 1, &q, false, 48);
    assert!(answer.contains("Paris"), "{answer:?}");
    assert!(
        usage.generated_tokens > 0 && usage.prompt_tokens > 10,
        "{usage:?}"
    );
}

#[test]
fn gemma3_continues_raw_text_fluently() {
    let mut engine = engine_with(common::GEMMA3, 1024);
    let (text, usage) = turn(
        &mut engine,
        1,
        &[Message::user("The capital of France is")],
        true,
        24,
    );
    eprintln!("gemma3: {text:?}");
    let words: Vec<&str> = text.split_whitespace().collect();
    assert!(words.len() >= 5, "{text:?}");
    let ascii_letters = text
        .chars()
        .filter(|c| c.is_ascii_alphabetic() || *c == ' ')
        .count();
    assert!(
        ascii_letters * 10 >= text.chars().count() * 8,
        "not English prose: {text:?}"
    );
    assert!(
        ["Paris", "France", "French"]
            .iter()
            .any(|w| text.contains(w)),
        "not about France: {text:?}"
    );
    assert_eq!(usage.cached_tokens, 0);
}

#[test]
fn a_second_turn_reuses_the_cache_and_matches_a_fresh_prefill() {
    let q1 = Message::user("Name three colours.");
    let mut engine = engine_with(common::SMOLLM2, 2048);
    let (a1, first) = turn(&mut engine, 1, std::slice::from_ref(&q1), false, 24);
    assert_eq!(first.cached_tokens, 0);
    let conversation = [
        q1,
        Message::assistant(a1),
        Message::user("Now name three animals."),
    ];
    let (reused_answer, second) = turn(&mut engine, 2, &conversation, false, 32);
    assert!(second.cached_tokens > 0, "{second:?}");
    assert!(second.cached_tokens < second.prompt_tokens);

    let mut fresh = engine_with(common::SMOLLM2, 2048);
    let (fresh_answer, fresh_usage) = turn(&mut fresh, 1, &conversation, false, 32);
    assert_eq!(fresh_usage.cached_tokens, 0);
    assert_eq!(fresh_usage.prompt_tokens, second.prompt_tokens);
    assert_eq!(reused_answer, fresh_answer);
}

#[test]
fn a_conversation_longer_than_the_context_drops_its_oldest_turns() {
    let mut engine = engine_with(common::SMOLLM2, 256);
    let long = "Tell me about the history of bread, please. ".repeat(8);
    let mut conversation = vec![Message::system("You are brief.")];
    for _ in 0..4 {
        conversation.push(Message::user(long.clone()));
        conversation.push(Message::assistant("Bread is old.".to_string()));
    }
    conversation.push(Message::user("Thanks!"));
    let (_, usage) = turn(&mut engine, 1, &conversation, false, 8);
    assert!(usage.dropped_messages >= 2, "{usage:?}");
    assert!(usage.prompt_tokens + 8 <= 256, "{usage:?}");
}

#[test]
fn a_prompt_longer_than_the_context_is_a_clear_error() {
    let mut engine = engine_with(common::SMOLLM2, 128);
    engine
        .send(EngineCommand::Generate(GenerateRequest::chat(
            7,
            vec![Message::user("word ".repeat(400))],
            false,
            greedy(),
            8,
        )))
        .unwrap();
    match engine.recv_blocking() {
        Some(EngineEvent::Failed { turn_id, message }) => {
            assert_eq!(turn_id, Some(7));
            assert!(message.contains("fit in the context"), "{message}");
        }
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn cancel_stops_within_a_token() {
    let mut engine = engine_with(common::SMOLLM2, 1024);
    engine
        .send(EngineCommand::Generate(GenerateRequest::chat(
            3,
            vec![Message::user("Write a long story about a dragon.")],
            false,
            greedy(),
            400,
        )))
        .unwrap();
    // Tokens already produced when the cancel was sent: received, or queued in the channel.
    let mut produced_at_cancel = None;
    let mut received = 0;
    loop {
        match engine.recv_blocking() {
            Some(EngineEvent::Token { .. }) => {
                received += 1;
                if produced_at_cancel.is_none() {
                    engine.cancel(3);
                    produced_at_cancel = Some(received + engine.events.len());
                }
            }
            Some(EngineEvent::Finished { usage, .. }) => {
                assert_eq!(usage.stop, Some(StopReason::Cancelled));
                let at_cancel = produced_at_cancel.expect("a token came before the end");
                assert!(
                    usage.generated_tokens <= at_cancel + 1,
                    "{} tokens generated, {at_cancel} when cancelled",
                    usage.generated_tokens
                );
                break;
            }
            Some(EngineEvent::PromptProgress { .. } | EngineEvent::FirstToken { .. }) => {}
            other => panic!("{other:?}"),
        }
    }
    // The engine still works afterwards.
    let (answer, _) = turn(&mut engine, 4, &[Message::user("Say hi.")], false, 8);
    assert!(!answer.is_empty());
}

#[test]
fn the_chat_host_answers_exactly_as_the_in_process_driver() {
    // The chat's one slot (forward_batch on a cache of its own) and the driver that bench and
    // perplexity use (the model's own cache) give the same greedy ids, so the same text.
    use taper::engine::generation::{Generator, TurnOptions, Unobserved};
    use taper::engine::loader::{self, OpenOptions};
    use taper::engine::model::CacheOptions;
    use taper::engine::prefix_cache::PrefixCache;

    let messages = vec![Message::user("Name three colours of the rainbow.")];
    let mut engine = engine_with(common::SMOLLM2, 512);
    let (hosted, usage) = turn(&mut engine, 1, &messages, false, 24);
    drop(engine);

    let path = common::real_model(common::SMOLLM2);
    let loaded = loader::open(&path, &OpenOptions::new(CacheOptions::new(512))).unwrap();
    let (mut model, text) = loaded.into_text().unwrap();
    let prompt = text
        .chat_ids(&messages, &Default::default())
        .expect("the prompt renders");
    let options = TurnOptions {
        sampling: greedy(),
        max_tokens: 24,
        stop_at_end_of_turn: true,
    };
    let mut cache = PrefixCache::default();
    let mut generator = Generator {
        model: model.as_mut(),
        cache: &mut cache,
        tokenizer: Some(&text.tokenizer),
    };
    let alone = generator
        .run(
            &prompt,
            &options,
            std::time::Instant::now(),
            &mut Unobserved,
        )
        .unwrap();
    assert_eq!(hosted, alone.text);
    assert_eq!(usage.generated_tokens, alone.usage.generated_tokens);
    assert_eq!(usage.prompt_tokens, prompt.len());
}

#[test]
fn a_turn_cancelled_before_it_starts_ends_cancelled_and_the_next_runs() {
    let mut engine = engine_with(common::SMOLLM2, 512);
    let story = vec![Message::user("Write a long story about a dragon.")];
    // The cancel is set right after the request is sent: before the host reads the prompt,
    // or at worst after its first pass, never later than a token.
    engine
        .send(EngineCommand::Generate(GenerateRequest::chat(
            10,
            story,
            false,
            greedy(),
            64,
        )))
        .unwrap();
    engine.cancel(10);
    let usage = loop {
        match engine.recv_blocking() {
            Some(EngineEvent::Finished {
                turn_id: 10, usage, ..
            }) => break usage,
            Some(
                EngineEvent::Token { turn_id: 10, .. }
                | EngineEvent::PromptProgress { .. }
                | EngineEvent::FirstToken { .. },
            ) => {}
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(usage.stop, Some(StopReason::Cancelled));
    assert!(usage.generated_tokens <= 1, "{usage:?}");
    let (answer, usage) = turn(&mut engine, 11, &[Message::user("Say hi.")], false, 8);
    assert!(!answer.is_empty(), "the turn after a cancelled one answers");
    assert_ne!(usage.stop, Some(StopReason::Cancelled));
}
