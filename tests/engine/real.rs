//! The engine end to end on the two real test models: answers, raw continuation, cache reuse
//! across turns, and context trimming.

use crate::common;

use taper::chat::Message;
use taper::engine::sampler::SamplingParams;
use taper::engine::{EngineCommand, EngineEvent, EngineHandle, GenerateRequest, LoadRequest};
use taper::stats::{StopReason, Usage};

fn greedy() -> SamplingParams {
    SamplingParams {
        temperature: 0.0,
        repeat_penalty: 1.0,
        ..SamplingParams::default()
    }
}

fn engine_with(file: &str, context_size: usize) -> EngineHandle {
    let mut engine = EngineHandle::spawn().unwrap();
    engine
        .send(EngineCommand::Load(LoadRequest {
            model_path: common::real_model(file),
            tokenizer_json: None,
            context_size,
            cache_type: Default::default(),
            chat_template: None,
        }))
        .unwrap();
    match engine.recv_blocking() {
        Some(EngineEvent::Loaded { .. }) => engine,
        other => panic!("load failed: {other:?}"),
    }
}

fn turn(
    engine: &mut EngineHandle,
    turn_id: u64,
    messages: &[Message],
    raw: bool,
    max_tokens: usize,
) -> (String, Usage) {
    engine
        .send(EngineCommand::Generate(GenerateRequest {
            turn_id,
            messages: messages.to_vec(),
            raw,
            sampling: greedy(),
            max_tokens,
        }))
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
            Some(EngineEvent::PromptProgress { .. }) => {}
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
        .send(EngineCommand::Generate(GenerateRequest {
            turn_id: 7,
            messages: vec![Message::user("word ".repeat(400))],
            raw: false,
            sampling: greedy(),
            max_tokens: 8,
        }))
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
        .send(EngineCommand::Generate(GenerateRequest {
            turn_id: 3,
            messages: vec![Message::user("Write a long story about a dragon.")],
            raw: false,
            sampling: greedy(),
            max_tokens: 400,
        }))
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
            Some(EngineEvent::PromptProgress { .. }) => {}
            other => panic!("{other:?}"),
        }
    }
    // The engine still works afterwards.
    let (answer, _) = turn(&mut engine, 4, &[Message::user("Say hi.")], false, 8);
    assert!(!answer.is_empty());
}
