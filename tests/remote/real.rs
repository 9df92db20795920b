//! Remote models against a real llama-server (started here on a free loopback port with the
//! SmolLM2 test model): `taper models` lists it, `taper ask` streams the same greedy answer the
//! server gives on its own, Esc (cancel) closes the stream and the server stops generating, a
//! conversation moves local → remote → local with its history, and a server killed
//! mid-answer fails the answer in one sentence with the partial text kept.

use crate::common;

use crate::llama_server::{LlamaServer, ALIAS, CONTEXT};
use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};
use taper::chat::Message;
use taper::config::RemoteConfig;
use taper::engine::{EngineCommand, EngineHandle};
use taper::protocol::SamplingParams;
use taper::protocol::{EngineEvent, GenerateRequest, LoadRequest};
use taper::protocol::{StopReason, Usage};
use taper::remote::RemoteTarget;

/// One server at a time: the machine may have two cores.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn server() -> LlamaServer {
    LlamaServer::start(&common::real_model(common::SMOLLM2))
}

fn taper(server: &LlamaServer, args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_taper"))
        .env("TAPER_HOME", home.path())
        .args(["--remote", &server.url()])
        .args(args)
        .output()
        .expect("run taper")
}

fn greedy() -> SamplingParams {
    SamplingParams {
        temperature: 0.0,
        repeat_penalty: 1.0,
        ..SamplingParams::default()
    }
}

fn target(server: &LlamaServer) -> RemoteTarget {
    RemoteTarget {
        remote: RemoteConfig::quick("ls", &server.url()).resolve(),
        model: ALIAS.into(),
    }
}

/// Waits for the load (or connect) to answer; its info.
fn loaded(engine: &mut EngineHandle) -> taper::protocol::ModelInfo {
    loop {
        match engine.recv_blocking().expect("engine alive") {
            EngineEvent::Loaded { info, .. } => return info,
            EngineEvent::Failed { message, .. } => panic!("load failed: {message}"),
            _ => {}
        }
    }
}

/// One turn to its end: the text and the usage.
fn answer(
    engine: &mut EngineHandle,
    turn_id: u64,
    messages: Vec<Message>,
    n: usize,
) -> (String, Usage) {
    engine
        .send(EngineCommand::Generate(GenerateRequest::chat(
            turn_id,
            messages,
            false,
            greedy(),
            n,
        )))
        .unwrap();
    let mut text = String::new();
    loop {
        match engine.recv_blocking().expect("engine alive") {
            EngineEvent::Token { text: t, .. } => text.push_str(&t),
            EngineEvent::Finished { usage, .. } => return (text, usage),
            EngineEvent::Failed { message, .. } => panic!("turn failed: {message}"),
            _ => {}
        }
    }
}

#[test]
fn models_lists_it_and_ask_streams_the_servers_own_answer() {
    let _serial = serial();
    let server = server();
    let listed = taper(&server, &["models"]);
    let out = String::from_utf8_lossy(&listed.stdout);
    assert!(
        out.contains(&format!("remote/{ALIAS}  ctx {CONTEXT}")),
        "{out}"
    );

    let question = "What is the capital of France?";
    let model = format!("remote/{ALIAS}");
    let args = [
        "ask",
        "-m",
        &model,
        "--temperature",
        "0",
        "--repeat-penalty",
        "1",
    ];
    let o = taper(
        &server,
        &[&args[..], &["-n", "24", "--stats", question]].concat(),
    );
    let (got, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{err}");
    let direct = server.direct_answer(
        serde_json::json!([{"role": "user", "content": question}]),
        24,
    );
    assert!(!direct.trim().is_empty());
    assert_eq!(
        got.trim(),
        direct.trim(),
        "taper's stream and the server's own answer differ"
    );
    assert!(err.contains("reported by the server: prompt"), "{err}");
    assert!(
        err.contains("tok/s, decode ") && err.contains("| decode "),
        "{err}"
    );
}

#[test]
fn stopping_closes_the_stream_and_the_server_stops_generating() {
    let _serial = serial();
    let server = server();
    let mut engine = EngineHandle::spawn().unwrap();
    engine
        .send(EngineCommand::Connect(target(&server)))
        .unwrap();
    let info = loaded(&mut engine);
    assert_eq!(
        (info.context_size, info.remote.as_deref()),
        (CONTEXT, Some(server.url().as_str()))
    );

    let story =
        Message::user("Write a very long story about a dragon who loves tea, in many chapters.");
    let request = GenerateRequest::chat(1, vec![story], false, greedy(), 1500);
    engine.send(EngineCommand::Generate(request)).unwrap();
    let mut tokens = 0;
    let usage = loop {
        match engine.recv_blocking().expect("engine alive") {
            EngineEvent::Token { .. } => {
                tokens += 1;
                if tokens == 3 {
                    engine.cancel(1);
                }
            }
            EngineEvent::Finished { usage, .. } => break usage,
            EngineEvent::Failed { message, .. } => panic!("{message}"),
            _ => {}
        }
    };
    assert_eq!(usage.stop, Some(StopReason::Cancelled));
    assert!(usage.generated_tokens < 1500);
    // The server notices the closed connection at its next token and ends the task.
    let since = Instant::now();
    let mut slot = server.slot();
    while slot.0 && since.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
        slot = server.slot();
    }
    assert!(!slot.0, "the server is still generating: {slot:?}");
    assert!(slot.1 < 1000, "the server generated {} tokens", slot.1);

    // The same connection goes on answering.
    let (text, usage) = answer(&mut engine, 2, vec![Message::user("Say hi.")], 8);
    assert!(!text.is_empty() && usage.generated_tokens > 0);
    assert!(
        usage.server.as_ref().and_then(|s| s.decode_tok_s).is_some(),
        "{usage:?}"
    );
}

#[test]
fn a_conversation_moves_local_remote_local_with_its_history() {
    let _serial = serial();
    let server = server();
    let mut engine = EngineHandle::spawn().unwrap();
    let local = LoadRequest {
        model_path: common::real_model(common::SMOLLM2),
        tokenizer_json: None,
        context_size: 2048,
        cache_type: Default::default(),
        chat_template: None,
        keep_loaded: 1,
        draft_model: None,
    };
    engine.send(EngineCommand::Load(local.clone())).unwrap();
    loaded(&mut engine);
    let mut history = vec![Message::user("My name is Ada. What is 2 + 2?")];
    let (a1, _) = answer(&mut engine, 1, history.clone(), 16);
    history.push(Message::assistant(a1));

    engine
        .send(EngineCommand::Connect(target(&server)))
        .unwrap();
    assert_eq!(loaded(&mut engine).name, format!("ls/{ALIAS}"));
    history.push(Message::user("What is my name?"));
    let (a2, usage) = answer(&mut engine, 2, history.clone(), 16);
    // The server got the whole conversation: its own answer to it is the same.
    let as_json: Vec<_> = history
        .iter()
        .map(|m| serde_json::json!({"role": m.role.as_str(), "content": m.content}))
        .collect();
    assert_eq!(
        a2.trim(),
        server
            .direct_answer(serde_json::Value::Array(as_json), 16)
            .trim()
    );
    let reported = usage
        .server
        .expect("llama-server reports usage and timings");
    assert!(reported.prompt_tokens.unwrap_or(0) > 20, "{reported:?}");
    history.push(Message::assistant(a2));

    engine.send(EngineCommand::Load(local)).unwrap();
    loaded(&mut engine);
    history.push(Message::user("And what is 3 + 3?"));
    let (a3, usage) = answer(&mut engine, 3, history, 16);
    assert!(!a3.trim().is_empty());
    // Every message so far was in the local prompt (none dropped, more than the question).
    assert!(
        usage.prompt_tokens > 40 && usage.dropped_messages == 0,
        "{usage:?}"
    );
}

#[test]
fn a_server_killed_mid_answer_fails_it_in_one_sentence_and_keeps_the_text() {
    let _serial = serial();
    let mut server = server();
    let home = tempfile::tempdir().unwrap();
    let model = format!("remote/{ALIAS}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_taper"))
        .env("TAPER_HOME", home.path())
        .args(["--remote", &server.url(), "ask", "-m", &model, "-n", "1500"])
        .arg("Write a very long story about a dragon who loves tea, in many chapters.")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while seen.len() < 20 {
        let n = stdout.read(&mut buf).unwrap();
        assert!(n > 0, "taper ended before the answer streamed");
        seen.extend_from_slice(&buf[..n]);
    }
    server.kill();
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest).unwrap();
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(!status.success());
    assert!(
        err.contains("broke off the answer") || err.contains("ended the answer early"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!err.contains("decoding chunks"), "{err}");
    seen.extend(rest);
    assert!(seen.len() >= 20, "the partial answer is kept");

    let again = taper(&server, &["ask", "-m", &model, "hi"]);
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(err.contains("connection refused"), "{err}");
}
