//! `taper serve` over loopback with the SmolLM2 test model: the endpoints, streaming and not,
//! the errors a client can provoke, the API key and the bind policy.

use crate::serve_support::{get, post, stream, Server};
use serde_json::{json, Value};

const QUESTION: &str = "What is the capital of France?";

fn chat_body(messages: Value, extra: Value) -> String {
    let mut body = json!({ "model": "anything", "messages": messages, "max_tokens": 24,
        "temperature": 0.8, "seed": 42 });
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    body.to_string()
}

#[test]
fn the_endpoints_answer_as_openai_clients_expect() {
    let server = Server::start(&["--ctx-size", "160", "--parallel", "2"]);
    let url = &server.url;
    let (status, models) = get(&format!("{url}/v1/models"));
    assert_eq!(status, 200);
    assert_eq!(models["data"][0]["id"], "SmolLM2-135M-Instruct.Q4_1");
    let (status, health) = get(&format!("{url}/health"));
    assert_eq!((status, health["status"].as_str()), (200, Some("ok")));

    // Non-streamed and streamed, same seed: the same answer (the second from the cache).
    let chat_url = format!("{url}/v1/chat/completions");
    let user = json!([{ "role": "system", "content": "Answer briefly." },
        { "role": "user", "content": QUESTION }]);
    let (status, whole) = post(&chat_url, &chat_body(user.clone(), json!({"unknown": [1]})));
    assert_eq!(status, 200, "{whole}");
    let answer = whole["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!answer.is_empty());
    assert_eq!(whole["object"], "chat.completion");
    let prompt_tokens = whole["usage"]["prompt_tokens"].as_u64().unwrap();
    let completion = whole["usage"]["completion_tokens"].as_u64().unwrap();
    assert!(prompt_tokens > 10 && completion > 0 && completion <= 24);
    assert_eq!(whole["timings"]["predicted_n"].as_u64(), Some(completion));
    let streamed = stream(
        &chat_url,
        &chat_body(
            user.clone(),
            json!({"stream": true, "stream_options": {"include_usage": true}}),
        ),
    );
    assert_eq!(streamed.status, 200);
    assert_eq!(streamed.text, answer, "streamed and whole answers differ");
    assert_eq!(
        streamed.usage["completion_tokens"].as_u64(),
        Some(completion)
    );
    assert!(
        streamed.usage["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );

    // The next turn of the conversation reuses its cache: the old prompt and the answer.
    let mut turn2 = user.as_array().unwrap().clone();
    turn2.push(json!({ "role": "assistant", "content": answer }));
    turn2.push(json!({ "role": "user", "content": "And of Italy?" }));
    let (status, next) = post(&chat_url, &chat_body(Value::Array(turn2), json!({})));
    assert_eq!(status, 200, "{next}");
    let cached = next["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    assert!(
        cached >= prompt_tokens + completion - 1,
        "cached {cached} of {next}"
    );

    // Completions, whole and streamed; a stop string cuts the answer before it.
    let completions = format!("{url}/v1/completions");
    let raw = json!({ "prompt": "Once upon a time", "max_tokens": 16, "temperature": 0 });
    let (status, text) = post(&completions, &raw.to_string());
    assert_eq!(status, 200, "{text}");
    let text = text["choices"][0]["text"].as_str().unwrap().to_string();
    let mut raw_stream = raw.clone();
    raw_stream["stream"] = json!(true);
    assert_eq!(stream(&completions, &raw_stream.to_string()).text, text);
    let word = text
        .split_whitespace()
        .nth(2)
        .expect("three words")
        .to_string();
    let mut stopped = raw.clone();
    stopped["stop"] = json!([word]);
    let (_, cut) = post(&completions, &stopped.to_string());
    assert_eq!(cut["choices"][0]["finish_reason"], "stop");
    let cut_text = cut["choices"][0]["text"].as_str().unwrap();
    assert_eq!(cut_text, &text[..text.find(&word).unwrap()]);
    // A stop string that completes on the last allowed token ended the answer too.
    let last = text.split_whitespace().last().expect("a word").to_string();
    stopped["stop"] = json!([last]);
    let (_, cut) = post(&completions, &stopped.to_string());
    assert_eq!(cut["choices"][0]["finish_reason"], "stop", "{cut}");
    let cut_text = cut["choices"][0]["text"].as_str().unwrap();
    assert_eq!(cut_text, &text[..text.find(&last).unwrap()]);

    // max_tokens past the context: the answer ends with the context, as "length".
    let (status, long) = post(
        &completions,
        &json!({ "prompt": "Count: 1, 2, 3,", "max_tokens": 100000, "temperature": 0,
                 "repeat_penalty": 1.0 })
        .to_string(),
    );
    assert_eq!(status, 200, "{long}");
    let total = long["usage"]["total_tokens"].as_u64().unwrap();
    assert!(total <= 160, "{long}");

    // Errors: a named field, an over-long prompt.
    let (status, err) = post(
        &chat_url,
        &chat_body(user.clone(), json!({"top_p": "most"})),
    );
    assert_eq!(
        (status, err["error"]["param"].as_str()),
        (400, Some("top_p"))
    );
    assert_eq!(err["error"]["type"], "invalid_request_error");
    let long_prompt = "word ".repeat(400);
    let (status, err) = post(&completions, &json!({ "prompt": long_prompt }).to_string());
    assert_eq!(status, 400);
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("context"),
        "{err}"
    );
    let (status, _) = get(&format!("{url}/v1/nothing"));
    assert_eq!(status, 404);
    // A wrong method is a JSON error too, saying which one the path takes.
    let (status, err) = get(&chat_url);
    assert_eq!(status, 405);
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("takes POST"),
        "{err}"
    );
    // A bound no one wrote is not quoted; the unknown role's error lists `developer`.
    let (_, err) = post(
        &chat_url,
        &chat_body(user.clone(), json!({"max_tokens": 0})),
    );
    let message = err["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("at least 1") && !message.contains("922337"),
        "{err}"
    );
    let (_, err) = post(
        &chat_url,
        &chat_body(json!([{"role": "robot", "content": "x"}]), json!({})),
    );
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("developer"),
        "{err}"
    );
}

#[test]
fn a_key_is_required_when_set_and_off_loopback() {
    // Refused before anything is loaded or bound.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_taper"))
        .args([
            "serve",
            "-m",
            "nonexistent.gguf",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
        ])
        .env_remove("TAPER_TEST_KEY")
        .output()
        .expect("run taper serve");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("without an API key"), "{stderr}");

    std::env::set_var("TAPER_TEST_SERVE_KEY", "correct horse");
    let server = Server::start(&["--api-key-env", "TAPER_TEST_SERVE_KEY", "--parallel", "1"]);
    let models = format!("{}/v1/models", server.url);
    assert_eq!(get(&models).0, 401);
    let with = |key: &str| {
        ureq::get(&models)
            .set("Authorization", &format!("Bearer {key}"))
            .call()
            .map(|r| r.status())
            .unwrap_or_else(|e| match e {
                ureq::Error::Status(code, _) => code,
                e => panic!("{e}"),
            })
    };
    assert_eq!(with("correct horse"), 200);
    assert_eq!(with("correct horsf"), 401);
    // Health stays open, for load balancers.
    assert_eq!(get(&format!("{}/health", server.url)).0, 200);
}

#[test]
fn every_request_gets_a_log_line_without_its_body() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("serve.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let model = crate::common::real_model(crate::common::SMOLLM2);
    let server = Server::start_logged(
        model.as_os_str(),
        &["--log-format", "json"],
        std::process::Stdio::from(log),
    );
    let chat_url = format!("{}/v1/chat/completions", server.url);
    let secret = "a secret nobody logs";
    let body = chat_body(
        json!([{ "role": "user", "content": secret }]),
        json!({ "max_tokens": 3, "temperature": 0 }),
    );
    let (status, _) = post(&chat_url, &body);
    assert_eq!(status, 200);
    let (status, _) = post(&chat_url, &chat_body(json!([]), json!({})));
    assert_eq!(status, 400);
    let streamed = chat_body(
        json!([{ "role": "user", "content": "Hi" }]),
        json!({ "max_tokens": 2, "stream": true }),
    );
    let _ = stream(&chat_url, &streamed);
    let (status, _) = get(&format!("{}/health", server.url));
    assert_eq!(status, 200);
    drop(server);
    let text = std::fs::read_to_string(&log_path).unwrap();
    assert!(!text.contains(secret), "{text}");
    let lines: Vec<Value> = text
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary: Vec<(&str, &str, u64)> = lines
        .iter()
        .map(|l| {
            (
                l["method"].as_str().unwrap(),
                l["path"].as_str().unwrap(),
                l["status"].as_u64().unwrap(),
            )
        })
        .collect();
    let chat = "/v1/chat/completions";
    assert_eq!(
        summary,
        [
            ("POST", chat, 200),
            ("POST", chat, 400),
            ("POST", chat, 200),
            ("GET", "/health", 200),
        ],
        "{text}"
    );
    // The answers' own counts, whole and streamed alike.
    assert!(lines[0]["generated_tokens"].as_u64().unwrap() > 0, "{text}");
    assert!(lines[2]["generated_tokens"].as_u64().unwrap() > 0, "{text}");
    assert_eq!(lines[1]["generated_tokens"], 0);
    assert!(lines[0]["prompt_tokens"].as_u64().unwrap() > 5);
    assert!(lines[0]["time"].as_str().unwrap().ends_with('Z'));
}
