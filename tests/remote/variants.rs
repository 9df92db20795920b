//! What different servers send, from the loopback fault server: Ollama's model list and
//! `reasoning` field, vLLM's `max_model_len` and `reasoning_content`, a slow trickle; a stop
//! that closes the connection of an endless stream; `taper models` with a dead remote.

use crate::remote_server::{content, delta, finish, models, now, FaultServer, Reply};
use serde_json::json;
use std::process::Command;
use std::time::{Duration, Instant};
use taper::chat::Message;
use taper::config::RemoteConfig;
use taper::engine::{EngineCommand, EngineHandle};
use taper::protocol::StopReason;
use taper::protocol::{EngineEvent, GenerateRequest};
use taper::remote::RemoteTarget;

fn taper(args: &[&str]) -> (bool, String, String) {
    let home = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_taper"))
        .env("TAPER_HOME", home.path())
        .env_remove("TAPER_API_KEY")
        .args(args)
        .output()
        .expect("run taper");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (o.status.success(), text(&o.stdout), text(&o.stderr))
}

#[test]
fn ollama_lists_its_tags_and_thinks_in_reasoning() {
    let s = FaultServer::start(|r| match r.path.as_str() {
        // Detection: no /v1/models here, so its own list is asked for.
        "/api/tags" => Reply::Json(
            200,
            vec![],
            json!({"models": [{"name": "qwen3:8b", "model": "qwen3:8b", "size": 1}]}).to_string(),
        ),
        "/v1/chat/completions" => now(vec![
            delta(json!({"role": "assistant", "reasoning": "Let me think."})),
            delta(json!({"reasoning": " Done."})),
            content("Paris."),
            finish(json!({"usage": {"prompt_tokens": 9, "completion_tokens": 4}})),
        ]),
        _ => Reply::Json(404, vec![], "404 page not found".into()),
    });
    let (ok, out, err) = taper(&["--remote", &s.url(), "models"]);
    assert!(ok && out.contains("remote/qwen3:8b"), "{out} {err}");
    let (ok, out, err) = taper(&["--remote", &s.url(), "ask", "-m", "remote/qwen3:8b", "hi"]);
    assert!(ok, "{err}");
    assert_eq!(out, "<think>Let me think. Done.</think>\n\nParis.\n");
    let chat = &s.chat_requests()[0].json();
    assert_eq!(chat["model"], "qwen3:8b");
    assert_eq!(chat["messages"], json!([{"role": "user", "content": "hi"}]));
}

#[test]
fn vllm_gives_its_context_and_reasoning_content() {
    let s = FaultServer::start(|r| match r.path.as_str() {
        "/v1/models" => Reply::Json(
            200,
            vec![],
            json!({"object": "list", "data": [
                {"id": "Qwen/Qwen3-8B", "object": "model", "max_model_len": 32768}
            ]})
            .to_string(),
        ),
        "/v1/chat/completions" => now(vec![
            delta(json!({"role": "assistant", "content": ""})),
            delta(json!({"reasoning_content": "hmm"})),
            delta(json!({"content": "Yes", "reasoning_content": null})),
            finish(json!({"usage": {"prompt_tokens": 5, "completion_tokens": 3,
                "prompt_tokens_details": {"cached_tokens": 4}}})),
        ]),
        _ => Reply::Json(404, vec![], "{}".into()),
    });
    let (ok, out, _) = taper(&["--remote", &s.url(), "models"]);
    assert!(
        ok && out.contains("remote/Qwen/Qwen3-8B  ctx 32768"),
        "{out}"
    );
    let mut engine = EngineHandle::spawn().unwrap();
    let target = RemoteTarget {
        remote: RemoteConfig::quick("v", &s.url()).resolve(),
        model: "Qwen/Qwen3-8B".into(),
    };
    engine.send(EngineCommand::Connect(target)).unwrap();
    let info = match engine.recv_blocking() {
        Some(EngineEvent::Loaded { info, .. }) => info,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        (info.name.as_str(), info.context_size),
        ("v/Qwen/Qwen3-8B", 32768)
    );
    let (text, usage) = turn(&mut engine, 1, 64, None);
    assert_eq!(text, "<think>hmm</think>\n\nYes");
    let server = usage.server.unwrap();
    assert_eq!(
        (server.cached_tokens, server.completion_tokens),
        (Some(4), Some(3))
    );
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.cached_tokens,
            usage.generated_tokens
        ),
        (5, 4, 2)
    );
}

/// Runs one turn; with `stop_after`, cancels it after that many tokens.
fn turn(
    engine: &mut EngineHandle,
    turn_id: u64,
    max_tokens: usize,
    stop_after: Option<usize>,
) -> (String, taper::protocol::Usage) {
    let request = GenerateRequest::chat(
        turn_id,
        vec![Message::user("hi")],
        false,
        Default::default(),
        max_tokens,
    );
    engine.send(EngineCommand::Generate(request)).unwrap();
    let (mut text, mut tokens) = (String::new(), 0);
    loop {
        match engine.recv_blocking().expect("engine alive") {
            EngineEvent::Token { text: t, .. } => {
                text.push_str(&t);
                tokens += 1;
                if Some(tokens) == stop_after {
                    engine.cancel(turn_id);
                }
            }
            EngineEvent::Finished { usage, .. } => return (text, usage),
            EngineEvent::Failed { message, .. } => panic!("{message}"),
            _ => {}
        }
    }
}

#[test]
fn a_stop_closes_the_connection_of_an_endless_stream() {
    let s = FaultServer::start(|r| match r.path.as_str() {
        "/v1/models" => models(&["m"]),
        "/v1/chat/completions" => Reply::Endless {
            piece: content("tea "),
            every: Duration::from_millis(20),
        },
        _ => Reply::Json(404, vec![], "{}".into()),
    });
    let mut engine = EngineHandle::spawn().unwrap();
    let target = RemoteTarget {
        remote: RemoteConfig::quick("e", &s.url()).resolve(),
        model: "m".into(),
    };
    engine.send(EngineCommand::Connect(target)).unwrap();
    assert!(matches!(
        engine.recv_blocking(),
        Some(EngineEvent::Loaded { .. })
    ));
    let (text, usage) = turn(&mut engine, 1, 100_000, Some(5));
    assert_eq!(usage.stop, Some(StopReason::Cancelled));
    assert!(text.starts_with("tea tea tea tea tea"), "{text}");
    // The server's next write fails: the connection was closed.
    let since = Instant::now();
    while s.closed_by_client.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        assert!(
            since.elapsed() < Duration::from_secs(20),
            "the stream was not closed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_slow_trickle_is_not_a_stall() {
    let s = FaultServer::start(|r| match r.path.as_str() {
        "/v1/models" => models(&["m"]),
        _ => {
            let mut pieces: Vec<_> = ["one", " two", " three"]
                .iter()
                .map(|t| (content(t), Duration::from_millis(700)))
                .collect();
            pieces.push((finish(json!({})), Duration::ZERO));
            Reply::Sse(pieces)
        }
    });
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config.toml");
    let url = s.url();
    std::fs::write(
        &config,
        format!("[[remotes]]\nname = \"t\"\nurl = \"{url}\"\nstall_timeout_s = 1\n"),
    )
    .unwrap();
    let (ok, out, err) = taper(&[
        "--config",
        config.to_str().unwrap(),
        "ask",
        "-m",
        "t/m",
        "hi",
    ]);
    assert!(ok, "{err}");
    assert_eq!(out, "one two three\n");
}

#[test]
fn a_server_that_trickles_its_props_forever_still_connects() {
    let s = FaultServer::start(|r| match r.path.as_str() {
        "/v1/models" => models(&["m"]),
        "/props" => Reply::Endless {
            piece: b"{".to_vec(),
            every: Duration::from_millis(50),
        },
        _ => now(vec![content("ok"), finish(json!({}))]),
    });
    let (ok, out, err) = taper(&["--remote", &s.url(), "ask", "-m", "remote/m", "hi"]);
    assert!(ok, "{err}");
    assert_eq!(out, "ok\n");
}

#[test]
fn a_dead_or_hanging_remote_never_hides_the_local_models() {
    let hang = FaultServer::start(|_| Reply::Hang);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dead = format!("http://127.0.0.1:{port}/v1");
    let (ok, out, err) = taper(&["--remote", &dead, "--remote", &hang.url(), "models"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("Catalogue") && out.contains("Local models"),
        "{out}"
    );
    assert!(
        out.contains("remote (") && out.contains("unreachable: connection refused"),
        "{out}"
    );
    assert!(
        out.contains("remote2 (") && out.contains("unreachable: no answer"),
        "{out}"
    );
}
