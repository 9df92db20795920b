//! One behaviour whichever backend answers: the same request with tools, through the engine
//! host, gives the same tool calls from the local model as from `taper serve` on the same file
//! as a remote (its streamed `tool_calls` read back into calls), and `response_format` passes
//! through to the remote too.

use crate::common;
use crate::serve_support::Server;
use serde_json::json;
use taper::chat::{Message, ToolCall};
use taper::config::RemoteConfig;
use taper::engine::{EngineCommand, EngineHandle};
use taper::protocol::{
    Constraint, EngineEvent, GenerateRequest, LoadRequest, SamplingParams, Tool, ToolChoice,
    ToolSet,
};
use taper::remote::RemoteTarget;

const MODEL: &str = "SmolLM2-135M-Instruct.Q4_1";

fn tools(choice: ToolChoice) -> ToolSet {
    let number = json!({"type": "integer"});
    ToolSet {
        tools: vec![
            Tool {
                name: "add".into(),
                description: Some("The sum of two whole numbers".into()),
                parameters: json!({
                    "type": "object",
                    "properties": {"a": number, "b": number},
                    "required": ["a", "b"],
                }),
            },
            Tool {
                name: "get_weather".into(),
                description: None,
                parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
            },
        ],
        choice,
        parallel: false,
    }
}

fn request(
    turn_id: u64,
    tools: Option<ToolSet>,
    constraint: Option<Constraint>,
) -> GenerateRequest {
    let sampling = SamplingParams {
        temperature: 0.0,
        repeat_penalty: 1.0,
        ..SamplingParams::default()
    };
    let ask = Message::user("What is 17 plus 25?");
    GenerateRequest {
        tools,
        constraint,
        ..GenerateRequest::chat(turn_id, vec![ask], false, sampling, 60)
    }
}

fn ready(engine: &mut EngineHandle) {
    loop {
        match engine.recv_blocking().expect("engine alive") {
            EngineEvent::Loaded { .. } => return,
            EngineEvent::Failed { message, .. } => panic!("load failed: {message}"),
            _ => {}
        }
    }
}

/// A turn's text and calls.
fn run(engine: &mut EngineHandle, request: GenerateRequest) -> (String, Vec<ToolCall>) {
    engine.send(EngineCommand::Generate(request)).unwrap();
    let mut text = String::new();
    loop {
        match engine.recv_blocking().expect("engine alive") {
            EngineEvent::Token { text: t, .. } => text.push_str(&t),
            EngineEvent::Finished { tool_calls, .. } => return (text, tool_calls),
            EngineEvent::Failed { message, .. } => panic!("turn failed: {message}"),
            _ => {}
        }
    }
}

fn name_and_arguments(calls: &[ToolCall]) -> Vec<(String, serde_json::Value)> {
    calls
        .iter()
        .map(|c| {
            let arguments = serde_json::from_str(&c.arguments).expect("arguments are JSON");
            (c.name.clone(), arguments)
        })
        .collect()
}

#[test]
fn a_local_model_and_a_remote_one_call_the_same_tools_the_same_way() {
    let server = Server::start(&["--ctx-size", "1024"]);
    let mut engine = EngineHandle::spawn().unwrap();
    engine
        .send(EngineCommand::Load(LoadRequest {
            model_path: common::real_model(common::SMOLLM2),
            tokenizer_json: None,
            context_size: 1024,
            cache_type: Default::default(),
            chat_template: None,
            keep_loaded: 1,
            draft_model: None,
        }))
        .unwrap();
    ready(&mut engine);
    let named = ToolChoice::Named("add".into());
    let (_, local_named) = run(&mut engine, request(1, Some(tools(named.clone())), None));
    let (_, local_required) = run(
        &mut engine,
        request(2, Some(tools(ToolChoice::Required)), None),
    );
    let (_, local_none) = run(&mut engine, request(3, Some(tools(ToolChoice::None)), None));

    let target = RemoteTarget {
        remote: RemoteConfig::quick("ts", &format!("{}/v1", server.url)).resolve(),
        model: MODEL.into(),
    };
    engine.send(EngineCommand::Connect(target)).unwrap();
    ready(&mut engine);
    let (_, remote_named) = run(&mut engine, request(4, Some(tools(named)), None));
    let (_, remote_required) = run(
        &mut engine,
        request(5, Some(tools(ToolChoice::Required)), None),
    );

    assert_eq!(local_named.len(), 1, "{local_named:?}");
    assert_eq!(local_named[0].name, "add");
    let arguments: serde_json::Value = serde_json::from_str(&local_named[0].arguments).unwrap();
    assert!(
        arguments["a"].is_i64() && arguments["b"].is_i64(),
        "{arguments}"
    );
    assert!(!local_required.is_empty());
    assert!(local_none.is_empty(), "tool_choice none calls nothing");
    assert_eq!(
        name_and_arguments(&remote_named),
        name_and_arguments(&local_named)
    );
    assert_eq!(
        name_and_arguments(&remote_required),
        name_and_arguments(&local_required)
    );
    assert!(remote_named.iter().all(|c| c.id.starts_with("call_")));

    // A JSON schema goes to the remote as response_format, and holds its answer.
    let schema = json!({
        "type": "object",
        "properties": {"sum": {"type": "integer"}},
        "required": ["sum"],
        "additionalProperties": false,
    });
    let (text, calls) = run(
        &mut engine,
        request(6, None, Some(Constraint::JsonSchema(schema))),
    );
    let answer: serde_json::Value = serde_json::from_str(&text).expect("the answer is JSON");
    assert!(answer["sum"].is_i64(), "{text}");
    assert!(calls.is_empty());
}
