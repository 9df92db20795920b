//! Going on with an answer cut short (the chat's Ctrl+G and `/continue`): on the real models,
//! greedy, an answer cut at 8 tokens and continued for 16 more is the answer a 24-token
//! limit gives at once, and the continuation reads only the last token of the cut answer
//! (the rest of the prompt and the answer are in the cache). A conversation that does not end
//! with an answer is refused.

use crate::common;

use taper::chat::Message;
use taper::engine::{EngineCommand, EngineHandle};
use taper::protocol::{EngineEvent, GenerateRequest, Prompt, SamplingParams};
use taper::protocol::{StopReason, Usage};

fn engine(file: &str) -> EngineHandle {
    crate::real::engine_with(file, 1024)
}

/// Runs `prompt` greedily for at most `max_tokens`: the text streamed and the usage, or the
/// failure's message.
fn run(
    engine: &mut EngineHandle,
    turn_id: u64,
    prompt: Prompt,
    max_tokens: usize,
) -> Result<(String, Usage), String> {
    let sampling = SamplingParams {
        temperature: 0.0,
        repeat_penalty: 1.0,
        ..SamplingParams::default()
    };
    let request = GenerateRequest {
        prompt,
        ..GenerateRequest::chat(turn_id, Vec::new(), false, sampling, max_tokens)
    };
    engine
        .send(EngineCommand::Generate(request))
        .expect("the engine takes the request");
    let mut text = String::new();
    loop {
        match engine.recv_blocking() {
            Some(EngineEvent::Token { text: t, .. }) => text.push_str(&t),
            Some(EngineEvent::Finished { usage, .. }) => return Ok((text, usage)),
            Some(EngineEvent::Failed { message, .. }) => return Err(message),
            Some(EngineEvent::PromptProgress { .. } | EngineEvent::FirstToken { .. }) => {}
            other => panic!("unexpected: {other:?}"),
        }
    }
}

fn continues_as_one_answer(file: &str) {
    let question = vec![Message::user(
        "Describe the water cycle in three sentences.",
    )];
    let mut whole_engine = engine(file);
    let (whole, _) = run(
        &mut whole_engine,
        1,
        Prompt::Conversation(question.clone()),
        24,
    )
    .expect("the whole answer");

    let mut engine = engine(file);
    let (cut, first) =
        run(&mut engine, 1, Prompt::Conversation(question.clone()), 8).expect("the cut answer");
    assert_eq!(first.stop, Some(StopReason::MaxTokens));
    let mut messages = question.clone();
    messages.push(Message::assistant(cut.clone()));
    let (more, usage) =
        run(&mut engine, 2, Prompt::Continue(messages), 16).expect("the continuation");
    assert_eq!(format!("{cut}{more}"), whole, "{file}");
    // The prompt is the question's and the 8 answer tokens; all but the last answer token
    // (sampled, never fed) were in the cache.
    assert_eq!(usage.prompt_tokens, first.prompt_tokens + 8, "{file}");
    assert_eq!(usage.cached_tokens, first.prompt_tokens + 7, "{file}");
    eprintln!(
        "{file}: {cut:?} + {more:?}; read {} of {}",
        usage.prompt_tokens - usage.cached_tokens,
        usage.prompt_tokens
    );

    // Nothing to go on with.
    let refused = run(&mut engine, 3, Prompt::Continue(question), 8);
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.contains("does not end with an answer")),
        "{refused:?}"
    );
}

#[test]
fn a_continued_answer_is_the_answer_a_higher_limit_gives_and_reads_one_token() {
    continues_as_one_answer(common::SMOLLM2);
}

#[test]
fn a_sentencepiece_model_continues_without_losing_a_space() {
    continues_as_one_answer(common::GEMMA3);
}
